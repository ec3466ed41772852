"""The late-commit world and one run in it: the source, the destination, the rules, the verdict.

Each test drives a small scripted tool (``late_tools.ScriptedTool``) or a
reference tool through :func:`fencepost.harness.late_runner.run_late` and reads
the run's verdict and logs.
"""

from __future__ import annotations

import dataclasses
import itertools
import json

import pytest
from late_tools import CORRECT, InProcessScript, InProcessTool

from fencepost.adapters.runtime import (
    Bound,
    Coverage,
    LostResponse,
    SourceClient,
    SyncRequest,
    SyncResult,
)
from fencepost.harness.late_runner import COMPLETION_SYNCS, LateResult, run_late
from fencepost.harness.late_world import (
    MAIN,
    TIMESTAMP_ORIGIN,
    Answer,
    Crash,
    Finish,
    LateAction,
    LateSetup,
    LateWorld,
    PartitionSpec,
    RowSpec,
    Sync,
    Tick,
    TickTo,
    Upto,
    action_from_json,
    action_to_json,
    clock_text,
)
from fencepost.harness.protocol import QueryBound
from fencepost.harness.rules import Rule
from fencepost.harness.world import SetupError

ORIGIN = TIMESTAMP_ORIGIN


def t(seconds: float) -> int:
    return ORIGIN + round(seconds * 1000)


def world(
    rows: tuple[RowSpec, ...],
    *,
    page_size: int = 2,
    horizon: bool = False,
    partitions: tuple[PartitionSpec, ...] = (PartitionSpec(MAIN, ORIGIN),),
) -> LateSetup:
    return LateSetup(
        "timestamp",
        10_000,
        horizon,
        partitions != (PartitionSpec(MAIN, ORIGIN),),
        page_size,
        partitions,
        rows,
    )


ROWS = (
    RowSpec("r05", MAIN, t(5), t(5.5)),
    RowSpec("r12", MAIN, t(12.25), t(13)),
    RowSpec("r24", MAIN, t(24.412), t(32)),
    RowSpec("r30", MAIN, t(30), t(30.2)),
)


def run(script: object, setup: LateSetup, schedule: list[LateAction], **kw: object) -> LateResult:
    factory = script if isinstance(script, InProcessTool | InProcessScript) else None
    assert factory is not None
    return run_late(factory, setup, schedule, timeout=5)


def read_all(source: SourceClient, partition: str = MAIN) -> list[str]:
    ids, after = [], None
    while True:
        page = source.query(partition, None, None, after)
        ids += [r.id for r in page.rows]
        if page.next is None:
            return ids
        after = page.next


def test_a_setup_that_breaks_the_bound_cannot_be_built_and_files_round_trip() -> None:
    with pytest.raises(SetupError, match="declared bound D would be broken"):
        world((RowSpec("r1", MAIN, t(1), t(11.001)),))
    with pytest.raises(SetupError, match="outside"):
        world((RowSpec("r1", MAIN, t(1), t(0.5)),))
    with pytest.raises(SetupError, match="unique"):
        world((RowSpec("r1", MAIN, t(1), t(1)), RowSpec("r1", MAIN, t(2), t(2))))
    setup = world(ROWS, partitions=(PartitionSpec(MAIN, ORIGIN), PartitionSpec("eu", t(9))))
    assert LateSetup.from_json(json.loads(json.dumps(setup.to_json()))) == setup
    bad = setup.to_json()
    bad["rows"] = [{"id": "r1", "partition": MAIN, "at": 1.5, "commit": 2}]
    with pytest.raises(SetupError, match=r"world\.rows\[0\]\.at"):
        LateSetup.from_json(bad)
    for action in (Sync(), Answer("applied_lost"), Finish(), Upto("commit", 2), Tick(), TickTo(7)):
        assert action_from_json(action_to_json(action), "s") == action
    with pytest.raises(SetupError, match=r"s\.mode"):
        action_from_json({"do": "answer", "mode": "maybe"}, "s")


def test_rows_are_visible_from_their_commit_and_pages_are_read_when_asked() -> None:
    w = LateWorld.create(world(ROWS, page_size=1))
    w.move_to(t(31))
    assert [r.id for r in w.setup.rows if w.visible(r)] == ["r05", "r12", "r30"]
    first = w.page(MAIN, None, None, None, 1)
    assert [r.id for r in first.rows] == ["r05"] and first.next is not None
    issued = w.tokens[first.next]
    w.move_to(t(32))  # r24 commits behind the page already read... not behind: after r05
    second = w.page(MAIN, None, None, issued.position, 1)
    assert [r.id for r in second.rows] == ["r12"]
    third = w.page(MAIN, None, None, w.tokens[second.next or ""].position, 1)
    assert [r.id for r in third.rows] == ["r24"]  # it committed before this page was read
    w2 = LateWorld.create(world(ROWS, page_size=3))
    w2.move_to(t(31))
    page = w2.page(MAIN, QueryBound(t(12), True), QueryBound(t(30), False), None, 1)
    assert [r.id for r in page.rows] == ["r12"] and page.next is None


def test_the_horizon_is_the_oldest_value_still_in_flight_or_the_clock() -> None:
    w = LateWorld.create(world(ROWS, horizon=True))
    w.move_to(t(31))
    assert w.horizon(MAIN) == t(24.412)  # r24 is in flight
    w.move_to(t(40))
    assert w.horizon(MAIN) == t(40)
    assert w.page(MAIN, None, None, None, 1).horizon == t(40)


def test_a_query_bound_finer_than_the_granularity_is_a_protocol_violation() -> None:
    def script(request: SyncRequest, source: SourceClient) -> SyncResult:
        source.query(MAIN, Bound(t(12.5), True), None, None)
        return SyncResult()

    result = run(InProcessScript(script), world(ROWS), [TickTo(t(31)), Sync(), Finish()])
    assert result.first is not None and result.first.rule is Rule.QUERY_GRANULARITY
    assert "12:00:12.500" in result.first.message and result.delivery is None


def test_a_token_of_another_query_or_never_issued_is_a_protocol_violation() -> None:
    def other_bounds(request: SyncRequest, source: SourceClient) -> SyncResult:
        page = source.query(MAIN, None, None, None)
        source.query(MAIN, Bound(t(1), True), None, page.next)
        return SyncResult()

    def forged(request: SyncRequest, source: SourceClient) -> SyncResult:
        source.query(MAIN, None, None, "k1")
        return SyncResult()

    for script, words in ((other_bounds, "was issued for the query main"), (forged, "never")):
        result = run(InProcessScript(script), world(ROWS), [TickTo(t(31)), Sync(), Finish()])
        assert result.first is not None and result.first.rule is Rule.QUERY_TOKEN
        assert words in result.first.message


def test_a_commit_of_a_row_never_shown_is_an_invented_row() -> None:
    def script(request: SyncRequest, source: SourceClient) -> SyncResult:
        source.query(MAIN, None, None, None)
        source.commit(["r05", "r24"], "merge")
        return SyncResult()

    result = run(InProcessScript(script), world(ROWS), [TickTo(t(31)), Sync(), Finish()])
    assert result.first is not None and result.first.rule is Rule.INVENTED_ROW
    assert "'r24'" in result.first.message


def test_a_query_of_a_partition_that_has_not_appeared_breaks_call_pairing() -> None:
    def script(request: SyncRequest, source: SourceClient) -> SyncResult:
        source.query("eu", None, None, None)
        return SyncResult()

    setup = world(ROWS, partitions=(PartitionSpec(MAIN, ORIGIN), PartitionSpec("eu", t(50))))
    result = run(InProcessScript(script), setup, [TickTo(t(31)), Sync(), Finish()])
    assert result.first is not None and result.first.rule is Rule.CALL_PAIRING


def copy_all(request: SyncRequest, source: SourceClient) -> SyncResult:
    """Copies every visible row (merge) and claims nothing."""
    ids = read_all(source)
    source.commit(ids, "merge", {"seen": len(ids)})
    return SyncResult()


def test_a_lost_commit_is_applied_or_not_and_read_state_tells() -> None:
    states: list[object] = []

    def script(request: SyncRequest, source: SourceClient) -> SyncResult:
        states.append(source.read_state())
        ids = read_all(source)
        try:
            source.commit(ids, "append", {"sync": request.id})
        except LostResponse:
            return SyncResult("failed")
        return SyncResult()

    schedule: list[LateAction] = [TickTo(t(31)), Sync(), Upto("commit"), Answer("applied_lost")]
    schedule += [Sync(), Upto("commit"), Answer("lost"), Sync(), Finish()]
    result = run(InProcessScript(script), world(ROWS), schedule)
    assert states[:3] == [None, {"sync": 1}, {"sync": 1}]  # applied, then not applied
    assert [c.answer for c in result.commits[:3]] == ["applied_lost", "lost", "ok"]
    assert result.delivery is not None and dict(result.delivery.duplicated)["r05"] >= 2


def test_a_crash_keeps_what_was_committed_and_restarts_the_tool() -> None:
    factory = InProcessScript(copy_all)
    schedule: list[LateAction] = [TickTo(t(31)), Sync(), Upto("commit"), Crash(), Sync(), Finish()]
    result = run(factory, world(ROWS), schedule)
    assert result.ok and result.crashes == 1 and factory.starts == 2
    assert result.commits[0].answer == "crash" and not result.commits[0].applied
    assert result.syncs[0].crashed and result.syncs[1].worker == "t1.2"


def test_completion_syncs_run_until_one_copies_nothing_new_at_most_four() -> None:
    copied: list[int] = []

    def one_at_a_time(request: SyncRequest, source: SourceClient) -> SyncResult:
        state = source.read_state()
        done = state if isinstance(state, list) else []
        ids = [r for r in read_all(source) if r not in done][:1]
        source.commit(ids, "merge", [*done, *ids])
        copied.append(request.now)
        return SyncResult()

    five = (*ROWS, RowSpec("r33", MAIN, t(33), t(33)))
    result = run(InProcessScript(one_at_a_time), world(five), [])
    completion = [s for s in result.syncs if s.completion]
    assert len(completion) == COMPLETION_SYNCS  # each copied a row; four, and no more
    steps = {b - a for a, b in itertools.pairwise(copied)}
    assert steps == {10_000 + 1000}  # each max_commit_delay + granularity after the last
    assert result.first is not None and result.first.rule is Rule.NO_LOST_ROWS
    assert result.delivery is not None and [r.id for r in result.delivery.lost] == ["r33"]
    small = run(InProcessScript(one_at_a_time), world(ROWS[:2]), [])
    assert small.ok and len([s for s in small.syncs if s.completion]) == 3  # two copy, one not


def test_a_claim_covering_a_row_not_held_breaks_honest_coverage_rows_committing_later_too() -> None:
    def claims_through_greatest(request: SyncRequest, source: SourceClient) -> SyncResult:
        ids = read_all(source)
        source.commit(ids, "merge")
        return SyncResult(coverage={MAIN: Coverage(request.now, "through")})

    result = run(InProcessScript(claims_through_greatest), world(ROWS), [TickTo(t(31)), Sync()])
    assert result.ok is False
    honest = [v for v in result.violations if v.rule is Rule.HONEST_COVERAGE]
    assert (
        honest and "r24 (12:00:24.412) was not held (it commits at 12:00:32)" in honest[0].message
    )
    # Every row is copied in the end (the claim is wrong, the copies are not): no row lost.
    assert result.delivery is not None and not result.delivery.lost


def test_duplicates_fail_only_a_tool_that_declared_exactly_once() -> None:
    def appends(request: SyncRequest, source: SourceClient) -> SyncResult:
        source.commit(read_all(source), "append")
        return SyncResult()

    relaxed = run(InProcessScript(appends), world(ROWS), [TickTo(t(31)), Sync(), Finish()])
    assert relaxed.ok and relaxed.delivery is not None and relaxed.delivery.duplicated
    strict = run(
        InProcessScript(appends, "exactly-once"), world(ROWS), [TickTo(t(31)), Sync(), Finish()]
    )
    assert strict.first is not None and strict.first.rule is Rule.EXACTLY_ONCE


def test_the_correct_tool_re_reads_behind_its_bookmark_and_loses_nothing() -> None:
    schedule: list[LateAction] = [
        TickTo(t(30.5)),
        Sync(),
        Finish(),
        TickTo(t(45)),
        Sync(),
        Finish(),
    ]
    result = run(InProcessTool(CORRECT), world(ROWS), schedule)
    assert result.ok, result.violations
    assert result.delivery is not None and result.delivery.absorbed > 0
    claims = [s.claims for s in result.syncs if s.claims]
    assert claims[0] is not None and claims[0][0].at == t(20)  # before 30 - D


def test_times_are_rendered_as_utc_clock_times() -> None:
    setup = world(ROWS)
    assert clock_text(setup, t(25.412)) == "12:00:25.412"
    assert clock_text(setup, t(32)) == "12:00:32"
    assert clock_text(setup, t(86400)) == "2024-01-02 12:00:00"


# --- live pages or one snapshot; earliest; partitionings --------------------------------------


def _pages_across_a_commit(reads: str) -> tuple[LateWorld, list[str], list[str]]:
    """A query's first page at 12:00:20, r15 commits behind it, its next page at 12:00:28:
    (the world, the rows of the two pages, the rows a retry of the first token reads)."""
    rows = (
        RowSpec("r10", MAIN, t(10), t(10.1)),
        RowSpec("r15", MAIN, t(15.7), t(21)),
        RowSpec("r16", MAIN, t(16), t(16.2)),
        RowSpec("r18", MAIN, t(18), t(18.3)),
        RowSpec("r27", MAIN, t(27), t(27.1)),
    )
    setup = LateSetup(
        "timestamp", 10_000, True, False, 2, (PartitionSpec(MAIN, ORIGIN),), rows, reads=reads
    )
    w = LateWorld.create(setup)
    w.move_to(t(20))
    first = w.page(MAIN, None, None, None, 1)
    assert first.next is not None
    w.move_to(t(28))
    issued = w.tokens[first.next]
    assert issued.snapshot == t(20)
    second = w.page(MAIN, None, None, issued.position, 1, w.shows(issued))
    retry = w.page(MAIN, None, None, issued.position, 1, w.shows(issued))
    return w, [r.id for r in (*first.rows, *second.rows)], [r.id for r in retry.rows]


def test_live_pages_show_the_clock_and_snapshot_pages_their_first_pages_snapshot() -> None:
    live, read, retried = _pages_across_a_commit("live")
    assert read == ["r10", "r16", "r18", "r27"]  # r15 committed behind the first page
    assert retried == ["r18", "r27"]
    snap, read, retried = _pages_across_a_commit("snapshot")
    assert read == ["r10", "r16", "r18"]  # the 12:00:20 snapshot: r27 not yet committed
    assert retried == ["r18"]  # a retried token reads the same snapshot
    # the horizon is the snapshot's too: r15 was in flight at 12:00:20
    token = next(iter(snap.tokens))
    assert snap.horizon(MAIN, snap.tokens[token].snapshot) == t(15.7)
    assert live.horizon(MAIN) == t(28)
    assert snap.setup.source_json()["reads"] == "snapshot"
    assert LateSetup.from_json(snap.setup.to_json()).reads == "snapshot"
    with pytest.raises(SetupError, match="reads"):
        LateSetup(
            "timestamp", 10_000, False, False, 2, (PartitionSpec(MAIN, ORIGIN),), (), reads="x"
        )


def test_no_row_is_older_than_the_declared_earliest() -> None:
    setup = world(ROWS)
    assert setup.source_json()["earliest"] == ORIGIN == 1_704_110_400_000
    with pytest.raises(SetupError, match="below the origin"):
        world((RowSpec("r0", MAIN, ORIGIN - 1, ORIGIN),))


def test_the_lag_from_the_greatest_value_read_is_safe_only_with_snapshot_reads() -> None:
    """The reference tool that lags D behind the greatest value read, not clamped to the
    sync's start, loses r15 in behind-a-page with live reads and nothing with a snapshot."""
    from late_tools import BROKEN

    from fencepost.harness.late_search import late_conform
    from fencepost.harness.late_stories import LateOptions

    variant, _ = BROKEN["lag-from-read"]
    options = LateOptions(timeout=5, schedules=0, stories=("behind-a-page",))
    live = late_conform(InProcessTool(variant), options)
    assert not live.ok
    delivered = live.findings[0].result.delivery
    assert delivered is not None and [r.id for r in delivered.lost] == ["r15"]
    snapshot = late_conform(InProcessTool(variant), dataclasses.replace(options, reads="snapshot"))
    assert snapshot.ok and snapshot.totals.runs > 10


@pytest.mark.parametrize("partitions", ["one", "fixed", "appearing"])
def test_partitionings_shape_random_worlds_and_stories(partitions: str) -> None:
    import random

    from fencepost.harness.late_stories import (
        STORIES,
        LateOptions,
        random_setup,
        selected_stories,
    )

    options = LateOptions(partitions=partitions)
    setups = [random_setup(random.Random(seed), options) for seed in range(60)]
    late = [s for s in setups if any(p.appears > s.origin for p in s.partitions)]
    several = [s for s in setups if len(s.partitions) > 1]
    names = [STORIES[i].name for i in selected_stories(options)]
    if partitions == "one":
        assert all(not s.partitioned and [p.name for p in s.partitions] == [MAIN] for s in setups)
        assert "partition-appears" not in names
        assert all(s.source_json()["partitioned"] is False for s in setups)
    else:
        assert several and "partition-appears" in names
        setup, _ = STORIES[names.index("partition-appears")].build(options)
        story_late = any(p.appears > setup.origin for p in setup.partitions)
        assert story_late == (partitions == "appearing")
    assert bool(late) == (partitions == "appearing")
    chosen = LateOptions(partitions=partitions, stories=("between-seconds", "partition-appears"))
    assert [STORIES[i].name for i in selected_stories(chosen)] == [
        n for n in ("between-seconds", "partition-appears") if n in names
    ]
