"""The oracle: docs/semantics.md section 7 as named state predicates.

Each :class:`Invariant` checks one property on one state and returns ``None``
or a violation message in domain words. Properties about histories (the record
never moves backwards, what a publisher was entitled to report) read the
observer memory the state carries (:class:`~fencepost.model.machine.History`,
``Partition.peaks``, ``Publisher.justified``), which the store and the network
side of each transition maintain, never the deciding process.

No invariant names a particular partition or publisher: each quantifies over
all of them, which is what makes the explorer's symmetry reduction sound.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from fencepost.model.cuts import THROUGH, rank
from fencepost.model.state import CONFIRMED, PUBLISHED, State


@dataclass(frozen=True, slots=True)
class Invariant:
    """A named safety property; ``check(state)`` returns ``None`` or what is wrong.

    ``reads`` (when set) names the fields of the state ``check`` depends on
    (of ``epoch``, ``partitions``, ``record``, ``publishers``, ``history``; the
    context is fixed per exploration): a state equal to another in those fields
    gets the same answer. The explorer checks a new state only against the
    invariants reading a field its transition changed (its parent passed them
    all); ``None`` means any field.
    """

    name: str
    doc: str
    check: Callable[[State], str | None]
    reads: frozenset[str] | None = None


def _unsettled(state: State, epoch: int, partition: int, required: int) -> list[str]:
    part = state.partitions[partition]
    truth = part.truth
    ctx = state.context
    bad = []
    for idx in ctx.view(truth.moved, epoch):
        bit = 1 << idx
        if required & bit and not (truth.final & truth.durable & bit):
            flags = []
            if not truth.final & bit:
                flags.append("not final")
            if not truth.durable & bit:
                flags.append("no durable outcome")
            bad.append(f"{ctx.event_text(partition, idx)} ({', '.join(flags)})")
    return bad


def soundness(state: State) -> str | None:
    """For the record (e, c), every event of every member of e in D(c) is final and durable.

    Durable means its terminal outcome was recorded durably.
    """
    rec = state.record
    ctx = state.context
    for i, part in enumerate(state.partitions):
        req = ctx.required(part.truth.moved, rec.epoch, rec.cut)
        truth = part.truth
        if req & truth.final & truth.durable != req:
            bad = _unsettled(state, rec.epoch, i, req)
            return (
                f"the record claims (epoch {rec.epoch}, {rec.cut}) but "
                f"{', '.join(bad)} lies in its downset"
            )
    return None


def monotone_publication(state: State) -> str | None:
    """Within an epoch the record's cut never decreases; under `monotone`, never at all."""
    rec = state.record
    hist = state.history
    succ = state.context.successor
    r = rank(rec.cut, succ)
    if rec.epoch == hist.peak_epoch and r < rank(hist.peak_cut, succ):
        return (
            f"the record moved back to {rec.cut} in epoch {rec.epoch} after {hist.peak_cut} "
            "was published in that epoch"
        )
    if state.context.monotone and r < rank(hist.peak_all, succ):
        return (
            f"under the monotone policy the record moved back to (epoch {rec.epoch}, {rec.cut}) "
            f"after {hist.peak_all} was published"
        )
    return None


def no_relabeling(state: State) -> str | None:
    """A `through x` is only ever published when every member certified at least `through x`.

    Certified means a checkpoint of the record's epoch that the merge accepts
    (final, the stream's scope, stamped with that epoch) at or above the cut.
    """
    rec = state.record
    if rec.cut.kind != THROUGH:
        return None
    ctx = state.context
    succ = ctx.successor
    need = rank(rec.cut, succ)
    for i, part in enumerate(state.partitions):
        cp = part.checkpoints[rec.epoch - 1]
        name = ctx.partition_names[i]
        if cp.epoch != rec.epoch or not cp.final or cp.scope != ctx.config.scope:
            return (
                f"the record claims (epoch {rec.epoch}, {rec.cut}) but {name} has no accepted "
                f"checkpoint in epoch {rec.epoch}"
            )
        if rank(cp.cut, succ) < need:
            return (
                f"the record claims (epoch {rec.epoch}, {rec.cut}) but {name} certified only "
                f"{cp.cut}"
            )
    return None


def epoch_fence(state: State) -> str | None:
    """The record's epoch never decreases: once epoch e2 is published no older claim is written."""
    rec = state.record
    if rec.epoch < state.history.peak_epoch:
        return (
            f"the record went back to epoch {rec.epoch} ({rec.cut}) after epoch "
            f"{state.history.peak_epoch} was published"
        )
    return None


def checkpoint_monotonicity(state: State) -> str | None:
    """A stored checkpoint's cut never decreases within its (partition, epoch).

    Its generation cannot decrease either: the store assigns expected + 1 and
    applies a write only when the expected generation is the stored one. A
    reshard legitimately needs a lower cut in the *new* epoch, hence per epoch.
    """
    for i in range(len(state.partitions)):
        msg = _partition_checks(state, i)[0]
        if msg is not None:
            return msg
    return None


def lost_response_honesty(state: State) -> str | None:
    """`published` only on an acknowledged write, `confirmed` only on a read showing the claim.

    The read is the authoritative reread after a lost response; it must show
    the record in the proposal's epoch at or past the proposed cut.
    """
    ctx = state.context
    for k, pub in enumerate(state.publishers):
        if pub.outcome in (PUBLISHED, CONFIRMED) and not pub.justified:
            grounds = (
                "no write of its was acknowledged"
                if pub.outcome == PUBLISHED
                else "no authoritative read showed the claim"
            )
            return (
                f"publisher {ctx.publisher_names[k]} reported {pub.outcome} "
                f"(epoch {pub.mem_epoch}, {pub.proposal}) but {grounds}"
            )
    return None


def checkpoint_truth(state: State) -> str | None:
    """Every stored final checkpoint of the stream's scope is true about the ground truth.

    The ingest guarantee of the assume-guarantee split: for the checkpoint of
    (partition, e), every event of the partition in epoch e inside its downset
    is final at the source and has a durable terminal outcome.
    """
    for i in range(len(state.partitions)):
        msg = _partition_checks(state, i)[1]
        if msg is not None:
            return msg
    return None


def _partition_checks(state: State, i: int) -> tuple[str | None, str | None]:
    """Monotonicity and truth of one partition's checkpoints (memoized: they depend on it alone)."""
    ctx = state.context
    part = state.partitions[i]
    last = ctx.partition_checked.get(i)
    if last is not None and last[0] is part:
        # The same partition object as the last look (the two invariants using this
        # ask one after the other): skip hashing it again.
        return last[1]
    # Both checks read the ground truth, the checkpoints and the peaks only (not the
    # generations or the readers, which make most partitions distinct).
    key = (i, part.truth, part.checkpoints, part.peaks)
    got = ctx.partition_checks.get(key)
    if got is None:
        got = (_monotone_checkpoints(state, i), _true_checkpoints(state, i))
        ctx.partition_checks[key] = got
    ctx.partition_checked[i] = (part, got)
    return got


def _monotone_checkpoints(state: State, i: int) -> str | None:
    ctx = state.context
    succ = ctx.successor
    part = state.partitions[i]
    for e0, (cp, peak) in enumerate(zip(part.checkpoints, part.peaks, strict=True)):
        if rank(cp.cut, succ) < rank(peak, succ):
            return (
                f"checkpoint {ctx.partition_names[i]} in epoch {e0 + 1} moved back to "
                f"{cp.cut} after {peak} was stored"
            )
    return None


def _true_checkpoints(state: State, i: int) -> str | None:
    ctx = state.context
    part = state.partitions[i]
    truth = part.truth
    settled = truth.final & truth.durable
    for e0, cp in enumerate(part.checkpoints):
        e = e0 + 1
        if cp.epoch != e or not cp.final or cp.scope != ctx.config.scope:
            continue
        req = ctx.required(truth.moved, e, cp.cut)
        if req & settled != req:
            bad = _unsettled(state, e, i, req)
            return (
                f"checkpoint {ctx.partition_names[i]} {cp.cut} in epoch {e} is stored as "
                f"final but {', '.join(bad)} lies in its downset"
            )
    return None


def _inv(check: Callable[[State], str | None], *reads: str) -> Invariant:
    # The headline guarantee is the docstring's first paragraph.
    first = (check.__doc__ or "").strip().split("\n\n")[0]
    return Invariant(check.__name__, " ".join(first.split()), check, frozenset(reads))


#: Checked on every reachable state, in this order (the first broken one is the headline).
INVARIANTS: tuple[Invariant, ...] = (
    _inv(checkpoint_monotonicity, "partitions"),
    _inv(checkpoint_truth, "partitions"),
    _inv(epoch_fence, "record", "history"),
    _inv(lost_response_honesty, "publishers"),
    _inv(monotone_publication, "record", "history"),
    _inv(soundness, "record", "partitions"),
    _inv(no_relabeling, "record", "partitions"),
)

INVARIANTS_BY_NAME: dict[str, Invariant] = {inv.name: inv for inv in INVARIANTS}


def violations(state: State) -> list[tuple[Invariant, str]]:
    """Every invariant ``state`` breaks, with its message."""
    out = []
    for inv in INVARIANTS:
        msg = inv.check(state)
        if msg is not None:
            out.append((inv, msg))
    return out
