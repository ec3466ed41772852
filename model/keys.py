"""The explorer's canonical state keys, computed from interned ids.

:func:`canonical_key` is the key's meaning: revision and generation numbers
abstracted to what a transition or invariant can observe, partitions and
publishers sorted (symmetry reduction; the argument for its soundness is in
:mod:`fencepost.model.explorer`). :class:`_Keys` computes the same information as a
flat tuple of small ints from the parent's interned sub-state ids and the model's
memoized moves, so a successor is built only when its key is new. Cost per
candidate successor: O(partitions + publishers) small-int work, plus one interning
of each new sub-state; memory: one entry per distinct sub-state.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

from fencepost.model.cuts import Cut
from fencepost.model.machine import (
    Core,
    core_of,
    environment_moves,
    reader_moves,
    reshard_moves,
    resharded,
)
from fencepost.model.merge import merge_partitions
from fencepost.model.publishers import (
    Write,
    history_after,
    published,
    publisher_moves,
    write_dropped,
)
from fencepost.model.state import (
    CONFIRMED,
    HAVE_MEMBERSHIP,
    HAVE_RECORD,
    PUBLISHED,
    PUBLISHER_LOCAL,
    READER_EXPECTED,
    REREADING,
    Action,
    Context,
    History,
    Partition,
    Publisher,
    Reader,
    Record,
    State,
)
from fencepost.model.updates import with_partition

_CLAIMS = (PUBLISHED, CONFIRMED)


def _generation_gap(reader: Reader, generations: tuple[int, ...]) -> int:
    """How the stored generation stands to the one a reader expects, as far as it can matter.

    0: the expected one is current; 1: one write past it (only kept for a reader
    rereading after a lost response, which compares the stored checkpoint with
    the one it wrote); 2: anything else (idle, or moved on).
    """
    if reader.epoch == 0:
        return 2
    gap = generations[reader.epoch - 1] - reader.expected
    if gap == 0:
        return 0
    return 1 if gap == 1 and reader.phase == REREADING else 2


def _partition_abstract(part: Partition, symmetry: bool) -> tuple[Any, ...]:
    """A partition less its generation numbers (readers keep their gap, see
    :func:`_generation_gap`)."""
    if not part.readers:
        return (part.truth, part.checkpoints, part.peaks)
    gens = part.generations
    readers = [(*r[:READER_EXPECTED], _generation_gap(r, gens)) for r in part.readers]
    if symmetry:
        readers.sort()
    return (part.truth, part.checkpoints, part.peaks, tuple(readers))


def _publisher_abstract(pub: Publisher, revision: int) -> tuple[Any, ...]:
    """A publisher less its revision number (kept: "the one I read is current"), op ids and,
    when idle, its last report (kept: whether a published/confirmed report was justified)."""
    if pub.phase:
        return (*pub[:PUBLISHER_LOCAL], pub.rec_revision == revision)
    honest = pub.justified or pub.outcome not in _CLAIMS
    return (0, pub.attempts_left, pub.orphan_epoch, pub.orphan_cut, honest)


def canonical_key(state: State, symmetry: bool = True) -> Hashable:
    """The key identifying ``state`` up to bisimilar numbering and (optionally) symmetry."""
    rec = state.record
    pubs = [_publisher_abstract(p, rec.revision) for p in state.publishers]
    parts = [_partition_abstract(part, symmetry) for part in state.partitions]
    if symmetry:
        parts.sort()
        pubs.sort()
    return (state.epoch, rec.epoch, rec.cut, state.history, tuple(parts), tuple(pubs))


#: How a candidate successor differs from the state it leaves (see :class:`_Keys`).
_LOCAL = 0  # partition ``index`` replaced
_RESHARD = 1  # next membership epoch, partition ``index`` replaced (-1: none)
_PUBLISHER = 2  # publisher ``index`` replaced, record untouched
_WRITE = 3  # the store applied a publication write (record, history), then publisher ``index``

#: The state fields each kind of successor changes (the others are its parent's).
_CHANGES = (
    frozenset({"partitions"}),
    frozenset({"partitions", "epoch"}),
    frozenset({"publishers"}),
    frozenset({"record", "publishers", "history"}),
)

#: One candidate successor: (move number, action, key, kind, index, payload). The move
#: number is its position in :func:`successors`. ``payload``: for
#: ``_LOCAL`` and ``_RESHARD`` the new partition's parts tuple (``None``: a reshard moving
#: no events), for ``_PUBLISHER`` (publisher after, its id), for ``_WRITE`` (publisher
#: after, the write, the publisher ids after, the head after).
_Candidate = tuple[int, Action, tuple[int, ...], int, int, Any]

#: A state being explored: (its number, the state, its partitions' parts tuples, their
#: abstract ids, its publishers' abstract ids, its head id, its publishers' interned ids,
#: its record's interned id).
_Node = tuple[int, State, list[tuple[int, ...]], list[int], list[int], int, list[int], int]


class _Keys:
    """Canonical keys of the explorer, as flat tuples of small ints.

    Each distinct abstract partition / publisher (:func:`_partition_abstract`,
    :func:`_publisher_abstract`) is interned to a small int, and so is each
    distinct *head* (membership epoch, the record less its revision and op id,
    the history): a key is ``(head, partition ids..., publisher ids...)``, each
    group sorted under symmetry reduction (sorting equal ints is sorting equal
    abstractions, so this is the reduction :func:`canonical_key` describes),
    and carries the same information as :func:`canonical_key`. A key is a tuple
    of ``1 + partitions + publishers`` small ints (about 100 bytes at the
    default bounds).

    A concrete partition is named by its *parts*: ``(core id, reader ids...)``,
    the ids of its core (:func:`~fencepost.model.machine.core_of`) and of each
    reader, interned once each. The moves of a partition's environment and of
    each reader are memoized per (index, epoch, core id[, reader id]) with the
    ids of what they produce, and a partition's abstract id per parts tuple,
    so a successor's key costs a few small-int tuples and dict probes, and no
    successor is built unless its key is new. Publishers' moves are the model's
    memo (:func:`~fencepost.model.publishers.publisher_moves`) with their ids kept
    beside. The tables grow with the distinct cores, readers, partitions,
    publishers (with the record revision) and heads met: far fewer than the
    states, except partitions with several readers (about one per state with
    one partition, 100 bytes each).
    """

    def __init__(self, symmetry: bool) -> None:
        self.symmetry = symmetry
        self.interned: dict[Hashable, int] = {}
        self.core_ids: dict[Core, int] = {}
        self.cores: list[Core] = []
        self.reader_ids: dict[Reader, int] = {}
        self.readers: list[Reader] = []
        #: parts -> abstract partition id; core id -> abstract core id; (reader id, core
        #: id) -> abstract reader id (its generation gap read from the core).
        self.partition_ids: dict[tuple[int, ...], int] = {}
        self.core_abstract: dict[int, int] = {}
        self.reader_abstract: dict[tuple[int, int], int] = {}
        self.publisher_ids: dict[tuple[Publisher, int], int] = {}
        self.heads: dict[tuple[int, int, Cut, History], int] = {}
        self.head_parts: list[tuple[int, int, Cut, History]] = []
        #: (i, epoch, core id) -> the environment's moves, with the core id after each.
        self.env_memo: dict[tuple[int, int, int], list[tuple[Action, int]]] = {}
        #: (i, epoch, core id) -> the same for a partition without readers, with the parts
        #: tuple and the abstract id after each.
        self.alone_memo: dict[tuple[int, int, int], list[tuple[Action, tuple[int], int]]] = {}
        #: (i, epoch, core id) -> the reshard moving events into partition i, with the core
        #: id after it.
        self.reshard_memo: dict[tuple[int, int, int], tuple[Action, int, int]] = {}
        #: (i, epoch, core id, reader id) -> the moves of the first reader met in that state.
        self.reader_any: dict[tuple[int, ...], list[tuple[Action, int, int]]] = {}
        #: (i, j, epoch, core id, reader id) -> reader j's moves, with core and reader ids.
        self.reader_memo: dict[tuple[int, ...], list[tuple[Action, int, int]]] = {}
        self.publisher_cids: dict[Publisher, int] = {}
        self.publishers: list[Publisher] = []
        self.record_cids: dict[Record, int] = {}
        self.records: list[Record] = []
        #: (k, publisher cid, record cid, epoch or merge read) -> (action, publisher cid
        #: after, its abstract id after, the write).
        self.publisher_memo: dict[tuple[object, ...], list[tuple[Action, int, int, Any]]] = {}
        #: (epoch, core ids...) -> the merge of that epoch's checkpoints.
        self.merged: dict[tuple[int, ...], tuple[str, Cut]] = {}
        #: (head, epoch, cut) -> the head once the record is written (epoch, cut).
        self.head_after: dict[tuple[int, int, Cut], int] = {}
        #: (publisher cid, record cid) -> its ids once another's write moves the record on.
        self.after_write: dict[tuple[int, int], tuple[int, int]] = {}

    # -- interning -------------------------------------------------------------
    def core_id(self, core: Core) -> int:
        got = self.core_ids.get(core)
        if got is None:
            got = self.core_ids[core] = len(self.cores)
            self.cores.append(core)
        return got

    def reader_id(self, reader: Reader) -> int:
        got = self.reader_ids.get(reader)
        if got is None:
            got = self.reader_ids[reader] = len(self.readers)
            self.readers.append(reader)
        return got

    def parts_of(self, part: Partition) -> tuple[int, ...]:
        """The parts tuple naming ``part`` (one hash of its core and of each reader)."""
        return (self.core_id(core_of(part)), *[self.reader_id(r) for r in part.readers])

    def partition(self, parts: tuple[int, ...]) -> Partition:
        """The partition a parts tuple names (built anew)."""
        readers = self.readers
        return Partition(*self.cores[parts[0]], tuple([readers[r] for r in parts[1:]]))

    def partition_id(self, parts: tuple[int, ...]) -> int:
        """The abstract id of the partition ``parts`` names.

        Built from the parts' own abstract ids (the core less its generations,
        each reader with its generation gap, readers sorted under symmetry): two
        partitions get one id exactly when :func:`_partition_abstract` gives them
        equal abstractions, without building either.
        """
        got = self.partition_ids.get(parts)
        if got is None:
            core = parts[0]
            readers = [self._reader_abstract(r, core) for r in parts[1:]]
            if self.symmetry:
                readers.sort()
            abstract = ("partition", self._core_abstract(core), *readers)
            got = self.interned.setdefault(abstract, len(self.interned))
            self.partition_ids[parts] = got
        return got

    def _core_abstract(self, core: int) -> int:
        got = self.core_abstract.get(core)
        if got is None:
            truth, checkpoints, _, peaks = self.cores[core]
            abstract = ("core", truth, checkpoints, peaks)
            got = self.core_abstract[core] = self.interned.setdefault(abstract, len(self.interned))
        return got

    def _reader_abstract(self, reader: int, core: int) -> int:
        probe = (reader, core)
        got = self.reader_abstract.get(probe)
        if got is None:
            r = self.readers[reader]
            abstract = ("reader", *r[:READER_EXPECTED], _generation_gap(r, self.cores[core][2]))
            got = self.reader_abstract[probe] = self.interned.setdefault(
                abstract, len(self.interned)
            )
        return got

    def publisher_id(self, pub: Publisher, revision: int) -> int:
        probe = (pub, revision)
        got = self.publisher_ids.get(probe)
        if got is None:
            abstract = ("publisher", _publisher_abstract(pub, revision))
            got = self.interned.setdefault(abstract, len(self.interned))
            self.publisher_ids[probe] = got
        return got

    def head(self, epoch: int, record: Record, history: History) -> int:
        probe = (epoch, record.epoch, record.cut, history)
        got = self.heads.get(probe)
        if got is None:
            got = self.heads[probe] = len(self.head_parts)
            self.head_parts.append(probe)
        return got

    def publisher_ids_of(self, state: State) -> list[int]:
        rev = state.record.revision
        return [self.publisher_id(p, rev) for p in state.publishers]

    def key(self, head: int, pids: list[int], qids: list[int]) -> tuple[int, ...]:
        if self.symmetry:
            return (head, *sorted(pids), *sorted(qids))
        return (head, *pids, *qids)

    # -- memoized moves ------------------------------------------------------------
    def _environment(self, state: State, i: int, core: int) -> list[tuple[Action, int]]:
        probe = (i, state.epoch, core)
        got = self.env_memo.get(probe)
        if got is None:
            moves = environment_moves(state.context, i, state.epoch, state.partitions[i])
            got = [(act, self.core_id(c)) for act, c in moves]
            self.env_memo[probe] = got
        return got

    def _alone(self, state: State, i: int, core: int) -> list[tuple[Action, tuple[int], int]]:
        """:meth:`_environment` of a partition without readers, with the parts and ids after."""
        probe = (i, state.epoch, core)
        got = self.alone_memo.get(probe)
        if got is None:
            got = []
            for act, new_core in self._environment(state, i, core):
                new_parts = (new_core,)
                got.append((act, new_parts, self.partition_id(new_parts)))
            self.alone_memo[probe] = got
        return got

    def _reshards(
        self, state: State, parts: list[tuple[int, ...]]
    ) -> list[tuple[Action, int, int]]:
        """The reshard moves as ``(action, i, core id after)`` (``-1, -1``: no events move)."""
        ctx = state.context
        if ctx.n_moved == 0:
            return [(act, -1, -1) for act, _, _ in reshard_moves(ctx, state.epoch, ())]
        out = []
        for i, mine in enumerate(parts):
            probe = (i, state.epoch, mine[0])
            got = self.reshard_memo.get(probe)
            if got is None:
                act, _, new_part = reshard_moves(ctx, state.epoch, state.partitions)[i]
                assert new_part is not None
                got = (act, i, self.core_id(core_of(new_part)))
                self.reshard_memo[probe] = got
            out.append(got)
        return out

    def _reader(
        self, state: State, i: int, j: int, core: int, reader: int
    ) -> list[tuple[Action, int, int]]:
        probe = (i, j, state.epoch, core, reader)
        got = self.reader_memo.get(probe)
        if got is None:
            # Readers of one partition differ by name only: another reader's moves from
            # the same reader state on the same core are these, its name replaced.
            ctx = state.context
            other = self.reader_any.get(probe[0:1] + probe[2:])
            if other is None:
                moves = reader_moves(ctx, i, j, state.epoch, state.partitions[i])
                got = [(act, self.core_id(c), self.reader_id(r)) for act, c, r in moves]
                self.reader_any[probe[0:1] + probe[2:]] = got
            else:
                name = ctx.reader_names[i][j]
                got = [(_renamed(ctx, act, name), c, r) for act, c, r in other]
            self.reader_memo[probe] = got
        return got

    def publisher_cid(self, pub: Publisher) -> int:
        """The interned id of a publisher as it is (concrete: revision numbers and all)."""
        got = self.publisher_cids.get(pub)
        if got is None:
            got = self.publisher_cids[pub] = len(self.publishers)
            self.publishers.append(pub)
        return got

    def record_cid(self, record: Record) -> int:
        """The interned id of a publication record as it is."""
        got = self.record_cids.get(record)
        if got is None:
            got = self.record_cids[record] = len(self.records)
            self.records.append(record)
        return got

    def _publisher(self, node: _Node, k: int) -> list[tuple[Action, int, int, Write | None]]:
        """Publisher ``k``'s moves as (action, its interned id after, its abstract id after,
        the write), memoized per what :func:`publisher_moves` reads, named by ids."""
        _, state, parts, _, _, _, qcs, rc = node
        qc = qcs[k]
        pub = self.publishers[qc]
        reads: object = 0
        if pub.phase == HAVE_RECORD:
            reads = state.epoch
        elif pub.phase == HAVE_MEMBERSHIP:
            # The merge reads the checkpoints: the cores.
            probe_merge = (pub.mem_epoch, *[p[0] for p in parts])
            reads = self.merged.get(probe_merge)
            if reads is None:
                reads = merge_partitions(state.context, state.partitions, pub.mem_epoch)
                self.merged[probe_merge] = reads
        probe = (k, qc, rc, reads)
        got = self.publisher_memo.get(probe)
        if got is None:
            rev = state.record.revision
            got = [
                (act, self.publisher_cid(p), self.publisher_id(p, rev if w is None else rev + 1), w)
                for act, p, w in publisher_moves(state, k)
            ]
            self.publisher_memo[probe] = got
        return got

    def _head_after(self, head: int, write: Write, ctx: Context) -> int:
        probe = (head, write[0], write[1])
        got = self.head_after.get(probe)
        if got is None:
            epoch, _, _, history = self.head_parts[head]
            after = history_after(ctx, history, write[0], write[1])
            got = self.head(epoch, Record(write[0], write[1], 0, None), after)
            self.head_after[probe] = got
        return got

    def _after_write(self, qc: int, rc: int) -> tuple[int, int]:
        """Publisher ``qc`` once another's write moves record ``rc`` on: (abstract id,
        interned id)."""
        probe = (qc, rc)
        got = self.after_write.get(probe)
        if got is None:
            dropped = write_dropped(self.publishers[qc])
            revision = self.records[rc].revision + 1
            got = (self.publisher_id(dropped, revision), self.publisher_cid(dropped))
            self.after_write[probe] = got
        return got

    # -- successors ---------------------------------------------------------------
    def candidates(
        self, node: _Node, seen: set[tuple[int, ...]] | None = None
    ) -> tuple[int, list[_Candidate]]:
        """The successors of ``node``'s state as keys and recipes, in :func:`successors`
        order, with their number.

        With ``seen``, only those whose key is not in it, each added to it as it
        is listed (the first of several with one key is the one listed). None is
        built here (:meth:`build` builds one). Costs per state one memo probe per
        partition, reader and publisher; per successor a few small-int tuples,
        dict probes and a sort of a few ints.
        """
        _, state, parts, pids, qids, head, qcs, rc = node
        m = -1
        fresh = seen is not None
        box: set[tuple[int, ...]] = set() if seen is None else seen
        ctx = state.context
        sym = self.symmetry
        out: list[_Candidate] = []
        append = out.append
        sq = sorted(qids) if sym else qids
        sp = sorted(pids) if sym else pids
        partition_id = self.partition_id
        known = self.partition_ids.get
        new_parts: tuple[int, ...]
        got: int | None
        single = len(pids) == 1  # one partition: its id is the key's whole middle
        for i, mine in enumerate(parts):
            core = mine[0]
            if len(mine) == 1:  # no readers: the new partition's id is memoized too
                for act, new_parts, pid in self._alone(state, i, core):
                    if single:
                        key = (head, pid, *sq)
                    else:
                        ps = pids.copy()
                        ps[i] = pid
                        if sym:
                            ps.sort()
                        key = (head, *ps, *sq)
                    m += 1
                    if fresh:
                        if key in box:
                            continue
                        box.add(key)
                    append((m, act, key, _LOCAL, i, new_parts))
                continue
            for act, new_core in self._environment(state, i, core):
                new_parts = (new_core, *mine[1:])
                ps = pids.copy()
                ps[i] = partition_id(new_parts)
                if sym:
                    ps.sort()
                key = (head, *ps, *sq)
                m += 1
                if fresh:
                    if key in box:
                        continue
                    box.add(key)
                append((m, act, key, _LOCAL, i, new_parts))
            for j in range(1, len(mine)):
                before, after = mine[1:j], mine[j + 1 :]
                for act, new_core, new_reader in self._reader(state, i, j - 1, core, mine[j]):
                    new_parts = (new_core, *before, new_reader, *after)
                    got = known(new_parts)
                    if got is None:
                        got = partition_id(new_parts)
                    if single:
                        key = (head, got, *sq)
                    else:
                        ps = pids.copy()
                        ps[i] = got
                        if sym:
                            ps.sort()
                        key = (head, *ps, *sq)
                    m += 1
                    if fresh:
                        if key in box:
                            continue
                        box.add(key)
                    append((m, act, key, _LOCAL, i, new_parts))
        if state.epoch < ctx.config.epochs:
            next_head = self.head(state.epoch + 1, state.record, state.history)
            for act, i, new_core in self._reshards(state, parts):
                if i < 0:
                    m += 1
                    key = (next_head, *sp, *sq)
                    if fresh:
                        if key in box:
                            continue
                        box.add(key)
                    append((m, act, key, _RESHARD, i, None))
                    continue
                new_parts = (new_core, *parts[i][1:])
                ps = pids.copy()
                ps[i] = partition_id(new_parts)
                if sym:
                    ps.sort()
                m += 1
                key = (next_head, *ps, *sq)
                if fresh:
                    if key in box:
                        continue
                    box.add(key)
                append((m, act, key, _RESHARD, i, new_parts))
        if ctx.has_publishers:
            dropped: list[tuple[int, int]] | None = None
            alone = len(qcs) == 1  # one publisher: its id is the key's whole tail
            for k in range(len(qcs)):
                for act, new_qc, qid, write in self._publisher(node, k):
                    if write is None:
                        if alone:
                            key = (head, *sp, qid)
                        else:
                            qs = qids.copy()
                            qs[k] = qid
                            if sym:
                                qs.sort()
                            key = (head, *sp, *qs)
                        m += 1
                        if fresh:
                            if key in box:
                                continue
                            box.add(key)
                        append((m, act, key, _PUBLISHER, k, (new_qc, qid)))
                        continue
                    if dropped is None:
                        dropped = [self._after_write(qc, rc) for qc in qcs]
                    qs = [q for q, _ in dropped]
                    qs[k] = qid
                    key_head = self._head_after(head, write, ctx)
                    unsorted = qs.copy()
                    if sym:
                        qs.sort()
                    m += 1
                    key = (key_head, *sp, *qs)
                    if fresh:
                        if key in box:
                            continue
                        box.add(key)
                    new_qcs = [c for _, c in dropped]
                    new_qcs[k] = new_qc
                    append((m, act, key, _WRITE, k, (new_qc, write, unsorted, key_head, new_qcs)))
        return m + 1, out

    def build(self, node: _Node, cand: _Candidate, number: int) -> _Node:
        """The successor ``cand`` stands for, as a frontier node numbered ``number``."""
        _, state, parts, pids, qids, head, qcs, rc = node
        _, _, _, kind, index, payload = cand
        if kind == _PUBLISHER:
            new_qc, qid = payload
            qs = qids.copy()
            qs[index] = qid
            cs = qcs.copy()
            cs[index] = new_qc
            new = published(state, index, self.publishers[new_qc], None)
            return (number, new, parts, pids, qs, head, cs, rc)
        if kind == _WRITE:
            new_qc, write, qs, key_head, cs = payload
            new = published(state, index, self.publishers[new_qc], write)
            return (number, new, parts, pids, qs, key_head, cs, self.record_cid(new.record))
        if payload is None:  # a reshard that moves no events
            return (number, resharded(state, index, None), parts, pids, qids, head, qcs, rc)
        ns = parts.copy()
        ns[index] = payload
        ps = pids.copy()
        ps[index] = self.partition_ids[payload]
        part = self.partition(payload)
        if kind == _LOCAL:
            return (number, with_partition(state, index, part), ns, ps, qids, head, qcs, rc)
        next_head = self.head(state.epoch + 1, state.record, state.history)
        return (number, resharded(state, index, part), ns, ps, qids, next_head, qcs, rc)


def _renamed(ctx: Context, action: Action, actor: str) -> Action:
    """``action`` taken by ``actor`` instead (interned like every action)."""
    a = action
    return ctx.action(a.kind, actor, a.partition, a.epoch, a.cut, a.outcome, a.page, a.detail)
