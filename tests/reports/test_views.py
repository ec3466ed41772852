"""The adapters from results to neutral reports: what each timeline is made of.

A hand-made failure pins how the transcript becomes spans (a lost response
applied, a crash, garbage from the SUT); a real failure of a mutant shows a lost
response marked and a state at every step; the phase plan is what conform runs.
"""

from __future__ import annotations

import sys

from fencepost.harness.conformance import (
    ConformOptions,
    Failure,
    conform,
    exhaustive_phase,
    phase_plan,
)
from fencepost.harness.results import StepRecord, TranscriptLine
from fencepost.harness.rules import Rule, Violation
from fencepost.harness.schedule import Advance, Answer, Crash, Publish
from fencepost.harness.transport import SubprocessSut
from fencepost.reports import LaneKind, Mark, Status
from fencepost.views.conform import conform_report, failure_timeline


def _line(step: int, direction: str, text: str, worker: str = "w1") -> TranscriptLine:
    return TranscriptLine(step, worker, direction, text)


def test_spans_come_from_the_transcript_and_marks_from_the_schedule() -> None:
    steps = (
        StepRecord(1, Advance("A"), "an honest reader certifies A through 1"),
        StepRecord(
            2, Publish("w1"), "w1 starts publication attempt #1; it calls write_publication"
        ),
        StepRecord(3, Answer("w1", "applied_lost"), "applied, response lost; it calls read"),
        StepRecord(4, Crash("w1"), "w1 crashes in publish request #1"),
    )
    transcript = (
        _line(1, "**", "an honest reader certifies A through 1", "env"),
        _line(2, "->", '{"type":"publish","id":1,"worker":"w1"}'),
        _line(2, "<-", '{"type":"call","call_id":"c1","op":"write_publication"}'),
        _line(3, "->", '{"type":"reply","call_id":"c1","ok":false,"error":"timeout"}'),
        _line(3, "<-", '{"type":"call","call_id":"c2","op":"read_publication"}'),
        _line(3, "<-", "garbage that is not JSON {"),
        _line(3, "<-", "[1, 2]"),
        _line(4, "**", "crash: the process dies in publish request #1"),
    )
    failure = Failure(
        seed=-7,
        family="publisher",
        violation=Violation(Rule.LOST_RESPONSE_HONESTY, "reported published", 3, "w1"),
        actions=tuple(s.action for s in steps),
        steps=steps,
        transcript=transcript,
    )
    timeline = failure_timeline(failure, "my-sut")
    assert [(lane.key, lane.kind) for lane in timeline.lanes] == [
        ("w1", LaneKind.WORKER),
        ("env", LaneKind.ENVIRONMENT),
    ]
    spans = {(s.lane, s.label): s for s in timeline.spans}
    write = spans[("w1", "write_publication")]
    assert (write.start, write.end, write.mark) == (2, 3, Mark.LOST_APPLIED)
    assert '"call_id":"c1"' in write.detail and '"error":"timeout"' in write.detail
    read = spans[("w1", "read_publication")]
    assert (read.start, read.end, read.mark) == (3, 4, Mark.CRASHED)
    request = spans[("w1", "publication attempt #1 (crashed)")]
    assert (request.depth, request.start, request.end) == (0, 2, 4)
    assert spans[("w1", "crash")].mark is Mark.CRASHED
    assert spans[("env", "certify A")].start == 1
    assert timeline.breach is not None
    assert (timeline.breach.name, timeline.breach.step, timeline.breach.lane) == (
        "lost_response_honesty",
        3,
        "w1",
    )
    assert timeline.breach.meaning == Rule.LOST_RESPONSE_HONESTY.meaning
    assert [s.index for s in timeline.steps] == [1, 2, 3, 4]
    assert [len(s.messages) for s in timeline.steps] == [1, 2, 4, 1]
    assert ("replay", "fencepost conform --replay -7 -- my-sut") in [
        (f.label, f.value) for f in timeline.facts
    ]


def _sut(*mutant: str) -> SubprocessSut:
    return SubprocessSut([sys.executable, "-m", "fencepost", "sut", *mutant], prefetch=2)


def test_a_lost_response_of_a_real_failure_is_marked_and_every_step_has_its_state() -> None:
    phase = exhaustive_phase("publisher-offsets", 1)
    factory = _sut("--mutant", "blind-success")
    try:
        report = conform(
            factory, ConformOptions(levels=frozenset({"publisher"}), only=frozenset({phase}))
        )
    finally:
        factory.close()
    assert [p.name for p in report.phases] == [phase]
    (failure,) = report.failures
    rendered = conform_report(report, "fencepost sut --mutant blind-success")
    assert rendered.status is Status.FAIL
    (timeline,) = rendered.timelines
    assert any(s.mark is Mark.LOST and s.label == "write_publication" for s in timeline.spans)
    assert timeline.breach is not None and timeline.breach.name == "lost_response_honesty"
    assert len(timeline.steps) == len(failure.steps)
    for step in timeline.steps:
        titles = [t.title for t in step.state]
        assert titles[0] == "publication record" and titles[1].startswith("checkpoints")
    final = timeline.steps[-1].state[1]
    assert {row[0] for row in final.rows} == {"A", "B"}


def test_the_phase_plan_is_what_conform_runs() -> None:
    options = ConformOptions(levels=frozenset({"publisher"}), schedules=0, depth=0)
    factory = _sut()
    try:
        report = conform(factory, options)
    finally:
        factory.close()
    assert report.ok
    assert tuple(p.name for p in report.phases) == phase_plan(report.tested, options)
    assert phase_plan(("algebra", "publisher", "checkpointer"), ConformOptions())[:3] == (
        "error handling",
        "algebra exhaustive",
        "algebra random",
    )
    assert phase_plan(("publisher",), ConformOptions())[-1] == "random schedules"
    assert "random schedules" not in phase_plan(("publisher",), ConformOptions(schedules=0))
    rendered = conform_report(report, "fencepost sut")
    coverage = rendered.tables[1]
    assert coverage.title.startswith("situation coverage") and len(coverage.rows) > 20
    assert Status.WARN in coverage.status  # depth 0 leaves reachable situations unexercised
