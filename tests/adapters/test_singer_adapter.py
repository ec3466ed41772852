"""The singer adapter on the fake source: what singer-sdk loses, duplicates and refuses.

Each test drives a real singer-sdk tap (fencepost.adapters.singer_adapter)
through the fake world of tests/adapters/fake_source.py, step by step: rows
commit late, partitions appear, a response is lost. The findings of
docs/real-tools.md (singer-sdk) are pinned here:

- the SDK's default (an incremental replication key, sorted or not) loses a
  row that commits behind the greatest value read, and its state claims it;
- the ``>=`` start re-emits the bookmark's rows (its whole second, on a
  seconds API) on every run;
- unsorted data declared sorted is refused (InvalidStreamSortException): a
  failed sync, no row lost, and a sync that stays stuck;
- bookmarks are kept per partition; one bookmark for the stream loses the old
  rows of a partition that appears later;
- FULL_TABLE is safe and re-delivers every row every run; an upsert target
  absorbs them;
- tap code that reads only up to ``now - D`` (``signpost_lag``) is safe
  incrementally; a lookback from the greatest value seen is not, when a row
  read during the sync is newer than the sync's start;
- the coverage the adapter reports is the bound the next run queries from.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Sequence
from typing import Any, cast

import pytest
from fake_source import T0, FakeWorld, _Client

from fencepost.adapters import ConfigError
from fencepost.adapters.runtime import (
    KEEP_STATE,
    Bound,
    Coverage,
    LostResponse,
    Mode,
    Page,
    Source,
    SyncRequest,
)
from fencepost.adapters.singer_adapter import KEYS, SingerTool, build

S = 1000  # one second in the source's units (ms)


def at(seconds: float) -> int:
    return T0 + round(seconds * S)


def world(**kwargs: object) -> FakeWorld:
    w = FakeWorld(**kwargs)  # type: ignore[arg-type]
    w.now = at(100)
    return w


def queries(w: FakeWorld) -> list[tuple[str, Bound | None, Bound | None, str | None]]:
    return [args for op, args in w.calls if op == "query"]  # type: ignore[misc]


# --- the default loses the late row -------------------------------------------------------------


@pytest.mark.parametrize("config", [{}, {"is_sorted": True}], ids=["sdk-default", "is_sorted"])
def test_default_loses_a_row_that_commits_behind_the_greatest_value_read(
    config: dict[str, object],
) -> None:
    w = world()
    w.add("main", "r10", at(10))
    w.add("main", "r30", at(30))
    w.add("main", "r25", at(25), visible=False)  # a writer still holds it open
    tool = build(config)

    first = w.run(tool, 1)
    assert first.outcome == "completed"
    # The bookmark is the greatest value read, and the next run starts there.
    assert first.coverage is not None and first.coverage["main"].at == at(30)
    w.commit_row("r25")  # commits 5 s behind r30: within D = 10 s
    for n in range(2, 6):
        w.now = at(100 + 11 * n)
        assert w.run(tool, n).outcome == "completed"

    assert w.lost() == ["r25"]
    # every later run starts at r30 (>=), never below it
    assert all(lower == Bound(at(30), True) for _, lower, _, _ in queries(w)[1:])


def test_the_claim_names_the_late_row_the_destination_never_got() -> None:
    w = world()
    w.add("main", "r30", at(30))
    w.add("main", "r25", at(25), visible=False)
    result = build({}).sync(SyncRequest(1, "t1", w.now, w.source()), _Client(w))
    w.commit_row("r25")
    claim = result.coverage["main"] if result.coverage else None
    assert claim is not None and claim.kind == "before" and claim.plus == ()
    assert claim.at is not None and at(25) < claim.at  # "everything before 30": r25 included
    assert w.copies.get("r25", 0) == 0


# --- >= re-emits the boundary rows ----------------------------------------------------------------


def test_the_inclusive_start_re_emits_the_bookmark_rows_on_every_run() -> None:
    w = world()
    w.add("main", "r10", at(10))
    w.add("main", "r30a", at(30.1))
    w.add("main", "r30b", at(30.412))  # the bookmark: 30.412
    tool = build({})
    runs = 5
    for n in range(runs):
        assert w.run(tool, n).outcome == "completed"
    assert w.lost() == []
    # A seconds API is asked ">= 30" (30.412 floored): both rows of that second come back.
    assert w.copies == {"r10": 1, "r30a": runs, "r30b": runs}
    assert sum(n - 1 for n in w.copies.values()) == 2 * (runs - 1)


def test_an_integer_cursor_re_emits_exactly_the_rows_at_the_bookmark() -> None:
    w = world(granularity=1)
    w.add("main", "a", 7)
    w.add("main", "b", 9)
    w.add("main", "c", 9)
    source = Source("orders", "seq", "integer", 1, 10, False, False)
    tool = build({})
    for n in range(3):
        result = tool.sync(SyncRequest(n, "t1", 100 + n, source), _Client(w))
        assert result.outcome == "completed"
    assert w.copies == {"a": 1, "b": 3, "c": 3}
    assert queries(w)[-1][1] == Bound(9, True)
    assert isinstance(w.state, dict)
    assert w.state["bookmarks"]["orders"]["partitions"][0]["replication_key_value"] == 9


# --- sorted declared, unsorted seen: refused --------------------------------------------------


def test_unsorted_data_declared_sorted_fails_the_sync_and_loses_nothing(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # One bookmark over two partitions read one after the other: 20 then 5.
    w = world(partitioned=True)
    w.add("a", "a10", at(10))
    w.add("a", "a20", at(20))
    w.add("b", "b5", at(5))
    tool = build({"is_sorted": True, "partitions": False})
    outcomes = [w.run(tool, n).outcome for n in range(3)]
    assert outcomes == ["failed"] * 3
    assert "InvalidStreamSortException" in capsys.readouterr().err
    assert w.lost() == []
    # The target drained what it had received (b5 was emitted before the check raised);
    # no STATE was emitted, so every run starts over: duplicates, never progress.
    assert w.copies == {"a10": 3, "a20": 3, "b5": 3}
    assert w.state is None


def test_a_sorted_stream_on_a_seconds_api_is_refused_on_its_own_bookmark_second() -> None:
    # ">= 30" (the bookmark 30.412 floored to the API's seconds) returns 30.1 first,
    # which is below the stored bookmark: the SDK's sort check raises, run after run.
    w = world()
    w.add("main", "r30a", at(30.1))
    w.add("main", "r30b", at(30.412))
    tool = build({"is_sorted": True})
    assert w.run(tool, 1).outcome == "completed"
    w.add("main", "r40", at(40))
    assert [w.run(tool, n).outcome for n in (2, 3)] == ["failed", "failed"]
    # stuck: the row after the refused one never arrives
    assert w.lost() == ["r40"]


def test_the_same_stream_unsorted_is_not_refused() -> None:
    w = world()
    w.add("main", "r30a", at(30.1))
    w.add("main", "r30b", at(30.412))
    tool = build({})
    assert w.run(tool, 1).outcome == "completed"
    w.add("main", "r40", at(40))
    assert w.run(tool, 2).outcome == "completed"
    assert w.lost() == []


# --- partitions -----------------------------------------------------------------------------------


def test_bookmarks_are_kept_per_partition_and_a_new_partition_is_read_whole() -> None:
    w = world(partitioned=True)
    w.add("eu", "e10", at(10))
    w.add("eu", "e50", at(50))
    w.add("us", "u20", at(20))
    tool = build({})
    first = w.run(tool, 1)
    assert first.coverage is not None
    assert {p: c.at for p, c in first.coverage.items()} == {"eu": at(50), "us": at(20)}
    state = w.state
    assert isinstance(state, dict)
    kept = state["bookmarks"]["orders"]["partitions"]
    assert [p["context"] for p in kept] == [{"partition": "eu"}, {"partition": "us"}]

    w.add("apac", "a5", at(5))  # appears later, holding an old row
    before = len(queries(w))
    second = w.run(tool, 2)
    assert w.lost() == []
    lowers = {p: lower for p, lower, _, _ in queries(w)[before:]}
    assert lowers == {"eu": Bound(at(50), True), "us": Bound(at(20), True), "apac": None}
    assert second.coverage is not None and second.coverage["apac"].at == at(5)


@pytest.mark.parametrize(
    "config",
    [{"state_partitioning_keys": []}, {"partitions": False}],
    ids=["state_partitioning_keys=[]", "partitions=false"],
)
def test_one_bookmark_for_the_stream_loses_the_old_rows_of_a_later_partition(
    config: dict[str, object],
) -> None:
    w = world(partitioned=True)
    w.add("eu", "e50", at(50))
    tool = build(config)
    assert w.run(tool, 1).outcome == "completed"
    w.add("apac", "a5", at(5))
    for n in (2, 3):
        assert w.run(tool, n).outcome == "completed"
    assert w.lost() == ["a5"]


# --- FULL_TABLE: safe, every row every run ----------------------------------------------------


@pytest.mark.parametrize(("load_method", "copies"), [("append-only", 4), ("upsert", 1)])
def test_full_table_loses_nothing_and_re_delivers_every_row(load_method: str, copies: int) -> None:
    w = world(partitioned=True)
    w.add("main", "r10", at(10))
    w.add("main", "r30", at(30))
    w.add("main", "r25", at(25), visible=False)
    tool = build({"replication_method": "FULL_TABLE", "load_method": load_method})
    results = [w.run(tool, 1)]
    w.commit_row("r25")
    w.add("late", "l1", at(1))
    results += [w.run(tool, n) for n in (2, 3, 4)]
    assert w.lost() == []
    assert w.copies["r10"] == copies and w.copies["r30"] == copies
    assert all(r.coverage is None for r in results)  # FULL_TABLE claims nothing
    assert all(lower is None for _, lower, _, _ in queries(w))


# --- tap code: what a safe incremental tap needs ----------------------------------------------


def _late_commit_runs(w: FakeWorld, tool: SingerTool, late_at: float) -> None:
    """r30 read at now=31, r<late_at> commits within D; syncs every D + 1 s after."""
    w.now = at(31)
    w.add("main", "r10", at(10))
    w.add("main", "r30", at(30))
    w.add("main", "rlate", at(late_at), visible=False)
    assert w.run(tool, 1).outcome == "completed"
    w.commit_row("rlate")
    for n in range(2, 6):
        w.now = at(31 + 11 * (n - 1))
        assert w.run(tool, n).outcome == "completed"


@pytest.mark.parametrize("load_method", ["append-only", "upsert"])
def test_tap_code_reading_only_up_to_now_minus_d_loses_nothing(load_method: str) -> None:
    w = world()
    tool = build({"signpost_lag": 10, "load_method": load_method})
    _late_commit_runs(w, tool, late_at=25)
    assert w.lost() == []
    # the upper bound is the source clock minus D, floored: never the machine's clock
    uppers = [upper for _, _, upper, _ in queries(w)]
    assert uppers[0] == Bound(at(21), False)
    # run 1 reads r10 (below 21 s); run 2 r10 (>= 10), r25, r30; runs 3-5 r30 (>= 30)
    expected_dupes = {"append-only": {"r10": 2, "r30": 4}, "upsert": {}}[load_method]
    assert {r: n for r, n in w.copies.items() if n > 1} == expected_dupes


def test_a_lookback_of_d_covers_a_late_commit_between_syncs() -> None:
    w = world()
    _late_commit_runs(w, build({"lookback_window": 10}), late_at=25)
    assert w.lost() == []


class _CommitsDuringTheSync:
    """A source whose clock moves during a sync: after ``after_pages`` pages, rows commit."""

    def __init__(self, w: FakeWorld, after_pages: int, commit: Callable[[], None]) -> None:
        self._inner = _Client(w)
        self._after = after_pages
        self._commit = commit

    def read_state(self) -> object:
        return self._inner.read_state()

    def list_partitions(self) -> list[str]:
        return self._inner.list_partitions()

    def query(
        self, partition: str, lower: Bound | None, upper: Bound | None, after: str | None
    ) -> Page:
        page = self._inner.query(partition, lower, upper, after)
        self._after -= 1
        if self._after == 0:
            self._commit()
        return page

    def commit(self, records: Sequence[str], mode: Mode, state: object = KEEP_STATE) -> None:
        self._inner.commit(records, mode, state)


def _slow_sync_schedule(w: FakeWorld, tool: SingerTool) -> None:
    """A sync that starts at 100 s and lasts past 110 s, in the source's clock.

    q97 is read on the first page; then r96 commits (at 104, say: within D of
    96) behind it, and r110 commits at 110 and is read on a later page. Every
    commit is within D of its row's cursor value.
    """
    w.page_size = 1
    w.now = at(100)
    w.add("main", "q97", at(97))
    w.add("main", "q98", at(98))
    w.add("main", "r96", at(96), visible=False)
    w.add("main", "r110", at(110), visible=False)

    def during() -> None:
        w.commit_row("r96")
        w.commit_row("r110")

    request = SyncRequest(1, "t1", w.now, w.source())
    assert tool.sync(request, _CommitsDuringTheSync(w, 1, during)).outcome == "completed"
    for n in range(2, 6):
        w.now = at(100 + 11 * n)
        assert w.run(tool, n).outcome == "completed"


def test_a_lookback_from_the_greatest_value_seen_loses_a_row_when_the_sync_outlasts_d() -> None:
    w = world()
    _slow_sync_schedule(w, build({"lookback_window": 10}))
    assert w.lost() == ["r96"]  # the next run starts at 110 - 10 = 100 > 96


def test_reading_only_up_to_the_start_clock_minus_d_survives_the_slow_sync() -> None:
    w = world()
    _slow_sync_schedule(w, build({"signpost_lag": 10}))
    assert w.lost() == []


def test_the_sdk_signpost_reads_the_sync_clock_and_caps_only_a_stream_level_bookmark() -> None:
    # A row newer than the sync's start (the source's clock moved during the sync).
    def bookmark(config: dict[str, object]) -> object:
        w = world()
        w.now = at(31)
        w.add("main", "r36", at(36))
        result = w.run(build(config), 1)
        assert result.outcome == "completed"
        state = w.state
        assert isinstance(state, dict)
        stream = state["bookmarks"]["orders"]
        entry = stream["partitions"][0] if "partitions" in stream else stream
        return entry["replication_key_value"]

    # Unsorted, one bookmark for the stream: capped at the signpost, the sync's now (31 s),
    # not the machine's clock (which is years past 2024 and would cap nothing).
    assert bookmark({"partitions": False}) == "2024-01-01T00:00:31.000000+00:00"
    # Per-partition bookmarks: the SDK writes its signpost at the stream level only.
    assert bookmark({}) == "2024-01-01T00:00:36.000000+00:00"
    # Sorted: the signpost never applies.
    assert bookmark({"partitions": False, "is_sorted": True}) == "2024-01-01T00:00:36.000000+00:00"


# --- coverage is the next run's lower bound ---------------------------------------------------

_COVERAGE_CONFIGS: list[dict[str, object]] = [
    {},
    {"is_sorted": True},
    {"partitions": False},
    {"state_partitioning_keys": []},
    {"state_partitioning_keys": ["partition"]},
    {"lookback_window": 10},
    {"signpost_lag": 10},
    {"start_date": "2024-01-01T00:00:20Z"},
    {"start_date": "2024-01-01T00:01:00Z"},
]


def _claims_match_next_lower_bounds(tool: SingerTool) -> list[str]:
    """Each partition's claim equals the lower bound its next query uses; the mismatches."""
    w = world(partitioned=True)
    w.now = at(80)
    w.add("eu", "e10", at(10))
    w.add("eu", "e50", at(50.5))
    w.add("us", "u20", at(20.25))
    w.add("apac", "a5", at(5), visible=False)
    mismatches: list[str] = []
    for n in (1, 2):
        result = w.run(tool, n)
        assert result.coverage is not None
        before = len(queries(w))
        w.now += 11 * S
        w.run(tool, n + 10)
        first: dict[str, Bound | None] = {}
        for partition, lower, _, _ in queries(w)[before:]:
            first.setdefault(partition, lower)
        for partition, claim in result.coverage.items():
            lower = first.get(partition)
            want = None if lower is None else lower.at
            if claim.at != want or claim.kind != "before" or claim.plus:
                mismatches.append(f"{partition}: claim {claim} vs next lower {lower}")
        w.commit_row("a5")
    return mismatches


@pytest.mark.parametrize("config", _COVERAGE_CONFIGS, ids=json.dumps)
def test_the_coverage_claimed_is_the_bound_the_next_run_starts_from(
    config: dict[str, object],
) -> None:
    assert _claims_match_next_lower_bounds(build(config)) == []


def test_a_coverage_that_forgets_the_floor_is_caught() -> None:
    class Unfloored(SingerTool):
        """Claims the bookmark itself, not the second a seconds API is asked from."""

        def coverage(self, run: Any, state: object) -> dict[str, Coverage] | None:
            claims = super().coverage(run, state)
            if claims is None:
                return None
            return {
                p: Coverage(None if c.at is None else c.at + 250, c.kind, c.plus)
                for p, c in claims.items()
            }

    broken = Unfloored(build({}).config)
    assert _claims_match_next_lower_bounds(broken) != []


# --- lost responses -------------------------------------------------------------------------------


def test_a_lost_query_is_retried_as_a_rest_tap_retries() -> None:
    w = world()
    w.add("main", "r10", at(10))
    w.lose["query"] = True
    assert w.run(build({}), 1).outcome == "completed"
    assert w.copies == {"r10": 1}
    assert [op for op, _ in w.calls].count("query") == 2


def test_a_lost_record_commit_fails_the_run_and_the_next_run_re_delivers() -> None:
    w = world()
    w.add("main", "r10", at(10))
    w.lose["commit"] = False  # the records never arrived
    tool = build({})
    with pytest.raises(LostResponse):  # the runtime answers sync_ok "failed", coverage null
        w.run(tool, 1)
    assert w.state is None  # the state was never committed after the records
    assert w.run(tool, 2).outcome == "completed"
    assert w.copies == {"r10": 1}


def test_a_lost_state_commit_that_applied_claims_nothing_in_that_run() -> None:
    w = world()
    w.add("main", "r10", at(10))
    w.add("main", "r20", at(20))
    tool = build({"batch_size_rows": 1})
    calls: list[str] = []

    class LoseSecondStateCommit(_Client):
        def commit(self, records: Sequence[str], mode: Mode, state: object = KEEP_STATE) -> None:
            calls.append("state" if state is not KEEP_STATE else "records")
            super().commit(records, mode, state)
            if state is not KEEP_STATE:
                raise LostResponse("commit")

    request = SyncRequest(1, "t1", w.now, w.source())
    with pytest.raises(LostResponse):
        tool.sync(request, LoseSecondStateCommit(w))
    # batch_size_rows=1: one commit per record, then the state, as drain_one/drain_all do
    assert calls == ["records", "records", "state"]
    assert w.state is not None


# --- configuration and the process ------------------------------------------------------------


@pytest.mark.parametrize(
    ("config", "key"),
    [
        ({"lag": 10}, "lag"),
        ({"replication_method": "LOG_BASED"}, "replication_method"),
        ({"is_sorted": "yes"}, "is_sorted"),
        ({"load_method": "overwrite"}, "load_method"),
        ({"batch_size_rows": 0}, "batch_size_rows"),
        ({"start_date": "yesterday"}, "start_date"),
        ({"state_partitioning_keys": ["tenant"]}, "state_partitioning_keys"),
        ({"signpost_lag": -1}, "signpost_lag"),
    ],
)
def test_bad_configuration_names_the_key(config: dict[str, object], key: str) -> None:
    with pytest.raises(ConfigError, match=key):
        build(config)


def test_a_start_date_of_the_wrong_kind_fails_before_anything_is_committed() -> None:
    w = world()
    w.add("main", "r10", at(10))
    with pytest.raises(ValueError, match="start_date"):
        w.run(build({"start_date": 5}), 1)
    assert [op for op, _ in w.calls] == ["read_state"]


def test_an_unknown_key_lists_the_known_ones() -> None:
    with pytest.raises(ConfigError) as caught:
        build({"lag": 10})
    assert all(k in str(caught.value) for k in KEYS)


def _adapter(*config: str) -> list[str]:
    return [sys.executable, "-m", "fencepost", "adapter", "singer", *config]


def test_bad_configuration_exits_2_naming_the_key() -> None:
    done = subprocess.run(
        _adapter("--config", '{"lag": 10}'), input="", capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2
    assert "lag" in done.stderr and "signpost_lag" in done.stderr
    assert "Traceback" not in done.stderr
    assert done.stdout == ""


def test_the_process_speaks_the_sync_level_and_keeps_singer_output_off_the_wire() -> None:
    proc = subprocess.Popen(
        _adapter("--config", '{"signpost_lag": 10}'),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdin is not None and proc.stdout is not None

    def send(msg: dict[str, object]) -> None:
        assert proc.stdin is not None
        proc.stdin.write(json.dumps(msg) + "\n")
        proc.stdin.flush()

    def receive() -> dict[str, object]:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line, "the adapter closed its output"
        msg = json.loads(line)
        assert isinstance(msg, dict)
        return msg

    try:
        send({"type": "hello", "protocol": 1})
        hello = receive()
        assert hello["type"] == "hello_ok" and hello["levels"] == ["sync"]
        assert hello["delivery"] == "at-least-once"
        assert str(hello["name"]).startswith("singer-sdk 0.54")
        source = {
            "stream": "orders",
            "cursor": "updated_at",
            "cursor_type": "timestamp",
            "granularity": 1000,
            "max_commit_delay": 10000,
            "partitioned": False,
            "horizon": False,
            "reads": "live",
            "earliest": 1_704_067_200_000,
        }
        send({"type": "sync", "id": 7, "worker": "t1", "now": at(100), "source": source})
        seen: list[str] = []
        while True:
            msg = receive()
            if msg["type"] == "sync_ok":
                break
            assert msg["type"] == "call", msg
            op = str(msg["op"])
            seen.append(op)
            reply: dict[str, object] = {"type": "reply", "call_id": msg["call_id"], "ok": True}
            if op == "read_state":
                reply["state"] = None
            elif op == "list_partitions":
                reply["partitions"] = ["main"]
            elif op == "query":
                assert msg["lower"] is None
                assert msg["upper"] == {"at": at(90), "inclusive": False}
                reply.update(rows=[{"id": "r1", "at": at(12.412)}], next=None, horizon=None)
            else:
                assert op == "commit"
            send(reply)
        assert msg["id"] == 7 and msg["outcome"] == "completed"
        assert msg["coverage"] == {"main": {"cut": {"at": at(12), "kind": "before"}, "plus": []}}
        assert seen == ["read_state", "list_partitions", "query", "commit", "commit"]
        send({"type": "shutdown"})
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdin.close()
        proc.stdout.close()
        if proc.stderr is not None:
            proc.stderr.close()


def test_reset_keeps_nothing_and_the_process_serves_the_next_session() -> None:
    tool = build({})
    w = world()
    w.add("main", "r10", at(10))
    w.run(tool, 1)
    tool.reset()
    w.run(tool, 2)
    assert w.copies == {"r10": 2}  # resumed from the destination's state, not from memory


# --- one schedule, every configuration: the figures of docs/real-tools.md ----------------------


def _busy_schedule(config: dict[str, object]) -> tuple[int, int, int, int, str]:
    """25 rows in ``eu``, every 4th committing 8.2 s late; ``apac`` appears at 40 s with 3 old
    rows, then 6 more (one 9.1 s late). Syncs every 7 s to 70 s, then 4 more 11 s apart once
    everything has committed, as the harness runs a tool to completion (D = 10 s).

    Returns (lost, duplicated rows, extra copies, records committed, outcomes).
    """
    w = FakeWorld(partitioned=True, page_size=5)
    commits: list[tuple[int, str]] = []
    for i in range(25):
        cursor = T0 + 3000 + 2370 * i + (i * 137) % 1000
        w.add("eu", f"eu{i}", cursor, visible=False)
        commits.append((cursor + (8200 if i % 4 == 1 else 300), f"eu{i}"))
    for i, cursor in enumerate((5111, 12222, 12999)):
        w.add("apac", f"apac-old{i}", T0 + cursor, visible=False)
        commits.append((T0 + 40_000, f"apac-old{i}"))
    for i in range(6):
        cursor = T0 + 41_000 + 3130 * i
        w.add("apac", f"apac{i}", cursor, visible=False)
        commits.append((cursor + (9100 if i == 2 else 200), f"apac{i}"))
    times = [T0 + 7000 * k for k in range(1, 11)]
    quiet = max(times[-1], max(c for c, _ in commits))
    times += [quiet + 11_000 * k for k in range(1, 5)]
    tool = build(config)
    outcomes = ""
    for n, now in enumerate(times):
        for when, row in commits:
            if when <= now:
                w.commit_row(row)
        w.now = now
        outcomes += w.run(tool, n).outcome[0]
    committed = sum(
        len(cast(tuple[list[str], str, object], args)[0]) for op, args in w.calls if op == "commit"
    )
    dupes = w.duplicated()
    return len(w.lost()), len(dupes), sum(w.copies[r] - 1 for r in dupes), committed, outcomes


_FINDINGS: list[tuple[dict[str, object], tuple[int, int, int, int]]] = [
    ({}, (6, 13, 21, 49)),
    ({"is_sorted": True}, (6, 13, 21, 49)),
    ({"partitions": False}, (9, 10, 14, 39)),
    ({"state_partitioning_keys": []}, (9, 10, 14, 39)),
    ({"lookback_window": 10}, (0, 28, 82, 116)),
    ({"signpost_lag": 10}, (0, 15, 22, 56)),
    ({"signpost_lag": 10, "load_method": "upsert"}, (0, 0, 0, 56)),
    ({"signpost_lag": 10, "partitions": False}, (3, 10, 12, 43)),
    ({"replication_method": "FULL_TABLE"}, (0, 34, 279, 313)),
    ({"replication_method": "FULL_TABLE", "load_method": "upsert"}, (0, 0, 0, 313)),
]


@pytest.mark.parametrize(
    ("config", "figures"), _FINDINGS, ids=[json.dumps(c) for c, _ in _FINDINGS]
)
def test_findings_table(config: dict[str, object], figures: tuple[int, int, int, int]) -> None:
    lost, duplicated, extra, committed, outcomes = _busy_schedule(config)
    assert outcomes == "c" * 14  # every sync completed: the losses are silent
    assert (lost, duplicated, extra, committed) == figures
