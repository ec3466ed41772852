"""The store contract: every guarantee of the Protocol docstrings in impl/stores.py.

One suite, run against every backend of ``STORE_BACKENDS`` (tests/store_backends.py). The
central checks are plain functions taking a factory, so the teeth tests at the
bottom can run them against deliberately broken stores and watch them fail.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest
from store_backends import StoreFactory

from fencepost.impl.cuts import NOTHING, Cut
from fencepost.impl.errors import InvalidValue
from fencepost.impl.memory import MemoryStore
from fencepost.impl.orders import IntegerOrder, Order, StringOrder
from fencepost.impl.records import Checkpoint, Finality, Membership, PublicationRecord
from fencepost.impl.stores import (
    Applied,
    CheckpointApplied,
    CheckpointConflict,
    Conflict,
    DefiniteStoreError,
    Store,
    UnknownStream,
)

OFFSETS = IntegerOrder("offsets", successor_exact=True)
TIMES = IntegerOrder("ts", successor_exact=False)
NAMES = StringOrder("names")


def membership(
    epoch: int = 1, partitions: tuple[str, ...] = ("A", "B"), order: Order = OFFSETS
) -> Membership:
    return Membership(epoch, "q1", {p: order.name for p in partitions}, {order.name: order})


def checkpoint(
    partition: str = "A",
    cut: Cut = NOTHING,
    epoch: int = 1,
    generation: int = 1,
    token: str | None = "t",
    scope: str = "q1",
    finality: Finality = Finality.FINAL,
) -> Checkpoint:
    return Checkpoint(partition, cut, token, generation, scope, epoch, finality)


# --- checks shared with the teeth tests ------------------------------------------------


def check_conditional_publication(factory: Callable[[], Store]) -> None:
    store = factory()
    store.create_stream("s", membership())
    first = store.write_publication("s", 0, 1, Cut.before(10), "w1-1")
    assert first == Applied(PublicationRecord(1, Cut.before(10), 1, "w1-1"))
    stale = store.write_publication("s", 0, 1, Cut.through(99), "w2-1")
    assert stale == Conflict(PublicationRecord(1, Cut.before(10), 1, "w1-1"))
    assert store.read_publication("s") == PublicationRecord(1, Cut.before(10), 1, "w1-1")


def check_checkpoint_fencing(factory: Callable[[], Store]) -> None:
    store = factory()
    store.create_stream("s", membership())
    one = store.write_checkpoint("s", None, checkpoint(cut=Cut.before(5), generation=7))
    assert one == CheckpointApplied(checkpoint(cut=Cut.before(5), generation=1))
    two = store.write_checkpoint("s", 1, checkpoint(cut=Cut.through(9), generation=2))
    assert isinstance(two, CheckpointApplied) and two.checkpoint.generation == 2
    late = store.write_checkpoint("s", 1, checkpoint(cut=Cut.before(6), generation=2))
    assert late == CheckpointConflict(checkpoint(cut=Cut.through(9), generation=2))
    again = store.write_checkpoint("s", None, checkpoint(cut=Cut.before(1)))
    assert again == CheckpointConflict(checkpoint(cut=Cut.through(9), generation=2))
    assert store.read_checkpoint("s", 1, "A") == checkpoint(cut=Cut.through(9), generation=2)


def check_outcome_first_wins(factory: Callable[[], Store]) -> None:
    store = factory()
    store.create_stream("s", membership())
    assert store.record_outcome("s", "e1", "ok") == "ok"
    assert store.record_outcome("s", "e1", "failed") == "ok"
    assert store.outcomes("s", ["e1", "e2"]) == {"e1": "ok"}


def check_epoch_rules(factory: Callable[[], Store]) -> None:
    store = factory()
    store.create_stream("s", membership(1))
    store.write_membership("s", membership(3, ("A", "B", "C")))
    with pytest.raises(DefiniteStoreError):
        store.write_membership("s", membership(2))
    with pytest.raises(DefiniteStoreError):
        store.write_membership("s", membership(3, ("A",)))
    assert store.read_membership("s") == membership(3, ("A", "B", "C"))


def check_one_winner_per_revision(factory: Callable[[], Store], threads: int = 6) -> None:
    setup = factory()
    setup.create_stream("s", membership())
    handles = [factory() for _ in range(threads)]
    rounds = 8
    wins: list[tuple[int, str]] = []
    lock = threading.Lock()
    barrier = threading.Barrier(threads)

    def writer(index: int) -> None:
        store = handles[index]
        for r in range(rounds):
            barrier.wait()
            seen = store.read_publication("s").revision
            barrier.wait()  # everyone has read the same revision before anyone writes
            op = f"w{index}-{r}"
            result = store.write_publication("s", seen, 1, Cut.through(r), op)
            if isinstance(result, Applied):
                with lock:
                    wins.append((seen, op))
            else:
                assert result.record.revision == seen + 1

    workers = [threading.Thread(target=writer, args=(i,)) for i in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    revisions = [seen for seen, _ in wins]
    assert sorted(revisions) == list(range(rounds)), wins
    final = setup.read_publication("s")
    assert final.revision == rounds
    assert final.op_id == next(op for seen, op in wins if seen == rounds - 1)


# --- the suite, per backend --------------------------------------------------------------


def test_create_stream_starts_the_record_and_is_idempotent(store: Store) -> None:
    assert store.create_stream("s", membership(4)) == PublicationRecord(4, NOTHING, 0, None)
    assert store.create_stream("s", membership(4)) == PublicationRecord(4, NOTHING, 0, None)
    assert store.read_publication("s") == PublicationRecord(4, NOTHING, 0, None)
    assert store.read_membership("s") == membership(4)
    with pytest.raises(DefiniteStoreError, match="another first membership"):
        store.create_stream("s", membership(4, ("A",)))


def test_create_stream_stays_idempotent_after_a_new_epoch(store: Store) -> None:
    store.create_stream("s", membership(1))
    store.write_membership("s", membership(2, ("A", "C")))
    store.write_publication("s", 0, 1, Cut.before(3), "w-1")
    assert store.create_stream("s", membership(1)) == PublicationRecord(1, Cut.before(3), 1, "w-1")


def test_unknown_stream_is_refused_everywhere(store: Store) -> None:
    calls: list[Callable[[], object]] = [
        lambda: store.read_publication("nope"),
        lambda: store.write_publication("nope", 0, 1, NOTHING, "w-1"),
        lambda: store.read_membership("nope"),
        lambda: store.write_membership("nope", membership()),
        lambda: store.read_checkpoint("nope", 1, "A"),
        lambda: store.read_checkpoints("nope", 1),
        lambda: store.write_checkpoint("nope", None, checkpoint()),
        lambda: store.record_outcome("nope", "e", "ok"),
        lambda: store.outcomes("nope", ["e"]),
    ]
    for call in calls:
        with pytest.raises(UnknownStream, match="create_stream"):
            call()


def test_conditional_publication(store_factory: StoreFactory) -> None:
    check_conditional_publication(store_factory)


def test_publication_store_checks_only_the_revision(store: Store) -> None:
    """Soundness and monotonicity are the publisher's job: the store accepts a lower cut."""
    store.create_stream("s", membership())
    store.write_publication("s", 0, 1, Cut.through(50), "w-1")
    lower = store.write_publication("s", 1, 1, Cut.before(2), "w-2")
    assert lower == Applied(PublicationRecord(1, Cut.before(2), 2, "w-2"))


def test_conflict_returns_the_current_record_after_many_writes(store: Store) -> None:
    store.create_stream("s", membership())
    for revision in range(5):
        assert isinstance(
            store.write_publication("s", revision, 1, Cut.before(revision), f"w-{revision}"),
            Applied,
        )
    result = store.write_publication("s", 2, 1, Cut.through(100), "late-1")
    assert result == Conflict(PublicationRecord(1, Cut.before(4), 5, "w-4"))


def test_bad_publication_arguments_are_refused(store: Store) -> None:
    store.create_stream("s", membership())
    with pytest.raises(InvalidValue, match="expected_revision"):
        store.write_publication("s", True, 1, NOTHING, "w-1")
    with pytest.raises(InvalidValue, match="expected_revision"):
        store.write_publication("s", -1, 1, NOTHING, "w-1")
    with pytest.raises(InvalidValue, match="op_id"):
        store.write_publication("s", 0, 1, NOTHING, "")
    assert store.read_publication("s").revision == 0


def test_membership_epochs_only_increase(store_factory: StoreFactory) -> None:
    check_epoch_rules(store_factory)


def test_membership_reads_by_epoch(store: Store) -> None:
    store.create_stream("s", membership(1))
    store.write_membership("s", membership(2, ("A", "B", "C")))
    store.write_membership("s", membership(2, ("A", "B", "C")))  # idempotent retry
    store.write_membership("s", membership(1))  # idempotent even once superseded
    assert store.read_membership("s", 1) == membership(1)
    assert store.read_membership("s", 2) == membership(2, ("A", "B", "C"))
    assert store.read_membership("s") == membership(2, ("A", "B", "C"))
    with pytest.raises(DefiniteStoreError, match="epoch 7"):
        store.read_membership("s", 7)


def test_membership_with_several_orders_round_trips(store: Store) -> None:
    mixed = Membership(
        5,
        "q9",
        {"A": "offsets", "B": "names", "C": "ts"},
        {o.name: o for o in (OFFSETS, NAMES, TIMES)},
    )
    store.create_stream("s", mixed)
    assert store.read_membership("s") == mixed


def test_checkpoint_generation_fencing(store_factory: StoreFactory) -> None:
    check_checkpoint_fencing(store_factory)


def test_checkpoint_conflict_when_none_exists(store: Store) -> None:
    store.create_stream("s", membership())
    assert store.write_checkpoint("s", 3, checkpoint()) == CheckpointConflict(None)
    assert store.read_checkpoint("s", 1, "A") is None


def test_checkpoint_needs_a_durable_membership_naming_the_partition(store: Store) -> None:
    store.create_stream("s", membership(1))
    with pytest.raises(DefiniteStoreError, match="no membership for epoch 2"):
        store.write_checkpoint("s", None, checkpoint(epoch=2))
    with pytest.raises(DefiniteStoreError, match="not a member"):
        store.write_checkpoint("s", None, checkpoint(partition="Z"))
    with pytest.raises(DefiniteStoreError, match="does not fit its order"):
        store.write_checkpoint("s", None, checkpoint(cut=Cut.before("x")))
    assert store.read_checkpoints("s", 1) == []


def test_checkpoints_are_keyed_by_epoch_and_listed_in_partition_order(store: Store) -> None:
    store.create_stream("s", membership(1, ("b", "A", "C")))
    store.write_membership("s", membership(2, ("b", "A")))
    for partition in ("C", "b", "A"):
        store.write_checkpoint("s", None, checkpoint(partition, Cut.through(10)))
    store.write_checkpoint("s", None, checkpoint("A", Cut.before(2), epoch=2))
    assert [c.partition for c in store.read_checkpoints("s", 1)] == ["A", "C", "b"]
    assert store.read_checkpoints("s", 2) == [checkpoint("A", Cut.before(2), epoch=2)]
    assert store.read_checkpoint("s", 1, "A") == checkpoint("A", Cut.through(10))
    assert store.read_checkpoints("s", 3) == []


def test_checkpoint_fields_round_trip(store: Store) -> None:
    store.create_stream("s", membership())
    odd = checkpoint(
        cut=Cut.through(-4), token=None, scope="other-scope", finality=Finality.PROVISIONAL
    )
    store.write_checkpoint("s", None, odd)
    assert store.read_checkpoint("s", 1, "A") == odd


def test_outcomes_first_durable_outcome_wins(store_factory: StoreFactory) -> None:
    check_outcome_first_wins(store_factory)


def test_outcomes_lookup_of_many_ids(store: Store) -> None:
    store.create_stream("s", membership())
    for i in range(0, 1200, 2):
        store.record_outcome("s", f"e{i}", f"out{i}")
    found = store.outcomes("s", [f"e{i}" for i in range(1200)])
    assert found == {f"e{i}": f"out{i}" for i in range(0, 1200, 2)}


HUGE = [
    10**128 + 7,  # a 129-digit Kinesis sequence number
    -(10**40),
    2**64 + 1,
    10**5000 + 3,  # past Python's default decimal conversion limit
]


@pytest.mark.parametrize("at", HUGE, ids=["129-digits", "negative", "2^64+1", "5001-digits"])
def test_huge_integer_coordinates_round_trip_exactly(store_factory: StoreFactory, at: int) -> None:
    store = store_factory()
    store.create_stream("s", membership())
    store.write_publication("s", 0, 1, Cut.before(at), "w-1")
    store.write_checkpoint("s", None, checkpoint(cut=Cut.through(at)))
    if store_factory.durable:
        store.close()
        store = store_factory()
    assert store.read_publication("s").cut == Cut.before(at)
    stored = store.read_checkpoint("s", 1, "A")
    assert stored is not None and stored.cut == Cut.through(at) and type(stored.cut.at) is int


UNICODE = ["", "naïve", "日本語", "emoji 🎉 + combining é", "nul \x00 inside", "'; DROP x; --"]


@pytest.mark.parametrize("text", UNICODE)
def test_unicode_strings_round_trip_exactly(store_factory: StoreFactory, text: str) -> None:
    store = store_factory()
    names = Membership(1, "scope ✓", {"ключ": "names"}, {"names": NAMES})
    store.create_stream("stream ✓", names)
    store.write_publication("stream ✓", 0, 1, Cut.through(text), "w ✓-1")
    stored_cp = Checkpoint("ключ", Cut.before(text), f"tok {text}", 1, "scope ✓", 1)
    store.write_checkpoint("stream ✓", None, stored_cp)
    store.record_outcome("stream ✓", f"id {text}", f"out {text}")
    if store_factory.durable:
        store.close()
        store = store_factory()
    assert store.read_publication("stream ✓") == PublicationRecord(1, Cut.through(text), 1, "w ✓-1")
    assert store.read_checkpoint("stream ✓", 1, "ключ") == stored_cp
    assert store.outcomes("stream ✓", [f"id {text}"]) == {f"id {text}": f"out {text}"}
    assert store.read_membership("stream ✓") == names


def test_unstorable_strings_are_refused_by_name(store: Store) -> None:
    store.create_stream("s", membership())
    with pytest.raises(InvalidValue, match="event_id"):
        store.record_outcome("s", "bad \udc80", "ok")
    with pytest.raises(InvalidValue, match=r"checkpoint\.token"):
        store.write_checkpoint("s", None, checkpoint(token="bad \udc80"))


@pytest.mark.durable
def test_state_survives_reopen(store_factory: StoreFactory) -> None:
    assert store_factory.durable, f"{store_factory.name} keeps nothing across a reopen"
    store = store_factory()
    store.create_stream("s", membership(1))
    store.write_membership("s", membership(2, ("A", "C")))
    store.write_publication("s", 0, 2, Cut.through(7), "w-1")
    store.write_checkpoint("s", None, checkpoint("C", Cut.before(9), epoch=2))
    store.record_outcome("s", "e1", "done")
    store.close()
    again = store_factory()
    assert again.read_publication("s") == PublicationRecord(2, Cut.through(7), 1, "w-1")
    assert again.read_membership("s") == membership(2, ("A", "C"))
    assert again.read_membership("s", 1) == membership(1)
    assert again.read_checkpoints("s", 2) == [checkpoint("C", Cut.before(9), epoch=2)]
    assert again.outcomes("s", ["e1"]) == {"e1": "done"}


def test_concurrent_writers_exactly_one_winner_per_revision(store_factory: StoreFactory) -> None:
    check_one_winner_per_revision(store_factory)


def test_concurrent_checkpoint_writers_exactly_one_winner_per_generation(
    store_factory: StoreFactory,
) -> None:
    setup = store_factory()
    setup.create_stream("s", membership())
    threads = 5
    handles = [store_factory() for _ in range(threads)]
    barrier = threading.Barrier(threads)
    wins: list[int | None] = []
    lock = threading.Lock()

    def writer(index: int) -> None:
        store = handles[index]
        for r in range(6):
            barrier.wait()
            current = store.read_checkpoint("s", 1, "A")
            expected = None if current is None else current.generation
            barrier.wait()
            result = store.write_checkpoint("s", expected, checkpoint(cut=Cut.through(r)))
            if isinstance(result, CheckpointApplied):
                with lock:
                    wins.append(expected)

    workers = [threading.Thread(target=writer, args=(i,)) for i in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert sorted(wins, key=lambda g: -1 if g is None else g) == [None, 1, 2, 3, 4, 5]
    final = setup.read_checkpoint("s", 1, "A")
    assert final is not None and final.generation == 6


def test_closed_store_refuses_calls(store_factory: StoreFactory) -> None:
    store = store_factory()
    store.create_stream("s", membership())
    store.close()
    if store_factory.name == "memory":
        with pytest.raises(DefiniteStoreError, match="closed"):
            store.read_publication("s")
    else:
        with pytest.raises(DefiniteStoreError):
            store.read_publication("s")


# --- teeth: the checks above fail on broken stores ------------------------------------


class NoRevisionCheck(MemoryStore):
    """Applies every publication write, whatever revision it read (a lost update)."""

    def write_publication(self, stream, expected_revision, epoch, cut, op_id):  # type: ignore[no-untyped-def]
        current = self.read_publication(stream)
        return super().write_publication(stream, current.revision, epoch, cut, op_id)


class LastOutcomeWins(MemoryStore):
    """Overwrites outcomes: a replayed event changes a durable outcome."""

    def record_outcome(self, stream, event_id, outcome):  # type: ignore[no-untyped-def]
        self._streams[stream].outcomes[event_id] = outcome
        return outcome


class NoGenerationCheck(MemoryStore):
    """Lets a late retry overwrite a newer checkpoint."""

    def write_checkpoint(self, stream, expected_generation, checkpoint):  # type: ignore[no-untyped-def]
        current = self.read_checkpoint(stream, checkpoint.epoch, checkpoint.partition)
        expected = None if current is None else current.generation
        return super().write_checkpoint(stream, expected, checkpoint)


class EpochsAnyOrder(MemoryStore):
    """Accepts a membership for an older epoch."""

    def write_membership(self, stream, membership):  # type: ignore[no-untyped-def]
        with self._lock:
            self._streams[stream].memberships[membership.epoch] = membership


@pytest.mark.parametrize(
    ("broken", "check"),
    [
        (NoRevisionCheck, check_conditional_publication),
        (NoRevisionCheck, check_one_winner_per_revision),
        (LastOutcomeWins, check_outcome_first_wins),
        (NoGenerationCheck, check_checkpoint_fencing),
        (EpochsAnyOrder, check_epoch_rules),
    ],
    ids=["lost-update", "two-winners", "last-outcome-wins", "late-retry-overwrites", "old-epoch"],
)
def test_contract_checks_catch_broken_stores(
    broken: type[MemoryStore], check: Callable[[Callable[[], Store]], None]
) -> None:
    shared = broken()
    with pytest.raises((AssertionError, pytest.fail.Exception)):
        check(lambda: shared)
