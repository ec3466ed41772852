"""fencepost's own SUT, in process, behind a filter of the lines it writes.

Shared by the harness tests that need an implementation differing from the correct
one in one visible way (a declared range, a refused reset, a changed answer).
"""

from __future__ import annotations

from collections.abc import Callable

from fencepost.harness.transport import Channel, ThreadChannel
from fencepost.inputs.jsonlines import LineIO
from fencepost.mutants import CORRECT, Variant
from fencepost.sut.adapter import SutSession

Filter = Callable[[str], str | None]


class _Filtered:
    """A LineIO between the harness and a session: rewrites what the SUT writes."""

    def __init__(self, io: LineIO, outbound: Filter, inbound: list[str]) -> None:
        self.io = io
        self.outbound = outbound
        self.inbound = inbound

    def read_line(self) -> str | None:
        line = self.io.read_line()
        if line is not None:
            self.inbound.append(line)
        return line

    def write_line(self, line: str) -> None:
        out = self.outbound(line)
        if out is not None:
            self.io.write_line(out)


class FilteredSut:
    """fencepost's SUT with its written lines passed through ``outbound``."""

    def __init__(self, outbound: Filter, variant: Variant = CORRECT) -> None:
        self.outbound = outbound
        self.variant = variant
        self.inbound: list[str] = []
        self.started = 0

    @property
    def description(self) -> str:
        return "filtered in-process fencepost"

    def start(self, worker: str) -> Channel:
        self.started += 1
        variant, outbound, inbound = self.variant, self.outbound, self.inbound
        return ThreadChannel(
            lambda io: SutSession(_Filtered(io, outbound, inbound), variant).serve(), worker
        )

    def close(self) -> None:
        pass
