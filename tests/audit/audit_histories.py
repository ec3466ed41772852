"""Hand-built histories for the audit's tests: one stream ``s``, worker lanes, explicit times.

Every expected verdict in the tests is known from the history itself (and, for
linearizability, agreed with :mod:`fencepost.audit.brute`), never from the
checker's own logic.
"""

from __future__ import annotations

from typing import Any

from fencepost.audit.ops import INF, Op, Status
from fencepost.audit.run import AuditReport, audit_ops
from fencepost.audit.stream import Truth
from fencepost.judge.values import NOTHING, Checkpoint, Cut, Finality, Membership, Order, Record

OFFSETS = Order.integer("offsets", True)
M1 = Membership.of(1, "q", OFFSETS, ["A", "B"])
M2 = Membership.of(2, "q", OFFSETS, ["A", "B"])
INITIAL = Record(1, NOTHING, 0, None)


def through(x: int) -> Cut:
    return Cut.through(x)


def before(x: int) -> Cut:
    return Cut.before(x)


class H:
    """A history builder: each call appends one operation and returns it."""

    def __init__(self, *, created: bool = True) -> None:
        self.ops: list[Op] = []
        self._seq: dict[str, int] = {}
        if created:
            self.add("setup", "create_stream", 0, 0, Status.OK, {"membership": M1}, INITIAL)

    def add(
        self,
        worker: str,
        kind: str,
        t0: int,
        t1: float,
        status: Status,
        args: dict[str, Any],
        result: Any = None,
        attempt: str | None = None,
    ) -> Op:
        seq = self._seq.get(worker, 0)
        self._seq[worker] = seq + 1
        if status is Status.INDEFINITE:
            t1 = INF
        op = Op(f"h:{len(self.ops) + 1}", worker, seq, "s", kind, t0, t1, status, args, result)
        op.attempt = attempt
        op.index = len(self.ops)
        self.ops.append(op)
        return op

    def read(self, w: str, t0: int, t1: int, rec: Record, attempt: str | None = None) -> Op:
        return self.add(w, "read_publication", t0, t1, Status.OK, {}, rec, attempt)

    def write(
        self,
        w: str,
        t0: int,
        t1: float,
        expected: int,
        cut: Cut | None,
        op_id: str,
        *,
        epoch: int = 1,
        status: Status = Status.OK,
        current: Record | None = None,
        attempt: str | None = None,
    ) -> Op:
        claim = NOTHING if cut is None else cut
        args = {"expected_revision": expected, "epoch": epoch, "cut": claim, "op_id": op_id}
        result = None
        if status is Status.OK:
            result = Record(epoch, claim, expected + 1, op_id)
        elif status is Status.CONFLICT:
            result = current
        return self.add(w, "write_publication", t0, t1, status, args, result, attempt)

    def membership(self, w: str, t0: int, t1: int, m: Membership, attempt: str | None = None) -> Op:
        return self.add(w, "read_membership", t0, t1, Status.OK, {"epoch": None}, m, attempt)

    def checkpoints(
        self,
        w: str,
        t0: int,
        t1: int,
        epoch: int,
        cps: tuple[Checkpoint, ...],
        attempt: str | None = None,
    ) -> Op:
        return self.add(w, "read_checkpoints", t0, t1, Status.OK, {"epoch": epoch}, cps, attempt)

    def checkpoint(
        self,
        w: str,
        t0: int,
        t1: int,
        partition: str,
        expected: int | None,
        cut: Cut,
        *,
        epoch: int = 1,
        finality: Finality = Finality.FINAL,
    ) -> Op:
        gen = 1 if expected is None else expected + 1
        cp = Checkpoint(partition, cut, "t", gen, "q", epoch, finality)
        return self.add(
            w,
            "write_checkpoint",
            t0,
            t1,
            Status.OK,
            {"expected_generation": expected, "checkpoint": cp},
            cp,
        )

    def outcome(self, w: str, t0: int, t1: int, event: str) -> Op:
        return self.add(
            w, "record_outcome", t0, t1, Status.OK, {"event_id": event, "outcome": "ok"}, "ok"
        )

    def attempt(
        self,
        w: str,
        t0: int,
        t1: int,
        name: str,
        outcome: str,
        epoch: int | None,
        cut: Cut | None,
        *,
        reason: str | None = None,
        op_id: str | None = None,
        policy: str = "monotone",
    ) -> Op:
        result = {
            "outcome": outcome,
            "epoch": epoch,
            "cut": NOTHING if cut is None else cut,
            "reason": reason,
            "op_id": op_id,
        }
        return self.add(w, "attempt", t0, t1, Status.OK, {"policy": policy}, result, name)

    def ingest_all(self, t: int = 0) -> None:
        """Outcomes for a0, a1, b0, b1 and final checkpoints through 1 on A and B by t + 10."""
        for i, e in enumerate(["a0", "a1", "b0", "b1"]):
            self.outcome("r", t + i, t + i + 1, e)
        self.checkpoint("r", t + 5, t + 6, "A", None, through(1))
        self.checkpoint("r", t + 7, t + 8, "B", None, through(1))


TRUTH: Truth = {(1, "A"): [("a0", 0), ("a1", 1)], (1, "B"): [("b0", 0), ("b1", 1)]}


def run(h: H | list[Op], *, truth: bool = False, budget: int = 2_000_000) -> AuditReport:
    ops = h.ops if isinstance(h, H) else h
    return audit_ops(list(ops), budget=budget, truth=(lambda _s: TRUTH) if truth else None)


def kinds(h: H | list[Op], *, truth: bool = False) -> set[str]:
    return {v.property for v in run(h, truth=truth).violations}


def rec(epoch: int, cut: Cut | None, revision: int, op_id: str | None) -> Record:
    return Record(epoch, NOTHING if cut is None else cut, revision, op_id)
