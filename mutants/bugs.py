"""Known store and provider bugs, each written once as a mixin over the store protocol.

Each mixin bends one call of the publisher store, the reader store or the
provider (a bug from the field, docs/field-bugs.md, or a misreading of the
procedure) and passes everything else through ``super()``. It knows nothing of
where the calls go: the conformance harness composes it with its wire stores
(:mod:`fencepost.mutants.sut_catalog`), the scenario runner with its scheduled
worker views (:mod:`fencepost.scenarios.impl_runner`), the refinement check
with a plain pass-through proxy (:mod:`fencepost.mutants.impl_catalog`), so
one bug means the same thing to all three::

    class FenceBlindStore(FenceBlindMixin, PublisherWireStore): ...

The mixin must come first in the bases so its calls bend the base's. A mixin
needs only the calls it overrides (and, for :class:`FenceBlindMixin`, the
``_membership`` the publisher store last read); any state of its own starts
empty per instance, from a class-level ``None``.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from fencepost.impl.cuts import Cut
from fencepost.impl.provider import Claim, Page
from fencepost.impl.records import Checkpoint, Membership, PublicationRecord
from fencepost.impl.stores import (
    Applied,
    CheckpointConflict,
    CheckpointWrite,
    Conflict,
    IndefiniteStoreError,
    PublicationWrite,
)

if TYPE_CHECKING:
    # What the mixins call on the class they are composed with, for the type checker
    # only: at run time the mixins derive from ``object``, so ``super()`` reaches the
    # real store that follows them in the method resolution order.

    class _PublisherCalls:
        _membership: Membership | None

        def read_publication(self, stream: str) -> PublicationRecord:
            raise NotImplementedError

        def read_membership(self, stream: str, epoch: int | None = None) -> Membership:
            raise NotImplementedError

        def write_publication(
            self, stream: str, expected_revision: int, epoch: int, cut: Cut, op_id: str
        ) -> PublicationWrite:
            raise NotImplementedError

    class _CheckpointCalls:
        def write_checkpoint(
            self, stream: str, expected_generation: int | None, checkpoint: Checkpoint
        ) -> CheckpointWrite:
            raise NotImplementedError

    class _PageCalls:
        def fetch_page(self, partition: str, token: str | None) -> Page:
            raise NotImplementedError

else:
    _PublisherCalls = _CheckpointCalls = _PageCalls = object


# --- publisher store bugs ---------------------------------------------------------------


class BlindSuccessMixin(_PublisherCalls):
    """A lost write response is taken as success (amazon-kinesis-client #108, inverted)."""

    def write_publication(
        self, stream: str, expected_revision: int, epoch: int, cut: Cut, op_id: str
    ) -> PublicationWrite:
        try:
            return super().write_publication(stream, expected_revision, epoch, cut, op_id)
        except IndefiniteStoreError:
            return Applied(PublicationRecord(epoch, cut, expected_revision + 1, op_id))


class ConfirmRevisionMixin(_PublisherCalls):
    """After a lost write, a moved revision is read as proof that the claim is present
    (Materialize PR #14003: two outcomes confused)."""

    #: The lost write (expected revision, epoch, cut) until the next record read.
    _lost: tuple[int, int, Cut] | None = None

    def write_publication(
        self, stream: str, expected_revision: int, epoch: int, cut: Cut, op_id: str
    ) -> PublicationWrite:
        try:
            return super().write_publication(stream, expected_revision, epoch, cut, op_id)
        except IndefiniteStoreError:
            self._lost = (expected_revision, epoch, cut)
            raise

    def read_publication(self, stream: str) -> PublicationRecord:
        record = super().read_publication(stream)
        lost, self._lost = self._lost, None
        if lost is not None and record.revision > lost[0]:
            return dataclasses.replace(record, epoch=lost[1], cut=lost[2])
        return record


class FenceBlindMixin(_PublisherCalls):
    """After a lost write, the attempt keeps the membership it held: a newer epoch in
    the reread record is read as its own epoch, and it retries in the old epoch
    instead of applying the cutover rule (KAFKA-20357, Materialize #29432)."""

    #: The membership held when a write was lost; from then on it is the only one seen.
    _pinned: Membership | None = None

    def write_publication(
        self, stream: str, expected_revision: int, epoch: int, cut: Cut, op_id: str
    ) -> PublicationWrite:
        try:
            return super().write_publication(stream, expected_revision, epoch, cut, op_id)
        except IndefiniteStoreError:
            self._pinned = self._membership
            raise

    def read_publication(self, stream: str) -> PublicationRecord:
        record = super().read_publication(stream)
        pinned = self._pinned
        if pinned is not None and record.epoch > pinned.epoch:
            return dataclasses.replace(record, epoch=pinned.epoch)
        return record

    def read_membership(self, stream: str, epoch: int | None = None) -> Membership:
        current = super().read_membership(stream, epoch)
        if self._pinned is not None:
            self._membership = self._pinned
            return self._pinned
        return current


class StaleCutRetryMixin(_PublisherCalls):
    """A conflict is retried at once with the same cut on the new revision, without
    rereading the checkpoints (a late retry that "cannot" lose)."""

    def write_publication(
        self, stream: str, expected_revision: int, epoch: int, cut: Cut, op_id: str
    ) -> PublicationWrite:
        result = super().write_publication(stream, expected_revision, epoch, cut, op_id)
        if isinstance(result, Conflict):
            return super().write_publication(stream, result.record.revision, epoch, cut, op_id)
        return result


# --- reader store and provider bugs -----------------------------------------------------


class OverwriteMixin(_CheckpointCalls):
    """A checkpoint write that loses is rewritten on top of the newer generation:
    last writer wins (apache/beam #36470)."""

    def write_checkpoint(
        self, stream: str, expected_generation: int | None, checkpoint: Checkpoint
    ) -> CheckpointWrite:
        result = super().write_checkpoint(stream, expected_generation, checkpoint)
        if isinstance(result, CheckpointConflict) and result.checkpoint is not None:
            generation = result.checkpoint.generation
            again = dataclasses.replace(checkpoint, generation=generation + 1)
            return super().write_checkpoint(stream, generation, again)
        return result


class TrustingMixin(_PageCalls):
    """A non-final claim ("caught up at this moment") is read as final: the pass
    certifies a boundary the source has not vouched for (apache/beam #37326)."""

    def fetch_page(self, partition: str, token: str | None) -> Page:
        page = super().fetch_page(partition, token)
        if page.claim is not None and not page.claim.final:
            return Page(page.events, page.next_token, Claim(page.claim.cut, True))
        return page
