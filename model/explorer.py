"""Bounded breadth-first exploration of the model with canonical state keys.

Breadth-first order makes the first violating state found one at the least
depth, so the counterexample printed is a shortest path (in steps) to a broken
invariant. States are deduplicated by a *canonical key*:

* **Revision and generation numbers are abstracted.** A publisher's held
  revision matters only through equality with the record's current revision,
  and a reader's expected generation only through its gap to the stored
  generation (current, one write past it for a reader rereading after a lost
  response, or further): both only ever grow, so that gap is all a transition
  or an invariant can observe. The record's ``op_id`` and a publisher's attempt
  counter are write-only (no transition or invariant reads them) and are left
  out. States differing only there are bisimilar.
* **Symmetry reduction.** Partitions are sorted as wholes (ground truth,
  checkpoints per epoch, peaks and their readers, readers sorted among
  themselves) and publishers are sorted by local state. This is sound because
  no invariant names a particular partition, reader or publisher: each
  quantifies over all of them; the transitions are the same for every
  partition and publisher (a reshard chooses its target among all
  partitions); and nothing outside a partition's tuple refers to it by
  position, nor anything outside a publisher's tuple to it (op_id is left
  out). Permuting them maps reachable states to reachable states and
  violations to violations, so one representative per orbit suffices.

The search itself works on interned ids (:class:`_Keys`): a key is a flat
tuple of small ints carrying the same information as :func:`canonical_key`,
computed for each successor from its parent's ids and the memoized moves of
the model, and the successor is built only when its key is new. Behind the
search only the keys, a parent pointer and a move number per state are kept;
a counterexample is replayed from the initial state.

With ``keep_graph`` the reachable graph is kept as a flat edge list during the
search and handed out as a ``networkx.DiGraph`` (``result.graph``, built in
bulk on first use) whose nodes are state numbers: ``result.keys[n]`` is node
``n``'s canonical key and ``result.representatives[n]`` the state explored for
it.
"""

from __future__ import annotations

import gc
import itertools
import os
import time
from array import array
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any

import networkx as nx

from fencepost.model.config import ModelConfig
from fencepost.model.cuts import NOTHING, Cut
from fencepost.model.invariants import INVARIANTS, Invariant
from fencepost.model.machine import (
    Core,
    Write,
    core_of,
    environment_moves,
    history_after,
    initial,
    merge_partitions,
    published,
    publisher_moves,
    reader_moves,
    reshard_moves,
    resharded,
    successors,
    with_partition,
    write_dropped,
)
from fencepost.model.sometimes import Sometimes, applicable
from fencepost.model.state import (
    CONFIRMED,
    HAVE_MEMBERSHIP,
    HAVE_RECORD,
    PUBLISHED,
    PUBLISHER_LOCAL,
    PUBLISHER_PHASES,
    READER_EXPECTED,
    READER_PHASES,
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

#: Verdicts. ``vacuous``: every invariant holds in every reachable state, but a situation
#: the part must reach (a ``sometimes`` property) never was, so some invariant passed
#: vacuously within these bounds.
HOLDS = "holds"
VIOLATED = "violated"
INCOMPLETE = "incomplete"
VACUOUS = "vacuous"

#: New states between two looks at the clock and the memory in use (a cheap read).
_CHECK_EVERY = 1024


def memory_in_use() -> int:
    """Bytes of memory this process uses now (resident set; its peak where /proc is absent)."""
    try:
        with open("/proc/self/statm", "rb") as handle:
            return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        import resource

        return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024


@dataclass(frozen=True, slots=True)
class ExploreProgress:
    """Where a long exploration is: what :func:`explore` hands its ``progress`` callback."""

    part: str
    states: int
    transitions: int
    depth: int
    seconds: float
    memory: int
    #: Growth of the resident set since the exploration started (bytes).
    memory_growth: int = 0

    @property
    def states_per_second(self) -> float:
        return self.states / self.seconds if self.seconds > 0 else 0.0

    @property
    def bytes_per_state(self) -> float:
        """Resident-set growth since the start per distinct state so far."""
        return self.memory_growth / self.states if self.states else 0.0


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
    memo (:func:`~fencepost.model.machine.publisher_moves`) with their ids kept
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


@dataclass(frozen=True, slots=True)
class Step:
    """One step of a counterexample: the action taken and the state after it."""

    index: int
    action: Action | None
    state: State

    @property
    def text(self) -> str:
        """What happened, in domain words."""
        return "initial state" if self.action is None else self.action.describe()

    def summary(self) -> list[str]:
        """The record, the checkpoints and the moving processes after this step."""
        return summarize(self.state)


@dataclass(frozen=True, slots=True)
class Reached:
    """Where a ``sometimes`` property was first reached: steps from the start, and by what."""

    name: str
    steps: int
    action: str


@dataclass(frozen=True, slots=True)
class Violation:
    """The invariant a counterexample breaks (the first in INVARIANTS order) and any others."""

    invariant: str
    doc: str
    message: str
    also: tuple[str, ...] = ()


@dataclass(slots=True)
class ExploreResult:
    """The outcome of exploring one part within its bounds."""

    part: str
    config: ModelConfig
    states: int
    transitions: int
    depth: int
    seconds: float
    verdict: str
    counterexample: list[Step] | None = None
    violation: Violation | None = None
    symmetry: bool = True
    reached: dict[str, Reached] = field(default_factory=dict)
    unreached: tuple[Sometimes, ...] = ()
    representatives: list[State] = field(default_factory=list)
    edges: array[int] | None = None
    #: Why an ``incomplete`` exploration stopped: ``max_states`` or ``max_memory``.
    stopped_by: str | None = None
    #: Resident set of the process when the exploration started, and its peak during it
    #: (sampled every 1,024 new states and at the end), in bytes.
    memory_start: int = 0
    memory_peak: int = 0
    #: The explorer's own key of every node, by state number (kept with the graph): flat
    #: tuples of small ints (see :class:`_Keys`), for a same-run baseline over the graph.
    state_keys: list[tuple[int, ...]] | None = None
    _graph: Any = None
    _keys: list[Hashable] | None = None

    @property
    def graph(self) -> Any:
        """The reachable graph as a ``networkx.DiGraph`` (None unless kept).

        Node ``n`` is the ``n``-th distinct state found (``representatives[n]``,
        canonical key ``keys[n]``); an edge is at least one transition between
        them. Built in bulk on first use from the edge list the exploration
        kept, so exploring stays fast when nobody looks at it.
        """
        if self._graph is None and self.edges is not None:
            graph = nx.DiGraph()
            graph.add_nodes_from(range(self.states))
            flat = self.edges
            graph.add_edges_from(zip(flat[0::2], flat[1::2], strict=True))
            self._graph = graph
        return self._graph

    @property
    def keys(self) -> list[Hashable]:
        """Canonical key of every node (empty unless the graph was kept)."""
        if self._keys is None:
            self._keys = [canonical_key(rep, self.symmetry) for rep in self.representatives]
        return self._keys

    @property
    def states_per_second(self) -> float:
        """Distinct states explored per second of wall time."""
        return self.states / self.seconds if self.seconds > 0 else float("inf")

    @property
    def bytes_per_state(self) -> float:
        """Peak resident-set growth during the exploration per distinct state.

        Everything the exploration allocated counts (keys, parent pointers, the
        frontier, the model's memo tables, the graph when kept). Memory freed by
        an earlier exploration in the same process and reused counts as no
        growth, so the first exploration of a process gives the honest figure
        (``benchmarks/explore.py`` measures each part in a fresh process).
        """
        return (self.memory_peak - self.memory_start) / self.states if self.states else 0.0

    @property
    def broken(self) -> tuple[str, ...]:
        """Every invariant the counterexample's last state breaks (empty when none)."""
        if self.violation is None:
            return ()
        return (self.violation.invariant, *self.violation.also)


@dataclass(slots=True)
class Exploration:
    """Results of several parts explored one after another."""

    results: list[ExploreResult]

    @property
    def verdict(self) -> str:
        """``violated`` if any part is, else ``incomplete`` if any hit the cap, else
        ``vacuous`` if any left a situation unreached, else ``holds``."""
        verdicts = {r.verdict for r in self.results}
        for v in (VIOLATED, INCOMPLETE, VACUOUS):
            if v in verdicts:
                return v
        return HOLDS

    @property
    def states(self) -> int:
        """Distinct states over all parts."""
        return sum(r.states for r in self.results)

    @property
    def transitions(self) -> int:
        """Transitions over all parts."""
        return sum(r.transitions for r in self.results)

    @property
    def seconds(self) -> float:
        """Wall time over all parts."""
        return sum(r.seconds for r in self.results)

    @property
    def states_per_second(self) -> float:
        """Distinct states per second over all parts."""
        return self.states / self.seconds if self.seconds > 0 else float("inf")


def explore(
    config: ModelConfig,
    *,
    symmetry: bool = True,
    keep_graph: bool = True,
    max_states: int | None = None,
    invariants: Sequence[Invariant] = INVARIANTS,
    max_memory: int | None = None,
    progress: Callable[[ExploreProgress], None] | None = None,
    progress_every: float = 2.0,
    sometimes: Sequence[Sometimes] | None = None,
) -> ExploreResult:
    """Explore every state reachable within ``config``'s bounds, breadth first.

    Stops at the first state breaking one of ``invariants`` (verdict
    ``violated``, with a shortest counterexample), or when a budget runs out
    (verdict ``incomplete``, ``stopped_by`` saying which): ``max_states``
    distinct states, or ``max_memory`` bytes in use by the process (looked at
    every 1,024 new states, so it is overshot by at most that many states'
    worth, a few hundred bytes each). Otherwise every transition was also checked
    against the ``sometimes`` properties (by default those
    :func:`~fencepost.model.sometimes.applicable` to ``config``): the verdict is
    ``holds`` when each was reached (``result.reached`` says where first), else
    ``vacuous`` (``result.unreached`` lists them). Checking them costs, while
    any is unreached, building the successor and one test per unreached
    property on each transition of an action kind that can reach one
    (:attr:`~fencepost.model.sometimes.Sometimes.kinds`), nothing once all
    are. ``progress`` is called about every ``progress_every`` seconds with an
    :class:`ExploreProgress`.

    Cost. Time: per distinct state, one memo lookup per partition, reader and
    publisher (:class:`_Keys`, over :mod:`fencepost.model.machine`) and the
    invariants reading a field its transition changed (``Invariant.reads``);
    per transition, one key (a tuple of ``1 + partitions + publishers`` small
    ints) and one set probe; a successor state is built only when its key is
    new. 12-25 microseconds per distinct state at the default bounds
    (docs/performance.md). Memory: per distinct state its key in a set (about
    100 bytes at the default bounds) and 16 bytes of parent pointer and move
    number; the states themselves only for the current and next depth (all of
    them, and a graph, with ``keep_graph``); plus the memo tables, which grow
    with distinct sub-states (cores, readers, partitions, publishers, records),
    not with states, except that readers make most partitions distinct. About
    250 bytes per state in all for the publication part, 750 for ingest.
    ``result.memory_peak`` is the peak of the process's resident set sampled
    every 1,024 states (``result.bytes_per_state`` its growth per state).

    Cyclic garbage collection is paused while it runs (and restored after):
    the exploration allocates only acyclic tuples and lists, and a collector
    walking every key again as they accumulate would cost a third of the time.
    """
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _explore(
            config,
            symmetry=symmetry,
            keep_graph=keep_graph,
            max_states=max_states,
            invariants=invariants,
            max_memory=max_memory,
            progress=progress,
            progress_every=progress_every,
            sometimes=sometimes,
        )
    finally:
        if collecting:
            gc.enable()


def _explore(
    config: ModelConfig,
    *,
    symmetry: bool = True,
    keep_graph: bool = True,
    max_states: int | None = None,
    invariants: Sequence[Invariant] = INVARIANTS,
    max_memory: int | None = None,
    progress: Callable[[ExploreProgress], None] | None = None,
    progress_every: float = 2.0,
    sometimes: Sequence[Sometimes] | None = None,
) -> ExploreResult:
    started = time.perf_counter()
    memory_start = memory_peak = memory_in_use()
    start = initial(config)
    keys = _Keys(symmetry)
    parts0 = [keys.parts_of(p) for p in start.partitions]
    pids0 = [keys.partition_id(p) for p in parts0]
    qids0 = keys.publisher_ids_of(start)
    head0 = keys.head(start.epoch, start.record, start.history)
    key0 = keys.key(head0, pids0, qids0)
    # Without the graph, membership is all that is asked of a key: a set (no state numbers).
    index: dict[tuple[int, ...], int] = {key0: 0}
    seen: set[tuple[int, ...]] = {key0}
    count = 1
    reps: list[State] = [start]
    # Parent pointers and the position of the move in successors(parent): a counterexample
    # is replayed from the initial state (the exploration keeps no states behind it).
    parent = array("l", [-1])
    moved = array("l", [-1])
    edges = array("l")
    transitions = 0
    depth = 0
    # Per candidate kind, the invariants a successor of that kind must be checked against:
    # those reading a field it changes (the state it leaves passed every one).
    checks = [
        [inv.check for inv in invariants if inv.reads is None or inv.reads & changed]
        for changed in _CHANGES
    ]
    waiting = list(applicable(config) if sometimes is None else sometimes)
    trigger = _kinds(waiting)
    reached: dict[str, Reached] = {}
    found = _violated(start, invariants)
    qcs0 = [keys.publisher_cid(p) for p in start.publishers]
    node0: _Node = (0, start, parts0, pids0, qids0, head0, qcs0, keys.record_cid(start.record))
    frontier: list[_Node] = [node0] if found is None else []
    capped = False
    stopped_by: str | None = None
    hit = 0
    next_check = _CHECK_EVERY
    next_report = started + progress_every
    candidates = keys.candidates
    build = keys.build
    while frontier and found is None and not capped:
        nxt: list[_Node] = []
        for node in frontier:
            sid = node[0]
            state = node[1]
            # Every transition is looked at while a situation is unreached or the graph is
            # kept; otherwise only those to new keys are listed (``seen`` is filled there).
            every = bool(waiting) or keep_graph
            moves, cands = candidates(node, None if every else seen)
            transitions += moves
            for cand in cands:
                m = cand[0]
                built = None
                if waiting and (trigger is None or cand[1].kind in trigger):
                    built = build(node, cand, count)
                    action, new = cand[1], built[1]
                    for situation in [s for s in waiting if s.check(state, action, new)]:
                        waiting.remove(situation)
                        trigger = _kinds(waiting)
                        reached[situation.name] = Reached(
                            situation.name, depth + 1, action.describe()
                        )
                if keep_graph:
                    tid = index.setdefault(cand[2], count)
                    edges.append(sid)
                    edges.append(tid)
                    if tid != count:
                        continue
                elif every:
                    if cand[2] in seen:
                        continue
                    seen.add(cand[2])
                tid = count
                count += 1
                if built is None:
                    built = build(node, cand, tid)
                new = built[1]
                parent.append(sid)
                moved.append(m)
                nxt.append(built)
                if keep_graph:
                    reps.append(new)
                for check in checks[cand[3]]:
                    if check(new) is not None:
                        found = _violated(new, invariants)
                        hit = tid
                        break
                if found is not None:
                    break
                if max_states is not None and count >= max_states:
                    capped, stopped_by = True, "max_states"
                    break
                if count >= next_check:
                    next_check += _CHECK_EVERY
                    memory = memory_in_use()
                    memory_peak = max(memory_peak, memory)
                    if max_memory is not None and memory > max_memory:
                        capped, stopped_by = True, "max_memory"
                        break
                    now = time.perf_counter()
                    if progress is not None and now >= next_report:
                        next_report = now + progress_every
                        progress(
                            ExploreProgress(
                                config.part,
                                count,
                                transitions - (moves - m - 1),
                                depth + 1,
                                now - started,
                                memory,
                                memory - memory_start,
                            )
                        )
            if found is not None or capped:
                # Only the transitions up to the one that stopped it were taken.
                transitions -= moves - m - 1
                break
        if nxt:
            depth += 1
        frontier = nxt
    seconds = time.perf_counter() - started
    memory_peak = max(memory_peak, memory_in_use())
    result = ExploreResult(
        part=config.part,
        config=config,
        states=count,
        transitions=transitions,
        depth=depth,
        seconds=seconds,
        verdict=HOLDS,
        symmetry=symmetry,
        reached=reached,
        representatives=reps if keep_graph else [],
        edges=edges if keep_graph else None,
        memory_start=memory_start,
        memory_peak=memory_peak,
        state_keys=list(index) if keep_graph else None,
    )
    if found is not None:
        result.verdict = VIOLATED
        result.violation = found
        path = []
        at = hit
        while at >= 0:
            path.append(at)
            at = parent[at]
        path.reverse()
        result.counterexample = _replay(start, [moved[n] for n in path[1:]])
        result.depth = len(path) - 1
    elif capped:
        result.verdict = INCOMPLETE
        result.stopped_by = stopped_by
    elif waiting:
        result.verdict = VACUOUS
        result.unreached = tuple(waiting)
    return result


def _renamed(ctx: Context, action: Action, actor: str) -> Action:
    """``action`` taken by ``actor`` instead (interned like every action)."""
    a = action
    return ctx.action(a.kind, actor, a.partition, a.epoch, a.cut, a.outcome, a.page, a.detail)


def _kinds(waiting: Sequence[Sometimes]) -> frozenset[str] | None:
    """Action kinds that can reach one of ``waiting`` (``None``: any kind may)."""
    kinds: set[str] = set()
    for situation in waiting:
        if situation.kinds is None:
            return None
        kinds |= situation.kinds
    return frozenset(kinds)


def _replay(start: State, moves: Sequence[int]) -> list[Step]:
    """The path taking the ``moves``-th successor at each step from ``start``.

    The transitions are functions, so this rebuilds exactly the states the
    exploration met; it costs one :func:`successors` call per step.
    """
    steps = [Step(0, None, start)]
    state = start
    for n, m in enumerate(moves, 1):
        action, state = successors(state)[m]
        steps.append(Step(n, action, state))
    return steps


def explore_parts(
    configs: Sequence[ModelConfig],
    *,
    symmetry: bool = True,
    keep_graph: bool = True,
    max_states: int | None = None,
    invariants: Sequence[Invariant] = INVARIANTS,
    max_memory: int | None = None,
    progress: Callable[[ExploreProgress], None] | None = None,
    progress_every: float = 2.0,
    sometimes: Sequence[Sometimes] | None = None,
) -> Exploration:
    """Explore each configuration (typically one per part) in turn."""
    return Exploration(
        [
            explore(
                c,
                symmetry=symmetry,
                keep_graph=keep_graph,
                max_states=max_states,
                invariants=invariants,
                max_memory=max_memory,
                progress=progress,
                progress_every=progress_every,
                sometimes=sometimes,
            )
            for c in configs
        ]
    )


def _violated(state: State, invariants: Sequence[Invariant]) -> Violation | None:
    broken = [(inv, msg) for inv in invariants if (msg := inv.check(state)) is not None]
    if not broken:
        return None
    first, msg = broken[0]
    return Violation(first.name, first.doc, msg, tuple(inv.name for inv, _ in broken[1:]))


# ---------------------------------------------------------------------------
# Rendering


def summarize(state: State) -> list[str]:
    """Lines describing the durable state and the busy processes, in domain words."""
    ctx = state.context
    lines = []
    if ctx.has_publishers:
        rec = state.record
        op = f", op {rec.op_id}" if rec.op_id else ""
        lines.append(f"record: epoch {rec.epoch}, {rec.cut}, revision {rec.revision}{op}")
    cps = []
    for i, part in enumerate(state.partitions):
        name = ctx.partition_names[i]
        for e0, cp in enumerate(part.checkpoints[: state.epoch]):
            if cp.epoch == 0:
                cps.append(f"{name}@{e0 + 1} none")
                continue
            flags = []
            if not cp.final:
                flags.append("provisional")
            if cp.scope != ctx.config.scope:
                flags.append(f"scope {cp.scope}")
            if cp.epoch != e0 + 1:
                flags.append(f"stamped epoch {cp.epoch}")
            extra = f" [{', '.join(flags)}]" if flags else ""
            cps.append(f"{name}@{e0 + 1} {cp.cut} (gen {part.generations[e0]}){extra}")
    lines.append(f"membership epoch {state.epoch}; checkpoints: {'; '.join(cps)}")
    lines.append(truth_line(state))
    busy = []
    for k, pub in enumerate(state.publishers):
        name = ctx.publisher_names[k]
        if pub.phase:
            desc = PUBLISHER_PHASES[pub.phase]
            if pub.proposal != NOTHING:
                desc += f" (epoch {pub.mem_epoch}, {pub.proposal})"
            busy.append(f"{name} {desc}")
        elif pub.outcome:
            reason = f" ({pub.reason})" if pub.reason else ""
            busy.append(f"{name} reported {pub.outcome}{reason}")
        if pub.orphan_epoch:
            busy.append(f"{name}'s write (epoch {pub.orphan_epoch}, {pub.orphan_cut}) in flight")
    for i, part in enumerate(state.partitions):
        for j, r in enumerate(part.readers):
            if r.phase:
                busy.append(
                    f"{ctx.reader_names[i][j]} {READER_PHASES[r.phase]} "
                    f"(epoch {r.epoch}, holds claim {r.claim})"
                )
    if busy:
        lines.append("processes: " + "; ".join(busy))
    return lines


def truth_line(state: State) -> str:
    """The ground truth of the current epoch: each event, its position and its flags."""
    words = []
    for i in range(len(state.partitions)):
        for ev in state.events(i, state.epoch):
            if ev.final and ev.durable:
                flags = "settled"
            else:
                flags = ("final" if ev.final else "not final") + (
                    ", outcome durable" if ev.durable else ", no outcome"
                )
            words.append(f"{ev.name}@{_coord(ev.half)} {flags}")
    return f"ground truth (epoch {state.epoch}): {'; '.join(words) or 'no events'}"


def _coord(half: int) -> str:
    return str(half // 2) if half % 2 == 0 else f"{half / 2:g}"


def render_counterexample(result: ExploreResult) -> str:
    """The shortest path to the violation, step by step, then the invariant it breaks."""
    if result.counterexample is None or result.violation is None:
        return ""
    v = result.violation
    out = [
        f"Counterexample in part '{result.part}' ({len(result.counterexample) - 1} steps):",
    ]
    last_truth = ""
    for step in result.counterexample:
        out.append(f"{step.index:3d}. {step.text}")
        for line in step.summary():
            if line.startswith("ground truth"):
                # The ground truth is shown when it changes, not after every step.
                if line == last_truth:
                    continue
                last_truth = line
            out.append(f"       {line}")
    out.append(f"Invariant broken: {v.invariant} — {v.doc}")
    out.append(f"  {v.message}")
    if v.also:
        out.append(f"  (the same state also breaks: {', '.join(v.also)})")
    return "\n".join(out)


def render_unreached(result: ExploreResult) -> str:
    """Why a ``vacuous`` exploration fails: each situation never reached, in domain words."""
    if not result.unreached:
        return ""
    out = [
        f"part '{result.part}': {len(result.unreached)} situation(s) never reached within these "
        "bounds, so the invariants about them passed vacuously (nothing is proved about them):"
    ]
    for s in result.unreached:
        out.append(f"  - {s.name}: {s.doc} (keeps {', '.join(s.about)} honest)")
    out.append("  raise the bounds (or restore the defaults) until every one is reached")
    return "\n".join(out)


def _dot_quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def counterexample_dot(result: ExploreResult) -> str:
    """The counterexample path as a Graphviz DOT chain (states boxed, actions on edges)."""
    steps = result.counterexample or []
    lines = ["digraph counterexample {", "  rankdir=TB;", "  node [shape=box, fontsize=10];"]
    for step in steps:
        label = "\n".join(step.summary())
        attrs = ", color=red" if step is steps[-1] else ""
        lines.append(f"  s{step.index} [label={_dot_quote(label)}{attrs}];")
    for prev, step in itertools.pairwise(steps):
        lines.append(f"  s{prev.index} -> s{step.index} [label={_dot_quote(step.text)}];")
    if result.violation is not None:
        v = result.violation
        lines.append(
            "  violation [shape=note, color=red, "
            f"label={_dot_quote(v.invariant + ': ' + v.message)}];"
        )
        if steps:
            lines.append(f"  s{steps[-1].index} -> violation [style=dashed];")
    lines.append("}")
    return "\n".join(lines) + "\n"


def graphs_dot(results: Sequence[ExploreResult]) -> str:
    """The bounded reachable graphs as one DOT digraph, one cluster per part.

    Nodes are labelled with the record and the membership epoch, edges with the
    acting process. Needs the graphs kept (``keep_graph=True``).
    """
    lines = ["digraph reachable {", "  node [shape=box, fontsize=9];"]
    for c, result in enumerate(results):
        if result.graph is None:
            raise ValueError("the exploration did not keep its graph; explore with keep_graph=True")
        lines.append(f"  subgraph cluster_{c} {{")
        lines.append(f"    label={_dot_quote(result.part)};")
        for n, state in enumerate(result.representatives):
            rec = state.record
            label = (
                f"#{n}\nrecord e{rec.epoch} {rec.cut} r{rec.revision}\nmembership e{state.epoch}"
            )
            lines.append(f"    c{c}n{n} [label={_dot_quote(label)}];")
        index = {k: n for n, k in enumerate(result.keys)}
        for n, state in enumerate(result.representatives):
            for action, new in successors(state):
                target = index.get(canonical_key(new, result.symmetry))
                if target is not None:
                    lines.append(
                        f"    c{c}n{n} -> c{c}n{target} [label={_dot_quote(action.actor)}];"
                    )
        lines.append("  }")
    lines.append("}")
    return "\n".join(lines) + "\n"
