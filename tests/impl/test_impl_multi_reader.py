"""MultiPartitionReader: many partitions, checkpoint writes committed in batches, still true.

Each pass is judged against the simulated source's ground truth (every stored
checkpoint covers only events with durable outcomes; nothing goes back), under
lost batch responses both ways, crashes before and after a batch with a restart
from the SQLite file, and readers racing on the same partitions. The settle rule
it shares with :class:`PartitionReader` is tested case by case.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import pytest
from impl_checks import Monotone, check_checkpoints_true, check_sound
from lengths import Length

from fencepost.impl.cuts import Cut, minimum, same_claim
from fencepost.impl.faults import Crash, FaultyStore
from fencepost.impl.memory import MemoryStore
from fencepost.impl.multi_reader import MultiPartitionReader
from fencepost.impl.orders import IntegerOrder
from fencepost.impl.provider import Claim, Page
from fencepost.impl.publisher import Publisher
from fencepost.impl.reader import Rewrite, Settled, settle_write
from fencepost.impl.records import Checkpoint, Membership
from fencepost.impl.simulated import SimulatedSource
from fencepost.impl.sqlite import SQLiteStore
from fencepost.impl.stores import (
    CheckpointApplied,
    CheckpointConflict,
    IndefiniteStoreError,
    StoreError,
)

OFFSETS = IntegerOrder("offsets", successor_exact=True)


def ok(event: object) -> str:
    return "ok"


class WriteCounter:
    """Counts the store's checkpoint transactions (single writes and batches)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.single = 0
        self.batches: list[int] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def write_checkpoint(self, *args: Any) -> Any:
        self.single += 1
        return self.inner.write_checkpoint(*args)

    def write_checkpoints(self, stream: str, writes: Any) -> Any:
        self.batches.append(len(writes))
        return self.inner.write_checkpoints(stream, writes)


def test_a_pass_certifies_every_partition_in_few_transactions(tmp_path: Path) -> None:
    source = SimulatedSource(seed=4, partitions=40, events=25, nonfinal_rate=0.3)
    store = SQLiteStore(tmp_path / "multi.db")
    store.create_stream("s", source.membership())
    counted = WriteCounter(store)
    reader = MultiPartitionReader(counted, source, "s", source.membership(), ok, batch_size=16)
    watch = Monotone(source.order)
    for _ in range(100):
        cuts = reader.run_pass(max_pages=3)
        check_checkpoints_true(store, "s", source, 1)
        watch.see(store, "s")
        if all(cuts[p] == source.final_cut(p) for p in source.partitions):
            break
    else:
        raise AssertionError("never caught up")
    assert counted.single == 0
    assert max(counted.batches) <= 16
    # one transaction carries many checkpoints: far fewer transactions than writes
    assert len(counted.batches) * 4 < sum(counted.batches)
    for p in source.partitions:
        stored = store.read_checkpoint("s", 1, p)
        assert stored is not None and stored.cut == source.final_cut(p)
    # caught up: a further pass writes nothing
    before = len(counted.batches)
    reader.run_pass()
    assert len(counted.batches) == before
    assert Publisher(store, "s", "w").attempt().cut == minimum(
        source.order, [source.final_cut(p) for p in source.partitions]
    )
    store.close()


def test_serves_a_subset_and_refuses_strangers() -> None:
    source = SimulatedSource(seed=2, partitions=4, events=5)
    store = MemoryStore()
    store.create_stream("s", source.membership())
    reader = MultiPartitionReader(store, source, "s", source.membership(), ok, partitions=["p001"])
    assert set(reader.run_pass()) == {"p001"}
    assert [c.partition for c in store.read_checkpoints("s", 1)] == ["p001"]
    with pytest.raises(ValueError, match="not members"):
        MultiPartitionReader(store, source, "s", source.membership(), ok, partitions=["zz"])
    with pytest.raises(ValueError, match="batch_size"):
        MultiPartitionReader(store, source, "s", source.membership(), ok, batch_size=0)


def test_only_final_claims_and_never_behind_the_stored_cut() -> None:
    m = Membership(1, "q", {"A": "offsets", "B": "offsets"}, {"offsets": OFFSETS})

    class Scripted:
        def fetch_page(self, partition: str, token: str | None) -> Page:
            claims = {
                "A": Claim(Cut.through(9), False),  # not final: never certified
                "B": Claim(Cut.before(3), True),  # behind B's stored cut
            }
            return Page((), None, claims[partition])

    store = MemoryStore()
    store.create_stream("s", m)
    store.write_checkpoint("s", None, Checkpoint("B", Cut.through(7), None, 1, "q", 1))
    cuts = MultiPartitionReader(store, Scripted(), "s", m, ok, save_progress=False).run_pass()
    assert cuts == {"A": Cut.nothing(), "B": Cut.through(7)}
    assert store.read_checkpoint("s", 1, "A") is None


# --- the settle rule ------------------------------------------------------------------------


def candidate(cut: Cut, generation: int = 2) -> Checkpoint:
    return Checkpoint("A", cut, "t", generation, "q", 1)


def test_settle_write_every_case() -> None:
    mine = candidate(Cut.before(5))
    stronger = candidate(Cut.through(9), 2)
    weaker = candidate(Cut.before(2), 2)
    assert settle_write(OFFSETS, mine, 1, CheckpointApplied(mine), None) == Settled(mine, "written")
    assert settle_write(OFFSETS, mine, 1, None, mine) == Settled(
        mine, "written_after_lost_response"
    )
    not_applied = candidate(Cut.before(1), 1)
    assert settle_write(OFFSETS, mine, 1, None, not_applied) == Rewrite(
        1, "write_not_applied", mine.cut
    )
    assert settle_write(OFFSETS, mine, 1, CheckpointConflict(stronger), None) == Settled(
        stronger, "kept_newer_checkpoint"
    )
    assert settle_write(OFFSETS, mine, 1, CheckpointConflict(weaker), None) == Rewrite(
        2, "rewrite_on_newer_generation", mine.cut
    )
    assert settle_write(OFFSETS, mine, 1, CheckpointConflict(None), None) == Rewrite(
        None, "rewrite_on_newer_generation", mine.cut
    )
    # lost, and another writer moved it past us meanwhile: theirs stays
    assert settle_write(OFFSETS, mine, 1, None, candidate(Cut.through(9), 3)) == Settled(
        candidate(Cut.through(9), 3), "kept_newer_checkpoint"
    )


# --- faults: lost batch responses, crashes around batches, racing readers -------------------


def run_with_faults(tmp_path: Path, seed: int, *, crash: bool) -> tuple[int, int]:
    """Readers and a publisher under faults until the final frontier is published.

    Returns (crashes, lost batch responses). After every step every stored
    checkpoint is true, nothing goes back, the record is sound.
    """
    source = SimulatedSource(seed=seed, partitions=12, events=30, nonfinal_rate=0.3)
    path = tmp_path / f"faults-{seed}.db"
    setup = SQLiteStore(path)
    setup.create_stream("s", source.membership())
    setup.close()
    target = minimum(source.order, [source.final_cut(p) for p in source.partitions])
    watch = Monotone(source.order)
    crashes = lost = 0
    for restart in range(200):
        store = FaultyStore(
            SQLiteStore(path),
            seed=seed * 1000 + restart,
            lose_after=0.15,
            lose_before=0.15,
            crash_before=0.04 if crash else 0.0,
            crash_after=0.04 if crash else 0.0,
            ops={"write_checkpoints", "read_checkpoints", "write_publication"},
        )
        reader = MultiPartitionReader(
            store, source, "s", source.membership(), ok, batch_size=5, max_retries=2
        )
        publisher = Publisher(store, "s", f"w{restart}")
        try:
            for _ in range(60):
                # past the budget the pass stops; the next one starts from durable state
                with contextlib.suppress(IndefiniteStoreError):
                    reader.run_pass(max_pages=2)
                publisher.attempt()
                check_sound(store.inner, "s", source)
                check_checkpoints_true(store.inner, "s", source, 1)
                watch.see(store.inner, "s")
                if same_claim(source.order, store.inner.read_publication("s").cut, target):
                    lost += len(store.faults(op="write_checkpoints"))
                    store.close()
                    return crashes, lost
        except Crash:
            crashes += 1
            lost += len(store.faults(op="write_checkpoints"))
            store.close()  # the process died: only the file survives
            check_checkpoints_true(SQLiteStore(path), "s", source, 1)
    raise AssertionError("never reached the final frontier")


def test_lost_batch_responses_are_settled_by_rereading(tmp_path: Path) -> None:
    crashes, lost = run_with_faults(tmp_path, seed=3, crash=False)
    assert crashes == 0 and lost >= 5


def test_crashes_before_and_after_a_batch_restart_from_the_file(tmp_path: Path) -> None:
    crashes, lost = run_with_faults(tmp_path, seed=8, crash=True)
    assert crashes >= 2 and lost >= 3


@pytest.mark.slow
def test_faults_many_seeds(tmp_path: Path, length: Length) -> None:
    for seed in range(length.pick(full=12, bounded=6)):
        run_with_faults(tmp_path, seed, crash=seed % 2 == 1)


class LoseFirstBatch(WriteCounter):
    """The first batch's response is lost, after (``applied``) or before it was applied."""

    def __init__(self, inner: Any, applied: bool) -> None:
        super().__init__(inner)
        self.applied = applied

    def write_checkpoints(self, stream: str, writes: Any) -> Any:
        first = not self.batches
        result = super().write_checkpoints(stream, writes) if self.applied or not first else None
        if not self.applied and first:
            self.batches[-1:] = []  # never reached the store
            self.batches.append(0)
        if first:
            raise IndefiniteStoreError("injected: the batch's response was lost")
        return result


@pytest.mark.parametrize("applied", [True, False], ids=["applied", "not-applied"])
def test_a_lost_batch_is_settled_by_one_reread(applied: bool) -> None:
    source = SimulatedSource(seed=5, partitions=6, events=4, empty_rate=0.0, nonfinal_rate=0.0)
    inner = MemoryStore()
    inner.create_stream("s", source.membership())
    store = LoseFirstBatch(inner, applied)
    reader = MultiPartitionReader(store, source, "s", source.membership(), ok, save_progress=False)
    cuts = reader.run_pass(max_pages=1)
    stored = {c.partition: c for c in inner.read_checkpoints("s", 1)}
    assert stored and {p: c.cut for p, c in stored.items()} == {p: cuts[p] for p in stored}
    if applied:
        assert len(store.batches) == 1  # the reread showed every write in place: never resent
    else:
        assert store.batches == [0, len(stored)]  # nothing applied: written again, once
    assert all(c.generation == 1 for c in stored.values())
    check_checkpoints_true(inner, "s", source, 1)


def test_racing_readers_never_overwrite_a_stronger_checkpoint() -> None:
    source = SimulatedSource(seed=9, partitions=8, events=30, nonfinal_rate=0.2)
    store = MemoryStore()
    store.create_stream("s", source.membership())
    m = source.membership()
    fast = MultiPartitionReader(store, source, "s", m, ok, batch_size=3, save_progress=False)
    slow = MultiPartitionReader(store, source, "s", m, ok, batch_size=5)
    watch = Monotone(source.order)
    for round_ in range(200):
        (fast if round_ % 3 else slow).run_pass(max_pages=1 + round_ % 2)
        check_checkpoints_true(store, "s", source, 1)
        watch.see(store, "s")
    for p in source.partitions:
        stored = store.read_checkpoint("s", 1, p)
        assert stored is not None and stored.cut == source.final_cut(p)


def test_a_store_error_past_the_budget_stops_the_pass_keeping_what_is_stored() -> None:
    source = SimulatedSource(seed=1, partitions=3, events=5)
    inner = MemoryStore()
    inner.create_stream("s", source.membership())
    store = FaultyStore(inner, lose_before=1.0, ops={"write_checkpoints", "read_checkpoints"})
    reader = MultiPartitionReader(store, source, "s", source.membership(), ok, max_retries=1)
    with pytest.raises(StoreError):
        reader.run_pass()
    assert inner.read_checkpoints("s", 1) == []
