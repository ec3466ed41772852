"""The wire as fencepost's own SUT reads and writes it (docs/conformance-protocol.md).

This is the *judged* side: it parses the harness's requests and replies into the
implementation's values with :mod:`fencepost.impl.codec`, and frames the SUT's
answers. The harness reads the SUT's messages with its own, independent module
(:mod:`fencepost.harness.protocol`, on the judge's values), so a mistake in one
reading of the wire is caught by the other instead of being shared.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

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

#: The protocol version this SUT speaks.
PROTOCOL_VERSION = 1

#: The longest line the SUT accepts (bytes, newline excluded).
MAX_LINE_BYTES = 1 << 20

POLICIES: tuple[str, ...] = ("monotone", "reset")

T = TypeVar("T")

WireId = int | str
JSONObject = dict[str, Any]


class LineIO(Protocol):
    """The SUT side of a connection: read the harness's lines, write the SUT's."""

    def read_line(self) -> str | None:
        """The next line without its newline; None at end of input."""
        ...

    def write_line(self, line: str) -> None: ...


class MessageError(ValueError):
    """A line that is not a well-formed message of this protocol.

    ``field`` is the dotted path of the offending place (``call.expected_revision``)
    and ``problem`` says what is wrong and what was expected.
    """

    def __init__(self, field: str, problem: str) -> None:
        self.field = field
        self.problem = problem
        super().__init__(f"{field}: {problem}")


# --- JSON text ------------------------------------------------------------------------


def _no_constants(name: str) -> object:
    raise MessageError("line", f"{name} is not JSON; numbers must be finite")


def _no_duplicates(pairs: list[tuple[str, object]]) -> dict[str, object]:
    obj: dict[str, object] = {}
    for key, value in pairs:
        if key in obj:
            raise MessageError(f"line.{key}", "duplicate key; each field appears once")
        obj[key] = value
    return obj


def decode_line(line: str) -> JSONObject:
    """One line of JSON text as an object; NaN, Infinity and duplicate keys are refused."""
    if len(line.encode("utf-8", "surrogatepass")) > MAX_LINE_BYTES:
        raise MessageError("line", f"longer than {MAX_LINE_BYTES} bytes")
    try:
        value = json.loads(line, parse_constant=_no_constants, object_pairs_hook=_no_duplicates)
    except MessageError:
        raise
    except (ValueError, RecursionError) as exc:
        shown = line if len(line) <= 60 else line[:57] + "..."
        raise MessageError("line", f"not JSON ({exc}): {shown!r}") from None
    if not isinstance(value, dict):
        raise MessageError("line", f"a message is a JSON object, got {type(value).__name__}")
    return value


def encode(message: Mapping[str, object]) -> str:
    """The message as one line of compact JSON text (no trailing newline)."""
    return json.dumps(message, separators=(",", ":"), ensure_ascii=False)


# --- field helpers ----------------------------------------------------------------------


def _fields(
    msg: Mapping[str, object], where: str, required: Sequence[str], optional: Sequence[str] = ()
) -> None:
    for key in msg:
        if key not in required and key not in optional:
            allowed = ", ".join(sorted({*required, *optional}))
            raise MessageError(f"{where}.{key}", f"unknown field; {where} has: {allowed}")
    for key in required:
        if key not in msg:
            raise MessageError(f"{where}.{key}", "missing required field")


def _int(value: object, field: str, *, minimum: int | None = None) -> int:
    if type(value) is not int:
        kind = "a bool" if isinstance(value, bool) else type(value).__name__
        raise MessageError(field, f"an integer is required, got {kind} {value!r}")
    if minimum is not None and value < minimum:
        raise MessageError(field, f"must be at least {minimum}, got {value}")
    return value


def _opt_int(value: object, field: str, *, minimum: int | None = None) -> int | None:
    return None if value is None else _int(value, field, minimum=minimum)


def _str(value: object, field: str, *, empty: bool = False) -> str:
    if type(value) is not str:
        raise MessageError(field, f"a string is required, got {type(value).__name__} {value!r}")
    if not empty and not value:
        raise MessageError(field, "a non-empty string is required")
    return value


def _opt_str(value: object, field: str) -> str | None:
    return None if value is None else _str(value, field, empty=True)


def _wire_id(value: object, field: str) -> WireId:
    if type(value) is int or type(value) is str:
        return value
    raise MessageError(field, f"an id is an integer or a string, got {type(value).__name__}")


def _choice(value: object, field: str, allowed: Sequence[str]) -> str:
    if type(value) is not str or value not in allowed:
        raise MessageError(field, f"one of {', '.join(allowed)} is required, got {value!r}")
    return value


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
        _fields(msg, "hello", ("type", "protocol"))
        return Hello(_int(msg["protocol"], "hello.protocol"))
    if kind == "shutdown":
        _fields(msg, "shutdown", ("type",))
        return Shutdown()
    if kind == "reset":
        _fields(msg, "reset", ("type",))
        return Reset()
    if kind == "compare":
        _fields(msg, "compare", ("type", "id", "order", "a", "b"))
        order = parse_order(msg["order"], "compare.order")
        return CompareRequest(
            _wire_id(msg["id"], "compare.id"),
            order,
            parse_cut(msg["a"], "compare.a", order),
            parse_cut(msg["b"], "compare.b", order),
        )
    if kind == "merge":
        _fields(msg, "merge", ("type", "id", "membership", "checkpoints"))
        membership = parse_membership(msg["membership"], "merge.membership")
        raw = msg["checkpoints"]
        if not isinstance(raw, list):
            raise MessageError("merge.checkpoints", "a list of checkpoints is required")
        checkpoints = tuple(
            parse_checkpoint(c, f"merge.checkpoints[{i}]") for i, c in enumerate(raw)
        )
        return MergeRequest(_wire_id(msg["id"], "merge.id"), membership, checkpoints)
    if kind == "publish":
        _fields(msg, "publish", ("type", "id", "worker", "stream", "policy"))
        return PublishRequest(
            _wire_id(msg["id"], "publish.id"),
            _str(msg["worker"], "publish.worker"),
            _str(msg["stream"], "publish.stream"),
            _choice(msg["policy"], "publish.policy", POLICIES),
        )
    if kind == "ingest":
        _fields(msg, "ingest", ("type", "id", "worker", "partition", "scope", "epoch", "order"))
        return IngestRequest(
            _wire_id(msg["id"], "ingest.id"),
            _str(msg["worker"], "ingest.worker"),
            _str(msg["partition"], "ingest.partition"),
            _str(msg["scope"], "ingest.scope"),
            _int(msg["epoch"], "ingest.epoch", minimum=0),
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
    _fields(data, field, ("events", "next_token", "claim"))
    raw_events = data["events"]
    if not isinstance(raw_events, list):
        raise MessageError(f"{field}.events", "a list of events is required")
    events: list[Event] = []
    for i, raw in enumerate(raw_events):
        where = f"{field}.events[{i}]"
        if not isinstance(raw, dict):
            raise MessageError(where, "an event is a JSON object with id and at")
        _fields(raw, where, ("id", "at"))
        at = raw["at"]
        if order is not None:
            try:
                at = order.validate(at, f"{where}.at")
            except InvalidValue as exc:
                raise MessageError(exc.field, exc.problem) from None
        elif type(at) not in (int, str):
            raise MessageError(f"{where}.at", "a position is an integer or a string")
        events.append(Event(_str(raw["id"], f"{where}.id"), at))
    claim_raw = data["claim"]
    claim: Claim | None = None
    if claim_raw is not None:
        if not isinstance(claim_raw, dict):
            raise MessageError(f"{field}.claim", "a claim is a JSON object or null")
        _fields(claim_raw, f"{field}.claim", ("cut", "final"))
        final = claim_raw["final"]
        if type(final) is not bool:
            raise MessageError(f"{field}.claim.final", "true or false is required")
        claim = Claim(parse_cut(claim_raw["cut"], f"{field}.claim.cut", order), final)
    return Page(tuple(events), _opt_str(data["next_token"], f"{field}.next_token"), claim)


def parse_reply(msg: JSONObject, call_id: WireId, op: str, order: Order | None = None) -> Reply:
    """Parse the harness's reply to the SUT's call ``call_id`` (the SUT side of the wire)."""
    where = f"reply({op})"
    if msg.get("type") != "reply":
        raise MessageError("type", f"a reply to call {call_id!r} was expected, got {msg!r}")
    if msg.get("call_id") != call_id:
        raise MessageError(f"{where}.call_id", f"expected {call_id!r}, got {msg.get('call_id')!r}")
    ok = msg.get("ok")
    if ok is False:
        error = _choice(msg.get("error"), f"{where}.error", ("timeout", "conflict"))
        if error == "timeout":
            _fields(msg, where, ("type", "call_id", "ok", "error"))
            return ReplyTimeout()
        if op == "write_publication":
            _fields(msg, where, ("type", "call_id", "ok", "error", "record"))
            return ReplyConflict(parse_record(msg["record"], f"{where}.record"))
        if op == "write_checkpoint":
            _fields(msg, where, ("type", "call_id", "ok", "error", "checkpoint"))
            raw = msg["checkpoint"]
            current = None if raw is None else parse_checkpoint(raw, f"{where}.checkpoint", order)
            return ReplyConflict(current)
        raise MessageError(f"{where}.error", f"{op} cannot conflict; only writes can")
    if ok is not True:
        raise MessageError(f"{where}.ok", "true or false is required")
    if op in ("read_publication", "write_publication"):
        _fields(msg, where, ("type", "call_id", "ok", "record"))
        return ReplyOk(parse_record(msg["record"], f"{where}.record"))
    if op == "read_membership":
        _fields(msg, where, ("type", "call_id", "ok", "membership"))
        return ReplyOk(parse_membership(msg["membership"], f"{where}.membership"))
    if op == "read_checkpoints":
        _fields(msg, where, ("type", "call_id", "ok", "checkpoints"))
        raw_list = msg["checkpoints"]
        if not isinstance(raw_list, list):
            raise MessageError(f"{where}.checkpoints", "a list of checkpoints is required")
        return ReplyOk(
            tuple(parse_checkpoint(c, f"{where}.checkpoints[{i}]") for i, c in enumerate(raw_list))
        )
    if op in ("read_checkpoint", "write_checkpoint"):
        _fields(msg, where, ("type", "call_id", "ok", "checkpoint"))
        raw = msg["checkpoint"]
        return ReplyOk(None if raw is None else parse_checkpoint(raw, f"{where}.checkpoint", order))
    if op == "fetch_page":
        _fields(msg, where, ("type", "call_id", "ok", "page"))
        return ReplyOk(parse_page(msg["page"], f"{where}.page", order))
    if op == "record_outcome":
        _fields(msg, where, ("type", "call_id", "ok"))
        return ReplyOk(None)
    raise MessageError(f"{where}.op", f"unknown op {op!r}")
