"""The merged frontier of many partitions, maintained incrementally.

:func:`fencepost.impl.merge.merge` recomputes the minimum over every member on
each call: O(N). A process holding the checkpoints of N = 100,000 partitions in
memory wants O(log N) per checkpoint change instead. :class:`IncrementalFrontier`
keeps a binary heap of precomputed sort keys plus the sets of members that are
missing, in the wrong epoch or scope, or provisional. Its answer is the same as
``merge(membership, latest checkpoints)``: the same cut (including the
documented tie-break: ``through x`` rather than ``before x+1``), or the same
:class:`~fencepost.impl.merge.Withheld` reason, detail and vector.

The heap is *lazy in both directions*. A partition's checkpoint usually only
moves forward (checkpoint monotonicity), so an update that raises a partition's
key pushes nothing: the partition's older entry stays in the heap as a lower
bound. Only when such a stale entry reaches the top is it replaced, once, by
the partition's current entry (``heapreplace``), however many updates happened
in between. An update that lowers a key (allowed, never produced by a fenced
store) pushes a new entry. Invariant: every member with a checkpoint has at
least one heap entry whose key is at most its current key, so a top entry that
is current is the minimum.

Costs: :meth:`IncrementalFrontier.update` is O(1) for a key that does not go
down and O(log N) otherwise; :meth:`frontier` is O(log N) per stale top
replaced (at most one per update since that partition last reached the top),
O(1) when the top is current, and O(N) only when it must build a Withheld's
vector. The heap holds at most ``2N + 64`` entries (then it is rebuilt).
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
_BEFORE = Endpoint.BEFORE
_FINAL = Finality.FINAL
_ABSENT = object()

# A heap entry: (k0, k1, k2, seq, checkpoint). (k0, k1, k2) orders cuts by downset
# inclusion; among equivalent cuts the smaller coordinate sorts first; seq makes
# every entry distinct so the checkpoint itself is never compared.
_Entry = tuple[int, object, object, int, Checkpoint]


class IncrementalFrontier:
    """The frontier of one membership, updated one checkpoint at a time."""

    __slots__ = (
        "_compact_at",
        "_coordinate_type",
        "_current",
        "_epoch",
        "_heap",
        "_incomparable",
        "_missing",
        "_ok",
        "_order",
        "_partitions",
        "_provisional",
        "_scope",
        "_seq",
        "_successor",
        "_wrong_epoch",
        "_wrong_scope",
        "membership",
    )

    def __init__(self, membership: Membership, checkpoints: Iterable[Checkpoint] = ()) -> None:
        if not isinstance(membership, Membership):
            raise InvalidValue("membership", membership, "a Membership is required")
        self.membership = membership
        self._partitions = tuple(sorted(membership.partitions))
        self._incomparable = len(membership.order_names) > 1
        self._order = membership.order
        self._successor = self._order is not None and self._order.has_successor
        self._coordinate_type: type = (
            int if self._order is not None and self._order.kind == "integer" else str
        )
        self._epoch = membership.epoch
        self._scope = membership.scope
        # Every member, with its latest heap entry or None (no checkpoint yet): one
        # lookup tells membership and the previous entry.
        self._current: dict[str, _Entry | None] = dict.fromkeys(self._partitions)
        self._heap: list[_Entry] = []
        self._seq = 0
        self._missing: set[str] = set(self._partitions)
        self._compact_at = 2 * len(self._partitions) + 64
        self._wrong_epoch: set[str] = set()
        self._wrong_scope: set[str] = set()
        self._provisional: set[str] = set()
        #: True when no reason to withhold is known, so the heap's top is the answer.
        self._ok = False
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
            or not self._partitions
        )

    def update(self, checkpoint: Checkpoint) -> None:
        """Take ``checkpoint`` as its partition's latest; O(1), or O(log N) if its key goes down.

        Checkpoints of non-members are ignored (a removed partition must not
        pin the frontier). A cut that does not fit its partition's order is
        refused with :class:`InvalidValue`, as ``merge`` refuses it.

        This is the hot path: a usual update (a final checkpoint of the right
        epoch and scope, while no member is flagged, moving forward) costs two
        dict operations, a type check, the precomputed key and one tuple
        comparison; no heap operation.
        """
        partition = checkpoint.partition
        current = self._current
        previous = current.get(partition, _ABSENT)
        if previous is _ABSENT:
            return  # not a member
        cut = checkpoint.cut
        endpoint = cut.endpoint
        at = cut.at
        if endpoint is not _NOTHING and type(at) is not self._coordinate_type:
            cut.validated(self.membership.order_of(partition), f"checkpoint[{partition}].cut")
        if (
            previous is None
            or checkpoint.epoch != self._epoch
            or checkpoint.scope != self._scope
            or checkpoint.finality is not _FINAL
            or not self._ok
        ):
            self._missing.discard(partition)
            self._flag(self._wrong_epoch, partition, checkpoint.epoch != self._epoch)
            self._flag(self._wrong_scope, partition, checkpoint.scope != self._scope)
            self._flag(self._provisional, partition, checkpoint.finality is not _FINAL)
            self._recheck()
        self._seq += 1
        entry: _Entry
        if self._incomparable or endpoint is _NOTHING:
            entry = (0, 0, 0, self._seq, checkpoint)
        elif self._successor:
            # through x == before x+1: one key; the smaller coordinate sorts first.
            entry = (1, at if endpoint is _BEFORE else at + 1, at, self._seq, checkpoint)  # type: ignore[operator]
        else:
            entry = (1, at, 0 if endpoint is _BEFORE else 1, self._seq, checkpoint)
        current[partition] = entry
        if previous is not None and previous < entry:  # type: ignore[operator]
            return  # the previous entry stays in the heap as a lower bound
        heap = self._heap
        heappush(heap, entry)
        if len(heap) > self._compact_at:
            self._heap = [e for e in current.values() if e is not None]
            heapq.heapify(self._heap)

    @staticmethod
    def _flag(members: set[str], partition: str, bad: bool) -> None:
        if bad:
            members.add(partition)
        else:
            members.discard(partition)

    def update_many(self, checkpoints: Iterable[Checkpoint]) -> None:
        """:meth:`update` each checkpoint in turn."""
        for checkpoint in checkpoints:
            self.update(checkpoint)

    def vector(self) -> Vector:
        """Every member with its latest checkpoint (None when it has none), name order."""
        return tuple((p, None if entry is None else entry[4]) for p, entry in self._current.items())

    def _withheld(self, reason: WithheldReason, members: Iterable[str]) -> Withheld:
        first = heapq.nsmallest(DETAIL_NAMES + 1, members)
        return Withheld(reason, self.vector(), name_list(first))

    def frontier(self) -> Cut | Withheld:
        """The merged frontier, exactly as :func:`~fencepost.impl.merge.merge` would give it."""
        if self._ok:
            heap = self._heap
            current = self._current
            top = heap[0]
            fresh = current[top[4].partition]
            while fresh is not top:
                assert fresh is not None
                heapq.heapreplace(heap, fresh)
                top = heap[0]
                fresh = current[top[4].partition]
            if top[0]:
                return top[4].cut
            return Withheld(WithheldReason.NO_COVERAGE, self.vector())
        if self._missing:
            return self._withheld(WithheldReason.MISSING_CHECKPOINT, self._missing)
        if self._wrong_epoch:
            return self._withheld(WithheldReason.EPOCH_MISMATCH, self._wrong_epoch)
        if self._wrong_scope:
            return self._withheld(WithheldReason.SCOPE_MISMATCH, self._wrong_scope)
        if self._provisional:
            return self._withheld(WithheldReason.UNSUPPORTED_FINALITY, self._provisional)
        if self._incomparable:
            return self._withheld(WithheldReason.INCOMPARABLE, self.membership.order_names)
        return Withheld(WithheldReason.NO_COVERAGE, (), "the membership has no partitions")
