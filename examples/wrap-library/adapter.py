#!/usr/bin/env python3
"""Put an existing Python library behind fencepost's conformance protocol, in-process.

The library is ``legacy_frontier.py`` (its own types, its own ``Store``
interface); this adapter changes nothing in it. It does three things, each a
section of docs/wrapping.md:

1. translate values: the wire's cuts (``before``/``through``, ``null``) to the
   library's positions (``inclusive``, ``None``) and back, refusing malformed
   input with the field's path (the library trusts its typed arguments);
2. give the library a :class:`HarnessStore`: each store method is one protocol
   call to the harness, which plays the durable stores and the lost answers;
   ``timeout`` becomes the library's ``Lost``, ``conflict`` its ``Conflict``;
3. make the ids the library needs: an op_id per publication attempt, from the
   request's ``worker`` (unique across processes and incarnations) and a counter.

The wire itself (framing, handshake, request checks, ``reset``, ``shutdown``)
is examples/wire/fencepost_wire.py. Levels: ``algebra`` and ``publisher``; the
library has no partition reader, so ``checkpointer`` is not declared and the
harness skips it. Check it with::

    fencepost conform --levels algebra,publisher -- python3 examples/wrap-library/adapter.py

Cost: one Python process per SUT worker, the library called directly; the
default budget takes a few seconds (the process declares ``reset`` and is reused).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent / "wire")]

import legacy_frontier as lf  # noqa: E402
from fencepost_wire import Calls, ProtocolBreak, Refuse, Sut, check_fields, is_int  # noqa: E402

# --- 1. values: the wire's form <-> the library's types ---------------------------------


def to_order(value: Any, path: str) -> lf.Order:
    if isinstance(value, dict) and value.get("kind") == "string":
        order = check_fields(value, path, {"name", "kind"})
        return lf.Order(str(order["name"]), numeric=False)
    order = check_fields(value, path, {"name", "kind", "successor"})
    if order["kind"] != "integer" or not isinstance(order["successor"], bool):
        raise Refuse(f"{path}.kind", "must be integer (with a boolean successor) or string")
    if not isinstance(order["name"], str):
        raise Refuse(f"{path}.name", "must be a string")
    return lf.Order(order["name"], numeric=True, discrete=order["successor"])


def to_position(value: Any, path: str, order: lf.Order | None) -> lf.Position | None:
    """A cut as the library's position; ``order`` None: any coordinate (a record's)."""
    if value is None:
        return None
    cut = check_fields(value, path, {"at", "kind"})
    if cut["kind"] not in ("before", "through"):
        raise Refuse(f"{path}.kind", f"must be before or through, not {cut['kind']!r}")
    at = cut["at"]
    numeric = order.numeric if order is not None else is_int(at)
    if not (is_int(at) if numeric else isinstance(at, str)):
        raise Refuse(f"{path}.at", "must be a coordinate of the order (integer or string)")
    return lf.Position(at, inclusive=cut["kind"] == "through")


def to_cut(position: lf.Position | None) -> dict[str, Any] | None:
    if position is None:
        return None
    return {"at": position.value, "kind": "through" if position.inclusive else "before"}


def to_membership(value: Any, path: str) -> lf.Membership:
    m = check_fields(value, path, {"epoch", "scope", "partitions", "orders"})
    if not is_int(m["epoch"]) or not isinstance(m["scope"], str):
        raise Refuse(f"{path}.epoch", "epoch must be an integer and scope a string")
    if not isinstance(m["orders"], dict) or not isinstance(m["partitions"], dict):
        raise Refuse(f"{path}.partitions", "partitions and orders must be objects")
    orders = {name: to_order(o, f"{path}.orders.{name}") for name, o in m["orders"].items()}
    for partition, name in m["partitions"].items():
        if name not in orders:
            raise Refuse(f"{path}.partitions.{partition}", f"names no order: {name!r}")
    return lf.Membership(m["epoch"], m["scope"], dict(m["partitions"]), orders)


CHECKPOINT = {"partition", "cut", "token", "generation", "scope", "epoch", "finality"}


def to_checkpoint(value: Any, path: str, membership: lf.Membership | None) -> lf.Checkpoint:
    """A checkpoint; a member's cut is checked against the member's order."""
    cp = check_fields(value, path, CHECKPOINT)
    if not isinstance(cp["partition"], str) or cp["finality"] not in ("final", "provisional"):
        raise Refuse(f"{path}.finality", "partition is a string, finality final|provisional")
    if not is_int(cp["epoch"]) or not is_int(cp["generation"]):
        raise Refuse(f"{path}.epoch", "epoch and generation must be integers")
    name = membership.partitions.get(cp["partition"]) if membership is not None else None
    order = membership.orders[name] if membership is not None and name is not None else None
    position = to_position(cp["cut"], f"{path}.cut", order)
    return lf.Checkpoint(
        cp["partition"], position, cp["finality"] == "final", cp["scope"], cp["epoch"]
    )


def to_record(value: Any, path: str) -> lf.Record:
    r = check_fields(value, path, {"epoch", "cut", "revision", "op_id"})
    return lf.Record(
        r["epoch"], to_position(r["cut"], f"{path}.cut", None), r["revision"], r["op_id"]
    )


# --- 2. the library's Store, played by the harness through protocol calls ---------------


class HarnessStore:
    """``lf.Store`` over the calls of one ``publish`` request.

    It remembers the membership read last, so the checkpoints read next (of its
    epoch) are checked against its orders.
    """

    def __init__(self, calls: Calls) -> None:
        self.calls = calls
        self.membership: lf.Membership | None = None

    def _call(self, op: str, **fields: Any) -> dict[str, Any]:
        reply = self.calls.call(op, **fields)
        if reply["ok"]:
            return reply
        if reply["error"] == "timeout":
            raise lf.Lost()
        if reply["error"] == "conflict" and op == "write_publication":
            raise lf.Conflict(to_record(reply.get("record"), "reply.record"))
        raise ProtocolBreak(f"{op}: unexpected error {reply['error']!r}")

    def read_publication(self, stream: str) -> lf.Record:
        return to_record(self._call("read_publication", stream=stream).get("record"), "record")

    def read_membership(self, stream: str) -> lf.Membership:
        reply = self._call("read_membership", stream=stream)
        self.membership = to_membership(reply.get("membership"), "reply.membership")
        return self.membership

    def read_checkpoints(self, stream: str, epoch: int) -> list[lf.Checkpoint]:
        raw = self._call("read_checkpoints", stream=stream, epoch=epoch).get("checkpoints")
        if not isinstance(raw, list):
            raise ProtocolBreak("read_checkpoints: checkpoints must be a list")
        return [
            to_checkpoint(c, f"reply.checkpoints[{i}]", self.membership) for i, c in enumerate(raw)
        ]

    def write_publication(
        self, stream: str, expected_revision: int, epoch: int, position: lf.Position, op_id: str
    ) -> lf.Record:
        reply = self._call(
            "write_publication",
            stream=stream,
            expected_revision=expected_revision,
            epoch=epoch,
            cut=to_cut(position),
            op_id=op_id,
        )
        return to_record(reply.get("record"), "reply.record")


# --- 3. the protocol's requests -----------------------------------------------------------

attempts: dict[str, int] = {}  # attempts per worker name in this process (op_ids)
sut = Sut("wrap-library (legacy_frontier)", on_reset=attempts.clear)


@sut.handler("compare")
def compare(msg: dict[str, Any], calls: Calls) -> dict[str, Any]:
    order = to_order(msg["order"], "compare.order")
    a = to_position(msg["a"], "compare.a", order)
    b = to_position(msg["b"], "compare.b", order)
    return {"result": lf.compare(order, a, b)}


@sut.handler("merge")
def merge(msg: dict[str, Any], calls: Calls) -> dict[str, Any]:
    membership = to_membership(msg["membership"], "merge.membership")
    if not isinstance(msg["checkpoints"], list):
        raise Refuse("merge.checkpoints", "must be a list")
    vector = [
        to_checkpoint(cp, f"merge.checkpoints[{i}]", membership)
        for i, cp in enumerate(msg["checkpoints"])
    ]
    try:
        return {"frontier": to_cut(lf.merge(membership, vector))}
    except lf.Withheld as withheld:
        return {"withheld": withheld.reason}
    except ValueError as exc:  # the library's word for bad data: two checkpoints, one member
        raise Refuse("merge.checkpoints", str(exc)) from None


@sut.handler("publish")
def publish(msg: dict[str, Any], calls: Calls) -> dict[str, Any]:
    for field in ("worker", "stream"):
        if not isinstance(msg[field], str):
            raise Refuse(f"publish.{field}", "must be a string")
    if msg["policy"] not in ("monotone", "reset"):
        raise Refuse("publish.policy", "must be monotone or reset")
    attempts[msg["worker"]] = attempts.get(msg["worker"], 0) + 1
    op_id = f"{msg['worker']}-{attempts[msg['worker']]}"  # one per attempt, never reused
    outcome = lf.Publisher(HarnessStore(calls)).publish(msg["stream"], msg["policy"], op_id)
    return {
        "outcome": outcome.kind,
        "epoch": outcome.epoch,
        "cut": to_cut(outcome.position),
        "reason": outcome.reason,
    }


if __name__ == "__main__":
    sut.run()
