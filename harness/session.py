"""One SUT worker talked to line by line, outside any world: the algebra level and the probes.

The handshake (or a process kept by a :class:`~fencepost.harness.pool.SutPool`),
requests and their answers, and the end (shutdown, or reset into the pool), with
every line kept for the transcript. The algebra level asks its compare and merge
cases through it, the error-handling probes their malformed messages.
"""

from __future__ import annotations

import contextlib
import json

from fencepost.harness.pool import SutPool
from fencepost.harness.protocol import (
    PROTOCOL_VERSION,
    ErrorReply,
    HelloOk,
    hello_message,
    parse_sut_message,
    shutdown_message,
)
from fencepost.harness.results import TranscriptLine
from fencepost.harness.rules import Rule, SutFailure, Violation
from fencepost.harness.transport import (
    SHUTDOWN_GRACE,
    Channel,
    SutFactory,
    ending_problem,
    stray_words,
)
from fencepost.inputs.jsonlines import (
    MessageError,
    encode,
)

#: A blank line is never a message: the protocol has none, and it answers nothing.
BLANK_LINE = (
    "a blank line arrived where the answer to {what} was due; the protocol has no blank "
    "lines (write nothing but messages to stdout)"
)


def _id_of(text: str) -> object:
    """The ``id`` of a request the harness sends (None if it has none or is not JSON)."""
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value.get("id") if isinstance(value, dict) else None


class LineSession:
    """One worker talked to line by line: handshake, requests, answers; keeps the transcript."""

    def __init__(
        self, factory: SutFactory, timeout: float, worker: str, *, require: str | None = None
    ) -> None:
        self.factory = factory
        self.timeout = timeout
        self.worker = worker
        self.require = require
        self.lines: list[TranscriptLine] = []
        self.messages = 0
        self.case_no = 0
        self.channel: Channel | None = None
        self.next_id = 0
        self.hello: HelloOk | None = None
        #: The ids of the requests sent (None for a line that carried none).
        self.sent_ids: set[object] = set()
        #: Nothing was sent since hello_ok (or since the kept process was taken).
        self.fresh = False

    def note(self, direction: str, text: str) -> None:
        if direction != "**":
            self.messages += 1
        self.lines.append(TranscriptLine(self.case_no, self.worker, direction, text))

    def send(self, text: str) -> None:
        assert self.channel is not None
        if self.hello is not None:  # before it, anything the SUT wrote answers hello
            self.check_idle()
        self.note("->", text)
        self.sent_ids.add(_id_of(text))
        self.fresh = False
        self.channel.send(text, self.timeout)

    def check_idle(self) -> None:
        """Refuse anything the SUT wrote while nothing was asked (after ``hello_ok``, say):
        it answers no request, so it breaks call pairing, whatever it looks like."""
        assert self.channel is not None
        extra = self.channel.unsolicited()
        if extra is not None:
            self.note("<-", extra)
            when = "right after hello_ok" if self.fresh else "while idle"
            raise SutFailure(
                Rule.CALL_PAIRING,
                f"unsolicited output {when}: {extra[:200]!r} {stray_words(extra)}",
                self.worker,
            )

    def receive(self) -> str:
        assert self.channel is not None
        line = self.channel.receive(self.timeout)
        self.note("<-", line)
        return line

    def open(self) -> None:
        pool = self.factory if isinstance(self.factory, SutPool) else None
        kept = None if pool is None or pool.hello is None else pool.acquire(self.worker)
        if kept is not None and pool is not None and pool.hello is not None:
            self.channel = kept
            self.note("**", "a process kept from an earlier run (reset)")
            msg: object = pool.hello
        else:
            self.channel = self.factory.start(self.worker)
            self.send(encode(hello_message()))
            line = self.receive()
            try:
                msg = parse_sut_message(line)
            except MessageError as exc:
                raise SutFailure(
                    Rule.HANDSHAKE, f"hello answered with {exc}", self.worker
                ) from None
            if not isinstance(msg, HelloOk) or msg.protocol != PROTOCOL_VERSION:
                raise SutFailure(Rule.HANDSHAKE, f"hello answered with {line[:200]!r}", self.worker)
            if pool is not None and pool.hello is None:
                pool.hello = msg
        assert isinstance(msg, HelloOk)
        self.hello = msg
        self.fresh = True
        if self.require is not None and self.require not in msg.levels:
            raise SutFailure(
                Rule.HANDSHAKE, f"the SUT does not implement level {self.require!r}", self.worker
            )

    def expect_error(self, request_id: int | None, what: str) -> None:
        line = self.receive()
        if not line.strip():
            raise SutFailure(Rule.CALL_PAIRING, BLANK_LINE.format(what=what), self.worker)
        try:
            msg = parse_sut_message(line)
        except MessageError as exc:
            if exc.field == "line":
                # Not JSON at all: a line written unprompted (a log line on stdout, say),
                # not an answer to the probe.
                raise SutFailure(
                    Rule.CALL_PAIRING,
                    f"a line that is no message of the protocol arrived where the answer to "
                    f"{what} was due: {line[:120]!r} (write logs to stderr)",
                    self.worker,
                ) from None
            raise SutFailure(
                Rule.ERROR_HANDLING, f"{what} was answered with {exc}", self.worker
            ) from None
        answered = getattr(msg, "id", None)
        if (
            not isinstance(msg, ErrorReply)
            and answered is not None
            and answered not in self.sent_ids
        ):
            raise SutFailure(
                Rule.CALL_PAIRING,
                f"an answer to request {answered!r}, which was never sent, arrived where the "
                f"answer to {what} was due: {line[:200]!r} (an unsolicited message)",
                self.worker,
            )
        if not isinstance(msg, ErrorReply) or msg.id != request_id:
            raise SutFailure(
                Rule.ERROR_HANDLING,
                f"{what} must be answered with an error carrying id {request_id!r}; got "
                f"{line[:200]!r}",
                self.worker,
            )

    def close(self, clean: bool) -> Violation | None:
        if self.channel is None:
            return None
        if isinstance(self.factory, SutPool):
            if not clean:
                self.factory.discard(self.channel)
                return None
            problem = self.factory.release(self.channel)
            return (
                None
                if problem is None
                else Violation(problem[0], problem[1], self.case_no, self.worker)
            )
        if clean:
            # Stray output is the SUT's fault under its own rule (an answer written twice is
            # call_pairing): found here, never swallowed with the shutdown it would stop.
            try:
                self.check_idle()
            except SutFailure as failure:
                self.channel.close(0.3)
                return Violation(failure.rule, failure.message, self.case_no, self.worker)
        text = encode(shutdown_message())
        self.note("->", text)
        with contextlib.suppress(SutFailure, OSError):
            self.channel.send(text, self.timeout)
        grace = SHUTDOWN_GRACE if clean else 0.3
        status = self.channel.close(grace)
        problem = ending_problem(self.channel, status, grace) if clean else None
        if problem is not None:
            return Violation(problem[0], problem[1], self.case_no, self.worker)
        return None
