"""An in-memory :class:`~fencepost.impl.stores.Store`: the reference backend.

Every guarantee of the store protocols holds here exactly as in the durable
backends, except durability itself: the state lives as long as the object. One
lock makes each conditional check-and-write a single atomic step, so any number
of threads may share one instance and two writers that read the same revision
or generation can never both win.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Sequence

from fencepost.impl.cuts import Cut
from fencepost.impl.errors import InvalidValue
from fencepost.impl.merge import MergeSummary, summarize
from fencepost.impl.records import Checkpoint, Membership, PublicationRecord
from fencepost.impl.stores import (
    Applied,
    BatchWrite,
    CheckpointApplied,
    CheckpointConflict,
    CheckpointWrite,
    Conflict,
    DefiniteStoreError,
    PublicationWrite,
    StreamConflict,
    UnknownStream,
    admit_checkpoint,
    admit_membership,
    check_batch,
    check_name,
    check_revision,
)


@dataclasses.dataclass
class _Stream:
    memberships: dict[int, Membership]
    record: PublicationRecord
    checkpoints: dict[tuple[int, str], Checkpoint] = dataclasses.field(default_factory=dict)
    outcomes: dict[str, str] = dataclasses.field(default_factory=dict)


class MemoryStore:
    """All streams in one process's memory, guarded by one lock (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._streams: dict[str, _Stream] = {}
        self._closed = False

    def _stream(self, stream: str) -> _Stream:
        if self._closed:
            raise DefiniteStoreError("this MemoryStore is closed; open a new store")
        check_name(stream, "stream")
        state = self._streams.get(stream)
        if state is None:
            raise UnknownStream(
                f"stream {stream!r} does not exist: create it with create_stream first"
            )
        return state

    # --- memberships ---------------------------------------------------------------

    def create_stream(self, stream: str, membership: Membership) -> PublicationRecord:
        check_name(stream, "stream")
        if not isinstance(membership, Membership):
            raise InvalidValue("membership", membership, "a Membership is required")
        with self._lock:
            if self._closed:
                raise DefiniteStoreError("this MemoryStore is closed; open a new store")
            state = self._streams.get(stream)
            if state is None:
                record = PublicationRecord(epoch=membership.epoch)
                self._streams[stream] = _Stream({membership.epoch: membership}, record)
                return record
            first = min(state.memberships)
            if first == membership.epoch and state.memberships[first] == membership:
                return state.record
            raise StreamConflict(
                f"stream {stream!r} already exists with another first membership; "
                "use write_membership to add a new epoch, or another stream name"
            )

    def read_membership(self, stream: str, epoch: int | None = None) -> Membership:
        with self._lock:
            state = self._stream(stream)
            if epoch is None:
                return state.memberships[max(state.memberships)]
            check_revision(epoch, "epoch")
            found = state.memberships.get(epoch)
            if found is None:
                raise DefiniteStoreError(
                    f"stream {stream!r} has no membership for epoch {epoch} "
                    f"(epochs stored: {', '.join(map(str, sorted(state.memberships)))})"
                )
            return found

    def write_membership(self, stream: str, membership: Membership) -> None:
        with self._lock:
            state = self._stream(stream)
            if admit_membership(stream, state.memberships, membership):
                state.memberships[membership.epoch] = membership

    # --- publication ---------------------------------------------------------------

    def read_publication(self, stream: str) -> PublicationRecord:
        with self._lock:
            return self._stream(stream).record

    def write_publication(
        self, stream: str, expected_revision: int, epoch: int, cut: Cut, op_id: str
    ) -> PublicationWrite:
        check_revision(expected_revision, "expected_revision")
        check_name(op_id, "op_id")
        new_record = PublicationRecord(epoch, cut, expected_revision + 1, op_id)
        with self._lock:
            state = self._stream(stream)
            if state.record.revision != expected_revision:
                return Conflict(state.record)
            state.record = new_record
            return Applied(new_record)

    # --- checkpoints ---------------------------------------------------------------

    def read_checkpoint(self, stream: str, epoch: int, partition: str) -> Checkpoint | None:
        check_name(partition, "partition")
        with self._lock:
            return self._stream(stream).checkpoints.get((epoch, partition))

    def read_checkpoints(self, stream: str, epoch: int) -> Sequence[Checkpoint]:
        with self._lock:
            checkpoints = self._stream(stream).checkpoints
            found = [c for (e, _), c in checkpoints.items() if e == epoch]
        return sorted(found, key=lambda c: c.partition)

    def write_checkpoint(
        self, stream: str, expected_generation: int | None, checkpoint: Checkpoint
    ) -> CheckpointWrite:
        if expected_generation is not None:
            check_revision(expected_generation, "expected_generation")
        with self._lock:
            state = self._stream(stream)
            admit_checkpoint(stream, state.memberships.get(checkpoint.epoch), checkpoint)
            return self._write_one(state, expected_generation, checkpoint)

    def write_checkpoints(self, stream: str, writes: Sequence[BatchWrite]) -> list[CheckpointWrite]:
        batch = check_batch(writes)
        with self._lock:
            state = self._stream(stream)
            for _, checkpoint in batch:  # every write is admitted before any is applied
                admit_checkpoint(stream, state.memberships.get(checkpoint.epoch), checkpoint)
            return [self._write_one(state, expected, cp) for expected, cp in batch]

    @staticmethod
    def _write_one(
        state: _Stream, expected_generation: int | None, checkpoint: Checkpoint
    ) -> CheckpointWrite:
        key = (checkpoint.epoch, checkpoint.partition)
        current = state.checkpoints.get(key)
        stored_generation = None if current is None else current.generation
        if stored_generation != expected_generation:
            return CheckpointConflict(current)
        generation = 1 if expected_generation is None else expected_generation + 1
        stored = dataclasses.replace(checkpoint, generation=generation)
        state.checkpoints[key] = stored
        return CheckpointApplied(stored)

    def read_merge_summary(self, stream: str, epoch: int) -> MergeSummary:
        """The summary of ``epoch``, under the store's lock (one instant).

        Cost: O(C + N log N) for C checkpoints stored and N members: this
        reference backend computes the definition, :func:`summarize`, itself.
        """
        check_revision(epoch, "epoch")
        with self._lock:
            state = self._stream(stream)
            membership = state.memberships.get(epoch)
            if membership is None:
                raise DefiniteStoreError(
                    f"stream {stream!r} has no membership for epoch {epoch} "
                    f"(epochs stored: {', '.join(map(str, sorted(state.memberships)))})"
                )
            found = [c for (e, _), c in state.checkpoints.items() if e == epoch]
        return summarize(membership, found)

    # --- outcomes ------------------------------------------------------------------

    def record_outcome(self, stream: str, event_id: str, outcome: str) -> str:
        check_name(event_id, "event_id")
        check_name(outcome, "outcome")
        with self._lock:
            return self._stream(stream).outcomes.setdefault(event_id, outcome)

    def outcomes(self, stream: str, event_ids: Sequence[str]) -> dict[str, str]:
        with self._lock:
            stored = self._stream(stream).outcomes
            return {e: stored[e] for e in event_ids if e in stored}

    def close(self) -> None:
        with self._lock:
            self._closed = True
