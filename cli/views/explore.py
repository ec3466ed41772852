"""The model's exploration (:class:`~fencepost.explorer.search.Exploration`) as a report.

A table of parts (states, transitions, depth, speed, verdict) and, per violated
part, its shortest counterexample as a timeline: one lane per publisher and per
reader of the model and one for the environment (source, ingest, membership,
faulty writers). The model's calls are atomic, so each is a box of one step;
a request (a publisher's attempt, a reader's pass) is the box around the steps
while the process is busy; a write whose response was lost is marked applied or
not, and a write left in flight is drawn up to the step the store applies it.
Each step shows the record, every checkpoint of every epoch, the ground truth
and the busy processes.

Cost: linear in the counterexample's steps times the model's partitions and processes.
"""

from __future__ import annotations

from fencepost.explorer.render import render_counterexample
from fencepost.explorer.search import HOLDS, VIOLATED, Exploration, ExploreResult
from fencepost.model.render import summarize, truth_line
from fencepost.model.state import State
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

ENV = "environment"

_WRITE_MARK = {"lost-applied": Mark.LOST_APPLIED, "lost-not-applied": Mark.LOST}


def explore_report(exploration: Exploration, command: str = "fencepost explore") -> Report:
    rows, status = [], []
    for r in exploration.results:
        rows.append(
            (
                r.part,
                f"{r.states:,}",
                f"{r.transitions:,}",
                str(r.depth),
                f"{r.seconds:.2f}",
                f"{r.states_per_second:,.0f}",
                r.verdict,
            )
        )
        status.append(_status(r.verdict))
    table = Table(
        "parts explored",
        ("part", "states", "transitions", "depth", "seconds", "states/s", "verdict"),
        tuple(rows),
        tuple(status),
        numeric=frozenset({1, 2, 3, 4, 5}),
    )
    sections = []
    for r in exploration.results:
        if r.verdict == VIOLATED and r.violation is not None:
            sections.append(
                Section(
                    f"part {r.part}: {r.violation.invariant}",
                    Status.FAIL,
                    r.violation.message,
                    facts=(
                        Fact("mutant", r.config.mutant or "none"),
                        Fact("invariant", f"{r.violation.invariant}: {r.violation.doc}"),
                        *(
                            [Fact("also broken", ", ".join(r.violation.also))]
                            if r.violation.also
                            else []
                        ),
                    ),
                    timelines=(counterexample_timeline(r),),
                    text=tuple(render_counterexample(r).splitlines()),
                )
            )
        elif r.verdict != HOLDS:
            sections.append(
                Section(
                    f"part {r.part}: {r.verdict}",
                    Status.WARN,
                    "stopped at --max-states before exhausting the bounds: no invariant broke in "
                    "the states explored, but nothing is proved",
                )
            )
    verdict = {
        HOLDS: "every invariant holds",
        VIOLATED: "a counterexample was found",
    }.get(exploration.verdict, "incomplete: nothing proved")
    mutant = next((r.config.mutant for r in exploration.results if r.config.mutant), None)
    facts = [
        Fact("command", command, code=True),
        Fact(
            "total",
            f"{exploration.states:,} states, {exploration.transitions:,} transitions in "
            f"{exploration.seconds:.2f}s",
        ),
    ]
    if mutant:
        facts.append(Fact("mutant", mutant))
    return Report(
        "fencepost explore",
        _status(exploration.verdict),
        verdict,
        tuple(facts),
        tuple(sections),
        (table,),
    )


def _status(verdict: str) -> Status:
    return {HOLDS: Status.PASS, VIOLATED: Status.FAIL}.get(verdict, Status.WARN)


def _busy(state: State) -> dict[str, str]:
    """Each busy process's lane key -> what it is doing, from the model's own wording."""
    ctx = state.context
    busy: dict[str, str] = {}
    for k, pub in enumerate(state.publishers):
        if pub.phase:
            busy[ctx.publisher_names[k]] = f"attempt {pub.attempt}"
    for i, part in enumerate(state.partitions):
        for j, reader in enumerate(part.readers):
            if reader.phase:
                busy[ctx.reader_names[i][j]] = f"pass of {ctx.partition_names[i]}"
    return busy


def counterexample_timeline(result: ExploreResult) -> Timeline:
    """The counterexample of ``result`` as a timeline (see the module docstring)."""
    steps = result.counterexample or []
    assert steps, "a violated part has a counterexample"
    ctx = steps[0].state.context
    lanes = [Lane(p, p, LaneKind.PUBLISHER) for p in ctx.publisher_names]
    lanes += [Lane(r, r, LaneKind.READER) for names in ctx.reader_names for r in names]
    lanes.append(Lane(ENV, "environment", LaneKind.ENVIRONMENT))
    keys = {lane.key for lane in lanes}
    spans: list[Span] = []
    open_requests: dict[str, tuple[int, str]] = {}
    in_flight: dict[str, tuple[int, str]] = {}
    out_steps: list[Step] = []
    for step in steps:
        action = step.action
        lane: str | None = None
        if action is not None:
            lane = action.actor if action.actor in keys else ENV
            if action.kind == "delayed_write" and action.actor in in_flight:
                start, text = in_flight.pop(action.actor)
                spans.append(
                    Span(
                        action.actor,
                        start,
                        step.index,
                        "write_publication (in flight)",
                        f"{text}\n{action.describe()}",
                        1,
                        Mark.LOST_APPLIED,
                    )
                )
            elif action.kind == "write_publication" and action.outcome == "in-flight":
                in_flight[lane] = (step.index, action.describe())
            else:
                label = (
                    action.kind
                    if lane != ENV
                    else f"{action.kind} {action.partition or ''}".strip()
                )
                mark = _WRITE_MARK.get(action.outcome or "", Mark.NONE)
                spans.append(Span(lane, step.index, step.index, label, action.describe(), 1, mark))
        busy = _busy(step.state)
        for key, what in busy.items():
            open_requests.setdefault(key, (step.index, what))
        for key in [k for k in open_requests if k not in busy]:
            start, what = open_requests.pop(key)
            spans.append(Span(key, start, step.index, what, "", 0))
        out_steps.append(Step(step.index, lane, step.text, model_state_tables(step.state)))
    for key, (start, what) in open_requests.items():
        spans.append(Span(key, start, None, what, "", 0, Mark.OPEN))
    for key, (start, text) in in_flight.items():
        spans.append(Span(key, start, None, "write_publication (in flight)", text, 1, Mark.LOST))
    v = result.violation
    assert v is not None
    last = steps[-1]
    breach_lane = out_steps[-1].lane
    breach = Breach(last.index, v.invariant, v.doc, v.message, breach_lane)
    spans = [
        Span(s.lane, s.start, s.end, s.label, s.detail, s.depth, Mark.BREACH)
        if s.lane == breach_lane and s.start == last.index and s.depth == 1 and s.mark is Mark.NONE
        else s
        for s in spans
    ]
    return Timeline(
        f"part {result.part}: the shortest counterexample ({len(steps) - 1} steps)",
        tuple(lanes),
        tuple(spans),
        tuple(out_steps),
        breach,
    )


def model_state_tables(state: State) -> tuple[Table, ...]:
    """The record, every checkpoint of every epoch so far, the ground truth, the processes."""
    ctx = state.context
    tables = []
    if ctx.has_publishers:
        rec = state.record
        tables.append(
            Table(
                "publication record",
                ("epoch", "cut", "revision", "op_id"),
                ((str(rec.epoch), str(rec.cut), str(rec.revision), rec.op_id or "none"),),
            )
        )
    rows = []
    for i, part in enumerate(state.partitions):
        for e0, cp in enumerate(part.checkpoints[: state.epoch]):
            if cp.epoch == 0:
                rows.append((ctx.partition_names[i], str(e0 + 1), "none", "", "", ""))
                continue
            flags = []
            if cp.scope != ctx.config.scope:
                flags.append(f"scope {cp.scope}")
            if cp.epoch != e0 + 1:
                flags.append(f"stamped epoch {cp.epoch}")
            rows.append(
                (
                    ctx.partition_names[i],
                    str(e0 + 1),
                    str(cp.cut),
                    str(part.generations[e0]),
                    "final" if cp.final else "provisional",
                    "; ".join(flags),
                )
            )
    tables.append(
        Table(
            f"checkpoints (membership epoch {state.epoch} is current)",
            ("partition", "epoch", "cut", "generation", "finality", "note"),
            tuple(rows),
        )
    )
    tables.append(Table("ground truth", ("events",), ((truth_line(state),),)))
    processes = [line for line in summarize(state) if line.startswith("processes: ")]
    if processes:
        busy = processes[0].removeprefix("processes: ").split("; ")
        tables.append(Table("processes", ("doing",), tuple((b,) for b in busy)))
    return tuple(tables)
