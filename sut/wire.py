"""The wire as fencepost's own SUT reads and writes it (docs/conformance-protocol.md).

This is the *judged* side: it parses the harness's requests and replies into the
implementation's values with :mod:`fencepost.impl.codec`, and frames the SUT's
answers. The harness reads the SUT's messages with its own, independent module
(:mod:`fencepost.harness.protocol`, on the judge's values), so a mistake in one
reading of the wire is caught by the other instead of being shared.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TypeVar

from fencepost.impl.codec import (
    checkpoint_from_json,
    checkpoint_to_json,
    cut_from_json,
    membership_from_json,
    record_from_json,
)
from fencepost.impl.cuts import Cut
from fencepost.impl.errors import InvalidValue
from fencepost.impl.orders import Order, order_from_json
from fencepost.impl.provider import Claim, Event, Page
from fencepost.impl.records import Checkpoint, Membership, PublicationRecord
from fencepost.inputs.jsonlines import (
    JSONObject,
    MessageError,
    WireId,
    choice,
    fields,
    integer,
    opt_text,
    text,
    wire_id,
)

#: The protocol version this SUT speaks.
PROTOCOL_VERSION = 1


POLICIES: tuple[str, ...] = ("monotone", "reset")

T = TypeVar("T")


def _value(parse: Callable[[object, str], T], data: object, field: str) -> T:
    """Run a codec parser, turning its InvalidValue into a MessageError at ``field``."""
    try:
        return parse(data, field)
    except InvalidValue as exc:
        raise MessageError(exc.field, f"{exc.problem} (got {exc.value!r})") from None


def parse_cut(data: object, field: str, order: Order | None = None) -> Cut:
    """A cut of the wire (``null`` is nothing), validated against ``order`` when given."""
    try:
        return cut_from_json(data, field, order)
    except InvalidValue as exc:
        raise MessageError(exc.field, f"{exc.problem} (got {exc.value!r})") from None


def parse_checkpoint(data: object, field: str, order: Order | None = None) -> Checkpoint:
    try:
        return checkpoint_from_json(data, field, order)
    except InvalidValue as exc:
        raise MessageError(exc.field, f"{exc.problem} (got {exc.value!r})") from None


def parse_record(data: object, field: str) -> PublicationRecord:
    return _value(record_from_json, data, field)


def parse_membership(data: object, field: str) -> Membership:
    return _value(membership_from_json, data, field)


def parse_order(data: object, field: str) -> Order:
    return _value(order_from_json, data, field)


def checkpoint_json(checkpoint: Checkpoint | None) -> object:
    return None if checkpoint is None else checkpoint_to_json(checkpoint)


# --- messages the harness sends, as the SUT reads them --------------------------------------


@dataclass(frozen=True, slots=True)
class Hello:
    protocol: int


@dataclass(frozen=True, slots=True)
class Shutdown:
    pass


@dataclass(frozen=True, slots=True)
class Reset:
    """Forget everything held in memory; answer ``reset_ok`` (capability ``reset``)."""


@dataclass(frozen=True, slots=True)
class CompareRequest:
    id: WireId
    order: Order
    a: Cut
    b: Cut


@dataclass(frozen=True, slots=True)
class MergeRequest:
    id: WireId
    membership: Membership
    checkpoints: tuple[Checkpoint, ...]


@dataclass(frozen=True, slots=True)
class PublishRequest:
    id: WireId
    worker: str
    stream: str
    policy: str


@dataclass(frozen=True, slots=True)
class IngestRequest:
    id: WireId
    worker: str
    partition: str
    scope: str
    epoch: int
    order: Order


HarnessRequest = (
    Hello | Shutdown | Reset | CompareRequest | MergeRequest | PublishRequest | IngestRequest
)


def request_id_of(msg: Mapping[str, object]) -> WireId | None:
    """The ``id`` of a request that could not be parsed, when it has a usable one."""
    raw = msg.get("id")
    return raw if type(raw) is int or type(raw) is str else None


def parse_harness_message(msg: JSONObject) -> HarnessRequest:
    """Parse a decoded request from the harness (the SUT side of the wire)."""
    kind = msg.get("type")
    if kind == "hello":
        fields(msg, "hello", ("type", "protocol"))
        return Hello(integer(msg["protocol"], "hello.protocol"))
    if kind == "shutdown":
        fields(msg, "shutdown", ("type",))
        return Shutdown()
    if kind == "reset":
        fields(msg, "reset", ("type",))
        return Reset()
    if kind == "compare":
        fields(msg, "compare", ("type", "id", "order", "a", "b"))
        order = parse_order(msg["order"], "compare.order")
        return CompareRequest(
            wire_id(msg["id"], "compare.id"),
            order,
            parse_cut(msg["a"], "compare.a", order),
            parse_cut(msg["b"], "compare.b", order),
        )
    if kind == "merge":
        fields(msg, "merge", ("type", "id", "membership", "checkpoints"))
        membership = parse_membership(msg["membership"], "merge.membership")
        raw = msg["checkpoints"]
        if not isinstance(raw, list):
            raise MessageError("merge.checkpoints", "a list of checkpoints is required")
        checkpoints = tuple(
            parse_checkpoint(c, f"merge.checkpoints[{i}]") for i, c in enumerate(raw)
        )
        return MergeRequest(wire_id(msg["id"], "merge.id"), membership, checkpoints)
    if kind == "publish":
        fields(msg, "publish", ("type", "id", "worker", "stream", "policy"))
        return PublishRequest(
            wire_id(msg["id"], "publish.id"),
            text(msg["worker"], "publish.worker"),
            text(msg["stream"], "publish.stream"),
            choice(msg["policy"], "publish.policy", POLICIES),
        )
    if kind == "ingest":
        fields(msg, "ingest", ("type", "id", "worker", "partition", "scope", "epoch", "order"))
        return IngestRequest(
            wire_id(msg["id"], "ingest.id"),
            text(msg["worker"], "ingest.worker"),
            text(msg["partition"], "ingest.partition"),
            text(msg["scope"], "ingest.scope"),
            integer(msg["epoch"], "ingest.epoch", minimum=0),
            parse_order(msg["order"], "ingest.order"),
        )
    raise MessageError("type", f"unknown request type {kind!r}")


@dataclass(frozen=True, slots=True)
class ReplyOk:
    """A successful reply: ``value`` is the parsed record, membership, checkpoints, page."""

    value: object


@dataclass(frozen=True, slots=True)
class ReplyConflict:
    """A conditional write lost; ``current`` is the stored record or checkpoint."""

    current: PublicationRecord | Checkpoint | None


@dataclass(frozen=True, slots=True)
class ReplyTimeout:
    """The response was lost."""


Reply = ReplyOk | ReplyConflict | ReplyTimeout


def parse_page(data: object, field: str, order: Order | None) -> Page:
    if not isinstance(data, dict):
        raise MessageError(field, "a page is a JSON object")
    fields(data, field, ("events", "next_token", "claim"))
    raw_events = data["events"]
    if not isinstance(raw_events, list):
        raise MessageError(f"{field}.events", "a list of events is required")
    events: list[Event] = []
    for i, raw in enumerate(raw_events):
        where = f"{field}.events[{i}]"
        if not isinstance(raw, dict):
            raise MessageError(where, "an event is a JSON object with id and at")
        fields(raw, where, ("id", "at"))
        at = raw["at"]
        if order is not None:
            try:
                at = order.validate(at, f"{where}.at")
            except InvalidValue as exc:
                raise MessageError(exc.field, exc.problem) from None
        elif type(at) not in (int, str):
            raise MessageError(f"{where}.at", "a position is an integer or a string")
        events.append(Event(text(raw["id"], f"{where}.id"), at))
    claim_raw = data["claim"]
    claim: Claim | None = None
    if claim_raw is not None:
        if not isinstance(claim_raw, dict):
            raise MessageError(f"{field}.claim", "a claim is a JSON object or null")
        fields(claim_raw, f"{field}.claim", ("cut", "final"))
        final = claim_raw["final"]
        if type(final) is not bool:
            raise MessageError(f"{field}.claim.final", "true or false is required")
        claim = Claim(parse_cut(claim_raw["cut"], f"{field}.claim.cut", order), final)
    return Page(tuple(events), opt_text(data["next_token"], f"{field}.next_token"), claim)


def parse_reply(msg: JSONObject, call_id: WireId, op: str, order: Order | None = None) -> Reply:
    """Parse the harness's reply to the SUT's call ``call_id`` (the SUT side of the wire)."""
    where = f"reply({op})"
    if msg.get("type") != "reply":
        raise MessageError("type", f"a reply to call {call_id!r} was expected, got {msg!r}")
    if msg.get("call_id") != call_id:
        raise MessageError(f"{where}.call_id", f"expected {call_id!r}, got {msg.get('call_id')!r}")
    ok = msg.get("ok")
    if ok is False:
        error = choice(msg.get("error"), f"{where}.error", ("timeout", "conflict"))
        if error == "timeout":
            fields(msg, where, ("type", "call_id", "ok", "error"))
            return ReplyTimeout()
        if op == "write_publication":
            fields(msg, where, ("type", "call_id", "ok", "error", "record"))
            return ReplyConflict(parse_record(msg["record"], f"{where}.record"))
        if op == "write_checkpoint":
            fields(msg, where, ("type", "call_id", "ok", "error", "checkpoint"))
            raw = msg["checkpoint"]
            current = None if raw is None else parse_checkpoint(raw, f"{where}.checkpoint", order)
            return ReplyConflict(current)
        raise MessageError(f"{where}.error", f"{op} cannot conflict; only writes can")
    if ok is not True:
        raise MessageError(f"{where}.ok", "true or false is required")
    if op in ("read_publication", "write_publication"):
        fields(msg, where, ("type", "call_id", "ok", "record"))
        return ReplyOk(parse_record(msg["record"], f"{where}.record"))
    if op == "read_membership":
        fields(msg, where, ("type", "call_id", "ok", "membership"))
        return ReplyOk(parse_membership(msg["membership"], f"{where}.membership"))
    if op == "read_checkpoints":
        fields(msg, where, ("type", "call_id", "ok", "checkpoints"))
        raw_list = msg["checkpoints"]
        if not isinstance(raw_list, list):
            raise MessageError(f"{where}.checkpoints", "a list of checkpoints is required")
        return ReplyOk(
            tuple(parse_checkpoint(c, f"{where}.checkpoints[{i}]") for i, c in enumerate(raw_list))
        )
    if op in ("read_checkpoint", "write_checkpoint"):
        fields(msg, where, ("type", "call_id", "ok", "checkpoint"))
        raw = msg["checkpoint"]
        return ReplyOk(None if raw is None else parse_checkpoint(raw, f"{where}.checkpoint", order))
    if op == "fetch_page":
        fields(msg, where, ("type", "call_id", "ok", "page"))
        return ReplyOk(parse_page(msg["page"], f"{where}.page", order))
    if op == "record_outcome":
        fields(msg, where, ("type", "call_id", "ok"))
        return ReplyOk(None)
    raise MessageError(f"{where}.op", f"unknown op {op!r}")
