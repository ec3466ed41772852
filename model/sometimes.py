"""Situations the exploration must reach, so that no invariant passes vacuously.

An invariant (an *always* property, :mod:`fencepost.model.invariants`) that
holds in every reachable state proves nothing about a situation the bounds
never reach: ``lost_response_honesty`` is trivially true if no response is
ever lost, ``epoch_fence`` if the membership never changes. Each
:class:`Sometimes` names one such situation, the invariants it keeps honest,
and the parts (sub-models) whose default bounds must reach it; the explorer
checks it on every transition and reports where it was first reached. A part
whose exploration never reaches one of its situations fails with the verdict
``vacuous``, whatever its invariants did.

A situation is recognized from one transition: the state before, the action
taken, and the state after (``check(before, action, after)``). None names a
particular partition, reader or publisher, so the explorer's symmetry
reduction keeps every situation reachable exactly when the full graph does.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from fencepost.model.config import ModelConfig
from fencepost.model.cuts import BEFORE, NOTHING, THROUGH, covers, rank
from fencepost.model.state import CUTOVER_PENDING, Action, State, split_write_detail

#: Parts whose publishers run / whose readers run.
_PUBLICATION = ("publication",)
_BOTH = ("publication", "composed")
_INGEST = ("ingest",)
_READERS = ("ingest", "composed")


@dataclass(frozen=True, slots=True)
class Sometimes:
    """A situation some transition must reach within the bounds.

    ``about`` names the invariants that pass vacuously without it; ``parts``
    the sub-models whose exploration must reach it; ``policy`` (when set) the
    cutover policy it belongs to: it is required only of explorations under it.
    ``kinds`` (when set) declares the action kinds that can reach it: the
    explorer calls ``check`` only on transitions of those kinds, and skips
    building a successor just to check it (``check`` itself does not filter:
    the declaration is tested against checking every transition).
    """

    name: str
    doc: str
    about: tuple[str, ...]
    parts: tuple[str, ...]
    policy: str | None
    check: Callable[[State, Action, State], bool]
    kinds: frozenset[str] | None = None

    def applies(self, config: ModelConfig) -> bool:
        """Whether an exploration of ``config`` must reach this situation."""
        return config.part in self.parts and self.policy in (None, config.policy)


def _record_written(before: State, action: Action, after: State) -> bool:
    return after.record.revision > before.record.revision


def publication(before: State, action: Action, after: State) -> bool:
    """A write stores a record claiming more than nothing: the claim soundness is about."""
    return _record_written(before, action, after) and after.record.cut != NOTHING


def cutover_monotone(before: State, action: Action, after: State) -> bool:
    """Under the monotone policy, the record moves to a newer membership epoch."""
    return _record_written(before, action, after) and after.record.epoch > before.record.epoch


def cutover_pending(before: State, action: Action, after: State) -> bool:
    """Under the monotone policy, an attempt withholds: the new epoch's cut is below the record."""
    return action.kind == "read_checkpoints" and action.detail == CUTOVER_PENDING


def cutover_reset_lower(before: State, action: Action, after: State) -> bool:
    """Under the reset policy, the record moves to a newer epoch with a lower cut."""
    if not _record_written(before, action, after) or after.record.epoch <= before.record.epoch:
        return False
    succ = after.context.successor
    return rank(after.record.cut, succ) < rank(before.record.cut, succ)


def lost_publication_applied(before: State, action: Action, after: State) -> bool:
    """A publication write is applied but its response is lost."""
    return action.kind == "write_publication" and action.outcome == "lost-applied"


def lost_publication_not_applied(before: State, action: Action, after: State) -> bool:
    """A publication write is not applied and its response is lost."""
    return action.kind == "write_publication" and action.outcome == "lost-not-applied"


def confirmed_after_loss(before: State, action: Action, after: State) -> bool:
    """The authoritative read after a lost response shows the claim present: confirmed."""
    return action.kind == "read_publication" and action.detail == "authoritative:confirmed"


def delayed_write(before: State, action: Action, after: State) -> bool:
    """A publication write whose response timed out reaches the store later and is applied."""
    return action.kind == "delayed_write"


def publication_conflict(before: State, action: Action, after: State) -> bool:
    """A publication write loses the revision race (conflict): the attempt must recompute."""
    return action.kind == "write_publication" and action.outcome == "conflict"


def checkpoint_conflict(before: State, action: Action, after: State) -> bool:
    """A checkpoint write loses its generation race: a late retry meets a newer checkpoint."""
    return action.kind == "write_checkpoint" and action.outcome == "conflict"


def lost_checkpoint_applied(before: State, action: Action, after: State) -> bool:
    """A checkpoint write is applied but its response is lost."""
    return action.kind == "write_checkpoint" and action.outcome == "lost-applied"


def lost_checkpoint_not_applied(before: State, action: Action, after: State) -> bool:
    """A checkpoint write is not applied and its response is lost."""
    return action.kind == "write_checkpoint" and action.outcome == "lost-not-applied"


def rewrite_after_lost_race(before: State, action: Action, after: State) -> bool:
    """A reader that lost a race rewrites on the newer generation (its claim still ahead)."""
    if action.kind == "write_checkpoint" and action.outcome == "conflict":
        return split_write_detail(action.detail)[2] == "rewrite"
    return action.kind == "read_checkpoint" and action.detail == "authoritative:rewrite"


def progress_write(before: State, action: Action, after: State) -> bool:
    """A token-only progress write is applied: the same cut, the token the pass reached."""
    return (
        action.kind == "write_checkpoint"
        and action.outcome in ("ok", "lost-applied")
        and split_write_detail(action.detail)[1] == "progress"
    )


def reshard_below_checkpoint(before: State, action: Action, after: State) -> bool:
    """A reshard moves events into a partition below the cut it certified in the old epoch."""
    if action.kind != "reshard" or action.partition is None:
        return False
    ctx = before.context
    i = ctx.partition_names.index(action.partition)
    cp = before.partitions[i].checkpoints[before.epoch - 1]
    return cp.epoch != 0 and any(covers(cp.cut, half) for half in ctx.moved_halves)


def both_kinds_at_one_coordinate(before: State, action: Action, after: State) -> bool:
    """A publisher merges a vector holding both ``before x`` and ``through x`` (one x)."""
    if action.kind != "read_checkpoints" or action.outcome != "ok" or action.epoch is None:
        return False
    cuts = {p.checkpoints[action.epoch - 1].cut for p in before.partitions}
    return any(c.kind == BEFORE and (c.half, THROUGH) in cuts for c in cuts if c != NOTHING)


def record_before_to_through(before: State, action: Action, after: State) -> bool:
    """The record moves from ``before x`` to ``through x``: progress at one coordinate."""
    old, new = before.record.cut, after.record.cut
    return (old.kind, new.kind) == (BEFORE, THROUGH) and old.half == new.half != NOTHING.half


def checkpoint_before_to_through(before: State, action: Action, after: State) -> bool:
    """A checkpoint moves from ``before x`` to ``through x``: progress at one coordinate."""
    for p_old, p_new in zip(before.partitions, after.partitions, strict=True):
        for c_old, c_new in zip(p_old.checkpoints, p_new.checkpoints, strict=True):
            same_coordinate = c_old.epoch and c_new.epoch and c_old.cut.half == c_new.cut.half
            if same_coordinate and (c_old.cut.kind, c_new.cut.kind) == (BEFORE, THROUGH):
                return True
    return False


def _withheld(reason: str) -> Callable[[State, Action, State], bool]:
    def check(before: State, action: Action, after: State) -> bool:
        return action.kind == "read_checkpoints" and action.detail == reason

    check.__doc__ = f"A merge withholds with reason {reason}."
    check.__name__ = f"withheld_{reason}"
    return check


#: Action kinds of the transitions that write the publication record (the store applies a
#: write): the only ones after which the record differs.
_RECORD_WRITES = ("write_publication", "delayed_write")
#: Action kinds of the transitions that store a checkpoint.
_CHECKPOINT_WRITES = ("write_checkpoint", "certify", "bad_checkpoint")


def _sometimes(
    check: Callable[[State, Action, State], bool],
    about: Sequence[str],
    parts: Sequence[str],
    kinds: Sequence[str],
    policy: str | None = None,
) -> Sometimes:
    """A situation recognized by ``check``, reachable by transitions of the action ``kinds``."""
    doc = " ".join((check.__doc__ or "").split())
    return Sometimes(
        check.__name__, doc, tuple(about), tuple(parts), policy, check, frozenset(kinds)
    )


#: Every situation, in the order reports list them.
SOMETIMES: tuple[Sometimes, ...] = (
    _sometimes(
        publication,
        ("soundness", "no_relabeling", "monotone_publication"),
        _BOTH,
        _RECORD_WRITES,
    ),
    _sometimes(
        cutover_monotone,
        ("epoch_fence", "monotone_publication"),
        _BOTH,
        _RECORD_WRITES,
        policy="monotone",
    ),
    _sometimes(
        cutover_pending,
        ("monotone_publication",),
        _BOTH,
        ("read_checkpoints",),
        policy="monotone",
    ),
    _sometimes(
        cutover_reset_lower,
        ("epoch_fence", "monotone_publication"),
        _BOTH,
        _RECORD_WRITES,
        policy="reset",
    ),
    _sometimes(
        lost_publication_applied, ("lost_response_honesty",), _PUBLICATION, ("write_publication",)
    ),
    _sometimes(
        lost_publication_not_applied,
        ("lost_response_honesty",),
        _PUBLICATION,
        ("write_publication",),
    ),
    _sometimes(
        confirmed_after_loss, ("lost_response_honesty",), _PUBLICATION, ("read_publication",)
    ),
    _sometimes(
        delayed_write, ("monotone_publication", "epoch_fence"), _PUBLICATION, ("delayed_write",)
    ),
    _sometimes(
        publication_conflict, ("monotone_publication",), _PUBLICATION, ("write_publication",)
    ),
    _sometimes(checkpoint_conflict, ("checkpoint_monotonicity",), _INGEST, ("write_checkpoint",)),
    _sometimes(
        lost_checkpoint_applied, ("checkpoint_monotonicity",), _INGEST, ("write_checkpoint",)
    ),
    _sometimes(
        lost_checkpoint_not_applied, ("checkpoint_monotonicity",), _INGEST, ("write_checkpoint",)
    ),
    _sometimes(
        rewrite_after_lost_race,
        ("checkpoint_monotonicity",),
        _INGEST,
        ("write_checkpoint", "read_checkpoint"),
    ),
    _sometimes(
        progress_write,
        ("checkpoint_monotonicity", "checkpoint_truth"),
        _READERS,
        ("write_checkpoint",),
    ),
    _sometimes(reshard_below_checkpoint, ("soundness", "checkpoint_truth"), _BOTH, ("reshard",)),
    _sometimes(
        both_kinds_at_one_coordinate,
        ("no_relabeling", "soundness"),
        _PUBLICATION,
        ("read_checkpoints",),
    ),
    _sometimes(
        record_before_to_through,
        ("monotone_publication", "no_relabeling"),
        _BOTH,
        _RECORD_WRITES,
    ),
    _sometimes(
        checkpoint_before_to_through,
        ("checkpoint_monotonicity",),
        _READERS,
        _CHECKPOINT_WRITES,
    ),
    _sometimes(
        _withheld("missing_checkpoint"), ("soundness",), _PUBLICATION, ("read_checkpoints",)
    ),
    _sometimes(_withheld("epoch_mismatch"), ("soundness",), _PUBLICATION, ("read_checkpoints",)),
    _sometimes(_withheld("scope_mismatch"), ("soundness",), _PUBLICATION, ("read_checkpoints",)),
    _sometimes(
        _withheld("unsupported_finality"), ("soundness",), _PUBLICATION, ("read_checkpoints",)
    ),
)

SOMETIMES_BY_NAME: dict[str, Sometimes] = {s.name: s for s in SOMETIMES}


def applicable(config: ModelConfig, situations: Sequence[Sometimes] = SOMETIMES) -> list[Sometimes]:
    """The situations an exploration of ``config`` must reach."""
    return [s for s in situations if s.applies(config)]
