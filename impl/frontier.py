"""The merged frontier of many partitions, maintained incrementally.

:func:`fencepost.impl.merge.merge` recomputes the minimum over every member on
each call: O(N). A process holding the checkpoints of N = 100,000 partitions in
memory wants O(log N) per checkpoint change instead. :class:`IncrementalFrontier`
keeps a binary heap of sort keys plus the sets of members that are missing, in
the wrong epoch or scope, provisional, or at ``nothing``. Its answer is the same
as ``merge(membership, latest checkpoints)``: the same cut (including the
documented tie-break: ``through x`` rather than ``before x+1``), or the same
:class:`~fencepost.impl.merge.Withheld` reason, detail and vector.

**Keys.** On an integer order a cut's key is one Python int,
``(2x + [through]) * M + i`` for member number ``i`` of ``M``: the order of the
ints is the cut order (``before x < through x < before x+1``; ``through x`` and
``before x+1``, the same claim on an exact successor, tie to ``through x`` as the
representation rule wants), then the member; so the heap compares plain ints.
On a string order the key is ``(x, [through], i)``.

**Lazy in both directions.** A partition's checkpoint usually only moves forward
(checkpoint monotonicity), so an update that raises a partition's cut builds no
key and pushes nothing: the partition's older entry stays in the heap as a lower
bound. Only when such a stale entry reaches the top is it replaced, once, by the
partition's current key (``heapreplace``), however many updates happened in
between. An update that lowers a cut (allowed; a fenced store never produces
one), including ``through x`` to ``before x``, pushes a new entry. Invariant:
every member with a key has at least one heap entry at most its current key, so
a top entry that is current is the minimum.

**One record per member.** Each member has a small slotted record (its number,
latest checkpoint, and that checkpoint's coordinate), found by one dict lookup.
The usual update compares the new coordinate with the record's and stores two
slots: it reads nothing of the previous checkpoint, builds no key and allocates
nothing. On a shared 2-core machine that made the difference between 1.4x and
1.7-2.0x a plain heap (cache misses on the previous key and on a separate list of
latest checkpoints were most of the old hot path's cost).

**The last answer is kept** until an update touches its member, lowers a key or
flags something: reading the frontier after an update elsewhere is O(1).

Costs: :meth:`IncrementalFrontier.update` is O(1) for a cut that does not go
down and O(log N) otherwise; :meth:`frontier` is O(log N) per stale top
replaced (at most one per update since that partition last reached the top),
O(1) otherwise, and O(N) only when it must build a Withheld's vector. The heap
holds at most ``2N + 64`` entries (then it is rebuilt). Memory: O(N), one
record and one heap entry or two per member. Neither grows with the number of
updates (``benchmarks/frontier.py``: over 1M updates/s, 1.7-2.0x a plain
``heapq`` with lazy deletion at N = 100,000).
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable
from heapq import heappush

from fencepost.impl.cuts import Cut, Endpoint
from fencepost.impl.errors import InvalidValue
from fencepost.impl.merge import DETAIL_NAMES, Vector, Withheld, WithheldReason, name_list
from fencepost.impl.records import Checkpoint, Finality, Membership

_NOTHING = Endpoint.NOTHING
_THROUGH = Endpoint.THROUGH
_FINAL = Finality.FINAL

#: A heap key: an int on integer orders, ``(coordinate, through, member)`` on strings.
_Key = int | tuple[str, bool, int]


class _NoCoordinate:
    """The coordinate type of a membership with several orders: no coordinate is one."""


class _Member:
    """One member's state: its number, latest checkpoint, and that checkpoint's coordinate.

    ``at`` is the latest cut's coordinate while the member has a heap key (a
    cut that is not ``nothing``, on the membership's one order), else None. It
    is kept beside the checkpoint so that the usual update compares one
    coordinate and reads nothing else of the previous checkpoint.
    """

    __slots__ = ("at", "checkpoint", "number")

    def __init__(self, number: int) -> None:
        self.number = number
        self.checkpoint: Checkpoint | None = None
        self.at: int | str | None = None


class IncrementalFrontier:
    """The frontier of one membership, updated one checkpoint at a time."""

    __slots__ = (
        "_answer",
        "_compact_at",
        "_coordinate_type",
        "_epoch",
        "_fast_type",
        "_heap",
        "_incomparable",
        "_integers",
        "_members",
        "_missing",
        "_names",
        "_nothing",
        "_numbered",
        "_ok",
        "_provisional",
        "_scope",
        "_span",
        "_through",
        "_top",
        "_wrong_epoch",
        "_wrong_scope",
        "membership",
    )

    def __init__(self, membership: Membership, checkpoints: Iterable[Checkpoint] = ()) -> None:
        if not isinstance(membership, Membership):
            raise InvalidValue("membership", membership, "a Membership is required")
        self.membership = membership
        self._names = tuple(sorted(membership.partitions))
        #: Member records by number (name order), and by name: one lookup gives an update
        #: everything it reads and writes.
        self._numbered = [_Member(i) for i in range(len(self._names))]
        self._members = dict(zip(self._names, self._numbered, strict=True))
        order = membership.order
        self._incomparable = len(membership.order_names) > 1
        self._integers = order is not None and order.kind == "integer"
        self._coordinate_type: type = (
            _NoCoordinate if order is None else int if self._integers else str
        )
        count = max(1, len(self._names))
        self._through = count  # what ``through`` adds to an int key: one step of 2x + [through]
        self._span = 2 * count  # what one coordinate unit adds to an int key
        self._epoch = membership.epoch
        self._scope = membership.scope
        self._heap: list[_Key] = []
        self._compact_at = 2 * len(self._names) + 64
        self._missing: set[int] = set(range(len(self._names)))
        self._wrong_epoch: set[int] = set()
        self._wrong_scope: set[int] = set()
        self._provisional: set[int] = set()
        self._nothing: set[int] = set()
        #: True when no reason to withhold is known, so the heap's top is the answer.
        self._ok = False
        #: The member whose cut was last answered, and that cut (None: look at the heap again).
        self._top: _Member | None = None
        self._answer: Cut | None = None
        self._recheck()
        for checkpoint in checkpoints:
            self.update(checkpoint)

    def _recheck(self) -> None:
        self._ok = not (
            self._missing
            or self._wrong_epoch
            or self._wrong_scope
            or self._provisional
            or self._incomparable
            or self._nothing
            or not self._names
        )
        self._fast_type = self._coordinate_type if self._ok else _NoCoordinate

    def update(self, checkpoint: Checkpoint) -> None:
        """Take ``checkpoint`` as its partition's latest; O(1), or O(log N) if its key goes down.

        Checkpoints of non-members are ignored (a removed partition must not
        pin the frontier). A cut that does not fit its partition's order is
        refused with :class:`InvalidValue`, as ``merge`` refuses it.

        This is the hot path: a usual update (a final checkpoint of the right
        epoch and scope whose coordinate moves forward, while nothing is
        flagged) is one dict lookup, five comparisons and two stores into the
        member's record. It builds no key, touches no heap and allocates
        nothing: the member's heap entry stays a lower bound of its new cut.
        """
        try:
            member = self._members[checkpoint.partition]
        except KeyError:
            return  # not a member
        cut = checkpoint.cut
        at = cut.at
        if not (
            # _fast_type is the order's coordinate type only while nothing is flagged (so
            # every member has a key and an ``at``); type(at) exactly, as a bool is no int.
            at.__class__ is self._fast_type
            and checkpoint.finality is _FINAL
            and checkpoint.epoch == self._epoch
            and checkpoint.scope == self._scope
        ):
            self._update_slowly(checkpoint, member)
            return
        previous = member.at
        before = member.checkpoint
        member.at = at
        member.checkpoint = checkpoint
        if at > previous:  # type: ignore[operator]
            # moved forward: the usual case
            if member is self._top:
                self._answer = None  # the answer may have moved: look at the heap again
        elif at != previous or (
            cut.endpoint is not _THROUGH and before.cut.endpoint is _THROUGH  # type: ignore[union-attr]
        ):
            self._push(self._key(member))  # went down (``through x`` to ``before x`` included)
        elif member is self._top:
            self._answer = None

    def _key(self, member: _Member) -> _Key | None:
        """``member``'s heap key; None without a checkpoint, for nothing, or without one order."""
        checkpoint = member.checkpoint
        if checkpoint is None or self._incomparable:
            return None
        cut = checkpoint.cut
        if cut.endpoint is _NOTHING:
            return None
        at = cut.at
        through = cut.endpoint is _THROUGH
        if self._integers:
            assert type(at) is int
            return at * self._span + member.number + (self._through if through else 0)
        assert type(at) is str
        return (at, through, member.number)

    def _update_slowly(self, checkpoint: Checkpoint, member: _Member) -> None:
        """An update while something is flagged, or that flags or clears something."""
        cut = checkpoint.cut
        partition = checkpoint.partition
        if cut.endpoint is not _NOTHING and type(cut.at) is not self._coordinate_type:
            cut.validated(self.membership.order_of(partition), f"checkpoint[{partition}].cut")
        previous = self._key(member)
        member.checkpoint = checkpoint
        key = self._key(member)
        member.at = None if key is None else cut.at
        i = member.number
        self._missing.discard(i)
        self._flag(self._wrong_epoch, i, checkpoint.epoch != self._epoch)
        self._flag(self._wrong_scope, i, checkpoint.scope != self._scope)
        self._flag(self._provisional, i, checkpoint.finality is not _FINAL)
        self._flag(self._nothing, i, cut.endpoint is _NOTHING)
        self._recheck()
        self._answer = None
        if key is not None and (previous is None or key < previous):  # type: ignore[operator]
            self._push(key)

    def _push(self, key: _Key | None) -> None:
        self._answer = None
        assert key is not None
        heap = self._heap
        heappush(heap, key)
        if len(heap) > self._compact_at:
            self._heap = [k for m in self._numbered if (k := self._key(m)) is not None]
            heapq.heapify(self._heap)

    @staticmethod
    def _flag(members: set[int], i: int, bad: bool) -> None:
        if bad:
            members.add(i)
        else:
            members.discard(i)

    def update_many(self, checkpoints: Iterable[Checkpoint]) -> None:
        """:meth:`update` each checkpoint in turn."""
        for checkpoint in checkpoints:
            self.update(checkpoint)

    def vector(self) -> Vector:
        """Every member with its latest checkpoint (None when it has none), name order."""
        return tuple(
            (name, m.checkpoint) for name, m in zip(self._names, self._numbered, strict=True)
        )

    def _withheld(self, reason: WithheldReason, members: set[int]) -> Withheld:
        first = [self._names[i] for i in heapq.nsmallest(DETAIL_NAMES + 1, members)]
        return Withheld(reason, self.vector(), name_list(first))

    def frontier(self) -> Cut | Withheld:
        """The merged frontier, exactly as :func:`~fencepost.impl.merge.merge` would give it."""
        answer = self._answer
        if answer is not None:  # nothing touched the last answer's member or the heap since
            return answer
        if self._ok:
            heap, numbered = self._heap, self._numbered
            integers, count = self._integers, self._through
            while True:
                top = heap[0]
                member = numbered[top % count if integers else top[2]]  # type: ignore[index, operator]
                current = self._key(member)
                if current == top:
                    break
                # a stale entry: the member moved since it was pushed
                if current is None:
                    heapq.heappop(heap)
                else:
                    heapq.heapreplace(heap, current)
            latest = member.checkpoint
            assert latest is not None
            self._top, self._answer = member, latest.cut
            return latest.cut
        if self._missing:
            return self._withheld(WithheldReason.MISSING_CHECKPOINT, self._missing)
        if self._wrong_epoch:
            return self._withheld(WithheldReason.EPOCH_MISMATCH, self._wrong_epoch)
        if self._wrong_scope:
            return self._withheld(WithheldReason.SCOPE_MISMATCH, self._wrong_scope)
        if self._provisional:
            return self._withheld(WithheldReason.UNSUPPORTED_FINALITY, self._provisional)
        if self._incomparable:
            return Withheld(
                WithheldReason.INCOMPARABLE, self.vector(), name_list(self.membership.order_names)
            )
        if self._nothing:
            return Withheld(WithheldReason.NO_COVERAGE, self.vector())
        return Withheld(WithheldReason.NO_COVERAGE, (), "the membership has no partitions")
