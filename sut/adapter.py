"""fencepost's own SUT: the project's implementation speaking the conformance protocol.

The real :class:`~fencepost.impl.publisher.Publisher`,
:class:`~fencepost.impl.reader.PartitionReader` and cut algebra run unchanged;
only their store and provider are wire-backed: :class:`WireStore` turns every
store call into a ``call`` message and the harness's ``reply`` into the store
protocol's result (:class:`~fencepost.impl.stores.Applied`, a conflict, or an
:class:`~fencepost.impl.stores.IndefiniteStoreError` for a lost response), and
:class:`WireProvider` does the same for pages. So fencepost is tested through
the very wire outside implementations are tested through.

A :class:`~fencepost.mutants.Variant` says which pieces a session uses: the
correct SUT is :data:`~fencepost.mutants.CORRECT`; ``fencepost sut --mutant
NAME`` runs an entry of the one catalog of known bugs
(:data:`fencepost.mutants.CATALOG`), whose publisher and reader take these
wire-backed stores exactly as the production classes do.

Two ways to run a session: :func:`serve_stdio` (the ``fencepost sut`` process)
and :class:`InProcessSut` (a thread per worker, exchanging the same text lines;
no subprocess, for speed).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, BinaryIO

from fencepost.impl.codec import cut_to_json
from fencepost.impl.cuts import NOTHING, Cut
from fencepost.impl.errors import InvalidValue
from fencepost.impl.merge import Withheld
from fencepost.impl.orders import Order
from fencepost.impl.provider import Event, Page, ProviderTimeout
from fencepost.impl.publisher import Policy, Publisher
from fencepost.impl.records import Checkpoint, Membership, PublicationRecord
from fencepost.impl.stores import (
    Applied,
    CheckpointApplied,
    CheckpointConflict,
    CheckpointWrite,
    Conflict,
    DefiniteStoreError,
    IndefiniteStoreError,
    PublicationWrite,
    StoreError,
)
from fencepost.inputs.jsonlines import (
    MAX_LINE_BYTES,
    JSONObject,
    LineIO,
    MessageError,
    WireId,
    decode_line,
    encode,
)
from fencepost.mutants import CORRECT, Variant
from fencepost.sut.wire import (
    PROTOCOL_VERSION,
    CompareRequest,
    HarnessRequest,
    Hello,
    IngestRequest,
    MergeRequest,
    PublishRequest,
    Reply,
    ReplyConflict,
    ReplyOk,
    ReplyTimeout,
    Reset,
    Shutdown,
    checkpoint_json,
    parse_harness_message,
    parse_reply,
    request_id_of,
)

if TYPE_CHECKING:
    from fencepost.harness.transport import Channel

#: The stream name the partition reader is given: the checkpointer level's calls
#: name no stream (one ingest request is about one partition of one epoch).
INGEST_STREAM = "conformance"


class SessionEnd(Exception):
    """The harness ended the session (shutdown or end of input) in the middle of a request."""


class _BadReply(Exception):
    """The harness's reply could not be parsed; the request is answered with an error."""


class WireCaller:
    """Sends one ``call`` and waits for its ``reply``; call ids are ``c1``, ``c2``, ...

    One call at a time, each answered before the next (the protocol's rule),
    so the harness decides the interleaving of all workers.
    """

    def __init__(self, io: LineIO) -> None:
        self.io = io
        self._next = 0

    def call(self, op: str, fields: JSONObject, order: Order | None = None) -> Reply:
        self._next += 1
        call_id = f"c{self._next}"
        self.io.write_line(encode({"type": "call", "call_id": call_id, "op": op, **fields}))
        line = self.io.read_line()
        if line is None:
            raise SessionEnd("end of input while waiting for a reply")
        try:
            msg = decode_line(line)
            if msg.get("type") == "shutdown":
                raise SessionEnd("shutdown while waiting for a reply")
            return parse_reply(msg, call_id, op, order)
        except MessageError as exc:
            raise _BadReply(str(exc)) from None


class WireStore:
    """The store protocols over the wire: the publisher level's four calls and the
    checkpointer level's three store calls.

    A ``timeout`` reply raises :class:`IndefiniteStoreError` (the write may or
    may not have happened: only a reread can tell). ``read_checkpoint`` answers
    for the epoch of the ingest in progress (the wire names none). Subclasses in
    the mutant catalog put one bug in front of it (:mod:`fencepost.mutants.stores`).
    """

    def __init__(self, caller: WireCaller, order: Order | None = None) -> None:
        self.caller = caller
        self.order = order

    def _call(self, op: str, fields: JSONObject) -> Reply:
        reply = self.caller.call(op, fields, self.order)
        if isinstance(reply, ReplyTimeout):
            raise IndefiniteStoreError(f"{op}: the response was lost (timeout)")
        return reply

    # --- publisher level -------------------------------------------------------------

    def read_publication(self, stream: str) -> PublicationRecord:
        reply = self._call("read_publication", {"stream": stream})
        assert isinstance(reply, ReplyOk) and isinstance(reply.value, PublicationRecord)
        return reply.value

    def read_membership(self, stream: str, epoch: int | None = None) -> Membership:
        if epoch is not None:
            raise DefiniteStoreError(
                "the conformance wire reads only the current membership; pass epoch=None"
            )
        reply = self._call("read_membership", {"stream": stream})
        assert isinstance(reply, ReplyOk) and isinstance(reply.value, Membership)
        return reply.value

    def read_checkpoints(self, stream: str, epoch: int) -> Sequence[Checkpoint]:
        reply = self._call("read_checkpoints", {"stream": stream, "epoch": epoch})
        assert isinstance(reply, ReplyOk) and isinstance(reply.value, tuple)
        return reply.value

    def write_publication(
        self, stream: str, expected_revision: int, epoch: int, cut: Cut, op_id: str
    ) -> PublicationWrite:
        reply = self._call(
            "write_publication",
            {
                "stream": stream,
                "expected_revision": expected_revision,
                "epoch": epoch,
                "cut": cut_to_json(cut),
                "op_id": op_id,
            },
        )
        if isinstance(reply, ReplyConflict):
            assert isinstance(reply.current, PublicationRecord)
            return Conflict(reply.current)
        assert isinstance(reply, ReplyOk) and isinstance(reply.value, PublicationRecord)
        return Applied(reply.value)

    # --- checkpointer level ----------------------------------------------------------

    def read_checkpoint(self, stream: str, epoch: int, partition: str) -> Checkpoint | None:
        reply = self._call("read_checkpoint", {"partition": partition})
        assert isinstance(reply, ReplyOk)
        assert reply.value is None or isinstance(reply.value, Checkpoint)
        return reply.value

    def write_checkpoint(
        self, stream: str, expected_generation: int | None, checkpoint: Checkpoint
    ) -> CheckpointWrite:
        reply = self._call(
            "write_checkpoint",
            {
                "partition": checkpoint.partition,
                "expected_generation": expected_generation,
                "checkpoint": checkpoint_json(checkpoint),
            },
        )
        if isinstance(reply, ReplyConflict):
            assert reply.current is None or isinstance(reply.current, Checkpoint)
            return CheckpointConflict(reply.current)
        assert isinstance(reply, ReplyOk) and isinstance(reply.value, Checkpoint)
        return CheckpointApplied(reply.value)

    def record_outcome(self, stream: str, event_id: str, outcome: str) -> str:
        self._call("record_outcome", {"event_id": event_id, "outcome": outcome})
        return outcome

    def outcomes(self, stream: str, event_ids: Sequence[str]) -> dict[str, str]:
        raise DefiniteStoreError("the conformance wire has no call to read outcomes back")

    # Streams and memberships are the harness's business, never a worker's.
    def create_stream(self, stream: str, membership: Membership) -> PublicationRecord:
        raise DefiniteStoreError("the harness creates streams; a worker never does")

    def write_membership(self, stream: str, membership: Membership) -> None:
        raise DefiniteStoreError("the harness writes memberships; a worker never does")


class WireProvider:
    """The provider protocol over the wire: ``fetch_page`` calls; a timeout raises
    :class:`~fencepost.impl.provider.ProviderTimeout` (a fetch is a read: refetching is safe)."""

    def __init__(self, caller: WireCaller, order: Order) -> None:
        self.caller = caller
        self.order = order

    def fetch_page(self, partition: str, token: str | None) -> Page:
        reply = self.caller.call("fetch_page", {"partition": partition, "token": token}, self.order)
        if isinstance(reply, ReplyTimeout):
            raise ProviderTimeout(f"fetch_page({partition!r}, {token!r}): response lost")
        assert isinstance(reply, ReplyOk) and isinstance(reply.value, Page)
        return reply.value


class ReaderWireStore(WireStore):
    """The partition reader's store; remembers the last stored cut it was shown.

    If a pass runs out of retries, the session reports that cut (a claim the
    store held) rather than anything the pass computed but never stored.
    """

    def __init__(self, caller: WireCaller, order: Order) -> None:
        super().__init__(caller, order)
        self.known: Cut = NOTHING

    def read_checkpoint(self, stream: str, epoch: int, partition: str) -> Checkpoint | None:
        stored = super().read_checkpoint(stream, epoch, partition)
        self.known = NOTHING if stored is None else stored.cut
        return stored

    def write_checkpoint(
        self, stream: str, expected_generation: int | None, checkpoint: Checkpoint
    ) -> CheckpointWrite:
        result = super().write_checkpoint(stream, expected_generation, checkpoint)
        if result.checkpoint is not None:
            self.known = result.checkpoint.cut
        return result


def _handled(event: Event) -> str:
    """The terminal outcome the conformance SUT gives every event it is handed."""
    return "processed"


class SutSession:
    """One worker's side of the protocol: answers requests one at a time until shutdown.

    Publishers are kept per (worker, stream, policy) for the whole session, so
    op_ids (``<worker>-<n>``) stay fresh across attempts. A reply it cannot
    parse ends the request with an ``error`` message naming the problem; an
    unparsable request gets an ``error`` and the session keeps running, as
    the protocol asks.
    """

    def __init__(self, io: LineIO, variant: Variant = CORRECT) -> None:
        self.io = io
        self.variant = variant
        self.caller = WireCaller(io)
        self._forget()

    def _forget(self) -> None:
        """Drop everything earlier requests left behind (on start, and on ``reset``)."""
        self._publishers: dict[tuple[str, str, str], Publisher] = {}
        self._publisher_store = WireStore(self.caller)

    def _send(self, message: JSONObject) -> None:
        self.io.write_line(encode(message))

    def _error(self, request_id: WireId | None, message: str) -> None:
        self._send({"type": "error", "id": request_id, "message": message})

    def serve(self) -> int:
        """Answer requests until shutdown or end of input; the process exit status (0)."""
        while True:
            line = self.io.read_line()
            if line is None:
                return 0
            try:
                msg = decode_line(line)
            except MessageError as exc:
                self._error(None, str(exc))
                continue
            try:
                request = parse_harness_message(msg)
            except MessageError as exc:
                self._error(request_id_of(msg), str(exc))
                continue
            if isinstance(request, Shutdown):
                return 0
            if isinstance(request, Reset):
                self._forget()
                self._send({"type": "reset_ok"})
                continue
            try:
                self._answer(request)
            except SessionEnd:
                return 0
            except _BadReply as exc:
                self._error(request_id_of(msg), f"bad reply from the harness: {exc}")
            except (InvalidValue, StoreError, ValueError) as exc:
                self._error(request_id_of(msg), f"{type(exc).__name__}: {exc}")

    def _answer(self, request: HarnessRequest) -> None:
        if isinstance(request, Hello):
            if request.protocol != PROTOCOL_VERSION:
                self._error(None, f"protocol {request.protocol} is not supported; this is 1")
                return
            self._send(
                {
                    "type": "hello_ok",
                    "protocol": PROTOCOL_VERSION,
                    "name": self.variant.name,
                    "levels": list(self.variant.levels),
                    "capabilities": ["reset"],
                }
            )
        elif isinstance(request, CompareRequest):
            result = self.variant.compare(request.order, request.a, request.b)
            self._send({"type": "compare_ok", "id": request.id, "result": result})
        elif isinstance(request, MergeRequest):
            merged = self.variant.merge(request.membership, request.checkpoints)
            if isinstance(merged, Withheld):
                self._send({"type": "merge_ok", "id": request.id, "withheld": merged.reason.value})
            else:
                self._send({"type": "merge_ok", "id": request.id, "frontier": cut_to_json(merged)})
        elif isinstance(request, PublishRequest):
            self._publish(request)
        elif isinstance(request, IngestRequest):
            self._ingest(request)

    def _publish(self, request: PublishRequest) -> None:
        key = (request.worker, request.stream, request.policy)
        publisher = self._publishers.get(key)
        if publisher is None:
            publisher = self.variant.publisher(
                self._publisher_store, request.stream, request.worker, Policy(request.policy)
            )
            self._publishers[key] = publisher
        result = publisher.attempt()
        self._send(
            {
                "type": "publish_ok",
                "id": request.id,
                "outcome": result.outcome.value,
                "epoch": result.epoch,
                "cut": cut_to_json(result.cut if result.cut is not None else NOTHING),
                "reason": None if result.reason is None else result.reason.value,
            }
        )

    def _ingest(self, request: IngestRequest) -> None:
        store = ReaderWireStore(self.caller, request.order)
        provider = WireProvider(self.caller, request.order)
        reader = self.variant.reader(
            store,
            provider,
            INGEST_STREAM,
            request.partition,
            request.epoch,
            request.scope,
            request.order,
            _handled,
        )
        try:
            cut = reader.run_pass()
        except (IndefiniteStoreError, ProviderTimeout):
            # Out of retries: report what the store was last seen to hold, nothing more.
            cut = store.known
        self._send({"type": "ingest_ok", "id": request.id, "cut": cut_to_json(cut)})


class StdioLines:
    """A :class:`LineIO` over binary stdin/stdout; overlong input lines are cut and refused."""

    def __init__(self, stdin: BinaryIO, stdout: BinaryIO) -> None:
        self._in = stdin
        self._out = stdout

    def read_line(self) -> str | None:
        raw = self._in.readline(MAX_LINE_BYTES + 1)
        if not raw:
            return None
        if not raw.endswith(b"\n") and len(raw) > MAX_LINE_BYTES:
            while True:  # drop the rest of the overlong line
                more = self._in.readline(MAX_LINE_BYTES)
                if not more or more.endswith(b"\n"):
                    break
            return "<line longer than the protocol's limit>"
        return raw.rstrip(b"\n").decode("utf-8", "replace")

    def write_line(self, line: str) -> None:
        self._out.write(line.encode("utf-8") + b"\n")
        self._out.flush()


def serve_stdio(variant: Variant = CORRECT) -> int:
    """Run one SUT session on this process's stdin/stdout; the exit status."""
    return SutSession(StdioLines(sys.stdin.buffer, sys.stdout.buffer), variant).serve()


class InProcessSut:
    """A :class:`~fencepost.harness.transport.SutFactory` running sessions as threads.

    Each worker is a :class:`SutSession` of ``variant`` on its own thread,
    exchanging the same text lines a ``fencepost sut`` process would: the
    harness cannot tell the difference except by speed.
    """

    def __init__(self, variant: Variant = CORRECT) -> None:
        self.variant = variant

    @property
    def description(self) -> str:
        return f"in-process {self.variant.name}"

    def start(self, worker: str) -> Channel:
        from fencepost.harness.transport import ThreadChannel

        variant = self.variant
        return ThreadChannel(lambda io: SutSession(io, variant).serve(), worker)

    def close(self) -> None:
        """Nothing is kept in reserve: each channel ends its own thread."""
