"""Rendering a conformance report: text, JSON, JUnit XML, report folders, regression files.

A **regression file** is a failing run saved for replay (``fencepost conform
--save FILE``, replayed with ``--replay-file FILE``). It is JSON Lines, one
object per line, named after its verdict (``...-bad.jsonl``):

- line 1, the header: ``{"fencepost_regression": 1, "verdict": "bad", "rule": ...,
  "message": ..., "seed": ..., "family": ..., "sut": ..., "world": <world setup> | null,
  "case": <compare/merge request> | null}``;
- then one line per step of the shortest schedule found:
  ``{"step": 1, "action": {"do": "publish", "worker": "w1"}, "says": "..."}``
  (``says`` is what happened when it was found; it is not read back).

An algebra failure stores its one case (``case``, the request's wire form)
and no steps. Replaying runs exactly the stored steps (no search, no shrink).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from fencepost.harness.algebra import (
    AlgebraCase,
    case_from_message,
    case_message,
    describe_case,
    run_algebra,
)
from fencepost.harness.classes import CLASSES
from fencepost.harness.conformance import ConformReport, Failure, describe_seed
from fencepost.harness.coverage import Situation
from fencepost.harness.findings import Finding, group, one_line, plural
from fencepost.harness.power import DECISIONS, WRONG_ANSWERS
from fencepost.harness.protocol import (
    INTEGER_RANGES,
)
from fencepost.harness.results import RunResult, TranscriptLine
from fencepost.harness.rules import Violation
from fencepost.harness.runner import Run
from fencepost.harness.schedule import (
    Action,
    ScheduleError,
    action_from_json,
    action_to_json,
    describe,
)
from fencepost.harness.transport import SutFactory
from fencepost.harness.world import SetupError, WorldSetup
from fencepost.inputs.files import NotRegularFile, open_regular
from fencepost.inputs.jsonlines import MessageError, decode_line
from fencepost.judge.values import BadValue
from fencepost.reports.junit import Case, Outcome, Suite, junit_xml
from fencepost.reports.text import printable

REGRESSION_VERSION = 1


def replay_hint(failure: Failure, command: str) -> str:
    if failure.seed is None:
        return f"fencepost conform -- {command}"
    return f"fencepost conform --replay {failure.seed} -- {command}"


def render_failure(
    failure: Failure,
    command: str,
    *,
    transcript: bool = True,
    heading: str | None = None,
    also_seen: tuple[str, ...] = (),
) -> str:
    """A failure in words: the rule, the shortest schedule, the transcript, the seed.

    ``heading`` replaces the first line (a finding's ``FINDING 1 of 2: ...``);
    ``also_seen`` names the other phases that found the same bug.
    """
    v = failure.violation
    kind = "docs/semantics.md section 7 property" if v.rule.is_property else "protocol rule"
    out = [
        heading
        or (
            f"FAILURE: {v.rule.value} ({kind})"
            + (f" in phase {failure.phase}" if failure.phase else "")
        ),
    ]
    if heading and failure.phase:
        out.append(f"  found in phase: {failure.phase} (the shortest counterexample)")
    if also_seen:
        out.append(f"  also seen in phase(s): {'; '.join(also_seen)}")
    out += [
        f"  meaning: {v.rule.meaning}",
        f"  what happened: {v}",
    ]
    if failure.seed is not None:
        out.append(f"  seed: {failure.seed} ({describe_seed(failure.seed)})")
        out.append(f"  replay: {replay_hint(failure, command)}")
    if failure.case is not None:
        out.append(f"  failing case ({failure.original_steps} case(s) run before shrinking):")
        out.append(f"    {describe_case(failure.case)}")
    if failure.steps:
        shown = [s for s in failure.steps]
        out.append(
            f"  shortest schedule found: {len(failure.actions)} step(s) "
            f"(from {failure.original_steps}; {failure.shrink_runs} shrink run(s)), "
            "then the harness answered the remaining calls normally:"
        )
        for step in shown:
            marker = "  drain" if step.drain else f"{step.index:>5}."
            out.append(f"  {marker} {step.says}")
    for worker, tail in sorted(failure.stderr.items()):
        if tail.strip():
            out.append(f"  SUT stderr ({worker}), last lines:")
            out.extend(f"    | {line}" for line in tail.strip().splitlines()[-15:])
    if transcript and failure.transcript:
        out.append(f"  transcript ({len(failure.transcript)} lines; -> to SUT, <- from SUT):")
        out.extend(f"    {line}" for line in failure.transcript)
    return printable("\n".join(out))


def render_finding(finding: Finding, number: int, count: int, command: str) -> str:
    """One finding (one distinct bug) in words: its shortest counterexample, in full."""
    v = finding.failure.violation
    kind = "docs/semantics.md section 7 property" if v.rule.is_property else "protocol rule"
    heading = f"FINDING {number} of {count}: {v.rule.value} ({kind})"
    return render_failure(finding.failure, command, heading=heading, also_seen=finding.also_seen)


def verdict_line(report: ConformReport) -> str:
    """The verdict in one line: the first line of the summary and its very last."""
    if report.interrupted is not None:
        return f"fencepost conform: INTERRUPTED (Ctrl-C) in {report.interrupted}: no verdict"
    if report.ok:
        return "fencepost conform: CONFORMANT"
    count = len(group(report.failures))
    if not count:
        return "fencepost conform: NOT CONFORMANT"
    failing = sum(p.failed for p in report.phases)
    phases = f" (seen in {failing} of {len(report.phases)} phases)" if failing else ""
    return f"fencepost conform: NOT CONFORMANT: {plural(count, 'finding')}{phases}"


def render_recap(report: ConformReport, command: str) -> list[str]:
    """The closing recap: each finding in one line with its replay command, then the verdict.

    These are the last lines on screen, so a reader who sees nothing else sees what
    broke, where, how to replay it, and the verdict (its very last line).
    """
    findings = group(report.failures)
    out: list[str] = []
    if findings:
        out.append(
            f"recap: {plural(len(findings), 'finding')} (one per distinct bug), each by its "
            "shortest counterexample:"
        )
        for n, finding in enumerate(findings, 1):
            out.append(f"  {n}. {one_line(finding)}")
            out.append(f"     replay: {replay_hint(finding.failure, command)}")
    if report.problem:
        out.append(f"problem: {report.problem}")
    out.append(verdict_line(report))
    return out


def render_summary(report: ConformReport, command: str) -> str:
    """The plain-text summary ``fencepost conform`` prints on stdout.

    The verdict leads and closes it: the first line, and the very last after a recap
    of the findings (one per distinct bug, :mod:`fencepost.harness.findings`), so the
    last lines on a screen say what broke and how to replay it.
    """
    verdict = verdict_line(report)
    if report.interrupted is not None:
        verdict = (
            f"fencepost conform: INTERRUPTED (Ctrl-C) in {report.interrupted}: no verdict; "
            f"every SUT process was ended; what ran before ({len(report.phases)} phase(s) done"
            f"{', failures found so far below' if report.failures else ''}):"
        )
    rate = report.messages / report.seconds if report.seconds > 0 else 0.0
    out = [
        verdict,
        f"  SUT: {report.sut} (says it is {report.sut_name or '?'}; levels "
        f"{', '.join(report.declared) or 'none'})",
        f"  levels tested: {', '.join(report.tested) or 'none'}",
        f"  integers: {_integers(report.integers)}",
    ]
    if report.reused:
        out.append(
            f"  processes: {report.processes} started, reused {report.reused} time(s) after "
            "reset (every failure replayed on fresh processes)"
        )
    for phase in report.phases:
        mark = "FAIL" if phase.failed else "ok"
        shrinking = " (shrinking included)" if phase.failed else ""
        out.append(
            f"  {mark:>4}  {phase.name}: {phase.runs} run(s), {phase.messages} messages, "
            f"{phase.seconds:.1f}s{shrinking}"
        )
    out.append(
        f"  total: {report.runs} run(s), {report.messages} messages in {report.seconds:.1f}s "
        f"({rate:,.0f} messages/s)"
    )
    if report.equivalent_representations:
        out.append(
            f"  note: {report.equivalent_representations} merge frontier(s) came back in another "
            "representation of the same claim (accepted: equivalent cuts are equal claims)"
        )
    if report.problem:
        out.append(f"  problem: {report.problem}")
    out.extend(f"  note: {note}" for note in report.notes)
    findings = group(report.failures)
    for n, finding in enumerate(findings, 1):
        out.append("")
        out.append(render_finding(finding, n, len(findings), command))
    if report.searched and report.tested and findings and report.interrupted is None:
        # A failing phase stopped at its first failure: its coverage is partial and says
        # nothing about the verdict, so the findings are not buried under its tables.
        out.append("")
        out.append(
            "  coverage: partial (each failing phase stopped at its first failure); the "
            "situation, discriminating-coverage and value-class tables are in --json, "
            "--report and --html"
        )
    elif report.searched and report.tested:
        out.append("")
        out.extend(render_coverage(report))
    out.append("")
    out.extend(render_recap(report, command))
    return printable("\n".join(out))


def _integers(declared: str) -> str:
    limits = INTEGER_RANGES.get(declared)
    if limits is None:
        return "any size (no range declared; declare hello_ok.integers to limit them)"
    return f"{declared}, from {limits[0]} to {limits[1]} (declared by the SUT)"


def render_coverage(report: ConformReport) -> list[str]:
    """The situation coverage table and its warnings."""
    out = ["  situation coverage (runs that exercised each situation of docs/procedure.md):"]
    width = max(len(s.says) for s in Situation)
    for situation in Situation:
        runs = report.coverage.runs.get(situation, 0)
        out.append(f"    {situation.says:<{width}}  {runs:>5}")
    out.extend(render_power(report))
    out.extend(render_classes(report))
    for warning in report.warnings():
        out.append(f"  WARNING: {warning}")
    return out


def render_power(report: ConformReport) -> list[str]:
    """The discriminating coverage table: per decision kind and wrong answer, the runs in
    which the judge would have rejected that wrong answer (docs/conformance.md)."""
    tested = set(report.tested)
    out = [
        "  discriminating coverage (runs in which the judge would have rejected each plausible "
        "wrong answer, per decision):"
    ]
    width = max(len(w.name) for w in WRONG_ANSWERS)
    for decision, levels in DECISIONS.items():
        if not tested & set(levels):
            continue
        out.append(f"    {decision} ({', '.join(lv for lv in levels if lv in tested)}):")
        for w in WRONG_ANSWERS:
            if w.decision == decision:
                runs = report.power.runs.get(w.name, 0)
                out.append(f"      {w.name:<{width}}  {runs:>5}  {w.says}")
    return out


def render_classes(report: ConformReport) -> list[str]:
    """Per value class, the runs whose world held it, per level (docs/conformance.md)."""
    levels = [
        f for f in ("algebra", "publisher", "checkpointer", "composed") if f in report.classes.runs
    ]
    if not levels:
        return []
    width = max(len(name) for name in CLASSES)
    out = ["  value classes (runs whose world held each class, per level):"]
    out.append("    " + " " * width + "".join(f"  {lv:>12}" for lv in levels))
    for name in CLASSES:
        cells = "".join(f"  {report.classes.runs[lv].get(name, 0):>12}" for lv in levels)
        out.append(f"    {name:<{width}}{cells}")
    return out


def _violation_json(v: Violation) -> dict[str, object]:
    return {"rule": v.rule.value, "message": v.message, "step": v.step, "worker": v.worker}


def failure_json(failure: Failure) -> dict[str, object]:
    return {
        "seed": failure.seed,
        "family": failure.family,
        "kind": failure.kind,
        "phase": failure.phase,
        "violation": _violation_json(failure.violation),
        "schedule": [
            {"step": s.index, "drain": s.drain, "action": action_to_json(s.action), "says": s.says}
            for s in failure.steps
        ],
        "original_steps": failure.original_steps,
        "shrink_runs": failure.shrink_runs,
        "case": None if failure.case is None else case_message(failure.case, 1),
        "transcript": [line.to_json() for line in failure.transcript],
        "stderr": failure.stderr,
    }


def report_json(report: ConformReport) -> dict[str, object]:
    return {
        "conformant": report.ok,
        "interrupted": report.interrupted,
        "sut": report.sut,
        "sut_name": report.sut_name,
        "declared": list(report.declared),
        "tested": list(report.tested),
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
        "messages": report.messages,
        "seconds": round(report.seconds, 3),
        "equivalent_representations": report.equivalent_representations,
        "problem": report.problem,
        "integers": report.integers,
        "processes": {"started": report.processes, "reused": report.reused},
        "coverage": {s.value: report.coverage.runs.get(s, 0) for s in Situation},
        "power": {
            w.name: {"decision": w.decision, "runs": report.power.runs.get(w.name, 0)}
            for w in WRONG_ANSWERS
        },
        "classes": {level: dict(row) for level, row in report.classes.runs.items()},
        "warnings": list(report.warnings()),
        "notes": list(report.notes),
        "failures": [failure_json(f) for f in report.failures],
        # one per distinct bug: the index of its shortest counterexample in "failures"
        "findings": [
            {
                "rule": finding.rule,
                "signature": list(finding.signature),
                "failure": report.failures.index(finding.failure),
                "phases": list(finding.phases),
            }
            for finding in group(report.failures)
        ],
    }


def junit_suite(report: ConformReport, command: str) -> Suite:
    """The report as a JUnit suite: one test case per phase, each failing phase carrying its
    own failure; a failure of no phase, and a level problem, a case of their own.

    Suite properties carry the SUT, the levels, the integer range and the
    situation coverage (``coverage.<situation>``: runs that exercised it).
    """
    by_phase = {f.phase: f for f in report.failures if f.phase}
    names = {p.name for p in report.phases}
    loose = [f for f in report.failures if not f.phase or f.phase not in names]
    cases = [
        Case(
            "fencepost.conform",
            phase.name,
            phase.seconds,
            _junit_failure(by_phase[phase.name], command)
            if phase.failed and phase.name in by_phase
            else None,
        )
        for phase in report.phases
    ]
    cases += [
        Case("fencepost.conform", f.phase or f.family, None, _junit_failure(f, command))
        for f in loose
    ]
    if report.problem:
        cases.append(
            Case("fencepost.conform", "levels", None, Outcome("failure", report.problem, "levels"))
        )
    properties = [
        ("sut", report.sut),
        ("levels", ",".join(report.tested)),
        ("integers", report.integers),
    ]
    properties += [(f"coverage.{s.value}", str(report.coverage.runs.get(s, 0))) for s in Situation]
    properties += [
        (f"power.{w.name}", str(report.power.runs.get(w.name, 0))) for w in WRONG_ANSWERS
    ]
    warnings = report.warnings()
    return Suite(
        "fencepost conform",
        tuple(cases),
        report.seconds,
        tuple(properties),
        "\n".join(warnings) if warnings else None,
    )


def write_junit(path: Path, report: ConformReport, command: str) -> None:
    """JUnit XML of :func:`junit_suite` (the one writer, :mod:`fencepost.reports.junit`)."""
    path.write_text(junit_xml(junit_suite(report, command)), encoding="utf-8")


def _junit_failure(failure: Failure, command: str) -> Outcome:
    return Outcome(
        "failure",
        str(failure.violation),
        failure.violation.rule.value,
        render_failure(failure, command),
    )


def write_transcript(path: Path, lines: Iterable[TranscriptLine]) -> None:
    with path.open("w", encoding="utf-8") as out:
        for line in lines:
            out.write(json.dumps(line.to_json()) + "\n")


def write_report_dir(directory: Path, report: ConformReport, command: str) -> list[Path]:
    """summary.txt, summary.json, and per failure its report, transcript and regression file."""
    directory.mkdir(parents=True, exist_ok=True)
    written = [directory / "summary.txt", directory / "summary.json"]
    written[0].write_text(render_summary(report, command) + "\n", encoding="utf-8")
    written[1].write_text(json.dumps(report_json(report), indent=2) + "\n", encoding="utf-8")
    for i, failure in enumerate(report.failures, 1):
        stem = f"failure-{i}-{failure.violation.rule.value}"
        text = directory / f"{stem}.txt"
        text.write_text(render_failure(failure, command) + "\n", encoding="utf-8")
        transcript = directory / f"{stem}-transcript.jsonl"
        write_transcript(transcript, failure.transcript)
        regression = directory / f"{stem}-bad.jsonl"
        save_regression(regression, failure, report.sut)
        written += [text, transcript, regression]
    return written


# --- regression files ---------------------------------------------------------------------


class RegressionError(ValueError):
    """A regression file that cannot be read; the message names the line and the field."""


@dataclass(frozen=True)
class Regression:
    """A saved failing run: the world (or algebra case) and the steps to replay."""

    verdict: str
    rule: str
    message: str
    seed: int | None
    setup: WorldSetup | None
    actions: tuple[Action, ...]
    case: AlgebraCase | None


def regression_name(failure: Failure) -> str:
    """The file name ``--save DIR`` uses: rule, seed and the verdict."""
    seed = "handshake" if failure.seed is None else str(failure.seed)
    return f"{failure.violation.rule.value}-{seed}-bad.jsonl"


def save_regression(path: Path, failure: Failure, sut: str) -> Path:
    """Write ``failure`` as a replayable regression file; a directory gets a generated name."""
    if path.is_dir():
        path = path / regression_name(failure)
    header = {
        "fencepost_regression": REGRESSION_VERSION,
        "verdict": "bad",
        "rule": failure.violation.rule.value,
        "message": failure.violation.message,
        "seed": failure.seed,
        "family": failure.family,
        "sut": sut,
        "world": None if failure.setup is None else failure.setup.to_json(),
        "case": None if failure.case is None else case_message(failure.case, 1),
    }
    with path.open("w", encoding="utf-8") as out:
        out.write(json.dumps(header) + "\n")
        by_action = [s for s in failure.steps if not s.drain]
        for i, action in enumerate(failure.actions, 1):
            says = by_action[i - 1].says if i - 1 < len(by_action) else ""
            out.write(
                json.dumps({"step": i, "action": action_to_json(action), "says": says}) + "\n"
            )
    return path


#: The largest regression file read (a shrunk failure is a few kilobytes).
MAX_REGRESSION_BYTES = 16 << 20


def read_regression_text(path: Path) -> str:
    """The file's text, refusing more than :data:`MAX_REGRESSION_BYTES` (``/dev/zero``)."""
    try:
        with open_regular(path) as handle:
            raw = handle.read(MAX_REGRESSION_BYTES + 1)
    except NotRegularFile as exc:
        raise RegressionError(f"{path}: {exc.reason}") from None
    except OSError as exc:
        raise RegressionError(f"{path}: cannot read: {exc.strerror or exc}") from None
    if len(raw) > MAX_REGRESSION_BYTES:
        raise RegressionError(
            f"{path}: larger than {MAX_REGRESSION_BYTES >> 20} MiB; a regression file is a "
            "header and one line per step"
        )
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise RegressionError(f"{path}:{line}: not UTF-8 text ({exc.reason})") from None


def regression_problem(exc: MessageError) -> str:
    """The one JSON-lines reader's refusal, without its ``line`` prefix."""
    if exc.field == "line":
        return exc.problem
    return f"{exc.field.removeprefix('line.')}: {exc.problem}"


def _names_in(action: Action) -> list[tuple[str, str]]:
    out = []
    for field in ("worker", "partition"):
        value = getattr(action, field, None)
        if isinstance(value, str):
            out.append((field, value))
    return out


def load_regression(path: Path) -> Regression:
    """Read a regression file; :class:`RegressionError` names the line and the problem.

    Every step must name workers and partitions of the file's world: a step that
    names an unknown one could never run, and a replay that skipped it would pass
    a known-buggy SUT.
    """
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
    if header.get("fencepost_regression") != REGRESSION_VERSION:
        raise RegressionError(
            f"{path}:{first}: not a fencepost regression file of version {REGRESSION_VERSION} "
            '(the header needs "fencepost_regression": 1)'
        )
    seed = header.get("seed")
    if seed is not None and type(seed) is not int:
        raise RegressionError(f"{path}:{first}: seed: an integer or null")
    try:
        setup = None if header.get("world") is None else WorldSetup.from_json(header["world"])
        raw_case = header.get("case")
        if raw_case is not None and not isinstance(raw_case, dict):
            raise MessageError("case", "an algebra case is a compare or merge request object")
        case = None if raw_case is None else case_from_message(raw_case)
    except (SetupError, MessageError, BadValue) as exc:
        raise RegressionError(f"{path}:{first}: {exc}") from None
    except RecursionError:
        raise RegressionError(f"{path}:{first}: the world is nested too deeply") from None
    if setup is None and case is None:
        raise RegressionError(f"{path}:{first}: the header needs a world or an algebra case")
    known: dict[str, set[str]] = {"worker": set(), "partition": set()}
    if setup is not None:
        known["worker"] = set(setup.workers)
        known["partition"] = {p.name for e in setup.epochs for p in e.partitions}
    actions = []
    for number, obj in objects[1:]:
        if set(obj) - {"step", "action", "says"}:
            raise RegressionError(f"{path}:{number}: a step line has step, action and says")
        try:
            action = action_from_json(obj.get("action"), f"line {number}.action")
        except ScheduleError as exc:
            raise RegressionError(f"{path}:{number}: {exc}") from None
        if setup is None:
            raise RegressionError(f"{path}:{number}: an algebra regression has no steps")
        for field, name in _names_in(action):
            if name not in known[field]:
                raise RegressionError(
                    f"{path}:{number}: action.{field}: {name!r} is not a {field} of the file's "
                    f"world (it has {', '.join(sorted(known[field])) or 'none'})"
                )
        actions.append(action)
    return Regression(
        verdict=str(header.get("verdict", "bad")),
        rule=str(header.get("rule", "")),
        message=str(header.get("message", "")),
        seed=seed,
        setup=setup,
        actions=tuple(actions),
        case=case,
    )


@dataclass(frozen=True)
class Replayed:
    """A regression file run once: the run, and every step that could not run.

    A step can become impossible when the SUT now behaves differently (a fixed
    bug ends an attempt earlier, so an answer has no call to answer); a replay
    lists each such step instead of skipping it silently.
    """

    result: RunResult
    skipped: tuple[tuple[int, str], ...]


def replay_steps(
    factory: SutFactory, setup: WorldSetup, actions: Iterable[Action], *, timeout: float
) -> Replayed:
    """Run ``actions`` once, noting (step number, the step in words) for each that cannot run."""
    skipped: list[tuple[int, str]] = []
    with Run(factory, setup, timeout=timeout) as run:
        run.start()
        for number, action in enumerate(actions, 1):
            if run.stopped:
                break
            if not run.execute(action):
                skipped.append((number, describe(action)))
        run.drain()
    return Replayed(run.finish(), tuple(skipped))


def replay_regression(
    factory: SutFactory, regression: Regression, *, timeout: float
) -> Replayed | Failure | None:
    """Run a regression file's steps (or case) once: the run, a Failure, or None if it passes.

    Schedules give their :class:`Replayed` run; an algebra case that fails gives a
    :class:`Failure`, one that passes gives None.
    """
    if regression.setup is not None:
        return replay_steps(factory, regression.setup, regression.actions, timeout=timeout)
    assert regression.case is not None
    result = run_algebra(factory, [regression.case], timeout=timeout)
    if result.ok:
        return None
    return Failure(
        seed=regression.seed,
        family="algebra",
        violation=result.violations[0],
        transcript=result.transcript,
        stderr=dict(result.stderr),
        original_steps=1,
        case=regression.case,
    )
