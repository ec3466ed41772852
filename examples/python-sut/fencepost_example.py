#!/usr/bin/env python3
"""A clean-room implementation of the fencepost conformance protocol, version 1.

Written from the documentation alone (docs/procedure.md, docs/semantics.md,
docs/conformance-protocol.md, docs/conformance.md); it imports nothing of fencepost
and needs only the Python 3.11 standard library. It implements all three levels:

* ``algebra``: ``compare`` and ``merge`` (docs/semantics.md sections 1, 2, 4, 8);
* ``checkpointer``: one ingest pass of a partition reader (section 3);
* ``publisher``: one publication attempt (sections 5 and 6).

Run it under the harness::

    fencepost conform -- python3 examples/python-sut/fencepost_example.py

Every deliberate bug (``--bug NAME[,NAME]``, ``--list-bugs``) is one small
``if bug("NAME"):`` next to the line it breaks, so that the correct code reads
straight through. See README.md in this folder for the flags and the bug list.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from typing import Any, NoReturn

PROTOCOL = 1
LEVELS = ("algebra", "checkpointer", "publisher")

# --------------------------------------------------------------------------------------
# Deliberate bugs. name -> (level, what the implementer got wrong, rule expected to break)
# --------------------------------------------------------------------------------------

BUGS: dict[str, tuple[str, str, str]] = {
    # algebra: compare (sections 1, 2)
    "kind-blind": (
        "algebra",
        "compare on dense orders looks at coordinates only: before x == through x",
        "algebra_compare",
    ),
    "succ-everywhere": (
        "algebra",
        "compare treats every integer order as having a successor: through x == before x+1 "
        "on timestamps",
        "algebra_compare",
    ),
    "utf16": (
        "algebra",
        "strings compared by UTF-16 code units instead of code points",
        "algebra_compare",
    ),
    "float-coords": (
        "algebra",
        "integer coordinates compared as IEEE doubles (precision lost above 2^53)",
        "algebra_compare",
    ),
    "falsy-zero": (
        "algebra",
        "a cut whose coordinate is 0 or '' is taken for nothing (`if not cut.at`)",
        "algebra_compare",
    ),
    # algebra: merge (section 4)
    "reason-order": (
        "algebra",
        "withheld reasons checked per checkpoint instead of across the whole vector",
        "algebra_merge",
    ),
    "skip-missing": (
        "algebra",
        "a member without a checkpoint is skipped (treated as idle)",
        "algebra_merge / certified_support",
    ),
    "provisional-ok": (
        "algebra",
        "merge trusts provisional checkpoints",
        "algebra_merge / soundness",
    ),
    "scope-blind": (
        "algebra",
        "merge trusts checkpoints of another query scope",
        "algebra_merge / soundness",
    ),
    "epoch-blind": (
        "algebra",
        "merge trusts checkpoints stamped with another epoch",
        "algebra_merge / soundness",
    ),
    "nonmember-pins": (
        "algebra",
        "checkpoints of partitions that are not members take part in the minimum",
        "algebra_merge",
    ),
    "incomparable-scalar": (
        "algebra",
        "members on orders of different names merged as if they shared one order",
        "algebra_merge / certified_support",
    ),
    "relabel": (
        "algebra",
        "minimum by coordinate alone, labelled through if any member says through",
        "algebra_merge / soundness / no_relabeling",
    ),
    "exclusive-normalize": (
        "algebra",
        "the merged through x is published as before x+1 on every integer order",
        "algebra_merge / certified_support",
    ),
    # publisher (sections 5, 6)
    "stale-cut-retry": (
        "publisher",
        "after a conflict the old cut is written again at the new revision, not recomputed",
        "monotone_publication",
    ),
    "blind-success": (
        "publisher",
        "a lost write response is taken as success",
        "lost_response_honesty",
    ),
    "confirm-revision": (
        "publisher",
        "after a lost write, a moved revision alone is taken as confirmation",
        "lost_response_honesty",
    ),
    "confirm-other-epoch": (
        "publisher",
        "after a lost write, a record at or past the cut confirms whatever its epoch",
        "lost_response_honesty",
    ),
    "fence-blind": (
        "publisher",
        "after a lost write the old membership is kept and the retry stays in the old epoch",
        "epoch_fence",
    ),
    "monotone-as-reset": (
        "publisher",
        "policy monotone handled like reset: the record may move to a new epoch with a lower cut",
        "monotone_publication",
    ),
    "reset-as-monotone": (
        "publisher",
        "policy reset handled like monotone: withheld cutover_pending under reset",
        "honest_outcome",
    ),
    "op-id-reuse": (
        "publisher",
        "the op_id counter advances only after an acknowledged write",
        "op_id_reuse",
    ),
    "gave-up-dishonest": (
        "publisher",
        "gave_up reports the cut it proposed, not a record it was shown",
        "honest_outcome",
    ),
    "no-retry-budget": (
        "publisher",
        "conflicts and lost responses are retried forever",
        "runaway",
    ),
    "giveup-on-withheld": (
        "publisher",
        "a missing checkpoint is reported as gave_up (retry later) instead of withheld",
        "honest_outcome",
    ),
    "stale-unchanged": (
        "publisher",
        "after a conflict whose record already claims the proposal, unchanged carries the "
        "record read before the write",
        "honest_outcome",
    ),
    "lost-read-empty": (
        "publisher",
        "a read_checkpoints whose response is lost is taken as an empty vector",
        "honest_outcome",
    ),
    "cached-membership": (
        "publisher",
        "the membership is read once per process and reused by later attempts",
        "honest_outcome",
    ),
    "reset-keeps-cache": (
        "publisher",
        "reset forgets everything but the per-process record memo",
        "reset",
    ),
    # checkpointer (section 3)
    "max-observed": (
        "checkpointer",
        "the greatest event observed is certified (through max at), whatever the claim",
        "checkpoint_truth",
    ),
    "nonfinal-claim": (
        "checkpointer",
        "a claim that is not final is certified",
        "checkpoint_truth",
    ),
    "epsilon": (
        "checkpointer",
        "a through x claim is stored as before x+1 on every integer order",
        "checkpoint_truth",
    ),
    "checkpoint-before-outcomes": (
        "checkpointer",
        "the checkpoint is written before the page's outcomes are recorded",
        "checkpoint_truth",
    ),
    "ingest-report-unstored": (
        "checkpointer",
        "after a checkpoint conflict ingest_ok reports the cut it tried to write",
        "ingest_report",
    ),
    "ckpt-overwrite": (
        "checkpointer",
        "after a checkpoint conflict the write is retried at the current generation, "
        "even over a newer checkpoint",
        "checkpoint_monotonicity",
    ),
    "ckpt-lost-success": (
        "checkpointer",
        "a lost checkpoint write response is taken as success",
        "ingest_report",
    ),
    "dup-coordinate": (
        "checkpointer",
        "outcomes are recorded once per coordinate, not per event id (events sharing an "
        "offset are skipped)",
        "checkpoint_truth",
    ),
    "restart-from-scratch": (
        "checkpointer",
        "a pass ignores the stored token and writes any final claim over the stored one",
        "checkpoint_monotonicity",
    ),
    "skip-unclaimed": (
        "checkpointer",
        "outcomes are recorded only for events inside the page's final claim, yet the token "
        "moves past the others",
        "checkpoint_truth",
    ),
    "resume-any-token": (
        "checkpointer",
        "the stored token is resumed from even when the stored checkpoint is of another "
        "epoch or scope",
        "opaque_token",
    ),
}

ACTIVE_BUGS: frozenset[str] = frozenset()


def bug(name: str) -> bool:
    """True when the deliberate bug `name` is switched on (--bug)."""
    assert name in BUGS, name
    return name in ACTIVE_BUGS


# --------------------------------------------------------------------------------------
# Values (docs/conformance-protocol.md "Values"; docs/semantics.md sections 1-3)
# --------------------------------------------------------------------------------------


class BadValue(Exception):
    """A malformed value, named by its field path (docs/semantics.md section 8:
    bad values are refused with an error, never withheld)."""

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(f"{path}: {problem}")


class ProtocolBreak(Exception):
    """The harness sent something this program cannot continue the request with."""


def is_int(value: object) -> bool:
    return type(value) is int  # a bool is never an integer


def need_dict(
    value: object, path: str, required: set[str], optional: frozenset[str] = frozenset()
) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise BadValue(path, "must be an object")
    missing = required - value.keys()
    if missing:
        raise BadValue(f"{path}.{sorted(missing)[0]}", "is missing")
    unknown = value.keys() - required - optional
    if unknown:
        raise BadValue(f"{path}.{sorted(unknown)[0]}", "is not a known field")
    return value


def need_str(value: object, path: str) -> str:
    if not isinstance(value, str):
        raise BadValue(path, "must be a string")
    return value


def need_int(value: object, path: str) -> int:
    if not is_int(value):
        raise BadValue(path, "must be an integer")
    assert isinstance(value, int)
    return value


def need_opt_str(value: object, path: str) -> str | None:
    return None if value is None else need_str(value, path)


@dataclass(frozen=True)
class Order:
    """A named total order (section 1). `successor` is True only for integer orders
    with an exact successor; strings are dense (section 8, last row)."""

    name: str
    kind: str  # "integer" | "string"
    successor: bool

    def to_wire(self) -> dict[str, Any]:
        if self.kind == "string":
            return {"name": self.name, "kind": "string"}
        return {"name": self.name, "kind": "integer", "successor": self.successor}


def parse_order(value: object, path: str) -> Order:
    raw = need_dict(value, path, {"name", "kind"}, frozenset({"successor"}))
    name = need_str(raw["name"], f"{path}.name")
    kind = raw["kind"]
    if kind == "integer":
        if "successor" not in raw:
            raise BadValue(f"{path}.successor", "is missing")
        if not isinstance(raw["successor"], bool):
            raise BadValue(f"{path}.successor", "must be a boolean")
        return Order(name, "integer", raw["successor"])
    if kind == "string":
        if raw.get("successor", False) is not False:
            raise BadValue(f"{path}.successor", "a string order has no successor")
        return Order(name, "string", False)
    raise BadValue(f"{path}.kind", f"unknown order kind {kind!r}")


@dataclass(frozen=True)
class Cut:
    """A cut (section 2): `before at` or `through at`. The bottom cut `nothing`
    is represented by None everywhere in this file."""

    at: int | str
    kind: str  # "before" | "through"

    def __str__(self) -> str:
        return f"{self.kind} {self.at!r}"


def cut_wire(cut: Cut | None) -> dict[str, Any] | None:
    return None if cut is None else {"at": cut.at, "kind": cut.kind}


def parse_cut(value: object, path: str, order: Order | None = None) -> Cut | None:
    """A wire cut; when the order is known, the coordinate must be of its kind
    (a float is never a coordinate: docs/conformance.md "Framing")."""
    if value is None:
        return None
    raw = need_dict(value, path, {"at", "kind"})
    kind = raw["kind"]
    if kind not in ("before", "through"):
        raise BadValue(f"{path}.kind", f"unknown cut kind {kind!r}")
    at = raw["at"]
    if not (is_int(at) or isinstance(at, str)):
        raise BadValue(f"{path}.at", "must be an integer or a string")
    if order is not None:
        if order.kind == "integer" and not is_int(at):
            raise BadValue(f"{path}.at", f"order {order.name!r} needs an integer coordinate")
        if order.kind == "string" and not isinstance(at, str):
            raise BadValue(f"{path}.at", f"order {order.name!r} needs a string coordinate")
    return Cut(at, kind)


@dataclass(frozen=True)
class Checkpoint:
    """A partition checkpoint (section 3): the cut is the coverage; token,
    generation, scope, epoch and finality are kept separately and never mixed in."""

    partition: str
    cut: Cut | None
    token: str | None
    generation: int
    scope: str
    epoch: int
    finality: str  # "final" | "provisional"

    def to_wire(self) -> dict[str, Any]:
        return {
            "partition": self.partition,
            "cut": cut_wire(self.cut),
            "token": self.token,
            "generation": self.generation,
            "scope": self.scope,
            "epoch": self.epoch,
            "finality": self.finality,
        }


CHECKPOINT_FIELDS = {"partition", "cut", "token", "generation", "scope", "epoch", "finality"}


def parse_checkpoint(value: object, path: str, order: Order | None = None) -> Checkpoint:
    raw = need_dict(value, path, CHECKPOINT_FIELDS)
    finality = raw["finality"]
    if finality not in ("final", "provisional"):
        raise BadValue(f"{path}.finality", f"unknown finality {finality!r}")
    return Checkpoint(
        partition=need_str(raw["partition"], f"{path}.partition"),
        cut=parse_cut(raw["cut"], f"{path}.cut", order),
        token=need_opt_str(raw["token"], f"{path}.token"),
        generation=need_int(raw["generation"], f"{path}.generation"),
        scope=need_str(raw["scope"], f"{path}.scope"),
        epoch=need_int(raw["epoch"], f"{path}.epoch"),
        finality=finality,
    )


@dataclass(frozen=True)
class Membership:
    """A membership epoch (section 4): members and the order of each."""

    epoch: int
    scope: str
    partitions: dict[str, str]  # partition -> order name
    orders: dict[str, Order]

    def order_of(self, partition: str) -> Order:
        return self.orders[self.partitions[partition]]

    def common_order(self) -> Order | None:
        """The one order all members share; None if they differ or there are none."""
        names = set(self.partitions.values())
        if bug("incomparable-scalar") and names:
            return self.orders[self.partitions[sorted(self.partitions)[0]]]
        return self.orders[names.pop()] if len(names) == 1 else None


def parse_membership(value: object, path: str) -> Membership:
    raw = need_dict(value, path, {"epoch", "scope", "partitions", "orders"})
    orders_raw = raw["orders"]
    if not isinstance(orders_raw, dict):
        raise BadValue(f"{path}.orders", "must be an object")
    orders = {}
    for name, order_raw in orders_raw.items():
        order = parse_order(order_raw, f"{path}.orders.{name}")
        if order.name != name:
            raise BadValue(f"{path}.orders.{name}.name", "differs from its key")
        orders[name] = order
    parts_raw = raw["partitions"]
    if not isinstance(parts_raw, dict):
        raise BadValue(f"{path}.partitions", "must be an object")
    partitions = {}
    for partition, order_name in parts_raw.items():
        need_str(order_name, f"{path}.partitions.{partition}")
        if order_name not in orders:
            raise BadValue(f"{path}.partitions.{partition}", f"names no order {order_name!r}")
        partitions[partition] = order_name
    return Membership(
        epoch=need_int(raw["epoch"], f"{path}.epoch"),
        scope=need_str(raw["scope"], f"{path}.scope"),
        partitions=partitions,
        orders=orders,
    )


@dataclass(frozen=True)
class Record:
    """The publication record (section 5)."""

    epoch: int
    cut: Cut | None
    revision: int
    op_id: str | None


def parse_record(value: object, path: str) -> Record:
    raw = need_dict(value, path, {"epoch", "cut", "revision", "op_id"})
    return Record(
        epoch=need_int(raw["epoch"], f"{path}.epoch"),
        cut=parse_cut(raw["cut"], f"{path}.cut"),
        revision=need_int(raw["revision"], f"{path}.revision"),
        op_id=need_opt_str(raw["op_id"], f"{path}.op_id"),
    )


# --------------------------------------------------------------------------------------
# The cut algebra (docs/semantics.md section 2)
# --------------------------------------------------------------------------------------


def sign(n: int | float) -> int:
    return (n > 0) - (n < 0)


def is_nothing(cut: Cut | None) -> bool:
    if bug("falsy-zero"):
        return cut is None or not cut.at
    return cut is None


def check_at(order: Order, cut: Cut, path: str) -> None:
    parse_cut(cut_wire(cut), path, order)


def compare(order: Order, a: Cut | None, b: Cut | None) -> int:
    """-1, 0 or 1 as D(a) is a strict subset of, equal to, or a strict superset of D(b).

    Section 2: `nothing` is below every cut. With an exact successor, `through x`
    and `before x+1` are the same claim, so both are ranked by their exclusive
    bound. Without one (dense integers, strings), a cut ranks by (coordinate,
    kind) with before < through: for x < y, through x < before y.
    """
    if is_nothing(a) or is_nothing(b):
        return (not is_nothing(a)) - (not is_nothing(b))
    assert a is not None and b is not None
    check_at(order, a, "a")
    check_at(order, b, "b")
    if order.kind == "integer" and (order.successor or bug("succ-everywhere")):
        # Exact successor: through x == before x+1 (section 2).
        assert isinstance(a.at, int) and isinstance(b.at, int)
        ka = a.at + 1 if a.kind == "through" else a.at
        kb = b.at + 1 if b.kind == "through" else b.at
        if bug("float-coords"):
            return sign(float(ka) - float(kb))
        return sign(ka - kb)
    # Dense order: compare coordinates, then the endpoint kind.
    xa: object = a.at
    xb: object = b.at
    if bug("utf16") and isinstance(a.at, str) and isinstance(b.at, str):
        xa = a.at.encode("utf-16-be", "surrogatepass")
        xb = b.at.encode("utf-16-be", "surrogatepass")
    if bug("float-coords") and isinstance(a.at, int) and isinstance(b.at, int):
        xa, xb = float(a.at), float(b.at)
    if xa != xb:
        return -1 if xa < xb else 1  # type: ignore[operator]
    if bug("kind-blind"):
        return 0
    rank = {"before": 0, "through": 1}
    return sign(rank[a.kind] - rank[b.kind])


def merge(membership: Membership, checkpoints: list[Checkpoint]) -> tuple[Cut | None, str | None]:
    """The merged frontier of section 4: (cut, None) or (None, withheld reason).

    Checkpoints of non-members are ignored (section 8); two checkpoints for one
    member are a bad value (section 8).
    """
    members = membership.partitions
    vector: dict[str, Checkpoint] = {}
    for i, cp in enumerate(checkpoints):
        if cp.partition not in members:
            continue
        if cp.partition in vector:
            raise BadValue(f"checkpoints[{i}].partition", f"second checkpoint for {cp.partition}")
        check_cut = cp.cut
        if check_cut is not None:
            check_at(membership.order_of(cp.partition), check_cut, f"checkpoints[{i}].cut")
        vector[cp.partition] = cp

    if bug("reason-order"):
        # Each checkpoint is inspected in turn: the first bad one decides the reason.
        for p in members:
            cp_or_none = vector.get(p)
            if cp_or_none is None:
                return None, "missing_checkpoint"
            if cp_or_none.epoch != membership.epoch:
                return None, "epoch_mismatch"
            if cp_or_none.scope != membership.scope:
                return None, "scope_mismatch"
            if cp_or_none.finality != "final":
                return None, "unsupported_finality"

    # The reasons, checked across the whole vector in the documented order.
    if not bug("skip-missing") and any(p not in vector for p in members):
        return None, "missing_checkpoint"
    present = [cp for cp in vector.values()]
    if not bug("epoch-blind") and any(cp.epoch != membership.epoch for cp in present):
        return None, "epoch_mismatch"
    if not bug("scope-blind") and any(cp.scope != membership.scope for cp in present):
        return None, "scope_mismatch"
    if not bug("provisional-ok") and any(cp.finality != "final" for cp in present):
        return None, "unsupported_finality"
    order = membership.common_order()
    if len(set(members.values())) > 1 and not bug("incomparable-scalar"):
        return None, "incomparable"  # the caller keeps the vector (section 4, reason 5)
    if order is None:
        return None, "no_coverage"  # a membership with no partitions
    cuts = [cp.cut for cp in present]
    if bug("nonmember-pins"):
        cuts += [cp.cut for cp in checkpoints if cp.partition not in members]
    if not cuts:
        return None, "no_coverage"

    if bug("relabel"):
        if any(c is None for c in cuts):
            return None, "no_coverage"
        at = min(c.at for c in cuts if c is not None)
        kinds = {c.kind for c in cuts if c is not None and c.at == at}
        return Cut(at, "through" if "through" in kinds else "before"), None

    # The minimum over the whole vector, exactly as certified. Ties between
    # equivalent cuts go to the smaller coordinate (section 8, first row).
    lowest = cuts[0]
    for cut in cuts[1:]:
        c = compare(order, cut, lowest)
        if c < 0 or (c == 0 and cut is not None and lowest is not None and cut.at < lowest.at):  # type: ignore[operator]
            lowest = cut
    if lowest is None:
        return None, "no_coverage"
    if bug("exclusive-normalize") and order.kind == "integer" and lowest.kind == "through":
        assert isinstance(lowest.at, int)
        lowest = Cut(lowest.at + 1, "before")
    return lowest, None


# --------------------------------------------------------------------------------------
# The wire (docs/conformance-protocol.md; docs/conformance.md "Framing")
# --------------------------------------------------------------------------------------


def _refuse_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"duplicate key {key!r}")
        out[key] = value
    return out


def _refuse_constant(name: str) -> NoReturn:
    raise ValueError(f"{name} is not JSON")


def parse_line(line: bytes) -> dict[str, Any]:
    """One strict JSON object (no NaN/Infinity, no duplicate keys, UTF-8)."""
    value = json.loads(
        line.decode("utf-8"),
        object_pairs_hook=_refuse_duplicates,
        parse_constant=_refuse_constant,
    )
    if not isinstance(value, dict):
        raise ValueError("a message must be a JSON object")
    return value


class Wire:
    """JSON Lines over stdin/stdout; logs go to stderr."""

    def __init__(self) -> None:
        self.inp = sys.stdin.buffer
        self.out = sys.stdout.buffer

    def send(self, message: dict[str, Any]) -> None:
        text = json.dumps(message, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
        self.out.write(text.encode("utf-8") + b"\n")
        self.out.flush()

    def error(self, request_id: object, message: str) -> None:
        rid = request_id if is_int(request_id) else None
        self.send({"type": "error", "id": rid, "message": message})

    def receive(self) -> dict[str, Any]:
        """The next parsable message. An unparsable line gets an error reply (id null)
        and is skipped. End of input or `shutdown` ends the process with status 0."""
        while True:
            line = self.inp.readline()
            if not line:
                sys.exit(0)
            try:
                message = parse_line(line)
            except (ValueError, UnicodeDecodeError) as exc:
                self.error(None, f"cannot parse message: {exc}")
                continue
            if message.get("type") == "shutdown":
                sys.exit(0)  # even while waiting for a reply
            return message


def log(*parts: object) -> None:
    print(*parts, file=sys.stderr, flush=True)


# --------------------------------------------------------------------------------------
# Configuration: the legitimate choices (docs/conformance.md "Choices a correct
# implementation may make") and the declared hello_ok fields
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Config:
    levels: tuple[str, ...]
    integers: str | None  # None: the field is not sent
    reset: bool
    retries: int  # conflicts + lost responses tolerated per request
    on_conflict: str  # "carried" (the conflict's record) | "reread" | "shortcut"
    lost_write: str  # "reread": read the record | "rewrite": same write again
    confirm_cut: str  # "proposed" | "record" | "unchanged"
    gave_up_report: str  # "latest" | "first" | "null"
    ckpt_conflict: str  # "stop" | "continue"
    ckpt_lost: str  # "reread" | "rewrite"
    max_pages: int


class Finished(Exception):
    """Ends a request early with its final answer."""

    def __init__(self, answer: dict[str, Any]) -> None:
        self.answer = answer


class Session:
    """One request in progress: numbers its calls and counts its trouble."""

    def __init__(self, wire: Wire, config: Config, request_id: int) -> None:
        self.wire = wire
        self.config = config
        self.request_id = request_id
        self.calls = 0
        self.trouble = 0  # conflicts and lost responses met so far

    def call(self, op: str, **fields: Any) -> dict[str, Any]:
        """One call; returns the harness's reply (docs/conformance-protocol.md)."""
        self.calls += 1
        call_id = f"c{self.calls}"
        self.wire.send({"type": "call", "call_id": call_id, "op": op, **fields})
        reply = self.wire.receive()
        if reply.get("type") != "reply" or reply.get("call_id") != call_id:
            raise ProtocolBreak(f"expected the reply to {call_id}, got {reply.get('type')!r}")
        if not isinstance(reply.get("ok"), bool):
            raise ProtocolBreak("reply.ok must be a boolean")
        return reply

    def spend(self) -> bool:
        """Count one conflict or lost response; True once the retry budget is spent."""
        self.trouble += 1
        if bug("no-retry-budget"):
            return False
        return self.trouble > self.config.retries


def reply_error(reply: dict[str, Any]) -> str:
    error = reply.get("error")
    if reply["ok"] or error not in ("timeout", "conflict"):
        raise ProtocolBreak(f"unexpected reply {reply!r}")
    return str(error)


# --------------------------------------------------------------------------------------
# Level publisher: one publication attempt (docs/semantics.md sections 5 and 6)
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Proposal:
    epoch: int
    cut: Cut
    order: Order


@dataclass(frozen=True)
class Decision:
    """What sections 5 and 6 decide from one view: write `proposal`, or stop."""

    outcome: str  # "write" | "unchanged" | "withheld"
    reason: str | None = None
    proposal: Proposal | None = None


def decide(
    policy: str, record: Record, membership: Membership, checkpoints: list[Checkpoint]
) -> Decision:
    """Sections 5 and 6 on one view (record, membership, checkpoints)."""
    if membership.epoch < record.epoch and not bug("fence-blind"):
        return Decision("withheld", "epoch_mismatch")  # the fence: never go back
    cut, reason = merge(membership, checkpoints)
    if reason is not None:
        return Decision("withheld", reason)
    assert cut is not None
    order = membership.common_order()
    assert order is not None
    proposal = Proposal(membership.epoch, cut, order)
    if membership.epoch == record.epoch:
        # Section 5: publish only a cut strictly ahead of the record.
        if compare(order, cut, record.cut) > 0:
            return Decision("write", proposal=proposal)
        return Decision("unchanged")
    # Section 6: a newer epoch. Under monotone the record moves only when the
    # new epoch's cut is at least the old claim; under reset it may move lower.
    monotone = policy == "monotone"
    if bug("monotone-as-reset"):
        monotone = False
    if bug("reset-as-monotone"):
        monotone = True
    if monotone and compare(order, cut, record.cut) < 0:
        return Decision("withheld", "cutover_pending")
    return Decision("write", proposal=proposal)


class Attempt(Session):
    """One `publish` request."""

    def __init__(self, worker: Worker, request: dict[str, Any]) -> None:
        super().__init__(worker.wire, worker.config, request["id"])
        self.worker = worker
        self.stream: str = request["stream"]
        self.policy: str = request["policy"]
        self.name: str = request["worker"]
        self.first_record: Record | None = None
        self.record: Record | None = None  # the latest record this attempt was shown
        self.proposed: Proposal | None = None  # only for the gave-up-dishonest bug

    # -- the final answers ------------------------------------------------------------

    def answer(
        self, outcome: str, epoch: int | None, cut: Cut | None, reason: str | None = None
    ) -> Finished:
        return Finished(
            {
                "type": "publish_ok",
                "id": self.request_id,
                "outcome": outcome,
                "epoch": epoch,
                "cut": cut_wire(cut),
                "reason": reason,
            }
        )

    def from_record(self, outcome: str, reason: str | None = None) -> Finished:
        """unchanged / withheld carry the latest record shown (docs/conformance.md)."""
        assert self.record is not None
        return self.answer(outcome, self.record.epoch, self.record.cut, reason)

    def gave_up(self) -> Finished:
        """Retry budget spent: report only a record this attempt was shown, or null."""
        if bug("gave-up-dishonest") and self.proposed is not None:
            return self.answer("gave_up", self.proposed.epoch, self.proposed.cut)
        shown = {"latest": self.record, "first": self.first_record, "null": None}[
            self.config.gave_up_report
        ]
        if shown is None:
            return self.answer("gave_up", None, None)
        return self.answer("gave_up", shown.epoch, shown.cut)

    # -- reads, each retried on a lost response within the budget --------------------

    def show(self, record: Record) -> Record:
        """Every record shown counts as a read of the record (conformance-protocol.md)."""
        if self.first_record is None:
            self.first_record = record
        self.record = record
        self.worker.memo_record(self.stream, record)
        return record

    def read_record(self) -> Record:
        while True:
            reply = self.call("read_publication", stream=self.stream)
            if reply["ok"]:
                return self.show(parse_record(reply.get("record"), "reply.record"))
            reply_error(reply)
            if self.spend():
                raise self.gave_up()

    def read_membership(self) -> Membership:
        if bug("cached-membership") and self.stream in self.worker.memberships:
            return self.worker.memberships[self.stream]
        while True:
            reply = self.call("read_membership", stream=self.stream)
            if reply["ok"]:
                membership = parse_membership(reply.get("membership"), "reply.membership")
                self.worker.memberships[self.stream] = membership
                return membership
            reply_error(reply)
            if self.spend():
                raise self.gave_up()

    def read_checkpoints(self, epoch: int) -> list[Checkpoint]:
        while True:
            reply = self.call("read_checkpoints", stream=self.stream, epoch=epoch)
            if reply["ok"]:
                raw = reply.get("checkpoints")
                if not isinstance(raw, list):
                    raise BadValue("reply.checkpoints", "must be a list")
                return [parse_checkpoint(c, f"reply.checkpoints[{i}]") for i, c in enumerate(raw)]
            reply_error(reply)
            if bug("lost-read-empty"):
                return []
            if self.spend():
                raise self.gave_up()

    def write(self, proposal: Proposal, expected_revision: int, op_id: str) -> dict[str, Any]:
        self.proposed = proposal
        return self.call(
            "write_publication",
            stream=self.stream,
            expected_revision=expected_revision,
            epoch=proposal.epoch,
            cut=cut_wire(proposal.cut),
            op_id=op_id,
        )

    # -- the attempt ------------------------------------------------------------------

    def run(self) -> dict[str, Any]:
        try:
            self.attempt()
        except Finished as done:
            return done.answer
        raise AssertionError("an attempt always finishes")

    def attempt(self) -> NoReturn:
        op_id = self.worker.next_op_id(self.name)
        record = self.read_record()
        membership: Membership | None = None
        keep_membership = False
        while True:
            # Section 5: read the record (done), the current membership, the
            # checkpoints of that membership's epoch; merge; decide.
            if not keep_membership or membership is None:
                membership = self.read_membership()
            keep_membership = False
            checkpoints = self.read_checkpoints(membership.epoch)
            if bug("reset-keeps-cache") and self.worker.memo_says_unchanged(
                self.stream, record, membership, checkpoints
            ):
                raise self.from_record("unchanged")
            decision = decide(self.policy, record, membership, checkpoints)
            if decision.outcome == "withheld":
                if bug("giveup-on-withheld") and decision.reason == "missing_checkpoint":
                    raise self.answer("gave_up", record.epoch, record.cut)
                raise self.from_record("withheld", decision.reason)
            if decision.outcome == "unchanged":
                raise self.from_record("unchanged")
            proposal = decision.proposal
            assert proposal is not None

            reply = self.write(proposal, record.revision, op_id)
            if reply["ok"]:
                # An acknowledged write: the only ground for `published`.
                self.show(parse_record(reply.get("record"), "reply.record"))
                self.worker.published()
                raise self.answer("published", proposal.epoch, proposal.cut)
            if reply_error(reply) == "conflict":
                # The revision moved: never reuse the old cut, recompute (section 5).
                before = record
                carried = self.show(parse_record(reply.get("record"), "reply.record"))
                if self.spend():
                    raise self.gave_up()
                claimed = carried.epoch == proposal.epoch and (
                    compare(proposal.order, carried.cut, proposal.cut) >= 0
                )
                if bug("stale-unchanged") and claimed:
                    raise self.answer("unchanged", before.epoch, before.cut)
                if self.config.on_conflict == "shortcut" and claimed:
                    # The carried record already claims at least our proposal.
                    raise self.from_record("unchanged")
                if bug("stale-cut-retry"):
                    self.retry_stale(proposal, carried, op_id)
                record = self.read_record() if self.config.on_conflict == "reread" else carried
                continue
            # The response was lost: the write may or may not have been applied.
            record, keep_membership = self.settle_lost_write(proposal, record, op_id)

    def retry_stale(self, proposal: Proposal, record: Record, op_id: str) -> NoReturn:
        """bug stale-cut-retry: the old cut again at the new revision, until it sticks."""
        while True:
            reply = self.write(proposal, record.revision, op_id)
            if reply["ok"]:
                self.show(parse_record(reply.get("record"), "reply.record"))
                raise self.answer("published", proposal.epoch, proposal.cut)
            if reply_error(reply) == "conflict":
                record = self.show(parse_record(reply.get("record"), "reply.record"))
            if self.spend():
                raise self.gave_up()

    def settle_lost_write(
        self, proposal: Proposal, record: Record, op_id: str
    ) -> tuple[Record, bool]:
        """Section 5, indeterminate: read the authoritative record (or write the same
        again, whose conflict carries it). Same epoch and at or past the proposal:
        confirmed. Behind, or another epoch: return the record to recompute from
        (the caller rereads the membership, so a new epoch goes through the cutover
        rule of section 6). Never conclude anything from the lost response alone."""
        if bug("blind-success"):
            raise self.answer("published", proposal.epoch, proposal.cut)
        while True:
            if self.spend():
                raise self.gave_up()
            if self.config.lost_write == "rewrite":
                reply = self.write(proposal, record.revision, op_id)
                if reply["ok"]:
                    self.show(parse_record(reply.get("record"), "reply.record"))
                    self.worker.published()
                    raise self.answer("published", proposal.epoch, proposal.cut)
                if reply_error(reply) == "timeout":
                    continue
                current = self.show(parse_record(reply.get("record"), "reply.record"))
            else:
                current = self.read_record()
            if bug("confirm-revision") and current.revision > record.revision:
                raise self.answer("confirmed", proposal.epoch, proposal.cut)
            same_epoch = current.epoch == proposal.epoch or bug("confirm-other-epoch")
            if same_epoch and compare(proposal.order, current.cut, proposal.cut) >= 0:
                # The claim is present, whoever wrote it (only op_id proves who).
                if self.config.confirm_cut == "unchanged":
                    raise self.from_record("unchanged")
                cut = current.cut if self.config.confirm_cut == "record" else proposal.cut
                raise self.answer("confirmed", proposal.epoch, cut)
            # Behind or another epoch: recompute from current durable checkpoints.
            return current, bug("fence-blind")


# --------------------------------------------------------------------------------------
# Level checkpointer: one ingest pass (docs/semantics.md section 3)
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Page:
    events: list[tuple[str, int | str]]
    next_token: str | None
    claim: Cut | None
    final: bool
    has_claim: bool


def parse_page(value: object, order: Order) -> Page:
    raw = need_dict(value, "reply.page", {"events", "next_token", "claim"})
    events_raw = raw["events"]
    if not isinstance(events_raw, list):
        raise BadValue("reply.page.events", "must be a list")
    events = []
    for i, e in enumerate(events_raw):
        ev = need_dict(e, f"reply.page.events[{i}]", {"id", "at"})
        at = parse_cut({"at": ev["at"], "kind": "before"}, f"reply.page.events[{i}]", order)
        assert at is not None
        events.append((need_str(ev["id"], f"reply.page.events[{i}].id"), at.at))
    claim_raw = raw["claim"]
    claim: Cut | None = None
    final = False
    if claim_raw is not None:
        c = need_dict(claim_raw, "reply.page.claim", {"cut", "final"})
        claim = parse_cut(c["cut"], "reply.page.claim.cut", order)
        if not isinstance(c["final"], bool):
            raise BadValue("reply.page.claim.final", "must be a boolean")
        final = c["final"]
    return Page(
        events,
        need_opt_str(raw["next_token"], "reply.page.next_token"),
        claim,
        final,
        claim_raw is not None,
    )


class IngestPass(Session):
    """One `ingest` request: read the checkpoint, fetch pages from its token, record
    every event's outcome (idempotent by id), and certify only final claims."""

    def __init__(self, worker: Worker, request: dict[str, Any], order: Order) -> None:
        super().__init__(worker.wire, worker.config, request["id"])
        self.partition: str = request["partition"]
        self.scope: str = request["scope"]
        self.epoch: int = request["epoch"]
        self.order = order
        self.known: Checkpoint | None = None  # the checkpoint last known to be stored
        self.recorded: set[str] = set()  # event ids recorded in this pass

    def finish(self, cut: Cut | None = None, own: bool = False) -> Finished:
        """ingest_ok: the cut certified now; never more than the store holds."""
        if not own:
            cut = self.known.cut if self.known is not None else None
        return Finished({"type": "ingest_ok", "id": self.request_id, "cut": cut_wire(cut)})

    def run(self) -> dict[str, Any]:
        try:
            self.ingest()
        except Finished as done:
            return done.answer
        raise AssertionError("a pass always finishes")

    def read_checkpoint(self) -> Checkpoint | None:
        while True:
            reply = self.call("read_checkpoint", partition=self.partition)
            if reply["ok"]:
                raw = reply.get("checkpoint")
                return None if raw is None else parse_checkpoint(raw, "reply.checkpoint")
            reply_error(reply)
            if self.spend():
                raise self.finish()

    def fetch(self, token: str | None) -> Page:
        while True:
            reply = self.call("fetch_page", partition=self.partition, token=token)
            if reply["ok"]:
                return parse_page(reply.get("page"), self.order)
            reply_error(reply)
            if self.spend():
                raise self.finish()

    def record_outcomes(self, page: Page) -> None:
        """Section 3: every enumerated event gets a durable terminal outcome, keyed by
        event id (pages overlap: recording again is harmless, the first one wins)."""
        seen_at: set[int | str] = set()
        for event_id, at in page.events:
            if bug("dup-coordinate"):
                if at in seen_at:
                    continue
                seen_at.add(at)
            if bug("skip-unclaimed") and not (
                page.final and page.claim is not None and self.covers(page.claim, at)
            ):
                continue
            if event_id in self.recorded:
                continue
            while True:
                reply = self.call("record_outcome", event_id=event_id, outcome="processed")
                if reply["ok"]:
                    break
                reply_error(reply)
                if self.spend():
                    raise self.finish()
            self.recorded.add(event_id)

    def covers(self, cut: Cut, at: int | str) -> bool:
        return compare(self.order, Cut(at, "through"), cut) <= 0

    def trusted(self, cp: Checkpoint | None) -> bool:
        """Resume from a stored token only if it was issued for this partition and
        epoch (docs/conformance.md: any other token is `opaque_token`)."""
        if cp is None:
            return False
        if bug("resume-any-token"):
            return True
        return (cp.partition, cp.epoch, cp.scope) == (self.partition, self.epoch, self.scope)

    def ahead(self, cut: Cut) -> bool:
        """A new checkpoint must be strictly ahead of the stored one (never regress)."""
        if bug("restart-from-scratch"):
            return True
        return self.known is None or compare(self.order, cut, self.known.cut) > 0

    def certifiable(self, page: Page) -> Cut | None:
        """The cut this page lets us certify: only a final claim (section 3); never
        the greatest event observed, never a manufactured successor."""
        if bug("max-observed") and page.events:
            top = page.events[0][1]
            for _, at in page.events:
                if compare(self.order, Cut(at, "through"), Cut(top, "through")) > 0:
                    top = at
            return Cut(top, "through")
        if page.claim is None or not (page.final or bug("nonfinal-claim")):
            return None
        claim = page.claim
        if bug("epsilon") and self.order.kind == "integer" and claim.kind == "through":
            assert isinstance(claim.at, int)
            claim = Cut(claim.at + 1, "before")
        return claim

    def ingest(self) -> NoReturn:
        self.known = self.read_checkpoint()
        token = self.known.token if self.known is not None and self.trusted(self.known) else None
        if bug("restart-from-scratch"):
            token = None
        for _ in range(self.config.max_pages):
            page = self.fetch(token)
            cut = self.certifiable(page)
            if not bug("checkpoint-before-outcomes"):
                self.record_outcomes(page)
            # Resume next time after this page, or at it again when it was the last
            # page for now (next_token null: the same token is fetched again).
            resume = page.next_token if page.next_token is not None else token
            if cut is not None and self.ahead(cut):
                self.write(cut, resume)
            if bug("checkpoint-before-outcomes"):
                self.record_outcomes(page)
            if page.next_token is None:
                break
            token = page.next_token
        raise self.finish()

    def write(self, cut: Cut, token: str | None) -> None:
        """A write conditional on the stored generation (section 3). On conflict, stop
        with the stored cut (or, with --ckpt-conflict continue, carry on from it);
        on a lost response, reread (or write the same again) before believing it."""
        while True:
            expected = self.known.generation if self.known is not None else None
            mine = Checkpoint(
                self.partition, cut, token, (expected or 0) + 1, self.scope, self.epoch, "final"
            )
            reply = self.call(
                "write_checkpoint",
                partition=self.partition,
                expected_generation=expected,
                checkpoint=mine.to_wire(),
            )
            if reply["ok"]:
                self.known = parse_checkpoint(reply.get("checkpoint"), "reply.checkpoint")
                return
            error = reply_error(reply)
            if error == "timeout":
                if bug("ckpt-lost-success"):
                    self.known = mine
                    return
                if self.spend():
                    raise self.finish()
                if self.config.ckpt_lost == "rewrite":
                    continue  # the same expected generation: a conflict then shows the store
                current = self.read_checkpoint()
                if current == mine:
                    self.known = current  # it was applied
                    return
                if current == self.known:
                    continue  # not applied: write again
            else:
                raw = reply.get("checkpoint")
                current = None if raw is None else parse_checkpoint(raw, "reply.checkpoint")
                if current == mine:
                    self.known = current  # our own earlier write, applied after all
                    return
                if bug("ingest-report-unstored"):
                    raise self.finish(cut, own=True)
                if bug("ckpt-overwrite"):
                    self.known = current
                    continue
                if self.spend():
                    self.known = current
                    raise self.finish()
            # Someone else moved the checkpoint: it is what the store holds now.
            self.known = current
            if self.config.ckpt_conflict == "stop":
                raise self.finish()
            if current is not None and compare(self.order, cut, current.cut) <= 0:
                return  # the store already certifies at least our cut: carry on
            # The store is behind our cut: write again over what it holds now.


# --------------------------------------------------------------------------------------
# The process: handshake, requests, errors, reset
# --------------------------------------------------------------------------------------


def request_id(message: dict[str, Any]) -> int | None:
    rid = message.get("id")
    return rid if is_int(rid) else None


REQUEST_FIELDS: dict[str, set[str]] = {
    "compare": {"type", "id", "order", "a", "b"},
    "merge": {"type", "id", "membership", "checkpoints"},
    "publish": {"type", "id", "worker", "stream", "policy"},
    "ingest": {"type", "id", "worker", "partition", "scope", "epoch", "order"},
}


class Worker:
    """One process = one worker (docs/conformance-protocol.md "Processes")."""

    def __init__(self, wire: Wire, config: Config) -> None:
        self.wire = wire
        self.config = config
        self.forget()

    def forget(self) -> None:
        """Everything held in memory; `reset` must clear all of it."""
        self.attempts = 0  # publication attempts: op_ids are "<worker>-<n>"
        self.acknowledged = 0  # only for the op-id-reuse bug
        self.memberships: dict[str, Membership] = {}
        # A memo of the best record seen per (stream, epoch). Within one run a
        # record never goes back in an epoch, so the memo is harmless there; it
        # shows why `reset` must clear everything (bug reset-keeps-cache).
        self.memo: dict[tuple[str, int], tuple[int, Cut | None]] = {}

    def next_op_id(self, worker: str) -> str:
        self.attempts += 1
        if bug("op-id-reuse"):
            return f"{worker}-{self.acknowledged + 1}"
        return f"{worker}-{self.attempts}"

    def published(self) -> None:
        self.acknowledged += 1

    def memo_record(self, stream: str, record: Record) -> None:
        """Keep the newest record (highest revision) seen per (stream, epoch)."""
        key = (stream, record.epoch)
        if key not in self.memo or self.memo[key][0] < record.revision:
            self.memo[key] = (record.revision, record.cut)

    def memo_says_unchanged(
        self, stream: str, record: Record, membership: Membership, checkpoints: list[Checkpoint]
    ) -> bool:
        best = self.memo.get((stream, membership.epoch))
        order = membership.common_order()
        if best is None or order is None or membership.epoch != record.epoch:
            return False
        cut, reason = merge(membership, checkpoints)
        return reason is None and compare(order, cut, best[1]) <= 0

    def hello_ok(self) -> dict[str, Any]:
        message: dict[str, Any] = {
            "type": "hello_ok",
            "protocol": PROTOCOL,
            "name": "fencepost-python-example"
            + ("" if not ACTIVE_BUGS else " +" + ",".join(sorted(ACTIVE_BUGS))),
            "levels": list(self.config.levels),
        }
        if self.config.integers is not None:
            message["integers"] = self.config.integers
        if self.config.reset:
            message["capabilities"] = ["reset"]
        return message

    def serve(self) -> None:
        while True:
            message = self.wire.receive()
            rid = request_id(message)
            try:
                answer = self.handle(message)
            except BadValue as exc:
                answer = {"type": "error", "id": rid, "message": f"invalid value: {exc}"}
            except ProtocolBreak as exc:
                answer = {"type": "error", "id": rid, "message": f"protocol: {exc}"}
            self.wire.send(answer)

    def handle(self, message: dict[str, Any]) -> dict[str, Any]:
        kind = message.get("type")
        if kind == "hello":
            need_dict(message, "hello", {"type", "protocol"})
            if message["protocol"] != PROTOCOL or not is_int(message["protocol"]):
                raise BadValue("hello.protocol", "only protocol 1 is spoken")
            return self.hello_ok()
        if kind == "reset":
            need_dict(message, "reset", {"type"})
            if bug("reset-keeps-cache"):
                memo = self.memo
                self.forget()
                self.memo = memo
            else:
                self.forget()
            return {"type": "reset_ok"}
        if not isinstance(kind, str) or kind not in REQUEST_FIELDS:
            raise BadValue("type", f"unknown message type {kind!r}")
        need_dict(message, kind, REQUEST_FIELDS[kind])
        rid = need_int(message["id"], f"{kind}.id")
        if kind == "compare":
            order = parse_order(message["order"], "compare.order")
            a = parse_cut(message["a"], "compare.a", order)
            b = parse_cut(message["b"], "compare.b", order)
            return {"type": "compare_ok", "id": rid, "result": compare(order, a, b)}
        if kind == "merge":
            membership = parse_membership(message["membership"], "merge.membership")
            raw = message["checkpoints"]
            if not isinstance(raw, list):
                raise BadValue("merge.checkpoints", "must be a list")
            checkpoints = [
                parse_checkpoint(c, f"merge.checkpoints[{i}]") for i, c in enumerate(raw)
            ]
            cut, reason = merge(membership, checkpoints)
            if reason is not None:
                return {"type": "merge_ok", "id": rid, "withheld": reason}
            return {"type": "merge_ok", "id": rid, "frontier": cut_wire(cut)}
        if kind == "publish":
            need_str(message["worker"], "publish.worker")
            need_str(message["stream"], "publish.stream")
            if message["policy"] not in ("monotone", "reset"):
                raise BadValue("publish.policy", f"unknown policy {message['policy']!r}")
            return Attempt(self, message).run()
        # ingest
        need_str(message["worker"], "ingest.worker")
        need_str(message["partition"], "ingest.partition")
        need_str(message["scope"], "ingest.scope")
        need_int(message["epoch"], "ingest.epoch")
        order = parse_order(message["order"], "ingest.order")
        return IngestPass(self, message, order).run()


# --------------------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------------------


def parse_args(argv: list[str]) -> tuple[Config, frozenset[str]]:
    p = argparse.ArgumentParser(
        description="A clean-room SUT for `fencepost conform` (protocol 1), with switchable bugs."
    )
    p.add_argument("--levels", default=",".join(LEVELS), help="levels declared in hello_ok")
    p.add_argument(
        "--integers", choices=("arbitrary", "int64", "int53"), help="declare an integer range"
    )
    p.add_argument("--no-reset", action="store_true", help="do not declare the reset capability")
    p.add_argument(
        "--retries", type=int, default=4, help="conflicts + lost responses tolerated per request"
    )
    p.add_argument(
        "--on-conflict",
        choices=("carried", "reread", "shortcut"),
        default="carried",
        help="after a publication conflict: decide from the carried record, read it again, "
        "or end unchanged at once when the carried record already claims the proposal",
    )
    p.add_argument(
        "--lost-write",
        choices=("reread", "rewrite"),
        default="reread",
        help="after a lost publication write: read the record, or send the same write again",
    )
    p.add_argument(
        "--confirm-cut",
        choices=("proposed", "record", "unchanged"),
        default="proposed",
        help="when the reread shows the claim present: confirmed with the proposed cut, "
        "confirmed with the record's cut, or unchanged",
    )
    p.add_argument(
        "--gave-up-report",
        choices=("latest", "first", "null"),
        default="latest",
        help="gave_up carries the latest record shown, the first one, or epoch null",
    )
    p.add_argument(
        "--ckpt-conflict",
        choices=("stop", "continue"),
        default="stop",
        help="after a checkpoint conflict: end the pass with the stored cut, or carry on",
    )
    p.add_argument(
        "--ckpt-lost",
        choices=("reread", "rewrite"),
        default="reread",
        help="after a lost checkpoint write: read the checkpoint, or send the same write again",
    )
    p.add_argument(
        "--max-pages", type=int, default=64, help="pages fetched per ingest pass at most"
    )
    p.add_argument("--bug", default="", help="comma-separated deliberate bugs (--list-bugs)")
    p.add_argument("--list-bugs", action="store_true")
    args = p.parse_args(argv)
    if args.list_bugs:
        for name, (level, what, rule) in BUGS.items():
            print(f"{name:28} {level:13} {rule:34} {what}")
        sys.exit(0)
    bugs = frozenset(b for b in args.bug.split(",") if b)
    unknown = bugs - BUGS.keys()
    if unknown:
        p.error(f"unknown bug(s): {', '.join(sorted(unknown))} (see --list-bugs)")
    levels = tuple(level for level in args.levels.split(",") if level)
    if any(level not in LEVELS for level in levels) or len(set(levels)) != len(levels):
        p.error(f"--levels: a comma-separated subset of {', '.join(LEVELS)}")
    config = Config(
        levels=levels,
        integers=args.integers,
        reset=not args.no_reset,
        retries=args.retries,
        on_conflict=args.on_conflict,
        lost_write=args.lost_write,
        confirm_cut=args.confirm_cut,
        gave_up_report=args.gave_up_report,
        ckpt_conflict=args.ckpt_conflict,
        ckpt_lost=args.ckpt_lost,
        max_pages=args.max_pages,
    )
    return config, bugs


def main(argv: list[str] | None = None) -> None:
    global ACTIVE_BUGS
    config, ACTIVE_BUGS = parse_args(sys.argv[1:] if argv is None else argv)
    Worker(Wire(), config).serve()


if __name__ == "__main__":
    main()
