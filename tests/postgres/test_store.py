"""PostgresStore beyond the shared contract: migrations under a lock, exact values, one-
statement conditional writes under real races, and what each failure means."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import psycopg
import pytest
from pg_server import drop_schema, fresh_schema

from fencepost.impl.cuts import Cut
from fencepost.impl.open import open_store
from fencepost.impl.orders import IntegerOrder, StringOrder
from fencepost.impl.postgres import DSN_ENV, PostgresStore
from fencepost.impl.postgres_deadline import redact
from fencepost.impl.postgres_schema import SCHEMA_VERSION, _migration_lock_key, quote_ident
from fencepost.impl.records import Checkpoint, Membership, PublicationRecord
from fencepost.impl.stores import (
    Applied,
    CheckpointApplied,
    CheckpointConflict,
    Conflict,
    DefiniteStoreError,
    StoreOpenError,
)

pytestmark = pytest.mark.postgres

OFFSETS = IntegerOrder("offsets", successor_exact=True)
NAMES = StringOrder("names")
MEMBERSHIP = Membership(1, "q", {"A": "offsets", "B": "offsets"}, {"offsets": OFFSETS})


def versions(dsn: str, schema: str) -> list[int]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        rows = conn.execute(f"SELECT version FROM {quote_ident(schema)}.schema_version").fetchall()
    return sorted(r[0] for r in rows)


def test_concurrent_starters_migrate_once(pg_dsn: str, pg_schema: str) -> None:
    barrier = threading.Barrier(8)

    def start() -> int:
        barrier.wait()
        store = PostgresStore(pg_dsn, schema=pg_schema)
        try:
            return store.schema_version
        finally:
            store.close()

    with ThreadPoolExecutor(8) as pool:
        assert list(pool.map(lambda _: start(), range(8))) == [SCHEMA_VERSION] * 8
    assert versions(pg_dsn, pg_schema) == list(range(1, SCHEMA_VERSION + 1))


def _blocked_by(watcher: psycopg.Connection[tuple[Any, ...]], pid: int) -> list[int]:
    """The backends waiting for a lock ``pid`` holds (asked afresh on every call)."""
    rows = watcher.execute(
        "SELECT pid FROM pg_stat_activity WHERE %s = ANY(pg_blocking_pids(pid))", (pid,)
    ).fetchall()
    return [int(r[0]) for r in rows]


def test_migration_waits_for_the_advisory_lock(pg_dsn: str, pg_schema: str) -> None:
    opened: list[PostgresStore] = []
    with (
        psycopg.connect(pg_dsn) as holder,
        psycopg.connect(pg_dsn, autocommit=True) as watcher,
    ):
        holder.execute("SELECT pg_advisory_xact_lock(%s)", (_migration_lock_key(pg_schema),))
        starter = threading.Thread(
            target=lambda: opened.append(PostgresStore(pg_dsn, schema=pg_schema))
        )
        starter.start()
        # Wait for the condition itself: the starter's backend waiting on our lock (the
        # key is this test's schema, so nothing else can wait on it).
        holder_pid = holder.info.backend_pid
        deadline = time.monotonic() + 120  # a fail-safe, never the verdict
        while not _blocked_by(watcher, holder_pid):
            assert starter.is_alive(), "the starter finished while the lock was held"
            assert time.monotonic() < deadline, "the starter never asked for the lock"
            time.sleep(0.01)
        assert not opened, "the migration ran while another starter held the lock"
        assert starter.is_alive()
        holder.rollback()  # releases the lock
    starter.join(120)
    assert len(opened) == 1 and opened[0].schema_version == SCHEMA_VERSION
    opened[0].close()


def test_a_schema_from_a_newer_fencepost_is_refused(pg_dsn: str, pg_schema: str) -> None:
    PostgresStore(pg_dsn, schema=pg_schema).close()
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute(
            f"INSERT INTO {quote_ident(pg_schema)}.schema_version (version, description) "
            "VALUES (%s, 'from the future')",
            (SCHEMA_VERSION + 1,),
        )
    with pytest.raises(StoreOpenError, match="newer than this fencepost"):
        PostgresStore(pg_dsn, schema=pg_schema)


def test_reopening_is_idempotent_and_keeps_state(pg_dsn: str, pg_schema: str) -> None:
    with PostgresStore(pg_dsn, schema=pg_schema) as store:
        store.create_stream("s", MEMBERSHIP)
    with PostgresStore(pg_dsn, schema=pg_schema) as again:
        assert again.read_publication("s") == PublicationRecord(1)
    assert versions(pg_dsn, pg_schema) == list(range(1, SCHEMA_VERSION + 1))


HUGE = {
    "129 digits": 10**128 + 7,
    "-129 digits": -(10**128) - 7,
    "9543 digits": 3**20000,
    "-7606 digits": -(7**9000),
    "2**63": 2**63,
    "-2**63-1": -(2**63) - 1,
    "0": 0,
}


@pytest.mark.parametrize("at", list(HUGE.values()), ids=list(HUGE))
def test_huge_integer_coordinates_round_trip_exactly(pg_store: PostgresStore, at: int) -> None:
    """Past bigint and past Python's 4300-digit str() limit: stored as numeric, exactly."""
    pg_store.create_stream("s", MEMBERSHIP)
    pg_store.write_publication("s", 0, 1, Cut.before(at), "w-1")
    pg_store.write_checkpoint("s", None, Checkpoint("A", Cut.through(at), "t", 1, "q", 1))
    assert pg_store.read_publication("s").cut == Cut.before(at)
    stored = pg_store.read_checkpoint("s", 1, "A")
    assert stored is not None and stored.cut == Cut.through(at)


def test_huge_epochs_round_trip(pg_store: PostgresStore) -> None:
    epoch = 2**70
    big = Membership(epoch, "q", {"A": "offsets"}, {"offsets": OFFSETS})
    pg_store.create_stream("s", big)
    assert pg_store.read_membership("s") == big
    assert pg_store.read_publication("s") == PublicationRecord(epoch)


def test_string_coordinates_keep_code_point_order_and_bytes(pg_store: PostgresStore) -> None:
    names = Membership(
        1, "q", {"b": "names", "a": "names", "ä": "names", "\x00": "names"}, {"names": NAMES}
    )
    pg_store.create_stream("s", names)
    for p in names.partitions:
        pg_store.write_checkpoint(
            "s", None, Checkpoint(p, Cut.before("\U0001f600\x00é"), None, 1, "q", 1)
        )
    got = pg_store.read_checkpoints("s", 1)
    assert [c.partition for c in got] == sorted(names.partitions)
    assert {c.cut for c in got} == {Cut.before("\U0001f600\x00é")}
    assert {c.token for c in got} == {None}


def test_racing_publication_writers_one_wins_losers_see_the_winner(
    pg_store: PostgresStore, pg_dsn: str, pg_schema: str
) -> None:
    """Many connections write revision 1 at once: one statement each, one winner, and
    every loser's Conflict carries the winner's record (the latest, not a snapshot)."""
    pg_store.create_stream("s", MEMBERSHIP)
    stores = [PostgresStore(pg_dsn, schema=pg_schema) for _ in range(12)]
    barrier = threading.Barrier(len(stores))
    try:

        def write(i: int) -> Applied | Conflict:
            barrier.wait()
            return stores[i].write_publication("s", 0, 1, Cut.through(i), f"w{i}-1")

        with ThreadPoolExecutor(len(stores)) as pool:
            results = list(pool.map(write, range(len(stores))))
    finally:
        for store in stores:
            store.close()
    winners = [r for r in results if isinstance(r, Applied)]
    assert len(winners) == 1
    assert all(r.record == winners[0].record for r in results)
    assert pg_store.read_publication("s") == winners[0].record


def test_racing_first_checkpoints_one_wins_losers_see_the_winner(
    pg_store: PostgresStore, pg_dsn: str, pg_schema: str
) -> None:
    pg_store.create_stream("s", MEMBERSHIP)
    stores = [PostgresStore(pg_dsn, schema=pg_schema) for _ in range(12)]
    barrier = threading.Barrier(len(stores))
    try:

        def write(i: int) -> CheckpointApplied | CheckpointConflict:
            barrier.wait()
            return stores[i].write_checkpoint(
                "s", None, Checkpoint("A", Cut.before(i), f"t{i}", 1, "q", 1)
            )

        with ThreadPoolExecutor(len(stores)) as pool:
            results = list(pool.map(write, range(len(stores))))
    finally:
        for store in stores:
            store.close()
    winners = [r for r in results if isinstance(r, CheckpointApplied)]
    assert len(winners) == 1
    # Even a loser whose snapshot predates the winner's commit reports the winner.
    assert all(r.checkpoint == winners[0].checkpoint for r in results)


def test_a_server_error_is_definite_and_nothing_applied(pg_dsn: str, pg_schema: str) -> None:
    """A lock held elsewhere past statement_timeout: the server cancels (ERROR 57014)."""
    with PostgresStore(pg_dsn, schema=pg_schema) as setup:
        setup.create_stream("s", MEMBERSHIP)
    store = PostgresStore(pg_dsn, schema=pg_schema, op_timeout=1)
    try:
        with psycopg.connect(pg_dsn) as holder:
            holder.execute(f"SELECT * FROM {quote_ident(pg_schema)}.publications FOR UPDATE")
            with pytest.raises(DefiniteStoreError, match=r"57014.*nothing was applied"):
                store.write_publication("s", 0, 1, Cut.through(5), "w-1")
            holder.rollback()
        assert store.read_publication("s") == PublicationRecord(1)
    finally:
        store.close()


def test_the_database_itself_refuses_checkpoints_of_non_members(
    pg_store: PostgresStore, pg_dsn: str, pg_schema: str
) -> None:
    """Defense in depth: even a client that skips the store's checks cannot write one."""
    pg_store.create_stream("s", MEMBERSHIP)
    s = quote_ident(pg_schema)
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        for partition, at_int, at_str in ((b"Z", 1, None), (b"A", None, b"x")):
            with pytest.raises(psycopg.errors.ForeignKeyViolation):
                conn.execute(
                    f"INSERT INTO {s}.checkpoints (stream, epoch, partition, cut_kind, cut_int, "
                    "cut_str, generation, scope, finality, write_id) VALUES "
                    "(%s, 1, %s, 'before', %s, %s, 1, 'q', 'final', gen_random_uuid())",
                    (b"s", partition, at_int, at_str),
                )


def test_closed_store_is_definite(pg_dsn: str, pg_schema: str) -> None:
    store = PostgresStore(pg_dsn, schema=pg_schema)
    store.close()
    with pytest.raises(DefiniteStoreError, match="closed"):
        store.read_publication("s")


def test_dsn_comes_from_the_environment(
    pg_dsn: str, pg_schema: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(DSN_ENV, pg_dsn)
    with PostgresStore(schema=pg_schema) as store:
        store.create_stream("s", MEMBERSHIP)
    monkeypatch.delenv(DSN_ENV)
    with pytest.raises(StoreOpenError, match=DSN_ENV):
        PostgresStore(schema=pg_schema)


def test_unreachable_server_names_the_url_without_its_password() -> None:
    dsn = "postgresql://fp:s3cret@127.0.0.1:1/nowhere"
    with pytest.raises(StoreOpenError) as err:
        PostgresStore(dsn, connect_timeout=1)
    assert "s3cret" not in str(err.value) and "cannot connect" in str(err.value)
    assert "s3cret" not in redact(dsn)


def test_open_store_understands_postgresql_urls(pg_dsn: str) -> None:
    schema = fresh_schema(pg_dsn, "open")
    sep = "&" if "?" in pg_dsn else "?"
    try:
        store = open_store(f"{pg_dsn}{sep}fencepost_schema={schema}")
        assert isinstance(store, PostgresStore) and store.schema == schema
        store.create_stream("s", MEMBERSHIP)
        store.close()
        assert versions(pg_dsn, schema) == list(range(1, SCHEMA_VERSION + 1))
    finally:
        drop_schema(pg_dsn, schema)
