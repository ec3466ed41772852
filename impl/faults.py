"""A store wrapper that injects the faults real networks and processes have.

:class:`FaultyStore` wraps any :class:`~fencepost.impl.stores.Store`. On each
call it draws from ``random.Random(seed)`` and, with the configured rates:

- ``lose_after``: performs the call, then raises
  :class:`~fencepost.impl.stores.IndefiniteStoreError` (applied, response lost);
- ``lose_before``: raises IndefiniteStoreError without calling (not applied,
  response lost: the caller cannot tell the two apart, which is the point);
- ``delay``: sleeps up to ``max_delay`` seconds, then performs the call;
- ``crash_before`` / ``crash_after``: raises :class:`Crash` before or after
  performing the call, modelling the process dying between two calls. Crash is
  a ``BaseException``, not a store error: production code must not catch it,
  just as it cannot catch ``kill -9``. The test restarts the worker from durable
  state (a fresh publisher or reader, a reopened store).

Every injected fault is appended to :attr:`FaultyStore.events`, so a test can
assert on what happened, and the same seed with the same sequence of calls
replays the same faults. ``plan`` forces a fault at given call numbers
(``{3: FaultKind.LOSE_AFTER}``), for tests of one precise schedule.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import TypeVar

from fencepost.impl.cuts import Cut
from fencepost.impl.merge import MergeSummary
from fencepost.impl.records import Checkpoint, Membership, PublicationRecord
from fencepost.impl.stores import (
    BatchWrite,
    CheckpointWrite,
    IndefiniteStoreError,
    PublicationWrite,
    Store,
)

T = TypeVar("T")

#: The store operations a FaultyStore can disturb (close is never disturbed).
OPERATIONS: tuple[str, ...] = (
    "create_stream",
    "read_membership",
    "write_membership",
    "read_publication",
    "write_publication",
    "read_checkpoint",
    "read_checkpoints",
    "read_merge_summary",
    "write_checkpoint",
    "write_checkpoints",
    "record_outcome",
    "outcomes",
)


class Crash(BaseException):
    """The process died here. Not a StoreError: nothing in production may catch it."""


class FaultKind(Enum):
    """What a FaultyStore did to one call."""

    LOSE_AFTER = "lose_after"
    LOSE_BEFORE = "lose_before"
    DELAY = "delay"
    CRASH_BEFORE = "crash_before"
    CRASH_AFTER = "crash_after"


@dataclass(frozen=True, slots=True)
class FaultEvent:
    """One injected fault: the call number (from 0), the operation, the fault, its args."""

    call: int
    op: str
    kind: FaultKind
    args: tuple[object, ...]
    delay: float = 0.0


def _rate(value: float, name: str) -> float:
    if type(value) not in (int, float) or not 0.0 <= value <= 1.0:
        raise ValueError(f"{name} must be a probability between 0 and 1, got {value!r}")
    return float(value)


class FaultyStore:
    """Any store, with seeded lost responses, delays and crashes between calls."""

    def __init__(
        self,
        inner: Store,
        seed: int = 0,
        *,
        lose_after: float = 0.0,
        lose_before: float = 0.0,
        delay: float = 0.0,
        crash_before: float = 0.0,
        crash_after: float = 0.0,
        max_delay: float = 0.01,
        ops: Collection[str] | None = None,
        plan: Mapping[int, FaultKind] | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.inner = inner
        self.seed = seed
        self._random = random.Random(seed)
        self._rates: tuple[tuple[FaultKind, float], ...] = (
            (FaultKind.LOSE_AFTER, _rate(lose_after, "lose_after")),
            (FaultKind.LOSE_BEFORE, _rate(lose_before, "lose_before")),
            (FaultKind.DELAY, _rate(delay, "delay")),
            (FaultKind.CRASH_BEFORE, _rate(crash_before, "crash_before")),
            (FaultKind.CRASH_AFTER, _rate(crash_after, "crash_after")),
        )
        if sum(r for _, r in self._rates) > 1.0:
            raise ValueError("the fault rates add up to more than 1")
        unknown = set(ops or ()) - set(OPERATIONS)
        if unknown:
            raise ValueError(
                f"unknown store operations {sorted(unknown)}; known: {', '.join(OPERATIONS)}"
            )
        self.ops = frozenset(OPERATIONS if ops is None else ops)
        self.max_delay = max_delay
        self.plan = dict(plan or {})
        self._sleep = sleep
        self.calls = 0
        #: Every fault injected so far, in call order.
        self.events: list[FaultEvent] = []
        #: Set False to pass every call through (e.g. while a test inspects state).
        self.enabled = True

    def _choose(self, call: int, op: str) -> FaultKind | None:
        draw = self._random.random()  # drawn for every call, so schedules replay by seed
        if call in self.plan:
            return self.plan[call]
        if not self.enabled or op not in self.ops:
            return None
        threshold = 0.0
        for kind, rate in self._rates:
            threshold += rate
            if draw < threshold:
                return kind
        return None

    def _call(self, op: str, args: tuple[object, ...], perform: Callable[[], T]) -> T:
        call = self.calls
        self.calls += 1
        kind = self._choose(call, op)
        if kind is None:
            return perform()
        pause = self._random.uniform(0.0, self.max_delay) if kind is FaultKind.DELAY else 0.0
        self.events.append(FaultEvent(call, op, kind, args, pause))
        if kind is FaultKind.LOSE_BEFORE:
            raise IndefiniteStoreError(f"injected: {op} response lost before it was applied")
        if kind is FaultKind.CRASH_BEFORE:
            raise Crash(f"injected: process died before {op} (call {call})")
        if kind is FaultKind.DELAY:
            self._sleep(pause)
            return perform()
        perform()
        if kind is FaultKind.LOSE_AFTER:
            raise IndefiniteStoreError(f"injected: {op} was performed but its response was lost")
        raise Crash(f"injected: process died after {op} (call {call})")

    def faults(self, kind: FaultKind | None = None, op: str | None = None) -> list[FaultEvent]:
        """The injected faults, filtered by kind and/or operation."""
        return [
            e
            for e in self.events
            if (kind is None or e.kind is kind) and (op is None or e.op == op)
        ]

    # --- the Store protocol, each call through _call -----------------------------

    def create_stream(self, stream: str, membership: Membership) -> PublicationRecord:
        return self._call(
            "create_stream", (stream,), lambda: self.inner.create_stream(stream, membership)
        )

    def read_membership(self, stream: str, epoch: int | None = None) -> Membership:
        return self._call(
            "read_membership", (stream, epoch), lambda: self.inner.read_membership(stream, epoch)
        )

    def write_membership(self, stream: str, membership: Membership) -> None:
        self._call(
            "write_membership",
            (stream, membership.epoch),
            lambda: self.inner.write_membership(stream, membership),
        )

    def read_publication(self, stream: str) -> PublicationRecord:
        return self._call(
            "read_publication", (stream,), lambda: self.inner.read_publication(stream)
        )

    def write_publication(
        self, stream: str, expected_revision: int, epoch: int, cut: Cut, op_id: str
    ) -> PublicationWrite:
        return self._call(
            "write_publication",
            (stream, expected_revision, epoch, str(cut), op_id),
            lambda: self.inner.write_publication(stream, expected_revision, epoch, cut, op_id),
        )

    def read_checkpoint(self, stream: str, epoch: int, partition: str) -> Checkpoint | None:
        return self._call(
            "read_checkpoint",
            (stream, epoch, partition),
            lambda: self.inner.read_checkpoint(stream, epoch, partition),
        )

    def read_checkpoints(self, stream: str, epoch: int) -> Sequence[Checkpoint]:
        return self._call(
            "read_checkpoints", (stream, epoch), lambda: self.inner.read_checkpoints(stream, epoch)
        )

    def write_checkpoint(
        self, stream: str, expected_generation: int | None, checkpoint: Checkpoint
    ) -> CheckpointWrite:
        return self._call(
            "write_checkpoint",
            (stream, expected_generation, checkpoint.partition, str(checkpoint.cut)),
            lambda: self.inner.write_checkpoint(stream, expected_generation, checkpoint),
        )

    def write_checkpoints(self, stream: str, writes: Sequence[BatchWrite]) -> list[CheckpointWrite]:
        """One batch is one call: a fault hits the whole batch, as it hits one transaction."""
        return self._call(
            "write_checkpoints",
            (stream, tuple((e, c.partition, str(c.cut)) for e, c in writes)),
            lambda: self.inner.write_checkpoints(stream, writes),
        )

    def read_merge_summary(self, stream: str, epoch: int) -> MergeSummary:
        return self._call(
            "read_merge_summary",
            (stream, epoch),
            lambda: self.inner.read_merge_summary(stream, epoch),
        )

    def record_outcome(self, stream: str, event_id: str, outcome: str) -> str:
        return self._call(
            "record_outcome",
            (stream, event_id),
            lambda: self.inner.record_outcome(stream, event_id, outcome),
        )

    def outcomes(self, stream: str, event_ids: Sequence[str]) -> dict[str, str]:
        return self._call(
            "outcomes", (stream, len(event_ids)), lambda: self.inner.outcomes(stream, event_ids)
        )

    def close(self) -> None:
        self.inner.close()
