"""Publisher transitions of the model: read record, membership and checkpoints, then write.

Lost responses both ways, writes in flight past their timeout, conflicts, the
authoritative reread and both cutover policies. Cost per publisher step:
O(partitions) for the checkpoint read (the merge is memoized per distinct
vector), O(1) otherwise.
"""

from __future__ import annotations

from fencepost.model.cuts import NOTHING, Cut, rank
from fencepost.model.merge import merge_partitions
from fencepost.model.state import (
    CONFIRMED,
    CUTOVER_PENDING,
    GAVE_UP,
    HAVE_MEMBERSHIP,
    HAVE_RECORD,
    IDLE,
    IN_DOUBT,
    PROPOSING,
    PUBLISHED,
    UNCHANGED,
    WITHHELD,
    Action,
    Context,
    History,
    Publisher,
    Record,
    State,
)
from fencepost.model.updates import _with_publisher

Successors = list[tuple[Action, State]]


#: A write the store applies, ``(epoch, cut, op_id)``: the record moves to it (revision + 1).
Write = tuple[int, Cut, str]
#: One publisher's step: the action, the publisher after it, and the write it makes the
#: store apply first (``None``: the record is left alone).
PublisherMoves = list[tuple[Action, Publisher, Write | None]]


#: What a publisher's next step reads besides itself and the record (:func:`publisher_reads`):
#: nothing more, the current membership epoch, or the merge of one epoch's checkpoints.
READS_RECORD = 0
READS_EPOCH = 1
READS_MERGE = 2


def publisher_reads(pub: Publisher) -> tuple[int, int]:
    """What ``pub``'s next step reads besides itself and the record, by its phase.

    ``(READS_RECORD, 0)``, ``(READS_EPOCH, 0)`` (the membership epoch of the
    state), or ``(READS_MERGE, e)`` (the merge of epoch ``e``'s checkpoints,
    :func:`~fencepost.model.merge.merge_cores`): what :func:`publisher_step`
    must be given as ``seen``.
    """
    if pub.phase == HAVE_RECORD:
        return READS_EPOCH, 0
    if pub.phase == HAVE_MEMBERSHIP:
        return READS_MERGE, pub.mem_epoch
    return READS_RECORD, 0


def publisher_moves(state: State, k: int) -> PublisherMoves:
    """Publisher ``k``'s enabled steps in ``state``, each ``(action, publisher after, write)``.

    :func:`published` applies one; :func:`publisher_step` computes them from
    what the step reads (:func:`publisher_reads`).
    """
    ctx = state.context
    pub = state.publishers[k]
    reads, epoch = publisher_reads(pub)
    seen: object = 0
    if reads == READS_EPOCH:
        seen = state.epoch
    elif reads == READS_MERGE:
        seen = merge_partitions(ctx, state.partitions, epoch)
    return publisher_step(ctx, k, pub, state.record, seen)


def publisher_step(
    ctx: Context, k: int, pub: Publisher, record: Record, seen: object
) -> PublisherMoves:
    """Publisher ``k``'s enabled steps when it is ``pub`` and the record ``record``.

    ``seen`` is what :func:`publisher_reads` says the step reads besides: 0,
    the membership epoch, or the merge ``(reason, cut)``. A function of its
    arguments, memoized per distinct tuple of them: a hit costs a hash of the
    publisher and the record. The list returned is the memo's own: callers
    must not change it.
    """
    key = (k, pub, record, seen)
    got = ctx.publisher_cache.get(key)
    if got is None:
        got = []
        name = ctx.publisher_names[k]
        phase = pub.phase
        if phase == IDLE:
            if pub.attempts_left:
                _pub_read_record(ctx, pub, record, name, got)
        elif phase == HAVE_RECORD:
            assert isinstance(seen, int)
            _pub_read_membership(ctx, pub, seen, name, got)
        elif phase == HAVE_MEMBERSHIP:
            assert isinstance(seen, tuple)
            _pub_read_checkpoints(ctx, pub, seen, name, got)
        elif phase == PROPOSING:
            _pub_write(ctx, pub, record, name, got)
        else:
            _pub_reread(ctx, pub, record, name, got)
        if pub.orphan_epoch:
            _pub_delayed(ctx, pub, record, name, got)
        ctx.publisher_cache[key] = got
    return got


def record_written(record: Record, write: Write) -> Record:
    """The record once the store applies ``write`` to ``record``: the next revision."""
    epoch, cut, op_id = write
    return Record(epoch, cut, record.revision + 1, op_id)


def published(state: State, k: int, pub: Publisher, write: Write | None) -> State:
    """``state`` after a step of publisher ``k``: the store applies ``write`` (if any), then
    the publisher is ``pub``."""
    base = state if write is None else _written(state, *write)
    return _with_publisher(base, k, pub)


def _report(pub: Publisher, outcome: str, reason: str = "", justified: bool = True) -> Publisher:
    """The attempt ends reporting ``outcome``; its claim is kept for published/confirmed."""
    keep = outcome in (PUBLISHED, CONFIRMED)
    return Publisher(
        IDLE,
        pub.attempts_left,
        0,
        0,
        NOTHING,
        pub.mem_epoch if keep else 0,
        pub.proposal if keep else NOTHING,
        outcome,
        reason,
        justified,
        pub.orphan_epoch,
        pub.orphan_cut,
        -1,
        pub.orphan_revision,
        pub.orphan_op,
        pub.attempt,
    )


def _holding_record(pub: Publisher, rec: Record, retries_left: int, attempt: int) -> Publisher:
    """The publisher holds ``rec`` as read and is about to read the membership."""
    return Publisher(
        HAVE_RECORD,
        pub.attempts_left,
        retries_left,
        rec.epoch,
        rec.cut,
        0,
        NOTHING,
        "",
        "",
        True,
        pub.orphan_epoch,
        pub.orphan_cut,
        rec.revision,
        pub.orphan_revision,
        pub.orphan_op,
        attempt,
    )


def _timeout(pub: Publisher) -> Publisher:
    """A read times out (``read_timeouts``): the attempt gives up, honestly knowing nothing."""
    if pub.phase == IDLE:
        pub = pub._replace(attempts_left=pub.attempts_left - 1, attempt=pub.attempt + 1)
    return _report(pub, GAVE_UP)


def _pub_read_record(
    ctx: Context, pub: Publisher, rec: Record, name: str, out: PublisherMoves
) -> None:
    act = ctx.action("read_publication", name, outcome="ok")
    started = pub._replace(attempts_left=pub.attempts_left - 1)
    new = _holding_record(started, rec, ctx.config.retries, pub.attempt + 1)
    out.append((act, new, None))
    if ctx.config.read_timeouts:
        out.append((ctx.action("read_publication", name, outcome="timeout"), _timeout(pub), None))


def _pub_read_membership(
    ctx: Context, pub: Publisher, epoch: int, name: str, out: PublisherMoves
) -> None:
    act = ctx.action("read_membership", name, epoch=epoch, outcome="ok")
    new = pub._replace(phase=HAVE_MEMBERSHIP, mem_epoch=epoch)
    out.append((act, new, None))
    if ctx.config.read_timeouts:
        out.append((ctx.action("read_membership", name, outcome="timeout"), _timeout(pub), None))


def _pub_read_checkpoints(
    ctx: Context, pub: Publisher, merged: tuple[str, Cut], name: str, out: PublisherMoves
) -> None:
    """Read the membership epoch's checkpoints, merge, decide (docs/semantics.md sections 5-6).

    Withheld: stop with the reason. Same epoch as the record: propose only a
    cut strictly ahead, else ``unchanged``. A newer epoch (cutover): under
    ``monotone`` propose only a cut at least the record's, else withheld
    ``cutover_pending``; under ``reset`` any cut.
    """
    succ = ctx.successor
    e = pub.mem_epoch
    reason, cut = merged
    if reason:
        new = _report(pub, WITHHELD, reason)
        detail = reason
        shown: Cut | None = None
    else:
        shown = cut
        r_new = rank(cut, succ)
        r_rec = rank(pub.rec_cut, succ)
        if pub.rec_epoch == e:
            propose = r_new > r_rec
        else:
            propose = ctx.mutant == "cutover-regress" or not (ctx.monotone and r_new < r_rec)
        if propose:
            # The record's epoch and cut are dead from here on (the write names
            # only the revision); clearing them keeps equivalent states equal.
            new = pub._replace(phase=PROPOSING, proposal=cut, rec_epoch=0, rec_cut=NOTHING)
            detail = "propose"
        elif pub.rec_epoch == e:
            new = _report(pub, UNCHANGED)
            detail = "unchanged"
        else:
            new = _report(pub, WITHHELD, CUTOVER_PENDING)
            detail = CUTOVER_PENDING
    act = ctx.action("read_checkpoints", name, None, e, shown, "ok", detail=detail)
    out.append((act, new, None))
    if ctx.config.read_timeouts:
        act = ctx.action("read_checkpoints", name, None, e, outcome="timeout")
        out.append((act, _timeout(pub), None))


def _written(state: State, epoch: int, cut: Cut, op_id: str) -> State:
    """The store applies a publication write: revision + 1, op_id stored, history updated.

    Every write still in flight named the old revision, so none can apply any
    more: they are dropped (:func:`write_dropped`).
    """
    ctx = state.context
    return State(
        ctx,
        state.epoch,
        state.partitions,
        record_written(state.record, (epoch, cut, op_id)),
        tuple(write_dropped(p) for p in state.publishers),
        history_after(ctx, state.history, epoch, cut),
    )


def history_after(ctx: Context, hist: History, epoch: int, cut: Cut) -> History:
    """The observer's history once the record is written ``(epoch, cut)``."""
    succ = ctx.successor
    r = rank(cut, succ)
    if epoch > hist.peak_epoch or (epoch == hist.peak_epoch and r > rank(hist.peak_cut, succ)):
        peak_epoch, peak_cut = epoch, cut
    else:
        peak_epoch, peak_cut = hist.peak_epoch, hist.peak_cut
    peak_all = hist.peak_all
    if ctx.monotone and r > rank(peak_all, succ):
        peak_all = cut
    return History(peak_epoch, peak_cut, peak_all)


def write_dropped(pub: Publisher) -> Publisher:
    """``pub`` once a publication write is applied: a write of its still in flight is dropped."""
    return _no_orphan(pub) if pub.orphan_epoch else pub


def _no_orphan(pub: Publisher) -> Publisher:
    return pub._replace(orphan_epoch=0, orphan_cut=NOTHING, orphan_revision=0, orphan_op="")


def _pub_write(ctx: Context, pub: Publisher, rec: Record, name: str, out: PublisherMoves) -> None:
    """``write_publication`` conditional on the revision read, with every network outcome.

    Revision still current: applied and acknowledged; applied with the response
    lost; or the response times out while the write is still in flight (the
    store may apply it later, :func:`_pub_delayed`). Revision moved: a
    conflict answered with the current record, after which the attempt
    rereads and recomputes. Either way the request may be lost (not applied,
    response lost). Without an acknowledgement the publisher is in doubt and
    must make the authoritative read.
    """
    cfg = ctx.config
    mutant = ctx.mutant
    e, cut = pub.mem_epoch, pub.proposal
    op = f"{name}-{pub.attempt}"

    def unacknowledged(p: Publisher) -> Publisher:
        if mutant == "blind-success":
            return _report(p, PUBLISHED, justified=False)
        return p._replace(phase=IN_DOUBT, rec_revision=-1)

    if pub.rec_revision == rec.revision:
        applied: Write = (e, cut, op)
        act = ctx.action("write_publication", name, None, e, cut, "ok")
        out.append((act, _no_orphan(_report(pub, PUBLISHED)), applied))
        if cfg.lost_responses:
            act = ctx.action("write_publication", name, None, e, cut, "lost-applied")
            out.append((act, _no_orphan(unacknowledged(pub)), applied))
            if cfg.in_flight and not pub.orphan_epoch:
                flying = unacknowledged(pub)._replace(
                    orphan_epoch=e, orphan_cut=cut, orphan_revision=rec.revision, orphan_op=op
                )
                act = ctx.action("write_publication", name, None, e, cut, "in-flight")
                out.append((act, flying, None))
    else:
        if not pub.retries_left:
            retry = _report(pub, GAVE_UP)
            detail = "gave_up"
        elif mutant == "stale-cut-retry":
            retry = pub._replace(retries_left=pub.retries_left - 1, rec_revision=rec.revision)
            # (keeps its proposal: the old cut, not recomputed)
            detail = "same-cut"
        else:
            retry = _holding_record(pub, rec, pub.retries_left - 1, pub.attempt)
            detail = "retry"
        act = ctx.action("write_publication", name, None, e, cut, "conflict", detail=detail)
        out.append((act, retry, None))
    if cfg.lost_responses:
        act = ctx.action("write_publication", name, None, e, cut, "lost-not-applied")
        out.append((act, unacknowledged(pub), None))


def _pub_reread(ctx: Context, pub: Publisher, rec: Record, name: str, out: PublisherMoves) -> None:
    """The authoritative read after a lost response (docs/semantics.md section 5).

    Same epoch and a cut at or past the proposal: ``confirmed`` (the claim is
    present, whoever wrote it). Otherwise, within the retry budget, the
    attempt starts over from this record: it rereads the membership (the
    cutover rule applies if the epoch changed) and the current checkpoints.
    """
    succ = ctx.successor
    e = pub.mem_epoch
    if rec.epoch == e and rank(rec.cut, succ) >= rank(pub.proposal, succ):
        new = _report(pub, CONFIRMED, justified=True)
        decision = "confirmed"
    elif not pub.retries_left:
        new = _report(pub, GAVE_UP)
        decision = "gave_up"
    elif rec.epoch != e and ctx.mutant == "fence-blind":
        new = pub._replace(
            phase=HAVE_MEMBERSHIP,
            retries_left=pub.retries_left - 1,
            rec_epoch=e,
            rec_cut=rec.cut,
            rec_revision=rec.revision,
            proposal=NOTHING,
        )
        decision = "same-epoch"
    else:
        new = _holding_record(pub, rec, pub.retries_left - 1, pub.attempt)
        decision = "retry" if rec.epoch == e else "cutover"
    act = ctx.action("read_publication", name, outcome="ok", detail=f"authoritative:{decision}")
    out.append((act, new, None))
    if ctx.config.read_timeouts:
        act = ctx.action("read_publication", name, outcome="timeout", detail="authoritative")
        out.append((act, _timeout(pub), None))


def _pub_delayed(ctx: Context, pub: Publisher, rec: Record, name: str, out: PublisherMoves) -> None:
    """The store applies a write of publisher ``name`` that was still in flight.

    Only possible while the revision it names is current (every later write
    drops it); the publisher meanwhile may be anywhere in its attempt.
    """
    if pub.orphan_revision != rec.revision:
        return
    act = ctx.action("delayed_write", name, None, pub.orphan_epoch, pub.orphan_cut, "applied")
    # The write drops every write in flight, this one included.
    out.append((act, _no_orphan(pub), (pub.orphan_epoch, pub.orphan_cut, pub.orphan_op)))
