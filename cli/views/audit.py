"""An audit (:class:`~fencepost.audit.run.AuditReport`) as a report: the figures, and each
violation's fragment drawn as a timeline.

Each worker of the fragment is a lane; each operation a box from its invocation
to its completion, in the order of the log's times (equal times are one column:
linearization points are real numbers, so ties are concurrent). An operation
whose response was lost has no end: it is drawn open, marked lost, since it may
take effect at any time after it was invoked. The operations at fault are
marked, and the breach names the property and what it means.

Cost: linear in the operations of the fragments shown (at most :data:`SHOWN`).
"""

from __future__ import annotations

from fencepost.audit.run import AuditReport
from fencepost.audit.timeline import Timeline as AuditTimeline
from fencepost.audit.timeline import timeline_of
from fencepost.judge.properties import MEANING, Property
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

#: At most this many violations are drawn (all are listed in the table).
SHOWN = 10

#: What the audit's own rules mean (the judge's properties mean what MEANING says).
AUDIT_MEANING = {
    "linearizability": (
        "no order of the stream's operations, consistent with real time (an operation that "
        "completed before another began comes first), has every read return the latest "
        "write: some answer the log records could not have happened"
    ),
    "op_id_reuse": "one op_id was written by two publication attempts: attribution is lost",
}


def meaning(rule: str) -> str:
    try:
        return MEANING[Property(rule)]
    except ValueError:
        return AUDIT_MEANING.get(rule, rule)


def _timeline(t: AuditTimeline) -> Timeline:
    boxes = t.boxes
    times = sorted({b.start for b in boxes} | {b.end for b in boxes if b.end is not None})
    column = {at: i + 1 for i, at in enumerate(times)}
    lanes = tuple(Lane(lane.worker, lane.worker, LaneKind.WORKER) for lane in t.lanes)
    spans = []
    steps = []
    marked_at = None
    for b in boxes:
        mark = Mark.BREACH if b.marked else (Mark.OPEN if b.end is None else Mark.NONE)
        start = column[b.start]
        end = None if b.end is None else column[b.end]
        spans.append(Span(b.worker, start, end, b.label, f"{b.label} ({b.where})", 1, mark))
        lost = "; its response was lost" if b.end is None else ""
        steps.append(Step(start, b.worker, f"{b.number}. {b.label}{lost} ({b.where})"))
        if b.marked and marked_at is None:
            marked_at = end if end is not None else start
    by_index: dict[int, list[Step]] = {}
    for s in steps:
        by_index.setdefault(s.index, []).append(s)
    merged = tuple(
        Step(i, group[0].lane if len(group) == 1 else None, "; ".join(s.text for s in group))
        for i, group in sorted(by_index.items())
    )
    breach = Breach(
        marked_at if marked_at is not None else (max(column.values(), default=1)),
        t.rule,
        meaning(t.rule),
        t.message,
    )
    facts = (Fact("stream", t.stream),) + (
        (Fact("before the fragment", t.start),) if t.start else ()
    )
    return Timeline(f"{t.rule} on stream {t.stream}", lanes, tuple(spans), merged, breach, facts)


def audit_report(report: AuditReport, command: str = "fencepost audit") -> Report:
    """The neutral report of one audit (see the module docstring)."""
    code = report.exit_code
    status = {0: Status.PASS, 1: Status.FAIL, 4: Status.WARN}.get(code, Status.ERROR)
    verdict = {
        0: "every property decidable from the log holds",
        1: f"{len(report.violations)} violation(s)",
        4: "undecided: no violation found, but the log could not be decided",
    }.get(code, "error")
    facts = (
        Fact("command", command, code=True),
        Fact("operations", f"{report.operations:,}"),
        Fact("streams", f"{report.streams:,}"),
        Fact("files", str(report.files)),
        Fact("seconds", f"{report.seconds:.2f}"),
        Fact("calls never completed (taken as indefinite)", str(report.unfinished)),
    )
    sections = []
    if report.violations:
        rows = tuple((v.property, v.stream, v.message) for v in report.violations)
        table = Table("violations", ("property", "stream", "what happened"), rows)
        sections.append(
            Section(
                "violations",
                Status.FAIL,
                f"{len(report.violations)} violation(s); the first {SHOWN} drawn",
                tables=(table,),
                timelines=tuple(_timeline(timeline_of(v)) for v in report.violations[:SHOWN]),
            )
        )
    notes = [f"{s.stream}: {n}" for s in report.verdicts for n in s.notes]
    notes += [f"undecided: {u}" for u in [*report.undecided, *report.doubts]]
    notes += [
        f"stream {s.stream}: the recorder dropped {s.dropped} line(s): its history is incomplete"
        for s in report.incomplete
    ]
    notes += [f"{where}: a last line cut short: skipped" for where in report.torn]
    if notes:
        sections.append(Section("notes", Status.INFO, text=tuple(notes)))
    return Report("fencepost audit", status, verdict, facts, tuple(sections))
