"""A late-commit conformance report (:class:`fencepost.harness.late_search.LateReport`), drawn.

The verdict and the rows lost and duplicated first, then the run's figures,
the phases and the search's power (per run kind, in how many runs each
plausible wrong answer would have been caught), then per finding its story
and its shortest schedule drawn as a timeline: one lane for the tool (each
sync a box, each call inside it a box from the step that made it to the step
that answered it, lost responses marked applied or not, a crash ending its
boxes) and one lane per partition for the source's writers (each row a mark
at the step it commits, a partition's appearance too); per step the clock,
the rows each partition shows, the destination's copies and the tool's state.

Cost: linear in the findings' transcripts and steps.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from fencepost.harness.late_power import WRONG_ANSWERS
from fencepost.harness.late_report import (
    finding_title,
    render_finding,
    replay_command,
    verdict_line,
    world_words,
)
from fencepost.harness.late_runner import WORKER, LateSnapshot, LateStep
from fencepost.harness.late_search import LateFinding, LateReport
from fencepost.harness.late_world import LateSetup, clock_text
from fencepost.reports import (
    Breach,
    Fact,
    Lane,
    LaneKind,
    Mark,
    Report,
    Section,
    Span,
    Status,
    Step,
    Table,
    Timeline,
)

#: The lane of the source's clock (moves without a commit).
CLOCK = "clock"


def _rows_fact(report: LateReport) -> str:
    t = report.totals
    return (
        f"rows lost in {t.runs_losing} of {t.runs} run(s) (at most {t.most_lost} in one); "
        f"duplicated in {t.runs_duplicating} (at most {t.most_duplicated}); "
        f"{t.absorbed} re-read(s) absorbed by merge"
    )


def late_report(report: LateReport, command: str) -> Report:
    """The whole late-commit run: verdict, rows, facts, phases, power, findings."""
    facts = []
    if report.findings:
        d = report.findings[0].result.delivery
        if d is not None:
            facts.append(
                Fact(
                    "rows in the shortest counterexample",
                    f"{len(d.lost)} lost ({', '.join(r.id for r in d.lost) or 'none'}), "
                    f"{len(d.duplicated)} duplicated",
                )
            )
    facts += [
        Fact("rows across the search", _rows_fact(report)),
        Fact("SUT", report.sut, code=True),
        Fact("says it is", report.sut_name or "?"),
        Fact("delivery declared", report.delivery),
        Fact("world", world_words(report.options)),
        Fact(
            "total",
            f"{report.runs} run(s), {report.totals.syncs} syncs, {report.messages:,} messages "
            f"in {report.seconds:.1f}s",
        ),
    ]
    if report.reused:
        facts.append(
            Fact("processes", f"{report.processes} started, reused {report.reused} time(s)")
        )
    if report.problem:
        facts.append(Fact("problem", report.problem))
    facts += [Fact("note", n) for n in report.notes]
    facts.append(Fact("verdict", verdict_line(report)))
    sections = [finding_section(f, report, command) for f in report.findings]
    sections += [
        Section(
            title=v.rule.value,
            status=Status.FAIL,
            summary=str(v),
            facts=(Fact("meaning", v.rule.meaning),),
            text=tuple(str(line) for line in lines),
        )
        for v, lines in report.handshake
    ]
    return Report(
        title="fencepost conform --world late-commits",
        status=Status.PASS if report.ok else Status.FAIL,
        verdict="CONFORMANT" if report.ok else "NOT CONFORMANT",
        facts=tuple(facts),
        tables=(phase_table(report), power_table(report)),
        sections=tuple(sections),
    )


def phase_table(report: LateReport) -> Table:
    return Table(
        "phases",
        ("phase", "runs", "messages", "seconds", "verdict"),
        tuple(
            (
                p.name,
                str(p.runs),
                f"{p.messages:,}",
                f"{p.seconds:.1f}",
                "FAIL" if p.failed else "ok",
            )
            for p in report.phases
        ),
        tuple(Status.FAIL if p.failed else Status.PASS for p in report.phases),
        numeric=frozenset({1, 2, 3}),
    )


def power_table(report: LateReport) -> Table:
    """Per run kind: runs, and in how many each plausible wrong answer would have been caught."""
    names = list(WRONG_ANSWERS)
    rows = []
    for kind, runs in report.power.runs.items():
        row = report.power.caught.get(kind, {})
        rows.append((kind, str(runs), *(str(row.get(n, 0)) for n in names)))
    return Table(
        "plausible wrong answers: runs of each kind in which the judge would have caught a tool "
        "that " + "; ".join(f"{n}: {WRONG_ANSWERS[n]}" for n in names),
        ("run kind", "runs", *names),
        tuple(rows),
        numeric=frozenset(range(1, len(names) + 2)),
    )


def finding_section(finding: LateFinding, report: LateReport, command: str) -> Section:
    v = finding.violation
    facts = [Fact("property", finding_title(finding)), Fact("meaning", v.rule.meaning)]
    for story in finding.stories():
        facts.append(Fact(f"{story.row.id}", story.headline))
        facts.append(Fact("queries", story.between))
    if finding.seed is not None:
        facts.append(Fact("replay", replay_command(finding, report.options, command), code=True))
    if finding.also:
        facts.append(Fact("the same bug showed again in", ", ".join(finding.also)))
    timelines = (finding_timeline(finding, report, command),) if finding.result.steps else ()
    return Section(
        title=finding_title(finding),
        status=Status.FAIL,
        summary=str(v),
        facts=tuple(facts),
        timelines=timelines,
        text=tuple(render_finding(finding, report.options, command, transcript=10**6).splitlines()),
    )


@dataclass
class _Open:
    start: int
    label: str
    detail: list[str] = field(default_factory=list)


def _detail(lines: list[str]) -> str:
    return "\n".join(line if len(line) <= 300 else line[:297] + "..." for line in lines)


def _tool_spans(finding: LateFinding) -> list[Span]:
    """Syncs and calls on the tool's lane, read from the transcript."""
    result = finding.result
    modes = {(c.step, tuple(c.records)): c.answer for c in result.commits}
    spans: list[Span] = []
    sync: _Open | None = None
    calls: dict[str, _Open] = {}
    for line in result.transcript:
        if line.direction == "**":
            if line.text.startswith("crash:"):
                for call in calls.values():
                    spans.append(
                        Span(
                            WORKER,
                            call.start,
                            line.step,
                            call.label,
                            _detail(call.detail),
                            1,
                            Mark.CRASHED,
                        )
                    )
                calls.clear()
                if sync is not None:
                    spans.append(
                        Span(
                            WORKER,
                            sync.start,
                            line.step,
                            sync.label + " (crashed)",
                            _detail(sync.detail),
                            0,
                            Mark.CRASHED,
                        )
                    )
                    sync = None
            continue
        try:
            msg = json.loads(line.text)
        except ValueError:
            continue
        if not isinstance(msg, dict):
            continue
        kind = msg.get("type")
        if line.direction == "->" and kind == "sync":
            sync = _Open(line.step, f"sync #{msg.get('id')}", [line.text])
        elif line.direction == "<-" and kind == "call":
            op = str(msg.get("op", "call"))
            label = op
            if op == "commit":
                records = msg.get("records")
                count = len(records) if isinstance(records, list) else 0
                label = f"commit {count} ({msg.get('mode')})"
            calls[str(msg.get("call_id"))] = _Open(line.step, label, [line.text])
        elif line.direction == "->" and kind == "reply":
            key = str(msg.get("call_id"))
            if key not in calls:
                continue
            call = calls.pop(key)
            mark = Mark.NONE
            if msg.get("ok") is False:
                applied = any(
                    mode == "applied_lost" for (step, _), mode in modes.items() if step == line.step
                )
                mark = Mark.LOST_APPLIED if applied else Mark.LOST
            spans.append(
                Span(
                    WORKER,
                    call.start,
                    line.step,
                    call.label,
                    _detail([*call.detail, line.text]),
                    1,
                    mark,
                )
            )
        elif line.direction == "<-" and kind == "sync_ok" and sync is not None:
            spans.append(
                Span(
                    WORKER,
                    sync.start,
                    line.step,
                    f"{sync.label} \u2192 {msg.get('outcome')}",
                    _detail([*sync.detail, line.text]),
                    0,
                )
            )
            sync = None
    for call in calls.values():
        spans.append(Span(WORKER, call.start, None, call.label, _detail(call.detail), 1, Mark.OPEN))
    if sync is not None:
        spans.append(Span(WORKER, sync.start, None, sync.label, _detail(sync.detail), 0, Mark.OPEN))
    return spans


def _writer_spans(setup: LateSetup, steps: tuple[LateStep, ...]) -> list[Span]:
    """A mark per row at the step it becomes visible, on its partition's lane."""
    spans: list[Span] = []
    seen: set[str] = {r.id for r in setup.rows if setup.visible_from(r) <= setup.origin}
    appeared = {p.name for p in setup.partitions if p.appears <= setup.origin}
    for step in steps:
        state = step.state
        if state is None:
            continue
        now_visible = {r for _, ids in state.visible for r in ids}
        for part, _ in state.visible:
            if part not in appeared:
                appeared.add(part)
                spans.append(Span(part, step.index, step.index, f"{part} appears", step.says, 1))
        for row in setup.rows:
            if row.id in now_visible and row.id not in seen:
                seen.add(row.id)
                late = row.commit - row.at
                spans.append(
                    Span(
                        row.partition,
                        step.index,
                        step.index,
                        f"{row.id} commits",
                        f"{row.id} at {clock_text(setup, row.at)} commits at "
                        f"{clock_text(setup, row.commit)} ({late} after its cursor value)",
                        1,
                    )
                )
    return spans


def finding_timeline(finding: LateFinding, report: LateReport, command: str) -> Timeline:
    """The finding's shortest run as a timeline (see the module docstring)."""
    result = finding.result
    setup = result.setup
    lanes = [Lane(WORKER, "tool", LaneKind.TOOL)]
    lanes += [Lane(p.name, f"writers: {p.name}", LaneKind.WRITER) for p in setup.partitions]
    lanes.append(Lane(CLOCK, "clock", LaneKind.ENVIRONMENT))
    spans = _tool_spans(finding) + _writer_spans(setup, result.steps)
    for step in result.steps:
        if step.phase == "quiesce" or step.says.startswith("the clock moves"):
            spans.append(Span(CLOCK, step.index, step.index, "clock", step.says, 1))
    by_step: dict[int, list[str]] = {}
    for line in result.transcript:
        by_step.setdefault(line.step, []).append(str(line))
    v = finding.violation
    at = v.step if v.step is not None else (result.steps[-1].index if result.steps else 0)
    breach = Breach(at, v.rule.value, v.rule.meaning, v.message, WORKER)
    steps = tuple(
        Step(
            s.index,
            WORKER if not s.says.startswith("the clock") else CLOCK,
            (f"({s.phase}) " if s.phase != "schedule" else "") + s.says,
            _state_tables(setup, s.state) if s.state is not None else (),
            tuple(by_step.get(s.index, ())),
        )
        for s in result.steps
    )
    facts = []
    if finding.seed is not None:
        facts.append(Fact("replay", replay_command(finding, report.options, command), code=True))
    facts.append(
        Fact(
            "shortest schedule",
            f"{len(finding.actions)} step(s) (from {finding.original_steps}; "
            f"{finding.shrink_runs} shrink run(s)), then the harness answered the remaining "
            "calls, let the world quiesce and ran the tool to completion",
        )
    )
    return Timeline(
        title=f"{v.rule.value}: the shortest schedule found",
        lanes=tuple(lanes),
        spans=tuple(spans),
        steps=steps,
        breach=breach,
        facts=tuple(facts),
        request_legend="a sync: one run of the tool",
    )


def _state_tables(setup: LateSetup, state: LateSnapshot) -> tuple[Table, ...]:
    """The source (visible rows per partition, rows still to commit), the destination, the state."""
    rows = tuple((part, ", ".join(ids) or "none") for part, ids in state.visible)
    tables = [
        Table(
            f"the source at {clock_text(setup, state.clock)}: visible rows",
            ("partition", "rows"),
            rows,
        ),
        Table(
            "the source: rows not yet committed (or in a partition not yet appeared)",
            ("rows",),
            ((", ".join(state.pending) or "none",),),
        ),
        Table(
            "the destination: copies per row",
            ("row", "copies"),
            tuple((r, str(n)) for r, n in state.copies) or (("none", "0"),),
            tuple(Status.WARN if n > 1 else Status.INFO for _, n in state.copies),
            numeric=frozenset({1}),
        ),
        Table("the tool's state", ("state",), ((state.state,),)),
    ]
    return tuple(tables)
