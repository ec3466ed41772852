"""A publisher's own check that the store never goes back: :class:`FrontierGuard`.

A store cannot tell by itself that it lost acknowledged writes: a PostgreSQL
standby promoted after asynchronous replication, a restored backup or a SQLite
write-ahead log with a damaged frame each open as a consistent, *earlier* state
(docs/postgres.md, "Failover"; docs/robustness.md, "A store that went back").
Whoever saw a later state can tell. The guard is that memory, kept per stream by
the publisher that holds it (``Publisher(..., guard=FrontierGuard())``): every
publication record the store answers (a read, an applied write, the record a
conflict returns, the reread after a lost response) is compared with the
furthest record seen before, and the publisher refuses to go on when the store:

- shows a **smaller revision** (every accepted write raises it by one, so a
  smaller one means accepted writes are gone);
- shows **another record at the same revision** (the history forked: the writes
  were lost and others took their revision numbers);
- shows an **older epoch** (the record's epoch never goes back);
- shows, in the **same epoch, a cut below** the one seen (the published frontier
  went back, whatever the revision says: the fork was overtaken).

Then :class:`StoreRegressed` is raised (a :class:`~fencepost.impl.stores.StoreBehind`,
so a caller that already refuses a store behind a known revision refuses this too),
naming what was seen and what the store says now, *before* anything is written.
The refusal is sticky: every later observation of that stream raises the same
error, because a store that lost acknowledged publications stays suspect even
once its revisions pass the old ones. :meth:`FrontierGuard.forget` clears it,
for the operator who decided the loss is acceptable.

What it cannot see: a regression that happened before this process's first read,
and one that no later read of this process meets (keep the last revision
somewhere else and check it with :func:`~fencepost.impl.stores.require_not_behind`
at start-up for that). It is not a substitute for a store that keeps what it
acknowledged: with asynchronous replication the lost publications stay lost and
downstream readers may already have acted on them.

Cost: one comparison of revisions per record answered, one cut comparison when
the epoch's order is known; memory: one record and one order per stream and epoch
seen. Thread-safe: one guard may be shared by several publishers of a process.
"""

from __future__ import annotations

import threading

from fencepost.impl.cuts import compare_cuts
from fencepost.impl.errors import InvalidValue
from fencepost.impl.orders import Order
from fencepost.impl.records import Membership, PublicationRecord
from fencepost.impl.stores import StoreBehind


def describe(record: PublicationRecord) -> str:
    """A record in words: ``revision 7 (epoch 1, through 41, written by pub-3)``."""
    writer = "no writer" if record.op_id is None else f"written by {record.op_id}"
    return f"revision {record.revision} (epoch {record.epoch}, {record.cut}, {writer})"


class StoreRegressed(StoreBehind):
    """The store answered a publication record behind one this process saw before.

    ``seen`` is the furthest record seen before, ``now`` the record the store
    answered, ``problem`` which rule it broke (revision, fork, epoch or cut).
    """

    def __init__(
        self, stream: str, seen: PublicationRecord, now: PublicationRecord, problem: str
    ) -> None:
        self.stream = stream
        self.seen = seen
        self.now = now
        self.problem = problem
        lost = seen.revision - now.revision
        gone = (
            f"{lost} acknowledged publication(s) are gone"
            if lost > 0
            else "acknowledged publications were lost and their revisions reused"
        )
        super().__init__(
            f"stream {stream!r} went back ({problem}): this process saw {describe(seen)} and "
            f"the store now says {describe(now)}; {gone}. A standby promoted after "
            "asynchronous replication, a restored backup or a damaged write-ahead log does "
            "this (docs/postgres.md, 'Failover'). Publishing from it would move the published "
            "frontier back, so every attempt on this stream is refused until an operator has "
            "found out why and calls FrontierGuard.forget (or starts a new publisher)"
        )


class FrontierGuard:
    """Per stream, the furthest publication record seen; refuses a store behind it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._seen: dict[str, PublicationRecord] = {}
        self._orders: dict[tuple[str, int], Order] = {}
        self._refused: dict[str, StoreRegressed] = {}

    def seen(self, stream: str) -> PublicationRecord | None:
        """The furthest record of ``stream`` seen so far (None before the first)."""
        with self._lock:
            return self._seen.get(stream)

    def learn(self, stream: str, membership: Membership) -> None:
        """Remember the order of ``membership``'s epoch, so cuts of that epoch compare."""
        order = membership.order
        if order is not None:
            with self._lock:
                self._orders.setdefault((stream, membership.epoch), order)

    def observe(self, stream: str, record: PublicationRecord) -> None:
        """Accept ``record`` as answered by the store, or raise :class:`StoreRegressed`.

        Raises the stream's earlier refusal again if there was one (sticky).
        """
        with self._lock:
            refused = self._refused.get(stream)
            if refused is not None:
                raise refused
            seen = self._seen.get(stream)
            problem = None if seen is None else self._behind(stream, seen, record)
            if problem is not None:
                assert seen is not None
                error = StoreRegressed(stream, seen, record, problem)
                self._refused[stream] = error
                raise error
            if seen is None or record.revision > seen.revision:
                self._seen[stream] = record

    def forget(self, stream: str) -> None:
        """Drop what was seen of ``stream`` and its refusal: the next record starts afresh."""
        with self._lock:
            self._seen.pop(stream, None)
            self._refused.pop(stream, None)

    def _behind(self, stream: str, seen: PublicationRecord, now: PublicationRecord) -> str | None:
        if now.revision < seen.revision:
            return f"revision {now.revision} < {seen.revision}"
        if now.revision == seen.revision:
            return None if now == seen else f"another record at revision {now.revision}"
        if now.epoch < seen.epoch:
            return f"epoch {now.epoch} < {seen.epoch}"
        order = self._orders.get((stream, seen.epoch))
        if now.epoch == seen.epoch and order is not None:
            try:
                if compare_cuts(order, now.cut, seen.cut) < 0:
                    return f"the cut {now.cut} is below {seen.cut} in epoch {now.epoch}"
            except InvalidValue:
                return None  # a cut that does not fit the order is the merge's business
        return None
