"""Reports of the late-commit world: text, JSON, JUnit XML, report folders, regression files.

The text summary is written for the data engineer who runs the pipeline: it
leads with the rows lost and duplicated, then tells each finding's shortest
schedule in domain words (UTC clock times for timestamp cursors), the property
it breaks, which queries' ranges each lost row fell between, the run's
figures and the search's power (in how many runs of each kind a plausible
wrong answer would have been caught), and ends with the verdict.

A **regression file** of this world is JSON Lines, like the frontier world's
(:mod:`fencepost.harness.report`): a header ``{"fencepost_regression": 1,
"world": "late-commits", "verdict": "bad", "rule": ..., "cause": ...,
"message": ..., "seed": ..., "sut": ..., "setup": <LateSetup>}`` and one line
per step, ``{"step": 1, "action": {"do": "sync"}, "says": "..."}``.
:func:`regression_world` tells the two worlds' files apart from the header.

Cost: linear in the findings' steps and transcripts.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from fencepost.harness.late_power import WRONG_ANSWERS
from fencepost.harness.late_runner import LateResult, LateRun
from fencepost.harness.late_search import (
    LateFinding,
    LateOptions,
    LateReport,
    describe_seed,
)
from fencepost.harness.late_story import CAUSES
from fencepost.harness.late_world import (
    LateAction,
    LateSetup,
    action_from_json,
    action_to_json,
    describe_action,
)
from fencepost.harness.report import (
    MAX_REGRESSION_BYTES,
    REGRESSION_VERSION,
    RegressionError,
    read_regression_text,
    regression_problem,
    write_transcript,
)
from fencepost.harness.rules import Violation
from fencepost.harness.transport import SutFactory
from fencepost.harness.world import SetupError
from fencepost.harness.worlds import LATE_COMMITS
from fencepost.inputs.files import open_regular
from fencepost.inputs.jsonlines import MessageError, decode_line
from fencepost.reports.junit import Case, Outcome, Suite, junit_xml
from fencepost.reports.text import printable

#: Transcript lines a finding shows in the text summary (the report folder has them all).
TRANSCRIPT_TAIL = 0


def replay_command(finding: LateFinding, options: LateOptions, command: str) -> str:
    if finding.seed is None:
        return f"fencepost conform {options.flags()} -- {command}"
    return f"fencepost conform {options.flags()} --replay {finding.seed} -- {command}"


def _counts(result: LateResult) -> str:
    d = result.delivery
    if d is None:
        return "no verdict on rows (a protocol rule stopped the run first)"
    lost = ", ".join(r.id for r in d.lost[:8]) + (" ..." if len(d.lost) > 8 else "")
    out = f"{len(d.lost)} row(s) lost" + (f" ({lost})" if d.lost else "")
    out += f", {len(d.duplicated)} duplicated"
    if d.duplicated:
        out += f" ({d.extra} extra cop{'y' if d.extra == 1 else 'ies'})"
    return out + f", {d.absorbed} re-read(s) absorbed by merge"


def world_words(options: LateOptions) -> str:
    """The world's options in words."""
    timestamp = options.cursor == "timestamp"
    grain = "1 s, stored in ms" if timestamp else "1"
    delay = f"{options.max_commit_delay}{' s' if timestamp else ''}"
    horizon = "a certified horizon" if options.horizon else "no horizon"
    horizon += f", {options.reads} reads, partitions {options.partitions}"
    return (
        f"{LATE_COMMITS}: {options.cursor} cursor (query granularity {grain}), "
        f"D = {delay}, {horizon}"
    )


def finding_title(finding: LateFinding) -> str:
    v = finding.violation
    cause = finding.key[1]
    out = f"{v.rule.value}"
    if cause:
        out += f" ({cause}: {CAUSES[cause]})"
    return out


def render_finding(
    finding: LateFinding, options: LateOptions, command: str, *, transcript: int = TRANSCRIPT_TAIL
) -> str:
    """One finding in words (see the module docstring for the order)."""
    result = finding.result
    setup = result.setup
    v = finding.violation
    kind = "property of the sync level" if v.rule.is_row_property else "protocol rule"
    out = [f"FINDING: {_counts(result)}"]
    stories = finding.stories()
    for story in stories[:3]:
        out.append(f"  what happened: {story.headline}")
    if len(stories) > 3:
        out.append(f"  ... and {len(stories) - 3} more lost row(s), told below")
    out.append(
        f"  shortest schedule found: {len(finding.actions)} step(s) (from "
        f"{finding.original_steps}; {finding.shrink_runs} shrink run(s)) in a world of "
        f"{len(setup.rows)} row(s), page size {setup.page_size}; then the harness answered "
        "the remaining calls, let the world quiesce and ran the tool to completion:"
    )
    for step in result.steps:
        marker = {"schedule": f"{step.index:>5}.", "drain": "  drain", "quiesce": "quiesce"}.get(
            step.phase, "  final"
        )
        out.append(f"  {marker} {step.says}")
    out.append(f"  property broken: {finding_title(finding)} ({kind})")
    out.append(f"    meaning: {v.rule.meaning}")
    out.append(f"    what the judge saw: {v}")
    for story in stories:
        out.append(f"  {story.row.id}: {story.between}")
        out.extend(f"    {line}" for line in story.lines)
    if finding.also:
        out.append(f"  the same bug showed again in: {', '.join(finding.also)}")
    if finding.seed is not None:
        out.append(
            f"  found in phase {finding.phase}: seed {finding.seed} ({describe_seed(finding.seed)})"
        )
        out.append(f"  replay: {replay_command(finding, options, command)}")
    for worker, tail in sorted(result.stderr.items()):
        if tail.strip():
            out.append(f"  tool stderr ({worker}), last lines:")
            out.extend(f"    | {line}" for line in tail.strip().splitlines()[-15:])
    if transcript and result.transcript:
        out.append(f"  transcript, last {transcript} lines (-> to the tool, <- from it):")
        out.extend(f"    {line}" for line in result.transcript[-transcript:])
    return printable("\n".join(out))


def render_power(report: LateReport) -> list[str]:
    """The search's power: per run kind, runs in which each plausible wrong answer is caught."""
    power = report.power
    if not power.runs:
        return []
    names = list(WRONG_ANSWERS)
    width = max([len(k) for k in power.runs] + [8])
    out = [
        "  plausible wrong answers: in how many runs of each kind the judge would have caught "
        "a tool that",
    ]
    out.extend(f"    {chr(ord('a') + i)}: {WRONG_ANSWERS[n]} ({n})" for i, n in enumerate(names))
    head = (
        "    "
        + "run kind".ljust(width)
        + "  runs"
        + "".join(f"{chr(ord('a') + i):>6}" for i in range(len(names)))
    )
    out.append(head)
    for kind, runs in power.runs.items():
        row = power.caught.get(kind, {})
        out.append(
            "    "
            + kind.ljust(width)
            + f"{runs:>6}"
            + "".join(f"{row.get(n, 0):>6}" for n in names)
        )
    never = power.never(report.options.cursor) if report.searched else ()
    if never:
        out.append(f"  WARNING: no run would have caught: {', '.join(never)}")
    return out


def verdict_line(report: LateReport) -> str:
    t = report.totals
    if report.ok:
        return (
            f"verdict: CONFORMANT: no row lost, no coverage overclaimed in {t.runs} run(s) "
            f"({t.syncs} syncs); duplicates in {t.runs_duplicating} run(s); "
            f"{t.absorbed} re-read(s) absorbed by merge"
        )
    reasons = []
    for f in report.findings:
        reasons.append(f"{f.violation.rule.value}" + (f" ({f.key[1]})" if f.key[1] else ""))
    for v, _ in report.handshake:
        reasons.append(v.rule.value)
    if report.problem:
        reasons.append(report.problem)
    lost = [f for f in report.findings if f.result.delivery and f.result.delivery.lost]
    head = "NOT CONFORMANT"
    if lost:
        head += f": the tool loses rows (rows lost in {t.runs_losing} of {t.runs} run(s))"
    return f"verdict: {head}: {'; '.join(reasons)}"


def render_late_summary(report: LateReport, command: str) -> str:
    """The plain-text summary (see the module docstring)."""
    t = report.totals
    options = report.options
    out = [
        f"fencepost conform --world {LATE_COMMITS}: "
        + ("CONFORMANT" if report.ok else "NOT CONFORMANT"),
    ]
    if report.findings:
        worst = report.findings[0].result
        out.append(f"  rows: {_counts(worst)} in the shortest counterexample")
    out.append(
        f"  across the search: rows lost in {t.runs_losing} of {t.runs} run(s) (at most "
        f"{t.most_lost} in one run); rows duplicated in {t.runs_duplicating} run(s) (at most "
        f"{t.most_duplicated}); {t.absorbed} re-read(s) absorbed by merge"
    )
    for finding in report.findings:
        out.append("")
        out.append(render_finding(finding, options, command))
    for violation, lines in report.handshake:
        out.append("")
        out.append(f"FINDING: {violation}")
        out.append(f"  meaning: {violation.rule.meaning}")
        out.extend(f"    {line}" for line in lines[-20:])
    out.append("")
    rate = report.messages / report.seconds if report.seconds > 0 else 0.0
    out += [
        f"  SUT: {report.sut} (says it is {report.sut_name or '?'}; levels "
        f"{', '.join(report.declared) or 'none'}; delivery {report.delivery})",
        f"  world: {world_words(options)}",
    ]
    if report.reused:
        out.append(
            f"  processes: {report.processes} started, reused {report.reused} time(s) after "
            "reset (every finding replayed on fresh processes)"
        )
    for phase in report.phases:
        mark = "FAIL" if phase.failed else "ok"
        out.append(
            f"  {mark:>4}  {phase.name}: {phase.runs} run(s), {phase.messages} messages, "
            f"{phase.seconds:.1f}s"
        )
    probes = report.runs - t.runs
    out.append(
        f"  total: {t.runs} run(s) in the world"
        + (f" and {probes} of error-handling probes" if probes > 0 else "")
        + f", {t.syncs} syncs, {report.messages} messages in {report.seconds:.1f}s "
        f"({rate:,.0f} messages/s)"
    )
    if report.problem:
        out.append(f"  problem: {report.problem}")
    out.extend(f"  note: {note}" for note in report.notes)
    out.extend(render_power(report))
    out.append("")
    out.append(verdict_line(report))
    return printable("\n".join(out))


# --- JSON ------------------------------------------------------------------------------------


def _violation_json(v: Violation) -> dict[str, object]:
    return {"rule": v.rule.value, "message": v.message, "step": v.step, "worker": v.worker}


def finding_json(finding: LateFinding, options: LateOptions, command: str) -> dict[str, object]:
    result = finding.result
    d = result.delivery
    return {
        "rule": finding.key[0],
        "cause": finding.key[1] or None,
        "violation": _violation_json(finding.violation),
        "violations": [_violation_json(v) for v in result.violations],
        "rows": None
        if d is None
        else {
            "lost": [r.id for r in d.lost],
            "duplicated": dict(d.duplicated),
            "absorbed": d.absorbed,
        },
        "stories": [
            {
                "row": s.row.id,
                "cause": s.cause,
                "headline": s.headline,
                "between": s.between,
                "lines": list(s.lines),
            }
            for s in finding.stories()
        ],
        "seed": finding.seed,
        "phase": finding.phase,
        "also": list(finding.also),
        "replay": replay_command(finding, options, command),
        "world": result.setup.to_json(),
        "schedule": [action_to_json(a) for a in finding.actions],
        "steps": [
            {
                "step": s.index,
                "phase": s.phase,
                "action": None if s.action is None else action_to_json(s.action),
                "says": s.says,
            }
            for s in result.steps
        ],
        "original_steps": finding.original_steps,
        "shrink_runs": finding.shrink_runs,
        "transcript": [line.to_json() for line in result.transcript],
        "stderr": result.stderr,
    }


def late_report_json(report: LateReport, command: str) -> dict[str, object]:
    t = report.totals
    options = report.options
    return {
        "world": LATE_COMMITS,
        "conformant": report.ok,
        "sut": report.sut,
        "sut_name": report.sut_name,
        "declared": list(report.declared),
        "delivery": report.delivery,
        "options": {
            "cursor": options.cursor,
            "max_commit_delay": options.max_commit_delay,
            "horizon": options.horizon,
            "reads": options.reads,
            "partitions": options.partitions,
            "stories": None if options.stories is None else list(options.stories),
            "seed": options.seed,
            "schedules": options.schedules,
            "depth": options.depth,
        },
        "rows": {
            "runs": t.runs,
            "syncs": t.syncs,
            "runs_losing": t.runs_losing,
            "most_lost": t.most_lost,
            "runs_duplicating": t.runs_duplicating,
            "most_duplicated": t.most_duplicated,
            "absorbed": t.absorbed,
        },
        "phases": [
            {
                "name": p.name,
                "runs": p.runs,
                "messages": p.messages,
                "seconds": round(p.seconds, 3),
                "failed": p.failed,
            }
            for p in report.phases
        ],
        "power": {
            "wrong_answers": dict(WRONG_ANSWERS),
            "runs": dict(report.power.runs),
            "caught": {k: dict(v) for k, v in report.power.caught.items()},
        },
        "messages": report.messages,
        "seconds": round(report.seconds, 3),
        "processes": {"started": report.processes, "reused": report.reused},
        "problem": report.problem,
        "notes": list(report.notes),
        "findings": [finding_json(f, options, command) for f in report.findings],
        "handshake": [_violation_json(v) for v, _ in report.handshake],
        "verdict": verdict_line(report),
    }


# --- JUnit ------------------------------------------------------------------------------------


def late_junit_suite(report: LateReport, command: str) -> Suite:
    """The report as a JUnit suite: one test case per phase; each finding on the phase that
    found it, a phase that found the same bug as another pointing to it; the handshake's
    violations and a level problem cases of their own.

    Suite properties: the SUT, the world's options, the row counts and the power table
    (``power.<run kind>.<wrong answer>``: runs that would have caught it).
    """
    by_phase = {f.phase: f for f in report.findings}
    classname = "fencepost.conform.late_commits"
    t = report.totals
    options = report.options
    properties = [
        ("sut", report.sut),
        ("world", LATE_COMMITS),
        ("cursor", options.cursor),
        ("max_commit_delay", str(options.max_commit_delay)),
        ("horizon", str(options.horizon).lower()),
        ("reads", options.reads),
        ("partitions", options.partitions),
        ("delivery", report.delivery),
        ("runs", str(t.runs)),
        ("syncs", str(t.syncs)),
        ("runs_losing_rows", str(t.runs_losing)),
        ("runs_duplicating_rows", str(t.runs_duplicating)),
        ("absorbed", str(t.absorbed)),
    ]
    properties += [
        (f"power.{kind}.{answer}", str(row.get(answer, 0)))
        for kind, row in report.power.caught.items()
        for answer in WRONG_ANSWERS
    ]
    cases: list[Case] = []
    for phase in report.phases:
        outcome: Outcome | None = None
        finding = by_phase.get(phase.name)
        if finding is not None:
            outcome = Outcome(
                "failure",
                str(finding.violation),
                finding.violation.rule.value,
                render_finding(finding, options, command),
            )
        elif phase.failed:
            same = next((f for f in report.findings if phase.name in f.also), None)
            outcome = (
                Outcome(
                    "failure",
                    f"the same bug as in {same.phase}: {same.violation}",
                    same.violation.rule.value,
                )
                if same is not None
                else Outcome("failure", f"the phase {phase.name} failed")
            )
        cases.append(Case(classname, phase.name, phase.seconds, outcome))
    for violation, _ in report.handshake:
        cases.append(
            Case(
                classname,
                "handshake",
                None,
                Outcome("failure", str(violation), violation.rule.value),
            )
        )
    if report.problem:
        cases.append(Case(classname, "levels", None, Outcome("failure", report.problem, "levels")))
    return Suite(
        f"fencepost conform --world {LATE_COMMITS}",
        tuple(cases),
        report.seconds,
        tuple(properties),
        verdict_line(report),
    )


def write_late_junit(path: Path, report: LateReport, command: str) -> None:
    """JUnit XML of :func:`late_junit_suite`, by the one writer (:mod:`fencepost.reports.junit`)."""
    path.write_text(junit_xml(late_junit_suite(report, command)), encoding="utf-8")


# --- report folders and regression files -------------------------------------------------------


def write_late_report_dir(directory: Path, report: LateReport, command: str) -> list[Path]:
    """summary.txt, summary.json, and per finding its story, transcript and regression file."""
    directory.mkdir(parents=True, exist_ok=True)
    written = [directory / "summary.txt", directory / "summary.json"]
    written[0].write_text(render_late_summary(report, command) + "\n", encoding="utf-8")
    written[1].write_text(
        json.dumps(late_report_json(report, command), indent=2) + "\n", encoding="utf-8"
    )
    for i, finding in enumerate(report.findings, 1):
        stem = f"finding-{i}-{finding.violation.rule.value}"
        text = directory / f"{stem}.txt"
        text.write_text(
            render_finding(finding, report.options, command, transcript=10**6) + "\n",
            encoding="utf-8",
        )
        transcript = directory / f"{stem}-transcript.jsonl"
        write_transcript(transcript, finding.result.transcript)
        regression = directory / f"{stem}-bad.jsonl"
        save_late_regression(regression, finding, report.sut)
        written += [text, transcript, regression]
    return written


def late_regression_name(finding: LateFinding) -> str:
    seed = "file" if finding.seed is None else str(finding.seed)
    return f"{finding.violation.rule.value}-late-{seed}-bad.jsonl"


def save_late_regression(path: Path, finding: LateFinding, sut: str) -> Path:
    """Write ``finding`` as a replayable regression file; a folder gets a generated name."""
    if path.is_dir():
        path = path / late_regression_name(finding)
    header = {
        "fencepost_regression": REGRESSION_VERSION,
        "world": LATE_COMMITS,
        "verdict": "bad",
        "rule": finding.key[0],
        "cause": finding.key[1] or None,
        "message": finding.violation.message,
        "seed": finding.seed,
        "sut": sut,
        "setup": finding.result.setup.to_json(),
    }
    said = [s.says for s in finding.result.steps if s.phase == "schedule"]
    with path.open("w", encoding="utf-8") as out:
        out.write(json.dumps(header) + "\n")
        for i, action in enumerate(finding.actions, 1):
            says = said[i - 1] if i - 1 < len(said) else ""
            out.write(
                json.dumps({"step": i, "action": action_to_json(action), "says": says}) + "\n"
            )
    return path


def regression_world(path: Path) -> str | None:
    """The world a regression file belongs to (from its header), or None if unreadable."""
    try:
        with open_regular(path) as handle:
            first = handle.readline(MAX_REGRESSION_BYTES)
        header = decode_line(first.decode("utf-8").rstrip("\n"))
    except (OSError, ValueError, MessageError):
        return None
    return LATE_COMMITS if header.get("world") == LATE_COMMITS else "frontier"


@dataclass(frozen=True)
class LateRegression:
    """A saved failing run of the late-commit world: its world and steps to replay."""

    rule: str
    cause: str
    message: str
    seed: int | None
    setup: LateSetup
    actions: tuple[LateAction, ...]


def load_late_regression(path: Path) -> LateRegression:
    """Read a regression file of this world; :class:`RegressionError` names the line."""
    text = read_regression_text(path)
    numbered = [(n, line) for n, line in enumerate(text.splitlines(), 1) if line.strip()]
    if not numbered:
        raise RegressionError(f"{path}: empty; a regression file starts with its header line")
    objects: list[tuple[int, dict[str, object]]] = []
    for number, line in numbered:
        try:
            obj = decode_line(line)
        except MessageError as exc:
            raise RegressionError(f"{path}:{number}: {regression_problem(exc)}") from None
        objects.append((number, obj))
    first, header = objects[0]
    if header.get("fencepost_regression") != REGRESSION_VERSION or header.get("world") != (
        LATE_COMMITS
    ):
        raise RegressionError(
            f"{path}:{first}: not a fencepost regression file of the {LATE_COMMITS} world "
            f'(the header needs "fencepost_regression": 1 and "world": "{LATE_COMMITS}")'
        )
    seed = header.get("seed")
    if seed is not None and type(seed) is not int:
        raise RegressionError(f"{path}:{first}: seed: an integer or null")
    try:
        setup = LateSetup.from_json(header.get("setup"))
    except SetupError as exc:
        raise RegressionError(f"{path}:{first}: setup: {exc}") from None
    actions = []
    for number, obj in objects[1:]:
        if set(obj) - {"step", "action", "says"}:
            raise RegressionError(f"{path}:{number}: a step line has step, action and says")
        try:
            actions.append(action_from_json(obj.get("action"), f"line {number}.action"))
        except SetupError as exc:
            raise RegressionError(f"{path}:{number}: {exc}") from None
    return LateRegression(
        rule=str(header.get("rule", "")),
        cause=str(header.get("cause") or ""),
        message=str(header.get("message", "")),
        seed=seed,
        setup=setup,
        actions=tuple(actions),
    )


def replay_late_regression(
    factory: SutFactory, regression: LateRegression, *, timeout: float
) -> tuple[LateResult, tuple[tuple[int, str], ...]]:
    """Run a regression file's steps once, to the verdict; (step number, words) of each step
    that could not run (a tool that now behaves differently)."""
    skipped: list[tuple[int, str]] = []
    with LateRun(factory, regression.setup, timeout=timeout) as run:
        run.start()
        for number, action in enumerate(regression.actions, 1):
            if run.stopped:
                break
            if not run.execute(action):
                skipped.append((number, describe_action(regression.setup, action)))
        run.complete()
    return run.finish(), tuple(skipped)
