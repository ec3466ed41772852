"""Real concurrency, real loss: writer processes, a naive poller and fencepost on one outbox.

Writer processes insert rows in transactions of random size with random delays
before commit (and some rollbacks), so commits land out of id order all the
time. A naive poller (resume after the greatest id seen) polls every 10 ms;
fencepost's partition readers and publisher run beside it. One late commit is
arranged explicitly before the load, so the naive poller's loss does not
depend on timing: a lower id is held open while a higher id in the same
partition commits and the naive poller polls.

Every assertion is decided from the outbox tables (the rows committed
transactions left) and the store (the outcomes recorded), never from the
run's own report; the figures are printed (``pytest -s``).
"""

from __future__ import annotations

import time
from collections.abc import Iterable

import psycopg
import pytest
from outbox_support import rows_in, uncovered
from pg_server import drop_schema, fresh_schema
from psycopg import sql

from fencepost.impl.cuts import Cut, compare_cuts
from fencepost.impl.postgres import PostgresStore
from fencepost.impl.providers.outbox_load import (
    STREAM,
    OutboxRun,
    WriterPlan,
    collect_writers,
    create_outbox,
    describe,
    start_writers,
    stop_writers,
)
from fencepost.impl.providers.postgres_outbox import XID8_ORDER

pytestmark = pytest.mark.postgres

#: After the writers stop, how long a transaction elsewhere in the cluster may hold xmin.
DRAIN_TIMEOUT = 120.0


def writer_rows(dsn: str, relations: Iterable[str]) -> tuple[int, int]:
    """Rows the writer processes committed, and rows of the two arranged transactions."""
    writers = arranged = 0
    with psycopg.connect(dsn, autocommit=True) as conn:
        for relation in relations:
            query = sql.SQL(
                "SELECT count(*) FILTER (WHERE writer >= 0), count(*) FILTER (WHERE writer < 0) "
                "FROM {}"
            ).format(sql.SQL(relation))
            row = conn.execute(query).fetchone()
            assert row is not None
            writers += int(row[0])
            arranged += int(row[1])
    return writers, arranged


def exercise(dsn: str, partitions: int, layout_kind: str, plan: WriterPlan) -> None:
    schema = fresh_schema(dsn, "outbox")
    procs = []
    try:
        with psycopg.connect(dsn, autocommit=True) as admin:
            layout = create_outbox(admin, schema, partitions, layout_kind)
        store = PostgresStore(dsn, schema=schema)
        run = OutboxRun(dsn, layout, store, page_size=100, pages=4)
        try:
            late = run.arrange_late_commit()
            run.naive.start(0.01)
            procs = start_writers(dsn, layout, plan)
            rounds = 0
            while any(p.poll() is None for p in procs):
                run.round("load")
                rounds += 1
                time.sleep(0.02)
            reports = collect_writers(procs)
            run.naive.stop()
            drained = run.drain(DRAIN_TIMEOUT, 0.05, lambda r: None)
            assert drained, f"xmin held back past {DRAIN_TIMEOUT} s by {run.provider.holders()}"

            # --- ground truth: the tables and the store --------------------------------
            truth = rows_in(dsn, layout.relations)
            record = store.read_publication(STREAM)
            outcomes = store.outcomes(STREAM, list(truth))
            naive = {f"{p}:{i}" for p, i in run.naive.delivered}
            naive_skipped = sorted(set(truth) - naive)
            fencepost_skipped = sorted(set(truth) - set(outcomes))
            greatest = max(truth.values())
            print(
                f"\n[outbox {layout_kind}, {partitions} partitions, {plan.writers} writers, "
                f"{plan.seconds:g} s, {rounds} load rounds] rows written {len(truth)} "
                f"({sum(r.rolled_back_rows for r in reports)} rolled back); "
                f"naive poller skipped {len(naive_skipped)}; fencepost skipped "
                f"{len(fencepost_skipped)}; final frontier {describe(record.cut)} "
                f"(revision {record.revision}, greatest xid {greatest})"
            )

            # the writers' own accounts agree with the tables
            by_writers, arranged = writer_rows(dsn, layout.relations.values())
            assert arranged >= 2 and by_writers + arranged == len(truth)
            if not any(r.unknown_commits for r in reports):
                assert by_writers == sum(r.committed_rows for r in reports)
            # the naive poller loses rows: the arranged one for certain
            held = f"{late.partition}:{late.held_id}"
            assert held in truth and held not in naive
            assert late.naive_cursor >= late.later_id > late.held_id
            assert naive_skipped
            # fencepost: none skipped, exactly one delivery each, nothing else recorded
            assert fencepost_skipped == []
            assert set(run.handled) == set(truth)
            assert set(run.handled.values()) == {1}
            # the frontier: stayed below the held xid while it ran, now covers every row
            assert (
                compare_cuts(XID8_ORDER, late.frontier_while_held, Cut.before(late.held_xid)) <= 0
            )
            assert compare_cuts(XID8_ORDER, record.cut, Cut.through(greatest)) >= 0
            assert uncovered(store, STREAM, dsn, layout.relations, record.cut) == []
            # and it never overstated along the way (checked after every round)
            assert run.problems == []
        finally:
            stop_writers(procs)
            run.close()
            store.close()
    finally:
        drop_schema(dsn, schema)


@pytest.mark.parametrize("layout_kind", ["hash", "tables"])
def test_writers_naive_poller_and_fencepost(pg_dsn: str, layout_kind: str) -> None:
    exercise(pg_dsn, 3, layout_kind, WriterPlan(writers=3, seconds=2.0, seed=7))


@pytest.mark.slow
def test_writers_naive_poller_and_fencepost_long(pg_dsn: str) -> None:
    exercise(pg_dsn, 8, "hash", WriterPlan(writers=6, seconds=10.0, max_delay=0.05, seed=11))
