"""The publisher's guard against a store that went back (``impl/frontier_guard.py``).

A :class:`Replica` stands for a primary and a standby in memory: writes reach
both while replication runs, only the primary once it is cut, and ``failover()``
makes the standby the store. Each way the store can go back (a smaller revision,
another record at the same revision, an older epoch, a lower cut at a higher
revision) is refused before anything is written, sticky until ``forget``; the
teeth test shows the same publisher without the guard publishing a frontier below
the one it had published. Racing guarded publishers, lost responses and a reset
cutover to a lower cut never trip it. The same guard against real PostgreSQL
failovers: tests/postgres/test_failover.py.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

import pytest

from fencepost.impl.cuts import Cut
from fencepost.impl.faults import FaultyStore
from fencepost.impl.frontier_guard import FrontierGuard, StoreRegressed
from fencepost.impl.memory import MemoryStore
from fencepost.impl.orders import IntegerOrder
from fencepost.impl.publisher import Outcome, Policy, Publisher
from fencepost.impl.records import Checkpoint, Membership, PublicationRecord
from fencepost.impl.stores import PublicationWrite, StoreBehind

OFFSETS = IntegerOrder("offsets", successor_exact=True)
PARTITIONS = ("A", "B")


def members(epoch: int, partitions: Sequence[str] = PARTITIONS) -> Membership:
    return Membership(epoch, "q", {p: OFFSETS.name for p in partitions}, {OFFSETS.name: OFFSETS})


class Replica:
    """A primary and a standby (two memory stores): the publisher's store protocol, with
    every write applied to the standby too while ``streaming``."""

    def __init__(self) -> None:
        self.primary = MemoryStore()
        self.standby = MemoryStore()
        self.streaming = True
        self.current = self.primary

    def _both(self, write: str, *args: object) -> object:
        result = getattr(self.current, write)(*args)
        if self.streaming and self.current is self.primary:
            getattr(self.standby, write)(*args)
        return result

    def failover(self) -> None:
        self.streaming = False
        self.current = self.standby

    def create_stream(self, stream: str, membership: Membership) -> PublicationRecord:
        return self._both("create_stream", stream, membership)  # type: ignore[return-value]

    def write_membership(self, stream: str, membership: Membership) -> None:
        self._both("write_membership", stream, membership)

    def read_publication(self, stream: str) -> PublicationRecord:
        return self.current.read_publication(stream)

    def read_membership(self, stream: str, epoch: int | None = None) -> Membership:
        return self.current.read_membership(stream, epoch)

    def read_checkpoints(self, stream: str, epoch: int) -> Sequence[Checkpoint]:
        return self.current.read_checkpoints(stream, epoch)

    def write_publication(
        self, stream: str, expected_revision: int, epoch: int, cut: Cut, op_id: str
    ) -> PublicationWrite:
        return self._both(  # type: ignore[return-value]
            "write_publication", stream, expected_revision, epoch, cut, op_id
        )

    def certify(self, at: int, epoch: int = 1, partitions: Sequence[str] = PARTITIONS) -> None:
        """Every partition certified through ``at`` (on top of what the store holds)."""
        for p in partitions:
            current = self.current.read_checkpoint("s", epoch, p)
            expected = None if current is None else current.generation
            checkpoint = Checkpoint(p, Cut.through(at), "t", (expected or 0) + 1, "q", epoch)
            self._both("write_checkpoint", "s", expected, checkpoint)


def replica() -> Replica:
    store = Replica()
    store.create_stream("s", members(1))
    return store


def published(publisher: Publisher) -> PublicationRecord:
    result = publisher.attempt()
    assert result.outcome is Outcome.PUBLISHED, result
    assert result.record is not None
    return result.record


def test_a_guarded_publisher_refuses_a_store_that_went_back_before_writing() -> None:
    store = replica()
    guard = FrontierGuard()
    publisher = Publisher(store, "s", "w", guard=guard)
    store.certify(10)
    assert published(publisher).revision == 1  # replicated
    store.streaming = False  # asynchronous replication falls behind
    store.certify(20)
    seen = published(publisher)  # acknowledged by the primary alone
    assert (seen.revision, seen.cut) == (2, Cut.through(20))
    store.failover()
    store.certify(15)  # the standby's readers go on from what it has
    with pytest.raises(StoreRegressed) as caught:
        publisher.attempt()
    error = caught.value
    assert isinstance(error, StoreBehind)  # refused wherever a store behind is refused
    assert (error.seen, error.now.revision, error.problem) == (seen, 1, "revision 1 < 2")
    message = str(error)
    assert "saw revision 2 (epoch 1, through 20, written by w-2)" in message
    assert "now says revision 1 (epoch 1, through 10, written by w-1)" in message
    assert "1 acknowledged publication(s) are gone" in message
    assert "FrontierGuard.forget" in message
    assert store.read_publication("s").revision == 1  # nothing was written
    # Sticky: still refused once another publisher has moved the store past revision 2.
    other = Publisher(store, "s", "other")
    store.certify(25)
    assert published(other).revision == 2
    store.certify(30)
    assert published(other).revision == 3
    with pytest.raises(StoreRegressed, match="revision 1 < 2"):
        publisher.attempt()
    # The operator accepts the loss: the publisher starts afresh from the store.
    guard.forget("s")
    store.certify(35)
    assert published(publisher).revision == 4


def test_teeth_without_the_guard_the_same_publisher_publishes_below_what_it_published() -> None:
    store = replica()
    publisher = Publisher(store, "s", "w")
    store.certify(10)
    published(publisher)
    store.streaming = False
    store.certify(20)
    assert published(publisher).cut == Cut.through(20)
    store.failover()
    store.certify(15)
    again = published(publisher)
    assert (again.revision, again.cut) == (2, Cut.through(15))  # the frontier went back


def test_another_record_at_the_same_revision_is_a_fork() -> None:
    store = replica()
    publisher = Publisher(store, "s", "w", guard=FrontierGuard())
    store.certify(10)
    published(publisher)
    store.streaming = False
    store.certify(20)
    published(publisher)  # revision 2, through 20, lost below
    store.failover()
    store.certify(12)
    assert published(Publisher(store, "s", "other")).revision == 2  # revision 2 again
    with pytest.raises(StoreRegressed, match="another record at revision 2"):
        publisher.attempt()


def test_a_lower_cut_at_a_higher_revision_is_a_frontier_that_went_back() -> None:
    store = replica()
    publisher = Publisher(store, "s", "w", guard=FrontierGuard())
    store.certify(10)
    published(publisher)
    store.streaming = False
    store.certify(20)
    published(publisher)  # revision 2, through 20
    store.failover()
    other = Publisher(store, "s", "other")
    store.certify(12)
    published(other)
    store.certify(15)
    assert published(other).revision == 3  # past revision 2, still below through 20
    with pytest.raises(StoreRegressed, match=r"the cut through 15 is below through 20"):
        publisher.attempt()


def test_an_older_epoch_is_refused() -> None:
    guard = FrontierGuard()
    guard.observe("s", PublicationRecord(2, Cut.through(5), 3, "a"))
    with pytest.raises(StoreRegressed, match="epoch 1 < 2"):
        guard.observe("s", PublicationRecord(1, Cut.through(9), 4, "b"))


def test_streams_are_guarded_apart() -> None:
    guard = FrontierGuard()
    first = PublicationRecord(1, Cut.through(5), 3, "a")
    guard.observe("s", first)
    guard.observe("t", PublicationRecord(1, Cut.through(1), 1, "b"))  # another stream
    guard.observe("s", first)  # the same record again
    assert guard.seen("s") == first and guard.seen("nope") is None
    with pytest.raises(StoreRegressed):
        guard.observe("s", PublicationRecord(1, Cut.through(4), 2, "a"))
    guard.observe("t", PublicationRecord(1, Cut.through(2), 2, "c"))  # "s" refused, not "t"


def test_no_false_alarm_racing_publishers_lost_responses_and_a_reset_cutover() -> None:
    """Guarded publishers sharing a store that never goes back never refuse it: conflicts,
    lost responses before and after the write, and a reset cutover to a lower cut."""
    store = MemoryStore()
    store.create_stream("s", members(1))
    rng = random.Random(7)
    publishers = [
        Publisher(
            FaultyStore(store, seed, lose_after=0.1, lose_before=0.1),
            "s",
            f"w{seed}",
            Policy.RESET,
            guard=FrontierGuard(),
        )
        for seed in range(3)
    ]
    at = {p: 0 for p in PARTITIONS}
    epoch = 1
    outcomes: set[Outcome] = set()
    for step in range(400):
        if step == 200:  # reshard: a new epoch whose members start low
            epoch = 2
            store.write_membership("s", members(2, ("C", "D")))
            at = {"C": 0, "D": 0}
        partition = rng.choice(sorted(at))
        at[partition] += rng.randint(0, 3)
        current = store.read_checkpoint("s", epoch, partition)
        expected = None if current is None else current.generation
        checkpoint = Checkpoint(
            partition, Cut.through(at[partition]), "t", (expected or 0) + 1, "q", epoch
        )
        store.write_checkpoint("s", expected, checkpoint)
        for publisher in rng.sample(publishers, 2):
            outcomes.add(publisher.attempt().outcome)
    assert store.read_publication("s").epoch == 2
    assert {Outcome.PUBLISHED, Outcome.CONFIRMED, Outcome.UNCHANGED} <= outcomes
