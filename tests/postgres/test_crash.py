"""Crashes: kill -9 of publisher and reader processes at random points (SQLite and
PostgreSQL), and PostgreSQL itself stopped, killed -9 and restarted under load.

After recovery the recorded history (a killed process's call in flight counts as
indefinite) must show no anomaly: no publication or checkpoint regression, no
stale read of a write acknowledged before the crash, no unsound claim; every
event under the final frontier has its durable outcome, and progress resumed to
the final cut. The fast forms run by default; ``--run-slow`` runs longer ones,
``--full-length`` longer still.

No outcome depends on wall time: the chaos is a number of kills, each one waiting
until its victim has recorded a few store calls in its current life (so it dies
mid-work however slow the machine), and the server restarts happen after a given
number of kills. The workers' own deadline is only a fail-safe, far beyond what
the work needs on a loaded machine.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import random
import signal
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import psycopg
import pytest
from lengths import Length
from pg_server import RestartablePostgres, drop_schema, fresh_schema

from fencepost.audit.log import read_ops
from fencepost.audit.ops import Status
from fencepost.audit.run import audit_ops
from fencepost.impl.open import open_store
from fencepost.properties.workload import (
    Workload,
    count_attempts,
    publisher_process,
    reader_process,
)


def pg_location(dsn: str, schema: str) -> str:
    sep = "&" if "?" in dsn else "?"
    return f"{dsn}{sep}fencepost_schema={schema}"


@dataclass
class Report:
    kills: int
    attempts: int
    counts: dict[str, int]
    anomalies: int
    definite: int  # store calls that failed definitely (server down, ...)
    indefinite: int  # store calls cut short: lost reply or killed mid-call


#: The workers' deadline, seconds: a fail-safe only (the work takes a fraction of it).
WORKER_SECONDS = 540.0


def _calls_recorded(folder: Path, worker: str) -> int:
    """How many store calls ``worker`` (one life of a slot) has recorded so far."""
    path = folder / f"{worker}.jsonl"
    try:
        return path.read_bytes().count(b"\n")
    except FileNotFoundError:
        return 0


def run_with_kills(
    workload: Workload,
    folder: Path,
    *,
    publishers: int,
    readers: int,
    kills: int,
    seed: int,
    pace: float,
    events: dict[int, Callable[[], None]] | None = None,
) -> Report:
    """Run the workload while killing ``kills`` random workers, each after it recorded a
    few calls in its current life; ``events[k]`` runs once ``k`` kills are done."""
    setup = open_store(workload.location)
    setup.create_stream(workload.stream, workload.membership())
    setup.close()
    ctx = multiprocessing.get_context("forkserver")
    rng = random.Random(seed)
    incarnation: dict[str, int] = {}
    live: dict[str, multiprocessing.process.BaseProcess] = {}

    def spawn(slot: str) -> None:
        n = incarnation.get(slot, 0) + 1
        incarnation[slot] = n
        worker = f"{slot}.{n}"  # fresh name per incarnation: op_ids stay unique
        target: Callable[..., None]
        args: tuple[object, ...]
        if slot.startswith("pub"):
            target = publisher_process
            args = (workload, worker, str(folder), WORKER_SECONDS, 0.0, n, "monotone", 0, 0.02)
        else:
            target = reader_process
            args = (workload, worker, str(folder), WORKER_SECONDS, 0.0, 1000 * n, 0.05, pace)
        proc = ctx.Process(target=target, args=args)
        proc.start()
        live[slot] = proc

    for i in range(publishers):
        spawn(f"pub{i}")
    for i in range(readers):
        spawn(f"read{i}")
    pending = dict(sorted((events or {}).items()))
    done = 0
    while done < kills:
        for at in [k for k in pending if done >= k]:
            pending.pop(at)()
        running = [slot for slot, p in live.items() if p.is_alive()]
        assert running, f"the work ended after {done} of {kills} kills: make it longer"
        slot = rng.choice(running)
        victim = f"{slot}.{incarnation[slot]}"
        calls = rng.randint(1, 8)  # where in its work the victim dies
        while _calls_recorded(folder, victim) < calls and live[slot].is_alive():
            time.sleep(0.005)  # a condition polled, not a duration waited out
        if not live[slot].is_alive():
            continue  # it finished its work first: choose again
        pid = live[slot].pid
        assert pid is not None
        os.kill(pid, signal.SIGKILL)
        live[slot].join()
        done += 1
        spawn(slot)
    for action in pending.values():
        action()
    for proc in live.values():
        proc.join(WORKER_SECONDS + 60)
    assert all(p.exitcode == 0 for p in live.values()), {s: p.exitcode for s, p in live.items()}
    ops = list(read_ops(sorted(folder.glob("*.jsonl"))))
    anomalies = audit_ops(list(ops), truth=lambda _stream: workload.truth()).violations
    counts = dict(sorted(count_attempts(ops).items()))
    for anomaly in anomalies[:20]:
        print("  ", anomaly.property, anomaly.message)
    definite = sum(1 for op in ops if op.status is Status.ERROR)
    indefinite = sum(1 for op in ops if op.status is Status.INDEFINITE and op.kind != "attempt")
    return Report(done, sum(counts.values()), counts, len(anomalies), definite, indefinite)


def assert_recovered(workload: Workload, report: Report, label: str, kills: int) -> None:
    print(
        f"\n{label}: {report.kills} kill -9s, {report.attempts} attempts {report.counts}, "
        f"{report.definite} definite / {report.indefinite} indefinite store failures, "
        f"anomalies: {report.anomalies}"
    )
    assert report.anomalies == 0
    assert report.kills == kills >= 3
    store = open_store(workload.location)
    try:
        record = store.read_publication(workload.stream)
        # Progress resumed to the end, and no outcome was lost on the way.
        assert record.cut == workload.final_cut
        for partition in workload.names:
            ids = [eid for eid, _ in workload.events(partition)]
            stored = store.outcomes(workload.stream, ids)
            assert set(stored) == set(ids), f"{partition}: outcomes lost"
            checkpoint = store.read_checkpoint(workload.stream, workload.epoch, partition)
            assert checkpoint is not None and checkpoint.cut == workload.final_cut
    finally:
        store.close()


#: size -> (coordinates per partition, kills, readers' mean rest between passes): the
#: work outlasts the kills (a kill needs its victim to record at most 8 calls). "slow"
#: is the --run-slow length (CI), "long" the --full-length one.
SIZES = {
    "fast": (25, 12, 0.3),
    "slow": (80, 60, 0.8),
    "long": (150, 150, 0.8),
}


def _slow(length: Length) -> str:
    return "long" if length.full else "slow"


def _sqlite(tmp_path: Path, size: str) -> None:
    coordinates, kills, pace = SIZES[size]
    workload = Workload(str(tmp_path / "crash.db"), coordinates=coordinates, seed=3)
    folder = tmp_path / "history"
    folder.mkdir()
    report = run_with_kills(
        workload,
        folder,
        publishers=4,
        readers=3,
        kills=kills,
        seed=11,
        pace=pace,
    )
    assert_recovered(workload, report, f"SQLite ({size})", kills)


def test_kill_9_workers_on_sqlite(tmp_path: Path) -> None:
    _sqlite(tmp_path, "fast")


@pytest.mark.slow
def test_kill_9_workers_on_sqlite_long(tmp_path: Path, length: Length) -> None:
    _sqlite(tmp_path, _slow(length))


def _postgres(pg_dsn: str, tmp_path: Path, size: str) -> None:
    coordinates, kills, pace = SIZES[size]
    schema = fresh_schema(pg_dsn, "crash")
    try:
        workload = Workload(pg_location(pg_dsn, schema), coordinates=coordinates, seed=5)
        folder = tmp_path / "history"
        folder.mkdir()
        report = run_with_kills(
            workload,
            folder,
            publishers=4,
            readers=3,
            kills=kills,
            seed=13,
            pace=pace,
        )
        assert_recovered(workload, report, f"PostgreSQL ({size})", kills)
    finally:
        drop_schema(pg_dsn, schema)


@pytest.mark.postgres
def test_kill_9_workers_on_postgres(pg_dsn: str, tmp_path: Path) -> None:
    _postgres(pg_dsn, tmp_path, "fast")


@pytest.mark.postgres
@pytest.mark.slow
def test_kill_9_workers_on_postgres_long(pg_dsn: str, tmp_path: Path, length: Length) -> None:
    _postgres(pg_dsn, tmp_path, _slow(length))


@pytest.fixture
def restartable() -> Iterator[RestartablePostgres]:
    server = RestartablePostgres()
    server.start()
    yield server
    server.destroy()


@contextmanager
def _write_in_flight(dsn: str, schema: str) -> Iterator[int]:
    """Hold until a worker's write is inside the server, and keep it there.

    An EXCLUSIVE lock on the tables workers write (reads still pass) makes the next
    write wait in its backend; the backend that waits is found in pg_stat_activity.
    Whatever is done inside the ``with`` (stopping or killing the server) happens
    while that write is in flight, so the overlap is arranged, never left to timing.
    Yields the waiting backend's pid.
    """
    tables = ", ".join(f"{schema}.{t}" for t in ("publications", "checkpoints", "outcomes"))
    holder = psycopg.connect(dsn, connect_timeout=10)
    try:
        holder.execute(f"LOCK TABLE {tables} IN EXCLUSIVE MODE")
        with psycopg.connect(dsn, autocommit=True, connect_timeout=10) as watcher:
            deadline = time.monotonic() + 120
            waiting: list[tuple[int]] = []
            while not waiting:
                assert time.monotonic() < deadline, "no worker wrote for 120 s"
                waiting = watcher.execute(
                    "SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                    "AND datname = current_database() AND pid <> %s",
                    (holder.info.backend_pid,),
                ).fetchall()
                time.sleep(0.01)
        yield waiting[0][0]
    finally:
        with contextlib.suppress(psycopg.Error):
            holder.close()


def _restarts(server: RestartablePostgres, tmp_path: Path, size: str) -> None:
    coordinates, kills, pace = SIZES[size]
    kills //= 2
    workload = Workload(pg_location(server.dsn, "restart"), coordinates=coordinates, seed=9)
    folder = tmp_path / "history"
    folder.mkdir()
    restarts: list[str] = []
    caught: list[int] = []

    def clean_restart() -> None:
        with _write_in_flight(server.dsn, "restart") as blocked:
            caught.append(blocked)
            server.stop()
        time.sleep(0.5)  # workers meet a dead server: definite and indefinite failures
        server.start()
        restarts.append("stop/start")

    def crash_restart() -> None:
        with _write_in_flight(server.dsn, "restart") as blocked:
            caught.append(blocked)
            server.kill()  # kill -9 of the postmaster and backends: WAL crash recovery
        time.sleep(0.5)
        server.start()
        restarts.append("kill -9/start")

    report = run_with_kills(
        workload,
        folder,
        publishers=4,
        readers=3,
        kills=kills,
        seed=17,
        pace=pace,
        events={kills // 3: clean_restart, 2 * kills // 3: crash_restart},
    )
    assert restarts == ["stop/start", "kill -9/start"]
    assert len(caught) == 2  # each restart cut a worker's write short ...
    assert report.indefinite > 0, "the workers never felt the restarts"  # ... so this holds
    assert_recovered(workload, report, f"PostgreSQL restarted under load ({size})", kills)


@pytest.mark.postgres
def test_postgres_restart_and_crash_under_load(
    restartable: RestartablePostgres, tmp_path: Path
) -> None:
    _restarts(restartable, tmp_path, "fast")


@pytest.mark.postgres
@pytest.mark.slow
def test_postgres_restart_and_crash_under_load_long(
    restartable: RestartablePostgres, tmp_path: Path, length: Length
) -> None:
    _restarts(restartable, tmp_path, _slow(length))
