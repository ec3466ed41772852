"""How the durable stores keep ``read_merge_summary`` exact and O(log N).

- The summary read probes indexes only: its query plan has no scan of an
  epoch's checkpoints, on SQLite and PostgreSQL (with 2,000 partitions and
  fresh statistics, where a scan would be a plausible plan).
- Stores written before the summary indexes existed are migrated to exact
  summaries: each test writes a store with today's code, takes it back by hand
  to schema version 1 (the sort keys, scope flags, missing-member rows and
  indexes removed, exactly what a version-1 store lacks), reopens it, and
  checks that the migration rebuilt what the summary probes.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import psycopg
import pytest

from fencepost.impl.cuts import Cut
from fencepost.impl.merge import merge_summary, summarize
from fencepost.impl.orders import IntegerOrder, StringOrder
from fencepost.impl.postgres import PostgresStore
from fencepost.impl.postgres_schema import quote_ident
from fencepost.impl.records import Checkpoint, Finality, Membership
from fencepost.impl.sqlite import SQLiteStore
from fencepost.impl.stores import Store, StoreOpenError

OFFSETS = IntegerOrder("offsets", successor_exact=True)
KEYS = StringOrder("keys")
FIRST = Membership(1, "q", {p: "offsets" for p in ("A", "B", "C", "D")}, {"offsets": OFFSETS})
SECOND = Membership(2, "q", {"\U0001f600": "keys", "é": "keys", "z": "keys"}, {"keys": KEYS})


def fill(store: Store) -> None:
    store.create_stream("s", FIRST)
    store.write_membership("s", SECOND)
    store.write_checkpoint("s", None, Checkpoint("A", Cut.before(10**50), None, 1, "q", 1))
    store.write_checkpoint("s", None, Checkpoint("B", Cut.through(4), "t", 1, "q", 1))
    store.write_checkpoint("s", None, Checkpoint("C", Cut.before(5), None, 1, "other", 1))
    store.write_checkpoint(
        "s", None, Checkpoint("\U0001f600", Cut.through("x"), None, 1, "q", 2, Finality.PROVISIONAL)
    )
    store.write_checkpoint("s", None, Checkpoint("é", Cut.before(""), None, 1, "q", 2))


def check(store: Store) -> None:
    for m in (FIRST, SECOND):
        vector = store.read_checkpoints("s", m.epoch)
        assert store.read_merge_summary("s", m.epoch) == summarize(m, vector)
    # and the rebuilt rows keep working: D's first checkpoint, C back in scope
    store.write_checkpoint("s", None, Checkpoint("D", Cut.through(9), None, 1, "q", 1))
    store.write_checkpoint("s", 1, Checkpoint("C", Cut.before(5), None, 2, "q", 1))
    assert merge_summary(FIRST, store.read_merge_summary("s", 1)) == Cut.through(4)


def version_1_sqlite(path: Path, extra: str = "") -> None:
    """A SQLite store filled by :func:`fill`, taken back to schema version 1 (plus ``extra``)."""
    store = SQLiteStore(path)
    fill(store)
    store.close()
    raw = sqlite3.connect(path)
    for index in (
        "checkpoints_by_cut",
        "checkpoints_off_scope",
        "checkpoints_provisional",
        "memberships_by_epoch",
    ):
        raw.execute(f"DROP INDEX {index}")
    raw.execute("DROP TABLE missing_checkpoints")
    raw.execute("ALTER TABLE checkpoints DROP COLUMN sort_key")
    raw.execute("ALTER TABLE checkpoints DROP COLUMN scope_ok")
    raw.execute("PRAGMA user_version = 1")
    if extra:
        raw.execute(extra)
    raw.commit()
    raw.close()


def test_a_version_1_sqlite_file_is_migrated_to_exact_summaries(tmp_path: Path) -> None:
    path = tmp_path / "v1.db"
    version_1_sqlite(path)
    store = SQLiteStore(path)
    assert store.schema_version == 2
    check(store)
    store.close()


def test_a_version_1_sqlite_file_with_a_stray_checkpoint_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "stray.db"
    version_1_sqlite(
        path,
        "INSERT INTO checkpoints (stream, epoch, partition, cut_kind, generation, scope, "
        "finality) VALUES ('s', 1, 'GONE', 'nothing', 1, 'q', 'final')",
    )
    with pytest.raises(StoreOpenError, match="GONE"):
        SQLiteStore(path)
    raw = sqlite3.connect(path)
    assert raw.execute("PRAGMA user_version").fetchone()[0] == 1  # nothing half-migrated
    raw.close()


@pytest.mark.postgres
def test_a_version_1_postgres_schema_is_migrated_to_exact_summaries(
    pg_dsn: str, pg_schema: str
) -> None:
    store = PostgresStore(pg_dsn, schema=pg_schema)
    fill(store)
    store.close()
    s = quote_ident(pg_schema)
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        for index in ("checkpoints_by_cut", "checkpoints_off_scope", "checkpoints_provisional"):
            conn.execute(f"DROP INDEX {s}.{index}")
        conn.execute(f"DROP TABLE {s}.missing_checkpoints")
        conn.execute(f"ALTER TABLE {s}.checkpoints DROP COLUMN sort_key, DROP COLUMN scope_ok")
        conn.execute(f"DELETE FROM {s}.schema_version WHERE version = 2")
    store = PostgresStore(pg_dsn, schema=pg_schema)
    try:
        assert store.schema_version == 2
        check(store)
    finally:
        store.close()


def big_stream(store: Store) -> None:
    many = Membership(1, "q", {f"p{i:05d}": "offsets" for i in range(2000)}, {"offsets": OFFSETS})
    store.create_stream("big", many)
    store.write_checkpoints(
        "big",
        [
            (None, Checkpoint(p, Cut.through(i), None, 1, "q", 1))
            for i, p in enumerate(many.partitions)
        ],
    )


def test_the_sqlite_summary_probes_indexes_only(tmp_path: Path) -> None:
    from fencepost.impl.sqlite_schema import _CURRENT_EPOCH_QUERY, _SUMMARY_QUERY

    store = SQLiteStore(tmp_path / "plan.db")
    big_stream(store)
    store._db.execute("ANALYZE")
    plan = [row[3] for row in store._db.execute("EXPLAIN QUERY PLAN " + _SUMMARY_QUERY, ("big", 1))]
    epoch = [
        row[3] for row in store._db.execute("EXPLAIN QUERY PLAN " + _CURRENT_EPOCH_QUERY, ("big",))
    ]
    store.close()
    # the current epoch never reads a membership body (O(partitions) of overflow pages)
    assert any("COVERING INDEX memberships_by_epoch" in step for step in epoch), epoch
    searches = [step for step in plan if step.startswith("SEARCH")]
    assert len(searches) == 4, plan
    assert all(" USING " in step for step in searches), plan  # an index or the primary key
    assert not [step for step in plan if step.startswith("SCAN") and "subquery" not in step], plan


@pytest.mark.postgres
def test_the_postgres_summary_probes_indexes_only(pg_dsn: str, pg_schema: str) -> None:
    store = PostgresStore(pg_dsn, schema=pg_schema)
    try:
        big_stream(store)
        query = store._summary_query
    finally:
        store.close()
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute(f"ANALYZE {quote_ident(pg_schema)}.checkpoints")
        conn.execute(f"SET search_path = {quote_ident(pg_schema)}")
        conn.execute("SET plan_cache_mode = force_generic_plan")  # as a prepared statement runs
        conn.execute(
            f"PREPARE summary(bytea, numeric) AS {query}".replace("%(stream)s", "$1").replace(
                "%(epoch)s", "$2"
            )
        )
        plan = [r[0] for r in conn.execute("EXPLAIN EXECUTE summary('big', 1)")]
    assert not [line for line in plan if "Seq Scan" in line], plan
    # missing, off-scope, provisional, and the least cut in two probes (prefix, then key)
    assert sum("Index Cond: ((stream = " in line for line in plan) == 5, plan


@pytest.mark.postgres
def test_postgres_checkpoint_writes_find_their_row_by_primary_key(
    pg_dsn: str, pg_schema: str
) -> None:
    """Even on a table never analyzed (autovacuum off), the generic plan of a fenced write
    looks its row up by (stream, epoch, partition), never by scanning the epoch."""
    store = PostgresStore(pg_dsn, schema=pg_schema)
    try:
        big_stream(store)
        checkpoint = Checkpoint("p00007", Cut.through(9), None, 2, "q", 1)
        for expected in (None, 1):
            query, params = store._checkpoint_statement("big", b"big", expected, checkpoint)
            names = list(params)
            for i, name in enumerate(names):
                query = query.replace(f"%({name})s", f"${i + 1}")
            with psycopg.connect(pg_dsn, autocommit=True) as conn:
                conn.execute(f"SET search_path = {quote_ident(pg_schema)}")
                conn.execute("SET plan_cache_mode = force_generic_plan")
                typed = ", ".join(_PG_TYPES[n] for n in names)
                conn.execute(f"PREPARE w({typed}) AS {query}")
                values = ", ".join("NULL" for _ in names)
                plan = [r[0] for r in conn.execute(f"EXPLAIN EXECUTE w({values})")]
            lookups = [line for line in plan if "Index Cond" in line or "Scan" in line]
            assert not [line for line in plan if "Seq Scan" in line], plan
            assert not [line for line in lookups if "checkpoints_by_cut" in line], plan
    finally:
        store.close()


_PG_TYPES = {
    "stream": "bytea",
    "epoch": "numeric",
    "partition": "bytea",
    "kind": "text",
    "at_int": "numeric",
    "at_str": "bytea",
    "token": "bytea",
    "generation": "bigint",
    "scope": "bytea",
    "finality": "text",
    "sort_key": "bytea",
    "scope_ok": "boolean",
    "write_id": "uuid",
    "expected": "bigint",
}
