"""The model's merge (docs/semantics.md section 4): one rule, in the model's own terms.

The minimum over every member's checkpoint of the epoch, published exactly as
certified, or the first withheld reason in the documented order. It reads the
checkpoints only (:func:`merge_cores`). Memoized per distinct (epoch, partitions)
argument in the run's :class:`Context`: O(partitions) the first time, O(1) after.
Model mutants bend one rule here.
"""

from __future__ import annotations

from collections.abc import Sequence

from fencepost.model.cuts import BEFORE, NOTHING, THROUGH, Cut, successor_cut
from fencepost.model.cuts import minimum as min_cut
from fencepost.model.state import (
    EPOCH_MISMATCH,
    MISSING,
    MISSING_CHECKPOINT,
    NO_COVERAGE,
    SCOPE_MISMATCH,
    UNSUPPORTED_FINALITY,
    Action,
    Checkpoint,
    Context,
    Core,
    Partition,
    State,
)

Successors = list[tuple[Action, State]]


def merge(state: State, epoch: int) -> tuple[str, Cut]:
    """The model's merge (docs/semantics.md section 4) of ``epoch``'s checkpoint vector.

    Returns ``(reason, NOTHING)`` when withheld, ``("", cut)`` otherwise: the
    minimum over every member, published exactly as certified, ties broken by
    :func:`fencepost.model.cuts.minimum` (``through x`` over ``before x+1``).
    The reasons are checked in the documented order; there is one order per
    model, so ``incomparable`` cannot arise. Mutants bend one rule here.
    """
    return merge_partitions(state.context, state.partitions, epoch)


def merge_partitions(
    ctx: Context, partitions: tuple[Partition, ...], epoch: int
) -> tuple[str, Cut]:
    """:func:`merge` of ``epoch`` over these partitions (memoized per distinct argument)."""
    key = (epoch, partitions)
    got = ctx.merge_cache.get(key)
    if got is None:
        got = _merge(ctx, [part.checkpoints for part in partitions], epoch)
        ctx.merge_cache[key] = got
    return got


def merge_cores(ctx: Context, epoch: int, cores: Sequence[Core]) -> tuple[str, Cut]:
    """:func:`merge` of ``epoch`` over the partitions whose cores these are (in order).

    The merge reads the checkpoints only, so it is a function of the cores
    (:func:`~fencepost.model.state.core_of`): a checker may memoize it on them.
    """
    return _merge(ctx, [core[1] for core in cores], epoch)


def _merge(
    ctx: Context, checkpoints: Sequence[tuple[Checkpoint, ...]], epoch: int
) -> tuple[str, Cut]:
    mutant = ctx.mutant
    scope = ctx.config.scope
    vector: list[Checkpoint] = []
    for stored in checkpoints:
        if mutant == "epoch-blind":
            cp = MISSING
            for older in stored[:epoch]:
                if older.epoch:
                    cp = older
        else:
            cp = stored[epoch - 1]
        if cp.epoch == 0:
            if mutant == "skip-missing":
                continue
            return MISSING_CHECKPOINT, NOTHING
        vector.append(cp)
    if mutant != "epoch-blind" and any(cp.epoch != epoch for cp in vector):
        return EPOCH_MISMATCH, NOTHING
    if mutant != "scope-blind" and any(cp.scope != scope for cp in vector):
        return SCOPE_MISMATCH, NOTHING
    if mutant != "provisional-ok" and not all(cp.final for cp in vector):
        return UNSUPPORTED_FINALITY, NOTHING
    cuts = [cp.cut for cp in vector]
    if mutant == "epsilon" and not ctx.successor:
        cuts = [successor_cut(c) for c in cuts]
    if mutant == "relabel" and cuts:
        low = min(c.half for c in cuts)
        kind = THROUGH if any(c.half == low and c.kind == THROUGH for c in cuts) else BEFORE
        result = Cut(low, kind)
    else:
        result = min_cut(cuts, ctx.successor)
    if result == NOTHING:
        return NO_COVERAGE, NOTHING
    return "", result
