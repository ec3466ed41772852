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
(checkpoint monotonicity), so an update that raises a partition's key pushes
nothing: the partition's older entry stays in the heap as a lower bound. Only
when such a stale entry reaches the top is it replaced, once, by the partition's
current key (``heapreplace``), however many updates happened in between. An
update that lowers a key (allowed; a fenced store never produces one) pushes a
new entry. Invariant: every member with a key has at least one heap entry at
most its current key, so a top entry that is current is the minimum.

**The last answer is kept** until an update touches its member, lowers a key or
flags something: reading the frontier after an update elsewhere is O(1).

Costs: :meth:`IncrementalFrontier.update` is O(1) for a key that does not go
down and O(log N) otherwise; :meth:`frontier` is O(log N) per stale top
replaced (at most one per update since that partition last reached the top),
O(1) otherwise, and O(N) only when it must build a Withheld's vector. The heap
holds at most ``2N + 64`` entries (then it is rebuilt). Memory: O(N). The usual
update touches one dict entry and one list slot and allocates nothing the cyclic
garbage collector tracks (``benchmarks/frontier.py``: 1.5x a plain ``heapq``
with lazy deletion at N = 100,000).
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
        "_index",
        "_integers",
        "_keys",
        "_latest",
        "_missing",
        "_names",
        "_nothing",
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
        # Member name -> its current heap key (None: no checkpoint, nothing, or no common
        # order). The key holds the member's number, so one lookup (and one memory load)
        # gives an update all it compares; the number also indexes ``_latest``.
        self._keys: dict[str, _Key | None] = dict.fromkeys(self._names)
        self._index = {p: i for i, p in enumerate(self._names)}
        self._latest: list[Checkpoint | None] = [None] * len(self._names)
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
        self._top = -1
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
        epoch and scope, moving forward, while nothing is flagged) is one dict
        lookup, four comparisons, one int key and one dict store; no heap
        operation.
        """
        partition = checkpoint.partition
        try:
            previous = self._keys[partition]
        except KeyError:
            return  # not a member
        cut = checkpoint.cut
        at = cut.at
        if not (
            # _fast_type is the order's coordinate type only while nothing is flagged (so
            # every member has a key); type(at) exactly, as a bool is no int here.
            at.__class__ is self._fast_type
            and checkpoint.finality is _FINAL
            and checkpoint.epoch == self._epoch
            and checkpoint.scope == self._scope
        ):
            self._update_slowly(checkpoint)
            return
        key: _Key
        if self._integers:
            i = previous % self._through  # type: ignore[operator]
            key = at * self._span + i  # type: ignore[operator]
            if cut.endpoint is _THROUGH:
                key += self._through
        else:
            i = previous[2]  # type: ignore[index]
            key = (at, cut.endpoint is _THROUGH, i)  # type: ignore[assignment]
        self._keys[partition] = key
        self._latest[i] = checkpoint
        if key < previous:  # type: ignore[operator]
            self._push(key)
        elif i == self._top:
            self._answer = None  # the answer may have moved: look at the heap again
        # else: the member's heap entry stays a lower bound of its key

    def _key(self, checkpoint: Checkpoint, i: int) -> _Key | None:
        """Member ``i``'s heap key for ``checkpoint``; None for nothing or without one order."""
        cut = checkpoint.cut
        if self._incomparable or cut.endpoint is _NOTHING:
            return None
        at = cut.at
        through = cut.endpoint is _THROUGH
        if self._integers:
            assert type(at) is int
            return at * self._span + i + (self._through if through else 0)
        assert type(at) is str
        return (at, through, i)

    def _update_slowly(self, checkpoint: Checkpoint) -> None:
        """An update while something is flagged, or that flags or clears something."""
        cut = checkpoint.cut
        partition = checkpoint.partition
        if cut.endpoint is not _NOTHING and type(cut.at) is not self._coordinate_type:
            cut.validated(self.membership.order_of(partition), f"checkpoint[{partition}].cut")
        i = self._index[partition]
        previous = self._keys[partition]
        key = self._key(checkpoint, i)
        self._keys[partition] = key
        self._latest[i] = checkpoint
        self._missing.discard(i)
        self._flag(self._wrong_epoch, i, checkpoint.epoch != self._epoch)
        self._flag(self._wrong_scope, i, checkpoint.scope != self._scope)
        self._flag(self._provisional, i, checkpoint.finality is not _FINAL)
        self._flag(self._nothing, i, cut.endpoint is _NOTHING)
        self._recheck()
        self._answer = None
        if key is not None and (previous is None or key < previous):  # type: ignore[operator]
            self._push(key)

    def _push(self, key: _Key) -> None:
        self._answer = None
        heap = self._heap
        heappush(heap, key)
        if len(heap) > self._compact_at:
            self._heap = [k for k in self._keys.values() if k is not None]
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
        return tuple(zip(self._names, self._latest, strict=True))

    def _withheld(self, reason: WithheldReason, members: set[int]) -> Withheld:
        first = [self._names[i] for i in heapq.nsmallest(DETAIL_NAMES + 1, members)]
        return Withheld(reason, self.vector(), name_list(first))

    def frontier(self) -> Cut | Withheld:
        """The merged frontier, exactly as :func:`~fencepost.impl.merge.merge` would give it."""
        answer = self._answer
        if answer is not None:  # nothing touched the last answer's member or the heap since
            return answer
        if self._ok:
            heap, keys, names = self._heap, self._keys, self._names
            integers, count = self._integers, self._through
            while True:
                top = heap[0]
                i = top % count if integers else top[2]  # type: ignore[index, operator]
                current = keys[names[i]]
                if current == top:
                    break
                # a stale entry: the member moved since it was pushed
                if current is None:
                    heapq.heappop(heap)
                else:
                    heapq.heapreplace(heap, current)
            latest = self._latest[i]
            assert latest is not None
            self._top, self._answer = i, latest.cut
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
