"""FaultyStore: seeded, recorded, replayable faults; and crash + restart from a SQLite file."""

from __future__ import annotations

import contextlib
from pathlib import Path

import pytest
from impl_checks import Monotone, check_checkpoints_true, check_sound
from lengths import Length

from fencepost.impl.cuts import Cut, minimum, same_claim
from fencepost.impl.faults import Crash, FaultKind, FaultyStore
from fencepost.impl.memory import MemoryStore
from fencepost.impl.orders import IntegerOrder
from fencepost.impl.publisher import Outcome, Publisher
from fencepost.impl.reader import PartitionReader
from fencepost.impl.records import Membership, PublicationRecord
from fencepost.impl.simulated import SimulatedSource
from fencepost.impl.sqlite import SQLiteStore
from fencepost.impl.stores import IndefiniteStoreError, StoreError

ORDER = IntegerOrder("offsets", successor_exact=True)
MEMBERS = Membership(1, "q", {"A": "offsets"}, {"offsets": ORDER})


def fresh() -> MemoryStore:
    store = MemoryStore()
    store.create_stream("s", MEMBERS)
    return store


def test_lose_after_applies_and_lose_before_does_not() -> None:
    inner = fresh()
    faulty = FaultyStore(inner, plan={0: FaultKind.LOSE_AFTER, 1: FaultKind.LOSE_BEFORE})
    with pytest.raises(IndefiniteStoreError):
        faulty.write_publication("s", 0, 1, Cut.through(1), "w-1")
    assert inner.read_publication("s").op_id == "w-1"
    with pytest.raises(IndefiniteStoreError):
        faulty.write_publication("s", 1, 1, Cut.through(2), "w-2")
    assert inner.read_publication("s").op_id == "w-1"
    assert [(e.call, e.op, e.kind) for e in faulty.events] == [
        (0, "write_publication", FaultKind.LOSE_AFTER),
        (1, "write_publication", FaultKind.LOSE_BEFORE),
    ]


def test_crash_is_not_a_store_error_and_may_come_after_applying() -> None:
    assert not issubclass(Crash, Exception) and not issubclass(Crash, StoreError)
    inner = fresh()
    faulty = FaultyStore(inner, plan={0: FaultKind.CRASH_AFTER, 1: FaultKind.CRASH_BEFORE})
    with pytest.raises(Crash):
        faulty.record_outcome("s", "e1", "ok")
    with pytest.raises(Crash):
        faulty.record_outcome("s", "e2", "ok")
    assert inner.outcomes("s", ["e1", "e2"]) == {"e1": "ok"}


def test_delay_sleeps_then_performs() -> None:
    slept: list[float] = []
    faulty = FaultyStore(fresh(), seed=1, delay=1.0, max_delay=0.5, sleep=slept.append)
    assert faulty.read_publication("s") == PublicationRecord(1)
    assert len(slept) == 1 and 0.0 <= slept[0] <= 0.5 and faulty.events[0].delay == slept[0]


def test_same_seed_same_faults() -> None:
    def run(seed: int) -> list[tuple[int, str, FaultKind]]:
        faulty = FaultyStore(fresh(), seed=seed, lose_after=0.2, lose_before=0.2)
        for i in range(50):
            with contextlib.suppress(IndefiniteStoreError):
                faulty.record_outcome("s", f"e{i}", "ok")
        return [(e.call, e.op, e.kind) for e in faulty.events]

    assert run(7) == run(7)
    assert run(7) != run(8)
    assert 10 < len(run(7)) < 30


def test_ops_filter_and_disable() -> None:
    faulty = FaultyStore(fresh(), lose_before=1.0, ops={"write_publication"})
    faulty.read_publication("s")
    faulty.enabled = False
    faulty.write_publication("s", 0, 1, Cut.through(1), "w-1")
    faulty.enabled = True
    with pytest.raises(IndefiniteStoreError):
        faulty.write_publication("s", 1, 1, Cut.through(2), "w-2")
    assert len(faulty.faults(FaultKind.LOSE_BEFORE, "write_publication")) == 1


def test_bad_rates_are_refused() -> None:
    with pytest.raises(ValueError, match="lose_after"):
        FaultyStore(fresh(), lose_after=1.5)
    with pytest.raises(ValueError, match="more than 1"):
        FaultyStore(fresh(), lose_after=0.6, crash_before=0.6)
    with pytest.raises(ValueError, match="unknown store operations"):
        FaultyStore(fresh(), ops={"write_everything"})


def crash_and_restart(tmp_path: Path, seed: int, rounds_limit: int = 400) -> tuple[int, int]:
    """Readers and a publisher over FaultyStore(SQLite); every Crash reopens the file.

    After every step the durable state is judged against the ground truth:
    the record is sound and never goes back, checkpoints are true and never go
    back. Returns (crashes, lost responses) injected.
    """
    source = SimulatedSource(seed=seed, partitions=3, events=40, timeout_rate=0.05)
    path = tmp_path / f"crash-{seed}.db"
    setup = SQLiteStore(path)
    setup.create_stream("s", source.membership())
    setup.close()
    target = minimum(source.order, [source.final_cut(p) for p in source.partitions])
    watch = Monotone(source.order)
    crashes = lost = 0
    for restart in range(rounds_limit):
        store = FaultyStore(
            SQLiteStore(path),
            seed=seed * 1000 + restart,
            lose_after=0.04,
            lose_before=0.04,
            crash_before=0.01,
            crash_after=0.01,
        )
        membership = store.inner.read_membership("s")
        readers = [
            PartitionReader(
                store, source, "s", p, 1, membership.scope, source.order, lambda e: "ok"
            )
            for p in source.partitions
        ]
        publisher = Publisher(store, "s", f"w{restart}")
        try:
            for _ in range(rounds_limit):
                for r in readers:
                    try:
                        r.run_pass(max_pages=2)
                    except (IndefiniteStoreError, Exception) as exc:
                        if not isinstance(exc, (IndefiniteStoreError,)) and "timeout" not in str(
                            exc
                        ):
                            raise
                result = publisher.attempt()
                assert result.outcome is not Outcome.WITHHELD or result.reason is not None
                check_sound(store.inner, "s", source)
                check_checkpoints_true(store.inner, "s", source, 1)
                watch.see(store.inner, "s")
                record = store.inner.read_publication("s")
                if same_claim(source.order, record.cut, target):
                    lost += len(store.faults(FaultKind.LOSE_AFTER)) + len(
                        store.faults(FaultKind.LOSE_BEFORE)
                    )
                    store.close()
                    return crashes, lost
        except Crash:
            crashes += 1
            lost += len(store.faults(FaultKind.LOSE_AFTER)) + len(
                store.faults(FaultKind.LOSE_BEFORE)
            )
            store.close()  # the process died: only the file survives
            continue
    raise AssertionError("never reached the final frontier")


def test_crash_and_restart_from_the_sqlite_file(tmp_path: Path) -> None:
    crashes, lost = crash_and_restart(tmp_path, seed=5)
    assert crashes >= 3 and lost >= 5  # the schedule really was hostile


@pytest.mark.slow
def test_crash_and_restart_many_seeds(tmp_path: Path, length: Length) -> None:
    for seed in range(length.pick(full=20, bounded=10)):
        crash_and_restart(tmp_path, seed)
