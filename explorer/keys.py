"""The explorer's state keys, computed from interned ids of the model's parts.

What a key means is the model's (:attr:`fencepost.model.spec.Spec.canonical_key`:
which states are the same, symmetry included). :class:`Keys` computes the same
information as a flat tuple of small ints, from the parent's interned part ids
and the memoized moves of the model's factored relation
(:class:`fencepost.model.spec.Factored`), so that a successor is built only
when its key is new. Cost per candidate successor: O(partitions + publishers)
small-int work, plus one interning of each new part; memory: one entry per
distinct part.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

from fencepost.model.spec import (
    READS_EPOCH,
    READS_RECORD,
    Action,
    Context,
    Core,
    Factored,
    Head,
    Publisher,
    Reader,
    Record,
    State,
)

#: How a candidate successor differs from the state it leaves (the moves of
#: :class:`~fencepost.model.spec.Factored` it comes from).
LOCAL = 0  # partition ``index`` replaced (its environment or one of its readers moved)
RESHARD = 1  # next membership epoch, partition ``index`` replaced (-1: none)
PUBLISHER = 2  # publisher ``index`` replaced, record untouched
WRITE = 3  # the store applied a publication write (record, history), then publisher ``index``

#: One candidate successor: (move number, action, key, kind, index, payload). The move
#: number is its position in the model's successors. ``payload``: for ``LOCAL`` and
#: ``RESHARD`` the new partition's parts tuple (``None``: a membership move, no partition
#: changed), for ``PUBLISHER`` (publisher after, its id), for ``WRITE`` (publisher after, the
#: write, the publisher ids after, the head after, the publishers' interned ids after, the
#: record's interned id after).
Candidate = tuple[int, Action, tuple[int, ...], int, int, Any]

#: A state being explored: (its number, the state, its partitions' parts tuples, their
#: abstract ids, its publishers' abstract ids, its head id, its publishers' interned ids,
#: its record's interned id).
Node = tuple[int, State, list[tuple[int, ...]], list[int], list[int], int, list[int], int]


def changes(model: Factored) -> tuple[frozenset[str], ...]:
    """The state fields each kind of candidate changes, by kind (``LOCAL``, ...)."""
    return (
        model.local_changes,
        model.reshard_changes,
        model.publisher_changes,
        model.write_changes,
    )


class Keys:
    """State keys as flat tuples of small ints.

    Each distinct abstract part (the model's :attr:`~Factored.core_key`,
    :attr:`~Factored.reader_key`, :attr:`~Factored.publisher_key`) is interned
    to a small int, a partition's abstract id is that of (its core's, its
    readers' sorted under symmetry), and each distinct head
    (:attr:`~Factored.head_of`) is interned too: a key is ``(head, partition
    ids..., publisher ids...)``, each group sorted under symmetry reduction
    (sorting equal ints is sorting equal abstractions), and two states get equal
    keys exactly when the model's ``canonical_key`` gives them equal keys. A key
    is a tuple of ``1 + partitions + publishers`` small ints (about 100 bytes at
    the default bounds).

    A concrete partition is named by its *parts*: ``(core id, reader ids...)``,
    the ids of its core and of each reader, interned once each. The moves of a
    partition's environment (with its reshards: both read the core alone) and of
    each reader are memoized per (index, epoch, core id[, reader id]) with the
    ids of what they produce, and a partition's abstract id per parts tuple, so
    a successor's key costs a few small-int tuples and dict probes, and no
    successor is built unless its key is new. A publisher's moves are memoized
    per (index, its id, the record's id, what it reads besides). The tables grow
    with the distinct cores, readers, partitions, publishers, records and heads
    met: far fewer than the states, except partitions with several readers
    (about one per state with one partition, 100 bytes each).

    The model's functions are bound once here (``model``: the factored relation
    the explorer was handed); nothing else of the model is used.
    """

    def __init__(self, model: Factored, symmetry: bool) -> None:
        self.symmetry = symmetry
        self.core_of = model.core_of
        self.partition_of = model.partition_of
        self.head_of = model.head_of
        self.core_key = model.core_key
        self.reader_key = model.reader_key
        self.publisher_key = model.publisher_key
        self.environment_moves = model.environment_moves
        self.reader_moves = model.reader_moves
        self.reader_renamed = model.reader_renamed
        self.membership_moves = model.membership_moves
        self.reshard_into = model.reshard_into
        self.publisher_reads = model.publisher_reads
        self.merge_cores = model.merge_cores
        self.publisher_step = model.publisher_step
        self.record_written = model.record_written
        self.write_dropped = model.write_dropped
        self.head_resharded = model.head_resharded
        self.head_written = model.head_written
        self.with_partition = model.with_partition
        self.resharded = model.resharded
        self.published = model.published
        self.core_ids: dict[Core, int] = {}
        self.cores: list[Core] = []
        self.reader_ids: dict[Reader, int] = {}
        self.readers: list[Reader] = []
        #: parts -> abstract partition id; (core key id, reader key ids...) -> abstract
        #: partition id; core id -> core key id; (reader id, core id) -> reader key id (its
        #: generation gap read from the core); the key ids of each kind.
        self.partition_ids: dict[tuple[int, ...], int] = {}
        self.partition_abstract: dict[tuple[int, ...], int] = {}
        self.core_abstract: dict[int, int] = {}
        self.reader_abstract: dict[tuple[int, int], int] = {}
        self.core_keys: dict[Hashable, int] = {}
        self.reader_keys: dict[Hashable, int] = {}
        #: (publisher cid, record cid) -> abstract publisher id; the key ids.
        self.publisher_ids: dict[tuple[int, int], int] = {}
        self.publisher_keys: dict[Hashable, int] = {}
        self.heads: dict[Head, int] = {}
        self.head_parts: list[Head] = []
        #: head id -> the moves to the next epoch that change no partition, and the head id
        #: once the membership moves to the next epoch.
        self.head_moves: dict[int, tuple[list[Action], int]] = {}
        #: (i, epoch, core id) -> the environment's moves, with the core id after each; and
        #: the moves to the next epoch into partition i, with the core id after each.
        self.env_memo: dict[
            tuple[int, int, int], tuple[list[tuple[Action, int]], list[tuple[Action, int]]]
        ] = {}
        #: (i, epoch, core id) -> the same for a partition without readers, with the parts
        #: tuple and the abstract id after each environment move.
        self.alone_memo: dict[
            tuple[int, int, int],
            tuple[list[tuple[Action, tuple[int], int]], list[tuple[Action, int]]],
        ] = {}
        #: (i, epoch, core id, reader id) -> the moves of the first reader met in that state.
        self.reader_any: dict[tuple[int, ...], list[tuple[Action, int, int]]] = {}
        #: (i, j, epoch, core id, reader id) -> reader j's moves, with core and reader ids.
        self.reader_memo: dict[tuple[int, ...], list[tuple[Action, int, int]]] = {}
        self.publisher_cids: dict[Publisher, int] = {}
        self.publishers: list[Publisher] = []
        #: publisher cid -> what its next step reads besides itself and the record.
        self.publisher_needs: list[tuple[int, int]] = []
        self.record_cids: dict[Record, int] = {}
        self.records: list[Record] = []
        #: (k, publisher cid, record cid, what it reads) -> (action, publisher cid after, its
        #: abstract id after, the write, the record cid after).
        self.publisher_memo: dict[tuple[object, ...], list[tuple[Action, int, int, Any, int]]] = {}
        #: (epoch, core ids...) -> the merge of that epoch's checkpoints.
        self.merged: dict[tuple[int, ...], tuple[str, Any]] = {}
        #: (head, record cid after) -> the head once a write leaves that record.
        self.head_after: dict[tuple[int, int], int] = {}
        #: (publisher cid, record cid after) -> its ids once another's write leaves that
        #: record: (abstract id, interned id).
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

    def parts_of(self, state: State) -> list[tuple[int, ...]]:
        """The parts tuple naming each partition of ``state`` (one hash of each core and
        reader)."""
        core_of = self.core_of
        return [
            (self.core_id(core_of(part)), *[self.reader_id(r) for r in part.readers])
            for part in state.partitions
        ]

    def partition_id(self, parts: tuple[int, ...]) -> int:
        """The abstract id of the partition ``parts`` names.

        Built from the parts' own abstract ids (the core's key, each reader's key
        with its generation gap, readers sorted under symmetry): two partitions get
        one id exactly when the model's keys of them are equal, without building
        either.
        """
        got = self.partition_ids.get(parts)
        if got is None:
            core = parts[0]
            readers = [self._reader_abstract(r, core) for r in parts[1:]]
            if self.symmetry:
                readers.sort()
            abstract = (self._core_abstract(core), *readers)
            table = self.partition_abstract
            got = table.setdefault(abstract, len(table))
            self.partition_ids[parts] = got
        return got

    def _core_abstract(self, core: int) -> int:
        got = self.core_abstract.get(core)
        if got is None:
            table = self.core_keys
            got = table.setdefault(self.core_key(self.cores[core]), len(table))
            self.core_abstract[core] = got
        return got

    def _reader_abstract(self, reader: int, core: int) -> int:
        probe = (reader, core)
        got = self.reader_abstract.get(probe)
        if got is None:
            table = self.reader_keys
            abstract = self.reader_key(self.readers[reader], self.cores[core])
            got = self.reader_abstract[probe] = table.setdefault(abstract, len(table))
        return got

    def publisher_id(self, qc: int, rc: int) -> int:
        """The abstract id of publisher ``qc`` beside record ``rc`` (interned ids)."""
        probe = (qc, rc)
        got = self.publisher_ids.get(probe)
        if got is None:
            table = self.publisher_keys
            abstract = self.publisher_key(self.publishers[qc], self.records[rc])
            got = self.publisher_ids[probe] = table.setdefault(abstract, len(table))
        return got

    def head_id(self, head: Head) -> int:
        got = self.heads.get(head)
        if got is None:
            got = self.heads[head] = len(self.head_parts)
            self.head_parts.append(head)
        return got

    def publisher_cid(self, pub: Publisher) -> int:
        """The interned id of a publisher as it is (concrete: revision numbers and all)."""
        got = self.publisher_cids.get(pub)
        if got is None:
            got = self.publisher_cids[pub] = len(self.publishers)
            self.publishers.append(pub)
            self.publisher_needs.append(self.publisher_reads(pub))
        return got

    def record_cid(self, record: Record) -> int:
        """The interned id of a publication record as it is."""
        got = self.record_cids.get(record)
        if got is None:
            got = self.record_cids[record] = len(self.records)
            self.records.append(record)
        return got

    def key(self, head: int, pids: list[int], qids: list[int]) -> tuple[int, ...]:
        if self.symmetry:
            return (head, *sorted(pids), *sorted(qids))
        return (head, *pids, *qids)

    def node(self, state: State, number: int = 0) -> Node:
        """``state`` as a frontier node (its parts interned from scratch)."""
        parts = self.parts_of(state)
        rc = self.record_cid(state.record)
        qcs = [self.publisher_cid(p) for p in state.publishers]
        return (
            number,
            state,
            parts,
            [self.partition_id(p) for p in parts],
            [self.publisher_id(qc, rc) for qc in qcs],
            self.head_id(self.head_of(state)),
            qcs,
            rc,
        )

    # -- memoized moves ------------------------------------------------------------
    def _environment(
        self, state: State, i: int, core: int
    ) -> tuple[list[tuple[Action, int]], list[tuple[Action, int]]]:
        """Partition ``i``'s environment moves and the reshards into it, with the core id
        after each (both read its core alone)."""
        probe = (i, state.epoch, core)
        got = self.env_memo.get(probe)
        if got is None:
            ctx, e, part = state.context, state.epoch, state.partitions[i]
            core_id, core_of = self.core_id, self.core_of
            got = (
                [(act, core_id(c)) for act, c in self.environment_moves(ctx, i, e, part)],
                [(act, core_id(core_of(p))) for act, p in self.reshard_into(ctx, e, i, part)],
            )
            self.env_memo[probe] = got
        return got

    def _alone(
        self, state: State, i: int, core: int
    ) -> tuple[list[tuple[Action, tuple[int], int]], list[tuple[Action, int]]]:
        """:meth:`_environment` of a partition without readers, with the parts and ids after."""
        probe = (i, state.epoch, core)
        got = self.alone_memo.get(probe)
        if got is None:
            moves, into = self._environment(state, i, core)
            alone = []
            for act, new_core in moves:
                new_parts = (new_core,)
                alone.append((act, new_parts, self.partition_id(new_parts)))
            got = self.alone_memo[probe] = (alone, into)
        return got

    def _head_moves(self, state: State, head: int) -> tuple[list[Action], int]:
        """The moves of ``state`` to the next epoch that change no partition, and the head
        id once the membership moves on (memoized per head: the head holds the epoch)."""
        got = self.head_moves.get(head)
        if got is None:
            moves = self.membership_moves(state.context, state.epoch)
            got = (moves, self.head_id(self.head_resharded(self.head_parts[head])))
            self.head_moves[head] = got
        return got

    def _reader(
        self, state: State, i: int, j: int, core: int, reader: int
    ) -> list[tuple[Action, int, int]]:
        probe = (i, j, state.epoch, core, reader)
        got = self.reader_memo.get(probe)
        if got is None:
            # Readers of one partition are interchangeable: another reader's moves from the
            # same reader state on the same core are these, renamed (the model's word).
            ctx = state.context
            other = self.reader_any.get(probe[0:1] + probe[2:])
            if other is None:
                moves = self.reader_moves(ctx, i, j, state.epoch, state.partitions[i])
                got = [(act, self.core_id(c), self.reader_id(r)) for act, c, r in moves]
                self.reader_any[probe[0:1] + probe[2:]] = got
            else:
                renamed = self.reader_renamed
                got = [(renamed(ctx, act, i, j), c, r) for act, c, r in other]
            self.reader_memo[probe] = got
        return got

    def _merged(self, state: State, parts: list[tuple[int, ...]], epoch: int) -> object:
        """The merge of ``epoch``'s checkpoints, memoized per the cores it reads (by ids)."""
        probe = (epoch, *[p[0] for p in parts])
        got = self.merged.get(probe)
        if got is None:
            cores = self.cores
            got = self.merge_cores(state.context, epoch, [cores[p[0]] for p in parts])
            self.merged[probe] = got
        return got

    def _publisher(
        self, state: State, k: int, qc: int, rc: int, seen: object
    ) -> list[tuple[Action, int, int, Any, int]]:
        """Publisher ``k``'s moves when it is ``qc`` and the record ``rc`` (interned ids) and
        it reads ``seen`` besides (what the model's ``publisher_reads`` names), as (action,
        its interned id after, its abstract id after, the write, the record's interned id
        after); memoized per those."""
        probe = (k, qc, rc, seen)
        got = self.publisher_memo.get(probe)
        if got is None:
            record = self.records[rc]
            got = []
            for act, pub, write in self.publisher_step(
                state.context, k, self.publishers[qc], record, seen
            ):
                new_qc = self.publisher_cid(pub)
                new_rc = (
                    rc if write is None else self.record_cid(self.record_written(record, write))
                )
                got.append((act, new_qc, self.publisher_id(new_qc, new_rc), write, new_rc))
            self.publisher_memo[probe] = got
        return got

    def _head_after(self, head: int, rc: int, ctx: Context) -> int:
        probe = (head, rc)
        got = self.head_after.get(probe)
        if got is None:
            written = self.head_written(ctx, self.head_parts[head], self.records[rc])
            got = self.head_after[probe] = self.head_id(written)
        return got

    def _after_write(self, qc: int, rc: int) -> tuple[int, int]:
        """Publisher ``qc`` once another's write leaves record ``rc``: (abstract id,
        interned id)."""
        probe = (qc, rc)
        got = self.after_write.get(probe)
        if got is None:
            dropped = self.publisher_cid(self.write_dropped(self.publishers[qc]))
            got = (self.publisher_id(dropped, rc), dropped)
            self.after_write[probe] = got
        return got

    # -- successors ---------------------------------------------------------------
    def candidates(
        self, node: Node, seen: set[tuple[int, ...]] | None = None
    ) -> tuple[int, list[Candidate]]:
        """The successors of ``node``'s state as keys and recipes, in the model's
        successors order, with their number.

        With ``seen``, only those whose key is not in it, each added to it as it
        is listed (the first of several with one key is the one listed). None is
        built here (:meth:`build` builds one). Costs per state one memo probe per
        partition, reader and publisher; per successor a few small-int tuples,
        dict probes and a sort of a few ints.

        The check against ``seen`` is written out at each of the seven places a
        candidate is listed, not once: most candidates are duplicates (five in six
        in the publication part), and listing every one to check them in a single
        loop of the explorer costs each a tuple and a loop turn. Measured (CPU
        time, median of 9 rounds alternating in one process): 0.949 of this speed
        on the publication part, 0.971 on ingest, 1.007 on composed.
        """
        _, state, parts, pids, qids, head, qcs, rc = node
        epoch = state.epoch
        m = -1
        fresh = seen is not None
        box: set[tuple[int, ...]] = set() if seen is None else seen
        sym = self.symmetry
        out: list[Candidate] = []
        append = out.append
        sq = sorted(qids) if sym else qids
        sp = sorted(pids) if sym else pids
        partition_id = self.partition_id
        known = self.partition_ids.get
        new_parts: tuple[int, ...]
        got: int | None
        # The memo probes are made here, the methods called on a miss only (a call per
        # partition, reader and publisher per state costs a few percent).
        membership, next_head = self.head_moves.get(head) or self._head_moves(state, head)
        alone_memo, env_memo, reader_memo = self.alone_memo, self.env_memo, self.reader_memo
        single = len(pids) == 1  # one partition: its id is the key's whole middle
        reshards: list[tuple[int, list[tuple[Action, int]]]] = []
        for i, mine in enumerate(parts):
            core = mine[0]
            if len(mine) == 1:  # no readers: the new partition's id is memoized too
                alone, into = alone_memo.get((i, epoch, core)) or self._alone(state, i, core)
                if into:
                    reshards.append((i, into))
                for act, new_parts, pid in alone:
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
                    append((m, act, key, LOCAL, i, new_parts))
                continue
            moves, into = env_memo.get((i, epoch, core)) or self._environment(state, i, core)
            if into:
                reshards.append((i, into))
            for act, new_core in moves:
                new_parts = (new_core, *mine[1:])
                ps = pids.copy()
                got = known(new_parts)
                ps[i] = partition_id(new_parts) if got is None else got
                if sym:
                    ps.sort()
                key = (head, *ps, *sq)
                m += 1
                if fresh:
                    if key in box:
                        continue
                    box.add(key)
                append((m, act, key, LOCAL, i, new_parts))
            for j in range(1, len(mine)):
                before, after = mine[1:j], mine[j + 1 :]
                steps = reader_memo.get((i, j - 1, epoch, core, mine[j]))
                if steps is None:
                    steps = self._reader(state, i, j - 1, core, mine[j])
                for act, new_core, new_reader in steps:
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
                    append((m, act, key, LOCAL, i, new_parts))
        if membership or reshards:
            for act in membership:
                m += 1
                key = (next_head, *sp, *sq)
                if fresh:
                    if key in box:
                        continue
                    box.add(key)
                append((m, act, key, RESHARD, -1, None))
            for i, into in reshards:
                for act, new_core in into:
                    new_parts = (new_core, *parts[i][1:])
                    ps = pids.copy()
                    got = known(new_parts)
                    ps[i] = partition_id(new_parts) if got is None else got
                    if sym:
                        ps.sort()
                    m += 1
                    key = (next_head, *ps, *sq)
                    if fresh:
                        if key in box:
                            continue
                        box.add(key)
                    append((m, act, key, RESHARD, i, new_parts))
        if not qcs:
            return m + 1, out
        dropped: list[tuple[int, int]] | None = None
        dropped_rc = -1
        alone_pub = len(qcs) == 1  # one publisher: its id is the key's whole tail
        needs, publisher_memo = self.publisher_needs, self.publisher_memo
        for k, qc in enumerate(qcs):
            need, at = needs[qc]
            if need == READS_RECORD:
                reads: object = 0
            elif need == READS_EPOCH:
                reads = epoch
            else:
                reads = self._merged(state, parts, at)
            pub_moves = publisher_memo.get((k, qc, rc, reads))
            if pub_moves is None:
                pub_moves = self._publisher(state, k, qc, rc, reads)
            for act, new_qc, qid, write, new_rc in pub_moves:
                if write is None:
                    if alone_pub:
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
                    append((m, act, key, PUBLISHER, k, (new_qc, qid)))
                    continue
                if new_rc != dropped_rc:
                    dropped_rc = new_rc
                    dropped = [self._after_write(qc, new_rc) for qc in qcs]
                assert dropped is not None
                qs = [q for q, _ in dropped]
                qs[k] = qid
                key_head = self._head_after(head, new_rc, state.context)
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
                payload = (new_qc, write, unsorted, key_head, new_qcs, new_rc)
                append((m, act, key, WRITE, k, payload))
        return m + 1, out

    def build(self, node: Node, cand: Candidate, number: int) -> Node:
        """The successor ``cand`` stands for, as a frontier node numbered ``number``."""
        _, state, parts, pids, qids, head, qcs, rc = node
        _, _, _, kind, index, payload = cand
        if kind == PUBLISHER:
            new_qc, qid = payload
            qs = qids.copy()
            qs[index] = qid
            cs = qcs.copy()
            cs[index] = new_qc
            new = self.published(state, index, self.publishers[new_qc], None)
            return (number, new, parts, pids, qs, head, cs, rc)
        if kind == WRITE:
            new_qc, write, qs, key_head, cs, new_rc = payload
            new = self.published(state, index, self.publishers[new_qc], write)
            return (number, new, parts, pids, qs, key_head, cs, new_rc)
        if payload is None:  # a membership move: no partition changes
            new = self.resharded(state, -1, None)
            return (number, new, parts, pids, qids, self._head_moves(state, head)[1], qcs, rc)
        ns = parts.copy()
        ns[index] = payload
        ps = pids.copy()
        ps[index] = self.partition_ids[payload]
        readers = self.readers
        part = self.partition_of(self.cores[payload[0]], tuple([readers[r] for r in payload[1:]]))
        if kind == LOCAL:
            return (number, self.with_partition(state, index, part), ns, ps, qids, head, qcs, rc)
        new = self.resharded(state, index, part)
        return (number, new, ns, ps, qids, self._head_moves(state, head)[1], qcs, rc)
