"""A process's start-up has its own budget: a SUT slow to answer ``hello`` (importing a large
library on a loaded machine) is not judged by the per-message timeout.

The slow SUT here blocks until the test releases it, so no outcome depends on how fast the
machine is: the harness either waits for it (the start-up budget) or has already given up
(the broken variant, where the budget is the per-message timeout) before it is released.
"""

from __future__ import annotations

import sys
import threading

from click.testing import CliRunner

from fencepost.cli import main
from fencepost.harness.conformance import Failure, greet
from fencepost.harness.protocol import HelloOk
from fencepost.harness.rules import Rule
from fencepost.harness.transport import Channel, ThreadChannel
from fencepost.inputs.jsonlines import LineIO
from fencepost.sut.adapter import SutSession

#: The per-message timeout of these tests: far shorter than the SUT's start-up.
TIMEOUT = 0.05


class SlowStart:
    """A SUT factory whose processes start only when :attr:`released` is set."""

    def __init__(self, startup: float) -> None:
        self.startup = startup
        self.released = threading.Event()
        self.waiting = threading.Event()

    @property
    def description(self) -> str:
        return "a SUT blocked in its start-up until the test releases it"

    def start(self, worker: str) -> Channel:
        factory = self

        def target(io: LineIO) -> int:
            factory.waiting.set()
            factory.released.wait()
            return SutSession(io).serve()

        return ThreadChannel(target, worker, startup=self.startup)

    def close(self) -> None:
        self.released.set()


def test_a_slow_start_gets_the_start_up_budget() -> None:
    factory = SlowStart(startup=600.0)
    outcome: list[tuple[HelloOk | None, Failure | None]] = []
    greeting = threading.Thread(target=lambda: outcome.append(greet(factory, TIMEOUT)))
    greeting.start()
    assert factory.waiting.wait(30)
    # The harness is now waiting for hello; it must still be waiting after many times the
    # per-message timeout (a wait on the thread, which must not end by itself).
    greeting.join(40 * TIMEOUT)
    assert greeting.is_alive(), "the harness gave up on hello within the per-message timeout"
    factory.released.set()
    greeting.join(30)
    hello, failure = outcome[0]
    assert failure is None and hello is not None
    assert "publisher" in hello.levels


def test_without_a_start_up_budget_the_same_sut_hangs_at_hello() -> None:
    """The broken variant: a start-up budget no longer than the per-message timeout."""
    factory = SlowStart(startup=TIMEOUT)
    try:
        hello, failure = greet(factory, TIMEOUT)
    finally:
        factory.released.set()
    assert hello is None and failure is not None
    assert failure.violation.rule is Rule.SUT_HANG
    assert "start-up budget" in failure.violation.message
    assert "--startup-timeout" in failure.violation.message


def test_the_start_up_timeout_must_be_a_positive_number() -> None:
    for bad in ("0", "nan", "-1"):
        result = CliRunner().invoke(
            main, ["conform", "--startup-timeout", bad, "--", sys.executable, "-c", "pass"]
        )
        assert result.exit_code == 2 and "--startup-timeout" in result.stderr, bad
