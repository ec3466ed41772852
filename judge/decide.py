"""What one publication attempt may honestly report, judged from what it was told.

docs/semantics.md sections 5 and 6 decide an attempt from its reads: the
record, the current membership and that membership's checkpoints
(:func:`decide`). An attempt is told more than its explicit reads: a
``conflict`` carries the current record, and an acknowledged write returns the
new one. Every record an attempt is *shown*, wherever it came from, counts as a
read of the record (docs/conformance-protocol.md, level ``publisher``).
:class:`AttemptLog` keeps all of it, in order, and :func:`judge_outcome` checks
the reported outcome against it:

- ``published``: an acknowledged write of this attempt, and the reported epoch
  and cut are that write's claim;
- ``confirmed``: a write of this attempt lost its response, and a record shown
  *after* it, in the write's epoch, claims at least the write's cut; the
  reported cut lies between the two and the reported epoch is theirs. A moved
  revision alone proves nothing;
- ``unchanged`` / ``withheld``: what :func:`decide` gives from the latest record
  shown, the latest membership and the latest checkpoints read, carrying that
  record's epoch and cut;
- ``gave_up``: at least one conflict or lost response in this attempt, and the
  reported epoch and cut, if any, are a record the attempt was shown.

docs/conformance.md ("Choices a correct implementation may make") lists what
these rules allow and why.

Cost: O(W x S) for an attempt with W writes and S records shown, plus one merge.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from fencepost.judge.cuts import compare, same_claim
from fencepost.judge.merge import Withheld, WithheldReason, merge
from fencepost.judge.properties import Finding, Property, show
from fencepost.judge.values import BadValue, Checkpoint, Cut, Membership, Order, Record


@dataclass(frozen=True, slots=True)
class Decision:
    """What sections 5 and 6 decide from one view: write a cut, unchanged, or withheld."""

    kind: str  # "write", "unchanged" or "withheld"
    reason: WithheldReason | None = None
    cut: Cut | None = None

    def __str__(self) -> str:
        if self.kind == "write":
            return f"write {self.cut}"
        if self.kind == "withheld":
            assert self.reason is not None
            return f"withheld {self.reason.value}"
        return "unchanged"


def decide(
    record: Record, membership: Membership, checkpoints: tuple[Checkpoint, ...], policy: str
) -> Decision:
    """The decision of an attempt that read ``record``, ``membership`` and ``checkpoints``.

    A membership older than the record is withheld ``epoch_mismatch``: no claim
    for an older epoch is ever written again (the fence). Otherwise the merge
    decides: withheld with its first reason; in the record's epoch, ``write``
    when strictly ahead of the record and ``unchanged`` when not; in a newer
    epoch, ``write`` unless ``monotone`` must wait (``cutover_pending``). Cuts of
    different orders across a cutover cannot be compared: the new epoch's claim
    is written under ``reset`` and waits under ``monotone``.
    """
    if membership.epoch < record.epoch:
        return Decision("withheld", WithheldReason.EPOCH_MISMATCH)
    return decide_merged(record, membership, merge(membership, checkpoints), policy)


def decide_merged(
    record: Record, membership: Membership, merged: Cut | Withheld, policy: str
) -> Decision:
    """:func:`decide` given the merge's result ``merged`` (the right one, or a wrong one
    whose consequences the harness measures: :mod:`fencepost.harness.power`)."""
    if membership.epoch < record.epoch:
        return Decision("withheld", WithheldReason.EPOCH_MISMATCH)
    if isinstance(merged, Withheld):
        return Decision("withheld", merged.reason)
    order = membership.order_of(sorted(membership.partitions)[0])
    try:
        progress = compare(order, merged, record.cut)
    except BadValue:
        if membership.epoch == record.epoch:
            return Decision("withheld", WithheldReason.INCOMPARABLE)
        if policy == "monotone":
            return Decision("withheld", WithheldReason.CUTOVER_PENDING)
        return Decision("write", cut=merged)
    if membership.epoch == record.epoch:
        return Decision("write", cut=merged) if progress > 0 else Decision("unchanged")
    if policy == "monotone" and progress < 0:
        return Decision("withheld", WithheldReason.CUTOVER_PENDING)
    return Decision("write", cut=merged)


class WriteAnswer(Enum):
    """How a ``write_publication`` was answered (the SUT cannot tell the two lost ones apart)."""

    APPLIED = "applied"
    CONFLICT = "conflict"
    LOST = "lost"
    APPLIED_LOST = "applied_lost"

    @property
    def lost(self) -> bool:
        return self in (WriteAnswer.LOST, WriteAnswer.APPLIED_LOST)


@dataclass(frozen=True, slots=True)
class WriteSeen:
    """One write of an attempt, in the attempt's sequence of events."""

    seq: int
    op_id: str
    epoch: int
    cut: Cut
    answer: WriteAnswer


@dataclass(frozen=True, slots=True)
class Shown:
    """A record the attempt was shown, and by which reply (``read``, ``conflict``, ``ack``)."""

    seq: int
    record: Record
    source: str


@dataclass
class AttemptLog:
    """Everything one publication attempt was told, in order."""

    policy: str
    seq: int = 0
    shown: list[Shown] = field(default_factory=list)
    membership: Membership | None = None
    checkpoints: tuple[int, tuple[Checkpoint, ...]] | None = None
    writes: list[WriteSeen] = field(default_factory=list)
    troubles: int = 0

    def _tick(self) -> int:
        self.seq += 1
        return self.seq

    def show_record(self, record: Record, source: str = "read") -> None:
        self.shown.append(Shown(self._tick(), record, source))

    def read_membership(self, membership: Membership) -> None:
        self._tick()
        self.membership = membership

    def read_checkpoints(self, epoch: int, checkpoints: tuple[Checkpoint, ...]) -> None:
        self._tick()
        self.checkpoints = (epoch, checkpoints)

    def wrote(self, op_id: str, epoch: int, cut: Cut, answer: WriteAnswer) -> None:
        """A write and its answer; a record the answer carried is shown separately."""
        self.writes.append(WriteSeen(self._tick(), op_id, epoch, cut, answer))
        if answer is not WriteAnswer.APPLIED:
            self.troubles += 1

    def trouble(self) -> None:
        """A read whose response was lost."""
        self._tick()
        self.troubles += 1


@dataclass(frozen=True, slots=True)
class Reported:
    """How the attempt ended: ``publish_ok``'s outcome, epoch, cut and reason."""

    outcome: str
    epoch: int | None
    cut: Cut
    reason: str | None = None

    def __str__(self) -> str:
        return self.outcome if self.reason is None else f"{self.outcome} {self.reason}"


def judge_outcome(order: Order, log: AttemptLog, reported: Reported) -> list[Finding]:
    """The reported outcome against what this attempt was told (see the module docstring)."""
    if reported.outcome == "published":
        return _published(order, log, reported)
    if reported.outcome == "confirmed":
        return _confirmed(order, log, reported)
    if reported.outcome == "gave_up":
        return _gave_up(order, log, reported)
    return _decided(order, log, reported)


def _same(order: Order, a: Cut, b: Cut) -> bool:
    try:
        return same_claim(order, a, b)
    except BadValue:
        return False


def _published(order: Order, log: AttemptLog, reported: Reported) -> list[Finding]:
    acks = [w for w in log.writes if w.answer is WriteAnswer.APPLIED]
    if not acks:
        lost = [w for w in log.writes if w.answer.lost]
        why = (
            f"its write {lost[-1].op_id} lost its response"
            if lost
            else "it has no acknowledged write"
        )
        return [
            (
                Property.LOST_RESPONSE_HONESTY,
                f"reported published {show(reported.epoch, reported.cut)} but {why} "
                "in this attempt",
            )
        ]
    if any(w.epoch == reported.epoch and _same(order, w.cut, reported.cut) for w in acks):
        return []
    last = acks[-1]
    return [
        (
            Property.HONEST_OUTCOME,
            f"reported published {show(reported.epoch, reported.cut)} but the acknowledged "
            f"write {last.op_id} was {show(last.epoch, last.cut)}",
        )
    ]


def _confirmed(order: Order, log: AttemptLog, reported: Reported) -> list[Finding]:
    lost = [w for w in log.writes if w.answer.lost]
    if not lost:
        return [
            (
                Property.LOST_RESPONSE_HONESTY,
                f"reported confirmed {show(reported.epoch, reported.cut)} without any write of "
                "this attempt whose response was lost",
            )
        ]
    for write in lost:
        for seen in log.shown:
            record = seen.record
            if seen.seq <= write.seq or record.epoch != write.epoch:
                continue
            if reported.epoch != record.epoch:
                continue
            try:
                if (
                    compare(order, record.cut, write.cut) >= 0
                    and compare(order, write.cut, reported.cut) <= 0
                    and compare(order, reported.cut, record.cut) <= 0
                ):
                    return []
            except BadValue:
                continue
    after = [str(s.record) for s in log.shown if any(s.seq > w.seq for w in lost)] or ["none"]
    return [
        (
            Property.LOST_RESPONSE_HONESTY,
            f"reported confirmed {show(reported.epoch, reported.cut)} after its write "
            f"{lost[-1].op_id} of {show(lost[-1].epoch, lost[-1].cut)} lost its response, "
            f"but no later record it was shown had that claim (records after it: "
            f"{', '.join(after)})",
        )
    ]


def _gave_up(order: Order, log: AttemptLog, reported: Reported) -> list[Finding]:
    found: list[Finding] = []
    if log.troubles == 0:
        found.append(
            (
                Property.HONEST_OUTCOME,
                "gave up although no call of this attempt conflicted or lost its response",
            )
        )
    if reported.epoch is not None and not any(
        s.record.epoch == reported.epoch and _same(order, s.record.cut, reported.cut)
        for s in log.shown
    ):
        found.append(
            (
                Property.HONEST_OUTCOME,
                f"gave up reporting {show(reported.epoch, reported.cut)}, a record this attempt "
                "was never shown",
            )
        )
    return found


def _decided(order: Order, log: AttemptLog, reported: Reported) -> list[Finding]:
    if not log.shown or log.membership is None or log.checkpoints is None:
        return [
            (
                Property.HONEST_OUTCOME,
                f"reported {reported} without having read the record, the membership and the "
                "checkpoints in this attempt",
            )
        ]
    latest = log.shown[-1]
    record = latest.record
    epoch, checkpoints = log.checkpoints
    if epoch != log.membership.epoch and log.membership.epoch >= record.epoch:
        # Section 5: the attempt merges "the checkpoints of that membership's epoch". A
        # decision from another epoch's checkpoints (the record's epoch + 1 assumed on a
        # cutover that skipped epochs, or a vector read before the membership moved) is
        # not supported by the attempt's reads, whatever it happens to say.
        return [
            (
                Property.HONEST_OUTCOME,
                f"reported {reported} from the checkpoints of epoch {epoch}, but the latest "
                f"membership it read is epoch {log.membership.epoch}: an attempt decides from "
                "the checkpoints of its membership's epoch (docs/semantics.md section 5)",
            )
        ]
    try:
        decision = decide(record, log.membership, checkpoints, log.policy)
    except BadValue:
        return []
    found: list[Finding] = []
    if reported.outcome != decision.kind or (
        decision.kind == "withheld"
        and (decision.reason is None or reported.reason != decision.reason.value)
    ):
        via = "" if latest.source == "read" else f" (shown by a {latest.source} reply)"
        found.append(
            (
                Property.HONEST_OUTCOME,
                f"reported {reported} but the latest record it was shown "
                f"{show(record.epoch, record.cut)}{via}, membership epoch "
                f"{log.membership.epoch} and {len(checkpoints)} checkpoint(s) of epoch {epoch} "
                f"decide {decision}",
            )
        )
    if reported.epoch != record.epoch or not _same(order, reported.cut, record.cut):
        found.append(
            (
                Property.HONEST_OUTCOME,
                f"reported {reported} carrying {show(reported.epoch, reported.cut)} but the "
                f"latest record it was shown is {show(record.epoch, record.cut)}",
            )
        )
    return found
