"""Neutral report data for the renderer tests: made by hand, by no producer.

``hostile`` strings are what a broken or malicious SUT could send: markup,
script, quotes, Markdown syntax, control characters, a lone surrogate.
"""

from __future__ import annotations

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

HOSTILE = (
    "<script>alert(1)</script><img src=x onerror=alert(2)> \"quoted\" 'single' & "
    "[link](javascript:alert(3)) ![img](x.png) *bold* `code` | pipe \x1b[31m \ud800 end"
)


def timeline(label: str = "write_publication") -> Timeline:
    lanes = (
        Lane("w1", "w1", LaneKind.PUBLISHER),
        Lane("w2", "w2", LaneKind.PUBLISHER),
        Lane("r1", "r1", LaneKind.READER),
        Lane("env", "environment", LaneKind.ENVIRONMENT),
    )
    record = Table("publication record", ("epoch", "cut"), (("1", "nothing"),))
    after = Table("publication record", ("epoch", "cut"), (("1", "through 3"),))
    checkpoints = Table("checkpoints", ("partition", "cut"), (("A", "before 3"), ("B", HOSTILE)))
    spans = (
        Span("env", 1, 1, "certify A", "an honest reader certifies A before 3"),
        Span("w1", 2, 5, "publication attempt #1", "", depth=0),
        Span("w1", 2, 3, "read_publication", HOSTILE),
        Span("w1", 3, 4, label, "", mark=Mark.LOST),
        Span("w2", 3, 4, "write_publication", "", mark=Mark.LOST_APPLIED),
        Span("r1", 2, None, "fetch_page", "", mark=Mark.OPEN),
        Span("w1", 4, 5, "write_publication", "", mark=Mark.BREACH),
    )
    steps = (
        Step(1, "env", "an honest reader certifies A before 3", (record, checkpoints)),
        Step(2, "w1", "w1 starts publication attempt #1", (record,)),
        Step(3, "w1", HOSTILE, (record,), (HOSTILE,)),
        Step(4, "w2", "w2's write applied, response lost", (after,)),
        Step(5, "w1", "w1 ends: published (epoch 1, through 3)", (after, checkpoints)),
    )
    return Timeline(
        "soundness: the shortest schedule found",
        lanes,
        spans,
        steps,
        Breach(5, "soundness", "the record claims an event that is not final", HOSTILE, "w1"),
        (Fact("replay", "fencepost conform --replay -2 -- my-sut", code=True),),
    )


def report(status: Status = Status.FAIL) -> Report:
    return Report(
        "fencepost conform",
        status,
        "NOT CONFORMANT" if status is Status.FAIL else "CONFORMANT",
        (Fact("SUT", HOSTILE, code=True), Fact("levels", "publisher")),
        (
            Section(
                "soundness in phase publisher-offsets",
                Status.FAIL,
                HOSTILE,
                (Fact("rule", "soundness"),),
                (),
                (timeline(),),
                ("FAILURE: soundness", HOSTILE),
            ),
        ),
        (
            Table(
                "situation coverage",
                ("situation", "runs"),
                (("an empty page", "3"), (HOSTILE, "0")),
                (Status.INFO, Status.WARN),
                numeric=frozenset({1}),
            ),
        ),
    )
