"""The store protocols: where durable state lives and how writes are fenced.

One protocol per durable concept, matching the calls of the conformance
protocol one to one, so the same publisher and partition reader run against
the in-memory, SQLite and PostgreSQL backends and against the conformance
harness's stores over the wire.

Failures come in two kinds and callers must treat them differently (and every backend
names the same failure the same way: :class:`CorruptStore` for a row that does not
decode, :class:`StoreFull` for a full disk, :class:`StoreLocked` for a store another
process holds locked, :class:`StoreOpenError` for a store that cannot be opened):

- :class:`DefiniteStoreError`: the operation did not happen (refused before it
  was sent, rejected by validation). Retrying is safe.
- :class:`IndefiniteStoreError`: the response was lost (timeout, dropped
  connection). A write may or may not have been applied; a read learned
  nothing. Only an authoritative reread settles what happened: never infer
  success or failure from the missing response alone.

Conditional writes return a result instead of raising on a lost race: losing
is a normal outcome of fencing, not an error.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from fencepost.impl.cuts import Cut
from fencepost.impl.errors import InvalidValue
from fencepost.impl.merge import MergeSummary
from fencepost.impl.records import Checkpoint, Membership, PublicationRecord


class StoreError(Exception):
    """A store operation failed."""


class DefiniteStoreError(StoreError):
    """The operation certainly did not take effect; retrying it is safe."""


class IndefiniteStoreError(StoreError):
    """The response was lost: a write may or may not have been applied."""


class UnknownStream(DefiniteStoreError):
    """The stream has no membership yet: create it with ``create_stream`` first."""


class StreamConflict(DefiniteStoreError):
    """``create_stream`` found the stream already there with another first membership."""


class CorruptStore(DefiniteStoreError):
    """A stored row (or page) cannot be read back: the store was damaged or edited outside
    fencepost. Retrying cannot help; the message names the table, the row and the field.

    ``location`` names the file or URL; restore it from a backup or start a new one.
    """

    def __init__(
        self,
        location: str,
        table: str | None,
        row: str | None,
        field: str | None,
        problem: str,
    ) -> None:
        self.location = location
        self.table = table
        self.row = row
        self.field = field
        where = ", ".join(
            f"{name} {value}"
            for name, value in (("table", table), ("row", row), ("field", field))
            if value is not None
        )
        super().__init__(
            f"corrupt store: {location}: {where + ': ' if where else ''}{problem}; "
            "the store was damaged or edited outside fencepost: restore it from a backup "
            "or start a new one"
        )


def corrupt_row(location: str, table: str, row: str, exc: Exception) -> CorruptStore:
    """A stored row that does not decode, named by table, row and field, in the same words
    on every backend (SQLite and PostgreSQL): ``exc`` is the decoding failure (an
    :class:`~fencepost.impl.errors.InvalidValue` names its field; anything else is the
    row's ``body``)."""
    field = exc.field if isinstance(exc, InvalidValue) else "body"
    for prefix in ("checkpoint.", "record.", "publication."):
        field = field.removeprefix(prefix)
    problem = exc.problem if isinstance(exc, InvalidValue) else str(exc)
    return CorruptStore(location, table, row, field, problem)


def stored_membership(location: str, stream: str, epoch: object, body: object) -> Membership:
    """A membership row's body (JSON text) as the membership, on every backend; a body no
    write makes is :class:`CorruptStore` naming the row (``field body``)."""
    from fencepost.impl.codec import membership_from_json

    try:
        if type(body) is not str:
            raise InvalidValue("body", body, "membership JSON text is required")
        return membership_from_json(json.loads(body), "body")
    except (ValueError, RecursionError) as exc:
        where = f"stream={stream!r} epoch={epoch!r}"
        raise corrupt_row(location, "memberships", where, exc) from None


class StoreFull(DefiniteStoreError):
    """The store's disk (or quota, or size limit) is full: the write was refused and rolled
    back, nothing of it is stored. Retrying cannot help until space is freed: callers stop
    and say so (SQLite ``SQLITE_FULL``, PostgreSQL SQLSTATE 53100 ``disk_full``)."""

    def __init__(self, location: str, detail: str) -> None:
        self.location = location
        super().__init__(
            f"the store's disk is full: {location}: {detail}; the write was rolled back and "
            "nothing acknowledged was lost: free space, then run again"
        )


class StoreLocked(DefiniteStoreError):
    """Another process holds the store locked (an exclusive transaction) for longer than
    this one waits: nothing was done. Not corruption: retry once that process finishes
    (SQLite ``SQLITE_BUSY``/``SQLITE_LOCKED``, PostgreSQL SQLSTATE 55P03)."""

    def __init__(self, location: str, detail: str, waited: float | None = None) -> None:
        self.location = location
        after = f" (waited {waited:g}s)" if waited is not None else ""
        super().__init__(
            f"the store is locked by another process{after}: {location}: {detail}; nothing "
            "was done: run again once that process has finished (it holds a write "
            "transaction open)"
        )


class StoreBehind(DefiniteStoreError):
    """The stored publication record is older than one the caller saw before.

    A store never goes back by itself; a record behind one seen before means the
    durable state was rolled back underneath (a restored backup, a SQLite WAL
    whose damaged frames SQLite dropped, a PostgreSQL point-in-time recovery).
    See docs/robustness.md ("A store that went back").
    """


class StoreOpenError(DefiniteStoreError):
    """The store could not be opened: the file or database is missing, corrupt, foreign,
    or written by a newer fencepost whose schema this code does not know.

    ``location`` names the file or URL so the operator knows which one to fix.
    """

    def __init__(self, location: str, problem: str) -> None:
        self.location = location
        self.problem = problem
        super().__init__(f"{location}: {problem}")


@dataclass(frozen=True, slots=True)
class Applied:
    """The conditional write was applied; ``record`` is what is stored now."""

    record: PublicationRecord


@dataclass(frozen=True, slots=True)
class Conflict:
    """The conditional write lost: the revision moved; ``record`` is the current one."""

    record: PublicationRecord


PublicationWrite = Applied | Conflict


@dataclass(frozen=True, slots=True)
class CheckpointApplied:
    """The checkpoint write was applied; ``checkpoint`` is what is stored now."""

    checkpoint: Checkpoint


@dataclass(frozen=True, slots=True)
class CheckpointConflict:
    """The write carried a stale expected generation (a late retry) and lost.

    ``checkpoint`` is the newer checkpoint that stays in place (None only if the
    write expected one to exist and none does).
    """

    checkpoint: Checkpoint | None


CheckpointWrite = CheckpointApplied | CheckpointConflict

#: One write of a batch: ``(expected_generation, checkpoint)``, as ``write_checkpoint`` takes them.
BatchWrite = tuple[int | None, Checkpoint]


class PublicationStore(Protocol):
    """The publication record of each stream, written conditionally on its revision."""

    def read_publication(self, stream: str) -> PublicationRecord:
        """The authoritative current record. Raises :class:`UnknownStream` if none."""
        ...

    def write_publication(
        self, stream: str, expected_revision: int, epoch: int, cut: Cut, op_id: str
    ) -> PublicationWrite:
        """Store ``(epoch, cut, expected_revision + 1, op_id)`` iff the revision is still current.

        The store checks only the revision: keeping the record sound and
        monotone is the publisher's job. The check and the write are one atomic
        step, so two writers that read the same revision cannot both win.
        """
        ...


class MembershipStore(Protocol):
    """One membership per epoch; epochs only increase; durable before their checkpoints."""

    def create_stream(self, stream: str, membership: Membership) -> PublicationRecord:
        """Store the first membership and the initial record ``(epoch, nothing, 0, None)``.

        Idempotent for the same membership; a different one for an existing
        stream is a :class:`DefiniteStoreError`.
        """
        ...

    def read_membership(self, stream: str, epoch: int | None = None) -> Membership:
        """The membership of ``epoch``, or the current (highest) one when None."""
        ...

    def write_membership(self, stream: str, membership: Membership) -> None:
        """Add the membership of a new, higher epoch.

        Idempotent when that exact membership is already stored; a lower or
        equal epoch with different content is a :class:`DefiniteStoreError`.
        """
        ...


class CheckpointStore(Protocol):
    """Partition checkpoints keyed by (stream, epoch, partition), fenced by generation."""

    def read_checkpoint(self, stream: str, epoch: int, partition: str) -> Checkpoint | None:
        """The stored checkpoint of ``partition`` in ``epoch``, if any."""
        ...

    def read_checkpoints(self, stream: str, epoch: int) -> Sequence[Checkpoint]:
        """Every stored checkpoint of ``epoch``, in partition-name order."""
        ...

    def write_checkpoint(
        self, stream: str, expected_generation: int | None, checkpoint: Checkpoint
    ) -> CheckpointWrite:
        """Store ``checkpoint`` with generation ``expected_generation + 1`` (1 when None).

        Applied only when the stored generation equals ``expected_generation``
        (no checkpoint stored when None): a late retry carrying an older
        generation loses and never overwrites the newer checkpoint. The
        checkpoint's epoch must have a durable membership naming its partition
        (:class:`DefiniteStoreError` otherwise).
        """
        ...


class BatchCheckpointStore(Protocol):
    """Many fenced checkpoint writes in one transaction: a reader serving many partitions."""

    def write_checkpoints(self, stream: str, writes: Sequence[BatchWrite]) -> list[CheckpointWrite]:
        """Many conditional checkpoint writes committed as one durable transaction.

        Each ``(expected_generation, checkpoint)`` is decided exactly as
        :meth:`write_checkpoint` decides it, in list order (a later write of the
        same partition sees an earlier one applied), and its result comes back
        at the same index: a write that loses its generation race loses alone
        (:class:`CheckpointConflict`); the others apply. Every write is checked
        before any is applied: one bad value or one checkpoint without a
        durable membership naming its partition refuses the whole batch
        (nothing is written). All applied writes become durable together, so
        a crash or a lost response leaves all of them or none (an
        :class:`IndefiniteStoreError` means: reread, as for one write).

        Cost: one transaction and one fsync for the batch, O(B log N) for B
        writes to an epoch of N partitions. Keep batches to a few thousand
        writes: the store's write lock is held while one commits.
        """
        ...


class SummaryStore(Protocol):
    """The merge input of an epoch in one O(log N) read: a publisher at any number of partitions."""

    def read_merge_summary(self, stream: str, epoch: int) -> MergeSummary:
        """The :class:`~fencepost.impl.merge.MergeSummary` of ``epoch``, in one atomic read.

        Equal to ``summarize(read_membership(stream, epoch), read_checkpoints(stream,
        epoch))`` taken at one instant (one snapshot), so a publisher deciding
        from it decides exactly as from the vector. Raises
        :class:`DefiniteStoreError` when ``epoch`` has no membership.

        Cost on the durable backends: a few index probes, O(log N) for N
        partitions, and O(1) data transferred, whatever the number of
        checkpoints, publishers or writes so far.
        """
        ...


class OutcomeStore(Protocol):
    """Terminal outcomes of events, recorded idempotently by event id."""

    def record_outcome(self, stream: str, event_id: str, outcome: str) -> str:
        """Record ``outcome`` for ``event_id`` unless one is stored; return the stored one.

        The first durable outcome wins: a replayed event (overlapping page,
        retried fetch) never changes it.
        """
        ...

    def outcomes(self, stream: str, event_ids: Sequence[str]) -> dict[str, str]:
        """The stored outcomes of those of ``event_ids`` that have one."""
        ...


class Store(
    PublicationStore,
    MembershipStore,
    CheckpointStore,
    BatchCheckpointStore,
    SummaryStore,
    OutcomeStore,
    Protocol,
):
    """Everything one backend provides. ``close`` releases connections and files."""

    def close(self) -> None:
        """Release the backend's resources; the durable state stays."""
        ...


# --- Rules every backend enforces the same way -------------------------------------
#
# The backends differ in how they make a check and a write one atomic step; what
# they check is the same, so it lives here once.


def check_name(value: object, field: str) -> str:
    """A stream name, event id or outcome: a non-empty string storable as UTF-8."""
    if type(value) is not str or not value:
        raise InvalidValue(field, value, "a non-empty string is required")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidValue(field, value, "not encodable as UTF-8; it could not be stored") from None
    return value


def require_not_behind(store: PublicationStore, stream: str, seen_revision: int) -> None:
    """Raise :class:`StoreBehind` if ``stream``'s record is older than ``seen_revision``.

    The caller says what it saw before (the revision a previous run reported);
    every write raises the revision by one, so a smaller one means lost writes.
    Cost: one record read.
    """
    check_revision(seen_revision, "seen_revision")
    record = store.read_publication(stream)
    if record.revision < seen_revision:
        raise StoreBehind(
            f"stream {stream!r} is at revision {record.revision}, behind revision "
            f"{seen_revision} seen before: {seen_revision - record.revision} acknowledged "
            "publication(s) are gone, so the store was rolled back (a restored backup, a "
            "damaged write-ahead log); do not publish from it before finding out why"
        )


def check_revision(value: object, field: str) -> int:
    """A revision or generation the caller read: a non-negative int, never a bool."""
    if type(value) is not int or value < 0:
        raise InvalidValue(field, value, "a non-negative integer is required")
    return value


#: The largest counter (epoch, revision, generation) a durable store keeps: a signed
#: 64-bit column in SQLite and PostgreSQL alike.
COUNTER_MAX = 2**63 - 1


def check_counter(value: int, field: str, store: str) -> int:
    """``value`` if it fits a durable store's 64-bit counter column; a definite error
    naming ``field`` and ``store`` (nothing was written) when it does not."""
    if value > COUNTER_MAX:
        raise DefiniteStoreError(
            f"{field} {value} does not fit the {store} store (at most 2**63-1); "
            "counters that large are not meaningful"
        )
    return value


def check_token(checkpoint: Checkpoint) -> None:
    """The opaque token must survive storage byte for byte (no lone surrogates)."""
    if checkpoint.token is not None:
        try:
            checkpoint.token.encode("utf-8")
        except UnicodeEncodeError:
            raise InvalidValue(
                "checkpoint.token",
                checkpoint.token,
                "not encodable as UTF-8; it could not be stored",
            ) from None


def admit_membership(stream: str, stored: Mapping[int, Membership], membership: Membership) -> bool:
    """Decide a membership write against the stored epochs of ``stream``.

    True: a new, higher epoch to store. False: that exact membership is already
    stored (an idempotent retry). Anything else breaks "one membership per epoch,
    epochs only increase" and is refused with a :class:`DefiniteStoreError`.
    """
    if not isinstance(membership, Membership):
        raise InvalidValue("membership", membership, "a Membership is required")
    existing = stored.get(membership.epoch)
    if existing is not None:
        if existing == membership:
            return False
        raise DefiniteStoreError(
            f"stream {stream!r} already has a different membership for epoch {membership.epoch}; "
            "a membership is never changed in place: write it under a new, higher epoch"
        )
    if stored and membership.epoch < max(stored):
        raise DefiniteStoreError(
            f"stream {stream!r} is at epoch {max(stored)}; epoch {membership.epoch} is older "
            "and epochs only increase: write the new membership under a higher epoch"
        )
    return True


def check_batch(writes: object) -> list[BatchWrite]:
    """A batch of checkpoint writes, each ``(expected_generation or None, Checkpoint)``."""
    if isinstance(writes, str | bytes) or not isinstance(writes, Sequence):
        raise InvalidValue("writes", writes, "a list of (expected_generation, checkpoint) pairs")
    batch: list[BatchWrite] = []
    for i, item in enumerate(writes):
        if not isinstance(item, tuple) or len(item) != 2:
            raise InvalidValue(f"writes[{i}]", item, "a pair (expected_generation, checkpoint)")
        expected, checkpoint = item
        if expected is not None:
            check_revision(expected, f"writes[{i}].expected_generation")
        if not isinstance(checkpoint, Checkpoint):
            raise InvalidValue(f"writes[{i}].checkpoint", checkpoint, "a Checkpoint is required")
        batch.append((expected, checkpoint))
    return batch


def admit_checkpoint(stream: str, membership: Membership | None, checkpoint: Checkpoint) -> None:
    """Refuse a checkpoint whose epoch has no durable membership naming its partition.

    A membership is durable before any checkpoint of its epoch (docs/semantics.md
    section 6), so a checkpoint always has the membership it will be judged
    against, and its cut fits the partition's order.
    """
    if not isinstance(checkpoint, Checkpoint):
        raise InvalidValue("checkpoint", checkpoint, "a Checkpoint is required")
    check_token(checkpoint)
    if membership is None:
        raise DefiniteStoreError(
            f"stream {stream!r} has no membership for epoch {checkpoint.epoch}: "
            "write the epoch's membership before any checkpoint of it"
        )
    if checkpoint.partition not in membership.partitions:
        raise DefiniteStoreError(
            f"partition {checkpoint.partition!r} is not a member of stream {stream!r} in epoch "
            f"{checkpoint.epoch} (members: {', '.join(sorted(membership.partitions)) or 'none'})"
        )
    try:
        checkpoint.cut.validated(membership.order_of(checkpoint.partition), "checkpoint.cut")
    except InvalidValue as exc:
        raise DefiniteStoreError(
            f"checkpoint of partition {checkpoint.partition!r} does not fit its order: {exc}"
        ) from exc
