"""The properties of docs/semantics.md section 7, judged on each change of durable state.

Each ``judge_*`` function takes what the caller knows (the ground truth, the
stores before and after one change) as plain values and returns the broken
properties, each with a message in domain words. The conformance harness, the
scenario runners and the history checker all call these functions, so a
property means one thing and has one name everywhere (:class:`Property`; the
model's invariants carry the same names).

Cost: each judgement is linear in what it is handed: O(P x E) for soundness over
P members with E events each, O(P) for a publication write, O(E) for a
checkpoint write.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum

from fencepost.judge.cuts import compare, covers, same_claim
from fencepost.judge.values import (
    BadValue,
    Checkpoint,
    Coordinate,
    Cut,
    Endpoint,
    Finality,
    Membership,
    Order,
    Record,
)
from fencepost.vocabulary.rules import PROPERTIES, PROTOCOL_RULES


class Property(Enum):
    """What the judge judges, by the vocabulary's names (:mod:`fencepost.vocabulary.rules`).

    Every property of :data:`fencepost.vocabulary.PROPERTIES` (``certified_support``
    makes section 7 checkable from outside an implementation: a published cut
    never exceeds what every member certified; ``no_relabeling`` is its
    endpoint-kind case), plus two *protocol rules* the judge decides from the
    same values: ``honest_outcome`` (an outcome follows from what the attempt was
    told; ``lost_response_honesty`` is its lost-response case) and
    ``ingest_report`` (an ingest pass never reports more than the store holds).
    """

    SOUNDNESS = "soundness"
    NO_RELABELING = "no_relabeling"
    CERTIFIED_SUPPORT = "certified_support"
    MONOTONE_PUBLICATION = "monotone_publication"
    EPOCH_FENCE = "epoch_fence"
    CHECKPOINT_TRUTH = "checkpoint_truth"
    CHECKPOINT_MONOTONICITY = "checkpoint_monotonicity"
    LOST_RESPONSE_HONESTY = "lost_response_honesty"
    HONEST_OUTCOME = "honest_outcome"
    INGEST_REPORT = "ingest_report"


#: What breaking each property means, in domain words (reports show it beside the name):
#: the text is the vocabulary's (:mod:`fencepost.vocabulary.rules`), one text, one place.
MEANING: Mapping[Property, str] = {
    prop: PROPERTIES.get(prop.value) or PROTOCOL_RULES[prop.value] for prop in Property
}

Finding = tuple[Property, str]


def show(epoch: int | None, cut: Cut) -> str:
    return f"(epoch {epoch}, {cut})"


@dataclass(frozen=True, slots=True)
class EventFact:
    """One event of the ground truth: where it is, whether the source finalized it,
    and whether its terminal outcome is durable."""

    id: str
    at: Coordinate
    final: bool
    durable: bool


def _unsettled(order: Order, cut: Cut, events: Iterable[EventFact]) -> list[EventFact]:
    return [ev for ev in events if covers(order, cut, ev.at) and not (ev.final and ev.durable)]


def judge_soundness(
    record: Record,
    membership: Membership | None,
    events: Mapping[str, Sequence[EventFact]],
) -> list[Finding]:
    """For the record ``(e, c)``: every event of every member of ``e`` in ``D(c)`` is settled.

    ``membership`` is epoch ``e``'s (None when there is none: a record naming an
    epoch without a durable membership is itself unsound); ``events`` maps each
    member to its ground truth in that epoch.
    """
    if record.cut.is_nothing:
        return []
    if membership is None:
        return [
            (
                Property.SOUNDNESS,
                f"the record {show(record.epoch, record.cut)} names epoch {record.epoch}, "
                "which has no durable membership",
            )
        ]
    problems: list[str] = []
    for partition in sorted(membership.partitions):
        order = membership.order_of(partition)
        for ev in _unsettled(order, record.cut, events.get(partition, ())):
            why = "is not final" if not ev.final else "has no durable outcome"
            problems.append(f"event {ev.id} at {ev.at!r} of {partition} {why}")
    if not problems:
        return []
    more = f" (and {len(problems) - 3} more)" if len(problems) > 3 else ""
    return [
        (
            Property.SOUNDNESS,
            f"the record {show(record.epoch, record.cut)} covers {'; '.join(problems[:3])}{more}",
        )
    ]


def judge_publication_write(
    order: Order,
    old: Record,
    new: Record,
    policy: str,
    membership: Membership | None,
    certified: Mapping[str, Cut],
) -> list[Finding]:
    """An accepted write moved the record from ``old`` to ``new``.

    ``membership`` is ``new.epoch``'s; ``certified`` maps each of its members to
    the strongest valid final checkpoint cut it ever stored in that epoch (a
    member that certified nothing valid is absent).
    """
    found: list[Finding] = []
    who = new.op_id if new.op_id is not None else "a writer"
    if new.epoch < old.epoch:
        found.append(
            (
                Property.EPOCH_FENCE,
                f"{who} wrote epoch {new.epoch} over the record's epoch {old.epoch}: "
                f"{show(old.epoch, old.cut)} -> {show(new.epoch, new.cut)}",
            )
        )
    elif compare(order, new.cut, old.cut) < 0 and (new.epoch == old.epoch or policy == "monotone"):
        where = "within epoch" if new.epoch == old.epoch else "at a cutover under monotone"
        found.append(
            (
                Property.MONOTONE_PUBLICATION,
                f"{who} moved the record back {where}: "
                f"{show(old.epoch, old.cut)} -> {show(new.epoch, new.cut)}",
            )
        )
    orders = (
        sorted({membership.partitions[p] for p in membership.partitions})
        if membership is not None
        else []
    )
    if len(orders) > 1 and not new.cut.is_nothing:
        # docs/semantics.md section 4, reason 5: members on orders that cannot be compared
        # have no scalar frontier at all, whatever each certified.
        found.append(
            (
                Property.CERTIFIED_SUPPORT,
                f"{who} published {show(new.epoch, new.cut)} but the members of epoch "
                f"{new.epoch} are on incomparable orders ({', '.join(orders)}): no scalar "
                "frontier exists (withheld incomparable)",
            )
        )
    elif membership is not None and not new.cut.is_nothing:
        short: list[str] = []
        relabel = False
        for partition in sorted(membership.partitions):
            best = certified.get(partition)
            if best is None:
                short.append(f"{partition} certified nothing valid in epoch {new.epoch}")
            elif compare(order, best, new.cut) < 0:
                short.append(f"{partition} certified at most {best}")
                if new.cut.endpoint is Endpoint.THROUGH:
                    assert new.cut.at is not None
                    relabel = relabel or same_claim(order, best, Cut.before(new.cut.at))
        if short:
            prop = Property.NO_RELABELING if relabel else Property.CERTIFIED_SUPPORT
            found.append(
                (prop, f"{who} published {show(new.epoch, new.cut)} but {'; '.join(short)}")
            )
    return found


def judge_restated_claim(order: Order, old: Record, new: Record, who: str) -> list[Finding]:
    """An accepted write by one attempt that restates ``old``'s claim in the same epoch
    (an equal cut, in any representation): docs/semantics.md section 5 stops such an
    attempt with ``unchanged``, so it is ``honest_outcome``.

    For the conformance harness, which knows that ``old`` is the record the writer was
    shown (its expected revision). Not for the audit of live histories, where ``old`` may
    be reconstructed from an unknown start. Cost: one comparison.
    """
    try:
        equal = new.epoch == old.epoch and compare(order, new.cut, old.cut) == 0
    except BadValue:
        return []
    if not equal:
        return []
    return [
        (
            Property.HONEST_OUTCOME,
            f"{who} wrote the record's own claim again: {show(old.epoch, old.cut)} -> "
            f"{show(new.epoch, new.cut)} is no progress in the same epoch (the attempt "
            "must stop with unchanged)",
        )
    ]


def supports(checkpoint: Checkpoint, membership: Membership) -> bool:
    """The checkpoint can support a published claim of ``membership``'s epoch:
    a member's, final, of that epoch and its scope."""
    return (
        checkpoint.partition in membership.partitions
        and checkpoint.epoch == membership.epoch
        and checkpoint.scope == membership.scope
        and checkpoint.finality is Finality.FINAL
    )


@dataclass(frozen=True, slots=True)
class CheckpointContext:
    """What the judge needs to know about one accepted checkpoint write.

    ``previous`` is the checkpoint it replaced (None for the first) and
    ``previous_trusted`` whether that one was written by the readers under test
    (a misconfiguration planted by the environment may be replaced by anything);
    ``token_issued`` whether the provider issued the written token for this
    partition and epoch (ignored when the token is None); ``final_claim`` the
    strongest final claim the provider made for it; ``events`` its ground truth.
    """

    epoch: int
    partition: str
    scope: str
    previous: Checkpoint | None
    previous_trusted: bool
    token_issued: bool
    final_claim: Cut | None
    events: Sequence[EventFact]


def judge_checkpoint_write(
    order: Order, where: CheckpointContext, written: Checkpoint
) -> list[Finding]:
    """An accepted write stored ``written`` for ``(where.epoch, where.partition)``."""
    epoch, partition = where.epoch, where.partition
    found: list[Finding] = []
    labels = []
    if written.partition != partition:
        labels.append(f"partition {written.partition!r} instead of {partition!r}")
    if written.epoch != epoch:
        labels.append(f"epoch {written.epoch} instead of {epoch}")
    if written.scope != where.scope:
        labels.append(f"scope {written.scope!r} instead of {where.scope!r}")
    if labels:
        found.append(
            (
                Property.CHECKPOINT_TRUTH,
                f"the checkpoint written for {partition} in epoch {epoch} says {', '.join(labels)}",
            )
        )
    if written.token is not None and not where.token_issued:
        found.append(
            (
                Property.CHECKPOINT_TRUTH,
                f"the checkpoint of {partition} in epoch {epoch} carries token "
                f"{written.token!r}, which the provider never issued for it",
            )
        )
    previous = where.previous
    if (
        previous is not None
        and where.previous_trusted
        and compare(order, written.cut, previous.cut) < 0
    ):
        found.append(
            (
                Property.CHECKPOINT_MONOTONICITY,
                f"{partition}'s checkpoint in epoch {epoch} went back from {previous.cut} "
                f"(generation {previous.generation}) to {written.cut} "
                f"(generation {written.generation})",
            )
        )
    if written.finality is Finality.FINAL and not written.cut.is_nothing:
        found.extend(_judge_truth(order, where, written))
    return found


def _judge_truth(order: Order, where: CheckpointContext, written: Checkpoint) -> list[Finding]:
    claim = where.final_claim
    head = f"{where.partition} certified {written.cut} in epoch {where.epoch} but"
    if claim is None or compare(order, written.cut, claim) > 0:
        made = "no final claim" if claim is None else f"final claims only up to {claim}"
        return [(Property.CHECKPOINT_TRUTH, f"{head} the provider made {made}")]
    within = [ev for ev in where.events if covers(order, written.cut, ev.at)]
    unfinal = [ev.id for ev in within if not ev.final]
    if unfinal:
        return [
            (
                Property.CHECKPOINT_TRUTH,
                f"{head} events {', '.join(unfinal)} in its downset are not final at the source "
                "(the provider's final claim was untrue)",
            )
        ]
    missing = [ev.id for ev in within if not ev.durable]
    if missing:
        return [
            (
                Property.CHECKPOINT_TRUTH,
                f"{head} events {', '.join(missing)} in its downset have no recorded outcome",
            )
        ]
    return []


def judge_ingest_report(
    order: Order, epoch: int, partition: str, reported: Cut, stored: Cut
) -> list[Finding]:
    """An ingest pass reported ``reported``; the store holds ``stored`` for the partition."""
    if compare(order, reported, stored) > 0:
        return [
            (
                Property.INGEST_REPORT,
                f"ingest_ok reports {reported} for {partition} in epoch {epoch} but the store "
                f"holds {stored}",
            )
        ]
    return []
