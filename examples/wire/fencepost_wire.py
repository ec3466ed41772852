"""fencepost_wire: the wire of fencepost's conformance protocol, version 1, in one file.

What it is for. ``fencepost conform -- CMD`` runs your implementation (the SUT) and talks
JSON Lines with it (docs/conformance-protocol.md). This module does every part of that
conversation that is not a decision, so that your program holds only the decisions:
one handler per request kind (``compare``, ``merge``, ``publish``, ``ingest``, ``sync``).

What it guarantees (each is a rule of docs/conformance-protocol.md or docs/conformance.md):

* framing: one JSON object per line, UTF-8, ``\\n``-ended, written and flushed at once;
  nothing but protocol messages on stdout (log with :func:`log`, which writes to stderr);
* strict reading: a line that is not UTF-8, not JSON, not an object, holds ``NaN`` or
  ``Infinity`` or a duplicate key is answered ``{"type": "error", "id": null, ...}`` and
  the process keeps running;
* the handshake: ``hello`` (protocol 1 only) is answered ``hello_ok`` with your name,
  the levels of the handlers you registered, and the optional ``integers``,
  ``capabilities`` (``reset`` when you give ``on_reset``) and ``delivery`` fields;
* requests: the exact top-level fields of each known request kind are checked (a
  missing or unknown field is an ``error`` carrying the request's id), your handler's
  dict is sent as ``<kind>_ok`` with the request's ``id`` filled in;
* calls: :meth:`Calls.call` sends ``{"type": "call", "call_id": ..., "op": ...}`` and
  returns the harness's reply after checking it is the reply to that call;
* errors: a handler that raises :class:`Refuse` (bad input) answers an ``error`` with the
  request's id; any other exception is logged with its traceback to stderr and also
  answered as an ``error``, so the harness reports it (``sut_error``) instead of a hang;
* ``shutdown`` (at any moment, even while a call waits for its reply) and end of input
  exit with status 0; ``reset`` calls ``on_reset`` and answers ``reset_ok``.

It needs only the Python 3.9+ standard library and imports nothing of fencepost. Copy
it next to your program or put ``examples/wire`` on ``sys.path``.

Usage::

    from fencepost_wire import Calls, Refuse, Sut

    sut = Sut("my-impl")

    @sut.handler("compare", level="algebra")
    def compare(msg: dict, calls: Calls) -> dict:
        if msg["a"] is not None and msg["a"]["kind"] not in ("before", "through"):
            raise Refuse("compare.a.kind", "must be before or through")
        return {"result": 0}          # sent as {"type": "compare_ok", "id": ..., "result": 0}

    @sut.handler("publish", level="publisher")
    def publish(msg: dict, calls: Calls) -> dict:
        reply = calls.call("read_publication", stream=msg["stream"])
        ...

    sut.run()

Cost: one ``json.loads`` and one ``json.dumps`` per message; nothing is buffered
beyond the current line.
"""

from __future__ import annotations

import json
import sys
import traceback
from collections.abc import Callable
from typing import IO, Any, NoReturn

PROTOCOL = 1

#: The top-level fields of every request kind of protocol 1, and the level it belongs to.
REQUESTS: dict[str, tuple[str, frozenset[str]]] = {
    "compare": ("algebra", frozenset({"type", "id", "order", "a", "b"})),
    "merge": ("algebra", frozenset({"type", "id", "membership", "checkpoints"})),
    "publish": ("publisher", frozenset({"type", "id", "worker", "stream", "policy"})),
    "ingest": (
        "checkpointer",
        frozenset({"type", "id", "worker", "partition", "scope", "epoch", "order"}),
    ),
    "sync": ("sync", frozenset({"type", "id", "worker", "now", "source"})),
}

Message = dict[str, Any]


class Refuse(ValueError):
    """Raise in a handler to refuse bad input: the answer is an ``error`` with the
    request's id and the message ``"<path>: <problem>"`` (``compare.a.kind: ...``)."""

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(f"{path}: {problem}")
        self.path = path
        self.problem = problem


class Shutdown(SystemExit):
    """Raised when the harness says ``shutdown`` or closes stdin: exit status 0."""

    def __init__(self) -> None:
        super().__init__(0)


def is_int(value: object) -> bool:
    """True for a JSON integer (a bool is never an integer on this wire)."""
    return isinstance(value, int) and not isinstance(value, bool)


def check_fields(
    value: object,
    path: str,
    required: set[str] | frozenset[str],
    optional: frozenset[str] = frozenset(),
) -> dict[str, Any]:
    """``value`` as a dict with exactly the ``required`` keys (plus any ``optional``);
    otherwise :class:`Refuse` naming the first missing or unknown field."""
    if not isinstance(value, dict):
        raise Refuse(path, "must be an object")
    for key in sorted(required):
        if key not in value:
            raise Refuse(f"{path}.{key}", "is missing")
    for key in value:
        if key not in required and key not in optional:
            raise Refuse(f"{path}.{key}", "is not a field of this message")
    return value


def log(*parts: object) -> None:
    """Write a line to stderr (the harness shows its last lines in failure reports)."""
    print(*parts, file=sys.stderr, flush=True)


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"duplicate key {key!r}")
        out[key] = value
    return out


def _no_constant(name: str) -> NoReturn:
    raise ValueError(f"{name} is not JSON")


def parse_line(line: bytes) -> Message:
    """One strict JSON object: UTF-8, no NaN/Infinity, no duplicate keys. ValueError else."""
    value = json.loads(
        line.decode("utf-8"), object_pairs_hook=_no_duplicates, parse_constant=_no_constant
    )
    if not isinstance(value, dict):
        raise ValueError("a message must be a JSON object")
    return value


class Wire:
    """Framing only: read one message, write one message (stdin/stdout by default)."""

    def __init__(self, inp: IO[bytes] | None = None, out: IO[bytes] | None = None) -> None:
        self.inp = inp if inp is not None else sys.stdin.buffer
        self.out = out if out is not None else sys.stdout.buffer

    def send(self, message: Message) -> None:
        text = json.dumps(message, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
        self.out.write(text.encode("utf-8") + b"\n")
        self.out.flush()

    def receive(self) -> Message:
        """The next well-formed message. A malformed line is answered with an error
        (id null) and skipped; ``shutdown`` or end of input raises :class:`Shutdown`."""
        while True:
            line = self.inp.readline()
            if not line:
                raise Shutdown()
            try:
                message = parse_line(line)
            except ValueError as exc:  # UnicodeDecodeError and JSONDecodeError included
                self.send({"type": "error", "id": None, "message": f"cannot parse: {exc}"})
                continue
            if message.get("type") == "shutdown":
                raise Shutdown()
            return message


class ProtocolBreak(Exception):
    """The harness's answer to a call was not the reply to that call."""


class Calls:
    """The calls of one request in progress. Call ids are ``c1``, ``c2``... per request."""

    def __init__(self, wire: Wire, request: Message) -> None:
        self.wire = wire
        self.request = request
        self.count = 0

    def call(self, op: str, **fields: Any) -> Message:
        """Send one call and return the harness's reply (``{"type": "reply", "call_id":
        ..., "ok": ..., ...}``). Check ``reply["ok"]``; a failed call carries ``error``
        (``"timeout"``: the response was lost; ``"conflict"`` for conditional writes)."""
        self.count += 1
        call_id = f"c{self.count}"
        self.wire.send({"type": "call", "call_id": call_id, "op": op, **fields})
        reply = self.wire.receive()
        if reply.get("type") != "reply" or reply.get("call_id") != call_id:
            raise ProtocolBreak(f"expected the reply to call {call_id}, got {reply!r:.200}")
        if not isinstance(reply.get("ok"), bool):
            raise ProtocolBreak(f"reply to {call_id}: ok must be true or false")
        if not reply["ok"] and not isinstance(reply.get("error"), str):
            raise ProtocolBreak(f"reply to {call_id}: a failed reply names its error")
        return reply


Handler = Callable[[Message, Calls], Message]


class Sut:
    """One SUT process (one worker): register handlers, then :meth:`run`.

    ``levels`` declared in ``hello_ok`` are those of the registered handlers, in the
    order registered, unless ``levels`` is given. ``integers`` (``"int64"``,
    ``"int53"``, ``"arbitrary"``) and ``delivery`` are sent when given; ``on_reset``
    makes the process declare the ``reset`` capability and is called on ``reset``: it
    must forget everything your handlers keep between requests.
    """

    def __init__(
        self,
        name: str,
        *,
        levels: list[str] | None = None,
        integers: str | None = None,
        delivery: str | None = None,
        on_reset: Callable[[], None] | None = None,
        wire: Wire | None = None,
    ) -> None:
        self.name = name
        self.levels = levels
        self.integers = integers
        self.delivery = delivery
        self.on_reset = on_reset
        self.wire = wire if wire is not None else Wire()
        self.handlers: dict[str, tuple[str, Handler]] = {}

    def handler(self, kind: str, level: str | None = None) -> Callable[[Handler], Handler]:
        """Decorator: ``fn(msg, calls) -> answer fields`` handles requests of ``kind``.
        ``level`` defaults to the kind's level in protocol 1."""
        if level is None:
            if kind not in REQUESTS:
                raise ValueError(f"unknown request kind {kind!r}: name its level")
            level = REQUESTS[kind][0]

        def register(fn: Handler) -> Handler:
            self.handlers[kind] = (str(level), fn)
            return fn

        return register

    def hello_ok(self) -> Message:
        declared = self.levels
        if declared is None:
            declared = list(dict.fromkeys(level for level, _ in self.handlers.values()))
        message: Message = {
            "type": "hello_ok",
            "protocol": PROTOCOL,
            "name": self.name,
            "levels": declared,
        }
        if self.integers is not None:
            message["integers"] = self.integers
        if self.on_reset is not None:
            message["capabilities"] = ["reset"]
        if self.delivery is not None:
            message["delivery"] = self.delivery
        return message

    def answer(self, msg: Message) -> Message:
        """The answer to one message read while idle (a request, hello or reset)."""
        kind = msg.get("type")
        rid = msg.get("id") if is_int(msg.get("id")) else None
        try:
            if kind == "hello":
                check_fields(msg, "hello", {"type", "protocol"})
                if not is_int(msg["protocol"]) or msg["protocol"] != PROTOCOL:
                    raise Refuse("hello.protocol", f"only protocol {PROTOCOL} is spoken")
                return self.hello_ok()
            if kind == "reset" and self.on_reset is not None:
                check_fields(msg, "reset", {"type"})
                self.on_reset()
                return {"type": "reset_ok"}
            if not isinstance(kind, str) or kind not in self.handlers:
                raise Refuse("type", f"no handler for message type {kind!r}")
            if kind in REQUESTS:
                check_fields(msg, kind, REQUESTS[kind][1])
            if rid is None:
                raise Refuse(f"{kind}.id", "must be an integer")
            answer = self.handlers[kind][1](msg, Calls(self.wire, msg))
            return {"type": f"{kind}_ok", "id": rid, **answer}
        except Refuse as exc:
            return {"type": "error", "id": rid, "message": str(exc)}
        except ProtocolBreak as exc:
            return {"type": "error", "id": rid, "message": f"protocol: {exc}"}
        except Exception as exc:
            log(traceback.format_exc())
            return {"type": "error", "id": rid, "message": f"internal error: {exc!r}"}

    def run(self) -> NoReturn:
        """Serve until ``shutdown`` or end of input, then exit with status 0."""
        while True:
            self.wire.send(self.answer(self.wire.receive()))
