#!/usr/bin/env python3
"""A clean-room implementation of the fencepost conformance protocol, version 1.

Written from the documentation alone (docs/procedure.md, docs/semantics.md,
docs/conformance-protocol.md, docs/conformance.md); it imports nothing of fencepost
and needs only the Python 3.11 standard library. It implements all three levels:

* ``algebra``: ``compare`` and ``merge`` (docs/semantics.md sections 1, 2, 4, 8);
* ``checkpointer``: one ingest pass of a partition reader (section 3);
* ``publisher``: one publication attempt (sections 5 and 6).

The wire (framing, strict parsing, handshake, calls, error replies, ``reset``,
``shutdown``) is examples/wire/fencepost_wire.py; this file holds the decisions.

Run it under the harness::

    fencepost conform -- python3 examples/python-sut/fencepost_example.py

The deliberate bugs (``--bug NAME[,NAME]``, ``--list-bugs``) are not in this file:
bugs.py next to it is a table of named mutations, each replacing one function or
method of this file at start-up, so that the code here reads as the correct
implementation. See README.md in this folder for the flags and the bug list.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "wire"))
from fencepost_wire import Calls, Refuse, Sut, is_int
from fencepost_wire import ProtocolBreak as WireProtocolBreak

LEVELS = ("algebra", "checkpointer", "publisher")

# --------------------------------------------------------------------------------------
# Values (docs/conformance-protocol.md "Values"; docs/semantics.md sections 1-3)
# --------------------------------------------------------------------------------------


class BadValue(Refuse):
    """A malformed value, named by its field path (docs/semantics.md section 8:
    bad values are refused with an error, never withheld); the wire library answers
    it with an error carrying the request's id."""


class ProtocolBreak(WireProtocolBreak):
    """The harness sent something this program cannot continue the request with."""


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
    """`nothing`, the bottom cut, is None everywhere in this file."""
    return cut is None


def has_successor(order: Order) -> bool:
    """Only an integer order declared with an exact successor has one (section 1)."""
    return order.kind == "integer" and order.successor


def compare_coordinates(x: int | str, y: int | str) -> int:
    """Integers exactly (any size); strings by code point, as Python compares them."""
    return -1 if x < y else (1 if x > y else 0)  # type: ignore[operator]


#: A dense order ranks a cut by (coordinate, kind): before x < through x.
KIND_RANK = {"before": 0, "through": 1}


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
    if has_successor(order):
        # Exact successor: through x == before x+1 (section 2).
        assert isinstance(a.at, int) and isinstance(b.at, int)
        ka = a.at + 1 if a.kind == "through" else a.at
        kb = b.at + 1 if b.kind == "through" else b.at
        return compare_coordinates(ka, kb)
    # Dense order: compare coordinates, then the endpoint kind.
    by_coordinate = compare_coordinates(a.at, b.at)
    if by_coordinate != 0:
        return by_coordinate
    return sign(KIND_RANK[a.kind] - KIND_RANK[b.kind])


Vector = dict[str, Checkpoint]

#: Section 4's withheld reasons 1-4, in order, each checked across the whole vector.
REASONS: dict[str, Callable[[Membership, Vector], bool]] = {
    "missing_checkpoint": lambda m, vector: any(p not in vector for p in m.partitions),
    "epoch_mismatch": lambda m, vector: any(cp.epoch != m.epoch for cp in vector.values()),
    "scope_mismatch": lambda m, vector: any(cp.scope != m.scope for cp in vector.values()),
    "unsupported_finality": lambda m, vector: any(cp.finality != "final" for cp in vector.values()),
}


def member_vector(membership: Membership, checkpoints: list[Checkpoint]) -> Vector:
    """The members' checkpoints. Checkpoints of non-members are ignored (section 8);
    two checkpoints for one member are a bad value (section 8)."""
    vector: Vector = {}
    for i, cp in enumerate(checkpoints):
        if cp.partition not in membership.partitions:
            continue
        if cp.partition in vector:
            raise BadValue(f"checkpoints[{i}].partition", f"second checkpoint for {cp.partition}")
        if cp.cut is not None:
            check_at(membership.order_of(cp.partition), cp.cut, f"checkpoints[{i}].cut")
        vector[cp.partition] = cp
    return vector


def merge(membership: Membership, checkpoints: list[Checkpoint]) -> tuple[Cut | None, str | None]:
    """The merged frontier of section 4: (cut, None) or (None, withheld reason)."""
    vector = member_vector(membership, checkpoints)
    for reason, holds in REASONS.items():
        if holds(membership, vector):
            return None, reason
    order = membership.common_order()
    if len(set(membership.partitions.values())) > 1:
        return None, "incomparable"  # the caller keeps the vector (section 4, reason 5)
    if order is None or not vector:
        return None, "no_coverage"  # a membership with no partitions
    # The minimum over the whole vector, exactly as certified. Ties between
    # equivalent cuts go to the smaller coordinate (section 8, first row).
    cuts = [cp.cut for cp in vector.values()]
    lowest = cuts[0]
    for cut in cuts[1:]:
        c = compare(order, cut, lowest)
        if c < 0 or (c == 0 and cut is not None and lowest is not None and cut.at < lowest.at):  # type: ignore[operator]
            lowest = cut
    if lowest is None:
        return None, "no_coverage"
    return lowest, None


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
    """One request in progress: its calls (through the wire library) and its trouble."""

    def __init__(self, calls: Calls, config: Config) -> None:
        self.calls = calls
        self.config = config
        self.trouble = 0  # conflicts and lost responses met so far

    def call(self, op: str, **fields: Any) -> dict[str, Any]:
        """One call; returns the harness's reply (docs/conformance-protocol.md)."""
        return self.calls.call(op, **fields)

    def spend(self) -> bool:
        """Count one conflict or lost response; True once the retry budget is spent."""
        self.trouble += 1
        return self.trouble > self.config.retries

    def out_of_budget(self) -> Finished:
        raise NotImplementedError

    def read(self, op: str, **fields: Any) -> dict[str, Any]:
        """A read, asked again after each lost response until the budget is spent."""
        while True:
            reply = self.call(op, **fields)
            if reply["ok"]:
                return reply
            reply_error(reply)
            if self.spend():
                raise self.out_of_budget()


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


#: Section 6: does the cutover policy keep the record monotone across epochs?
MONOTONE = {"monotone": True, "reset": False}


def fenced(record: Record, membership: Membership) -> bool:
    """The fence: a membership older than the record's epoch never publishes."""
    return membership.epoch < record.epoch


def decide(
    policy: str, record: Record, membership: Membership, checkpoints: list[Checkpoint]
) -> Decision:
    """Sections 5 and 6 on one view (record, membership, checkpoints)."""
    if fenced(record, membership):
        return Decision("withheld", "epoch_mismatch")  # never go back
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
    if MONOTONE[policy] and compare(order, cut, record.cut) < 0:
        return Decision("withheld", "cutover_pending")
    return Decision("write", proposal=proposal)


class Attempt(Session):
    """One `publish` request."""

    def __init__(self, worker: Worker, request: dict[str, Any], calls: Calls) -> None:
        super().__init__(calls, worker.config)
        self.worker = worker
        self.request_id: int = request["id"]
        self.stream: str = request["stream"]
        self.policy: str = request["policy"]
        self.name: str = request["worker"]
        self.first_record: Record | None = None
        self.record: Record | None = None  # the latest record this attempt was shown

    # -- the final answers ------------------------------------------------------------

    def answer(
        self, outcome: str, epoch: int | None, cut: Cut | None, reason: str | None = None
    ) -> Finished:
        return Finished(
            {"outcome": outcome, "epoch": epoch, "cut": cut_wire(cut), "reason": reason}
        )

    def from_record(self, outcome: str, reason: str | None = None) -> Finished:
        """unchanged / withheld carry the latest record shown (docs/conformance.md)."""
        assert self.record is not None
        return self.answer(outcome, self.record.epoch, self.record.cut, reason)

    def gave_up(self) -> Finished:
        """Retry budget spent: report only a record this attempt was shown, or null."""
        shown = {"latest": self.record, "first": self.first_record, "null": None}[
            self.config.gave_up_report
        ]
        if shown is None:
            return self.answer("gave_up", None, None)
        return self.answer("gave_up", shown.epoch, shown.cut)

    def out_of_budget(self) -> Finished:
        return self.gave_up()

    # -- reads, each retried on a lost response within the budget --------------------

    def show(self, record: Record) -> Record:
        """Every record shown counts as a read of the record (conformance-protocol.md)."""
        if self.first_record is None:
            self.first_record = record
        self.record = record
        return record

    def read_record(self) -> Record:
        reply = self.read("read_publication", stream=self.stream)
        return self.show(parse_record(reply.get("record"), "reply.record"))

    def read_membership(self) -> Membership:
        reply = self.read("read_membership", stream=self.stream)
        return parse_membership(reply.get("membership"), "reply.membership")

    def read_checkpoints(self, epoch: int) -> list[Checkpoint]:
        reply = self.read("read_checkpoints", stream=self.stream, epoch=epoch)
        raw = reply.get("checkpoints")
        if not isinstance(raw, list):
            raise BadValue("reply.checkpoints", "must be a list")
        return [parse_checkpoint(c, f"reply.checkpoints[{i}]") for i, c in enumerate(raw)]

    def write(self, proposal: Proposal, expected_revision: int, op_id: str) -> dict[str, Any]:
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
        while True:
            # Section 5: read the record (done), the current membership, the
            # checkpoints of that membership's epoch; merge; decide.
            membership = self.read_membership()
            checkpoints = self.read_checkpoints(membership.epoch)
            decision = decide(self.policy, record, membership, checkpoints)
            if decision.outcome != "write":
                raise self.from_record(decision.outcome, decision.reason)
            proposal = decision.proposal
            assert proposal is not None

            reply = self.write(proposal, record.revision, op_id)
            if reply["ok"]:
                # An acknowledged write: the only ground for `published`.
                self.show(parse_record(reply.get("record"), "reply.record"))
                raise self.answer("published", proposal.epoch, proposal.cut)
            if reply_error(reply) == "conflict":
                carried = self.show(parse_record(reply.get("record"), "reply.record"))
                record = self.after_conflict(proposal, record, carried, op_id)
            else:
                # The response was lost: the write may or may not have been applied.
                record = self.settle_lost_write(proposal, record, op_id)

    def claimed(self, proposal: Proposal, record: Record) -> bool:
        """The record already claims at least the proposal: same epoch, at or past it."""
        return record.epoch == proposal.epoch and (
            compare(proposal.order, record.cut, proposal.cut) >= 0
        )

    def after_conflict(
        self, proposal: Proposal, before: Record, carried: Record, op_id: str
    ) -> Record:
        """The revision moved: never reuse the old cut; return the record to recompute
        from (section 5), the one the conflict carried or a fresh read."""
        if self.spend():
            raise self.gave_up()
        if self.config.on_conflict == "shortcut" and self.claimed(proposal, carried):
            raise self.from_record("unchanged")
        return self.read_record() if self.config.on_conflict == "reread" else carried

    def settle_lost_write(self, proposal: Proposal, record: Record, op_id: str) -> Record:
        """Section 5, indeterminate: read the authoritative record (or write the same
        again, whose conflict carries it). Same epoch and at or past the proposal:
        confirmed. Behind, or another epoch: return the record to recompute from
        (the caller rereads the membership, so a new epoch goes through the cutover
        rule of section 6). Never conclude anything from the lost response alone."""
        while True:
            if self.spend():
                raise self.gave_up()
            if self.config.lost_write == "rewrite":
                reply = self.write(proposal, record.revision, op_id)
                if reply["ok"]:
                    self.show(parse_record(reply.get("record"), "reply.record"))
                    raise self.answer("published", proposal.epoch, proposal.cut)
                if reply_error(reply) == "timeout":
                    continue
                current = self.show(parse_record(reply.get("record"), "reply.record"))
            else:
                current = self.read_record()
            if self.confirms(proposal, record, current):
                # The claim is present, whoever wrote it (only op_id proves who).
                if self.config.confirm_cut == "unchanged":
                    raise self.from_record("unchanged")
                cut = current.cut if self.config.confirm_cut == "record" else proposal.cut
                raise self.answer("confirmed", proposal.epoch, cut)
            # Behind or another epoch: recompute from current durable checkpoints.
            return current

    def confirms(self, proposal: Proposal, before: Record, current: Record) -> bool:
        """After a lost write, only the claim itself confirms it (not a moved revision)."""
        return self.claimed(proposal, current)


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

    def __init__(self, worker: Worker, request: dict[str, Any], order: Order, calls: Calls):
        super().__init__(calls, worker.config)
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
        return Finished({"cut": cut_wire(cut)})

    def out_of_budget(self) -> Finished:
        return self.finish()

    def run(self) -> dict[str, Any]:
        try:
            self.ingest()
        except Finished as done:
            return done.answer
        raise AssertionError("a pass always finishes")

    def read_checkpoint(self) -> Checkpoint | None:
        raw = self.read("read_checkpoint", partition=self.partition).get("checkpoint")
        return None if raw is None else parse_checkpoint(raw, "reply.checkpoint")

    def fetch(self, token: str | None) -> Page:
        reply = self.read("fetch_page", partition=self.partition, token=token)
        return parse_page(reply.get("page"), self.order)

    def record_outcomes(self, page: Page) -> None:
        """Section 3: every enumerated event gets a durable terminal outcome, keyed by
        event id (pages overlap: recording again is harmless, the first one wins)."""
        for event_id, _ in page.events:
            if event_id not in self.recorded:
                self.read("record_outcome", event_id=event_id, outcome="processed")
                self.recorded.add(event_id)

    def covers(self, cut: Cut, at: int | str) -> bool:
        return compare(self.order, Cut(at, "through"), cut) <= 0

    def trusted(self, cp: Checkpoint | None) -> bool:
        """Resume from a stored token only if it was issued for this partition and
        epoch (docs/conformance.md: any other token is `opaque_token`)."""
        if cp is None:
            return False
        return (cp.partition, cp.epoch, cp.scope) == (self.partition, self.epoch, self.scope)

    def ahead(self, cut: Cut) -> bool:
        """A new checkpoint must be strictly ahead of the stored one (never regress)."""
        return self.known is None or compare(self.order, cut, self.known.cut) > 0

    def certifiable(self, page: Page) -> Cut | None:
        """The cut this page lets us certify: only a final claim (section 3); never
        the greatest event observed, never a manufactured successor."""
        if page.claim is None or not page.final:
            return None
        return page.claim

    def ingest(self) -> NoReturn:
        self.known = self.read_checkpoint()
        token = self.known.token if self.known is not None and self.trusted(self.known) else None
        for _ in range(self.config.max_pages):
            page = self.fetch(token)
            # Resume next time after this page, or at it again when it was the last
            # page for now (next_token null: the same token is fetched again).
            self.take(page, page.next_token if page.next_token is not None else token)
            if page.next_token is None:
                break
            token = page.next_token
        raise self.finish()

    def take(self, page: Page, resume: str | None) -> None:
        """One page: record every outcome first, then certify what its claim allows."""
        cut = self.certifiable(page)
        self.record_outcomes(page)
        if cut is not None and self.ahead(cut):
            self.write(cut, resume)

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
            if reply_error(reply) == "timeout":
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
# The process: one worker, its handlers on the wire library
# --------------------------------------------------------------------------------------


class Worker:
    """One process = one worker (docs/conformance-protocol.md "Processes")."""

    def __init__(self, config: Config) -> None:
        self.config = config
        self.forget()

    def forget(self) -> None:
        """Everything held in memory; `reset` must clear all of it."""
        self.attempts = 0  # publication attempts: op_ids are "<worker>-<n>"

    def next_op_id(self, worker: str) -> str:
        self.attempts += 1
        return f"{worker}-{self.attempts}"

    def compare(self, message: dict[str, Any], calls: Calls) -> dict[str, Any]:
        order = parse_order(message["order"], "compare.order")
        a = parse_cut(message["a"], "compare.a", order)
        b = parse_cut(message["b"], "compare.b", order)
        return {"result": compare(order, a, b)}

    def merge(self, message: dict[str, Any], calls: Calls) -> dict[str, Any]:
        membership = parse_membership(message["membership"], "merge.membership")
        raw = message["checkpoints"]
        if not isinstance(raw, list):
            raise BadValue("merge.checkpoints", "must be a list")
        checkpoints = [parse_checkpoint(c, f"merge.checkpoints[{i}]") for i, c in enumerate(raw)]
        cut, reason = merge(membership, checkpoints)
        if reason is not None:
            return {"withheld": reason}
        return {"frontier": cut_wire(cut)}

    def publish(self, message: dict[str, Any], calls: Calls) -> dict[str, Any]:
        need_str(message["worker"], "publish.worker")
        need_str(message["stream"], "publish.stream")
        if message["policy"] not in MONOTONE:
            raise BadValue("publish.policy", f"unknown policy {message['policy']!r}")
        return Attempt(self, message, calls).run()

    def ingest(self, message: dict[str, Any], calls: Calls) -> dict[str, Any]:
        need_str(message["worker"], "ingest.worker")
        need_str(message["partition"], "ingest.partition")
        need_str(message["scope"], "ingest.scope")
        need_int(message["epoch"], "ingest.epoch")
        order = parse_order(message["order"], "ingest.order")
        return IngestPass(self, message, order, calls).run()

    def sut(self, name: str) -> Sut:
        """The wire library's process, with a handler per request kind declared."""
        config = self.config
        sut = Sut(
            name,
            levels=list(config.levels),
            integers=config.integers,
            on_reset=(lambda: self.forget()) if config.reset else None,
        )
        handlers = {
            "algebra": {"compare": self.compare, "merge": self.merge},
            "checkpointer": {"ingest": self.ingest},
            "publisher": {"publish": self.publish},
        }
        for level in config.levels:
            for kind, handle in handlers[level].items():
                sut.handler(kind)(handle)
        return sut


# --------------------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------------------


def parse_args(argv: list[str]) -> tuple[Config, list[str]]:
    import bugs  # the table of deliberate bugs, next to this file

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
        for name, entry in bugs.BUGS.items():
            print(f"{name:28} {entry.level:13} {entry.rule:34} {entry.what}")
        sys.exit(0)
    active = [b for b in args.bug.split(",") if b]
    unknown = set(active) - bugs.BUGS.keys()
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
    return config, active


def main(argv: list[str] | None = None) -> None:
    config, active = parse_args(sys.argv[1:] if argv is None else argv)
    name = "fencepost-python-example"
    if active:
        import bugs

        bugs.apply(active, sys.modules[__name__])
        name += " +" + ",".join(sorted(active))
    Worker(config).sut(name).run()


if __name__ == "__main__":
    main()
