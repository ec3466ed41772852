"""Reader transitions (ingest passes) of the model: every step touches its partition only.

A reader fetches pages, records outcomes, writes generation-fenced checkpoints,
rereads after a lost response, and rewrites at once after a lost race, as the
production reader does (docs/model.md). Cost per reader step: O(events of the
partition) at most (a page), memoized per distinct reader state by the explorer.
"""

from __future__ import annotations

from fencepost.model.cuts import NOTHING, THROUGH, Cut, rank
from fencepost.model.state import (
    FETCHED,
    IDLE,
    NO_TOKEN,
    READING,
    REREADING,
    SETTLING,
    WRITING,
    Action,
    Checkpoint,
    Context,
    Page,
    Partition,
    Reader,
    State,
    Truth,
    write_detail,
)
from fencepost.model.updates import LocalMoves, _store_checkpoint

Successors = list[tuple[Action, State]]


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
    claim_rank = rank(reader.claim, succ)
    starts = (t, t - 1) if cfg.overlap and t > 0 else (t,)
    for end in range(t, min(len(view), t + cfg.page_size) + 1):
        finals: list[Cut] = []
        top_valid = -10
        for cut in ctx.candidates:
            req = ctx.required(truth.moved, e, cut)
            r = rank(cut, succ)
            if req.bit_count() <= end and req & truth.final == req:
                top_valid = max(top_valid, r)
                if r > claim_rank:
                    finals.append(cut)
        claims: list[tuple[str, Cut]] = [("", NOTHING)]
        claims.extend(("final", cut) for cut in finals)
        for cut in ctx.candidates:
            if rank(cut, succ) > top_valid:
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
                        if rank(seen, succ) > rank(new_claim, succ):
                            new_claim = seen
                else:
                    accepted = claim_kind == "final" or (
                        mutant == "provisional-ok" and claim_kind == "non-final"
                    )
                    if accepted and rank(claim, succ) > rank(new_claim, succ):
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
    elif rank(reader.claim, succ) > rank(reader.base, succ):
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
    ahead = rank(reader.claim, ctx.successor) > rank(stored.cut, ctx.successor)
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
