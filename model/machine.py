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
yields ``(action, next_state)`` pairs for checkers; :func:`actions` and
:func:`step` expose the same relation one edge at a time for drivers outside.
A checker is handed these, and the same relation factored by what each move
reads, through :mod:`fencepost.model.spec`.

Faults are transitions: "applied, response lost", "not applied, response
lost", "response timed out while the write is in flight" (applied later or
never), "read times out" (``read_timeouts``). A process that stops is one that
takes no further step: every state it leaves behind is reachable with it
merely slow, and a write it left in flight is modelled as above.

Layout: this module holds the public API and the environment's steps; the
reader steps are in :mod:`fencepost.model.readers`, the publisher steps in
:mod:`fencepost.model.publishers`, the merge in :mod:`fencepost.model.merge` and
the successor-state constructors in :mod:`fencepost.model.updates`.

The model never imports ``fencepost.impl``; its cut semantics are
:mod:`fencepost.model.cuts`.
"""

from __future__ import annotations

from fencepost.model.config import ModelConfig
from fencepost.model.cuts import NOTHING, Cut, coordinate_text, rank
from fencepost.model.publishers import (
    published,
    publisher_moves,
)
from fencepost.model.readers import _reader_moves
from fencepost.model.state import (
    IDLE,
    MISSING,
    Action,
    Checkpoint,
    Context,
    Core,
    History,
    Partition,
    Publisher,
    Reader,
    Record,
    State,
    Truth,
    context_for,
    core_of,
)
from fencepost.model.updates import (
    LocalMoves,
    _store_checkpoint,
    _with_partition,
)

Successors = list[tuple[Action, State]]


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
    :func:`publisher_moves` (a checker is handed their parts,
    :class:`fencepost.model.spec.Factored`, so that it only builds the states it
    has not seen).
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


# ---------------------------------------------------------------------------
# Environment


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


def reader_renamed(ctx: Context, action: Action, i: int, j: int) -> Action:
    """``action`` of some reader of partition ``i``, taken by reader ``j`` instead.

    The readers of one partition are interchangeable: from the same core and the
    same reader state, reader ``j``'s moves (:func:`reader_moves`) are any other
    reader's with this renaming, and lead to the same core and reader state.
    """
    a = action
    actor = ctx.reader_names[i][j]
    return ctx.action(a.kind, actor, a.partition, a.epoch, a.cut, a.outcome, a.page, a.detail)


def partition_of(core: Core, readers: tuple[Reader, ...]) -> Partition:
    """The partition made of ``core`` (:func:`core_of`) and ``readers``."""
    return Partition(*core, readers)


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
    current = rank(cp.cut, succ)
    settled = truth.final & truth.durable
    first_untrue: Cut | None = None
    moves: LocalMoves = []
    for cut in ctx.candidates:
        if rank(cut, succ) <= current:
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


def membership_moves(ctx: Context, e: int) -> list[Action]:
    """The moves from epoch ``e`` to the next that move no events into any partition.

    One when the bounds move no events and another epoch is allowed, else none
    (:func:`reshard_into` gives the others). :func:`resharded` applies one with
    ``part`` ``None``.
    """
    if e >= ctx.config.epochs or ctx.n_moved:
        return []
    return [ctx.action("reshard", "membership", None, e + 1)]


def reshard_into(ctx: Context, e: int, i: int, part: Partition) -> list[tuple[Action, Partition]]:
    """The moves from epoch ``e`` to the next that move events into partition ``i``.

    Reads the partition's ground truth only. The moved events
    (``moved_positions``) sit below what the partition may already have
    certified in the old epoch. Every partition may be the target; none when
    the bounds move no events (:func:`membership_moves`) or allow no other epoch.
    """
    if e >= ctx.config.epochs or not ctx.n_moved:
        return []
    new_e = e + 1
    where = ", ".join(coordinate_text(h) for h in ctx.moved_halves)
    truth = part.truth
    new_part = part._replace(truth=Truth((*truth.moved, new_e), truth.final, truth.durable))
    act = ctx.action("reshard", "membership", ctx.partition_names[i], new_e, detail=where)
    return [(act, new_part)]


def reshard_moves(
    ctx: Context, e: int, partitions: tuple[Partition, ...]
) -> list[tuple[Action, int, Partition | None]]:
    """The membership moves to the next epoch, each ``(action, i, partition i after)``.

    :func:`membership_moves` as ``(action, -1, None)``, then :func:`reshard_into`
    of each partition in turn; :func:`resharded` applies either.
    """
    out: list[tuple[Action, int, Partition | None]] = [
        (act, -1, None) for act in membership_moves(ctx, e)
    ]
    for i, part in enumerate(partitions):
        out.extend((act, i, new_part) for act, new_part in reshard_into(ctx, e, i, part))
    return out


def resharded(state: State, i: int, part: Partition | None) -> State:
    """``state`` in the next membership epoch, partition ``i`` replaced by ``part`` (if any)."""
    if part is None:
        return state._replace(epoch=state.epoch + 1)
    return _with_partition(state, i, part, state.epoch + 1)
