"""Merge: the one scalar frontier a checkpoint vector supports, or why there is none.

docs/semantics.md section 4. Given the membership of an epoch and the checkpoints
read for it, the frontier is the minimum cut over *every* member, published
exactly as certified. A partition is never skipped because it is idle, empty or
slow: its events could still be outstanding. When no scalar claim is true,
:class:`Withheld` says why, checking reasons in the documented order so that the
first problem an operator must fix is the one reported.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import Enum

from fencepost.impl.cuts import Cut, minimum
from fencepost.impl.errors import InvalidValue
from fencepost.impl.records import Checkpoint, Finality, Membership


class WithheldReason(Enum):
    """Why a scalar frontier was withheld, in the order the reasons are checked.

    ``CUTOVER_PENDING`` is not a merge reason: the publisher reports it when a
    new epoch's frontier is still below the record under the ``monotone``
    cutover policy (docs/semantics.md section 6).
    """

    MISSING_CHECKPOINT = "missing_checkpoint"
    EPOCH_MISMATCH = "epoch_mismatch"
    SCOPE_MISMATCH = "scope_mismatch"
    UNSUPPORTED_FINALITY = "unsupported_finality"
    INCOMPARABLE = "incomparable"
    NO_COVERAGE = "no_coverage"
    CUTOVER_PENDING = "cutover_pending"


#: The merge reasons in checking order (docs/semantics.md section 4).
MERGE_REASON_ORDER: tuple[WithheldReason, ...] = (
    WithheldReason.MISSING_CHECKPOINT,
    WithheldReason.EPOCH_MISMATCH,
    WithheldReason.SCOPE_MISMATCH,
    WithheldReason.UNSUPPORTED_FINALITY,
    WithheldReason.INCOMPARABLE,
    WithheldReason.NO_COVERAGE,
)

#: One entry per member, in partition-name order: its checkpoint or None.
Vector = tuple[tuple[str, Checkpoint | None], ...]


@dataclass(frozen=True, slots=True)
class Withheld:
    """No scalar frontier is true: the reason and the checkpoint vector behind it."""

    reason: WithheldReason
    vector: Vector
    detail: str = ""

    def __str__(self) -> str:
        return f"withheld ({self.reason.value}{': ' + self.detail if self.detail else ''})"


def vector_of(membership: Membership, checkpoints: Iterable[Checkpoint]) -> Vector:
    """Pair every member with its checkpoint (None when it has none).

    Checkpoints of partitions outside the membership are ignored: a removed
    partition must not pin the frontier. Two checkpoints for one member are
    ambiguous and refused.
    """
    by_partition: dict[str, Checkpoint] = {}
    for i, checkpoint in enumerate(checkpoints):
        if not isinstance(checkpoint, Checkpoint):
            raise InvalidValue(f"checkpoints[{i}]", checkpoint, "a Checkpoint is required")
        if checkpoint.partition in by_partition:
            raise InvalidValue(
                f"checkpoints[{i}].partition",
                checkpoint.partition,
                "two checkpoints for one partition; pass one checkpoint per partition",
            )
        by_partition[checkpoint.partition] = checkpoint
    return tuple((p, by_partition.get(p)) for p in sorted(membership.partitions))


def merge(membership: Membership, checkpoints: Iterable[Checkpoint]) -> Cut | Withheld:
    """The merged frontier of ``membership``, or :class:`Withheld` with the first reason.

    Every member's checkpoint cut is validated against the member's order first
    (a float on an integer order is a bad value, not a reason to withhold).
    When equivalent cuts tie for the minimum the representation with the
    smaller coordinate is published (``through x`` rather than ``before x+1``).
    """
    vector = vector_of(membership, checkpoints)
    for partition, checkpoint in vector:
        if checkpoint is not None:
            checkpoint.cut.validated(membership.order_of(partition), f"checkpoint[{partition}].cut")

    missing = [p for p, c in vector if c is None]
    if missing:
        return Withheld(WithheldReason.MISSING_CHECKPOINT, vector, ", ".join(missing))
    present = [(p, c) for p, c in vector if c is not None]
    wrong_epoch = [p for p, c in present if c.epoch != membership.epoch]
    if wrong_epoch:
        return Withheld(WithheldReason.EPOCH_MISMATCH, vector, ", ".join(wrong_epoch))
    wrong_scope = [p for p, c in present if c.scope != membership.scope]
    if wrong_scope:
        return Withheld(WithheldReason.SCOPE_MISMATCH, vector, ", ".join(wrong_scope))
    provisional = [p for p, c in present if c.finality is not Finality.FINAL]
    if provisional:
        return Withheld(WithheldReason.UNSUPPORTED_FINALITY, vector, ", ".join(provisional))
    order_names = {membership.partitions[p] for p, _ in present}
    if len(order_names) > 1:
        return Withheld(WithheldReason.INCOMPARABLE, vector, ", ".join(sorted(order_names)))
    if not present:
        return Withheld(WithheldReason.NO_COVERAGE, vector, "the membership has no partitions")
    order = membership.order_of(present[0][0])
    frontier = minimum(order, [c.cut for _, c in present])
    if frontier.is_nothing:
        return Withheld(WithheldReason.NO_COVERAGE, vector)
    return frontier
