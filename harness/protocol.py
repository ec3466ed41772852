"""The conformance protocol's messages, version 1 (docs/conformance-protocol.md).

One JSON object per line, UTF-8, ``\\n``-ended. This module is the one place
that knows the shape of every message, in both directions, so the harness and
fencepost's own SUT adapter read the wire the same way:

- messages the *SUT* sends (``hello_ok``, ``call``, ``publish_ok``,
  ``ingest_ok``, ``compare_ok``, ``merge_ok``, ``error``) are parsed strictly by
  :func:`parse_sut_message`: an unknown field, a missing field, a bool posing as
  an integer, a float posing as a coordinate, or an unknown op is a
  :class:`MessageError` naming the exact field (``publish_ok.cut.kind``);
- messages the *harness* sends (``hello``, ``shutdown``, the requests and the
  replies) are built by the ``*_message`` functions and parsed, equally
  strictly, by :func:`parse_harness_message` and :func:`parse_reply`.

Values (orders, cuts, memberships, checkpoints, records) use
:mod:`fencepost.judge.wire`, the judge's strict reading of the values' wire forms.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

from fencepost.inputs.jsonlines import (
    JSONObject,
    MessageError,
    WireId,
    choice,
    decode_line,
    fields,
    integer,
    opt_integer,
    opt_text,
    text,
    wire_id,
)
from fencepost.judge.merge import WithheldReason
from fencepost.judge.values import (
    BadValue,
    Checkpoint,
    Cut,
    Membership,
    Order,
    Page,
    Record,
)
from fencepost.judge.wire import (
    checkpoint_from_json,
    checkpoint_to_json,
    cut_from_json,
    cut_to_json,
    membership_from_json,
    membership_to_json,
    order_from_json,
    record_from_json,
    record_to_json,
)
from fencepost.vocabulary.conformance import DECLARABLE_LEVELS
from fencepost.vocabulary.conformance import LEVELS as LEVELS
from fencepost.vocabulary.conformance import SYNC_LEVEL as SYNC_LEVEL
from fencepost.vocabulary.outcomes import OUTCOMES as ATTEMPT_OUTCOMES

#: The protocol version this module speaks.
PROTOCOL_VERSION = 1

# The levels of docs/conformance-protocol.md, in the order the harness tests them
# (LEVELS); the level of an incremental-sync tool, tested only in the late-commit world
# (SYNC_LEVEL; ``fencepost.harness.worlds``); every level a ``hello_ok`` may declare
# (DECLARABLE_LEVELS): the vocabulary's (``fencepost.vocabulary.conformance``).

PUBLISHER_OPS: tuple[str, ...] = (
    "read_publication",
    "read_membership",
    "read_checkpoints",
    "write_publication",
)
CHECKPOINTER_OPS: tuple[str, ...] = (
    "read_checkpoint",
    "fetch_page",
    "record_outcome",
    "write_checkpoint",
)
WRITE_OPS: frozenset[str] = frozenset({"write_publication", "write_checkpoint", "record_outcome"})
SYNC_OPS: tuple[str, ...] = ("read_state", "list_partitions", "query", "commit")
#: How a sync ends, and the delivery a sync tool may declare in ``hello_ok``.
SYNC_OUTCOMES: tuple[str, ...] = ("completed", "failed")
DELIVERIES: tuple[str, ...] = ("at-least-once", "exactly-once")
#: The write modes of a ``commit`` call.
COMMIT_MODES: tuple[str, ...] = ("append", "merge")
#: How a source serves the pages of one query (the declaration's ``reads``): ``live``, each
#: page read when it is asked for (a paginated API); ``snapshot``, every page from the
#: snapshot taken at its first page (one SQL statement).
READS: tuple[str, ...] = ("live", "snapshot")
#: The fields of a sync request's ``source`` declaration, in the order they are sent.
SOURCE_FIELDS: tuple[str, ...] = (
    "stream",
    "cursor",
    "cursor_type",
    "granularity",
    "max_commit_delay",
    "partitioned",
    "horizon",
    "reads",
    "earliest",
)

#: An attempt's outcomes on the wire: the vocabulary's (docs/semantics.md section 5).
OUTCOMES: tuple[str, ...] = tuple(ATTEMPT_OUTCOMES)
REASONS: tuple[str, ...] = tuple(r.value for r in WithheldReason)
POLICIES: tuple[str, ...] = ("monotone", "reset")

T = TypeVar("T")


def _value(parse: Callable[[object, str], T], data: object, field: str) -> T:
    """Run a codec parser, turning its BadValue into a MessageError at ``field``."""
    try:
        return parse(data, field)
    except BadValue as exc:
        raise MessageError(exc.field, f"{exc.problem} (got {exc.value!r})") from None


def parse_cut(data: object, field: str, order: Order | None = None) -> Cut:
    """A cut of the wire (``null`` is nothing), validated against ``order`` when given."""
    try:
        return cut_from_json(data, field, order)
    except BadValue as exc:
        raise MessageError(exc.field, f"{exc.problem} (got {exc.value!r})") from None


def parse_checkpoint(data: object, field: str, order: Order | None = None) -> Checkpoint:
    try:
        return checkpoint_from_json(data, field, order)
    except BadValue as exc:
        raise MessageError(exc.field, f"{exc.problem} (got {exc.value!r})") from None


def parse_record(data: object, field: str) -> Record:
    return _value(record_from_json, data, field)


def parse_membership(data: object, field: str) -> Membership:
    return _value(membership_from_json, data, field)


def parse_order(data: object, field: str) -> Order:
    return _value(order_from_json, data, field)


# --- messages the SUT sends -------------------------------------------------------------


#: The integer ranges a SUT may declare in ``hello_ok.integers`` (docs/conformance-protocol.md).
INTEGER_RANGES: dict[str, tuple[int, int] | None] = {
    "arbitrary": None,
    "int64": (-(2**63), 2**63 - 1),
    "int53": (-(2**53 - 1), 2**53 - 1),
}
#: The optional messages a SUT may declare in ``hello_ok.capabilities``.
CAPABILITIES: tuple[str, ...] = ("reset",)


@dataclass(frozen=True, slots=True)
class HelloOk:
    """The SUT's handshake: its name, the levels it implements, and what it declares.

    ``integers`` is the declared range of integer coordinates (a key of
    :data:`INTEGER_RANGES`); ``capabilities`` the optional messages it understands.
    """

    protocol: int
    name: str
    levels: tuple[str, ...]
    integers: str = "arbitrary"
    capabilities: tuple[str, ...] = ()
    #: What a sync tool promises about its destination (:data:`DELIVERIES`).
    delivery: str = "at-least-once"


@dataclass(frozen=True, slots=True)
class ResetOk:
    """The SUT forgot everything it held: it now behaves as a freshly greeted process."""


@dataclass(frozen=True, slots=True)
class ReadPublication:
    stream: str


@dataclass(frozen=True, slots=True)
class ReadMembership:
    stream: str


@dataclass(frozen=True, slots=True)
class ReadCheckpoints:
    stream: str
    epoch: int


@dataclass(frozen=True, slots=True)
class WritePublication:
    stream: str
    expected_revision: int
    epoch: int
    cut: Cut
    op_id: str


@dataclass(frozen=True, slots=True)
class ReadCheckpoint:
    partition: str


@dataclass(frozen=True, slots=True)
class FetchPage:
    partition: str
    token: str | None


@dataclass(frozen=True, slots=True)
class RecordOutcome:
    event_id: str
    outcome: str


@dataclass(frozen=True, slots=True)
class WriteCheckpoint:
    partition: str
    expected_generation: int | None
    checkpoint: Checkpoint


@dataclass(frozen=True, slots=True)
class ReadState:
    """The sync level: the state the tool last committed."""


@dataclass(frozen=True, slots=True)
class ListPartitions:
    """The sync level: the partitions that exist now."""


@dataclass(frozen=True, slots=True)
class QueryBound:
    """A bound of a sync query: ``at`` (a multiple of the source's granularity) and inclusivity."""

    at: int
    inclusive: bool

    def to_json(self) -> JSONObject:
        return {"at": self.at, "inclusive": self.inclusive}


@dataclass(frozen=True, slots=True)
class Query:
    """The sync level: one page of a partition's visible rows within the bounds."""

    partition: str
    lower: QueryBound | None
    upper: QueryBound | None
    after: str | None


@dataclass(frozen=True, slots=True)
class Commit:
    """The sync level: rows (by id) and, when ``sets_state``, the tool's new ``state``."""

    records: tuple[str, ...]
    mode: str
    sets_state: bool
    state: object = None


CallPayload = (
    ReadPublication
    | ReadMembership
    | ReadCheckpoints
    | WritePublication
    | ReadCheckpoint
    | FetchPage
    | RecordOutcome
    | WriteCheckpoint
    | ReadState
    | ListPartitions
    | Query
    | Commit
)

#: op name -> payload class; the order of each tuple is the wire's field order.
OP_FIELDS: dict[str, tuple[str, ...]] = {
    "read_publication": ("stream",),
    "read_membership": ("stream",),
    "read_checkpoints": ("stream", "epoch"),
    "write_publication": ("stream", "expected_revision", "epoch", "cut", "op_id"),
    "read_checkpoint": ("partition",),
    "fetch_page": ("partition", "token"),
    "record_outcome": ("event_id", "outcome"),
    "write_checkpoint": ("partition", "expected_generation", "checkpoint"),
    "read_state": (),
    "list_partitions": (),
    "query": ("partition", "lower", "upper", "after"),
    "commit": ("records", "mode"),
}
#: op name -> the fields it may carry beyond :data:`OP_FIELDS`.
OP_OPTIONAL: dict[str, tuple[str, ...]] = {"commit": ("state",)}


@dataclass(frozen=True, slots=True)
class Call:
    """A store or provider call the SUT makes in the middle of a request."""

    call_id: WireId
    op: str
    payload: CallPayload


@dataclass(frozen=True, slots=True)
class PublishOk:
    """The end of one publication attempt. ``epoch`` is None only for ``gave_up``."""

    id: WireId
    outcome: str
    epoch: int | None
    cut: Cut
    reason: str | None


@dataclass(frozen=True, slots=True)
class IngestOk:
    """The end of one ingest pass: the cut certified now."""

    id: WireId
    cut: Cut


@dataclass(frozen=True, slots=True)
class CompareOk:
    id: WireId
    result: int


@dataclass(frozen=True, slots=True)
class MergeOk:
    """Exactly one of ``frontier`` (a cut, possibly nothing) and ``withheld`` (a reason)."""

    id: WireId
    frontier: Cut | None
    withheld: str | None


@dataclass(frozen=True, slots=True)
class ErrorReply:
    """The SUT could not parse a message (docs/conformance-protocol.md, Errors)."""

    id: WireId | None
    message: str


@dataclass(frozen=True, slots=True)
class SyncCoverage:
    """What a sync tool's state claims for one partition: the cut plus rows at its coordinate.

    ``at`` None is the cut *nothing*; ``plus`` only with ``before``.
    """

    at: int | None
    kind: str
    plus: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class SyncOk:
    """The end of one sync: ``completed`` or ``failed``, and the coverage claimed (None: none)."""

    id: WireId
    outcome: str
    coverage: dict[str, SyncCoverage] | None


SutMessage = (
    HelloOk | ResetOk | Call | PublishOk | IngestOk | CompareOk | MergeOk | SyncOk | ErrorReply
)


def _bool(value: object, field: str) -> bool:
    if type(value) is not bool:
        raise MessageError(field, f"true or false is required, got {value!r}")
    return value


def _query_bound(value: object, field: str) -> QueryBound | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise MessageError(field, 'a bound {"at": x, "inclusive": true|false} or null is required')
    fields(value, field, ("at", "inclusive"))
    return QueryBound(
        integer(value["at"], f"{field}.at"), _bool(value["inclusive"], f"{field}.inclusive")
    )


def _parse_sync_payload(op: str, msg: Mapping[str, object]) -> CallPayload:
    where = f"call({op})"
    if op == "read_state":
        return ReadState()
    if op == "list_partitions":
        return ListPartitions()
    if op == "query":
        return Query(
            text(msg["partition"], f"{where}.partition"),
            _query_bound(msg["lower"], f"{where}.lower"),
            _query_bound(msg["upper"], f"{where}.upper"),
            opt_text(msg["after"], f"{where}.after"),
        )
    assert op == "commit"
    raw = msg["records"]
    if not isinstance(raw, list):
        raise MessageError(f"{where}.records", "a list of row ids is required")
    records = tuple(text(r, f"{where}.records[{i}]") for i, r in enumerate(raw))
    mode = choice(msg["mode"], f"{where}.mode", COMMIT_MODES)
    return Commit(records, mode, "state" in msg, msg.get("state"))


def _parse_call_payload(op: str, msg: Mapping[str, object]) -> CallPayload:
    where = f"call({op})"
    if op in SYNC_OPS:
        return _parse_sync_payload(op, msg)
    if op == "read_publication":
        return ReadPublication(text(msg["stream"], f"{where}.stream"))
    if op == "read_membership":
        return ReadMembership(text(msg["stream"], f"{where}.stream"))
    if op == "read_checkpoints":
        return ReadCheckpoints(
            text(msg["stream"], f"{where}.stream"),
            integer(msg["epoch"], f"{where}.epoch", minimum=0),
        )
    if op == "write_publication":
        return WritePublication(
            stream=text(msg["stream"], f"{where}.stream"),
            expected_revision=integer(
                msg["expected_revision"], f"{where}.expected_revision", minimum=0
            ),
            epoch=integer(msg["epoch"], f"{where}.epoch", minimum=0),
            cut=parse_cut(msg["cut"], f"{where}.cut"),
            op_id=text(msg["op_id"], f"{where}.op_id"),
        )
    if op == "read_checkpoint":
        return ReadCheckpoint(text(msg["partition"], f"{where}.partition"))
    if op == "fetch_page":
        return FetchPage(
            text(msg["partition"], f"{where}.partition"), opt_text(msg["token"], f"{where}.token")
        )
    if op == "record_outcome":
        return RecordOutcome(
            text(msg["event_id"], f"{where}.event_id"), text(msg["outcome"], f"{where}.outcome")
        )
    assert op == "write_checkpoint"
    return WriteCheckpoint(
        partition=text(msg["partition"], f"{where}.partition"),
        expected_generation=opt_integer(
            msg["expected_generation"], f"{where}.expected_generation", minimum=0
        ),
        checkpoint=parse_checkpoint(msg["checkpoint"], f"{where}.checkpoint"),
    )


def parse_sut_message(line: str) -> SutMessage:
    """Parse one line the SUT wrote; :class:`MessageError` names the first problem."""
    msg = decode_line(line)
    kind = msg.get("type")
    if kind == "hello_ok":
        fields(
            msg,
            "hello_ok",
            ("type", "protocol", "name", "levels"),
            ("integers", "capabilities", "delivery"),
        )
        levels = msg["levels"]
        if not isinstance(levels, list):
            raise MessageError("hello_ok.levels", "a list of level names is required")
        parsed = tuple(
            choice(v, f"hello_ok.levels[{i}]", DECLARABLE_LEVELS) for i, v in enumerate(levels)
        )
        if len(set(parsed)) != len(parsed):
            raise MessageError("hello_ok.levels", "a level is listed twice")
        integers = choice(
            msg.get("integers", "arbitrary"), "hello_ok.integers", tuple(INTEGER_RANGES)
        )
        raw_caps = msg.get("capabilities", [])
        if not isinstance(raw_caps, list):
            raise MessageError("hello_ok.capabilities", "a list of capability names is required")
        caps = tuple(
            choice(v, f"hello_ok.capabilities[{i}]", CAPABILITIES) for i, v in enumerate(raw_caps)
        )
        if len(set(caps)) != len(caps):
            raise MessageError("hello_ok.capabilities", "a capability is listed twice")
        delivery = choice(msg.get("delivery", DELIVERIES[0]), "hello_ok.delivery", DELIVERIES)
        return HelloOk(
            integer(msg["protocol"], "hello_ok.protocol"),
            text(msg["name"], "hello_ok.name"),
            parsed,
            integers,
            caps,
            delivery,
        )
    if kind == "reset_ok":
        fields(msg, "reset_ok", ("type",))
        return ResetOk()
    if kind == "call":
        op = choice(msg.get("op"), "call.op", tuple(OP_FIELDS))
        fields(
            msg, f"call({op})", ("type", "call_id", "op", *OP_FIELDS[op]), OP_OPTIONAL.get(op, ())
        )
        call_id = wire_id(msg["call_id"], f"call({op}).call_id")
        return Call(call_id, op, _parse_call_payload(op, msg))
    if kind == "publish_ok":
        fields(msg, "publish_ok", ("type", "id", "outcome", "epoch", "cut", "reason"))
        outcome = choice(msg["outcome"], "publish_ok.outcome", OUTCOMES)
        reason = msg["reason"]
        if outcome == "withheld":
            reason = choice(reason, "publish_ok.reason", REASONS)
        elif reason is not None:
            raise MessageError("publish_ok.reason", f"must be null unless withheld, got {reason!r}")
        epoch = msg["epoch"]
        if epoch is None and outcome != "gave_up":
            raise MessageError("publish_ok.epoch", f"an integer is required for {outcome}")
        return PublishOk(
            wire_id(msg["id"], "publish_ok.id"),
            outcome,
            opt_integer(epoch, "publish_ok.epoch", minimum=0),
            parse_cut(msg["cut"], "publish_ok.cut"),
            reason if isinstance(reason, str) else None,
        )
    if kind == "ingest_ok":
        fields(msg, "ingest_ok", ("type", "id", "cut"))
        return IngestOk(wire_id(msg["id"], "ingest_ok.id"), parse_cut(msg["cut"], "ingest_ok.cut"))
    if kind == "compare_ok":
        fields(msg, "compare_ok", ("type", "id", "result"))
        result = integer(msg["result"], "compare_ok.result")
        if result not in (-1, 0, 1):
            raise MessageError("compare_ok.result", f"-1, 0 or 1 is required, got {result}")
        return CompareOk(wire_id(msg["id"], "compare_ok.id"), result)
    if kind == "merge_ok":
        fields(msg, "merge_ok", ("type", "id"), ("frontier", "withheld"))
        if ("frontier" in msg) == ("withheld" in msg):
            raise MessageError("merge_ok", "exactly one of frontier and withheld is required")
        if "withheld" in msg:
            withheld = choice(msg["withheld"], "merge_ok.withheld", REASONS)
            return MergeOk(wire_id(msg["id"], "merge_ok.id"), None, withheld)
        frontier = parse_cut(msg["frontier"], "merge_ok.frontier")
        return MergeOk(wire_id(msg["id"], "merge_ok.id"), frontier, None)
    if kind == "sync_ok":
        return _parse_sync_ok(msg)
    if kind == "error":
        fields(msg, "error", ("type", "id", "message"))
        raw_id = msg["id"]
        return ErrorReply(
            None if raw_id is None else wire_id(raw_id, "error.id"),
            text(msg["message"], "error.message", empty=True),
        )
    known = "hello_ok, call, publish_ok, ingest_ok, compare_ok, merge_ok, sync_ok, reset_ok, error"
    raise MessageError("type", f"unknown message type {kind!r}; a SUT sends one of: {known}")


def _parse_coverage(value: object, where: str) -> SyncCoverage:
    if not isinstance(value, dict):
        raise MessageError(where, 'an object {"cut": <cut>, "plus": [row ids]} is required')
    fields(value, where, ("cut", "plus"))
    cut = value["cut"]
    at: int | None = None
    kind = "before"
    if cut is not None:
        if not isinstance(cut, dict):
            raise MessageError(f"{where}.cut", 'a cut {"at": x, "kind": ...} or null is required')
        fields(cut, f"{where}.cut", ("at", "kind"))
        at = integer(cut["at"], f"{where}.cut.at")
        kind = choice(cut["kind"], f"{where}.cut.kind", ("before", "through"))
    raw = value["plus"]
    if not isinstance(raw, list):
        raise MessageError(f"{where}.plus", "a list of row ids is required")
    plus = tuple(text(r, f"{where}.plus[{i}]") for i, r in enumerate(raw))
    if plus and (at is None or kind != "before"):
        raise MessageError(
            f"{where}.plus", "rows at the cut's coordinate are named only with a before cut"
        )
    return SyncCoverage(at, kind, plus)


def _parse_sync_ok(msg: JSONObject) -> SyncOk:
    fields(msg, "sync_ok", ("type", "id", "outcome", "coverage"))
    outcome = choice(msg["outcome"], "sync_ok.outcome", SYNC_OUTCOMES)
    raw = msg["coverage"]
    coverage: dict[str, SyncCoverage] | None = None
    if raw is not None:
        if not isinstance(raw, dict):
            raise MessageError("sync_ok.coverage", "an object of partitions, or null")
        coverage = {
            text(p, "sync_ok.coverage"): _parse_coverage(c, f"sync_ok.coverage.{p}")
            for p, c in raw.items()
        }
    return SyncOk(wire_id(msg["id"], "sync_ok.id"), outcome, coverage)


# --- messages the harness sends -----------------------------------------------------------


def reset_message() -> JSONObject:
    """Forget everything: the process is reused for another run (capability ``reset``)."""
    return {"type": "reset"}


def hello_message() -> JSONObject:
    return {"type": "hello", "protocol": PROTOCOL_VERSION}


def shutdown_message() -> JSONObject:
    return {"type": "shutdown"}


def compare_message(request_id: int, order: Order, a: Cut, b: Cut) -> JSONObject:
    return {
        "type": "compare",
        "id": request_id,
        "order": order.to_json(),
        "a": cut_to_json(a),
        "b": cut_to_json(b),
    }


def merge_message(
    request_id: int, membership: Membership, checkpoints: Sequence[Checkpoint]
) -> JSONObject:
    return {
        "type": "merge",
        "id": request_id,
        "membership": membership_to_json(membership),
        "checkpoints": [checkpoint_to_json(c) for c in checkpoints],
    }


def publish_message(request_id: int, worker: str, stream: str, policy: str) -> JSONObject:
    return {
        "type": "publish",
        "id": request_id,
        "worker": worker,
        "stream": stream,
        "policy": policy,
    }


def ingest_message(
    request_id: int, worker: str, partition: str, scope: str, epoch: int, order: Order
) -> JSONObject:
    return {
        "type": "ingest",
        "id": request_id,
        "worker": worker,
        "partition": partition,
        "scope": scope,
        "epoch": epoch,
        "order": order.to_json(),
    }


def page_to_json(page: Page) -> JSONObject:
    claim = page.claim
    return {
        "events": [{"id": e.id, "at": e.at} for e in page.events],
        "next_token": page.next_token,
        "claim": None if claim is None else {"cut": cut_to_json(claim.cut), "final": claim.final},
    }


def reply_ok(call_id: WireId, **fields: object) -> JSONObject:
    """A successful reply; ``fields`` are already in wire form."""
    return {"type": "reply", "call_id": call_id, "ok": True, **fields}


def reply_timeout(call_id: WireId) -> JSONObject:
    """The response was lost: a write may or may not have been applied."""
    return {"type": "reply", "call_id": call_id, "ok": False, "error": "timeout"}


def reply_conflict(call_id: WireId, **fields: object) -> JSONObject:
    """The conditional write lost; ``fields`` carry the current record or checkpoint."""
    return {"type": "reply", "call_id": call_id, "ok": False, "error": "conflict", **fields}


def record_json(record: Record) -> object:
    return record_to_json(record)


def checkpoint_json(checkpoint: Checkpoint | None) -> object:
    return None if checkpoint is None else checkpoint_to_json(checkpoint)


def membership_json(membership: Membership) -> object:
    return membership_to_json(membership)


def source_declaration(
    *,
    stream: str,
    cursor: str,
    cursor_type: str,
    granularity: int,
    max_commit_delay: int,
    partitioned: bool,
    horizon: bool,
    reads: str,
    earliest: int,
) -> JSONObject:
    """The ``source`` a ``sync`` request declares (every field of :data:`SOURCE_FIELDS`).

    ``earliest`` is a promise: no row of the source has a cursor value below it.
    """
    assert reads in READS
    declared: JSONObject = {
        "stream": stream,
        "cursor": cursor,
        "cursor_type": cursor_type,
        "granularity": granularity,
        "max_commit_delay": max_commit_delay,
        "partitioned": partitioned,
        "horizon": horizon,
        "reads": reads,
        "earliest": earliest,
    }
    assert tuple(declared) == SOURCE_FIELDS
    return declared


def sync_message(request_id: int, worker: str, now: int, source: JSONObject) -> JSONObject:
    """A ``sync`` request: one run of the tool, the source's clock ``now`` and its declaration."""
    return {"type": "sync", "id": request_id, "worker": worker, "now": now, "source": source}
