"""dlt behind the ``sync`` level: what dlt's incremental loses and keeps in a world of late commits.

Each story is played on the hand-driven fake source (``fake_source.py``) with the
world's rules kept by hand: ``D`` = 10 s (a row commits at most 10 s after its
cursor value), milliseconds stored and seconds queried. ``settle`` ends a story
as the harness's verdict does: syncs ``D + granularity`` apart until one copies
no new row (at most 4). The figures in docs/real-tools-dlt.md are these tests'.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from fake_source import T0, FakeWorld, _Client

from fencepost.adapters import ConfigError
from fencepost.adapters.dlt_adapter import (
    KNOWN_KEYS,
    DltTool,
    _Seen,
    build,
    lower_bound,
    parse_config,
)
from fencepost.adapters.runtime import (
    KEEP_STATE,
    Bound,
    Coverage,
    LostResponse,
    Mode,
    Page,
    SessionEnd,
    Source,
    SyncRequest,
    SyncResult,
)

SAFE = {"lag": 10, "write_disposition": "merge"}


def s(seconds: float) -> int:
    """A cursor value ``seconds`` after the fake world's epoch, in milliseconds."""
    return T0 + round(seconds * 1000)


Hook = Callable[["World"], None]


class _Counting(_Client):
    """The fake's client, counting re-reads (a merge of a row already held) and running hooks."""

    def __init__(self, world: World, hooks: Mapping[int, Hook]) -> None:
        super().__init__(world)
        self.world = world
        self.hooks = dict(hooks)
        self.queries = 0

    def query(
        self, partition: str, lower: Bound | None, upper: Bound | None, after: str | None
    ) -> Page:
        self.queries += 1
        if self.queries in self.hooks:
            self.hooks[self.queries](self.world)
        return super().query(partition, lower, upper, after)

    def commit(self, records: Sequence[str], mode: Mode, state: object = KEEP_STATE) -> None:
        if self.world.lose.get("commit", True):
            self.world.rereads += sum(1 for r in records if self.world.copies.get(r, 0) > 0)
        super().commit(records, mode, state)


@dataclass
class World(FakeWorld):
    """The fake world plus the re-read count and an integer cursor when asked."""

    rereads: int = 0
    integer: bool = False
    #: the cursor's name for an integer cursor ("id" is an auto-increment id)
    column: str = "seq"

    def source(self) -> Source:
        base = super().source()
        if not self.integer:
            return base
        return Source(base.stream, self.column, "integer", 1, 10, base.partitioned, False)

    def sync(self, tool: DltTool, hooks: Mapping[int, Hook] | None = None) -> SyncResult:
        """One sync; ``hooks[n]`` runs just before the sync's n-th query (a commit mid-sync)."""
        request = SyncRequest(len(self.calls) + 1, "t1", self.now, self.source())
        return tool.sync(request, _Counting(self, hooks or {}))

    def settle(self, tool: DltTool) -> int:
        """The harness's verdict runs: syncs D + granularity apart until one copies no new row."""
        for n in range(1, 5):
            self.now += self.max_commit_delay + self.granularity
            held = {r for r, c in self.copies.items() if c}
            self.sync(tool)
            if {r for r, c in self.copies.items() if c} == held:
                return n
        return 4


def commits(world: FakeWorld) -> list[tuple[list[str], str, Any]]:
    return [args for op, args in world.calls if op == "commit"]  # type: ignore[misc]


def queries(world: FakeWorld) -> list[tuple[str, Bound | None, Bound | None, str | None]]:
    return [args for op, args in world.calls if op == "query"]  # type: ignore[misc]


def late_story(config: dict[str, object]) -> World:
    """r10 and r30 visible at 31 s; r25 commits at 33 s (within D), after sync 1 read r30."""
    w = World()
    w.add("main", "r10", s(10))
    w.add("main", "r30", s(30))
    w.add("main", "r25", s(25), visible=False)
    tool = build(config)
    w.now = s(31)
    assert w.sync(tool).outcome == "completed"
    w.commit_row("r25")
    w.settle(tool)
    return w


# --- the default configuration ---------------------------------------------------------------


def test_default_loses_the_row_that_commits_late_behind_the_greatest_value() -> None:
    w = late_story({})
    assert w.lost() == ["r25"]
    assert w.duplicated() == []
    # dlt resumes from last_value = 30 s, the greatest value read, and sends it as the bound
    assert all(q[1] == Bound(s(30), True) for q in queries(w)[1:])
    state = commits(w)[0][2]["sources"]["orders"]["resources"]["orders_main"]
    assert state["incremental"]["updated_at"]["last_value"].endswith("00:00:30+00:00")
    # and claims everything before 30 s, plus r30: r25 included, never copied
    assert w.sync(build({})).coverage == {"main": Coverage(s(30), "before", ("r30",))}


def test_default_coverage_is_before_last_value_plus_the_hashed_rows() -> None:
    w = World()
    w.add("main", "a", s(10))
    w.add("main", "b", s(30))
    w.add("main", "c", s(30))
    w.now = s(31)
    result = w.sync(build({}))
    assert result.coverage == {"main": Coverage(s(30), "before", ("b", "c"))}


def test_default_drops_a_late_millisecond_row_the_seconds_query_returns() -> None:
    """Stored 30.412 s, queried from 30 s: the API returns 30.100 s, dlt's filter drops it."""
    w = World()
    w.add("main", "hi", s(30.412))
    w.add("main", "lo", s(30.100), visible=False)
    tool = build({})
    w.now = s(31)
    w.sync(tool)
    w.commit_row("lo")
    w.now = s(42)
    w.sync(tool)
    assert queries(w)[-1][1] == Bound(s(30), True)  # floored to what the API takes
    assert "lo" in w.shown  # the source returned it ...
    assert w.lost() == ["lo"]  # ... and dlt dropped it: below start_value


def test_default_dedupes_rows_sharing_the_boundary_value_and_keeps_a_late_one_there() -> None:
    w = World()
    w.add("main", "a", s(30))
    w.add("main", "b", s(30))
    w.add("main", "c", s(30), visible=False)
    tool = build({})
    w.now = s(31)
    w.sync(tool)
    w.commit_row("c")
    w.settle(tool)
    assert w.lost() == [] and w.duplicated() == []
    assert [c[0] for c in commits(w)] == [["a", "b"], ["c"]]  # a and b skipped by hash
    assert w.sync(tool).coverage == {"main": Coverage(s(30), "before", ("a", "b", "c"))}


@pytest.mark.parametrize(
    ("config", "claim"),
    [
        ({"range_start": "open"}, Coverage(s(30), "through")),
        ({"range_start": "open", "lag": 10}, Coverage(s(20), "through")),
        ({"lag": 10}, Coverage(s(20), "before")),
        ({"primary_key": None}, Coverage(s(30), "before", ("a",))),
    ],
)
def test_coverage_maps_the_other_configurations(config: dict[str, object], claim: Coverage) -> None:
    w = World()
    w.add("main", "a", s(30))
    w.now = s(31)
    assert w.sync(build(config)).coverage == {"main": claim}


def test_a_partition_with_nothing_read_yet_claims_nothing() -> None:
    """B's only row is at the run's start, after ``upper_bound: now``: B's state has no value."""
    w = World(partitioned=True)
    w.add("A", "a1", s(10))
    w.add("B", "b1", s(30.5))
    w.now = s(30.5)
    assert w.sync(build({"upper_bound": "now"})).coverage == {
        "A": Coverage(s(10), "before", ("a1",)),
        "B": Coverage(None),
    }


def test_without_dedupe_the_boundary_rows_are_loaded_again() -> None:
    """``primary_key: []`` switches dlt's boundary dedupe off: the rows at 30 s come back."""
    w = World()
    w.add("main", "a", s(30))
    tool = build({"primary_key": []})
    w.now = s(31)
    w.sync(tool)
    w.settle(tool)
    assert w.duplicated() == ["a"]
    assert w.sync(tool).coverage == {"main": Coverage(s(30), "before", ())}


# --- lag -------------------------------------------------------------------------------------


def test_lag_10_merge_keeps_the_late_row_at_the_cost_of_rereads() -> None:
    w = late_story(SAFE)
    assert w.lost() == [] and w.duplicated() == []
    assert [c[0] for c in commits(w)] == [["r10", "r30"], ["r25", "r30"], ["r25", "r30"]]
    assert w.rereads == 3
    assert all(c[1] == "merge" for c in commits(w))
    # last_value stays 30 s after reading r25: forward-only under lag
    state = commits(w)[-1][2]["sources"]["orders"]["resources"]["orders_main"]
    assert state["incremental"]["updated_at"]["last_value"].endswith("00:00:30+00:00")
    # dlt re-reads from last_value - 10 s, and its state says so
    assert queries(w)[1][1] == Bound(s(20), True)
    assert w.sync(build(SAFE)).coverage == {"main": Coverage(s(20), "before")}


def test_lag_with_append_loads_the_window_again_on_every_run() -> None:
    w = late_story({"lag": 10})
    assert w.lost() == []
    assert sorted(w.duplicated()) == ["r25", "r30"]
    assert w.copies == {"r10": 1, "r30": 3, "r25": 2}


@pytest.mark.parametrize("column", ["seq", "id"])
def test_lag_is_seconds_for_a_timestamp_cursor_and_units_for_an_integer_one(column: str) -> None:
    w = World(granularity=1, integer=True, column=column)
    w.add("main", "a", 100)
    w.add("main", "b", 95, visible=False)
    tool = build(SAFE)
    w.now = 101
    w.sync(tool)
    w.commit_row("b")
    w.now = 112
    result = w.sync(tool)
    assert queries(w)[-1][1] == Bound(90, True)
    assert w.lost() == [] and w.duplicated() == [] and w.rereads == 1
    assert result.coverage == {"main": Coverage(90, "before")}


def test_lag_10_keeps_a_late_row_at_exactly_v_minus_10s_but_an_open_range_loses_it() -> None:
    """V = 30.412 s; a row at 20.412 s may still commit (at 30.412 s, within D)."""
    for config, lost, rereads in ((SAFE, [], 3), ({**SAFE, "range_start": "open"}, ["edge"], 1)):
        w = World()
        w.add("main", "v", s(30.412))
        w.add("main", "edge", s(20.412), visible=False)
        tool = build(config)
        w.now = s(30.412)
        w.sync(tool)
        w.commit_row("edge")
        w.settle(tool)
        assert w.lost() == lost, config
        assert w.rereads == rereads
        assert queries(w)[1][1] == Bound(s(20), True)  # 20.412 s floored for the API


def test_a_row_committing_mid_sync_is_kept_when_the_clock_stands_still() -> None:
    """Mid-sync commits happen at ``now`` (30 s): the late row is at >= 20 s, inside the lag."""
    w = World()
    for rid, at in (("x", 20.5), ("y", 22), ("z", 23), ("v", 29.5)):
        w.add("main", rid, s(at), visible=rid != "v")
    w.add("main", "r", s(21), visible=False)

    def commit_mid_sync(world: World) -> None:
        world.commit_row("r")  # behind page 1, committed at 30 s <= 21 s + D
        world.commit_row("v")  # committed at 30 s, at 29.5 s

    tool = build(SAFE)
    w.now = s(30)
    w.sync(tool, {2: commit_mid_sync})
    assert "r" in w.visible and "r" not in w.copies  # missed by this sync ...
    assert "v" in w.copies
    w.settle(tool)
    assert w.lost() == []  # ... and read by the next: 21 s >= 29.5 s - 10 s
    assert w.duplicated() == [] and w.rereads == 9


def test_a_clock_moving_during_the_sync_beats_lag_10_unless_the_query_ends_at_now() -> None:
    """Sync starts at 30 s; r (21 s) commits at 31 s behind page 1; v (31.5 s) at 31.5 s.

    dlt reads v on page 2, last_value becomes 31.5 s and the next run starts at
    21.5 s: r is lost. ``upper_bound: now`` never reads past the sync's start, so
    last_value stays below it and the lag covers everything committed later.
    """
    for config, lost, rereads in ((SAFE, ["r"], 3), ({**SAFE, "upper_bound": "now"}, [], 6)):
        w = World()
        for rid, at in (("x", 20.5), ("y", 22), ("z", 23), ("v", 31.5)):
            w.add("main", rid, s(at), visible=rid != "v")
        w.add("main", "r", s(21), visible=False)

        def commit_mid_sync(world: World) -> None:
            world.commit_row("r")
            world.commit_row("v")

        tool = build(config)
        w.now = s(30)
        w.sync(tool, {2: commit_mid_sync})
        assert "r" in w.visible and "r" not in w.copies
        if "upper_bound" in config:  # nothing at or after the run's start is read
            assert queries(w)[0][2] == Bound(s(30), False) and "v" not in w.copies
        w.settle(tool)
        assert w.lost() == lost, config
        assert w.duplicated() == [] and w.rereads == rereads


# --- faults ----------------------------------------------------------------------------------


@pytest.mark.parametrize("config", [{}, SAFE], ids=["default", "lag10-merge"])
def test_a_crash_mid_extract_loses_and_duplicates_nothing(config: dict[str, object]) -> None:
    w = World(page_size=1)
    for i in range(3):
        w.add("main", f"r{i}", s(10 + i))

    def crash(world: World) -> None:
        raise SessionEnd("killed")

    w.now = s(20)
    with pytest.raises(SessionEnd):
        w.sync(build(config), {2: crash})
    assert commits(w) == []
    w.settle(build(config))  # a new process
    assert w.lost() == [] and w.duplicated() == []


@pytest.mark.parametrize("op", ["read_state", "query"])
def test_a_lost_read_response_fails_the_run_and_commits_nothing(op: str) -> None:
    w = World()
    w.add("main", "a", s(10))
    w.lose[op] = True
    tool = build({})
    w.now = s(20)
    with pytest.raises(Exception) as failure:
        w.sync(tool)
    assert any(isinstance(e, LostResponse) for e in _chain(failure.value))
    assert commits(w) == []
    w.settle(tool)
    assert w.lost() == [] and w.duplicated() == []


@pytest.mark.parametrize("applied", [True, False], ids=["applied", "not-applied"])
@pytest.mark.parametrize("config", [{}, SAFE], ids=["default", "lag10-merge"])
def test_a_lost_commit_response_loses_and_duplicates_nothing(
    config: dict[str, object], applied: bool
) -> None:
    """Records and state commit together: the next run resumes from what the destination holds."""
    w = World()
    w.add("main", "a", s(10))
    w.add("main", "b", s(12))
    w.lose["commit"] = applied
    tool = build(config)
    w.now = s(20)
    with pytest.raises(LostResponse):
        w.sync(tool)
    w.settle(tool)
    assert w.lost() == [] and w.duplicated() == []


# --- partitions ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("resources", "lost", "rereads"), [("per_partition", [], 3), ("single", ["b1"], 1)]
)
def test_a_partition_appearing_later_with_old_rows(
    resources: str, lost: list[str], rereads: int
) -> None:
    """One resource per partition starts the new one from scratch; one shared cursor skips it."""
    w = World(partitioned=True)
    w.add("A", "a1", s(100))
    w.add("B", "b1", s(50), visible=False)
    tool = build({**SAFE, "resources": resources})
    w.now = s(101)
    first = w.sync(tool)
    assert first.coverage == {"A": Coverage(s(90), "before")}
    w.commit_row("b1")  # partition B appears, holding a row at 50 s
    w.settle(tool)
    assert w.lost() == lost and w.rereads == rereads
    coverage = w.sync(tool).coverage
    assert coverage is not None and set(coverage) == {"A", "B"}
    if resources == "per_partition":
        assert coverage["B"] == Coverage(s(40), "before")
    else:
        assert coverage["B"] == coverage["A"] == Coverage(s(90), "before")


# --- dlt itself, faithfully --------------------------------------------------------------------


def _extracted_ids(info: Any) -> list[str]:
    import gzip

    ids: list[str] = []
    for package in info.load_packages:
        for job in package.jobs["new_jobs"]:
            if job.job_file_info.table_name != "orders":
                continue
            with gzip.open(job.file_path, "rt") as f:
                for line in f:  # one JSON list of rows per line
                    ids += [row["id"] for row in json.loads(line)] if line.strip() else []
    return ids


@pytest.mark.parametrize("config", [{}, SAFE], ids=["default", "lag10-merge"])
def test_the_extract_path_leaves_what_a_real_pipeline_extract_leaves(
    config: dict[str, object], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same story through ``Pipeline.extract``: the same rows and the same incremental state."""
    import dlt
    from dlt.common.runtime.run_context import RunContext, switched_run_context
    from dlt.common.versioned_state import json_encode_state

    monkeypatch.setenv("RUNTIME__DLTHUB_TELEMETRY", "false")
    ours, theirs = World(), World()
    for world in (ours, theirs):
        world.add("main", "a", s(10))
        world.add("main", "b", s(30))
        world.add("main", "c", s(30))
        world.add("main", "late", s(25), visible=False)
    tool, twin = build(config), build(config)
    ours_rows: list[list[str]] = []
    theirs_rows: list[list[str]] = []
    # the pipeline's dlt folders (its global one too) inside tmp_path, as the adapter's are
    context = RunContext(str(tmp_path))
    context._global_dir = str(tmp_path / "global")
    with switched_run_context(context):
        pipeline = dlt.pipeline(pipeline_name="fencepost", pipelines_dir=str(tmp_path))
        for now, step in ((s(31), None), (s(42), "late"), (s(53), None)):
            for world in (ours, theirs):
                world.now = now
                if step:
                    world.commit_row(step)
            before = len(commits(ours))
            ours.sync(tool)
            ours_rows.append(commits(ours)[-1][0] if len(commits(ours)) > before else [])
            with twin._isolated(now):
                source = twin._source(theirs.source(), now, ["main"], _Client(theirs), _Seen())
                theirs_rows.append(_extracted_ids(pipeline.extract(source)))
        theirs_state = json.loads(json_encode_state(pipeline.state["sources"]))  # type: ignore[arg-type]
    assert ours_rows == theirs_rows
    assert ours_rows[1] == ([] if config == {} else ["late", "b", "c"])
    assert _sorted_hashes(commits(ours)[-1][2]["sources"]) == _sorted_hashes(theirs_state)


def _sorted_hashes(sources: dict[str, Any]) -> dict[str, Any]:
    for resource in sources["orders"]["resources"].values():
        for cursor in resource["incremental"].values():
            cursor["unique_hashes"] = sorted(cursor["unique_hashes"])
    return sources


def test_the_same_replies_give_the_same_calls() -> None:
    worlds = [late_story(SAFE), late_story(SAFE)]
    assert worlds[0].calls == worlds[1].calls


STORY = """
import json, sys
sys.path.insert(0, sys.argv[1])
from fake_source import T0, FakeWorld
from fencepost.adapters.dlt_adapter import build
w = FakeWorld(page_size=20)
for i in range(12):
    w.add("main", f"r{i}", T0 + 30_000)
tool = build({})
w.now = T0 + 31_000
w.run(tool)
print(json.dumps([args for op, args in w.calls if op == "commit"]))
"""


def test_processes_with_different_string_hashing_commit_the_same_state() -> None:
    """dlt's ``unique_hashes`` come out of a set; the adapter commits them sorted.

    The story runs here (this process's string hashing) and in a child with
    another ``PYTHONHASHSEED``; twelve hashes in set order would differ.
    """
    child = subprocess.run(
        [sys.executable, "-c", STORY, str(Path(__file__).parent)],
        env={**os.environ, "PYTHONHASHSEED": "12345"},
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    here = io.StringIO()
    with contextlib.redirect_stdout(here):
        exec(STORY.replace("sys.argv[1]", repr(str(Path(__file__).parent))), {})
    hashes = json.loads(child)[0][2]["sources"]["orders"]["resources"]["orders_main"]
    assert len(hashes["incremental"]["updated_at"]["unique_hashes"]) == 12
    assert here.getvalue() == child


def test_row_order_asc_changes_nothing_without_end_value() -> None:
    """dlt closes the pipe on an ascending source only past ``end_value`` (``can_close``)."""
    assert late_story({"row_order": "asc"}).calls == late_story({}).calls


def test_dlt_reads_the_source_clock_and_keeps_its_folders_private() -> None:
    import dlt
    import pendulum

    seen: dict[str, object] = {}

    def look(world: World) -> None:
        seen["now"] = pendulum.now()
        seen["data_dir"] = dlt.current.run_context().data_dir

    w = World()
    w.add("main", "a", s(10))
    w.now = s(20.5)
    tool = build({})
    w.sync(tool, {1: look})
    assert seen["now"] == pendulum.instance(tempfile_epoch_ms(w.now))
    home = str(seen["data_dir"])
    assert home.startswith(tempfile.gettempdir()) and os.path.isdir(home)
    assert not home.startswith(os.path.expanduser("~") + os.sep)
    assert pendulum.now() != seen["now"]  # the machine's clock is back after the sync
    tool.reset()
    assert not os.path.exists(home)
    w.sync(tool)  # a reset tool runs again
    assert w.lost() == []


def tempfile_epoch_ms(ms: int) -> Any:
    from datetime import UTC, datetime, timedelta

    return datetime(1970, 1, 1, tzinfo=UTC) + timedelta(milliseconds=ms)


# --- configuration ---------------------------------------------------------------------------


def test_delivery_is_exactly_once_only_for_merge_on_the_primary_key() -> None:
    for config, mode in (
        (SAFE, "merge"),
        ({"write_disposition": "merge", "primary_key": None}, "append"),
    ):
        w = World()
        w.add("main", "a", s(10))
        w.now = s(11)
        w.sync(build(config))
        assert commits(w)[0][1] == mode  # dlt's merge without a key falls back to append
    assert build(SAFE).delivery == "exactly-once"
    assert build({}).delivery == "at-least-once"
    assert build({"write_disposition": "merge", "primary_key": None}).delivery == "at-least-once"
    assert build({"write_disposition": "merge", "primary_key": []}).delivery == "at-least-once"


@pytest.mark.parametrize(
    ("config", "named"),
    [
        ({"lagg": 10}, "'lagg'"),
        ({"lag": -1}, "lag"),
        ({"lag": True}, "lag"),
        ({"range_start": "half"}, "range_start"),
        ({"write_disposition": "replace"}, "write_disposition"),
        ({"last_value_func": "min"}, "last_value_func"),
        ({"primary_key": "updated_at"}, "primary_key"),
        ({"initial_value": "yesterday"}, "initial_value"),
        ({"end_value": "2024-02-01T00:00:00Z"}, "end_value"),
        ({"resources": "many"}, "resources"),
        ({"upper_bound": "later"}, "upper_bound"),
    ],
)
def test_bad_configuration_names_the_key(config: dict[str, object], named: str) -> None:
    with pytest.raises(ConfigError, match=named):
        parse_config(config)


def test_unknown_key_lists_the_known_ones() -> None:
    with pytest.raises(ConfigError) as error:
        parse_config({"lagg": 10})
    assert all(key in str(error.value) for key in KNOWN_KEYS)


def test_lower_bound_floors_to_the_granularity() -> None:
    src = World().source()
    assert lower_bound(None, src, "closed") is None
    assert lower_bound(tempfile_epoch_ms(s(20.412)), src, "closed") == Bound(s(20), True)
    assert lower_bound(tempfile_epoch_ms(s(20)), src, "open") == Bound(s(20), False)
    assert lower_bound(tempfile_epoch_ms(s(20.412)), src, "open") == Bound(s(20), True)


def _chain(exc: BaseException) -> Iterator[BaseException]:
    current: BaseException | None = exc
    while current is not None:
        yield current
        current = current.__cause__ or current.__context__


# --- the command -----------------------------------------------------------------------------

ADAPTER = [sys.executable, "-m", "fencepost", "adapter", "dlt"]


def test_bad_configuration_exits_2_naming_the_key() -> None:
    done = subprocess.run(
        [*ADAPTER, "--config", '{"lagg": 10}'],
        input="",
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2
    assert "lagg" in done.stderr and "write_disposition" in done.stderr
    assert "Traceback" not in done.stderr


def test_handshake_and_one_sync_through_the_command(tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [*ADAPTER, "--config", json.dumps(SAFE)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env={**os.environ, "TMPDIR": str(tmp_path)},
    )
    assert proc.stdin is not None and proc.stdout is not None

    def send(msg: dict[str, object]) -> None:
        assert proc.stdin is not None
        proc.stdin.write(json.dumps(msg) + "\n")
        proc.stdin.flush()

    def read() -> dict[str, Any]:
        assert proc.stdout is not None
        msg: dict[str, Any] = json.loads(proc.stdout.readline())
        return msg

    try:
        send({"type": "hello", "protocol": 1})
        hello = read()
        assert hello["type"] == "hello_ok" and hello["levels"] == ["sync"]
        assert hello["delivery"] == "exactly-once" and hello["name"].startswith("dlt 1.")
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
        send({"type": "sync", "id": 1, "worker": "t1", "now": s(31), "source": source})
        replies: dict[str, dict[str, object]] = {
            "read_state": {"state": None},
            "list_partitions": {"partitions": ["main"]},
            "query": {
                "rows": [{"id": "r30", "at": s(30.412)}],
                "next": None,
                "horizon": None,
            },
            "commit": {},
        }
        ops: list[dict[str, Any]] = []
        while (msg := read())["type"] == "call":
            ops.append(msg)
            send({"type": "reply", "call_id": msg["call_id"], "ok": True, **replies[msg["op"]]})
        assert [m["op"] for m in ops] == ["read_state", "list_partitions", "query", "commit"]
        assert ops[2]["lower"] is None and ops[2]["upper"] is None
        assert ops[3]["records"] == ["r30"] and ops[3]["mode"] == "merge"
        assert msg == {
            "type": "sync_ok",
            "id": 1,
            "outcome": "completed",
            "coverage": {"main": {"cut": {"at": s(20.412), "kind": "before"}, "plus": []}},
        }
        assert len(list(tmp_path.glob("fencepost-dlt-*"))) == 1  # dlt's private folders
        send({"type": "shutdown"})
        assert proc.wait(timeout=60) == 0
        assert list(tmp_path.iterdir()) == []  # removed at exit
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
