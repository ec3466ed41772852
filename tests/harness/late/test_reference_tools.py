"""The late-commit world at its default budget against the reference tools (late_tools.py).

The correct tool passes; every deliberately broken one is caught with the right
property, the right cause, in the story built for it, with the rows it loses
in the shortest counterexample pinned; and the search's power table agrees:
the story that catches a broken tool is one where the matching plausible
wrong answer would have been caught against the correct tool.
"""

from __future__ import annotations

import dataclasses

import pytest
from late_tools import (
    BROKEN,
    CORRECT,
    CORRECT_HORIZON,
    CORRECT_WINDOW,
    HORIZON_BROKEN,
    InProcessTool,
    Variant,
)

from fencepost.harness.late_power import WRONG_ANSWERS
from fencepost.harness.late_search import LateOptions, LateReport, late_conform

#: Shrinking is bounded by runs only here, so the pinned counterexamples do not depend on load.
DEFAULT = LateOptions(timeout=10, shrink_seconds=1e9)

#: broken variant -> (cause of the loss, the story that finds it, rows lost in the shortest run)
EXPECTED: dict[str, tuple[str, str, list[str]]] = {
    "through-max": ("committed-behind-read", "late-behind-greatest", ["r24"]),
    "strict-shared": ("shared-value-skipped", "shared-value-page", ["r10c"]),
    "seconds-gap": ("between-ranges", "between-seconds", ["r29"]),
    "global-cursor": ("new-partition-below-range", "partition-appears", ["e02"]),
    "state-first": ("read-not-written", "late-behind-greatest", ["r05", "r12"]),
    "short-lag": ("committed-behind-read", "late-behind-greatest", ["r24"]),
    "lag-from-read": ("committed-behind-read", "behind-a-page", ["r15"]),
    "append-exactly-once": ("", "late-behind-greatest", []),
    "recent-without-state": ("never-in-range", "late-behind-greatest", ["r05"]),
    "horizon-last-page": ("committed-behind-read", "behind-a-page", ["r15"]),
    "sync-gran-ceil": ("committed-behind-read", "window-edges", ["r20h"]),
    "sync-lower-exclusive": ("between-ranges", "lost-commit", ["r18"]),
}

#: broken variant -> what its first lost row's headline says, clause by clause in the order
#: the events happened on the source's clock (the headline must read in time order).
HEADLINE_ORDER: dict[str, tuple[str, ...]] = {
    "through-max": (
        "sync 1 (now 12:00:30.500) reads main (start, end) and saves a bookmark through 12:00:30",
        "r24 (12:00:24.412) in main commits at 12:00:32",
        "completion sync 2 (now 12:00:43) reads main [12:00:30, end)",
        ": r24 is never read",
    ),
    "strict-shared": (
        "r10c (12:00:10) in main commits at 12:00:10.200",
        "reads main (start, end), up to r10b (12:00:10)",
        "reads main (12:00:10, end)",
        ": r10c is never read",
    ),
    "seconds-gap": (
        "r29 (12:00:29.450) in main commits at 12:00:31",
        "reads main (start, 12:00:29] and saves a bookmark before 12:00:30",
        "reads main [12:00:30, 12:00:40]",
    ),
    "global-cursor": (
        "e02 (12:00:02.500) in eu commits at 12:00:03, 0.5 s after its cursor value, before eu "
        "is listed",
        "partition eu appears at 12:00:28",
        "reads eu [12:00:05, end) (from the other partitions' bookmark: main before 12:00:05) "
        "and saves a bookmark before 12:00:05",
        ": e02 is never read",
    ),
    "lag-from-read": (
        "sync 1 (now 12:00:20) reads main (start, end)",
        "r15 (12:00:15.700) in main commits at 12:00:21",
        "sync 1 saves a bookmark before 12:00:17",
        "completion sync 2 (now 12:00:39) reads main [12:00:17, end)",
    ),
}

#: broken variant -> the plausible wrong answer of fencepost.harness.late_power it makes.
WRONG: dict[str, str] = {
    "through-max": "through-greatest",
    "strict-shared": "strict-shared",
    "seconds-gap": "seconds-gap",
    "global-cursor": "one-cursor",
    "state-first": "state-first",
    "short-lag": "short-lag",
    "lag-from-read": "lag-from-read",
    "append-exactly-once": "append-reread",
    "sync-gran-ceil": "ceil-window",
    "sync-lower-exclusive": "exclusive-lower",
}

_CORRECT_RUN: dict[bool, LateReport] = {}


def correct_run(horizon: bool = False) -> LateReport:
    if horizon not in _CORRECT_RUN:
        variant = CORRECT_HORIZON if horizon else CORRECT
        _CORRECT_RUN[horizon] = late_conform(
            InProcessTool(variant), dataclasses.replace(DEFAULT, horizon=horizon)
        )
    return _CORRECT_RUN[horizon]


def test_the_correct_tool_passes_and_every_wrong_answer_would_have_been_caught() -> None:
    report = correct_run()
    assert report.ok, [str(f.violation) for f in report.findings]
    assert report.totals.runs_losing == 0 and report.totals.runs_duplicating == 0
    assert report.totals.absorbed > 0  # the cost of its safety: re-reads, absorbed by merge
    assert report.power.never("timestamp") == ()
    assert set(report.power.runs) == {
        "late-behind-greatest",
        "shared-value-page",
        "between-seconds",
        "partition-appears",
        "crash-between-commits",
        "lost-commit",
        "behind-a-page",
        "window-edges",
        "random",
    }
    assert set(WRONG) == {n for n in WRONG if WRONG[n] in WRONG_ANSWERS}


def test_the_correct_window_tool_passes() -> None:
    """A tool of another shape: a window per sync up to now - D floored, resumed inclusive
    at its edge (the two issue-21 bugs are each one decision away from it)."""
    report = late_conform(InProcessTool(CORRECT_WINDOW), DEFAULT)
    assert report.ok, [str(f.violation) for f in report.findings]
    assert report.totals.runs_losing == 0


def test_the_correct_tool_on_the_horizon_passes_too() -> None:
    assert correct_run(horizon=True).ok
    assert late_conform(InProcessTool(CORRECT), dataclasses.replace(DEFAULT, horizon=True)).ok


@pytest.mark.parametrize("name", sorted({**BROKEN, **HORIZON_BROKEN}))
def test_every_broken_tool_is_caught_with_the_right_property_and_lost_rows(name: str) -> None:
    variant: Variant
    variant, rule = {**BROKEN, **HORIZON_BROKEN}[name]
    horizon = name in HORIZON_BROKEN
    report = late_conform(InProcessTool(variant), dataclasses.replace(DEFAULT, horizon=horizon))
    assert not report.ok
    assert len(report.findings) == 1, [f.key for f in report.findings]  # one finding per bug
    finding = report.findings[0]
    cause, story, lost = EXPECTED[name]
    assert finding.key == (rule, cause)
    assert finding.phase.startswith(story)
    delivered = finding.result.delivery
    assert delivered is not None and [r.id for r in delivered.lost] == lost
    if rule == "exactly_once":
        assert delivered.duplicated
    else:
        stories = finding.stories()
        assert [s.cause for s in stories] == [cause] * len(lost)
        assert all(s.headline.endswith("never read") or "never read" in s.headline for s in stories)
        if name in HEADLINE_ORDER:
            headline = stories[0].headline
            places = [headline.find(part) for part in HEADLINE_ORDER[name]]
            assert -1 not in places and places == sorted(places), headline
    if name in WRONG:
        kind = story
        power = correct_run(horizon).power.caught[kind]
        assert power.get(WRONG[name], 0) > 0, (kind, WRONG[name], power)


def test_the_exhaustive_search_loses_read_state_responses() -> None:
    """A tool that starts from ``now - D`` when its state cannot be read is caught by a story
    with one inserted step, the lost ``read_state`` (random worlds are not needed)."""
    variant, _ = BROKEN["recent-without-state"]
    report = late_conform(
        InProcessTool(variant), dataclasses.replace(DEFAULT, schedules=0, fail_fast=True)
    )
    assert not report.ok
    finding = report.findings[0]
    assert "exhaustive" in finding.phase
    assert any("read_state: response lost" in step.says for step in finding.result.steps)
