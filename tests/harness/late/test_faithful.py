"""The late-commit world is faithful: no generated, inserted or shrunk run breaks the bound D.

An independent checker (:func:`unfaithful`) reads what a run showed step by step
(the clock and the rows each partition showed, from the steps' snapshots) and
the ground truth, and lists every way it departs from docs/conformance-protocol.md
("The source"): a row committing outside ``[at, at + D]``, a row visible before
it commits or before its partition appears, a committed row of an appeared
partition not visible, a row visible while one of its partition more than D
below it is not, a clock going back. It is run on random worlds and schedules
(Hypothesis), on every story with every inserted step, and on the worlds the
shrinker leaves; and it is shown to catch a world whose visibility breaks D.
"""

from __future__ import annotations

import random
from collections.abc import Iterable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from late_tools import BROKEN, CORRECT, InProcessTool

from fencepost.harness.late_runner import LateResult, LateSnapshot, run_late
from fencepost.harness.late_search import (
    STORIES,
    LateOptions,
    exhaustive,
    late_conform,
    random_setup,
    run_random,
)
from fencepost.harness.late_world import (
    Finish,
    LateAction,
    LateSetup,
    PartitionSpec,
    RowSpec,
    Sync,
    TickTo,
)
from fencepost.harness.world import SetupError


def unfaithful(setup: LateSetup, snapshots: Iterable[LateSnapshot]) -> list[str]:
    """Every way the world departs from the declared source (see the module docstring)."""
    d = setup.max_commit_delay
    rows = {r.id: r for r in setup.rows}
    appears = {p.name: p.appears for p in setup.partitions}
    out = [
        f"{r.id} commits at {r.commit}, outside [{r.at}, {r.at + d}]"
        for r in setup.rows
        if not r.at <= r.commit <= r.at + d
    ]
    clock = None
    for snap in snapshots:
        if clock is not None and snap.clock < clock:
            out.append(f"the clock went back from {clock} to {snap.clock}")
        clock = snap.clock
        visible = {i for _, ids in snap.visible for i in ids}
        for i in visible:
            r = rows[i]
            if r.commit > snap.clock or appears[r.partition] > snap.clock:
                out.append(f"{i} visible at {snap.clock} before it commits or appears")
        for r in setup.rows:
            due = r.commit <= snap.clock and appears[r.partition] <= snap.clock
            if due and r.id not in visible:
                out.append(f"{r.id} committed by {snap.clock} but not visible")
        for i in visible:
            s = rows[i]
            for r in setup.rows:
                if r.partition == s.partition and r.at < s.at - d and r.id not in visible:
                    out.append(f"{s.id} visible while {r.id}, more than D below it, is not")
    return out


def snapshots(result: LateResult) -> list[LateSnapshot]:
    return [s.state for s in result.steps if s.state is not None]


OPTIONS = st.builds(
    LateOptions,
    cursor=st.sampled_from(["timestamp", "integer"]),
    max_commit_delay=st.integers(0, 30),
    horizon=st.booleans(),
    timeout=st.just(5.0),
)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**40), options=OPTIONS)
def test_random_worlds_and_schedules_keep_the_bound(seed: int, options: LateOptions) -> None:
    setup = random_setup(random.Random(seed), options)
    assert unfaithful(setup, []) == []
    result = run_random(InProcessTool(CORRECT), seed, options)
    assert result.setup == setup
    assert unfaithful(result.setup, snapshots(result)) == []


@settings(max_examples=30, deadline=None)
@given(options=OPTIONS)
def test_every_story_keeps_the_bound_under_any_declared_delay(options: LateOptions) -> None:
    for story in STORIES:
        setup, _ = story.build(options)
        assert unfaithful(setup, []) == [], story.name


def test_every_inserted_step_keeps_the_bound() -> None:
    runs = 0
    for index in range(len(STORIES)):
        for _, result in exhaustive(InProcessTool(CORRECT), index, LateOptions(timeout=5)):
            runs += 1
            assert unfaithful(result.setup, snapshots(result)) == [], STORIES[index].name
    assert runs > 50


@pytest.mark.parametrize("name", ["through-max", "global-cursor", "state-first"])
def test_shrunk_worlds_keep_the_bound(name: str) -> None:
    options = LateOptions(timeout=5, depth=0, schedules=0)  # the stories alone find each
    report = late_conform(InProcessTool(BROKEN[name][0]), options)
    assert report.findings
    for finding in report.findings:
        assert unfaithful(finding.result.setup, snapshots(finding.result)) == []


def test_the_checker_catches_a_world_that_breaks_the_bound(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A setup outside the bound cannot be built; a source that shows a row later than D
    after a newer row (visibility broken, not the setup) is caught by the checker."""
    main = (PartitionSpec("main", 0),)
    with pytest.raises(SetupError, match="declared bound D would be broken"):
        LateSetup("integer", 10, False, False, 1, main, (RowSpec("r1", "main", 0, 11),), origin=0)
    setup = LateSetup(
        "integer",
        10,
        False,
        False,
        1,
        main,
        (RowSpec("r1", "main", 0, 1), RowSpec("r2", "main", 20, 20)),
        origin=0,
    )
    schedule: list[LateAction] = [TickTo(21), Sync(), Finish(), TickTo(30), Sync(), Finish()]
    honest = run_late(InProcessTool(CORRECT), setup, schedule, timeout=5)
    assert unfaithful(setup, snapshots(honest)) == []
    real = LateSetup.visible_from

    def broken(self: LateSetup, row: RowSpec) -> int:
        return 25 if row.id == "r1" else real(self, row)

    monkeypatch.setattr(LateSetup, "visible_from", broken)
    bad = run_late(InProcessTool(CORRECT), setup, schedule, timeout=5)
    problems = unfaithful(setup, snapshots(bad))
    assert any("r1 committed by 21 but not visible" in p for p in problems), problems
    assert any("r2 visible while r1, more than D below it" in p for p in problems), problems
