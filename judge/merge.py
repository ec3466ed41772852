"""The judge's merge: one scalar frontier from a membership and its checkpoints, or withheld.

docs/semantics.md section 4. Every member must have exactly one checkpoint in the
vector; checkpoints of partitions outside the membership are ignored (section 8).
The reasons are checked in the documented order, each over the *whole* vector,
so a vector with several faults is withheld for the first reason of the list,
whatever partition carries it:

1. ``missing_checkpoint``  2. ``epoch_mismatch``  3. ``scope_mismatch``
4. ``unsupported_finality``  5. ``incomparable``  6. ``no_coverage``

Otherwise the frontier is the minimum cut of the vector, exactly as certified
(:func:`fencepost.judge.cuts.minimum`).

Cost: O(P) for P members plus O(C) for C checkpoints handed in.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import Enum

from fencepost.judge.cuts import minimum
from fencepost.judge.values import BadValue, Checkpoint, Cut, Finality, Membership


class WithheldReason(Enum):
    """Why no scalar frontier may be published.

    The first six are the merge's, in checking order; ``cutover_pending`` is the
    publisher's under the ``monotone`` cutover policy (section 6).
    """

    MISSING_CHECKPOINT = "missing_checkpoint"
    EPOCH_MISMATCH = "epoch_mismatch"
    SCOPE_MISMATCH = "scope_mismatch"
    UNSUPPORTED_FINALITY = "unsupported_finality"
    INCOMPARABLE = "incomparable"
    NO_COVERAGE = "no_coverage"
    CUTOVER_PENDING = "cutover_pending"


MERGE_REASONS: tuple[WithheldReason, ...] = tuple(WithheldReason)[:6]


@dataclass(frozen=True, slots=True)
class Withheld:
    """The merge withheld a frontier; ``partitions`` are the members that caused it."""

    reason: WithheldReason
    partitions: tuple[str, ...] = ()

    def __str__(self) -> str:
        who = f" ({', '.join(self.partitions)})" if self.partitions else ""
        return f"withheld {self.reason.value}{who}"


def merge(membership: Membership, checkpoints: Iterable[Checkpoint]) -> Cut | Withheld:
    """The frontier of ``membership`` over ``checkpoints``, or why there is none.

    Two checkpoints for one member are a :class:`BadValue` (ambiguous input, not
    a statement about the data); so is a member's cut whose coordinate does not
    belong to the member's order.
    """
    held: dict[str, Checkpoint] = {}
    for i, checkpoint in enumerate(checkpoints):
        if checkpoint.partition not in membership.partitions:
            continue
        if checkpoint.partition in held:
            raise BadValue(
                f"checkpoints[{i}].partition", checkpoint.partition, "a second checkpoint"
            )
        order = membership.order_of(checkpoint.partition)
        if checkpoint.cut.at is not None:
            order.validate(checkpoint.cut.at, f"checkpoints[{i}].cut.at")
        held[checkpoint.partition] = checkpoint
    members = sorted(membership.partitions)
    tests: tuple[tuple[WithheldReason, Callable[[str], bool]], ...] = (
        (WithheldReason.MISSING_CHECKPOINT, lambda p: p not in held),
        (WithheldReason.EPOCH_MISMATCH, lambda p: held[p].epoch != membership.epoch),
        (WithheldReason.SCOPE_MISMATCH, lambda p: held[p].scope != membership.scope),
        (WithheldReason.UNSUPPORTED_FINALITY, lambda p: held[p].finality is not Finality.FINAL),
    )
    for reason, faulty in tests:
        culprits = tuple(p for p in members if faulty(p))
        if culprits:
            return Withheld(reason, culprits)
    orders = {membership.partitions[p] for p in members}
    if len(orders) > 1:
        return Withheld(WithheldReason.INCOMPARABLE, tuple(members))
    if not members:
        return Withheld(WithheldReason.NO_COVERAGE)
    frontier = minimum(membership.order_of(members[0]), (held[p].cut for p in members))
    if frontier.is_nothing:
        return Withheld(
            WithheldReason.NO_COVERAGE, tuple(p for p in members if held[p].cut.is_nothing)
        )
    return frontier
