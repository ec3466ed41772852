"""The airbyte adapter drives airbyte-cdk's own declarative stream: each finding, by hand.

Every story runs the real CDK (``ConcurrentDeclarativeSource`` over the
adapter's loopback API) against ``fake_source.FakeWorld``; the stories are the
ones docs/real-tools.md tells (airbyte section), with the calls airbyte made. Each
finding has a neighbour that does not lose the row, so the assertion can fail.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
from collections.abc import Callable, Iterator, MutableMapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest
from airbyte_cdk.sources.streams.concurrent.state_converters.abstract_stream_state_converter import (  # noqa: E501
    AbstractStreamStateConverter,
)
from fake_source import T0, FakeWorld, _Client
from lengths import Length

from fencepost.adapters import ConfigError
from fencepost.adapters.airbyte_adapter import (
    KNOWN_KEYS,
    AirbyteTool,
    build,
    parse_api_bound,
)
from fencepost.adapters.runtime import (
    KEEP_STATE,
    Bound,
    Coverage,
    LostResponse,
    Mode,
    Page,
    SyncResult,
)

S = 1000  # one second, in the cursor's milliseconds
D = 10 * S  # the world's max_commit_delay


@pytest.fixture
def tools() -> Iterator[list[AirbyteTool]]:
    made: list[AirbyteTool] = []
    yield made
    for tool in made:
        tool.close()


Make = Callable[..., AirbyteTool]


@pytest.fixture
def make(tools: list[AirbyteTool]) -> Make:
    """Build a tool from a configuration (closed after the test)."""

    def make(config: dict[str, object] | None = None) -> AirbyteTool:
        tool = build(config or {})
        tools.append(tool)
        return tool

    return make


def queries(world: FakeWorld) -> list[tuple[str, Bound | None, Bound | None]]:
    """The first page of each query airbyte sent (one per slice): (partition, lower, upper)."""
    out = []
    for op, args in world.calls:
        if op == "query":
            assert isinstance(args, tuple)
            partition, lower, upper, after = args
            if after is None:
                out.append((partition, lower, upper))
    return out


def at_least(n: int) -> Bound:
    return Bound(n, True)


def at_most(n: int) -> Bound:
    return Bound(n, True)


def to_completion(world: FakeWorld, tool: AirbyteTool, first_id: int = 100) -> None:
    """The harness's end of run: syncs D + g apart until one copies nothing new (at most 4)."""
    for i in range(4):
        before = {r for r, n in world.copies.items() if n}
        world.now += D + world.granularity
        result = world.run(tool, first_id + i)
        if result.outcome == "completed" and {r for r, n in world.copies.items() if n} == before:
            return


# --- cursor_granularity: a manufactured successor ----------------------------------------------


def granularity_world() -> FakeWorld:
    world = FakeWorld()
    world.add("main", "r1", T0 + 1 * S)
    world.add("main", "r9", T0 + 9 * S + 412)  # stored at 00:00:09.412
    world.add("main", "r12", T0 + 12 * S)
    world.now = T0 + 30 * S
    return world


def test_cursor_granularity_pt1s_loses_the_row_between_two_slices(make: Make) -> None:
    tool = make({"cursor_granularity": "PT1S"})
    world = granularity_world()
    assert world.run(tool).outcome == "completed"
    # step PT10S (the adapter's default beside cursor_granularity): each slice ends one
    # cursor_granularity before the next starts, and the API takes seconds.
    assert queries(world) == [
        ("main", at_least(T0), at_most(T0 + 9 * S)),
        ("main", at_least(T0 + 10 * S), at_most(T0 + 19 * S)),
        ("main", at_least(T0 + 20 * S), at_most(T0 + 30 * S)),
    ]
    to_completion(world, tool)
    assert world.lost() == ["r9"]  # 09.412 is after 09 and before 10: in no slice, ever


def test_without_cursor_granularity_the_same_row_is_copied(make: Make) -> None:
    world = granularity_world()
    tool = make()
    world.run(tool)
    assert queries(world) == [("main", at_least(T0), at_most(T0 + 30 * S))]
    to_completion(world, tool)
    assert world.lost() == []


def test_an_exact_successor_is_safe_on_a_millisecond_api(make: Make) -> None:
    """cursor_granularity equal to what the API can express and the data holds: no gap."""
    tool = make({"cursor_granularity": "PT0.001S", "step": "PT10S", "datetime_format": "%ms"})
    world = granularity_world()
    world.granularity = 1
    world.run(tool)
    assert queries(world)[:2] == [
        ("main", at_least(T0), at_most(T0 + 10 * S - 1)),
        ("main", at_least(T0 + 10 * S), at_most(T0 + 20 * S - 1)),
    ]
    to_completion(world, tool)
    assert world.lost() == []


# --- the greatest value seen as the resume point ----------------------------------------------


def late_world() -> FakeWorld:
    world = FakeWorld()
    world.add("main", "r1", T0 + 1 * S)
    world.add("main", "r30", T0 + 30 * S)
    world.add("main", "r25", T0 + 25 * S, visible=False)  # commits after r30 was read
    world.now = T0 + 30 * S
    return world


def test_default_loses_the_late_commit_behind_most_recent_cursor_value(make: Make) -> None:
    tool = make()
    world = late_world()
    first = world.run(tool)
    assert first.coverage == {"main": Coverage(T0 + 30 * S, "before")}
    assert world.state == [
        {
            "type": "STREAM",
            "stream": {
                "stream_descriptor": {"name": "orders"},
                "stream_state": {"updated_at": "1704067230"},
            },
        }
    ]
    world.commit_row("r25")
    to_completion(world, tool)
    assert queries(world)[1] == ("main", at_least(T0 + 30 * S), at_most(T0 + 41 * S))
    assert world.lost() == ["r25"]
    assert world.copies["r30"] == 2  # the inclusive lower bound re-reads the boundary row


def test_lookback_pt10s_loses_nothing_and_pays_in_rereads(make: Make) -> None:
    tool = make({"lookback_window": "PT10S"})
    world = late_world()
    assert world.run(tool).coverage == {"main": Coverage(T0 + 20 * S, "before")}
    world.commit_row("r25")
    to_completion(world, tool)
    assert queries(world)[1] == ("main", at_least(T0 + 20 * S), at_most(T0 + 41 * S))
    assert world.lost() == []
    # every later sync re-reads the 10 s before the state: r25 and r30 again each time
    assert world.copies == {"r1": 1, "r25": 2, "r30": 3}


def test_lookback_with_append_dedup_is_exactly_once(make: Make) -> None:
    tool = make({"lookback_window": "PT10S", "destination_sync_mode": "append_dedup"})
    assert tool.delivery == "exactly-once"
    world = late_world()
    world.run(tool)
    world.commit_row("r25")
    to_completion(world, tool)
    assert world.lost() == [] and world.duplicated() == []
    assert all(mode == "merge" for op, args in world.calls if op == "commit" for mode in [args[1]])  # type: ignore[index]


def test_lookback_shorter_than_the_commit_delay_loses(make: Make) -> None:
    """Teeth for the lookback story: a row 9.5 s behind the state and still uncommitted."""
    world = late_world()
    world.add("main", "r20", T0 + 20 * S + 500, visible=False)  # commits 10 s after: allowed
    tool = make({"lookback_window": "PT9S"})
    world.run(tool)
    world.commit_row("r25")
    world.commit_row("r20")
    to_completion(world, tool)
    assert world.lost() == ["r20"]


# --- the late-commit world, many schedules (item 4 of the issue) --------------------------------


@dataclass
class TimedRow:
    id: str
    at: int
    commit: int


@dataclass
class TimedWorld:
    """A FakeWorld with commit times: each row visible from its commit, at most D after ``at``."""

    rows: list[TimedRow]
    syncs: list[int]
    world: FakeWorld = field(default_factory=FakeWorld)

    def run(self, tool: AirbyteTool) -> FakeWorld:
        for row in self.rows:
            self.world.add("main", row.id, row.at, visible=False)
        for i, now in enumerate(self.syncs):
            self.world.now = now
            self.world.visible = {r.id for r in self.rows if r.commit <= now}
            self.world.run(tool, i)
        self.world.visible = {r.id for r in self.rows}
        self.world.now = max(max(r.commit for r in self.rows), self.world.now)
        to_completion(self.world, tool)
        return self.world


def random_world(seed: int) -> TimedWorld:
    """Rows a few seconds behind the syncs, many committing as late as D allows."""
    rng = random.Random(seed)
    syncs = sorted(T0 + rng.randrange(5 * S, 45 * S) for _ in range(rng.randrange(2, 5)))
    rows = []
    for i in range(rng.randrange(5, 10)):
        at = max(T0, rng.choice(syncs) - rng.randrange(0, 12 * S))
        if i % 3 == 0:
            at -= at % S  # some on whole seconds, where a boundary falls
        delay = rng.choice([0, D, D - rng.randrange(0, 3 * S), rng.randrange(D + 1)])
        rows.append(TimedRow(f"r{i}", at, at + delay))
    return TimedWorld(rows, syncs)


def losses(config: dict[str, object], seeds: Sequence[int], make: Make) -> dict[int, list[str]]:
    """The rows each schedule loses, for one tool reused across them (no state leaks)."""
    tool = make(config)
    found = {}
    for seed in seeds:
        world = random_world(seed).run(tool)
        if world.lost():
            found[seed] = world.lost()
    return found


def test_lookback_pt10s_is_safe_over_schedules_that_lose_with_less(make: Make) -> None:
    seeds = range(8)
    assert losses({"lookback_window": "PT10S"}, seeds, make) == {}
    # the same schedules find the loss of a shorter lookback and of a manufactured
    # successor beside the same lookback
    assert losses({"lookback_window": "PT5S"}, seeds, make)
    assert losses({"lookback_window": "PT10S", "cursor_granularity": "PT1S"}, seeds, make)


@pytest.mark.slow
def test_lookback_pt10s_is_safe_over_many_schedules(make: Make, length: Length) -> None:
    n = length.pick(full=400, bounded=60, env="FENCEPOST_AIRBYTE_SCHEDULES")
    assert losses({"lookback_window": "PT10S"}, range(100, 100 + n), make) == {}


# --- partitions ---------------------------------------------------------------------------------


def partition_world(*, b_from_start: bool) -> FakeWorld:
    world = FakeWorld(partitioned=True)
    world.add("a", "a1", T0 + 1 * S)
    world.add("a", "a28", T0 + 28 * S)
    world.add("b", "b3", T0 + 3 * S, visible=b_from_start)  # partition b, with an old row
    world.add("b", "b31", T0 + 31 * S, visible=b_from_start)
    world.now = T0 + 30 * S
    return world


@pytest.mark.parametrize(
    ("config", "global_start"),
    [
        ({}, T0 + 28 * S),  # a's greatest value
        ({"lookback_window": "PT10S"}, T0 + 18 * S),  # less the lookback
        ({"global_substream_cursor": True}, T0 + 28 * S),
    ],
)
def test_a_partition_that_appears_later_starts_from_the_global_cursor(
    make: Make, config: dict[str, object], global_start: int
) -> None:
    tool = make(config)
    world = partition_world(b_from_start=False)
    world.run(tool)
    assert queries(world) == [("a", at_least(T0), at_most(T0 + 30 * S))]
    world.calls.clear()
    world.commit_row("b3")
    world.commit_row("b31")
    world.now = T0 + 41 * S
    result = world.run(tool)
    assert ("b", at_least(global_start), at_most(T0 + 41 * S)) in queries(world)
    # b's own state now claims everything before its greatest value: b3 among it, never copied
    assert result.coverage is not None
    claim = result.coverage["b"].at
    assert claim is not None and claim > T0 + 3 * S
    to_completion(world, tool)
    assert world.lost() == ["b3"]


def test_a_partition_present_from_the_start_loses_nothing(make: Make) -> None:
    tool = make()
    world = partition_world(b_from_start=True)
    world.run(tool)
    assert queries(world) == [
        ("a", at_least(T0), at_most(T0 + 30 * S)),
        ("b", at_least(T0), at_most(T0 + 30 * S)),
    ]
    to_completion(world, tool)
    assert world.lost() == []


def test_a_lookback_back_to_start_datetime_is_safe_for_late_partitions(make: Make) -> None:
    """The only safe partitioned configuration: every sync re-reads from start_datetime."""
    tool = make({"lookback_window": "P3650D", "destination_sync_mode": "append_dedup"})
    world = partition_world(b_from_start=False)
    world.run(tool)
    world.commit_row("b3")
    world.commit_row("b31")
    world.calls.clear()
    world.now = T0 + 41 * S
    world.run(tool)
    assert ("b", at_least(T0), at_most(T0 + 41 * S)) in queries(world)
    to_completion(world, tool)
    assert world.lost() == [] and world.duplicated() == []


@pytest.mark.parametrize("names", [["1_000", "None", "a&b=c"], ["", "[1, 2]", "p:x"]])
def test_partition_names_reach_the_source_unchanged(make: Make, names: list[str]) -> None:
    # airbyte literal_evals interpolated values: 1_000 would become 1000, None nothing
    tool = make()
    world = FakeWorld(partitioned=True)
    for i, name in enumerate(names):
        world.add(name, f"r{i}", T0 + i * S)
    world.now = T0 + 30 * S
    result = world.run(tool)
    assert [q[0] for q in queries(world)] == names
    assert result.coverage is not None and sorted(result.coverage) == sorted(names)
    assert world.lost() == []


def test_global_substream_cursor_claims_one_value_for_every_partition(make: Make) -> None:
    tool = make({"global_substream_cursor": True})
    world = partition_world(b_from_start=True)
    result = world.run(tool)
    # one global value, the greatest seen anywhere (a28; b31 is after now), for both
    assert result.coverage == {
        "a": Coverage(T0 + 28 * S, "before"),
        "b": Coverage(T0 + 28 * S, "before"),
    }


# --- slices that do not all finish ----------------------------------------------------------


class LosingClient(_Client):
    """Loses every response to a query whose lower bound is ``lower`` (the slice fails)."""

    def __init__(self, world: FakeWorld, lower: int) -> None:
        super().__init__(world)
        self.lower = lower

    def query(
        self, partition: str, lower: Bound | None, upper: Bound | None, after: str | None
    ) -> Page:
        if lower is not None and lower.at == self.lower:
            self.w.calls.append(("query", (partition, lower, upper, after)))
            raise LostResponse("query")
        return super().query(partition, lower, upper, after)


def run_with_failing_first_slice(tool: AirbyteTool) -> tuple[FakeWorld, SyncResult]:
    from fencepost.adapters.runtime import SyncRequest

    world = granularity_world()
    world.add("main", "r5", T0 + 5 * S)
    request = SyncRequest(1, "t1", world.now, world.source())
    result = tool.sync(request, LosingClient(world, T0))
    return world, result


def test_state_never_passes_a_slice_that_did_not_finish(make: Make) -> None:
    tool = make({"cursor_granularity": "PT1S"})
    world, result = run_with_failing_first_slice(tool)
    tried = [q for q in queries(world) if q[1] == at_least(T0)]
    assert len(tried) == 6  # airbyte's default error handler: 5 retries, no sleep
    assert result.outcome == "failed"
    # the later slices finished and were committed, but the state stays at the unfinished one
    assert world.copies == {"r12": 1}
    assert result.coverage == {"main": Coverage(T0, "before")}
    world.calls.clear()
    world.now += D + S
    world.run(tool, 2)
    assert queries(world)[0] == ("main", at_least(T0), at_most(T0 + 9 * S))
    to_completion(world, tool)
    assert world.lost() == ["r9"]  # the granularity gap; r1 and r5 recovered


def test_slices_finishing_in_reverse_order_never_move_the_state_past_an_open_one(
    make: Make, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What many workers may do: the last slice finishes first. The worker here takes the
    newest task first (LIFO), so the slices close 20-30, then 10-19, then 0-9."""
    from fencepost.adapters import airbyte_adapter

    def newest_first(self: Any) -> bool:
        if not self._tasks:
            return False
        fn, args, future = self._tasks.pop()
        future.set_running_or_notify_cancel()
        future.set_result(fn(*args))
        return True

    monkeypatch.setattr(airbyte_adapter._DeferredPool, "run_next", newest_first)
    tool = make({"cursor_granularity": "PT1S"})
    world = granularity_world()
    world.run(tool)
    assert [q[1] for q in queries(world)] == [
        at_least(T0 + 20 * S),
        at_least(T0 + 10 * S),
        at_least(T0),
    ]
    states = [
        args[2][0]["stream"]["stream_state"]["updated_at"]  # type: ignore[index]
        for op, args in world.calls
        if op == "commit" and args[2] is not KEEP_STATE  # type: ignore[index]
    ]
    # after 20-30 and after 10-19: still the start, since 0-9 is open; then 12 s
    assert states == ["1704067200", "1704067200", "1704067212", "1704067212"]


def test_a_state_past_the_unfinished_slice_would_lose_its_rows(
    make: Make, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Teeth: merge the state from the last finished slice instead, and r1, r5 are lost."""

    def latest(self: AbstractStreamStateConverter, slices: list[MutableMapping[str, Any]]) -> Any:
        merged = self.merge_intervals(slices)
        return merged[-1].get("most_recent_cursor_value") or merged[-1][self.START_KEY]

    monkeypatch.setattr(AbstractStreamStateConverter, "_get_latest_complete_time", latest)
    tool = make({"cursor_granularity": "PT1S"})
    world, _ = run_with_failing_first_slice(tool)
    to_completion(world, tool)
    assert sorted(world.lost()) == ["r1", "r5", "r9"]


# --- the wire's faults, determinism, state --------------------------------------------------


def test_a_lost_query_response_is_asked_again(make: Make) -> None:
    tool = make()
    world = late_world()
    world.lose["query"] = True
    assert world.run(tool).outcome == "completed"
    first, again = queries(world)[:2]
    assert first == again
    assert set(world.copies) == {"r1", "r30"}


def test_a_lost_commit_fails_the_sync_and_the_next_one_recovers(make: Make) -> None:
    tool = make()
    world = late_world()
    world.lose["commit"] = False  # the records' commit is lost, not applied
    with pytest.raises(LostResponse):
        world.run(tool)
    assert world.state is None and world.copies == {}
    world.commit_row("r25")
    to_completion(world, tool)
    assert world.lost() == []


def test_the_same_replies_give_the_same_calls_and_reset_forgets(make: Make) -> None:
    def trace(tool: AirbyteTool) -> list[tuple[str, object]]:
        world = partition_world(b_from_start=True)
        world.run(tool)
        world.now += D
        world.run(tool, 2)
        return world.calls

    tool = make({"lookback_window": "PT10S"})
    first = trace(tool)
    tool.reset()
    assert trace(tool) == first
    assert trace(make({"lookback_window": "PT10S"})) == first


def test_the_stored_state_is_the_connector_input(make: Make) -> None:
    tool = make()
    world = late_world()
    world.state = [
        {
            "type": "STREAM",
            "stream": {
                "stream_descriptor": {"name": "orders"},
                "stream_state": {"updated_at": "1704067225"},
            },
        }
    ]
    world.run(tool)
    assert queries(world) == [("main", at_least(T0 + 25 * S), at_most(T0 + 30 * S))]
    assert world.copies == {"r30": 1}


def test_an_exclusive_lower_bound_claims_through(make: Make) -> None:
    tool = make({"start_time_option": {"field_name": "cursor[gt]"}})
    world = late_world()
    assert world.run(tool).coverage == {"main": Coverage(T0 + 30 * S, "through")}
    assert queries(world) == [("main", Bound(T0, False), at_most(T0 + 30 * S))]


def test_the_api_refuses_a_bound_finer_than_it_takes(make: Make) -> None:
    """A millisecond request format on a seconds API: a state at 05.412 cannot be sent."""
    tool = make({"datetime_format": "%Y-%m-%dT%H:%M:%S.%fZ"})
    world = FakeWorld()
    world.add("main", "r1", T0 + 1 * S)
    world.add("main", "r5", T0 + 5 * S + 412)
    world.now = T0 + 30 * S
    assert world.run(tool).outcome == "completed"  # start and now are whole seconds
    world.add("main", "r20", T0 + 20 * S)
    world.calls.clear()
    world.now += D
    assert world.run(tool, 2).outcome == "failed"  # HTTP 400: the bound never reaches the source
    assert queries(world) == []
    to_completion(world, tool)
    assert world.lost() == ["r20"]


def test_api_bounds() -> None:
    assert parse_api_bound("1704067212", "cursor[gte]", 1000) == T0 + 12 * S
    assert parse_api_bound("2024-01-01T00:00:12Z", "cursor[gte]", 1000) == T0 + 12 * S
    assert parse_api_bound("1704067212412", "cursor[gte]", 1) == T0 + 12 * S + 412
    for text, granularity in [
        ("2024-01-01T00:00:12.412Z", 1000),
        ("1704067212.5", 1000),
        ("1704067212412", 1000),  # milliseconds sent to a seconds API: year 55970
        ("yesterday", 1000),
    ]:
        with pytest.raises(Exception, match="cursor"):
            parse_api_bound(text, "cursor[gte]", granularity)


# --- configuration --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("config", "named"),
    [
        ({"lookback": "PT10S"}, "lookback"),
        ({"lookback_window": "10s"}, "lookback_window"),
        ({"step": "PT10S"}, "step"),
        ({"cursor_granularity": 1}, "cursor_granularity"),
        ({"start_datetime": "{{ now_utc() }}"}, "start_datetime"),
        ({"datetime_format": "%H"}, "datetime_format"),
        ({"destination_sync_mode": "overwrite"}, "destination_sync_mode"),
        ({"end_time_option": {"field_name": "cursor[gte]"}}, "end_time_option"),
        ({"global_substream_cursor": "yes"}, "global_substream_cursor"),
    ],
)
def test_a_bad_configuration_names_its_key(config: dict[str, object], named: str) -> None:
    with pytest.raises(ConfigError, match=named):
        build(config)


def test_an_unknown_key_lists_the_known_ones() -> None:
    with pytest.raises(ConfigError) as caught:
        build({"lookback": "PT10S"})
    assert all(key in str(caught.value) for key in KNOWN_KEYS)


# --- the command ------------------------------------------------------------------------------


def serve_over_wire(proc: subprocess.Popen[str], world: FakeWorld) -> dict[str, object]:
    """Answer the adapter's calls from ``world`` until its ``sync_ok``."""
    assert proc.stdin is not None and proc.stdout is not None
    client = _Client(world)
    while True:
        msg = json.loads(proc.stdout.readline())
        if msg["type"] != "call":
            return dict(msg)
        op = msg["op"]
        reply: dict[str, object] = {"type": "reply", "call_id": msg["call_id"], "ok": True}
        if op == "read_state":
            reply["state"] = client.read_state()
        elif op == "list_partitions":
            reply["partitions"] = client.list_partitions()
        elif op == "query":

            def bound(b: dict[str, object] | None) -> Bound | None:
                return None if b is None else Bound(int(b["at"]), bool(b["inclusive"]))  # type: ignore[call-overload]

            page = client.query(
                msg["partition"], bound(msg["lower"]), bound(msg["upper"]), msg["after"]
            )
            reply.update(
                rows=[{"id": r.id, "at": r.at} for r in page.rows], next=page.next, horizon=None
            )
        elif op == "commit":
            mode: Mode = msg["mode"]
            client.commit(msg["records"], mode, msg.get("state", KEEP_STATE))
        proc.stdin.write(json.dumps(reply) + "\n")
        proc.stdin.flush()


def test_the_adapter_command_speaks_the_sync_level() -> None:
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "fencepost",
            "adapter",
            "airbyte",
            "--config",
            '{"lookback_window": "PT10S"}',
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdin is not None and proc.stdout is not None
    try:
        proc.stdin.write(json.dumps({"type": "hello", "protocol": 1}) + "\n")
        proc.stdin.flush()
        hello = json.loads(proc.stdout.readline())
        assert hello["levels"] == ["sync"] and hello["delivery"] == "at-least-once"
        assert "airbyte-cdk 7." in hello["name"] and "lookback_window=PT10S" in hello["name"]
        world = late_world()
        source = {
            "stream": "orders",
            "cursor": "updated_at",
            "cursor_type": "timestamp",
            "granularity": 1000,
            "max_commit_delay": D,
            "partitioned": False,
            "horizon": False,
            "reads": "live",
            "earliest": 1_704_067_200_000,
        }
        sync = {"type": "sync", "id": 1, "worker": "t1", "now": world.now, "source": source}
        proc.stdin.write(json.dumps(sync) + "\n")
        proc.stdin.flush()
        done = serve_over_wire(proc, world)
        assert done == {
            "type": "sync_ok",
            "id": 1,
            "outcome": "completed",
            "coverage": {"main": {"cut": {"at": T0 + 20 * S, "kind": "before"}, "plus": []}},
        }
        assert world.copies == {"r1": 1, "r30": 1}
        proc.stdin.write(json.dumps({"type": "shutdown"}) + "\n")
        proc.stdin.flush()
        assert proc.wait(timeout=60) == 0
    finally:
        proc.kill()
        proc.wait()


def test_the_adapter_command_exits_2_naming_a_bad_key() -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "fencepost",
            "adapter",
            "airbyte",
            "--config",
            '{"lookback": "PT10S"}',
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2
    assert "unknown key 'lookback'" in done.stderr and "lookback_window" in done.stderr
    assert done.stdout == ""
