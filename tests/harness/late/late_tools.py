"""Reference sync tools for the late-commit world, written on ``fencepost.adapters.runtime``.

One small incremental-sync tool with switches, so that each deliberately
broken variant differs from the correct one by exactly one decision:

- :data:`CORRECT`: per partition, reads every page from its resume point
  (inclusive) and resumes next time from ``before (min(greatest value read,
  now) - D)`` floored to the granularity; commits the records and the new
  state in one commit with ``merge``. It may declare exactly-once: merge never
  leaves two copies. The clamp to ``now`` matters: a row that commits behind a
  page already read lies above ``now - D`` (it was not visible when the sync
  started), but may lie below ``greatest read - D`` when the sync read a
  newer row later (docs/conformance.md, "The late-commit world");
- the broken ones (:data:`BROKEN`), each with the property the harness must
  report and why it is wrong.

``python late_tools.py VARIANT [--sync-ms N]`` serves one variant on
stdin/stdout as ``fencepost adapter`` does (``N`` milliseconds of work per
sync, to measure the harness's budget against a slow tool).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

from fencepost.adapters.runtime import (
    Bound,
    Coverage,
    Delivery,
    LostResponse,
    Mode,
    Page,
    Row,
    SourceClient,
    SyncRequest,
    SyncResult,
    Tool,
    protect_stdout,
    serve,
    serve_stdio,
)
from fencepost.inputs.jsonlines import LineIO

if TYPE_CHECKING:
    from fencepost.harness.transport import Channel

T = TypeVar("T")

#: Attempts per call before the sync gives up (outcome failed).
ATTEMPTS = 3


@dataclass(frozen=True)
class Variant:
    """The decisions of one reference tool (see the module docstring)."""

    name: str
    #: Resume from the greatest value read (``through``), not a lagged ``before``.
    through_max: bool = False
    #: Lag as a fraction of D (1.0: the declared bound).
    lag: float = 1.0
    #: Clamp the greatest value read to the sync's ``now`` before subtracting the lag.
    clamp_now: bool = True
    #: Page on by value (``> last value`` where expressible) instead of the token.
    strict_pages: bool = False
    #: Query up to the last whole second before ``now - D`` (inclusive), resume at ``now - D``.
    seconds_gap: bool = False
    #: One resume point for every partition (the greatest over them).
    global_cursor: bool = False
    #: Commit the new state first, then the records (two commits).
    state_first: bool = False
    #: Use the source's horizon: the first page's (correct) or the last page's (broken).
    horizon: str | None = None
    #: When ``read_state``'s response is lost, start every partition at ``now - D`` (recent
    #: rows only) instead of asking again: the state in the destination is skipped over.
    recent_without_state: bool = False
    #: Read a window per sync: ``[resume, upper)`` with ``upper`` the sync's ``now - D``
    #: rounded to the granularity, ``floor`` (correct) or ``ceil`` (broken: rows inside
    #: the rounded-up part may not have committed yet), and resume at ``upper``.
    window: str | None = None
    #: The resume query's lower bound is inclusive (the state ``before x`` says rows at
    #: ``x`` are not covered yet); exclusive is broken for a window tool.
    lower_inclusive: bool = True
    mode: Mode = "merge"
    delivery: Delivery = "exactly-once"
    #: Work per sync, in milliseconds (for budget measurements only; never decides anything).
    sync_ms: int = 0


CORRECT = Variant("correct")
CORRECT_HORIZON = Variant("correct-horizon", horizon="first")
#: A correct tool of another shape: it reads a window per sync, up to ``now - D`` floored
#: to the granularity (exclusive), and resumes at that edge (inclusive).
CORRECT_WINDOW = Variant("correct-window", window="floor")

#: The broken variants: name -> (variant, the property the harness must report).
BROKEN: dict[str, tuple[Variant, str]] = {
    "through-max": (Variant("through-max", through_max=True), "no_lost_rows"),
    "strict-shared": (Variant("strict-shared", strict_pages=True), "no_lost_rows"),
    "seconds-gap": (Variant("seconds-gap", seconds_gap=True), "no_lost_rows"),
    "global-cursor": (Variant("global-cursor", global_cursor=True), "no_lost_rows"),
    "state-first": (Variant("state-first", state_first=True), "no_lost_rows"),
    "short-lag": (Variant("short-lag", lag=0.5), "no_lost_rows"),
    "lag-from-read": (Variant("lag-from-read", clamp_now=False), "no_lost_rows"),
    "append-exactly-once": (
        Variant("append-exactly-once", mode="append", delivery="exactly-once"),
        "exactly_once",
    ),
    "recent-without-state": (
        Variant("recent-without-state", recent_without_state=True),
        "no_lost_rows",
    ),
    # issue 21: a window tool that rounds a sub-second upper bound up, and one whose resume
    # query's lower bound is exclusive where its state says inclusive.
    "sync-gran-ceil": (Variant("sync-gran-ceil", window="ceil"), "no_lost_rows"),
    "sync-lower-exclusive": (
        Variant("sync-lower-exclusive", window="floor", lower_inclusive=False),
        "no_lost_rows",
    ),
}
HORIZON_BROKEN: dict[str, tuple[Variant, str]] = {
    "horizon-last-page": (Variant("horizon-last-page", horizon="last"), "no_lost_rows"),
}

VARIANTS: dict[str, Variant] = {
    CORRECT.name: CORRECT,
    CORRECT_HORIZON.name: CORRECT_HORIZON,
    CORRECT_WINDOW.name: CORRECT_WINDOW,
    **{name: v for name, (v, _) in BROKEN.items()},
    **{name: v for name, (v, _) in HORIZON_BROKEN.items()},
}


class GaveUp(Exception):
    """A call lost its response :data:`ATTEMPTS` times: the sync fails (it runs again later)."""


def attempt(call: Callable[[], T]) -> T:
    for _ in range(ATTEMPTS):
        try:
            return call()
        except LostResponse:
            continue
    raise GaveUp("too many lost responses")


def floor(value: int, step: int) -> int:
    return value - value % step


def ceil(value: int, step: int) -> int:
    return -floor(-value, step)


class ReferenceTool(Tool):
    """One :class:`Variant` as a :class:`~fencepost.adapters.runtime.Tool` (memoryless)."""

    def __init__(self, variant: Variant) -> None:
        self.variant = variant
        self._g = 1

    @property
    def name(self) -> str:
        return f"reference sync tool ({self.variant.name})"

    @property
    def delivery(self) -> Delivery:
        return self.variant.delivery

    def reset(self) -> None:
        """Nothing is held between syncs: the state lives in the destination."""

    def sync(self, request: SyncRequest, source: SourceClient) -> SyncResult:
        v = self.variant
        if v.sync_ms:
            time.sleep(v.sync_ms / 1000)
        src = request.source
        g = self._g = src.granularity
        recent: int | None = None
        if v.recent_without_state:
            try:
                stored = source.read_state()
            except LostResponse:
                stored, recent = None, floor(request.now - src.max_commit_delay, g)
        else:
            stored = attempt(source.read_state)
        state: dict[str, int] = dict(stored) if isinstance(stored, dict) else {}
        partitions = attempt(source.list_partitions)
        if recent is not None:
            state = {p: recent for p in partitions}
        coverage: dict[str, Coverage] = {}
        reads: dict[str, tuple[list[Row], int | None]] = {}
        for p in partitions:
            resume = state.get(p)
            if v.global_cursor:
                resume = state.get("*")
            if v.through_max:
                lower = None if resume is None else Bound(floor(resume, g), True)
                rows, horizon = self._read(source, p, lower, None)
                rows = [r for r in rows if resume is None or r.at > resume]
            elif v.window is not None:
                edge = request.now - src.max_commit_delay
                upper = ceil(edge, g) if v.window == "ceil" else floor(edge, g)
                lower = None if resume is None else Bound(resume, v.lower_inclusive)
                if resume is not None and resume >= upper:
                    rows, horizon = [], None
                else:
                    rows, horizon = self._read(source, p, lower, Bound(upper, False))
            elif v.seconds_gap:
                upper = floor(request.now - src.max_commit_delay, g) - g
                lower = None if resume is None else Bound(resume, True)
                if resume is not None and resume > upper:
                    rows, horizon = [], None
                else:
                    rows, horizon = self._read(source, p, lower, Bound(upper, True))
            else:
                lower = None if resume is None else Bound(resume, True)
                rows, horizon = self._read(source, p, lower, None)
            reads[p] = (rows, horizon)
        if v.global_cursor:
            best = [self._next(request, state.get("*"), rows, h) for rows, h in reads.values()]
            known = [b for b in best if b is not None]
            shared = max(known) if known else state.get("*")
        for p, (rows, horizon) in reads.items():
            if v.global_cursor:
                new = shared
                if new is not None:
                    state["*"] = new
            else:
                new = self._next(request, state.get(p), rows, horizon)
                if new is not None:
                    state[p] = new
            ids = [r.id for r in rows]
            snapshot = dict(state)
            if v.state_first:
                attempt(lambda s=snapshot: source.commit([], v.mode, s))  # type: ignore[misc]
                attempt(lambda ids=ids: source.commit(ids, v.mode))  # type: ignore[misc]
            else:
                attempt(
                    lambda ids=ids, s=snapshot: source.commit(ids, v.mode, s)  # type: ignore[misc]
                )
            if new is not None:
                coverage[p] = Coverage(new, "through") if v.through_max else Coverage(new, "before")
        return SyncResult("completed", coverage)

    def _next(
        self, request: SyncRequest, old: int | None, rows: Sequence[Row], horizon: int | None
    ) -> int | None:
        """The new resume point of one partition (never behind the old one)."""
        v = self.variant
        src = request.source
        g = src.granularity
        if v.window is not None:
            edge = request.now - src.max_commit_delay
            new: int | None = ceil(edge, g) if v.window == "ceil" else floor(edge, g)
        elif v.seconds_gap:
            new = floor(request.now - src.max_commit_delay, g)
        elif v.horizon is not None:
            new = None if horizon is None else floor(horizon, g)
        elif not rows:
            new = None
        elif v.through_max:
            new = max(r.at for r in rows)
        else:
            greatest = max(r.at for r in rows)
            if v.clamp_now:
                greatest = min(greatest, request.now)
            new = floor(greatest - int(src.max_commit_delay * v.lag), g)
        if new is None:
            return old
        return new if old is None else max(old, new)

    def _read(
        self, source: SourceClient, partition: str, lower: Bound | None, upper: Bound | None
    ) -> tuple[list[Row], int | None]:
        """Every page of one query; the horizon of the first (or last) page."""
        v = self.variant
        rows: list[Row] = []
        after: str | None = None
        horizon: int | None = None
        first = True
        while True:
            page: Page = attempt(
                lambda lower=lower, after=after: source.query(  # type: ignore[misc]
                    partition, lower, upper, after
                )
            )
            rows.extend(page.rows)
            if page.horizon is not None and (first or v.horizon == "last"):
                horizon = page.horizon
            first = False
            if page.next is None:
                return rows, horizon
            last = page.rows[-1]
            if v.strict_pages and last.at % self._g == 0:
                lower, after = Bound(last.at, False), None
            else:
                after = page.next


def tool(variant: Variant) -> ReferenceTool:
    return ReferenceTool(variant)


def serve_variant(variant: Variant) -> Callable[[LineIO], int]:
    """A session serving ``variant`` (the target of an in-process channel)."""
    return lambda io: serve(tool(variant), io)


class InProcessTool:
    """A harness SUT factory running the reference tool in threads (no subprocess)."""

    def __init__(self, variant: Variant = CORRECT) -> None:
        self.variant = variant

    @property
    def description(self) -> str:
        return f"in-process reference tool {self.variant.name}"

    def start(self, worker: str) -> Channel:
        from fencepost.harness.transport import ThreadChannel

        return ThreadChannel(serve_variant(self.variant), worker)

    def close(self) -> None:
        """Nothing is kept in reserve."""


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("variant", choices=sorted(VARIANTS))
    parser.add_argument("--sync-ms", type=int, default=0)
    parser.add_argument("--start-ms", type=int, default=0)
    args = parser.parse_args(argv)
    if args.start_ms:
        time.sleep(args.start_ms / 1000)  # a library's import, paid once per process (benchmarks)
    wire = protect_stdout()
    variant = dataclasses.replace(VARIANTS[args.variant], sync_ms=args.sync_ms)
    return serve_stdio(tool(variant), wire)


class ScriptedTool(ReferenceTool):
    """A tool whose every sync is ``script(request, source)``: for tests of single rules."""

    def __init__(
        self,
        script: Callable[[SyncRequest, SourceClient], SyncResult],
        delivery: Delivery = "at-least-once",
    ) -> None:
        super().__init__(dataclasses.replace(CORRECT, name="scripted", delivery=delivery))
        self.script = script

    def sync(self, request: SyncRequest, source: SourceClient) -> SyncResult:
        return self.script(request, source)


class InProcessScript:
    """A harness SUT factory running a :class:`ScriptedTool` in threads."""

    def __init__(
        self,
        script: Callable[[SyncRequest, SourceClient], SyncResult],
        delivery: Delivery = "at-least-once",
    ) -> None:
        self.script = script
        self.delivery: Delivery = delivery
        self.starts = 0

    @property
    def description(self) -> str:
        return "in-process scripted tool"

    def start(self, worker: str) -> Channel:
        from fencepost.harness.transport import ThreadChannel

        self.starts += 1
        tool = ScriptedTool(self.script, self.delivery)
        return ThreadChannel(lambda io: serve(tool, io), worker)

    def close(self) -> None:
        """Nothing is kept in reserve."""


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
