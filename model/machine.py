"""The fencepost protocol as a pure state machine over frozen, hashable states.

Three sub-models, split by assume-guarantee (docs/model.md):

``ingest``
    Provider pages (empty, overlapping the previous page, with a final claim, a
    non-final claim or none), source finalization, outcome recording and
    generation-fenced checkpoint writes by concurrent readers of one partition,
    including a late pass whose write loses to a newer checkpoint. Guarantee:
    every stored final checkpoint is true about the ground truth
    (``checkpoint_truth``) and never moves back (``checkpoint_monotonicity``).
``publication``
    Publishers as step-wise processes (read record, read membership, read
    checkpoints, write) several at once, with lost responses both ways,
    writes still in flight when their response timed out, conflicts, the
    authoritative reread and both cutover policies. Checkpoint advances are
    *environment* steps restricted to true cuts (the ingest guarantee), plus
    deliberately bad first checkpoints (provisional, another scope, stamped
    with the previous epoch) and missing ones.
``composed``
    Both at once on small bounds: checkpoints come from real ingest passes, and
    every invariant (including the ingest guarantee) must still hold.

Membership epochs: each epoch's members are all partitions; a reshard (an
environment step) moves the next epoch's extra events into one partition at
positions below what it may already have certified, which is what makes an
old-epoch checkpoint untrue in the new epoch. Checkpoints are keyed per
(partition, epoch) and their generation starts at 1 in each.

Every transition is an :class:`~fencepost.model.state.Action` carrying all of
its nondeterministic choices, so :func:`step` is a function. :func:`successors`
yields ``(action, next_state)`` pairs for the explorer; :func:`actions` and
:func:`step` expose the same relation one edge at a time for drivers outside.

Faults are transitions: "applied, response lost", "not applied, response
lost", "response timed out while the write is in flight" (applied later or
never), "read times out" (``read_timeouts``). A process that stops is one that
takes no further step: every state it leaves behind is reachable with it
merely slow, and a write it left in flight is modelled as above.

The model never imports ``fencepost.impl``; its cut semantics are
:mod:`fencepost.model.cuts`.
"""

from __future__ import annotations

from fencepost.model.config import ModelConfig
from fencepost.model.cuts import BEFORE, NOTHING, THROUGH, Cut, coordinate_text, successor_cut
from fencepost.model.cuts import minimum as min_cut
from fencepost.model.state import (
    CONFIRMED,
    CUTOVER_PENDING,
    EPOCH_MISMATCH,
    FETCHED,
    GAVE_UP,
    HAVE_MEMBERSHIP,
    HAVE_RECORD,
    IDLE,
    IN_DOUBT,
    MISSING,
    MISSING_CHECKPOINT,
    NO_COVERAGE,
    NO_TOKEN,
    PROPOSING,
    PUBLISHED,
    READING,
    REREADING,
    SCOPE_MISMATCH,
    SETTLING,
    UNCHANGED,
    UNSUPPORTED_FINALITY,
    WITHHELD,
    WRITING,
    Action,
    Checkpoint,
    Context,
    History,
    Page,
    Partition,
    Publisher,
    Reader,
    Record,
    State,
    Truth,
    context_for,
    write_detail,
)

Successors = list[tuple[Action, State]]


def _rank(cut: Cut, successor: bool) -> int:
    # Inlined copy of fencepost.model.cuts.rank for the hot paths.
    return cut.half + 2 * cut.kind if successor else 2 * cut.half + cut.kind


# ---------------------------------------------------------------------------
# Public API


def initial(config: ModelConfig) -> State:
    """The initial state: epoch 1, nothing certified, record ``(1, nothing, 0, None)``.

    Every partition holds its own events, none final, no outcome durable, no
    checkpoint in any epoch; readers and publishers are idle with full budgets.
    """
    ctx = context_for(config)
    epochs = config.epochs
    reader = Reader(IDLE, config.passes, 0, NOTHING, NOTHING, 0, 0, 0, 0, False, -1)
    readers = (reader,) * config.readers if ctx.has_readers else ()
    part = Partition(
        Truth((), 0, 0), (MISSING,) * epochs, (0,) * epochs, (NOTHING,) * epochs, readers
    )
    publisher = Publisher(
        IDLE, config.attempts, 0, 0, NOTHING, 0, NOTHING, "", "", True, 0, NOTHING, -1, 0, "", 0
    )
    publishers = (publisher,) * config.publishers if ctx.has_publishers else ()
    return State(
        ctx,
        1,
        (part,) * config.partitions,
        Record(1, NOTHING, 0, None),
        publishers,
        History(1, NOTHING, NOTHING),
    )


def actions(state: State) -> list[Action]:
    """Every transition enabled in ``state``, in a stable order."""
    return [a for a, _ in successors(state)]


def step(state: State, action: Action) -> State:
    """The state after ``action``; raises ``ValueError`` if it is not enabled in ``state``."""
    for candidate, nxt in successors(state):
        if candidate == action:
            return nxt
    raise ValueError(
        f"action '{action.describe()}' is not enabled in this state; pick one of actions(state)"
    )


def matching(state: State, kind: str, **fields: object) -> list[Action]:
    """Enabled actions of ``kind`` whose named fields (``actor=``, ``partition=``...) match."""
    return [
        a
        for a in actions(state)
        if a.kind == kind and all(getattr(a, name) == value for name, value in fields.items())
    ]


def successors(state: State) -> Successors:
    """Every enabled ``(action, next_state)``: per partition (environment, readers), then
    the reshard, then publishers.

    Composed from :func:`local_moves`, :func:`reshard_moves` and
    :func:`publisher_moves` (the explorer uses those directly, so that it only
    builds the states it has not seen).
    """
    ctx = state.context
    e = state.epoch
    out: Successors = []
    for i, part in enumerate(state.partitions):
        for act, new_part in local_moves(ctx, i, e, part):
            out.append((act, _with_partition(state, i, new_part)))
    for act, i, target in reshard_moves(ctx, e, state.partitions):
        out.append((act, resharded(state, i, target)))
    if ctx.has_publishers:
        for k in range(len(state.publishers)):
            for act, new_pub, write in publisher_moves(state, k):
                out.append((act, published(state, k, new_pub, write)))
    return out


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
        got = _merge(ctx, partitions, epoch)
        ctx.merge_cache[key] = got
    return got


def _merge(ctx: Context, partitions: tuple[Partition, ...], epoch: int) -> tuple[str, Cut]:
    mutant = ctx.mutant
    scope = ctx.config.scope
    vector: list[Checkpoint] = []
    for part in partitions:
        if mutant == "epoch-blind":
            cp = MISSING
            for older in part.checkpoints[:epoch]:
                if older.epoch:
                    cp = older
        else:
            cp = part.checkpoints[epoch - 1]
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


# ---------------------------------------------------------------------------
# Helpers building successor states (direct constructors: _replace is slow)


def _with_partition(state: State, i: int, part: Partition, epoch: int = 0) -> State:
    parts = state.partitions
    return State(
        state.context,
        epoch or state.epoch,
        (*parts[:i], part, *parts[i + 1 :]),
        state.record,
        state.publishers,
        state.history,
    )


def with_partition(state: State, i: int, part: Partition) -> State:
    """``state`` after a step of :func:`local_moves`: partition ``i`` is ``part``."""
    return _with_partition(state, i, part)


def _with_publisher(state: State, k: int, pub: Publisher) -> State:
    pubs = state.publishers
    return State(
        state.context,
        state.epoch,
        state.partitions,
        state.record,
        (*pubs[:k], pub, *pubs[k + 1 :]),
        state.history,
    )


def _store_checkpoint(
    part: Partition, truth: Truth, epoch: int, cp: Checkpoint, generation: int, successor: bool
) -> Partition:
    """The store writes ``cp`` as generation ``generation`` of (partition, epoch).

    It also keeps the observer's peak (the highest cut ever stored there).
    """
    e = epoch - 1
    peaks = part.peaks
    if _rank(cp.cut, successor) > _rank(peaks[e], successor):
        peaks = (*peaks[:e], cp.cut, *peaks[e + 1 :])
    cps = part.checkpoints
    gens = part.generations
    return Partition(
        truth,
        (*cps[:e], cp, *cps[e + 1 :]),
        (*gens[:e], generation, *gens[e + 1 :]),
        peaks,
        part.readers,
    )


# ---------------------------------------------------------------------------
# Environment


LocalMoves = list[tuple[Action, Partition]]


#: A partition's durable state less its readers: what its environment and each reader read.
Core = tuple[Truth, tuple[Checkpoint, ...], tuple[int, ...], tuple[Cut, ...]]


def local_moves(ctx: Context, i: int, e: int, part: Partition) -> LocalMoves:
    """Transitions that touch partition ``i`` only, in epoch ``e``: its environment, then
    its readers in order, each as ``(action, partition after)``.

    Composed from :func:`environment_moves` and :func:`reader_moves` (memoized),
    so a call costs a few hashes and one partition tuple per move.
    """
    readers = part.readers
    out: LocalMoves = [
        (act, Partition(*c, readers)) for act, c in environment_moves(ctx, i, e, part)
    ]
    for j in range(len(readers)):
        for act, c, new_reader in reader_moves(ctx, i, j, e, part):
            out.append((act, Partition(*c, (*readers[:j], new_reader, *readers[j + 1 :]))))
    return out


def core_of(part: Partition) -> Core:
    """The partition less its readers: what its environment and each reader read."""
    return (part.truth, part.checkpoints, part.generations, part.peaks)


def environment_moves(ctx: Context, i: int, e: int, part: Partition) -> list[tuple[Action, Core]]:
    """The environment's steps on partition ``i`` in epoch ``e``, as ``(action, core after)``
    (its readers are left alone).

    Publication part: checkpoint advances (:func:`_certify_partition`); the
    others: the source finalizes events (:func:`_finalize_partition`). They read
    the core only, so they are memoized per distinct (index, epoch, core); the
    list returned is the memo's own (do not change it).
    """
    core = core_of(part)
    key = (i, e, core)
    got = ctx.env_cache.get(key)
    if got is None:
        if ctx.part == "publication":
            moves = _certify_partition(ctx, i, e, part)
        else:
            moves = _finalize_partition(ctx, i, e, part)
        got = [(act, _core(new, core)) for act, new in moves]
        ctx.env_cache[key] = got
    return got


def reader_moves(
    ctx: Context, i: int, j: int, e: int, part: Partition
) -> list[tuple[Action, Core, Reader]]:
    """Reader ``j`` of partition ``i``: its next steps, as ``(action, core after, reader after)``.

    A reader's step reads the core and its own tuple only and changes no other
    reader, so concurrent readers multiply the states but not this work: the
    moves are memoized per distinct (indexes, epoch, core, reader); the list
    returned is the memo's own (do not change it).
    """
    core = core_of(part)
    reader = part.readers[j]
    key = (i, j, e, core, reader)
    got = ctx.reader_cache.get(key)
    if got is None:
        own: LocalMoves = []
        _reader_moves(ctx, i, j, e, part, own)
        got = [(act, _core(new, core), new.readers[j]) for act, new in own]
        ctx.reader_cache[key] = got
    return got


def _core(part: Partition, old: Core) -> Core:
    """``part`` less its readers; ``old`` itself when equal (shares the memo's memory)."""
    core = core_of(part)
    return old if core == old else core


def _certify_partition(ctx: Context, i: int, e: int, part: Partition) -> LocalMoves:
    """Publication part: checkpoint advances as environment steps.

    ``ingest`` certifies any cut above the one stored for (partition, current
    epoch); the events of its downset become final with durable outcomes as it
    does, so the cut is true by construction (the ingest guarantee, assumed).
    While a (partition, epoch) has no checkpoint yet, a ``faulty writer`` may
    store a bad first one instead: provisional, for another scope, or stamped
    with the previous epoch, at the least cut that is *not* true. A later
    certified cut above it replaces it.
    """
    cfg = ctx.config
    succ = ctx.successor
    scope = cfg.scope
    name = ctx.partition_names[i]
    truth = part.truth
    cp = part.checkpoints[e - 1]
    gen = part.generations[e - 1] + 1
    current = _rank(cp.cut, succ)
    settled = truth.final & truth.durable
    first_untrue: Cut | None = None
    moves: LocalMoves = []
    for cut in ctx.candidates:
        if _rank(cut, succ) <= current:
            continue
        req = ctx.required(truth.moved, e, cut)
        if first_untrue is None and req & settled != req:
            first_untrue = cut
        new_truth = Truth(truth.moved, truth.final | req, truth.durable | req)
        new_part = _store_checkpoint(
            part, new_truth, e, Checkpoint(cut, 0, scope, e, True), gen, succ
        )
        moves.append((ctx.action("certify", "ingest", name, e, cut), new_part))
    if first_untrue is None or cp.epoch != 0:
        return moves
    for kind in cfg.bad_checkpoints:
        if kind == "provisional":
            bad = Checkpoint(first_untrue, 0, scope, e, False)
        elif kind == "scope":
            bad = Checkpoint(first_untrue, 0, scope + "-other", e, True)
        elif e >= 2:
            bad = Checkpoint(first_untrue, 0, scope, e - 1, True)
        else:
            continue
        act = ctx.action("bad_checkpoint", "faulty writer", name, e, first_untrue, detail=kind)
        moves.append((act, _store_checkpoint(part, truth, e, bad, gen, succ)))
    return moves


def _finalize_partition(ctx: Context, i: int, e: int, part: Partition) -> LocalMoves:
    """Ingest and composed parts: the source finalizes the next event of a sequence.

    Each partition's own events, and each batch a reshard moved in, finalize
    in position order (a source's finality advances as a prefix).
    """
    truth = part.truth
    moves: LocalMoves = []
    for seq in ctx.batches(truth.moved, e):
        for idx in seq:
            bit = 1 << idx
            if not truth.final & bit:
                act = ctx.action(
                    "finalize", "source", ctx.partition_names[i], detail=ctx.event_text(i, idx)
                )
                new_truth = Truth(truth.moved, truth.final | bit, truth.durable)
                moves.append((act, part._replace(truth=new_truth)))
                break
    return moves


def reshard_moves(
    ctx: Context, e: int, partitions: tuple[Partition, ...]
) -> list[tuple[Action, int, Partition | None]]:
    """The membership moves to the next epoch, and a reshard moves events into one partition.

    Each move is ``(action, i, partition i after)``; ``(action, -1, None)``
    when no events move (:func:`resharded` applies either). The moved events
    (``moved_positions``) sit below what that partition may already have
    certified in the old epoch. Every partition may be the target.
    """
    if e >= ctx.config.epochs:
        return []
    new_e = e + 1
    if ctx.n_moved == 0:
        return [(ctx.action("reshard", "membership", None, new_e), -1, None)]
    where = ", ".join(coordinate_text(h) for h in ctx.moved_halves)
    out: list[tuple[Action, int, Partition | None]] = []
    for i, part in enumerate(partitions):
        truth = part.truth
        new_part = part._replace(truth=Truth((*truth.moved, new_e), truth.final, truth.durable))
        act = ctx.action("reshard", "membership", ctx.partition_names[i], new_e, detail=where)
        out.append((act, i, new_part))
    return out


def resharded(state: State, i: int, part: Partition | None) -> State:
    """``state`` in the next membership epoch, partition ``i`` replaced by ``part`` (if any)."""
    if part is None:
        return state._replace(epoch=state.epoch + 1)
    return _with_partition(state, i, part, state.epoch + 1)


# ---------------------------------------------------------------------------
# Readers (ingest passes): every step touches the reader's partition only.


def _reader_moves(ctx: Context, i: int, j: int, e: int, part: Partition, moves: LocalMoves) -> None:
    """Reader ``j`` of partition ``i``: its next step, by phase."""
    reader = part.readers[j]
    name = ctx.reader_names[i][j]
    phase = reader.phase
    if phase == IDLE:
        if reader.passes_left:
            _reader_start(ctx, i, j, e, name, part, moves)
    elif phase == FETCHED:
        _reader_record(ctx, i, j, name, part, moves)
    elif phase == READING:
        _reader_fetch(ctx, i, j, name, part, moves)
        _reader_write(ctx, i, j, name, part, moves)
    elif phase == WRITING:
        _reader_write(ctx, i, j, name, part, moves)
    else:
        _reader_reread(ctx, i, j, name, part, moves)


def _set_reader(part: Partition, j: int, reader: Reader, truth: Truth | None = None) -> Partition:
    readers = part.readers
    return Partition(
        part.truth if truth is None else truth,
        part.checkpoints,
        part.generations,
        part.peaks,
        (*readers[:j], reader, *readers[j + 1 :]),
    )


def _idle_reader(reader: Reader) -> Reader:
    return Reader(IDLE, reader.passes_left, 0, NOTHING, NOTHING, 0, 0, 0, 0, False, -1)


def _reader_start(
    ctx: Context, i: int, j: int, e: int, name: str, part: Partition, moves: LocalMoves
) -> None:
    """``read_checkpoint``: a pass starts from the checkpoint of the current epoch (or none).

    The production reader holds no token when none is stored (:data:`NO_TOKEN`,
    the implementation's ``None``); the simple reader starts from position 0.
    """
    reader = part.readers[j]
    cp = part.checkpoints[e - 1]
    token = cp.token if cp.epoch or not ctx.production_reader else NO_TOKEN
    act = ctx.action("read_checkpoint", name, ctx.partition_names[i], e)
    new = Reader(
        READING,
        reader.passes_left - 1,
        e,
        cp.cut,
        cp.cut,
        token,
        0,
        token,
        ctx.reader_retries,
        False,
        part.generations[e - 1],
    )
    moves.append((act, _set_reader(part, j, new)))


def _reader_fetch(
    ctx: Context, i: int, j: int, name: str, part: Partition, moves: LocalMoves
) -> None:
    """The provider's possible answers to the reader's ``fetch_page`` (see :func:`_pages`)."""
    reader = part.readers[j]
    key = (i, j, reader, part.truth)
    pages = ctx.page_cache.get(key)
    if pages is None:
        pages = _pages(ctx, i, name, reader, part.truth)
        ctx.page_cache[key] = pages
    for act, new in pages:
        moves.append((act, _set_reader(part, j, new)))


def _pages(
    ctx: Context, i: int, name: str, reader: Reader, truth: Truth
) -> list[tuple[Action, Reader]]:
    """The provider answers ``fetch_page`` from the reader's token, in every allowed way.

    A page delivers up to ``page_size`` new events (possibly none), may also
    repeat the previous event (overlap), and carries no claim, a final claim of
    either endpoint kind ahead of the reader's claim (any the provider has made
    true: every event in its downset is final at the source and was delivered
    by the traversal so far), or a non-final claim one cut past what is final.
    """
    cfg = ctx.config
    succ = ctx.successor
    mutant = ctx.mutant
    e = reader.epoch
    out: list[tuple[Action, Reader]] = []
    view = ctx.view(truth.moved, e)
    t = max(reader.token, 0)
    pname = ctx.partition_names[i]
    claim_rank = _rank(reader.claim, succ)
    starts = (t, t - 1) if cfg.overlap and t > 0 else (t,)
    for end in range(t, min(len(view), t + cfg.page_size) + 1):
        finals: list[Cut] = []
        top_valid = -10
        for cut in ctx.candidates:
            req = ctx.required(truth.moved, e, cut)
            r = _rank(cut, succ)
            if req.bit_count() <= end and req & truth.final == req:
                top_valid = max(top_valid, r)
                if r > claim_rank:
                    finals.append(cut)
        claims: list[tuple[str, Cut]] = [("", NOTHING)]
        claims.extend(("final", cut) for cut in finals)
        for cut in ctx.candidates:
            if _rank(cut, succ) > top_valid:
                claims.append(("non-final", cut))
                break
        for start in starts:
            delivered = view[start:end]
            mask = 0
            for idx in delivered:
                mask |= 1 << idx
            names = tuple(ctx.event_text(i, idx) for idx in delivered)
            for claim_kind, claim in claims:
                new_claim = reader.claim
                if mutant == "max-observed":
                    if delivered:
                        seen = Cut(max(ctx.half_of(idx) for idx in delivered), THROUGH)
                        if _rank(seen, succ) > _rank(new_claim, succ):
                            new_claim = seen
                else:
                    accepted = claim_kind == "final" or (
                        mutant == "provisional-ok" and claim_kind == "non-final"
                    )
                    if accepted and _rank(claim, succ) > _rank(new_claim, succ):
                        new_claim = claim
                page = Page(start, end, claim_kind, claim, names, start < t)
                act = ctx.action("fetch_page", name, pname, e, outcome="ok", page=page)
                new = reader._replace(
                    phase=FETCHED if mask else READING, claim=new_claim, token=end, pending=mask
                )
                out.append((act, new))
    return out


def _reader_record(
    ctx: Context, i: int, j: int, name: str, part: Partition, moves: LocalMoves
) -> None:
    """``record_outcome`` for every event of the page held: idempotent per event."""
    reader = part.readers[j]
    truth = part.truth
    names = ", ".join(
        ctx.event_name(i, idx)
        for idx in ctx.view(truth.moved, reader.epoch)
        if reader.pending >> idx & 1
    )
    act = ctx.action("record_outcomes", name, ctx.partition_names[i], reader.epoch, detail=names)
    new = reader._replace(phase=READING, pending=0)
    new_truth = Truth(truth.moved, truth.final, truth.durable | reader.pending)
    moves.append((act, _set_reader(part, j, new, new_truth)))


def _reader_write(
    ctx: Context, i: int, j: int, name: str, part: Partition, moves: LocalMoves
) -> None:
    """``write_checkpoint`` conditional on the expected generation, or the pass ends.

    A paging reader writes a final claim strictly above the cut it holds, after
    recording every outcome it was handed; with nothing new to certify its pass
    ends, with a token-only progress write first (production reader,
    ``save_progress``) when its token differs from the stored one. A reader
    ``writing again`` must write next. The store applies the write only if the
    stored generation is still the expected one (storing expected + 1);
    otherwise it conflicts, answering with the stored checkpoint.

    The simple reader's pass ends at its write whatever the answer. The
    production reader goes on paging from what is stored once its write is
    settled (acknowledged, or a newer checkpoint kept) -- or ends, after its
    closing progress write --; after a lost race it rewrites while its claim
    is still strictly ahead (:func:`_after_lost_race`); after a lost response
    it rereads (:func:`_reader_reread`).
    """
    cfg = ctx.config
    succ = ctx.successor
    reader = part.readers[j]
    pname = ctx.partition_names[i]
    e = reader.epoch
    idle = _set_reader(part, j, _idle_reader(reader))
    production = ctx.production_reader
    if reader.phase == WRITING:
        purpose = "again"
    elif _rank(reader.claim, succ) > _rank(reader.base, succ):
        purpose = "claim"
    elif cfg.save_progress and reader.token != reader.base_token:
        purpose = "progress"
        reader = reader._replace(closing=True)
    else:
        moves.append((ctx.action("end_pass", name, pname, e), idle))
        return
    current = part.generations[e - 1]
    cut = reader.claim
    expecting = f"generation {reader.expected}" if reader.expected else "no checkpoint"
    in_doubt = reader._replace(phase=REREADING)
    detail = write_detail(expecting, purpose)
    if current == reader.expected:
        written = Checkpoint(cut, reader.token, cfg.scope, e, True)
        stored = _store_checkpoint(part, part.truth, e, written, current + 1, succ)
        act = ctx.action("write_checkpoint", name, pname, e, cut, "ok", detail=detail)
        if production:
            moves.append((act, _set_reader(stored, j, _settled(ctx, stored, reader))))
        else:
            moves.append((act, _set_reader(stored, j, _idle_reader(reader))))
        if cfg.lost_responses:
            act = ctx.action("write_checkpoint", name, pname, e, cut, "lost-applied", detail=detail)
            after = in_doubt if production else _idle_reader(reader)
            moves.append((act, _set_reader(stored, j, after)))
    elif not production:
        detail = write_detail(expecting, purpose, "adopt" if ctx.mutant == "overwrite" else "")
        act = ctx.action("write_checkpoint", name, pname, e, cut, "conflict", detail=detail)
        if ctx.mutant == "overwrite":
            # The late retry adopts the stored generation and writes its old cut again.
            moves.append((act, _set_reader(part, j, reader._replace(expected=current))))
        else:
            moves.append((act, idle))
    else:
        decision, after = _after_lost_race(ctx, part, reader, current)
        detail = write_detail(expecting, purpose, decision)
        act = ctx.action("write_checkpoint", name, pname, e, cut, "conflict", detail=detail)
        moves.append((act, _set_reader(part, j, after)))
    if cfg.lost_responses:
        detail = write_detail(expecting, purpose)
        act = ctx.action("write_checkpoint", name, pname, e, cut, "lost-not-applied", detail=detail)
        moves.append((act, _set_reader(part, j, in_doubt) if production else idle))


def _settled(ctx: Context, part: Partition, reader: Reader) -> Reader:
    """The production reader once its write is settled, holding what ``part`` stores.

    After the closing progress write the pass ends. Otherwise it goes on paging
    from its own token, holding the stored checkpoint: its cut (which the next
    claim must exceed: a claim of its own that was not written is forgotten),
    token and generation, with a fresh retry budget for its next write.
    """
    if reader.closing:
        return _idle_reader(reader)
    e = reader.epoch
    cp = part.checkpoints[e - 1]
    return Reader(
        READING,
        reader.passes_left,
        e,
        cp.cut,
        cp.cut,
        reader.token,
        0,
        cp.token if cp.epoch else NO_TOKEN,
        ctx.reader_retries,
        False,
        part.generations[e - 1],
    )


def _after_lost_race(
    ctx: Context, part: Partition, reader: Reader, current: int
) -> tuple[str, Reader]:
    """What the production reader does on learning a newer generation ``current`` is stored.

    The stored claim at least as strong: it keeps it and goes on from it
    (``keep``). Its own claim still strictly ahead and a retry left: it
    rewrites on that generation (``rewrite``: it must write next). Budget
    spent: it gives up and rereads what is stored (``gave_up``). The
    ``overwrite`` mutant rewrites even over a stronger claim.
    """
    stored = part.checkpoints[reader.epoch - 1]
    ahead = _rank(reader.claim, ctx.successor) > _rank(stored.cut, ctx.successor)
    if not ahead and ctx.mutant != "overwrite":
        return "keep", _settled(ctx, part, reader)
    if not reader.retries_left:
        return "gave_up", reader._replace(phase=SETTLING)
    again = reader._replace(
        phase=WRITING, base=stored.cut, retries_left=reader.retries_left - 1, expected=current
    )
    return "rewrite", again


def _reader_reread(
    ctx: Context, i: int, j: int, name: str, part: Partition, moves: LocalMoves
) -> None:
    """The production reader's authoritative read of its checkpoint.

    After a lost write response: the stored checkpoint is exactly the one it
    wrote, one generation past the expected one: ``written``. The expected
    generation is still stored: the write was not applied, so it writes again
    (``retry``) within its budget, else gives up. A newer generation: as after
    a conflict (:func:`_after_lost_race`). It never concludes from the missing
    response. After giving up (``giving up``): it goes on from what is stored
    (``settle``).
    """
    reader = part.readers[j]
    e = reader.epoch
    current = part.generations[e - 1]
    stored = part.checkpoints[e - 1]
    mine = Checkpoint(reader.claim, reader.token, ctx.config.scope, e, True)
    if reader.phase == SETTLING:
        decision, after = "settle", _settled(ctx, part, reader)
    elif current == reader.expected + 1 and stored == mine:
        decision, after = "written", _settled(ctx, part, reader)
    elif current == reader.expected:
        if reader.retries_left:
            decision = "retry"
            after = reader._replace(phase=WRITING, retries_left=reader.retries_left - 1)
        else:
            decision, after = "gave_up", reader._replace(phase=SETTLING)
    else:
        decision, after = _after_lost_race(ctx, part, reader, current)
    act = ctx.action(
        "read_checkpoint", name, ctx.partition_names[i], e, detail=f"authoritative:{decision}"
    )
    moves.append((act, _set_reader(part, j, after)))


# ---------------------------------------------------------------------------
# Publishers


#: A write the store applies, ``(epoch, cut, op_id)``: the record moves to it (revision + 1).
Write = tuple[int, Cut, str]
#: One publisher's step: the action, the publisher after it, and the write it makes the
#: store apply first (``None``: the record is left alone).
PublisherMoves = list[tuple[Action, Publisher, Write | None]]


def publisher_moves(state: State, k: int) -> PublisherMoves:
    """Publisher ``k``'s enabled steps in ``state``, each ``(action, publisher after, write)``.

    :func:`published` applies one. A step reads the publisher itself, the
    record, and (by phase) the membership epoch or the merge of the epoch it
    read, so the moves are memoized per distinct such tuple: a hit costs a
    hash of the publisher and the record. The list returned is the memo's own,
    the same object for the same tuple: callers must not change it (the
    explorer keys its own tables on it).
    """
    ctx = state.context
    pub = state.publishers[k]
    phase = pub.phase
    epoch = state.epoch if phase == HAVE_RECORD else 0
    merged = (
        merge_partitions(ctx, state.partitions, pub.mem_epoch) if phase == HAVE_MEMBERSHIP else None
    )
    key = (k, pub, state.record, epoch, merged)
    got = ctx.publisher_cache.get(key)
    if got is None:
        got = []
        name = ctx.publisher_names[k]
        rec = state.record
        if phase == IDLE:
            if pub.attempts_left:
                _pub_read_record(ctx, pub, rec, name, got)
        elif phase == HAVE_RECORD:
            _pub_read_membership(ctx, pub, state.epoch, name, got)
        elif phase == HAVE_MEMBERSHIP:
            assert merged is not None
            _pub_read_checkpoints(ctx, pub, merged, name, got)
        elif phase == PROPOSING:
            _pub_write(ctx, pub, rec, name, got)
        else:
            _pub_reread(ctx, pub, rec, name, got)
        if pub.orphan_epoch:
            _pub_delayed(ctx, pub, rec, name, got)
        ctx.publisher_cache[key] = got
    return got


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
        r_new = _rank(cut, succ)
        r_rec = _rank(pub.rec_cut, succ)
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
    rec = state.record
    return State(
        ctx,
        state.epoch,
        state.partitions,
        Record(epoch, cut, rec.revision + 1, op_id),
        tuple(write_dropped(p) for p in state.publishers),
        history_after(ctx, state.history, epoch, cut),
    )


def history_after(ctx: Context, hist: History, epoch: int, cut: Cut) -> History:
    """The observer's history once the record is written ``(epoch, cut)``."""
    succ = ctx.successor
    r = _rank(cut, succ)
    if epoch > hist.peak_epoch or (epoch == hist.peak_epoch and r > _rank(hist.peak_cut, succ)):
        peak_epoch, peak_cut = epoch, cut
    else:
        peak_epoch, peak_cut = hist.peak_epoch, hist.peak_cut
    peak_all = hist.peak_all
    if ctx.monotone and r > _rank(peak_all, succ):
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
    if rec.epoch == e and _rank(rec.cut, succ) >= _rank(pub.proposal, succ):
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
