"""Cost by number of partitions: publication attempts and checkpoint writes, with baselines.

Run: ``python benchmarks/scale.py [--sizes 10 1000 10000 100000] [--backends sqlite postgres]``
(PostgreSQL: ``--dsn``, else ``$FENCEPOST_DATABASE_URL``, else a throwaway pgserver).

1. **Attempt time by N.** A stream of N partitions, every one certified; one
   partition is the minimum and moves one offset before each attempt, so every
   attempt publishes: it reads the record, the current membership and the
   epoch's merge summary (one atomic read of index probes), decides, and writes
   the record conditionally (durable: SQLite WAL ``synchronous=FULL``,
   PostgreSQL ``synchronous_commit=on``). Printed per N: the median attempt
   time; the same statements on the raw driver (``sqlite3``; psycopg with
   server-side prepared statements) in the same run, alternating in rounds, and
   the ratio; the old path (``read_checkpoints`` of all N and ``merge``) for
   comparison; and the growth from the smallest N. Target: the attempt at 100k
   within 3x of the attempt at 10.
2. **Checkpoint writes/s at 10,000 partitions.** Every partition moves one
   offset per pass, in batches of 1 (``write_checkpoint``: one transaction each),
   100, 1,000 and 10,000 (``write_checkpoints``: one transaction per batch, each
   write fenced by its own generation), against the same statements on the raw
   driver in one transaction per batch. Target on SQLite: >= 20,000 writes/s.

Before timing, the statements each fencepost call sends are captured and
compared with the baseline's: a baseline issuing other statements is refused.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from decimal import Decimal
from functools import partial
from pathlib import Path
from typing import Any

import psycopg
from baseline import StatementLog, postgres_dsn, rounds

from fencepost.impl.cutkey import cut_key
from fencepost.impl.cuts import Cut
from fencepost.impl.orders import IntegerOrder
from fencepost.impl.postgres import PostgresStore
from fencepost.impl.postgres_schema import quote_ident
from fencepost.impl.publisher import Outcome, Publisher, _Propose, _Stop
from fencepost.impl.records import Checkpoint, Membership, PublicationRecord
from fencepost.impl.sqlite import SQLiteStore
from fencepost.impl.sqlite_schema import _CURRENT_EPOCH_QUERY as SQLITE_READ_EPOCH
from fencepost.impl.sqlite_schema import _SUMMARY_QUERY as SQLITE_SUMMARY
from fencepost.impl.sqlite_schema import encode_cut
from fencepost.impl.stores import CheckpointApplied, Store

ORDER = IntegerOrder("offsets", successor_exact=True)
HIGH = 10**12  # every partition but the moving one sits here
MOVER = "p0000000"


def membership(n: int) -> Membership:
    return Membership(1, "q", {f"p{i:07d}": "offsets" for i in range(n)}, {"offsets": ORDER})


class VectorPublisher(Publisher):
    """The old path, for comparison: overriding ``_decide`` makes the publisher read the
    whole vector (``read_checkpoints``) and ``merge`` it, O(N) per attempt."""

    def _decide(
        self, record: PublicationRecord, membership: Membership, checkpoints: Sequence[Checkpoint]
    ) -> _Propose | _Stop:
        return super()._decide(record, membership, checkpoints)


@dataclass
class Case:
    """One stream of ``n`` certified partitions; ``MOVER`` is the minimum and moves."""

    store: Store
    n: int
    at: int = 0
    generation: int = 1

    def move(self) -> None:
        self.at += 1
        checkpoint = Checkpoint(MOVER, Cut.through(self.at), None, self.generation + 1, "q", 1)
        written = self.store.write_checkpoint("s", self.generation, checkpoint)
        assert isinstance(written, CheckpointApplied), written
        self.generation += 1


def fill(store: Store, n: int) -> Case:
    members = membership(n)
    store.create_stream("s", members)
    names = sorted(members.partitions)
    for start in range(0, n, 5000):
        store.write_checkpoints(
            "s",
            [
                (None, Checkpoint(p, Cut.through(0 if p == MOVER else HIGH), None, 1, "q", 1))
                for p in names[start : start + 5000]
            ],
        )
    return Case(store, n)


def time_attempts(case: Case, publisher: Publisher, count: int) -> float:
    """Median seconds per publishing attempt over ``count`` attempts."""
    times = []
    for _ in range(count):
        case.move()
        start = time.perf_counter()
        result = publisher.attempt()
        times.append(time.perf_counter() - start)
        assert result.outcome is Outcome.PUBLISHED, result
    return statistics.median(times)


# --- raw baselines: the same statements on the raw driver -------------------------------

SQLITE_READ_RECORD = (
    "SELECT epoch, cut_kind, cut_type, cut_at, revision, op_id FROM publications WHERE stream = ?"
)
SQLITE_WRITE_RECORD = (
    "UPDATE publications SET epoch = ?, cut_kind = ?, cut_type = ?, cut_at = ?, "
    "revision = revision + 1, op_id = ? WHERE stream = ? AND revision = ?"
)
SQLITE_UPDATE_CHECKPOINT = (
    "UPDATE checkpoints SET cut_kind = ?, cut_type = ?, cut_at = ?, token = ?, "
    "generation = ?, scope = ?, finality = ?, sort_key = ?, scope_ok = ? "
    "WHERE stream = ? AND epoch = ? AND partition = ? AND generation = ?"
)


class RawSQLite:
    """sqlite3 on the store's file, WAL and synchronous=FULL, doing what an attempt does."""

    def __init__(self, path: Path) -> None:
        import sqlite3

        self.db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self.db.execute("PRAGMA busy_timeout = 10000")
        self.db.execute("PRAGMA synchronous = FULL")
        assert self.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        self.step = 0

    def attempt(self) -> None:
        db = self.db
        record = db.execute(SQLITE_READ_RECORD, ("s",)).fetchone()
        db.execute(SQLITE_READ_EPOCH, ("s",)).fetchone()
        db.execute(SQLITE_SUMMARY, ("s", 1)).fetchall()
        self.step += 1
        db.execute("BEGIN IMMEDIATE")
        written = db.execute(
            SQLITE_WRITE_RECORD,
            (1, "through", "int", str(-self.step), f"raw-{self.step}", "s", record[4]),
        ).rowcount
        db.execute("COMMIT")
        assert written == 1

    def time_attempts(self, count: int) -> float:
        times = []
        for _ in range(count):
            start = time.perf_counter()
            self.attempt()
            times.append(time.perf_counter() - start)
        return statistics.median(times)


PG_READ_RECORD = (
    "SELECT epoch, cut_kind, cut_int, cut_str, revision, op_id FROM {s}.publications "
    "WHERE stream = %s"
)
PG_READ_EPOCH = "SELECT current_epoch FROM {s}.streams WHERE stream = %s"


class RawPostgres:
    """psycopg, one connection, server-side prepared statements, doing what an attempt does.

    The statements are fencepost's own (captured from one attempt: the record
    write is the store's one-statement conditional write).
    """

    def __init__(self, dsn: str, schema: str, summary: str, write_record: str) -> None:
        self.conn = psycopg.connect(dsn, autocommit=True)
        self.conn.execute("SET synchronous_commit = on")
        s = quote_ident(schema)
        self.read_record = PG_READ_RECORD.format(s=s)
        self.read_epoch = PG_READ_EPOCH.format(s=s)
        self.summary = summary
        self.write_record = write_record
        self.step = 0

    def attempt(self) -> None:
        conn, key = self.conn, b"s"
        record = conn.execute(self.read_record, (key,), prepare=True).fetchone()
        assert record is not None
        conn.execute(self.read_epoch, (key,), prepare=True).fetchone()
        conn.execute(self.summary, {"stream": key, "epoch": Decimal(1)}, prepare=True).fetchall()
        self.step += 1
        rows = conn.execute(
            self.write_record,
            {
                "stream": key,
                "epoch": Decimal(1),
                "kind": "through",
                "at_int": Decimal(-self.step),  # below every fencepost proposal
                "at_str": None,
                "op_id": f"raw-{self.step}".encode(),
                "expected": record[4],
            },
            prepare=True,
        ).fetchall()
        assert rows and rows[0][0], rows

    def time_attempts(self, count: int) -> float:
        times = []
        for _ in range(count):
            start = time.perf_counter()
            self.attempt()
            times.append(time.perf_counter() - start)
        return statistics.median(times)

    def close(self) -> None:
        self.conn.close()


# --- attempt time by N ------------------------------------------------------------------


@dataclass
class Row:
    backend: str
    n: int
    ours: float  # median seconds per attempt (median over rounds)
    raw: float
    ratio: float  # raw / ours: the share of the raw engine's speed fencepost reaches
    vector: float


def measure(
    backend: str,
    case: Case,
    raw_attempts: Callable[[int], float],
    count: int,
    repeat: int,
    vector_count: int,
) -> Row:
    publisher = Publisher(case.store, "s", "bench")
    for _ in range(20):  # warm: caches, prepared statements, the page cache
        case.move()
        publisher.attempt()
        raw_attempts(1)
    ours, raw = rounds(
        lambda: time_attempts(case, publisher, count), lambda: raw_attempts(count), repeat
    )
    ratios = [r / o for o, r in zip(ours, raw, strict=True)]
    old = VectorPublisher(case.store, "s", "bench-vector", first_op=10**9)
    vector = time_attempts(case, old, vector_count)
    return Row(
        backend,
        case.n,
        statistics.median(ours),
        statistics.median(raw),
        statistics.median(ratios),
        vector,
    )


def check_sqlite_statements(case: Case) -> None:
    log = StatementLog()
    publisher = Publisher(case.store, "s", "check")
    case.move()
    with log.capture_sqlite(case.store):
        assert publisher.attempt().outcome is Outcome.PUBLISHED
    log.require(
        [SQLITE_READ_RECORD, SQLITE_READ_EPOCH, SQLITE_SUMMARY, SQLITE_WRITE_RECORD],
        "SQLite attempt",
    )


def sqlite_rows(folder: Path, sizes: Sequence[int], count: int, repeat: int) -> list[Row]:
    rows = []
    for n in sizes:
        path = folder / f"scale-{n}.db"
        case = fill(SQLiteStore(path), n)
        check_sqlite_statements(case)
        raw = RawSQLite(path)
        vector_count = max(3, min(count, 2_000_000 // (n * 20)))
        rows.append(measure("sqlite", case, raw.time_attempts, count, repeat, vector_count))
        raw.db.close()
        case.store.close()
        print(f"  sqlite N={n:,}: done", file=sys.stderr)
    return rows


def postgres_rows(dsn: str, sizes: Sequence[int], count: int, repeat: int) -> list[Row]:
    rows = []
    for n in sizes:
        schema = f"scale_{uuid.uuid4().hex[:10]}"
        store = PostgresStore(dsn, schema=schema)
        try:
            case = fill(store, n)
            log = StatementLog()
            case.move()
            with log.capture_postgres():
                assert Publisher(store, "s", "check").attempt().outcome is Outcome.PUBLISHED
            record_write = log.statements[-1]
            summary = store._summary_query
            s = quote_ident(schema)
            log.require(
                [
                    PG_READ_RECORD.format(s=s),
                    PG_READ_EPOCH.format(s=s),
                    summary,
                    record_write,
                ],
                "PostgreSQL attempt",
            )
            assert record_write.startswith("WITH current AS"), record_write
            raw = RawPostgres(dsn, schema, summary, record_write)
            vector_count = max(3, min(count, 2_000_000 // (n * 20)))
            rows.append(measure("postgres", case, raw.time_attempts, count, repeat, vector_count))
            raw.close()
        finally:
            store.close()
            with psycopg.connect(dsn, autocommit=True) as conn:
                conn.execute(f"DROP SCHEMA {quote_ident(schema)} CASCADE")
        print(f"  postgres N={n:,}: done", file=sys.stderr)
    return rows


def print_attempts(rows: Sequence[Row]) -> bool:
    """The table; True when every backend's largest N is within 3x of its smallest."""
    ok = True
    print(
        "\nattempt time by partitions (median per publishing attempt; ratio = raw driver's "
        "time / fencepost's, same statements, same run):"
    )
    print(
        f"{'backend':9} {'N':>9} {'attempt':>10} {'publishes/s':>12} {'raw driver':>11} "
        f"{'ratio':>6} {'old path':>11} {'growth':>7}"
    )
    for backend in dict.fromkeys(r.backend for r in rows):
        mine = [r for r in rows if r.backend == backend]
        first = mine[0]
        for r in mine:
            print(
                f"{backend:9} {r.n:>9,} {r.ours * 1e3:>8.3f}ms {1 / r.ours:>12,.0f} "
                f"{r.raw * 1e3:>9.3f}ms {r.ratio:>6.2f} {r.vector * 1e3:>9.2f}ms "
                f"{r.ours / first.ours:>6.2f}x"
            )
        growth = mine[-1].ours / first.ours
        verdict = "ok" if growth <= 3 else "OVER TARGET"
        ok = ok and growth <= 3
        print(
            f"{backend}: attempt at N={mine[-1].n:,} is {growth:.2f}x the attempt at "
            f"N={first.n:,} (target <= 3x: {verdict}); ratio to the raw driver "
            f"{min(r.ratio for r in mine):.2f}-{max(r.ratio for r in mine):.2f} (target >= 0.5)"
        )
    return ok


# --- checkpoint writes/s ------------------------------------------------------------------


def moves(n: int, generation: int, at: int, size: int) -> list[list[tuple[int, Checkpoint]]]:
    """Every partition moved to ``through at`` on ``generation``, in batches of ``size``."""
    names = sorted(membership(n).partitions)
    every = [
        (generation, Checkpoint(p, Cut.through(at), None, generation + 1, "q", 1)) for p in names
    ]
    return [every[i : i + size] for i in range(0, n, size)]


Batches = list[list[tuple[int, Checkpoint]]]


def probe_write(store: Store, capture: Callable[[], AbstractContextManager[None]]) -> None:
    """One fenced batch write, on a stream of its own, sent while ``capture`` records it."""
    store.create_stream("probe", membership(1))
    first = Checkpoint(MOVER, Cut.through(1), None, 1, "q", 1)
    store.write_checkpoint("probe", None, first)
    with_batch = [(1, Checkpoint(MOVER, Cut.through(2), None, 2, "q", 1))]
    with capture():
        assert isinstance(store.write_checkpoints("probe", with_batch)[0], CheckpointApplied)


class WritePasses:
    """Passes that move every partition one offset: fencepost's and the raw driver's turns.

    Each pass, whoever makes it, moves every partition from the generation the
    previous pass left, so both sides do the same fenced writes on the same rows.
    The raw side's statement values are prepared before its clock starts (the
    engine alone is timed); fencepost's clock includes all its own work.
    """

    def __init__(
        self,
        store: Store,
        n: int,
        prepare: Callable[[Batches], list[list[Any]]],
        execute: Callable[[list[list[Any]]], None],
    ) -> None:
        self.store, self.n = store, n
        self.prepare, self.execute = prepare, execute
        self.generation, self.at = 1, HIGH

    def _next(self, size: int) -> Batches:
        self.at += 1
        return moves(self.n, self.generation, self.at, size)

    def ours(self, size: int) -> float:
        batches = self._next(size)
        start = time.perf_counter()
        for batch in batches:
            if size == 1:
                results = [self.store.write_checkpoint("s", *batch[0])]
            else:
                results = self.store.write_checkpoints("s", batch)
            assert all(isinstance(r, CheckpointApplied) for r in results)
        elapsed = time.perf_counter() - start
        self.generation += 1
        return self.n / elapsed

    def theirs(self, size: int) -> float:
        values = self.prepare(self._next(size))
        start = time.perf_counter()
        self.execute(values)
        elapsed = time.perf_counter() - start
        self.generation += 1
        return self.n / elapsed

    def lines(self, backend: str, baseline: str, sizes: Sequence[int], repeat: int) -> list[str]:
        out = []
        for size in sizes:
            a, b = rounds(partial(self.ours, size), partial(self.theirs, size), repeat)
            pairs = [x / y for x, y in zip(a, b, strict=True)]
            out.append(
                f"{backend:8} N={self.n:,} batch {size:>6,}: {statistics.median(a):>9,.0f} "
                f"writes/s (min {min(a):,.0f}) vs {baseline} {statistics.median(b):>9,.0f}/s: "
                f"ratio {statistics.median(pairs):.2f}"
            )
        return out


def sqlite_writes(folder: Path, n: int, sizes: Sequence[int], repeat: int) -> list[str]:
    path = folder / f"writes-{n}.db"
    store = SQLiteStore(path)
    fill(store, n)
    log = StatementLog()
    probe_write(store, lambda: log.capture_sqlite(store))
    log.require([SQLITE_UPDATE_CHECKPOINT], "SQLite checkpoint write")
    raw = RawSQLite(path)

    def prepare(batches: Batches) -> list[list[Any]]:
        return [[_sqlite_params(expected, c) for expected, c in b] for b in batches]

    def execute(batches: list[list[Any]]) -> None:
        db = raw.db
        for batch in batches:
            db.execute("BEGIN IMMEDIATE")
            for row in batch:
                assert db.execute(SQLITE_UPDATE_CHECKPOINT, row).rowcount == 1
            db.execute("COMMIT")

    lines = WritePasses(store, n, prepare, execute).lines("sqlite", "raw sqlite3", sizes, repeat)
    raw.db.close()
    store.close()
    return lines


def _sqlite_params(expected: int, c: Checkpoint) -> tuple[object, ...]:
    return (
        *encode_cut(c.cut),
        c.token,
        c.generation,
        c.scope,
        c.finality.value,
        cut_key(ORDER, c.cut),
        1,
        "s",
        c.epoch,
        c.partition,
        expected,
    )


def postgres_writes(dsn: str, n: int, sizes: Sequence[int], repeat: int) -> list[str]:
    schema = f"scale_{uuid.uuid4().hex[:10]}"
    store = PostgresStore(dsn, schema=schema)
    try:
        fill(store, n)
        log = StatementLog()
        probe_write(store, log.capture_postgres)
        (update,) = log.statements
        conn = psycopg.connect(dsn, autocommit=True)
        conn.execute("SET synchronous_commit = on")

        def prepare(batches: Batches) -> list[list[Any]]:
            return [[_pg_params(expected, c) for expected, c in b] for b in batches]

        def execute(batches: list[list[Any]]) -> None:
            for batch in batches:
                with conn.pipeline(), conn.transaction():
                    cursors = [conn.execute(update, params, prepare=True) for params in batch]
                assert all((row := cur.fetchone()) is not None and row[0] for cur in cursors)

        passes = WritePasses(store, n, prepare, execute)
        lines = passes.lines("postgres", "raw psycopg", sizes, repeat)
        conn.close()
    finally:
        store.close()
        with psycopg.connect(dsn, autocommit=True) as c:
            c.execute(f"DROP SCHEMA {quote_ident(schema)} CASCADE")
    return lines


def _pg_params(expected: int, c: Checkpoint) -> dict[str, Any]:
    assert isinstance(c.cut.at, int)
    return {
        "stream": b"s",
        "epoch": Decimal(c.epoch),
        "partition": c.partition.encode(),
        "kind": c.cut.endpoint.value,
        "at_int": Decimal(c.cut.at),
        "at_str": None,
        "token": None,
        "generation": c.generation,
        "scope": c.scope.encode(),
        "finality": c.finality.value,
        "sort_key": cut_key(ORDER, c.cut),
        "scope_ok": True,
        "write_id": uuid.uuid4(),
        "expected": expected,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10, 1_000, 10_000, 100_000])
    parser.add_argument("--backends", nargs="+", default=["sqlite", "postgres"])
    parser.add_argument("--attempts", type=int, default=100, help="attempts per round")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--writes-partitions", type=int, default=10_000)
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=[1, 100, 1_000, 10_000])
    parser.add_argument("--dsn", default=None)
    args = parser.parse_args(argv)
    rows: list[Row] = []
    lines: list[str] = []
    with tempfile.TemporaryDirectory(prefix="fencepost-scale-") as tmp:
        folder = Path(tmp)
        if "sqlite" in args.backends:
            rows += sqlite_rows(folder, args.sizes, args.attempts, args.rounds)
            lines += sqlite_writes(folder, args.writes_partitions, args.batch_sizes, args.rounds)
        if "postgres" in args.backends:
            dsn, where = postgres_dsn(args.dsn)
            print(f"PostgreSQL at {where}", file=sys.stderr)
            rows += postgres_rows(dsn, args.sizes, args.attempts, args.rounds)
            lines += postgres_writes(dsn, args.writes_partitions, args.batch_sizes, args.rounds)
    ok = print_attempts(rows)
    print(
        "\ncheckpoint writes/s (every partition moves once per pass; batch 1 = write_checkpoint):"
    )
    for line in lines:
        print(line)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
