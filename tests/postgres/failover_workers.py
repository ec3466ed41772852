"""Publisher and reader processes that follow a failover to a new primary, recorded.

They run the production :class:`~fencepost.impl.publisher.Publisher` and
:class:`~fencepost.impl.reader.PartitionReader` of the workload in
:mod:`fencepost.properties.workload`, every store call recorded by a
:class:`~fencepost.impl.recording.RecordingStore` into one audit log per worker
(docs/audit.md), until the test creates the ``stop`` file of the control folder.

The control folder is their service discovery: ``url`` holds the current
primary's store location. When it changes (the test promoted the standby), a
worker swaps the recording store's inner store for one on the new URL and goes
on with the same worker name and call numbers, so its log is one history of the
one logical store. A guarded publisher
(:class:`~fencepost.impl.frontier_guard.FrontierGuard`) that refuses the store
writes its refusal to ``<worker>.refused`` (JSON: what it saw, what the store
says) and stops, as a publisher that must not publish from a store that went back.
"""

from __future__ import annotations

import contextlib
import json
import logging
import random
import time
from dataclasses import dataclass
from pathlib import Path

from fencepost.impl.codec import record_to_json
from fencepost.impl.frontier_guard import FrontierGuard, StoreRegressed
from fencepost.impl.postgres import PostgresStore, split_schema
from fencepost.impl.provider import ProviderTimeout
from fencepost.impl.publisher import Outcome, Policy, Publisher
from fencepost.impl.reader import PartitionReader
from fencepost.impl.recording import LogWriter, RecordingStore
from fencepost.impl.stores import StoreError, StoreOpenError
from fencepost.properties.workload import ORDER, StaticProvider, Workload

#: Seconds a worker keeps trying to open the store at a URL the test published.
OPEN_SECONDS = 60.0


@dataclass(frozen=True)
class Run:
    """What every worker of one run shares (picklable: it is what the processes receive)."""

    workload: Workload
    history: str
    control: str
    #: Rest (seconds, at most) after an attempt that published nothing / between passes.
    idle: float = 0.02
    pace: float = 0.03

    def url(self) -> str:
        return (Path(self.control) / "url").read_text()

    def stopped(self) -> bool:
        return (Path(self.control) / "stop").exists()


def publish_url(control: Path, url: str) -> None:
    """Point every worker at ``url`` (written whole, then renamed: never read half-written)."""
    staged = control / "url.new"
    staged.write_text(url)
    staged.replace(control / "url")


def open_at(url: str) -> PostgresStore:
    """The store at ``url``, with a short connection wait: a worker whose server died
    learns it within a second (a definite error) and can follow the new URL."""
    deadline = time.monotonic() + OPEN_SECONDS
    dsn, schema = split_schema(url)
    while True:
        try:
            return PostgresStore(dsn, schema=schema or "fencepost", connect_timeout=1.0)
        except StoreOpenError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def follow(store: RecordingStore, run: Run, url: str) -> str:
    """Move ``store`` to the URL the control folder names, if it changed; the new URL."""
    current = run.url()
    if current == url:
        return url
    old = store.inner
    store.inner = open_at(current)
    with contextlib.suppress(Exception):
        old.close()
    return current


def _setup(run: Run, worker: str) -> tuple[RecordingStore, LogWriter, str]:
    """The worker's recorded store, once the test has published the first URL (workers
    start while the servers are being built, and wait for it)."""
    logging.getLogger("psycopg.pool").setLevel(logging.CRITICAL)
    deadline = time.monotonic() + OPEN_SECONDS
    while not (Path(run.control) / "url").exists():
        if time.monotonic() > deadline or run.stopped():
            raise SystemExit(f"{worker}: no URL was published in {run.control}")
        time.sleep(0.02)
    sink = LogWriter(Path(run.history) / f"{worker}.jsonl")
    url = run.url()
    return RecordingStore(open_at(url), sink, worker), sink, url


def publisher_worker(run: Run, worker: str, guarded: bool, seed: int) -> None:
    """Attempt publications until stopped; a guarded one stops at a refusal, saying so."""
    store, sink, url = _setup(run, worker)
    guard = FrontierGuard() if guarded else None
    publisher = Publisher(store, run.workload.stream, worker, Policy.MONOTONE, guard=guard)
    rng = random.Random(seed)
    try:
        while not run.stopped():
            url = follow(store, run, url)
            try:
                result = store.attempt(publisher)
            except StoreRegressed as exc:
                refusal = {
                    "worker": worker,
                    "seen": record_to_json(exc.seen),
                    "now": record_to_json(exc.now),
                    "problem": exc.problem,
                    "message": str(exc),
                    "t": time.monotonic_ns(),
                }
                (Path(run.control) / f"{worker}.refused").write_text(json.dumps(refusal))
                return
            except StoreError:
                time.sleep(0.02)  # the server is gone: try again (and follow the URL)
                continue
            if result.outcome not in (Outcome.PUBLISHED, Outcome.CONFIRMED):
                time.sleep(rng.uniform(0, run.idle))
    finally:
        with contextlib.suppress(Exception):
            store.close()
        sink.close()


def reader_worker(run: Run, worker: str, seed: int) -> None:
    """Ingest random partitions a few pages at a time until stopped."""
    store, sink, url = _setup(run, worker)
    workload = run.workload
    provider = StaticProvider(workload, flaky=0.0, seed=seed)
    rng = random.Random(seed)
    try:
        while not run.stopped():
            url = follow(store, run, url)
            reader = PartitionReader(
                store,
                provider,
                workload.stream,
                rng.choice(workload.names),
                workload.epoch,
                workload.scope,
                ORDER,
                lambda e: f"done:{e.id}",
            )
            try:
                reader.run_pass(max_pages=rng.randint(1, 3))
            except (StoreError, ProviderTimeout):
                time.sleep(0.02)
                continue
            time.sleep(rng.uniform(0, run.pace))
    finally:
        with contextlib.suppress(Exception):
            store.close()
        sink.close()
