"""The oracle: pure judgements of every store change and every reported outcome.

Each ``judge_*`` function takes the world (ground truth and stores) and what
just happened, and returns the broken rules with a message in domain words.
They are called by the runner after the step they concern; ``judge_state``
after *every* step.

How each judgement is decided (documented in docs/conformance.md):

- **soundness** (after every step): for the record ``(e, c)`` every event of
  every member of epoch ``e`` whose position is in ``D(c)`` is final and has an
  outcome recorded. Positions are tested with the harness's own downset test
  (:func:`fencepost.harness.world.in_downset`).
- **publication writes** (each accepted ``write_publication``): the epoch never
  decreases (*epoch fence*); within an epoch the cut never decreases, and under
  the ``monotone`` policy not at a cutover either (*monotone publication*);
  the cut is at most what every member of its epoch ever certified in a valid
  final checkpoint of that epoch and scope (*certified support*; a
  ``through x`` over a member that certified only ``before x`` is reported as
  *no relabeling*).
- **checkpoint writes** (each accepted ``write_checkpoint``): labels are the
  ingest's; the token is one the provider issued for that partition and epoch;
  the cut never decreases within the key (*checkpoint monotonicity*); a final
  checkpoint's cut is covered by a final claim the provider made, and every
  event in its downset is final in the ground truth (a scripted claim may be
  untrue) and has a recorded outcome (*checkpoint truth*). A
  provisional checkpoint promises nothing, so only its labels and monotonicity
  are judged.
- **publish_ok** against what *this attempt* was told (its :class:`AttemptLog`):
  ``published`` needs an acknowledged write of the same claim; ``confirmed``
  needs a write whose response was lost and a later read in the same epoch at
  or past it, the reported cut lying between the two (*lost-response
  honesty*); ``unchanged`` and ``withheld`` must be what docs/semantics.md sections
  5 and 6 decide from the attempt's last reads of the record, the membership
  and the checkpoints (so ``unchanged`` while that merge was ahead of the
  record in the same epoch is dishonest, and a withheld reason must be the
  first in the documented order), and they carry the record's epoch and cut;
  ``gave_up`` needs at least one conflict or lost response, and its epoch/cut,
  when given, must be a record the attempt was shown (*honest outcome*).
- **ingest_ok**: the reported cut is at most the checkpoint the store holds
  (*ingest report*).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from fencepost.harness.protocol import IngestOk, PublishOk
from fencepost.harness.rules import Rule
from fencepost.harness.world import World
from fencepost.impl.cuts import Cut, Endpoint, compare_cuts, same_claim
from fencepost.impl.errors import InvalidValue
from fencepost.impl.merge import Withheld, WithheldReason, merge
from fencepost.impl.orders import Order
from fencepost.impl.records import Checkpoint, Finality, Membership, PublicationRecord

Finding = tuple[Rule, str]


def show(epoch: int | None, cut: Cut) -> str:
    return f"(epoch {epoch}, {cut})"


@dataclass(frozen=True, slots=True)
class WriteSeen:
    """One write_publication of an attempt and how the harness answered it.

    ``outcome``: ``applied`` (acknowledged), ``conflict``, ``lost`` (response
    lost, not applied) or ``applied_lost`` (applied, response lost).
    """

    seq: int
    op_id: str
    epoch: int
    cut: Cut
    outcome: str


@dataclass
class AttemptLog:
    """What one publication attempt was told, in order (the judge of its outcome)."""

    policy: str
    seq: int = 0
    reads: list[tuple[int, PublicationRecord]] = field(default_factory=list)
    membership: Membership | None = None
    checkpoints: tuple[int, tuple[Checkpoint, ...]] | None = None
    writes: list[WriteSeen] = field(default_factory=list)
    shown: list[PublicationRecord] = field(default_factory=list)
    troubles: int = 0

    def tick(self) -> int:
        self.seq += 1
        return self.seq

    def read(self, record: PublicationRecord) -> None:
        self.reads.append((self.tick(), record))
        self.shown.append(record)


# --- state -------------------------------------------------------------------------------


def judge_state(world: World) -> list[Finding]:
    """Soundness of the current record against the ground truth."""
    record = world.record
    if record.cut.is_nothing:
        return []
    membership = world.memberships.get(record.epoch)
    if membership is None:
        return [
            (
                Rule.SOUNDNESS,
                f"the record {show(record.epoch, record.cut)} names epoch {record.epoch}, "
                "which has no durable membership",
            )
        ]
    problems: list[str] = []
    for partition in sorted(membership.partitions):
        truth = world.truth[(record.epoch, partition)]
        covered = truth.covered(record.cut)
        if covered <= min(truth.final, truth.recorded(world.outcomes)):
            continue
        for index, event in enumerate(truth.log[:covered]):
            if index >= truth.final:
                problems.append(f"event {event.id} at {event.at!r} of {partition} is not final")
            elif event.id not in world.outcomes:
                problems.append(
                    f"event {event.id} at {event.at!r} of {partition} has no durable outcome"
                )
    if not problems:
        return []
    more = f" (and {len(problems) - 3} more)" if len(problems) > 3 else ""
    return [
        (
            Rule.SOUNDNESS,
            f"the record {show(record.epoch, record.cut)} covers {'; '.join(problems[:3])}{more}",
        )
    ]


# --- publication writes -----------------------------------------------------------------


def judge_publication_write(
    world: World, old: PublicationRecord, new: PublicationRecord, policy: str
) -> list[Finding]:
    """An accepted write moved the record from ``old`` to ``new`` (already stored)."""
    order = world.order
    found: list[Finding] = []
    if new.epoch < old.epoch:
        found.append(
            (
                Rule.EPOCH_FENCE,
                f"{new.op_id} wrote epoch {new.epoch} over the record's epoch {old.epoch}: "
                f"{show(old.epoch, old.cut)} -> {show(new.epoch, new.cut)}",
            )
        )
    elif compare_cuts(order, new.cut, old.cut) < 0 and (
        new.epoch == old.epoch or policy == "monotone"
    ):
        where = "within epoch" if new.epoch == old.epoch else "at a cutover under monotone"
        found.append(
            (
                Rule.MONOTONE_PUBLICATION,
                f"{new.op_id} moved the record back {where}: "
                f"{show(old.epoch, old.cut)} -> {show(new.epoch, new.cut)}",
            )
        )
    membership = world.memberships.get(new.epoch)
    if membership is not None and not new.cut.is_nothing:
        short: list[str] = []
        relabel = False
        for partition in sorted(membership.partitions):
            best = world.certified.get((new.epoch, partition))
            if best is None:
                short.append(f"{partition} certified nothing valid in epoch {new.epoch}")
            elif compare_cuts(order, best, new.cut) < 0:
                short.append(f"{partition} certified at most {best}")
                if new.cut.endpoint is Endpoint.THROUGH and same_claim(
                    order,
                    best,
                    Cut.before(new.cut.at),  # type: ignore[arg-type]
                ):
                    relabel = True
        if short:
            rule = Rule.NO_RELABELING if relabel else Rule.CERTIFIED_SUPPORT
            found.append(
                (
                    rule,
                    f"{new.op_id} published {show(new.epoch, new.cut)} but {'; '.join(short)}",
                )
            )
    return found


# --- checkpoint writes ------------------------------------------------------------------


def judge_checkpoint_write(
    world: World,
    key: tuple[int, str],
    previous: Checkpoint | None,
    previous_injected: bool,
    written: Checkpoint,
) -> list[Finding]:
    """An accepted write stored ``written`` under ``key`` (epoch, partition)."""
    epoch, partition = key
    order = world.order
    found: list[Finding] = []
    labels = []
    if written.partition != partition:
        labels.append(f"partition {written.partition!r} instead of {partition!r}")
    if written.epoch != epoch:
        labels.append(f"epoch {written.epoch} instead of {epoch}")
    if written.scope != world.setup.scope:
        labels.append(f"scope {written.scope!r} instead of {world.setup.scope!r}")
    if labels:
        found.append(
            (
                Rule.CHECKPOINT_TRUTH,
                f"the checkpoint written for {partition} in epoch {epoch} says {', '.join(labels)}",
            )
        )
    if written.token is not None:
        issued = world.tokens.get(written.token)
        if issued is None or issued[:2] != key:
            found.append(
                (
                    Rule.CHECKPOINT_TRUTH,
                    f"the checkpoint of {partition} in epoch {epoch} carries token "
                    f"{written.token!r}, which the provider never issued for it",
                )
            )
    if (
        previous is not None
        and not previous_injected
        and compare_cuts(order, written.cut, previous.cut) < 0
    ):
        found.append(
            (
                Rule.CHECKPOINT_MONOTONICITY,
                f"{partition}'s checkpoint in epoch {epoch} went back from {previous.cut} "
                f"(generation {previous.generation}) to {written.cut} "
                f"(generation {written.generation})",
            )
        )
    if written.finality is Finality.FINAL and not written.cut.is_nothing:
        claim = world.final_claims.get(key)
        if claim is None or compare_cuts(order, written.cut, claim) > 0:
            made = "no final claim" if claim is None else f"final claims only up to {claim}"
            found.append(
                (
                    Rule.CHECKPOINT_TRUTH,
                    f"{partition} certified {written.cut} in epoch {epoch} but the provider made "
                    f"{made}",
                )
            )
        else:
            truth = world.truth[key]
            within = truth.within(written.cut)
            unfinal = [ev.id for ev in truth.log[truth.final :] if ev in within]
            missing = [ev.id for ev in within if ev.id not in world.outcomes]
            if unfinal:
                found.append(
                    (
                        Rule.CHECKPOINT_TRUTH,
                        f"{partition} certified {written.cut} in epoch {epoch} but events "
                        f"{', '.join(unfinal)} in its downset are not final at the source "
                        "(the provider's final claim was untrue)",
                    )
                )
            elif missing:
                found.append(
                    (
                        Rule.CHECKPOINT_TRUTH,
                        f"{partition} certified {written.cut} in epoch {epoch} but events "
                        f"{', '.join(missing)} in its downset have no recorded outcome",
                    )
                )
    return found


def judge_ingest_ok(world: World, key: tuple[int, str], reply: IngestOk) -> list[Finding]:
    stored = world.stored(*key)
    holds = stored.cut if stored is not None else Cut.nothing()
    if compare_cuts(world.order, reply.cut, holds) > 0:
        return [
            (
                Rule.INGEST_REPORT,
                f"ingest_ok reports {reply.cut} for {key[1]} in epoch {key[0]} but the store "
                f"holds {holds}",
            )
        ]
    return []


# --- publish_ok ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Decision:
    """What docs/semantics.md sections 5-6 decide from one snapshot of reads."""

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


def expected_decision(
    record: PublicationRecord,
    membership: Membership,
    checkpoints: tuple[Checkpoint, ...],
    policy: str,
) -> Decision:
    """The decision of one attempt given its reads (the harness's reading of the spec).

    A membership older than the record can only be withheld (``epoch_mismatch``:
    no claim for an older epoch is written). Otherwise the merge decides:
    withheld with its first reason; in the record's epoch, ``write`` when
    strictly ahead and ``unchanged`` when not; in a newer epoch, ``write``
    unless the ``monotone`` policy must wait (``cutover_pending``).
    """
    if membership.epoch < record.epoch:
        return Decision("withheld", WithheldReason.EPOCH_MISMATCH)
    merged = merge(membership, checkpoints)
    if isinstance(merged, Withheld):
        return Decision("withheld", merged.reason)
    order = membership.order_of(sorted(membership.partitions)[0])
    try:
        progress = compare_cuts(order, merged, record.cut)
    except InvalidValue:
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


def judge_publish_ok(order: Order, log: AttemptLog, reply: PublishOk) -> list[Finding]:
    """Judge one attempt's outcome against what the attempt itself was told."""
    if reply.outcome == "published":
        return _judge_published(order, log, reply)
    if reply.outcome == "confirmed":
        return _judge_confirmed(order, log, reply)
    if reply.outcome == "gave_up":
        return _judge_gave_up(order, log, reply)
    return _judge_decided(order, log, reply)


def _judge_published(order: Order, log: AttemptLog, reply: PublishOk) -> list[Finding]:
    acks = [w for w in log.writes if w.outcome == "applied"]
    if not acks:
        lost = [w for w in log.writes if w.outcome in ("lost", "applied_lost")]
        why = (
            f"its write {lost[-1].op_id} lost its response"
            if lost
            else "it has no acknowledged write"
        )
        return [
            (
                Rule.LOST_RESPONSE_HONESTY,
                f"reported published {show(reply.epoch, reply.cut)} but {why} in this attempt",
            )
        ]
    last = acks[-1]
    if reply.epoch != last.epoch or not same_claim(order, reply.cut, last.cut):
        return [
            (
                Rule.HONEST_OUTCOME,
                f"reported published {show(reply.epoch, reply.cut)} but the acknowledged write "
                f"{last.op_id} was {show(last.epoch, last.cut)}",
            )
        ]
    return []


def _judge_confirmed(order: Order, log: AttemptLog, reply: PublishOk) -> list[Finding]:
    lost = [w for w in log.writes if w.outcome in ("lost", "applied_lost")]
    if not lost:
        return [
            (
                Rule.LOST_RESPONSE_HONESTY,
                f"reported confirmed {show(reply.epoch, reply.cut)} without any write of this "
                "attempt whose response was lost",
            )
        ]
    for write in lost:
        for seq, record in log.reads:
            if seq <= write.seq or record.epoch != write.epoch or reply.epoch != record.epoch:
                continue
            if (
                compare_cuts(order, record.cut, write.cut) >= 0
                and compare_cuts(order, write.cut, reply.cut) <= 0
                and compare_cuts(order, reply.cut, record.cut) <= 0
            ):
                return []
    later = [show(r.epoch, r.cut) for seq, r in log.reads if any(seq > w.seq for w in lost)] or [
        "none"
    ]
    return [
        (
            Rule.LOST_RESPONSE_HONESTY,
            f"reported confirmed {show(reply.epoch, reply.cut)} after its write "
            f"{lost[-1].op_id} of {show(lost[-1].epoch, lost[-1].cut)} lost its response, "
            f"but no later read showed that claim present (reads after it: {', '.join(later)})",
        )
    ]


def _judge_gave_up(order: Order, log: AttemptLog, reply: PublishOk) -> list[Finding]:
    found: list[Finding] = []
    if log.troubles == 0:
        found.append(
            (
                Rule.HONEST_OUTCOME,
                "gave up although no call of this attempt conflicted or lost its response",
            )
        )
    if reply.epoch is not None and not any(
        r.epoch == reply.epoch and _same(order, r.cut, reply.cut) for r in log.shown
    ):
        found.append(
            (
                Rule.HONEST_OUTCOME,
                f"gave up reporting {show(reply.epoch, reply.cut)}, a record this attempt was "
                "never shown",
            )
        )
    return found


def _same(order: Order, a: Cut, b: Cut) -> bool:
    try:
        return same_claim(order, a, b)
    except InvalidValue:
        return False


def _judge_decided(order: Order, log: AttemptLog, reply: PublishOk) -> list[Finding]:
    said = reply.outcome if reply.reason is None else f"{reply.outcome} {reply.reason}"
    if not log.reads or log.membership is None or log.checkpoints is None:
        return [
            (
                Rule.HONEST_OUTCOME,
                f"reported {said} without having read the record, the membership and the "
                "checkpoints in this attempt",
            )
        ]
    record = log.reads[-1][1]
    epoch, checkpoints = log.checkpoints
    try:
        decision = expected_decision(record, log.membership, checkpoints, log.policy)
    except InvalidValue:
        return []
    found: list[Finding] = []
    expected_kind = decision.kind
    if reply.outcome != expected_kind or (
        expected_kind == "withheld"
        and (decision.reason is None or reply.reason != decision.reason.value)
    ):
        found.append(
            (
                Rule.HONEST_OUTCOME,
                f"reported {said} but its last reads (record {show(record.epoch, record.cut)}, "
                f"membership epoch {log.membership.epoch}, {len(checkpoints)} checkpoint(s) of "
                f"epoch {epoch}) decide {decision}",
            )
        )
    if reply.epoch != record.epoch or not _same(order, reply.cut, record.cut):
        found.append(
            (
                Rule.HONEST_OUTCOME,
                f"reported {said} carrying {show(reply.epoch, reply.cut)} but the record it "
                f"read is {show(record.epoch, record.cut)}",
            )
        )
    return found
