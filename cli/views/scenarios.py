"""Scenario results (:class:`~fencepost.scenarios.outcome.TargetResult`) as a report.

One row per scenario and target; per failure (or error) a section with the
mismatches, the property that broke and, when the run got that far, its steps
as a timeline: one lane per publisher and reader of the scenario and one for
the environment; a request is a box from the step that starts it to the step it
ends at (paused requests span their ``resume`` steps), marked when the scenario
loses one of its responses; each step shows the record and the checkpoints the
target saw after it.

Cost: linear in the results and the steps of the failing ones.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

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
from fencepost.scenarios.outcome import Observed, TargetResult
from fencepost.scenarios.spec import Crash, Ingest, Publish, Resume, format_cut

ENV = "environment"

_STATUS = {
    "pass": Status.PASS,
    "fail": Status.FAIL,
    "skip": Status.SKIP,
    "error": Status.ERROR,
}


def scenarios_report(results: Sequence[TargetResult], scenarios: int, command: str) -> Report:
    failed = [r for r in results if not r.ok]
    counts = {s: sum(1 for r in results if r.status == s) for s in _STATUS}
    table = Table(
        "scenarios",
        ("status", "target", "scenario", "detail"),
        tuple((r.status.upper(), r.target, r.scenario, r.detail) for r in results),
        tuple(_STATUS[r.status] for r in results),
    )
    return Report(
        "fencepost scenarios",
        Status.FAIL if failed else Status.PASS,
        f"{len(failed)} failed" if failed else "every scenario as expected",
        (
            Fact("command", command, code=True),
            Fact(
                "runs",
                f"{scenarios} scenarios, {len(results)} runs: "
                + ", ".join(f"{n} {s}" for s, n in counts.items() if n),
            ),
        ),
        tuple(result_section(r) for r in failed),
        (table,),
    )


def meaning(name: str) -> str:
    """What breaking the property ``name`` means (the judge's words; harness rules as named)."""
    try:
        return MEANING[Property(name)]
    except ValueError:
        return f"the rule {name} of docs/conformance-protocol.md"


def result_section(result: TargetResult) -> Section:
    facts = [Fact("file", result.origin), Fact("expected verdict", result.verdict)]
    facts += [Fact("mismatch", str(m)) for m in result.mismatches]
    if result.breach is not None:
        facts.append(Fact("property", str(result.breach)))
    timelines = (scenario_timeline(result),) if result.trace else ()
    return Section(
        f"{result.scenario} on {result.target}",
        _STATUS[result.status],
        result.detail,
        tuple(facts),
        timelines=timelines,
        text=result.narrative,
    )


def _worker(action: object) -> tuple[str, LaneKind] | None:
    if isinstance(action, Publish):
        return action.publisher, LaneKind.PUBLISHER
    if isinstance(action, Ingest):
        return action.reader, LaneKind.READER
    if isinstance(action, Resume | Crash):
        return action.worker, LaneKind.WORKER
    return None


def _fault_mark(faults: Mapping[str, tuple[str, ...]]) -> Mark:
    modes = {m for seq in faults.values() for m in seq}
    if "applied_lost" in modes:
        return Mark.LOST_APPLIED
    if "lost" in modes:
        return Mark.LOST
    return Mark.NONE


def scenario_timeline(result: TargetResult) -> Timeline:
    lanes: dict[str, Lane] = {}
    spans: list[Span] = []
    opened: dict[str, tuple[int, str, Mark, str]] = {}
    steps: list[Step] = []
    for step, seen in result.trace:
        action = step.action
        who = _worker(action)
        lane = ENV
        if who is not None:
            lane = who[0]
            if lane not in lanes or lanes[lane].kind is LaneKind.WORKER:
                lanes[lane] = Lane(lane, lane, who[1])
        if isinstance(action, Publish | Ingest):
            label = (
                "publication attempt"
                if isinstance(action, Publish)
                else f"ingest pass of {action.partition}"
            )
            faults = ", ".join(f"{op}: {' then '.join(m)}" for op, m in action.faults.items())
            opened[lane] = (step.index, label, _fault_mark(action.faults), faults)
        elif who is None:
            spans.append(Span(ENV, step.index, step.index, step.kind, seen.narrative, 1))
        if lane in opened and (isinstance(action, Crash) or _ended(seen)):
            start, label, mark, faults = opened.pop(lane)
            if isinstance(action, Crash):
                mark = Mark.CRASHED
            spans.append(
                Span(
                    lane,
                    start,
                    step.index,
                    label + _outcome(seen),
                    faults,
                    0 if start != step.index else 1,
                    mark,
                )
            )
        steps.append(Step(step.index, lane, seen.narrative or step.kind, observed_tables(seen)))
    for lane, (start, label, mark, faults) in opened.items():
        spans.append(
            Span(lane, start, None, label, faults, 0, Mark.OPEN if mark is Mark.NONE else mark)
        )
    ordered = sorted(
        lanes.values(), key=lambda lane: (lane.kind is not LaneKind.PUBLISHER, lane.key)
    )
    ordered.append(Lane(ENV, "environment", LaneKind.ENVIRONMENT))
    breach = None
    if result.breach is not None:
        b = result.breach
        at = next((s for s in steps if s.index == b.step), None)
        breach = Breach(b.step, b.property, meaning(b.property), b.message, at.lane if at else None)
    elif result.mismatches:
        m = result.mismatches[0]
        at = next((s for s in steps if s.index == m.step), None)
        breach = Breach(
            m.step,
            f"expectation {m.field}",
            f"the scenario expects {m.field} to be {m.expected} after step {m.step} "
            f"(line {m.line})",
            str(m),
            at.lane if at else None,
        )
    return Timeline(
        f"{result.scenario} on {result.target}",
        tuple(ordered),
        tuple(spans),
        tuple(steps),
        breach,
        (Fact("file", result.origin),),
    )


def _ended(seen: Observed) -> bool:
    return not seen.paused and (
        seen.attempt is not None or seen.ingest is not None or seen.failure is not None
    )


def _outcome(seen: Observed) -> str:
    if seen.attempt is not None:
        return f" \u2192 {seen.attempt.outcome}"
    if seen.ingest is not None:
        return f" \u2192 {format_cut(seen.ingest)}"
    if seen.failure is not None:
        return " \u2192 failed"
    return ""


def observed_tables(seen: Observed) -> tuple[Table, ...]:
    rec = seen.record
    tables = [
        Table(
            "publication record",
            ("epoch", "cut", "revision", "written by"),
            ((str(rec.epoch), format_cut(rec.cut), str(rec.revision), rec.writer or "nobody"),),
        ),
        Table(
            "checkpoints of the current epoch",
            ("partition", "cut", "generation"),
            tuple(
                (
                    partition,
                    "none" if cut is None else format_cut(cut),
                    str(seen.generations.get(partition) or ""),
                )
                for partition, cut in sorted(seen.checkpoints.items())
            ),
        ),
    ]
    if seen.failure:
        tables.append(Table("the request failed", ("why",), ((seen.failure,),)))
    return tuple(tables)
