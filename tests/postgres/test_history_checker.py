"""Teeth for the history checker (fencepost.properties.history): broken histories it must
report, and legal ones (indefinite writes, concurrent overlaps) it must accept.

Histories are built by hand on a one-stream, one-partition-pair membership, so
every expected anomaly is known without running the checker's own logic.
"""

from __future__ import annotations

from typing import Any

import pytest

from fencepost.properties.history import INFINITY, Context, Op, Status, check_history

OFFSETS = {"name": "offsets", "kind": "integer", "successor": True}
MEMBERSHIP = {
    "epoch": 1,
    "scope": "q",
    "partitions": {"A": "offsets", "B": "offsets"},
    "orders": {"offsets": OFFSETS},
}
MEMBERSHIP2 = {**MEMBERSHIP, "epoch": 2}
CTX = Context(
    memberships={"s": {1: MEMBERSHIP, 2: MEMBERSHIP2}},
    events={("s", 1, "A"): [("a0", 0), ("a1", 1)], ("s", 1, "B"): [("b0", 0), ("b1", 1)]},
)


def through(x: int) -> dict[str, Any]:
    return {"at": x, "kind": "through"}


def before(x: int) -> dict[str, Any]:
    return {"at": x, "kind": "before"}


class H:
    """A tiny history builder: each call appends one op with explicit times."""

    def __init__(self) -> None:
        self.ops: list[Op] = []

    def add(
        self,
        process: str,
        kind: str,
        t0: int,
        t1: float,
        status: Status,
        args: dict[str, Any],
        result: Any = None,
    ) -> int:
        op = Op(len(self.ops), process, kind, t0, t1, status, args, result)
        self.ops.append(op)
        return op.index

    def rec(self, epoch: int, cut: Any, revision: int, op_id: str | None) -> dict[str, Any]:
        return {"epoch": epoch, "cut": cut, "revision": revision, "op_id": op_id}

    def read(self, p: str, t0: int, t1: int, record: dict[str, Any]) -> int:
        return self.add(p, "read_publication", t0, t1, Status.OK, {"stream": "s"}, record)

    def write(
        self,
        p: str,
        t0: int,
        t1: float,
        expected: int,
        epoch: int,
        cut: Any,
        op_id: str,
        *,
        applied: bool | None = True,
        current: dict[str, Any] | None = None,
        status: Status = Status.OK,
    ) -> int:
        args = {
            "stream": "s",
            "expected_revision": expected,
            "epoch": epoch,
            "cut": cut,
            "op_id": op_id,
        }
        if status is not Status.OK:
            return self.add(
                p, "write_publication", t0, INFINITY if status is Status.INFO else t1, status, args
            )
        record = self.rec(epoch, cut, expected + 1, op_id) if applied else current
        return self.add(
            p,
            "write_publication",
            t0,
            t1,
            status,
            args,
            {"applied": bool(applied), "record": record},
        )

    def checkpoint(
        self,
        p: str,
        t0: int,
        t1: int,
        partition: str,
        expected: int | None,
        cut: Any,
        *,
        epoch: int = 1,
    ) -> int:
        cp = {
            "partition": partition,
            "cut": cut,
            "token": "t",
            "generation": 1,
            "scope": "q",
            "epoch": epoch,
            "finality": "final",
        }
        stored = {**cp, "generation": 1 if expected is None else expected + 1}
        return self.add(
            p,
            "write_checkpoint",
            t0,
            t1,
            Status.OK,
            {"stream": "s", "expected_generation": expected, "checkpoint": cp},
            {"applied": True, "checkpoint": stored},
        )

    def outcome(self, p: str, t0: int, t1: int, event: str) -> int:
        return self.add(
            p,
            "record_outcome",
            t0,
            t1,
            Status.OK,
            {"stream": "s", "event_id": event, "outcome": "ok"},
            "ok",
        )

    def ingest_all(self, t: int = 0) -> None:
        """Outcomes for every event and final checkpoints through 1 on A and B, by time t+10."""
        for i, e in enumerate(["a0", "a1", "b0", "b1"]):
            self.outcome("r", t + i, t + i + 1, e)
        self.checkpoint("r", t + 5, t + 6, "A", None, through(1))
        self.checkpoint("r", t + 7, t + 8, "B", None, through(1))


def kinds(h: H) -> set[str]:
    return {a.kind for a in check_history(h.ops, CTX)}


def base() -> H:
    h = H()
    h.ingest_all()
    return h


def test_a_legal_history_with_overlaps_and_indefinite_writes_is_clean() -> None:
    h = base()
    initial = h.rec(1, None, 0, None)
    h.read("p1", 20, 30, initial)
    h.read("p2", 21, 31, initial)
    # p1's write is indefinite but took effect (seen later); p2 loses the race.
    h.write("p1", 40, 0, 0, 1, before(1), "p1-1", status=Status.INFO)
    h.write(
        "p2",
        41,
        60,
        0,
        1,
        through(1),
        "p2-1",
        applied=False,
        current=h.rec(1, before(1), 1, "p1-1"),
    )
    h.read("p2", 61, 70, h.rec(1, before(1), 1, "p1-1"))
    h.write("p2", 71, 80, 1, 1, through(1), "p2-2")
    # A read overlapping the write may see either version.
    h.read("p3", 72, 90, h.rec(1, before(1), 1, "p1-1"))
    h.read("p3", 91, 95, h.rec(1, through(1), 2, "p2-2"))
    # An indefinite write that never took effect is fine too.
    h.write("p1", 96, 0, 2, 1, through(1), "p1-2", status=Status.INFO)
    assert check_history(h.ops, CTX) == []


def test_stale_read_after_a_newer_completed_write() -> None:
    h = base()
    h.read("p1", 20, 30, h.rec(1, None, 0, None))
    h.write("p1", 40, 50, 0, 1, through(1), "p1-1")
    h.read("p2", 60, 70, h.rec(1, None, 0, None))  # began after the write completed
    assert "not_linearizable" in kinds(h)


def test_read_of_a_value_before_its_write_was_invoked() -> None:
    h = base()
    h.read("p2", 20, 30, h.rec(1, through(1), 1, "p1-1"))
    h.write("p1", 40, 50, 0, 1, through(1), "p1-1")
    assert "not_linearizable" in kinds(h)


def test_two_writes_winning_one_revision() -> None:
    h = base()
    h.write("p1", 40, 50, 0, 1, before(1), "p1-1")
    h.write("p2", 41, 51, 0, 1, through(1), "p2-1")
    assert {"two_writes_one_version", "two_values_one_version"} <= kinds(h)


def test_conflict_reported_while_the_expected_revision_was_current() -> None:
    h = base()
    h.write("p1", 40, 50, 0, 1, through(1), "p1-1", applied=False, current=h.rec(1, None, 0, None))
    assert "conflict_while_current" in kinds(h)


def test_a_write_reported_failed_took_effect() -> None:
    h = base()
    h.write("p1", 40, 50, 0, 1, through(1), "p1-1", status=Status.FAIL)
    h.read("p2", 60, 70, h.rec(1, through(1), 1, "p1-1"))
    assert "failed_write_took_effect" in kinds(h)


def test_a_record_no_write_produced() -> None:
    h = base()
    h.read("p2", 60, 70, h.rec(1, through(1), 1, "ghost-1"))
    assert "phantom_version" in kinds(h)


def test_publication_regressing_within_an_epoch() -> None:
    h = base()
    h.write("p1", 40, 50, 0, 1, through(1), "p1-1")
    h.write("p1", 60, 70, 1, 1, before(1), "p1-2")
    assert "publication_regressed" in kinds(h)


def test_epoch_going_back() -> None:
    h = base()
    h.ingest_all(100)  # (epoch 2 checkpoints are not needed for this property)
    h.write("p1", 140, 150, 0, 2, None, "p1-1")
    h.write("p1", 160, 170, 1, 1, through(1), "p1-2")
    assert "epoch_regressed" in kinds(h)


def test_relabeling_before_as_through() -> None:
    h = H()
    for i, e in enumerate(["a0", "a1", "b0", "b1"]):
        h.outcome("r", i, i + 1, e)
    h.checkpoint("r", 5, 6, "A", None, before(1))  # A certified only before 1
    h.checkpoint("r", 7, 8, "B", None, through(1))
    h.write("p1", 40, 50, 0, 1, through(1), "p1-1")
    assert "unbacked_publication" in kinds(h)


def test_publication_visible_before_the_checkpoint_backing_it() -> None:
    h = H()
    for i, e in enumerate(["a0", "a1", "b0", "b1"]):
        h.outcome("r", i, i + 1, e)
    h.write("p1", 10, 20, 0, 1, through(1), "p1-1")
    h.checkpoint("r", 30, 40, "A", None, through(1))
    h.checkpoint("r", 30, 40, "B", None, through(1))
    assert "unbacked_publication" in kinds(h)


def test_certified_event_without_a_durable_outcome() -> None:
    h = H()
    h.outcome("r", 0, 1, "a0")  # a1 never gets an outcome
    h.checkpoint("r", 5, 6, "A", None, through(1))
    assert "unsound" in kinds(h)


def test_checkpoint_regressing() -> None:
    h = base()
    h.checkpoint("r", 20, 30, "A", 1, before(1))
    assert "checkpoint_regressed" in kinds(h)


@pytest.mark.parametrize("outcome", ["published", "confirmed"])
def test_attempt_claiming_success_without_proof(outcome: str) -> None:
    h = base()
    h.read("p1", 20, 30, h.rec(1, None, 0, None))
    h.write("p1", 40, 0, 0, 1, through(1), "p1-1", status=Status.INFO)
    # No acknowledged write and no reread: neither published nor confirmed is known.
    h.add(
        "p1",
        "attempt",
        15,
        60,
        Status.OK,
        {"stream": "s", "worker": "p1"},
        {
            "outcome": outcome,
            "op_id": "p1-1",
            "epoch": 1,
            "cut": through(1),
            "proposal": through(1),
        },
    )
    assert f"dishonest_{outcome}" in kinds(h)


def test_confirmed_after_an_authoritative_read_is_honest() -> None:
    h = base()
    h.read("p1", 20, 30, h.rec(1, None, 0, None))
    h.write("p1", 40, 0, 0, 1, through(1), "p1-1", status=Status.INFO)
    h.read("p1", 50, 55, h.rec(1, through(1), 1, "p1-1"))
    h.add(
        "p1",
        "attempt",
        15,
        60,
        Status.OK,
        {"stream": "s", "worker": "p1"},
        {
            "outcome": "confirmed",
            "op_id": "p1-1",
            "epoch": 1,
            "cut": through(1),
            "proposal": through(1),
        },
    )
    assert check_history(h.ops, CTX) == []
