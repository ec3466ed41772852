"""Reusing SUT processes between runs, for SUTs that declared the ``reset`` capability.

Starting a process per worker per run dominates the cost of a conformance run
(an interpreter start-up is tens of milliseconds; a run exchanges a few dozen
messages). A SUT whose ``hello_ok`` lists ``"capabilities": ["reset"]`` promises
that after ``{"type": "reset"}`` is answered with ``{"type": "reset_ok"}`` it
behaves exactly as a freshly started process that has just answered ``hello``
(docs/conformance-protocol.md, "Handshake"). A :class:`SutPool` keeps such
processes between runs:

- :meth:`SutPool.acquire` hands out an idle, already greeted process of the same
  worker name (or None: the caller starts and greets a fresh one with
  :meth:`SutPool.start`);
- :meth:`SutPool.release` resets a process at the end of a run and keeps it if
  it answered ``reset_ok``; anything else is a ``reset`` violation and the
  process is killed;
- :meth:`SutPool.close` shuts every kept process down and reports any that did
  not exit with status 0 (the ``shutdown`` rule, checked once per process
  instead of once per run).

A process is reused only for the worker name it was started for, so every
failure a channel reports names the right worker. The promise itself is checked
by :func:`fencepost.harness.conformance.conform`: every failure found on reused
processes is replayed on fresh ones, and a failure that does not come back is a
``reset`` violation (the process kept something a reset should have cleared).

Cost: a reset is one message each way per worker per run.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

from fencepost.harness.protocol import (
    HelloOk,
    ResetOk,
    parse_sut_message,
    reset_message,
    shutdown_message,
)
from fencepost.harness.rules import Rule, SutFailure
from fencepost.harness.transport import SHUTDOWN_GRACE, Channel, SutFactory, ending_problem
from fencepost.inputs.jsonlines import (
    MessageError,
    encode,
)


@dataclass(frozen=True, slots=True)
class PoolProblem:
    """A kept process that broke a rule outside any run (at reset or at shutdown)."""

    worker: str
    rule: Rule
    message: str
    stderr: str


class SutPool:
    """A :class:`~fencepost.harness.transport.SutFactory` whose processes outlive a run."""

    def __init__(self, factory: SutFactory, timeout: float) -> None:
        self.factory = factory
        self.timeout = timeout
        self._idle: dict[str, list[Channel]] = {}
        self.started = 0
        self.reused = 0
        self.problems: list[PoolProblem] = []
        #: The SUT's hello_ok, from the first process greeted (kept processes skip hello).
        self.hello: HelloOk | None = None
        #: A crash the harness simulates may drain and reset the process instead of killing
        #: it (``late_runner.LateRun._recycle``); False kills it (the baseline of a benchmark).
        self.recycle = True

    @property
    def description(self) -> str:
        return self.factory.description

    def start(self, worker: str) -> Channel:
        """A fresh process (the caller greets it)."""
        self.started += 1
        return self.factory.start(worker)

    def keep(self, channel: Channel, worker: str) -> None:
        """Keep a freshly greeted process (nothing sent since ``hello_ok``) for ``worker``."""
        self._idle.setdefault(worker, []).append(channel)

    def acquire(self, worker: str) -> Channel | None:
        """An idle, greeted process kept for ``worker``, or None."""
        idle = self._idle.get(worker)
        if not idle:
            return None
        self.reused += 1
        return idle.pop()

    def release(self, channel: Channel) -> tuple[Rule, str] | None:
        """Reset ``channel`` and keep it; on failure kill it and say why: a ``reset`` breach,
        or ``call_pairing`` when an answer to a request arrived where ``reset_ok`` was due
        (an answer written twice: the extra line is the fault, not the reset)."""
        try:
            channel.send(encode(reset_message()), self.timeout)
            line = channel.receive(self.timeout)
        except SutFailure as failure:
            channel.close(0.3)
            return (Rule.RESET, f"reset failed: {failure.message}")
        try:
            answer = parse_sut_message(line)
        except MessageError as exc:
            channel.close(0.3)
            return (Rule.RESET, f"reset was answered with {exc}")
        if not isinstance(answer, ResetOk):
            channel.close(0.3)
            if getattr(answer, "id", None) is not None:
                return (
                    Rule.CALL_PAIRING,
                    f"an answer to a request already answered arrived after the run, where "
                    f"reset_ok was due: {line[:200]!r} (an answer written twice?)",
                )
            return (Rule.RESET, f"reset must be answered with reset_ok; got {line[:200]!r}")
        self._idle.setdefault(channel.worker, []).append(channel)
        return None

    def discard(self, channel: Channel) -> None:
        """Kill a process that cannot be reused (it failed, or a request is in progress)."""
        channel.close(0.3)

    def abandon(self) -> None:
        """Kill every kept process at once, with no shutdown message (a Ctrl-C: no verdict
        is reached, so nobody waits for a graceful exit)."""
        for channels in self._idle.values():
            for channel in channels:
                channel.close(0.0)
        self._idle.clear()
        self.factory.close()

    def close(self) -> None:
        """Shut every kept process down; remember each that did not exit with status 0."""
        for worker, channels in sorted(self._idle.items()):
            for channel in channels:
                with contextlib.suppress(SutFailure, OSError):
                    channel.send(encode(shutdown_message()), self.timeout)
                status = channel.close(SHUTDOWN_GRACE)
                problem = ending_problem(channel, status, SHUTDOWN_GRACE)
                if problem is not None:
                    self.problems.append(
                        PoolProblem(worker, problem[0], problem[1], channel.stderr_tail())
                    )
        self._idle.clear()
        self.factory.close()
