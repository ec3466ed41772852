"""Real concurrency on a real outbox: writer processes, the naive poller, fencepost beside it.

This is what ``fencepost demo --source postgres-outbox`` runs and what the
tests drive (docs/outbox.md section 9):

- :func:`create_outbox` makes an outbox in a schema of its own: one table
  hash-partitioned by id (``layout="hash"``), or one table per partition
  sharing one id sequence (``layout="tables"``); each with the ``xid8`` column
  and the ``(xid, id)`` index the provider needs;
- :func:`start_writers` starts writer *processes* (``python -m
  fencepost.impl.providers.outbox_load``) that insert rows in transactions of
  random size, sleep a random time before committing, and sometimes roll back,
  so commits land out of id order all the time;
- :class:`NaivePoller` is the classic mistake: per partition, resume after the
  greatest id seen;
- :class:`OutboxRun` runs fencepost's partition readers (one per partition,
  over :class:`~fencepost.impl.providers.postgres_outbox.PostgresOutbox`) and
  a publisher beside the naive poller. Before the load it *arranges* one late
  commit (a transaction holds a lower id open while a higher id in the same
  partition commits and the naive poller polls), so the naive poller's loss is
  guaranteed, not left to timing. After every round it checks that every row
  the published frontier covers has a durable outcome, and at the end counts
  what each poller skipped against the rows the database holds.

Nothing here decides a verdict from the provider's own view: the figures come
from the outbox tables (the rows committed transactions left) and the store
(the outcomes recorded).
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from typing import Any

import psycopg
from psycopg import sql

from fencepost.impl.cuts import Cut, compare_cuts
from fencepost.impl.postgres_schema import quote_ident
from fencepost.impl.provider import Event, ProviderTimeout
from fencepost.impl.providers.postgres_outbox import XID8_ORDER, PostgresOutbox
from fencepost.impl.publisher import Publisher
from fencepost.impl.reader import PartitionReader
from fencepost.impl.stores import IndefiniteStoreError, Store

#: The stream name fencepost publishes the outbox's frontier under.
STREAM = "outbox"


# --- the outbox ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Layout:
    """An outbox made by :func:`create_outbox`.

    ``relations`` maps each partition to the relation read for it;
    ``targets`` are the relations writers insert into (the partitioned parent,
    which routes each row by the hash of its id, or every table).
    """

    schema: str
    relations: dict[str, str]
    targets: tuple[str, ...]


def create_outbox(
    conn: psycopg.Connection[Any], schema: str, partitions: int, layout: str
) -> Layout:
    """Create ``schema`` and an outbox of ``partitions`` partitions in it (``hash`` or ``tables``).

    ``hash``: ``outbox`` partitioned by ``HASH (id)`` into ``outbox_p0``...;
    ``tables``: ``outbox_t0``... sharing the sequence ``outbox_id``. Every
    relation has ``id``, ``xid xid8 NOT NULL DEFAULT pg_current_xact_id()``,
    ``writer``, ``payload`` and an index on ``(xid, id)``.
    """
    if layout not in ("hash", "tables"):
        raise ValueError(f"layout is 'hash' or 'tables', got {layout!r}")
    if type(partitions) is not int or not 1 <= partitions <= 256:
        raise ValueError(f"partitions must be an int in 1..256, got {partitions!r}")

    def name(table: str) -> sql.Composed:
        return sql.SQL("{}.{}").format(sql.Identifier(schema), sql.Identifier(table))

    columns = sql.SQL(
        "xid xid8 NOT NULL DEFAULT pg_current_xact_id(), "
        "writer integer NOT NULL, payload text NOT NULL"
    )
    with conn.transaction():
        conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
        if layout == "hash":
            tables = [f"outbox_p{i}" for i in range(partitions)]
            conn.execute(
                sql.SQL(
                    "CREATE TABLE {} (id bigserial PRIMARY KEY, {}) PARTITION BY HASH (id)"
                ).format(name("outbox"), columns)
            )
            for i, table in enumerate(tables):
                conn.execute(
                    sql.SQL(
                        "CREATE TABLE {} PARTITION OF {} FOR VALUES WITH (MODULUS {}, REMAINDER {})"
                    ).format(name(table), name("outbox"), sql.Literal(partitions), sql.Literal(i))
                )
            conn.execute(sql.SQL("CREATE INDEX ON {} (xid, id)").format(name("outbox")))
            targets = ["outbox"]
        else:
            tables = [f"outbox_t{i}" for i in range(partitions)]
            conn.execute(sql.SQL("CREATE SEQUENCE {}").format(name("outbox_id")))
            sequence = sql.Literal(f"{quote_ident(schema)}.outbox_id")
            for table in tables:
                conn.execute(
                    sql.SQL(
                        "CREATE TABLE {} (id bigint PRIMARY KEY DEFAULT nextval({}), {})"
                    ).format(name(table), sequence, columns)
                )
                conn.execute(sql.SQL("CREATE INDEX ON {} (xid, id)").format(name(table)))
            targets = tables
    relations = {
        _qualified(conn, schema, table): _qualified(conn, schema, table) for table in tables
    }
    return Layout(schema, relations, tuple(_qualified(conn, schema, t) for t in targets))


def _qualified(conn: psycopg.Connection[Any], schema: str, table: str) -> str:
    """The catalog's spelling of ``schema.table`` (quoted where needed)."""
    row = conn.execute(
        "SELECT to_regclass(%s)::text", (f"{quote_ident(schema)}.{quote_ident(table)}",)
    ).fetchone()
    assert row is not None and row[0] is not None, (schema, table)
    return str(row[0])


# --- writer processes ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class WriterPlan:
    """What the writer processes do: ``writers`` processes for ``seconds`` each.

    Each transaction inserts 1..``max_batch`` rows (each into a random target),
    sleeps 0..``max_delay`` seconds before it ends, and rolls back with
    probability ``rollback``.
    """

    writers: int = 4
    seconds: float = 3.0
    max_batch: int = 8
    max_delay: float = 0.03
    rollback: float = 0.1
    seed: int = 0


@dataclass(frozen=True, slots=True)
class WriterReport:
    """What one writer process says it did (the tables are the truth; this cross-checks)."""

    writer: int
    committed_transactions: int
    committed_rows: int
    rolled_back_transactions: int
    rolled_back_rows: int
    unknown_commits: int


def start_writers(dsn: str, layout: Layout, plan: WriterPlan) -> list[subprocess.Popen[str]]:
    """Start ``plan.writers`` writer processes; their config goes on stdin (no URL in argv)."""
    procs: list[subprocess.Popen[str]] = []
    try:
        for i in range(plan.writers):
            proc = subprocess.Popen(
                [sys.executable, "-m", "fencepost.impl.providers.outbox_load"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            procs.append(proc)
            config = {"dsn": dsn, "targets": list(layout.targets), "writer": i, **asdict(plan)}
            assert proc.stdin is not None
            proc.stdin.write(json.dumps(config))
            proc.stdin.close()
            proc.stdin = None  # communicate() must not flush it again
    except BaseException:
        stop_writers(procs)
        raise
    return procs


def stop_writers(procs: Sequence[subprocess.Popen[str]], grace: float = 10.0) -> None:
    """Ask running writers to finish their transaction and exit; kill those that do not."""
    for proc in procs:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + grace
    for proc in procs:
        try:
            proc.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def collect_writers(procs: Sequence[subprocess.Popen[str]]) -> list[WriterReport]:
    """Wait for every writer and read its report; raises RuntimeError naming a failed one."""
    reports = []
    for proc in procs:
        out, err = proc.communicate()
        if proc.returncode != 0:
            raise RuntimeError(
                f"writer process {proc.pid} failed ({proc.returncode}): {err[-2000:]}"
            )
        reports.append(WriterReport(**json.loads(out.strip().splitlines()[-1])))
    return reports


def writer_main(config: Mapping[str, Any]) -> WriterReport:
    """One writer process: random transactions until the time is up or SIGTERM arrives."""
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    writer = int(config["writer"])
    rng = random.Random(f"{config['seed']}/writer/{writer}")
    targets = [sql.SQL(t) for t in config["targets"]]
    deadline = time.monotonic() + float(config["seconds"])
    counts = Counter[str]()
    number = 0
    with psycopg.connect(str(config["dsn"]), autocommit=False) as conn:
        while not stop.is_set() and time.monotonic() < deadline:
            number += 1
            rows = rng.randint(1, int(config["max_batch"]))
            for i in range(rows):
                conn.execute(
                    sql.SQL("INSERT INTO {} (writer, payload) VALUES (%s, %s)").format(
                        rng.choice(targets)
                    ),
                    (writer, f"w{writer}-t{number}-r{i}"),
                )
            time.sleep(rng.uniform(0, float(config["max_delay"])))
            if rng.random() < float(config["rollback"]):
                conn.rollback()
                counts["rolled_back_transactions"] += 1
                counts["rolled_back_rows"] += rows
                continue
            try:
                conn.commit()
            except psycopg.OperationalError:
                counts["unknown_commits"] += 1  # the tables say whether it committed
                break
            counts["committed_transactions"] += 1
            counts["committed_rows"] += rows
    return WriterReport(
        writer=writer,
        committed_transactions=counts["committed_transactions"],
        committed_rows=counts["committed_rows"],
        rolled_back_transactions=counts["rolled_back_transactions"],
        rolled_back_rows=counts["rolled_back_rows"],
        unknown_commits=counts["unknown_commits"],
    )


# --- the naive poller -----------------------------------------------------------------------


class NaivePoller:
    """The classic outbox poller: per partition, ``WHERE id > greatest id seen ORDER BY id``.

    It treats the greatest id observed as coverage, which is exactly what
    docs/procedure.md forbids: a row whose lower id commits after a higher one
    was read sorts below the cursor and is never fetched. ``delivered`` holds
    every ``(partition, id)`` it returned. :meth:`start` polls in a background
    thread every ``interval`` seconds, as a real poller would; :meth:`poll` is
    safe to call beside it.
    """

    def __init__(self, dsn: str, relations: Mapping[str, str], page_size: int = 500) -> None:
        self.conn = psycopg.connect(dsn, autocommit=True)
        self.relations = dict(relations)
        self.page_size = page_size
        self.cursor = dict.fromkeys(self.relations, 0)
        self.delivered: set[tuple[str, int]] = set()
        #: Polls made so far (each reads every partition to its end).
        self.polls = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.error: BaseException | None = None

    def poll(self) -> int:
        """Read every partition to its end from the cursor; returns the rows delivered."""
        new = 0
        with self._lock:
            self.polls += 1
            for partition, relation in self.relations.items():
                query = sql.SQL("SELECT id FROM {} WHERE id > %s ORDER BY id LIMIT %s").format(
                    sql.SQL(relation)
                )
                while True:
                    found = self.conn.execute(query, (self.cursor[partition], self.page_size))
                    ids = [int(r[0]) for r in found]
                    self.delivered.update((partition, row_id) for row_id in ids)
                    new += len(ids)
                    if ids:
                        self.cursor[partition] = max(self.cursor[partition], ids[-1])
                    if len(ids) < self.page_size:
                        break
        return new

    def start(self, interval: float) -> None:
        """Poll in a background thread every ``interval`` seconds until :meth:`stop`."""

        def loop() -> None:
            try:
                while not self._stop.wait(interval):
                    self.poll()
            except BaseException as exc:  # reported by stop(); the run must not hang
                self.error = exc

        self._stop.clear()
        self._thread = threading.Thread(target=loop, name="naive-poller", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop the background thread; raises what it failed with, if it failed."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        if self.error is not None:
            raise RuntimeError(f"the naive poller failed: {self.error!r}") from self.error

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self.conn.close()


# --- the run --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class LateCommit:
    """The arranged out-of-order commit: ``held`` committed after ``later`` was polled."""

    partition: str
    held_id: int
    held_xid: int
    later_id: int
    later_xid: int
    naive_cursor: int
    frontier_while_held: Cut


@dataclass(frozen=True, slots=True)
class RoundReport:
    """One round: the naive poll, a pass of every reader, one publication attempt."""

    number: int
    phase: str
    frontier: Cut
    revision: int
    outcome: str
    reason: str | None
    handled: int
    naive_delivered: int
    problem: str


@dataclass(frozen=True, slots=True)
class Figures:
    """The end of a run, counted from the tables and the store."""

    rows_committed: int
    transactions_committed: int
    rows_rolled_back: int
    naive_skipped: int
    fencepost_skipped: int
    outcomes: int
    stray_outcomes: int
    repeated_deliveries: int
    greatest_xid: int | None
    frontier: Cut
    revision: int
    covered: bool
    problems: tuple[str, ...] = field(default=())

    @property
    def ok(self) -> bool:
        """fencepost skipped nothing, recorded no stray row, covered all, never overstated."""
        return (
            self.fencepost_skipped == 0
            and self.stray_outcomes == 0
            and self.covered
            and not self.problems
        )


class OutboxRun:
    """fencepost's readers and publisher beside the naive poller, on one outbox.

    Each :meth:`round` polls naively, runs one pass of every partition reader
    (up to ``pages`` pages), makes one publication attempt, and checks the
    published frontier: it never goes back, and every row it covers has a
    durable outcome (only rows newly covered are read, so a round costs the
    rows it covers anew, not the table).
    """

    def __init__(
        self,
        dsn: str,
        layout: Layout,
        store: Store,
        *,
        page_size: int = 200,
        pages: int = 4,
        worker: str | None = None,
        provider: PostgresOutbox | None = None,
    ) -> None:
        self.dsn = dsn
        self.layout = layout
        self.store = store
        self.pages = pages
        self.provider = provider or PostgresOutbox(dsn, layout.relations, page_size=page_size)
        membership = self.provider.membership()
        store.create_stream(STREAM, membership)
        self.handled: Counter[str] = Counter()
        self.readers = [
            PartitionReader(
                store, self.provider, STREAM, p, 1, membership.scope, XID8_ORDER, self._handle
            )
            for p in layout.relations
        ]
        self.publisher = Publisher(store, STREAM, worker or f"outbox-{os.getpid()}")
        # Readers of different partitions run side by side: their store calls overlap.
        self._pool = ThreadPoolExecutor(min(8, len(self.readers)), thread_name_prefix="reader")
        self.naive = NaivePoller(dsn, layout.relations)
        self.truth = psycopg.connect(dsn, autocommit=True)
        self.rounds = 0
        self.problems: list[str] = []
        self._checked_below = 0
        self._last = Cut.nothing()
        self.late: LateCommit | None = None

    def _pass(self, reader: PartitionReader) -> BaseException | None:
        try:
            reader.run_pass(max_pages=self.pages)
        except (IndefiniteStoreError, ProviderTimeout):
            pass  # nothing certified past what is durable; the next round retries
        except BaseException as exc:
            return exc
        return None

    def _handle(self, event: Event) -> str:
        self.handled[event.id] += 1
        return f"published xid {event.at}"

    # --- rounds ----------------------------------------------------------------------

    def round(self, phase: str) -> RoundReport:
        """One naive poll, one pass of every reader (in parallel threads), one attempt."""
        self.rounds += 1
        naive = self.naive.poll()
        for failure in self._pool.map(self._pass, self.readers):
            if failure is not None:
                raise failure
        result = self.publisher.attempt()
        record = self.store.read_publication(STREAM)
        problem = self._check(record.cut)
        if problem:
            self.problems.append(problem)
        return RoundReport(
            self.rounds,
            phase,
            record.cut,
            record.revision,
            result.outcome.value,
            None if result.reason is None else result.reason.value,
            len(self.handled),
            naive,
            problem,
        )

    def _check(self, cut: Cut) -> str:
        """The oracle: no regression, and every row the frontier covers has an outcome."""
        if compare_cuts(XID8_ORDER, cut, self._last) < 0:
            return f"REGRESSION: {describe(self._last)} -> {describe(cut)}"
        self._last = cut
        if cut.is_nothing:
            return ""
        assert type(cut.at) is int
        ids = self._rows_between(self._checked_below, cut.at)
        outcomes = self.store.outcomes(STREAM, ids) if ids else {}
        missing = [i for i in ids if i not in outcomes]
        if missing:
            return (
                f"UNSOUND: the frontier {describe(cut)} covers {len(missing)} rows with no "
                f"outcome (first: {missing[0]})"
            )
        self._checked_below = cut.at
        return ""

    def _rows_between(self, low: int, high: int) -> list[str]:
        """Event ids of every row with ``low <= xid < high``, straight from the tables."""
        ids: list[str] = []
        for partition, relation in self.layout.relations.items():
            query = sql.SQL(
                "SELECT id::text FROM {} WHERE xid >= %s::xid8 AND xid < %s::xid8"
            ).format(sql.SQL(relation))
            ids.extend(
                f"{partition}:{r[0]}" for r in self.truth.execute(query, (str(low), str(high)))
            )
        return ids

    def arrange_late_commit(self, emit: Callable[[RoundReport], None] | None = None) -> LateCommit:
        """Commit a lower id after a higher one was polled, in one partition, deterministically.

        Transaction A inserts a row and stays open; transaction B inserts rows
        until one lands in A's partition (a higher id: the sequence hands ids
        out in order) and commits; a round runs (the naive poller moves past
        B's id; fencepost's frontier must stay below A's xid); then A commits.
        """
        held = psycopg.connect(self.dsn, autocommit=False)
        later = psycopg.connect(self.dsn, autocommit=False)
        try:
            target = self.layout.targets[0]
            insert = sql.SQL(
                "INSERT INTO {} (writer, payload) VALUES (-1, %s) "
                "RETURNING id, xid::text, tableoid::regclass::text"
            ).format(sql.SQL(target))
            row = held.execute(insert, ("held open",)).fetchone()
            assert row is not None
            held_id, held_xid, relation = int(row[0]), int(row[1]), str(row[2])
            for attempt in range(10_000):
                got = later.execute(insert, (f"committed first {attempt}",)).fetchone()
                assert got is not None
                if str(got[2]) == relation:
                    later_id, later_xid = int(got[0]), int(got[1])
                    break
            else:  # pragma: no cover - 10 000 misses of a hash partition cannot happen
                raise RuntimeError("no row of the later transaction landed in the held partition")
            later.commit()
            partition = next(p for p, r in self.layout.relations.items() if r == relation)
            report = self.round("hold")
            if emit is not None:
                emit(report)
            self.late = LateCommit(
                partition,
                held_id,
                held_xid,
                later_id,
                later_xid,
                self.naive.cursor[partition],
                report.frontier,
            )
            if (
                not report.frontier.is_nothing
                and compare_cuts(XID8_ORDER, report.frontier, Cut.before(held_xid)) > 0
            ):
                self.problems.append(
                    f"UNSOUND: the frontier {describe(report.frontier)} covers xid {held_xid}, "
                    "which is still running"
                )
            held.commit()
        finally:
            held.close()
            later.close()
        return self.late

    # --- the end --------------------------------------------------------------------

    def greatest_xid(self) -> int | None:
        """The greatest xid of any row in the outbox now."""
        best: int | None = None
        for relation in self.layout.relations.values():
            row = self.truth.execute(
                sql.SQL("SELECT max(xid)::text FROM {}").format(sql.SQL(relation))
            ).fetchone()
            if row is not None and row[0] is not None:
                best = max(best or 0, int(row[0]))
        return best

    def covers(self, xid: int | None) -> bool:
        """Whether the published frontier covers ``xid`` (trivially when there is no row)."""
        if xid is None:
            return True
        return compare_cuts(XID8_ORDER, self._last, Cut.through(xid)) >= 0

    def drain(self, timeout: float, interval: float, emit: Callable[[RoundReport], None]) -> bool:
        """Rounds until the frontier covers every row and the naive poller is quiet.

        Call it after the writers stopped. Returns False when ``timeout``
        seconds pass first (a transaction elsewhere holds the xmin back:
        :meth:`PostgresOutbox.holders` names it).
        """
        target = self.greatest_xid()
        deadline = time.monotonic() + timeout
        while True:
            report = self.round("drain")
            emit(report)
            if report.problem:
                return True
            if self.covers(target) and report.naive_delivered == 0:
                return True
            if time.monotonic() > deadline:
                return False
            if interval:
                time.sleep(interval)

    def figures(self, writers: Sequence[WriterReport]) -> Figures:
        """Count, from the tables and the store, what each poller skipped."""
        rows: list[tuple[str, int, int]] = []
        for partition, relation in self.layout.relations.items():
            query = sql.SQL("SELECT id, xid::text FROM {}").format(sql.SQL(relation))
            rows.extend((partition, int(i), int(x)) for i, x in self.truth.execute(query))
        ids = [f"{p}:{i}" for p, i, _ in rows]
        outcomes = self.store.outcomes(STREAM, ids) if ids else {}
        committed = set(ids)
        record = self.store.read_publication(STREAM)
        greatest = max((x for _, _, x in rows), default=None)
        late_transactions = 2 if self.late is not None else 0
        return Figures(
            rows_committed=len(rows),
            transactions_committed=sum(w.committed_transactions for w in writers)
            + late_transactions,
            rows_rolled_back=sum(w.rolled_back_rows for w in writers),
            naive_skipped=sum((p, i) not in self.naive.delivered for p, i, _ in rows),
            fencepost_skipped=len(committed) - len(outcomes),
            outcomes=len(outcomes),
            stray_outcomes=len(set(self.handled) - committed),
            repeated_deliveries=sum(n - 1 for n in self.handled.values()),
            greatest_xid=greatest,
            frontier=record.cut,
            revision=record.revision,
            covered=self.covers(greatest),
            problems=tuple(self.problems),
        )

    def close(self) -> None:
        self._pool.shutdown()
        self.naive.close()
        self.truth.close()
        self.provider.close()


def describe(cut: Cut) -> str:
    return "nothing" if cut.is_nothing else f"{cut.endpoint.value} {cut.at}"


def _main() -> None:
    report = writer_main(json.loads(sys.stdin.read()))
    print(json.dumps(asdict(report)), flush=True)


if __name__ == "__main__":
    _main()
