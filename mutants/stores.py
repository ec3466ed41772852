"""Known bugs in how a publisher or a reader handles its store's answers, each written once.

Each mixin bends one call of the publisher store or the reader store (a bug from
the field, docs/field-bugs.md, or a misreading of the procedure) and passes
everything else through ``super()``. The publisher and reader classes at the end
(:func:`publisher_over`, :func:`reader_over`) put the mixin in front of *whatever*
store a consumer hands them, through a pass-through proxy, so the same bug runs
over the conformance wire (``fencepost sut --mutant``), the scenario runner's
scheduled views and the refinement check's gated stores.

A mixin must come first in the bases so its calls bend the proxy's. Its state
starts empty per instance, from a class-level ``None``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from fencepost.impl.cuts import Cut
from fencepost.impl.publisher import Publisher, PublisherStore
from fencepost.impl.reader import IngestStore, PartitionReader
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

else:
    _PublisherCalls = _CheckpointCalls = object


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


# --- reader store bugs -----------------------------------------------------


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


# --- proxies: a mixin in front of any store -----------------------------------------------


class PublisherProxy:
    """Passes a publisher's calls to ``inner`` and remembers the membership last read.

    Any call it does not define (a store may offer more than the publisher level's
    four) reaches ``inner`` unchanged.
    """

    def __init__(self, inner: PublisherStore) -> None:
        self.inner = inner
        self._membership: Membership | None = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def read_publication(self, stream: str) -> PublicationRecord:
        return self.inner.read_publication(stream)

    def read_membership(self, stream: str, epoch: int | None = None) -> Membership:
        self._membership = self.inner.read_membership(stream, epoch)
        return self._membership

    def read_checkpoints(self, stream: str, epoch: int) -> Sequence[Checkpoint]:
        return self.inner.read_checkpoints(stream, epoch)

    def write_publication(
        self, stream: str, expected_revision: int, epoch: int, cut: Cut, op_id: str
    ) -> PublicationWrite:
        return self.inner.write_publication(stream, expected_revision, epoch, cut, op_id)


class ReaderProxy:
    """Passes a partition reader's calls to ``inner`` (anything else reaches it unchanged)."""

    def __init__(self, inner: IngestStore) -> None:
        self.inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def read_checkpoint(self, stream: str, epoch: int, partition: str) -> Checkpoint | None:
        return self.inner.read_checkpoint(stream, epoch, partition)

    def write_checkpoint(
        self, stream: str, expected_generation: int | None, checkpoint: Checkpoint
    ) -> CheckpointWrite:
        return self.inner.write_checkpoint(stream, expected_generation, checkpoint)

    def record_outcome(self, stream: str, event_id: str, outcome: str) -> str:
        return self.inner.record_outcome(stream, event_id, outcome)

    def outcomes(self, stream: str, event_ids: Sequence[str]) -> dict[str, str]:
        return self.inner.outcomes(stream, event_ids)


def publisher_over(mixin: type) -> type[Publisher]:
    """The production publisher whose store calls go through ``mixin`` first."""
    store_class = type(f"{mixin.__name__}Store", (mixin, PublisherProxy), {})

    class MixinPublisher(Publisher):
        def __init__(self, store: PublisherStore, *args: Any, **kwargs: Any) -> None:
            super().__init__(store_class(store), *args, **kwargs)

    MixinPublisher.__name__ = MixinPublisher.__qualname__ = f"Publisher[{mixin.__name__}]"
    MixinPublisher.__doc__ = f"The publisher over {mixin.__name__}: {mixin.__doc__}"
    return MixinPublisher


def reader_over(mixin: type) -> type[PartitionReader]:
    """The production partition reader whose store calls go through ``mixin`` first."""
    store_class = type(f"{mixin.__name__}Store", (mixin, ReaderProxy), {})

    class MixinReader(PartitionReader):
        def __init__(self, store: IngestStore, *args: Any, **kwargs: Any) -> None:
            super().__init__(store_class(store), *args, **kwargs)

    MixinReader.__name__ = MixinReader.__qualname__ = f"PartitionReader[{mixin.__name__}]"
    MixinReader.__doc__ = f"The partition reader over {mixin.__name__}: {mixin.__doc__}"
    return MixinReader
