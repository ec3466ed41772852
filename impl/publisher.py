"""The publisher: moves a stream's publication record forward, and only ever truthfully.

One :meth:`Publisher.attempt` is one publication attempt of docs/semantics.md
sections 5 and 6. It reads the record, the current membership and that epoch's
checkpoints (exactly the reads of the conformance protocol's publisher level,
in that order), merges them, and writes the merged cut conditionally on the
revision it read. What it guarantees:

- **Cost independent of the number of partitions.** When the store offers
  ``read_merge_summary`` (every fencepost backend does) the checkpoint read is
  one atomic read of the :class:`~fencepost.impl.merge.MergeSummary` (index
  probes: O(log N) in the database, O(1) transferred), and the decision is
  :func:`~fencepost.impl.merge.merge_summary`, the same rule :func:`merge`
  applies to the whole vector. A store without it (the conformance wire) is
  read with ``read_checkpoints`` and merged, O(N). Either way an attempt costs
  O(1) in publishers and in history length (the record is one row), plus the
  retries a conflict with another publisher causes.

- **Fenced.** The write names the revision read; if another publisher moved the
  record first, the write loses, and the attempt rereads everything and
  recomputes before proposing again. A stale cut is never reused.
- **Monotone.** Within an epoch only a strictly stronger cut is written. The
  record's epoch never goes back: a claim for an epoch older than the record's
  is never written.
- **Cutover.** Under :attr:`Policy.MONOTONE` (the default) the record moves to
  a new epoch only once that epoch's merged cut is at least the record's cut;
  until then the attempt reports ``withheld`` with ``cutover_pending`` and the
  old epoch's claim stays (it is still true about the old membership). Under
  :attr:`Policy.RESET` the record may move to the new epoch with a lower cut;
  the epoch change is what tells readers.
- **Honest about lost responses.** A write whose response is lost is settled
  by an authoritative reread: same epoch and a cut at or past the proposal is
  ``confirmed`` (the claim is present; only a matching op_id says this attempt
  wrote it); behind means recompute and retry; another epoch means the cutover
  rule decides again. ``published`` is reported only for an acknowledged write.
- **Bounded.** At most ``max_retries`` retries (after a conflict, a lost
  response, a read timeout); then ``gave_up``, with whatever the attempt
  authoritatively knows and nothing it does not.
- **Never from a store that went back, when guarded.** With
  ``guard=FrontierGuard()`` (:mod:`fencepost.impl.frontier_guard`, opt-in) every
  record the store answers is checked against the furthest one this publisher
  saw, and an attempt that meets a store behind it (a standby promoted after
  asynchronous replication, a restored backup) raises
  :class:`~fencepost.impl.frontier_guard.StoreRegressed` before writing anything.

Every decision is logged as one JSON line (logger ``fencepost.publisher``) with
stream, worker, op_id, decision, epoch, cut and revision.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Protocol

from fencepost.impl.cuts import Cut, compare_cuts
from fencepost.impl.errors import InvalidValue
from fencepost.impl.frontier_guard import FrontierGuard
from fencepost.impl.merge import MergeSummary, Withheld, WithheldReason, merge, merge_summary
from fencepost.impl.orders import Order
from fencepost.impl.records import Checkpoint, Membership, PublicationRecord
from fencepost.impl.stores import Applied, IndefiniteStoreError, PublicationWrite

_LOG = logging.getLogger("fencepost.publisher")


class Policy(Enum):
    """The membership cutover policy (docs/semantics.md section 6)."""

    MONOTONE = "monotone"
    RESET = "reset"


class Outcome(Enum):
    """How one publication attempt ended."""

    PUBLISHED = "published"
    CONFIRMED = "confirmed"
    UNCHANGED = "unchanged"
    WITHHELD = "withheld"
    GAVE_UP = "gave_up"


@dataclass(frozen=True, slots=True)
class PublishResult:
    """The end of one attempt.

    ``epoch`` and ``cut`` are the public claim as the attempt last knew it
    authoritatively: the written claim (``published``), the authoritative
    record at or past the proposal (``confirmed``), the unchanged record
    (``unchanged``, ``withheld``), the last record read (``gave_up``; None when
    no read succeeded). ``reason`` is set only for ``withheld``. ``op_id`` is
    the op_id of the last write attempted (None if none was), ``attempts`` the
    number of writes attempted, ``record`` the last record read or written.
    ``proposal`` is the last cut proposed and ``detail`` a human explanation.
    """

    outcome: Outcome
    epoch: int | None
    cut: Cut | None
    reason: WithheldReason | None
    op_id: str | None
    attempts: int
    record: PublicationRecord | None
    proposal: Cut | None = None
    detail: str = ""

    @property
    def attributed(self) -> bool:
        """True when the stored record carries this attempt's op_id (this attempt wrote it)."""
        return (
            self.record is not None and self.op_id is not None and self.record.op_id == self.op_id
        )


class PublisherStore(Protocol):
    """The store calls a publisher makes (the conformance publisher level).

    A store may also offer ``read_merge_summary(stream, epoch) -> MergeSummary``
    (:class:`~fencepost.impl.stores.CheckpointStore`); the publisher then reads
    that instead of ``read_checkpoints``.
    """

    def read_publication(self, stream: str) -> PublicationRecord: ...

    def read_membership(self, stream: str, epoch: int | None = None) -> Membership: ...

    def read_checkpoints(self, stream: str, epoch: int) -> Sequence[Checkpoint]: ...

    def write_publication(
        self, stream: str, expected_revision: int, epoch: int, cut: Cut, op_id: str
    ) -> PublicationWrite: ...


@dataclass(frozen=True, slots=True)
class _Propose:
    epoch: int
    cut: Cut
    order: Order


@dataclass(frozen=True, slots=True)
class _Stop:
    outcome: Outcome
    reason: WithheldReason | None
    detail: str
    proposal: Cut | None = None


#: The merge rule an attempt applies (:func:`~fencepost.impl.merge.merge`, docs/semantics.md
#: section 4); a parameter only so that a known bug can be planted without copying this file.
MergeRule = Callable[[Membership, Sequence[Checkpoint]], Cut | Withheld]


def decide(
    record: PublicationRecord,
    membership: Membership,
    checkpoints: Sequence[Checkpoint],
    policy: Policy,
    merge_rule: MergeRule = merge,
) -> _Propose | _Stop:
    """The pure core of an attempt: what to write, or why to stop, given fresh reads.

    Cost: O(N log N) for N members (the vector is merged with ``merge_rule``).
    """
    return _decide_merged(record, membership, lambda: merge_rule(membership, checkpoints), policy)


def decide_summary(
    record: PublicationRecord,
    membership: Membership,
    summary: MergeSummary,
    policy: Policy,
) -> _Propose | _Stop:
    """:func:`decide` from the store's :class:`~fencepost.impl.merge.MergeSummary` of the vector.

    The same decision as :func:`decide` over the vector the summary was read
    from (both go through :func:`~fencepost.impl.merge.merge_summary`), in O(1).
    """
    return _decide_merged(record, membership, lambda: merge_summary(membership, summary), policy)


def _decide_merged(
    record: PublicationRecord,
    membership: Membership,
    merged_by: Callable[[], Cut | Withheld],
    policy: Policy,
) -> _Propose | _Stop:
    if membership.epoch < record.epoch:
        return _Stop(
            Outcome.WITHHELD,
            WithheldReason.EPOCH_MISMATCH,
            f"the record is at epoch {record.epoch} but the current membership read is epoch "
            f"{membership.epoch}; a claim for an older epoch is never written",
        )
    merged = merged_by()
    if isinstance(merged, Withheld):
        return _Stop(Outcome.WITHHELD, merged.reason, merged.detail)
    order = membership.order
    assert order is not None  # merge gives a cut only when every member has the one order
    try:
        progress = compare_cuts(order, merged, record.cut)
    except InvalidValue:
        if membership.epoch == record.epoch:
            return _Stop(
                Outcome.WITHHELD,
                WithheldReason.INCOMPARABLE,
                f"the record's cut {record.cut} does not fit order {order.name!r} of its own epoch",
                merged,
            )
        if policy is Policy.MONOTONE:
            return _Stop(
                Outcome.WITHHELD,
                WithheldReason.CUTOVER_PENDING,
                f"epoch {membership.epoch}'s cut {merged} cannot be compared with the record's "
                f"{record.cut} (another order); only the reset policy can cut over",
                merged,
            )
        return _Propose(membership.epoch, merged, order)
    if membership.epoch == record.epoch:
        if progress <= 0:
            return _Stop(
                Outcome.UNCHANGED, None, f"merged {merged} is not ahead of the record", merged
            )
        return _Propose(membership.epoch, merged, order)
    if policy is Policy.MONOTONE and progress < 0:
        return _Stop(
            Outcome.WITHHELD,
            WithheldReason.CUTOVER_PENDING,
            f"epoch {membership.epoch}'s cut {merged} is still below the record's {record.cut} "
            f"(epoch {record.epoch}); the monotone policy waits",
            merged,
        )
    return _Propose(membership.epoch, merged, order)


class Publisher:
    """Publishes the merged frontier of ``stream`` as worker ``worker``.

    ``worker`` should be unique per running process (e.g. ``host-pid``): op_ids
    are ``"<worker>-<n>"`` with ``n`` counting this object's writes from
    ``first_op``, so they are fresh per write and attribute a record to one
    attempt only if no other process uses the same worker name.

    ``guard``: a :class:`~fencepost.impl.frontier_guard.FrontierGuard` (off by
    default; one may be shared by the publishers of a process) that makes
    :meth:`attempt` refuse a store whose record went back behind one seen before.
    """

    def __init__(
        self,
        store: PublisherStore,
        stream: str,
        worker: str,
        policy: Policy = Policy.MONOTONE,
        max_retries: int = 3,
        log: logging.Logger | None = None,
        *,
        first_op: int = 1,
        guard: FrontierGuard | None = None,
    ) -> None:
        if not isinstance(policy, Policy):
            raise ValueError(f"policy must be a Policy (monotone or reset), got {policy!r}")
        if type(max_retries) is not int or max_retries < 0:
            raise ValueError(f"max_retries must be a non-negative int, got {max_retries!r}")
        if type(worker) is not str or not worker:
            raise ValueError(f"worker must be a non-empty string, got {worker!r}")
        self.store = store
        self.stream = stream
        self.worker = worker
        self.policy = policy
        self.max_retries = max_retries
        self.log = log if log is not None else _LOG
        self._next_op = first_op
        self.guard = guard

    def _op_id(self) -> str:
        op_id = f"{self.worker}-{self._next_op}"
        self._next_op += 1
        return op_id

    def attempt(self) -> PublishResult:
        """One publication attempt (docs/semantics.md sections 5 and 6); see the module doc."""
        retries = 0
        writes = 0
        op_id: str | None = None
        known: PublicationRecord | None = None
        proposal: Cut | None = None

        def result(
            outcome: Outcome,
            record: PublicationRecord | None,
            reason: WithheldReason | None = None,
            detail: str = "",
        ) -> PublishResult:
            done = PublishResult(
                outcome,
                None if record is None else record.epoch,
                None if record is None else record.cut,
                reason,
                op_id,
                writes,
                record,
                proposal,
                detail,
            )
            if self.log.isEnabledFor(logging.INFO):
                self._emit(outcome.value, op_id, record, reason=reason, detail=detail)
            return done

        while True:
            if retries > self.max_retries:
                return result(Outcome.GAVE_UP, known, detail="retry budget spent")
            try:
                record = self.store.read_publication(self.stream)
                self._saw(record)
                known = record
                membership = self.store.read_membership(self.stream)
                if self.guard is not None:
                    self.guard.learn(self.stream, membership)
                checkpoints = self._read_checkpoints(membership.epoch)
            except IndefiniteStoreError as exc:
                retries += 1
                self._emit("read_timeout", op_id, known, detail=str(exc))
                continue

            if isinstance(checkpoints, MergeSummary):
                decision = decide_summary(record, membership, checkpoints, self.policy)
            else:
                decision = self._decide(record, membership, checkpoints)
            if isinstance(decision, _Stop):
                proposal = decision.proposal
                return result(decision.outcome, record, decision.reason, decision.detail)

            proposal = decision.cut
            op_id = self._op_id()
            writes += 1
            self._emit("propose", op_id, record, epoch=decision.epoch, cut=decision.cut)
            try:
                written = self.store.write_publication(
                    self.stream, record.revision, decision.epoch, decision.cut, op_id
                )
            except IndefiniteStoreError:
                # The write may or may not have happened: only the stored record can say.
                authoritative = self._authoritative_read(op_id)
                if authoritative is None:
                    return result(
                        Outcome.GAVE_UP,
                        known,
                        detail="write response lost and the record could not be reread",
                    )
                self._saw(authoritative)
                known = authoritative
                if authoritative.epoch == decision.epoch and self._at_or_past(
                    decision.order, authoritative.cut, decision.cut
                ):
                    return result(Outcome.CONFIRMED, authoritative)
                retries += 1
                if authoritative.epoch == decision.epoch:
                    self._emit("lost_response_behind", op_id, authoritative)
                else:
                    self._emit("lost_response_epoch_changed", op_id, authoritative)
                continue
            self._saw(written.record)
            if isinstance(written, Applied):
                known = written.record
                return result(Outcome.PUBLISHED, written.record)
            known = written.record
            retries += 1
            self._emit("conflict", op_id, written.record)

    def _saw(self, record: PublicationRecord) -> None:
        """Show the guard (if any) a record the store answered; it raises if the store
        went back (:class:`~fencepost.impl.frontier_guard.StoreRegressed`)."""
        if self.guard is not None:
            self.guard.observe(self.stream, record)

    def _read_checkpoints(self, epoch: int) -> Sequence[Checkpoint] | MergeSummary:
        """The attempt's one atomic read of ``epoch``'s checkpoints, which it decides from.

        The store's ``read_merge_summary`` when it has one and this class decides
        with the production rule: O(1) in partitions. Otherwise (a store without
        it, or a subclass overriding :meth:`_decide`, which needs the vector)
        ``read_checkpoints``: O(N).
        """
        summary_read: Callable[[str, int], MergeSummary] | None = getattr(
            self.store, "read_merge_summary", None
        )
        if summary_read is not None and type(self)._decide is Publisher._decide:
            return summary_read(self.stream, epoch)
        return self.store.read_checkpoints(self.stream, epoch)

    def _decide(
        self,
        record: PublicationRecord,
        membership: Membership,
        checkpoints: Sequence[Checkpoint],
    ) -> _Propose | _Stop:
        """What to do given fresh reads of the whole vector (:func:`decide` under this policy).

        Called when the checkpoints were read as a vector (``read_checkpoints``).
        A subclass that overrides it keeps receiving the whole vector: overriding
        it switches the summary read off (:meth:`_read_checkpoints`).
        """
        return decide(record, membership, checkpoints, self.policy)

    def _authoritative_read(self, op_id: str) -> PublicationRecord | None:
        """Reread the record after a lost write; a few tries, None if it stays unreadable."""
        for _ in range(self.max_retries + 1):
            try:
                return self.store.read_publication(self.stream)
            except IndefiniteStoreError as exc:
                self._emit("read_timeout", op_id, None, detail=str(exc))
        return None

    @staticmethod
    def _at_or_past(order: Order, stored: Cut, proposed: Cut) -> bool:
        try:
            return compare_cuts(order, stored, proposed) >= 0
        except InvalidValue:
            return False

    def _emit(
        self,
        decision: str,
        op_id: str | None,
        record: PublicationRecord | None,
        *,
        epoch: int | None = None,
        cut: Cut | None = None,
        reason: WithheldReason | None = None,
        detail: str = "",
    ) -> None:
        if not self.log.isEnabledFor(logging.INFO):
            return
        shown = cut if cut is not None else (record.cut if record is not None else None)
        line: dict[str, object] = {
            "stream": self.stream,
            "worker": self.worker,
            "op_id": op_id,
            "decision": decision,
            "epoch": epoch if epoch is not None else (record.epoch if record else None),
            "cut": None if shown is None else str(shown),
            "revision": record.revision if record else None,
        }
        if reason is not None:
            line["reason"] = reason.value
        if detail:
            line["detail"] = detail
        if record is not None and record.op_id is not None:
            line["record_op_id"] = record.op_id
        self.log.info(json.dumps(line, sort_keys=True))
