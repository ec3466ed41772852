"""The audit of one stream: its registers' linearizability and the section 7 properties.

:class:`StreamAudit` takes the stream's operations in invocation order (``t0``,
then worker and sequence number) and turns them into events: before an
operation is invoked at ``t0``, every operation that completed strictly before
``t0`` completes (so ties and overlaps stay concurrent). It checks:

- **linearizability** of the publication record and of every checkpoint
  (generation standing for revision), as revision-conditional registers
  (:mod:`fencepost.audit.register`), indefinite operations as may-have-applied;
- the values the log shows, revision after revision (docs/semantics.md section 7):
  the **epoch fence** and **monotone publication** (within an epoch, and across
  epochs under ``monotone``); **no relabeling / certified support**: a published
  cut is at most what every member of its epoch had certified in a final
  checkpoint of that epoch and scope that may have been written before the
  publication was first shown (lenient: a checkpoint write invoked by then
  counts); **checkpoint monotonicity**; with a ground truth (tests only),
  **soundness** and the outcomes under final checkpoints;
- **honest outcomes** of every attempt line: judged by
  :func:`fencepost.judge.decide.judge_outcome` from the calls of that attempt
  (``published`` only on an acknowledged write, ``confirmed`` only after a
  read that showed the claim, ``unchanged``/``withheld`` what the reads decide);
- **op_ids never reused**: two writes of one op_id from different attempts.

A value at revision 0 must be the initial record ``(first epoch, nothing, 0,
null)``. A property the log cannot decide (no membership or no checkpoint in
the log for an epoch) is a note, never a verdict.

**Where the log starts.** The log *holds the stream's creation* when a
``create_stream`` answered with revision 0 comes before any call on the record
or a checkpoint, invoked after the log's knowledge starts: then every register
starts empty (no record, no checkpoint of any partition in any epoch), so a
value no write in the log made, a checkpoint included, is a phantom, and only
checkpoint *writes* certify a publication. Otherwise every register starts in a
state the log never shows. When the log's first segments were deleted
(``start``: every call of a deleted line ended at or before it), a call invoked
before ``start`` may have taken effect before it, amid calls the log no longer
shows: its answer constrains nothing (a read, or the value a conflict showed, is
not fed to the register; a write counts as may-have-applied), and a member with
no certification in the log may have certified before it (a note, not a
violation). Calls invoked from ``start`` on are judged exactly.

**Answers are checked against the question.** A checkpoint read for partition
``p`` of epoch ``e`` must carry ``p`` and ``e`` (a store that files another
partition's checkpoint under ``p`` is caught, and credits nobody's
certification); a checkpoint write's answer must be the checkpoint of the key
written; a list of an epoch's checkpoints holds each partition once.

Cost: per operation O(1) plus its register's event cost (see
:mod:`fencepost.audit.register`) and O(log n) for the shown values; memory
O(operations in flight + attempts open + revisions and generations shown + one
entry per op_id).
"""

from __future__ import annotations

import heapq
from bisect import bisect_right
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from fencepost.audit.ops import ATTEMPT, INF, Op, Status
from fencepost.audit.register import (
    ABSENT,
    CREATE,
    READ,
    UNKNOWN,
    WILD,
    WRITE,
    Budget,
    Failure,
    Register,
    RegOp,
)
from fencepost.audit.values import (
    Shown,
    checkpoint_value,
    describe,
    light,
    op_words,
    record_value,
    written,
)
from fencepost.audit.verdict import LINEARIZABILITY, OP_ID_REUSE, StreamVerdict, Violation
from fencepost.judge.cuts import compare, covers
from fencepost.judge.decide import AttemptLog, Reported, WriteAnswer, judge_outcome
from fencepost.judge.properties import Property, judge_publication_write
from fencepost.judge.values import (
    BadValue,
    Checkpoint,
    Coordinate,
    Cut,
    Endpoint,
    Finality,
    Membership,
    Order,
    Record,
)

#: Ground truth for soundness: (epoch, partition) -> every event (id, position).
Truth = Mapping[tuple[int, str], Sequence[tuple[str, Coordinate]]]


@dataclass
class _Attempt:
    line: Op | None = None
    ops: list[Op] = field(default_factory=list)


class StreamAudit:
    """Feed :meth:`add` with the stream's operations in ``t0`` order, then :meth:`finish`."""

    def __init__(
        self,
        stream: str,
        *,
        policy: str | None = None,
        budget: int = 2_000_000,
        truth: Truth | None = None,
        start: int | None = None,
    ) -> None:
        self.stream = stream
        self.policy = policy
        self.budget = budget
        self.truth = truth
        #: When the log's knowledge starts (None: the log is whole).
        self.start = start
        #: Whether the log holds the stream's creation (decided at its creation).
        self.whole = False
        self.verdict = StreamVerdict(stream)
        self.record = Register("the publication record", Budget(budget))
        self.checkpoints: dict[tuple[int, str], Register] = {}
        self.memberships: dict[int, Membership] = {}
        self._orders: dict[int, tuple[Membership, Order]] = {}  # epoch -> its first order
        self.first_epoch: int | None = None
        #: (t1, tie, op, what it fed to which register) of every answered call in flight
        self._completions: list[tuple[float, int, Op, list[tuple[Register, RegOp]]]] = []
        self._fed: list[tuple[Register, RegOp]] = []  # what the call being added fed
        handlers = _HANDLERS.get(type(self))
        if handlers is None:
            handlers = _HANDLERS[type(self)] = {}
        self._handlers = handlers
        self._tie = 0
        self._shown_record = Shown()
        self._shown_cp: dict[tuple[int, str], Shown] = {}
        self._certify: list[tuple[float, int]] = []  # (deadline, revision) to judge
        self._certified_done: set[int] = set()
        self._queued: dict[int, float] = {}  # revision -> the earliest deadline queued
        self._later: list[tuple[int, float]] = []  # judged before any checkpoint of its epoch
        self._finishing = False
        # (epoch, partition, scope) -> the final cut's progress: t0 of the op that may have
        # written it, strongest cut by then, that op (appended in t0 order, only on progress)
        self._progress: dict[tuple[int, str, str], tuple[list[int], list[tuple[Cut, Op]]]] = {}
        self._cp_epochs: set[int] = set()
        self._outcome_at: dict[str, float] = {}
        self._cp_deadlines: list[tuple[float, int, tuple[int, str], int]] = []
        self._attempts: dict[str, _Attempt] = {}
        self._op_ids: dict[str, tuple[str, Op]] = {}
        self._workers: dict[str, str] = {}  # worker -> "worker <name>", made once
        self._failed_writes: list[Op] = []
        self._noted: set[str] = set()
        self._reported_undecided: set[str] = set()

    # --- input ------------------------------------------------------------------

    def add(self, op: Op) -> None:
        """The next operation by invocation time."""
        t0 = op.t0
        heap, certify, cps = self._completions, self._certify, self._cp_deadlines
        if (
            (heap and heap[0][0] < t0)
            or (certify and certify[0][0] < t0)
            or (cps and cps[0][0] < t0)
        ):
            self._advance(t0)  # (it does nothing otherwise)
        kind = op.kind
        if kind == "create_stream" and not self.record.operations and not self.checkpoints:
            self._creation(op)
        self.verdict.operations += 1
        if op.attempt is not None and kind != ATTEMPT:
            self._attempts.setdefault(op.attempt, _Attempt()).ops.append(op)
        handler = self._handlers.get(kind)
        if handler is None:
            handler = self._handlers[kind] = getattr(type(self), "_on_" + kind)
        fed: list[tuple[Register, RegOp]] = []
        self._fed = fed
        handler(self, op)
        t1 = op.t1
        if t1 != INF:
            heapq.heappush(heap, (t1, self._tie, op, fed))
            self._tie += 1

    def finish(self) -> StreamVerdict:
        self._advance(INF, final=True)
        self._finishing = True
        for rev, deadline in self._later:
            self._judge_certified(rev, deadline)
        for register in [self.record, *self.checkpoints.values()]:
            self._collect(register)
            self.verdict.largest_frontier = max(self.verdict.largest_frontier, register.largest)
        v = self.verdict
        if not self.record.operations and not self.checkpoints:
            return v
        return v

    def _advance(self, t: float, final: bool = False) -> None:
        """Complete every operation that completed strictly before ``t``; judge what is due."""
        heap = self._completions
        certify, cps = self._certify, self._cp_deadlines
        while heap and (final or heap[0][0] < t):
            done_at, _, op, fed = heapq.heappop(heap)
            if (certify and certify[0][0] < done_at) or (cps and cps[0][0] < done_at):
                self._judge_due(done_at)
            for register, r in fed:
                register.complete(r)
                if register.failed is not None or register.undecided is not None:
                    self._collect(register)
            if op.kind == ATTEMPT:
                self._judge_attempt(op)
        if (certify and certify[0][0] < t) or (cps and cps[0][0] < t):
            self._judge_due(t)

    # --- registers ---------------------------------------------------------------

    def _creation(self, op: Op) -> None:
        """A creation before any call on a register: does the log hold the stream's creation?"""
        self.whole = (
            op.kind == "create_stream"
            and op.status is Status.OK
            and op.result.revision == 0
            and not self._before_start(op)
        )
        if self.whole:  # nothing existed before this call: no record, no checkpoint
            self.record = Register(
                "the publication record", Budget(self.budget), frozenset({(ABSENT, None)})
            )

    def _before_start(self, op: Op) -> bool:
        """Invoked before the log's knowledge starts: it may have taken effect amid calls
        of deleted segments."""
        return self.start is not None and op.t0 <= self.start

    def _cp_register(self, epoch: int, partition: str) -> Register:
        key = (epoch, partition)
        reg = self.checkpoints.get(key)
        if reg is None:
            initial = (
                frozenset({(0, None)}) if self.whole else frozenset({(0, None), (UNKNOWN, WILD)})
            )
            reg = Register(
                f"the checkpoint of {partition} in epoch {epoch}", Budget(self.budget), initial
            )
            self.checkpoints[key] = reg
        return reg

    def _feed(self, register: Register, r: RegOp) -> None:
        if self.start is not None and r.op.t0 <= self.start:  # before the log's knowledge
            if r.kind == READ:
                return  # what it showed may predate calls the log no longer holds
            # A write (or creation) that may have applied, then or before the start:
            # in flight until no configuration can apply it any more, never completed.
            register.invoke(RegOp(replace(r.op, t1=INF), r.kind, r.rev, r.value, False, r.init))
            self._collect(register)
            return
        register.invoke(r)
        if register.failed is not None or register.undecided is not None:
            self._collect(register)
        if r.op.t1 != INF:
            self._fed.append((register, r))  # completed with the call (``add``)

    def _collect(self, register: Register) -> None:
        if register.failed is not None and register.name not in self._noted:
            self._noted.add(register.name)
            self._report_failure(register)
        if register.undecided is not None and register.name not in self._reported_undecided:
            self._reported_undecided.add(register.name)
            self.verdict.undecided.append(
                f"stream {self.stream}, {register.name}: {register.undecided}"
            )

    def _report_failure(self, register: Register) -> None:
        failure = register.failed
        assert failure is not None
        what = "record" if register is self.record else "checkpoint"
        states = sorted(failure.start, key=lambda c: (c[0], repr(c[1])))
        start = "; or ".join(describe(v, r, what) for r, v in states[:4])
        if len(states) > 4:
            start += f"; or {len(states) - 4} more"
        culprit = failure.culprit
        ops = tuple(r.op for r in failure.ops)
        message = (
            f"{register.name} is not linearizable: no order of these {len(ops)} operations, "
            f"each taking effect between its invocation and its completion, explains what "
            f"{op_words(culprit.op)} returned{self._diagnose(failure)}"
        )
        self.verdict.violations.append(
            Violation(LINEARIZABILITY, self.stream, message, ops, (culprit.op,), start)
        )

    def _diagnose(self, failure: Failure) -> str:
        """What kind of anomaly the fragment shows, in words (a hint; the timeline is the proof)."""
        ops, culprit = failure.ops, failure.culprit
        acked: dict[int, list[RegOp]] = {}
        for r in ops:
            if r.kind == WRITE and r.must:
                acked.setdefault(r.rev, []).append(r)
        for expected, ws in sorted(acked.items()):
            if len(ws) > 1:
                return (
                    f" (two writes were both acknowledged as revision {expected + 1}: "
                    "the fence let both through)"
                )
        if culprit.kind not in (READ, CREATE):
            return " (an acknowledged write that cannot have applied where it claims)"
        newer = [
            r
            for r in ops
            if r.kind == WRITE and r.must and r.rev >= culprit.rev and r.t1 < culprit.t0
        ]
        if newer:
            return (
                f" (a stale read: it shows revision {culprit.rev} after the write of revision "
                f"{newer[0].rev + 1} had completed)"
            )
        made = (
            any(
                r.kind == WRITE and r.rev == culprit.rev - 1 and r.value == culprit.value
                for r in ops
            )
            or (culprit.rev, culprit.value) in failure.start
        )
        if culprit.rev > 0 and not made:
            failed = [
                w
                for w in self._failed_writes
                if w.args["expected_revision"] == culprit.rev - 1
                and record_value(written(w)) == culprit.value
            ]
            if failed and culprit.op.kind in ("read_publication", "write_publication"):
                return (
                    f" (revision {culprit.rev} holds what write {failed[0].args['op_id']} wrote, "
                    f"yet that write failed definitely at {failed[0].where})"
                )
            return (
                f" (it shows revision {culprit.rev} holding a value no write that may have "
                "applied made: a phantom)"
            )
        return " (a read that no order of the writes explains: stale, early or reordered)"

    # --- handlers, one per operation kind -------------------------------------------

    def _on_create_stream(self, op: Op) -> None:
        membership: Membership = op.args["membership"]
        if self.first_epoch is None:
            self.first_epoch = membership.epoch
        self.memberships.setdefault(membership.epoch, membership)
        if op.status is Status.ERROR:
            return
        init = record_value(Record(membership.epoch))
        if op.status is Status.INDEFINITE:
            self._feed(self.record, RegOp(op, CREATE, 0, None, False, init))
            return
        rec: Record = op.result
        self._check_initial(rec, op)
        self._feed(self.record, RegOp(op, CREATE, rec.revision, record_value(rec), True, init))
        self._show_record(rec, op)

    def _on_read_publication(self, op: Op) -> None:
        if op.status is not Status.OK:
            return
        rec: Record = op.result
        if rec.revision == 0:
            self._check_initial(rec, op)
        self._feed(self.record, RegOp(op, READ, rec.revision, record_value(rec), True))
        self._show_record(rec, op)

    def _on_write_publication(self, op: Op) -> None:
        a = op.args
        self._check_op_id(op)
        status = op.status
        if status is Status.ERROR:
            self._failed_writes.append(op)
            del self._failed_writes[:-64]
            return
        if status is Status.INDEFINITE:
            cut = a["cut"]
            value = (a["epoch"], cut.endpoint._value_, cut.at, a["op_id"])  # record_value(written)
            self._feed(self.record, RegOp(op, WRITE, a["expected_revision"], value, False))
            return
        rec: Record = op.result
        if status is Status.OK:
            if (
                rec.revision == a["expected_revision"] + 1
                and rec.epoch == a["epoch"]
                and rec.op_id == a["op_id"]
                and (rec.cut is a["cut"] or rec.cut == a["cut"])
            ):
                mine = rec  # what it wrote, as the store answered (the usual case)
            else:
                mine = written(op)
            if mine is not rec and rec != mine:
                self._violation(
                    LINEARIZABILITY,
                    f"the store acknowledged {op_words(op)} as applied but returned "
                    f"{describe(record_value(rec), rec.revision)}, not the record it wrote",
                    (op,),
                )
            self._feed(
                self.record, RegOp(op, WRITE, a["expected_revision"], record_value(mine), True)
            )
            self._show_record(mine, op)
            return
        if rec.revision == a["expected_revision"]:
            self._violation(
                LINEARIZABILITY,
                f"{op_words(op)} was refused as a conflict, yet the record it returned is at "
                f"the expected revision {rec.revision}: the write should have applied",
                (op,),
            )
        self._check_initial(rec, op)
        self._feed(self.record, RegOp(op, READ, rec.revision, record_value(rec), True))
        self._show_record(rec, op)

    def _on_read_membership(self, op: Op) -> None:
        if op.status is Status.OK:
            m: Membership = op.result
            self.memberships.setdefault(m.epoch, m)

    def _on_write_membership(self, op: Op) -> None:
        if op.status in (Status.OK, Status.INDEFINITE):
            m: Membership = op.args["membership"]
            self.memberships.setdefault(m.epoch, m)

    def _on_read_checkpoint(self, op: Op) -> None:
        if op.status is not Status.OK:
            return
        epoch, partition = op.args["epoch"], op.args["partition"]
        self._cp_epochs.add(epoch)
        if self._misfiled(op.result, epoch, partition, op):
            return
        self._read_cp(epoch, partition, op.result, op)

    def _on_read_checkpoints(self, op: Op) -> None:
        if op.status is not Status.OK:
            return
        epoch = op.args["epoch"]
        self._cp_epochs.add(epoch)
        found: dict[str, Checkpoint] = {}
        for c in op.result:
            if self._misfiled(c, epoch, c.partition, op):
                return
            if c.partition in found:
                self._violation(
                    LINEARIZABILITY,
                    f"{op_words(op)} returned two checkpoints of {c.partition} for epoch "
                    f"{epoch} (generations {found[c.partition].generation} and "
                    f"{c.generation}): a partition has one checkpoint per epoch",
                    (op,),
                )
                return
            found[c.partition] = c
        members = self.memberships.get(epoch)
        names = set(found) | (set(members.partitions) if members is not None else set())
        for partition in sorted(names):
            self._read_cp(epoch, partition, found.get(partition), op)

    def _misfiled(self, cp: Checkpoint | None, epoch: int, partition: str, op: Op) -> bool:
        """An answer carrying another key's checkpoint than the one asked (or written): a
        violation, and nobody's certification."""
        if cp is None or (cp.epoch == epoch and cp.partition == partition):
            return False
        self._violation(
            LINEARIZABILITY,
            f"{op_words(op)} asked for the checkpoint of {partition} in epoch {epoch} and got "
            f"{cp.partition}'s of epoch {cp.epoch} ({cp.cut}, generation {cp.generation}): "
            "an answer must be the checkpoint of the partition and epoch asked for",
            (op,),
        )
        return True

    def _read_cp(self, epoch: int, partition: str, cp: Checkpoint | None, op: Op) -> None:
        generation = 0 if cp is None else cp.generation
        reg = self._cp_register(epoch, partition)
        self._feed(reg, RegOp(op, READ, generation, checkpoint_value(cp), True))
        if cp is not None:
            self._show_checkpoint(epoch, partition, cp, op)
            if not self.whole:  # it may have been written before the log began
                self._certifies(cp, op)

    def _on_write_checkpoint(self, op: Op) -> None:
        cp: Checkpoint = op.args["checkpoint"]
        key = (cp.epoch, cp.partition)
        self._cp_epochs.add(cp.epoch)
        expected = op.args["expected_generation"] or 0
        if op.status is Status.ERROR:
            return
        reg = self._cp_register(*key)
        if op.status is Status.INDEFINITE:
            self._feed(reg, RegOp(op, WRITE, expected, checkpoint_value(cp), False))
            self._certifies(cp, op)
            return
        if self._misfiled(op.result, cp.epoch, cp.partition, op):
            return
        if op.status is Status.OK:
            stored: Checkpoint = op.result
            if stored.generation != expected + 1 or checkpoint_value(stored) != checkpoint_value(
                cp
            ):
                self._violation(
                    LINEARIZABILITY,
                    f"the store acknowledged {op_words(op)} but returned generation "
                    f"{stored.generation} holding {stored.cut}",
                    (op,),
                )
            self._feed(reg, RegOp(op, WRITE, expected, checkpoint_value(cp), True))
            self._certifies(cp, op)
            self._show_checkpoint(cp.epoch, cp.partition, stored, op)
            return
        current: Checkpoint | None = op.result
        generation = 0 if current is None else current.generation
        if generation == expected:
            self._violation(
                LINEARIZABILITY,
                f"{op_words(op)} was refused as a conflict, yet generation {expected} "
                "it expected is the one stored",
                (op,),
            )
        self._feed(reg, RegOp(op, READ, generation, checkpoint_value(current), True))
        if current is not None:
            self._show_checkpoint(cp.epoch, cp.partition, current, op)

    def _certifies(self, cp: Checkpoint, op: Op) -> None:
        """A final checkpoint that may exist from ``op.t0`` on: progress for certification."""
        if cp.finality is not Finality.FINAL:
            return
        m = self.memberships.get(cp.epoch)
        if m is None or cp.partition not in m.partitions:
            return
        times, bests = self._progress.setdefault((cp.epoch, cp.partition, cp.scope), ([], []))
        try:
            if bests and compare(m.order_of(cp.partition), cp.cut, bests[-1][0]) <= 0:
                return
        except BadValue:
            return
        times.append(op.t0)
        bests.append((cp.cut, op))

    def _on_record_outcome(self, op: Op) -> None:
        if op.status is Status.OK:
            eid = op.args["event_id"]
            if op.t1 < self._outcome_at.get(eid, INF):
                self._outcome_at[eid] = op.t1

    def _on_outcomes(self, op: Op) -> None:
        return

    def _on_attempt(self, op: Op) -> None:
        assert op.attempt is not None
        self._attempts.setdefault(op.attempt, _Attempt()).line = op

    def _on_dropped(self, op: Op) -> None:
        self.verdict.dropped += op.result["lines"]

    # --- section 7 on the values shown ---------------------------------------------

    def _check_initial(self, rec: Record, op: Op) -> None:
        if rec.revision != 0:
            return
        first = self.first_epoch
        if rec.cut.is_nothing and rec.op_id is None and (first is None or rec.epoch == first):
            return
        wanted = f"(epoch {first}, nothing)" if first is not None else "(its epoch, nothing)"
        self._violation(
            LINEARIZABILITY,
            f"{op_words(op)} shows revision 0 as {describe(record_value(rec), 0)}, but "
            f"revision 0 is the initial record {wanted} with no op_id",
            (op,),
        )

    def _show_record(self, rec: Record, op: Op) -> None:
        rev = rec.revision
        neighbours = self._shown_record.add(rev, rec, op)
        if rev > 0 and rec.cut.endpoint is not Endpoint.NOTHING:
            d = self._shown_record.deadline[rev]
            # judged once, at its earliest deadline: a later or equal one would be skipped
            if rev not in self._certified_done and self._queued.get(rev, INF) > d:
                self._queued[rev] = d
                heapq.heappush(self._certify, (d, rev))
        if neighbours is None:
            return
        below, above = neighbours
        if below is not None:
            self._judge_step(below[1], below[2], rec, op)
        if above is not None:
            self._judge_step(rec, op, above[1], above[2])

    def _order(self, epoch: int) -> Order | None:
        m = self.memberships.get(epoch)
        if m is None or not m.partitions:
            return None
        known = self._orders.get(epoch)
        if known is None or known[0] is not m:  # memberships are kept once per epoch
            known = self._orders[epoch] = (m, m.order_of(sorted(m.partitions)[0]))
        return known[1]

    def _judge_step(self, old: Record, old_op: Op, new: Record, new_op: Op) -> None:
        """Section 7 between two shown revisions (epoch fence, monotone publication)."""
        order = self._order(new.epoch) or self._order(old.epoch)
        policy = self.policy or "monotone"
        if order is None:
            if new.epoch < old.epoch:
                order = Order.integer("unknown", False)  # only the fence is judged
            else:
                self._note(
                    f"epoch {new.epoch}: no membership in the log; monotone publication "
                    "not decidable"
                )
                return
        elif new.epoch >= old.epoch and _not_back(old.cut, new.cut):
            return  # judge_publication_write finds nothing (the usual step): skipped
        try:
            found = judge_publication_write(order, old, new, policy, None, {})
        except BadValue:
            found = []
            if new.epoch < old.epoch:
                found = judge_publication_write(
                    Order.integer("x", False), old, Record(new.epoch), policy, None, {}
                )
        for prop, message in found:
            gap = "" if new.revision == old.revision + 1 else " (revisions between not shown)"
            self._violation(
                prop.value,
                f"revision {old.revision} -> {new.revision}{gap}: {message}",
                (old_op, new_op),
                (new_op,),
            )

    def _show_checkpoint(self, epoch: int, partition: str, cp: Checkpoint, op: Op) -> None:
        key = (epoch, partition)
        shown = self._shown_cp.setdefault(key, Shown())
        neighbours = shown.add(cp.generation, cp, op)
        if self.truth is not None and cp.finality is Finality.FINAL and not cp.cut.is_nothing:
            heapq.heappush(
                self._cp_deadlines, (shown.deadline[cp.generation], id(shown), key, cp.generation)
            )
        if neighbours is None:
            return
        m = self.memberships.get(epoch)
        if m is None or partition not in m.partitions:
            self._note(f"checkpoints of {partition} in epoch {epoch}: no membership naming it")
            return
        order = m.order_of(partition)
        for pair in (
            (neighbours[0], (cp.generation, cp, op)),
            ((cp.generation, cp, op), neighbours[1]),
        ):
            lower, upper = pair
            if lower is None or upper is None:
                continue
            try:
                back = compare(order, upper[1].cut, lower[1].cut) < 0
            except BadValue:
                back = False
            if back:
                self._violation(
                    Property.CHECKPOINT_MONOTONICITY.value,
                    f"{partition}'s checkpoint in epoch {epoch} went back from "
                    f"{lower[1].cut} (generation {lower[0]}) to {upper[1].cut} "
                    f"(generation {upper[0]})",
                    (lower[2], upper[2]),
                    (upper[2],),
                )

    def _judge_due(self, now: float) -> None:
        """Certification (and soundness) of every value first shown before ``now``."""
        heap = self._certify
        while heap and heap[0][0] < now:
            deadline, rev = heapq.heappop(heap)
            if rev in self._certified_done or self._shown_record.deadline.get(rev) != deadline:
                continue
            self._certified_done.add(rev)
            self._judge_certified(rev, deadline)
        cps = self._cp_deadlines
        while cps and cps[0][0] < now:
            deadline, _, key, generation = heapq.heappop(cps)
            self._judge_checkpoint_truth(key, generation, deadline)

    def _judge_certified(self, rev: int, deadline: float) -> None:
        rec, op = self._shown_record.values[rev]
        m = self.memberships.get(rec.epoch)
        if m is None:
            if self.whole:
                self._violation(
                    Property.SOUNDNESS.value,
                    f"revision {rev} publishes {rec.cut} in epoch {rec.epoch}, an epoch with no "
                    "membership anywhere in the log (the stream's creation and every membership "
                    "written or read are in it)",
                    (op,),
                )
            else:
                self._note(
                    f"epoch {rec.epoch}: no membership in the log; no relabeling not decidable"
                )
            return
        if rec.epoch not in self._cp_epochs and not self._finishing:
            self._later.append((rev, deadline))  # decided at the end, if a checkpoint comes
            return
        order = self._order(rec.epoch)
        assert order is not None
        if rec.epoch not in self._cp_epochs:
            self._note(f"epoch {rec.epoch}: no checkpoint in the log; no relabeling not decidable")
        else:
            certified: dict[str, Cut] = {}
            witnesses: list[Op] = []
            unknown: list[str] = []
            for partition in sorted(m.partitions):
                times, bests = self._progress.get((rec.epoch, partition, m.scope), ([], []))
                i = bisect_right(times, deadline) - 1
                if i >= 0:
                    certified[partition] = bests[i][0]
                    witnesses.append(bests[i][1])
                elif not self.whole:  # it may have certified before the log began
                    certified[partition] = rec.cut
                    unknown.append(partition)
            if unknown:
                self._note(
                    f"epoch {rec.epoch}: no certification of {', '.join(unknown)} in the log "
                    "(the log does not hold the stream's creation); certified support judged "
                    "for the other members only"
                )
            try:
                found = judge_publication_write(
                    order, rec, rec, self.policy or "monotone", m, certified
                )
            except BadValue:
                found = []
            for prop, message in found:
                self._violation(
                    prop.value,
                    f"revision {rev}, first shown by {op.where}: {message} (checkpoints that may "
                    "have been written before it was shown)",
                    (*witnesses, op),
                    (op,),
                )
        if self.truth is not None:
            self._judge_sound(rec.epoch, rec.cut, deadline, f"revision {rev}", op, m)

    def _judge_checkpoint_truth(
        self, key: tuple[int, str], generation: int, deadline: float
    ) -> None:
        shown = self._shown_cp[key]
        cp, op = shown.values[generation]
        m = self.memberships.get(key[0])
        if m is None or key[1] not in m.partitions:
            return
        self._judge_sound(key[0], cp.cut, deadline, f"{key[1]}'s checkpoint", op, m, key[1])

    def _judge_sound(
        self,
        epoch: int,
        cut: Cut,
        deadline: float,
        what: str,
        op: Op,
        m: Membership,
        only: str | None = None,
    ) -> None:
        assert self.truth is not None
        missing: list[str] = []
        for partition in sorted(m.partitions) if only is None else [only]:
            order = m.order_of(partition)
            for eid, at in self.truth.get((epoch, partition), ()):
                try:
                    inside = covers(order, cut, at)
                except BadValue:
                    continue
                if inside and not self._outcome_at.get(eid, INF) < deadline:
                    missing.append(eid)
        if missing:
            prop = Property.SOUNDNESS if only is None else Property.CHECKPOINT_TRUTH
            shown = ", ".join(missing[:5]) + ("..." if len(missing) > 5 else "")
            self._violation(
                prop.value,
                f"{what} covers {cut} in epoch {epoch} but events {shown} had no durable "
                "outcome before it was shown",
                (op,),
            )

    # --- attempts and op_ids ----------------------------------------------------------

    def _check_op_id(self, op: Op) -> None:
        op_id = op.args["op_id"]
        owner = op.attempt
        if owner is None:
            owner = self._workers.get(op.worker)
            if owner is None:
                owner = self._workers[op.worker] = f"worker {op.worker}"
        first = self._op_ids.get(op_id)
        if first is None:
            self._op_ids[op_id] = (owner, op)  # shown without its result if reused
        elif first[0] != owner:
            self._violation(
                OP_ID_REUSE,
                f"op_id {op_id!r} was written by {first[0]} and again by {owner}: an op_id names "
                "one attempt's write, so a record carrying it no longer says who wrote it",
                (light(first[1]), op),
                (op,),
            )

    def _judge_attempt(self, line: Op) -> None:
        assert line.attempt is not None
        attempt = self._attempts.pop(line.attempt, None)
        if self._before_start(line):
            self._note(
                "an attempt begun before the log's first kept segment: some of its calls may "
                "be in deleted segments, so its outcome is not judged"
            )
            return
        ops = sorted(attempt.ops if attempt else [], key=lambda o: o.seq)
        log = AttemptLog(line.args["policy"])
        membership: Membership | None = None
        for o in ops:
            if o.status is Status.ERROR:
                continue
            if o.kind == "read_publication":
                if o.status is Status.OK:
                    log.show_record(o.result)
                else:
                    log.trouble()
            elif o.kind == "read_membership":
                if o.status is Status.OK:
                    membership = o.result
                    log.read_membership(o.result)
                else:
                    log.trouble()
            elif o.kind == "read_checkpoints":
                if o.status is Status.OK:
                    log.read_checkpoints(o.args["epoch"], tuple(o.result))
                else:
                    log.trouble()
            elif o.kind == "write_publication":
                a = o.args
                answer = {
                    Status.OK: WriteAnswer.APPLIED,
                    Status.CONFLICT: WriteAnswer.CONFLICT,
                    Status.INDEFINITE: WriteAnswer.LOST,
                }[o.status]
                log.wrote(a["op_id"], a["epoch"], a["cut"], answer)
                if o.status is not Status.INDEFINITE:
                    log.show_record(o.result, "ack" if o.status is Status.OK else "conflict")
        r = line.result
        reported = Reported(r["outcome"], r["epoch"], r["cut"], r["reason"])
        epoch = r["epoch"] if r["epoch"] is not None else None
        order = (self._order(epoch) if epoch is not None else None) or (
            membership.order_of(sorted(membership.partitions)[0])
            if membership is not None and membership.partitions
            else None
        )
        if order is None:
            self._note("an attempt's epoch has no membership in the log: its outcome not judged")
            return
        try:
            found = judge_outcome(order, log, reported)
        except BadValue:
            return
        for prop, message in found:
            self._violation(
                prop.value,
                f"attempt {line.attempt} of {line.worker}: {message}",
                (*ops, line),
                (line,),
            )

    # --- reporting ------------------------------------------------------------------

    def _violation(
        self,
        prop: str,
        message: str,
        ops: tuple[Op, ...],
        marked: tuple[Op, ...] | None = None,
        start: str = "",
    ) -> None:
        self.verdict.violations.append(
            Violation(prop, self.stream, message, ops, ops if marked is None else marked, start)
        )

    def _note(self, text: str) -> None:
        if text not in self._noted:
            self._noted.add(text)
            self.verdict.notes.append(text)


def _not_back(old: Cut, new: Cut) -> bool:
    """A cheap sufficient condition for ``compare(order, new, old) >= 0`` on any order
    where the comparison is defined (a coordinate foreign to the order makes it a
    ``BadValue``, which finds nothing either): then a step from ``old`` to ``new``
    breaks no property when the epoch does not go back. False: ask the judge."""
    if old.endpoint is Endpoint.NOTHING:
        return True
    if new.endpoint is Endpoint.NOTHING:
        return False
    a, b = new.at, old.at
    if type(a) is not type(b) or (type(a) is not int and type(a) is not str):
        return False
    if a != b:
        return a > b  # type: ignore[operator]
    return new.endpoint is Endpoint.THROUGH or old.endpoint is Endpoint.BEFORE


#: Each class's handler per operation kind (``_on_<kind>``), looked up once.
_HANDLERS: dict[type[StreamAudit], dict[str, Callable[[StreamAudit, Op], None]]] = {}

__all__ = ["StreamAudit", "Truth"]
