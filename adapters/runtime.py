"""The SUT side of the ``sync`` level (docs/conformance-protocol.md), for tool adapters.

An adapter wraps one incremental-sync library (dlt, singer-sdk, airbyte-cdk) as
a conformance SUT. Everything about the wire lives here, once, so an adapter
only says how its tool runs one sync:

- :class:`Tool`: what an adapter implements (``sync`` and ``reset``);
- :class:`SourceClient`: what a tool may do during a sync (read its state, list
  partitions, query a page, commit records and state), each call answered by
  the harness before the next; :class:`LostResponse` when the answer was lost;
- :func:`serve_stdio`: the process's whole life (handshake, requests, reset,
  shutdown) on stdin/stdout.

This module is on the judged side of the house: it reads the harness's
messages with its own parsing (on :mod:`fencepost.inputs.jsonlines`'s neutral
framing) and imports nothing of the judge or the harness.

Libraries print. Python libraries write to ``sys.stdout`` (a Singer tap writes
its messages there by design), which is the protocol's channel; :func:`serve_stdio`
keeps a private duplicate of file descriptor 1 for the protocol and points fd 1
and ``sys.stdout`` at stderr before the tool is imported or run, so nothing a
library prints can corrupt the wire.

Cost: one JSON encode and decode per call; nothing is kept between calls but
what the tool keeps.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import BinaryIO, Literal, Protocol

from fencepost.inputs.jsonlines import (
    MAX_LINE_BYTES,
    JSONObject,
    LineIO,
    MessageError,
    WireId,
    choice,
    decode_line,
    encode,
    fields,
    integer,
    opt_text,
    text,
    wire_id,
)

#: The protocol version the adapters speak (the sync level is an addition to 1).
PROTOCOL_VERSION = 1

#: The level this module serves.
SYNC_LEVEL = "sync"

CursorType = Literal["timestamp", "integer"]
Mode = Literal["append", "merge"]
Delivery = Literal["at-least-once", "exactly-once"]
Outcome = Literal["completed", "failed"]
Reads = Literal["live", "snapshot"]

#: Passed as ``state`` to :meth:`SourceClient.commit` to leave the stored state alone.
KEEP_STATE: object = object()


@dataclass(frozen=True, slots=True)
class Source:
    """The source a sync reads, as the harness declares it.

    ``granularity`` is the step of the values a query bound can name, and
    ``max_commit_delay`` the declared late-commit bound ``D``, both in the
    cursor's units (milliseconds for a ``timestamp`` cursor). ``reads`` says
    how the pages of one query are served: ``live`` (each page read when it is
    asked for, a paginated API) or ``snapshot`` (every page from the snapshot
    taken at its first page, one SQL statement). ``earliest`` is a promise: no
    row has a cursor value below it (a tool's start value).
    """

    stream: str
    cursor: str
    cursor_type: CursorType
    granularity: int
    max_commit_delay: int
    partitioned: bool
    horizon: bool
    reads: Reads = "live"
    earliest: int = 0


@dataclass(frozen=True, slots=True)
class SyncRequest:
    """One run of the tool: ``now`` is the source's clock (read it, never the machine's)."""

    id: WireId
    worker: str
    now: int
    source: Source


@dataclass(frozen=True, slots=True)
class Row:
    """A row of the source: its id and cursor value (ms since the Unix epoch for timestamps)."""

    id: str
    at: int


@dataclass(frozen=True, slots=True)
class Bound:
    """A query bound: ``at`` must be a multiple of the source's granularity."""

    at: int
    inclusive: bool


@dataclass(frozen=True, slots=True)
class Page:
    """One page of a query; ``horizon`` is the certified ``before h``, when the source has one."""

    rows: tuple[Row, ...]
    next: str | None
    horizon: int | None


@dataclass(frozen=True, slots=True)
class Coverage:
    """What a tool's state claims for one partition, in the procedure's terms.

    ``at`` None is the cut ``nothing``. ``plus`` names rows at exactly ``at``
    also covered (only with ``before``): dlt's "boundary rows already seen".
    """

    at: int | None
    kind: Literal["before", "through"] = "before"
    plus: tuple[str, ...] = ()

    def to_json(self) -> JSONObject:
        cut = None if self.at is None else {"at": self.at, "kind": self.kind}
        return {"cut": cut, "plus": list(self.plus)}


@dataclass(frozen=True, slots=True)
class SyncResult:
    """How a sync ended, and the coverage its state now claims (None: no claim)."""

    outcome: Outcome = "completed"
    coverage: Mapping[str, Coverage] | None = None


class LostResponse(Exception):
    """The harness answered ``timeout``: the response was lost (a commit may have applied)."""

    def __init__(self, op: str) -> None:
        self.op = op
        super().__init__(f"the response to {op} was lost")


class SessionEnd(Exception):
    """The harness ended the session (shutdown or end of input) in the middle of a sync."""


class SourceClient(Protocol):
    """What a tool may do during one sync; each call is answered before the next."""

    def read_state(self) -> object:
        """The state last committed (any JSON value), or None before the first."""
        ...

    def list_partitions(self) -> list[str]:
        """The partitions that exist now, in the order they appeared."""
        ...

    def query(
        self, partition: str, lower: Bound | None, upper: Bound | None, after: str | None
    ) -> Page:
        """One page of ``partition``'s visible rows within the bounds, in ``(at, id)`` order."""
        ...

    def commit(self, records: Sequence[str], mode: Mode, state: object = KEEP_STATE) -> None:
        """Write rows (by id) and, unless ``state`` is :data:`KEEP_STATE`, the state: atomically."""
        ...


class Tool(Protocol):
    """What an adapter implements: one tool, configured, run one sync at a time."""

    @property
    def name(self) -> str:
        """The name sent in ``hello_ok`` (the tool, its version and configuration)."""
        ...

    @property
    def delivery(self) -> Delivery:
        """``exactly-once`` when the tool promises never to hold a row twice."""
        ...

    def sync(self, request: SyncRequest, source: SourceClient) -> SyncResult:
        """Run the tool once against ``source``; raise :class:`SessionEnd` through."""
        ...

    def reset(self) -> None:
        """Forget everything held in memory: the process must act as a fresh one."""
        ...


# --- reading the harness's messages --------------------------------------------------------


def _boolean(value: object, field: str) -> bool:
    if type(value) is not bool:
        raise MessageError(field, f"true or false is required, got {value!r}")
    return value


def parse_source(data: object, where: str) -> Source:
    """The ``source`` of a sync request, strictly."""
    if not isinstance(data, dict):
        raise MessageError(where, "an object is required")
    fields(
        data,
        where,
        (
            "stream",
            "cursor",
            "cursor_type",
            "granularity",
            "max_commit_delay",
            "partitioned",
            "horizon",
            "reads",
            "earliest",
        ),
    )
    cursor_type = choice(data["cursor_type"], f"{where}.cursor_type", ("timestamp", "integer"))
    reads = choice(data["reads"], f"{where}.reads", ("live", "snapshot"))
    return Source(
        stream=text(data["stream"], f"{where}.stream"),
        cursor=text(data["cursor"], f"{where}.cursor"),
        cursor_type="timestamp" if cursor_type == "timestamp" else "integer",
        granularity=integer(data["granularity"], f"{where}.granularity", minimum=1),
        max_commit_delay=integer(data["max_commit_delay"], f"{where}.max_commit_delay", minimum=0),
        partitioned=_boolean(data["partitioned"], f"{where}.partitioned"),
        horizon=_boolean(data["horizon"], f"{where}.horizon"),
        reads="snapshot" if reads == "snapshot" else "live",
        earliest=integer(data["earliest"], f"{where}.earliest"),
    )


def parse_sync(msg: JSONObject) -> SyncRequest:
    fields(msg, "sync", ("type", "id", "worker", "now", "source"))
    return SyncRequest(
        id=wire_id(msg["id"], "sync.id"),
        worker=text(msg["worker"], "sync.worker"),
        now=integer(msg["now"], "sync.now"),
        source=parse_source(msg["source"], "sync.source"),
    )


def _row(data: object, where: str) -> Row:
    if not isinstance(data, dict):
        raise MessageError(where, "a row object is required")
    fields(data, where, ("id", "at"))
    return Row(text(data["id"], f"{where}.id"), integer(data["at"], f"{where}.at"))


def _horizon(data: object, where: str) -> int | None:
    if data is None:
        return None
    if not isinstance(data, dict):
        raise MessageError(where, "a cut object or null is required")
    fields(data, where, ("at", "kind"))
    choice(data["kind"], f"{where}.kind", ("before",))
    return integer(data["at"], f"{where}.at")


# --- the wire client -------------------------------------------------------------------------


class _WireSource:
    """A :class:`SourceClient` over the protocol's ``call``/``reply`` messages."""

    def __init__(self, io: LineIO) -> None:
        self._io = io
        self._next = 0

    def _call(self, op: str, payload: Mapping[str, object]) -> JSONObject:
        self._next += 1
        call_id = f"c{self._next}"
        self._io.write_line(encode({"type": "call", "call_id": call_id, "op": op, **payload}))
        line = self._io.read_line()
        if line is None:
            raise SessionEnd("the harness closed the connection during a call")
        msg = decode_line(line)
        if msg.get("type") == "shutdown":
            raise SessionEnd("shutdown during a call")
        if msg.get("type") != "reply" or msg.get("call_id") != call_id:
            raise MessageError(
                "reply", f"expected the reply to {call_id} ({op}), got {line[:80]!r}"
            )
        if msg.get("ok") is False:
            if msg.get("error") == "timeout":
                raise LostResponse(op)
            raise MessageError(f"reply({op}).error", f"unknown error {msg.get('error')!r}")
        if msg.get("ok") is not True:
            raise MessageError(f"reply({op}).ok", "true or false is required")
        return msg

    def read_state(self) -> object:
        msg = self._call("read_state", {})
        fields(msg, "reply(read_state)", ("type", "call_id", "ok", "state"))
        return msg["state"]

    def list_partitions(self) -> list[str]:
        msg = self._call("list_partitions", {})
        fields(msg, "reply(list_partitions)", ("type", "call_id", "ok", "partitions"))
        raw = msg["partitions"]
        if not isinstance(raw, list):
            raise MessageError("reply(list_partitions).partitions", "a list is required")
        return [text(p, f"reply(list_partitions).partitions[{i}]") for i, p in enumerate(raw)]

    def query(
        self, partition: str, lower: Bound | None, upper: Bound | None, after: str | None
    ) -> Page:
        def bound(b: Bound | None) -> object:
            return None if b is None else {"at": b.at, "inclusive": b.inclusive}

        msg = self._call(
            "query",
            {"partition": partition, "lower": bound(lower), "upper": bound(upper), "after": after},
        )
        where = "reply(query)"
        fields(msg, where, ("type", "call_id", "ok", "rows", "next", "horizon"))
        raw = msg["rows"]
        if not isinstance(raw, list):
            raise MessageError(f"{where}.rows", "a list is required")
        rows = tuple(_row(r, f"{where}.rows[{i}]") for i, r in enumerate(raw))
        return Page(rows, opt_text(msg["next"], f"{where}.next"), _horizon(msg["horizon"], where))

    def commit(self, records: Sequence[str], mode: Mode, state: object = KEEP_STATE) -> None:
        payload: dict[str, object] = {"records": list(records), "mode": mode}
        if state is not KEEP_STATE:
            payload["state"] = state
        msg = self._call("commit", payload)
        fields(msg, "reply(commit)", ("type", "call_id", "ok"))


# --- the session -----------------------------------------------------------------------------


def serve(tool: Tool, io: LineIO) -> int:
    """Answer the harness until shutdown (exit status 0) or end of input (1).

    A message the adapter cannot read gets an ``error`` reply and the session
    goes on, as the protocol asks. A tool that raises anything but
    :class:`SessionEnd` ends the sync as ``failed``: the tool gave up on this
    run, and its message goes to stderr.
    """
    while True:
        line = io.read_line()
        if line is None:
            return 1
        request_id: WireId | None = None
        try:
            msg = decode_line(line)
            raw_id = msg.get("id")
            if isinstance(raw_id, (int, str)) and not isinstance(raw_id, bool):
                request_id = raw_id
            kind = msg.get("type")
            if kind == "hello":
                fields(msg, "hello", ("type", "protocol"))
                io.write_line(
                    encode(
                        {
                            "type": "hello_ok",
                            "protocol": PROTOCOL_VERSION,
                            "name": tool.name,
                            "levels": [SYNC_LEVEL],
                            "capabilities": ["reset"],
                            "delivery": tool.delivery,
                        }
                    )
                )
            elif kind == "shutdown":
                return 0
            elif kind == "reset":
                fields(msg, "reset", ("type",))
                tool.reset()
                io.write_line(encode({"type": "reset_ok"}))
            elif kind == "sync":
                request = parse_sync(msg)
                try:
                    result = tool.sync(request, _WireSource(io))
                except SessionEnd:
                    return 0
                except MessageError:
                    raise
                except Exception as exc:  # the tool gave up on this run
                    print(f"sync {request.id} failed: {type(exc).__name__}: {exc}", file=sys.stderr)
                    result = SyncResult("failed", None)
                coverage = (
                    None
                    if result.coverage is None
                    else {p: c.to_json() for p, c in result.coverage.items()}
                )
                io.write_line(
                    encode(
                        {
                            "type": "sync_ok",
                            "id": request.id,
                            "outcome": result.outcome,
                            "coverage": coverage,
                        }
                    )
                )
            else:
                raise MessageError("type", f"this adapter serves the sync level only, got {kind!r}")
        except MessageError as exc:
            io.write_line(encode({"type": "error", "id": request_id, "message": str(exc)}))


class _StdioLines:
    """A :class:`LineIO` over the protocol's private duplicate of stdout, and stdin."""

    def __init__(self, stdin: BinaryIO, out: BinaryIO) -> None:
        self._in = stdin
        self._out = out

    def read_line(self) -> str | None:
        raw = self._in.readline(MAX_LINE_BYTES + 1)
        if not raw:
            return None
        if not raw.endswith(b"\n") and len(raw) > MAX_LINE_BYTES:
            while True:
                more = self._in.readline(MAX_LINE_BYTES)
                if not more or more.endswith(b"\n"):
                    break
            return "<line longer than the protocol's limit>"
        return raw.rstrip(b"\n").decode("utf-8", "replace")

    def write_line(self, line: str) -> None:
        self._out.write(line.encode("utf-8") + b"\n")
        self._out.flush()


def protect_stdout() -> BinaryIO:
    """Keep fd 1 for the protocol; from now on everything else written to stdout goes to stderr.

    Call it before the tool's library is imported: some libraries bind
    ``sys.stdout`` at import.
    """
    sys.stdout.flush()
    wire = os.fdopen(os.dup(1), "wb", buffering=0)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return wire


def serve_stdio(tool: Tool, wire: BinaryIO) -> int:
    """Run one session on stdin and ``wire`` (from :func:`protect_stdout`); the exit status."""
    return serve(tool, _StdioLines(sys.stdin.buffer, wire))
