"""A concurrent workload with known ground truth, recorded for ``fencepost.audit``.

Publisher and partition-reader *processes* run the production
:class:`~fencepost.impl.publisher.Publisher` and
:class:`~fencepost.impl.reader.PartitionReader` against one real store (any
:func:`~fencepost.impl.open.open_store` location: a PostgreSQL URL or a SQLite
path), every call recorded by a :class:`~fencepost.impl.recording.RecordingStore`
into one audit log per process (docs/audit.md). The provider is static and deterministic, so any
number of readers may page the same partition and the checker knows every
event, its position and that it is final.

Pages: from a token (an index into the partition's events) a page holds 1 to 4
events, sometimes repeats the previous event (overlap), and claims ``through
x`` (final) when no later event shares the last event's coordinate ``x``,
``before x`` (final) when one does, and now and then a non-final claim that
must never be certified. The empty page at the end claims ``through`` the last
coordinate.
"""

from __future__ import annotations

import hashlib
import logging
import random
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from fencepost.impl.cuts import Cut
from fencepost.impl.faults import FaultyStore
from fencepost.impl.open import open_store
from fencepost.impl.orders import IntegerOrder
from fencepost.impl.provider import Claim, Event, Page, ProviderTimeout
from fencepost.impl.publisher import Outcome, Policy, Publisher
from fencepost.impl.reader import PartitionReader
from fencepost.impl.recording import LogWriter, RecordingStore
from fencepost.impl.records import Membership
from fencepost.impl.stores import Store, StoreError, StoreOpenError

ORDER = IntegerOrder("offsets", successor_exact=True)


def _h(*parts: object) -> int:
    return int.from_bytes(hashlib.blake2b(repr(parts).encode(), digest_size=8).digest(), "big")


@dataclass(frozen=True)
class Workload:
    """One stream, one epoch, ``partitions`` partitions of ``coordinates`` coordinates each.

    Coordinate ``x`` of a partition holds 1 to 3 events (several events share a
    coordinate). Picklable: it is what worker processes receive.
    """

    location: str
    stream: str = "s"
    partitions: int = 4
    coordinates: int = 40
    seed: int = 0
    epoch: int = 1
    scope: str = "q"

    @property
    def names(self) -> list[str]:
        return [f"P{i}" for i in range(self.partitions)]

    def membership(self) -> Membership:
        return Membership(
            self.epoch, self.scope, {p: ORDER.name for p in self.names}, {ORDER.name: ORDER}
        )

    def events(self, partition: str) -> list[tuple[str, int]]:
        out = []
        for x in range(self.coordinates):
            for k in range(1 + _h(self.seed, partition, x) % 3):
                out.append((f"{partition}-{x}-{k}", x))
        return out

    @property
    def final_cut(self) -> Cut:
        return Cut.through(self.coordinates - 1)

    def truth(self) -> dict[tuple[int, str], list[tuple[str, int]]]:
        """The ground truth the audit checks soundness against: (epoch, partition) -> events."""
        return {(self.epoch, p): self.events(p) for p in self.names}


#: Seconds a worker started while its server restarts waits for the store to open.
OPEN_WAIT_SECONDS = 60.0


def _open_waiting(location: str) -> Store:
    """Open the store, waiting out a server that is restarting (a worker respawned in the
    middle of a crash test meets a refused connection, or one cut during migration, and
    does what a supervised process does: start again). Other errors are raised at once."""
    deadline = time.monotonic() + OPEN_WAIT_SECONDS
    while True:
        try:
            return open_store(location)
        except StoreOpenError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def open_recorded(
    workload: Workload, worker: str, history_dir: str, lost: float, seed: int
) -> tuple[RecordingStore, LogWriter]:
    """The workload's store for ``worker``, recorded; with ``lost`` > 0, each call's
    response is lost with that probability, half of them after the call applied."""
    sink = LogWriter(Path(history_dir) / f"{worker}.jsonl")
    inner: Store = _open_waiting(workload.location)
    if lost > 0:
        inner = FaultyStore(inner, seed, lose_after=lost / 2, lose_before=lost / 2)
    return RecordingStore(inner, sink, worker), sink


class StaticProvider:
    """Deterministic pages over the workload's events (see the module docstring)."""

    def __init__(self, workload: Workload, flaky: float = 0.0, seed: int = 0) -> None:
        self.workload = workload
        self._events = {p: workload.events(p) for p in workload.names}
        self._rng = random.Random(seed)
        self.flaky = flaky

    def fetch_page(self, partition: str, token: str | None) -> Page:
        if self.flaky and self._rng.random() < self.flaky:
            raise ProviderTimeout(f"fetch of {partition} at {token} lost")
        events = self._events[partition]
        start = int(token or 0)
        if start >= len(events):
            return Page((), None, Claim(Cut.through(events[-1][1]), True))
        first = start - 1 if start > 0 and _h("overlap", partition, start) % 5 == 0 else start
        end = min(len(events), start + 1 + _h("size", partition, start) % 4)
        page = tuple(Event(i, at) for i, at in events[first:end])
        last = events[end - 1][1]
        if _h("provisional", partition, start) % 7 == 0:
            claim = Claim(Cut.through(last), False)  # not final: must never be certified
        elif end < len(events) and events[end][1] == last:
            claim = Claim(Cut.before(last), True)
        else:
            claim = Claim(Cut.through(last), True)
        return Page(page, str(end), claim)


def _quiet() -> None:
    """Worker processes: the pool's reconnection warnings (server restarts) are expected."""
    logging.getLogger("psycopg.pool").setLevel(logging.ERROR)


def publisher_process(
    workload: Workload,
    worker: str,
    history_dir: str,
    seconds: float,
    lost: float = 0.0,
    seed: int = 0,
    policy: str = "monotone",
    min_attempts: int = 0,
    idle: float = 0.0,
) -> None:
    """Attempt publications until the final cut is published (and at least
    ``min_attempts`` attempts were made) or time is up, resting up to ``idle``
    seconds after an attempt that published nothing (a polling interval)."""
    _quiet()
    store, sink = open_recorded(workload, worker, history_dir, lost, seed)
    publisher = Publisher(store, workload.stream, worker, Policy(policy), max_retries=3)
    deadline = time.monotonic() + seconds
    final = workload.final_cut
    attempts = 0
    try:
        while time.monotonic() < deadline:
            try:
                result = store.attempt(publisher)
            except StoreError:
                time.sleep(0.02)  # definite: nothing happened (server down?); try again
                continue
            attempts += 1
            if result.cut == final and attempts >= min_attempts:
                break
            if idle and result.outcome not in (Outcome.PUBLISHED, Outcome.CONFIRMED):
                time.sleep(random.uniform(0, idle))
    finally:
        store.close()
        sink.close()


def reader_process(
    workload: Workload,
    worker: str,
    history_dir: str,
    seconds: float,
    lost: float = 0.0,
    seed: int = 0,
    flaky: float = 0.05,
    pace: float = 0.0,
) -> None:
    """Ingest random partitions a few pages at a time until all are fully certified,
    resting up to ``pace`` seconds between passes (to stretch a run over time)."""
    _quiet()
    store, sink = open_recorded(workload, worker, history_dir, lost, seed)
    provider = StaticProvider(workload, flaky=flaky, seed=seed)
    rng = random.Random(seed)
    deadline = time.monotonic() + seconds
    final = workload.final_cut
    done: set[str] = set()
    try:
        while time.monotonic() < deadline and len(done) < workload.partitions:
            partition = rng.choice(workload.names)
            reader = PartitionReader(
                store,
                provider,
                workload.stream,
                partition,
                workload.epoch,
                workload.scope,
                ORDER,
                lambda e: f"done:{e.id}",
            )
            try:
                cut = reader.run_pass(max_pages=rng.randint(1, 3))
            except (StoreError, ProviderTimeout):
                time.sleep(0.01)
                continue
            if cut == final:
                done.add(partition)
            if pace:
                time.sleep(rng.uniform(0, pace))
    finally:
        store.close()
        sink.close()


def count_attempts(ops: Sequence[object]) -> Mapping[str, int]:
    """Attempt outcomes by name (published, confirmed, unchanged, ...)."""
    counts: dict[str, int] = {}
    for op in ops:
        if getattr(op, "kind", None) == "attempt":
            name = op.result["outcome"]  # type: ignore[attr-defined]
            counts[name] = counts.get(name, 0) + 1
    return counts
