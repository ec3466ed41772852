"""Merge: the one scalar frontier a checkpoint vector supports, or why there is none.

docs/semantics.md section 4. Given the membership of an epoch and the checkpoints
read for it, the frontier is the minimum cut over *every* member, published
exactly as certified. A partition is never skipped because it is idle, empty or
slow: its events could still be outstanding. When no scalar claim is true,
:class:`Withheld` says why, checking reasons in the documented order so that the
first problem an operator must fix is the one reported.

The rule is written once, in :func:`merge_summary`, over a :class:`MergeSummary`:
the few facts about a vector that the rule looks at (which members, if any, are
missing, in another epoch or scope, or provisional, and the least cut). A durable
store computes that summary with index probes, so a publication attempt costs
the same at 10 and at 100,000 partitions (``read_merge_summary`` in
:mod:`fencepost.impl.stores`); :func:`summarize` computes it from a vector in
O(N), and :func:`merge` is ``merge_summary(summarize(...))`` with the vector
attached. Both paths therefore give the same cut or the same reason and detail.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
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

#: The reasons a summary's four name lists stand for, in checking order (the first
#: four of :data:`MERGE_REASON_ORDER`), read once here rather than through the enum
#: class on every merge.
_SUMMARY_REASONS: tuple[WithheldReason, ...] = MERGE_REASON_ORDER[:4]

#: One entry per member, in partition-name order: its checkpoint or None.
Vector = tuple[tuple[str, Checkpoint | None], ...]


@dataclass(frozen=True, slots=True)
class Withheld:
    """No scalar frontier is true: the reason and the checkpoint vector behind it.

    ``vector`` is empty when the decision was made from a :class:`MergeSummary`
    (the vector was never read: that is the point of the summary).
    """

    reason: WithheldReason
    vector: Vector
    detail: str = ""

    def __str__(self) -> str:
        return f"withheld ({self.reason.value}{': ' + self.detail if self.detail else ''})"


#: How many offending members a withheld detail names; one more is kept to say "and more".
DETAIL_NAMES = 10


def name_list(names: Sequence[str]) -> str:
    """The detail naming offending members (or orders): the first :data:`DETAIL_NAMES`.

    ``names`` are in code-point order and hold at most ``DETAIL_NAMES + 1``
    entries that matter: an extra one only says that there are more, so the
    detail (and the summary it comes from) stays O(1) at any number of partitions.
    """
    shown = ", ".join(names[:DETAIL_NAMES])
    return shown + " and more" if len(names) > DETAIL_NAMES else shown


@dataclass(frozen=True, slots=True)
class MergeSummary:
    """Everything the merge rule looks at, for one membership epoch: O(1) in size.

    Each tuple holds the first ``DETAIL_NAMES + 1`` members (code-point order of
    their names) that have no checkpoint (``missing``), a checkpoint of another
    epoch (``wrong_epoch``), of another scope (``wrong_scope``) or a provisional
    one (``provisional``); empty when there is none. ``minimum`` is the least
    cut over the members' checkpoints under the tie rule of docs/semantics.md
    section 8 (:func:`fencepost.impl.cuts.minimum`), whatever their epoch, scope
    or finality; None when no member has a checkpoint or the members use
    several orders (the minimum is then undefined and never looked at).
    Checkpoints of partitions that are not members count nowhere.
    """

    epoch: int
    missing: tuple[str, ...] = ()
    wrong_epoch: tuple[str, ...] = ()
    wrong_scope: tuple[str, ...] = ()
    provisional: tuple[str, ...] = ()
    minimum: Cut | None = None


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


def summarize(membership: Membership, checkpoints: Iterable[Checkpoint]) -> MergeSummary:
    """The :class:`MergeSummary` of a checkpoint vector: the definition stores must match.

    Every member's checkpoint cut is validated against the member's order first
    (a float on an integer order is a bad value, not a reason to withhold).
    Cost: O(N log N) for N members (the vector is put in partition-name order).
    """
    return _summary_of(membership, vector_of(membership, checkpoints))


def _summary_of(membership: Membership, vector: Vector) -> MergeSummary:
    keep = DETAIL_NAMES + 1
    missing: list[str] = []
    wrong_epoch: list[str] = []
    wrong_scope: list[str] = []
    provisional: list[str] = []
    cuts: list[Cut] = []
    for partition, checkpoint in vector:
        if checkpoint is None:
            if len(missing) < keep:
                missing.append(partition)
            continue
        cuts.append(
            checkpoint.cut.validated(membership.order_of(partition), f"checkpoint[{partition}].cut")
        )
        if checkpoint.epoch != membership.epoch and len(wrong_epoch) < keep:
            wrong_epoch.append(partition)
        if checkpoint.scope != membership.scope and len(wrong_scope) < keep:
            wrong_scope.append(partition)
        if checkpoint.finality is not Finality.FINAL and len(provisional) < keep:
            provisional.append(partition)
    order = membership.order
    return MergeSummary(
        membership.epoch,
        tuple(missing),
        tuple(wrong_epoch),
        tuple(wrong_scope),
        tuple(provisional),
        minimum(order, cuts) if order is not None and cuts else None,
    )


def merge_summary(membership: Membership, summary: MergeSummary) -> Cut | Withheld:
    """THE merge rule: the frontier of ``membership``, or :class:`Withheld` with the first reason.

    Reasons are checked in the order of docs/semantics.md section 4 (the
    Withheld's vector is empty: see :func:`merge` for one with the vector).
    Cost: O(1) in partitions, publishers and history (the membership's orders
    are known since it was built; the summary is O(1) in size).
    """
    if not isinstance(summary, MergeSummary):
        raise InvalidValue("summary", summary, "a MergeSummary is required")
    if summary.epoch != membership.epoch:
        raise InvalidValue(
            "summary.epoch",
            summary.epoch,
            f"the summary is of another epoch than the membership ({membership.epoch})",
        )
    if summary.missing or summary.wrong_epoch or summary.wrong_scope or summary.provisional:
        for reason, members in zip(
            _SUMMARY_REASONS,
            (summary.missing, summary.wrong_epoch, summary.wrong_scope, summary.provisional),
            strict=True,
        ):
            if members:
                return Withheld(reason, (), name_list(members))
    order_names = membership.order_names
    if len(order_names) > 1:
        return Withheld(WithheldReason.INCOMPARABLE, (), name_list(order_names))
    order = membership.order
    if order is None:
        return Withheld(WithheldReason.NO_COVERAGE, (), "the membership has no partitions")
    if summary.minimum is None:
        raise InvalidValue(
            "summary.minimum",
            None,
            "every member has a checkpoint, so the summary must carry their minimum cut",
        )
    frontier = summary.minimum.validated(order, "summary.minimum")
    if frontier.is_nothing:
        return Withheld(WithheldReason.NO_COVERAGE, ())
    return frontier


def merge(membership: Membership, checkpoints: Iterable[Checkpoint]) -> Cut | Withheld:
    """The merged frontier of ``membership``, or :class:`Withheld` with the first reason.

    :func:`merge_summary` of :func:`summarize`, with the checkpoint vector
    attached to a Withheld. When equivalent cuts tie for the minimum the
    representation with the smaller coordinate is published (``through x``
    rather than ``before x+1``). Cost: O(N log N) for N members.
    """
    vector = vector_of(membership, checkpoints)
    merged = merge_summary(membership, _summary_of(membership, vector))
    if isinstance(merged, Withheld):
        return Withheld(merged.reason, vector, merged.detail)
    return merged
