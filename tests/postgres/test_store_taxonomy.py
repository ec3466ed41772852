"""The same corruption gets the same words and the same exit code on SQLite and PostgreSQL.

A membership body that is not JSON, or JSON that is no membership: both backends raise
:class:`CorruptStore` naming the table, the row and the field, and ``fencepost demo``
says "restore it from a backup" and exits 2 on both. Before, PostgreSQL raised a plain
``DefiniteStoreError`` (or a bare ``ValueError``), so the demo told the user to run it
again, where SQLite said to restore from a backup.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable
from pathlib import Path

import psycopg
import pytest
from click.testing import CliRunner

from fencepost.cli import main
from fencepost.impl.orders import IntegerOrder
from fencepost.impl.postgres import PostgresStore
from fencepost.impl.postgres_schema import quote_ident
from fencepost.impl.records import Membership
from fencepost.impl.sqlite import SQLiteStore
from fencepost.impl.stores import CorruptStore, Store

pytestmark = pytest.mark.postgres

M = Membership(1, "q", {"A": "offsets"}, {"offsets": IntegerOrder("offsets", True)})
SMALL = ["--partitions", "2", "--events", "5", "--interval", "0"]
BODIES = {"not JSON": "{not json", "no membership": "{}"}


def _sqlite(tmp_path: Path) -> tuple[str, Callable[[str], None]]:
    path = str(tmp_path / "s.db")

    def corrupt(body: str) -> None:
        with sqlite3.connect(path) as db:
            db.execute("UPDATE memberships SET body = ?", (body,))

    return path, corrupt


def _postgres(dsn: str, schema: str) -> tuple[str, Callable[[str], None]]:
    def corrupt(body: str) -> None:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(f"UPDATE {quote_ident(schema)}.memberships SET body = %s", (body,))

    sep = "&" if "?" in dsn else "?"
    return f"{dsn}{sep}fencepost_schema={schema}", corrupt


def _words(message: str, location: str) -> str:
    return message.replace(location, "<store>")


@pytest.mark.parametrize("case", sorted(BODIES))
def test_a_corrupt_membership_reads_the_same_on_both_backends(
    tmp_path: Path, pg_dsn: str, pg_schema: str, case: str
) -> None:
    path, corrupt_sqlite = _sqlite(tmp_path)
    _, corrupt_postgres = _postgres(pg_dsn, pg_schema)
    backends: list[tuple[Callable[[], Store], Callable[[str], None]]] = [
        (lambda: SQLiteStore(path), corrupt_sqlite),
        (lambda: PostgresStore(pg_dsn, schema=pg_schema), corrupt_postgres),
    ]
    said = []
    for open_store, corrupt in backends:
        store = open_store()
        store.create_stream("s", M)
        store.close()
        corrupt(BODIES[case])
        fresh = open_store()  # no membership cached: read from the row
        with pytest.raises(CorruptStore) as caught:
            fresh.read_membership("s", 1)
        said.append(_words(str(caught.value), caught.value.location))
        fresh.close()
    sqlite_said, postgres_said = said
    assert sqlite_said == postgres_said
    assert sqlite_said.startswith(
        "corrupt store: <store>: table memberships, row stream='s' epoch=1, field body"
    )
    assert sqlite_said.endswith("restore it from a backup or start a new one")


def test_the_demo_says_the_same_and_exits_2_on_both_backends(
    tmp_path: Path, pg_dsn: str, pg_schema: str
) -> None:
    outputs = []
    for db, corrupt in (_sqlite(tmp_path), _postgres(pg_dsn, pg_schema)):
        first = CliRunner().invoke(main, ["demo", "--db", db, *SMALL])
        assert first.exit_code == 0, first.output
        corrupt("{not json")
        again = CliRunner().invoke(main, ["demo", "--db", db, *SMALL])
        assert again.exit_code == 2, again.output
        outputs.append(
            re.sub(r"corrupt store: .*?: table", "corrupt store: <store>: table", again.output)
        )
    sqlite_said, postgres_said = outputs
    assert "run the demo again" not in sqlite_said + postgres_said
    assert sqlite_said == postgres_said, (sqlite_said, postgres_said)
    assert "Error: corrupt store: <store>: table memberships" in sqlite_said


def test_a_store_locked_by_another_session_is_said_as_locked_on_both_backends(
    tmp_path: Path, pg_dsn: str, pg_schema: str
) -> None:
    """Another session holds an exclusive lock longer than this one waits: StoreLocked."""
    from fencepost.impl.cuts import Cut
    from fencepost.impl.stores import StoreLocked

    sep = "&" if "?" in pg_dsn else "?"
    pg = PostgresStore(f"{pg_dsn}{sep}options=-c%20lock_timeout%3D200", schema=pg_schema)
    pg.create_stream("s", M)
    lite = SQLiteStore(tmp_path / "s.db", busy_timeout_ms=200)
    lite.create_stream("s", M)
    said = []
    with (
        psycopg.connect(pg_dsn) as holder,
        sqlite3.connect(tmp_path / "s.db", isolation_level=None) as lite_holder,
    ):
        holder.execute(f"LOCK TABLE {quote_ident(pg_schema)}.publications IN EXCLUSIVE MODE")
        lite_holder.execute("BEGIN EXCLUSIVE")
        for store in (lite, pg):
            with pytest.raises(StoreLocked) as caught:
                store.write_publication("s", 0, 1, Cut.through(1), "w-1")
            said.append(str(caught.value))
        lite_holder.execute("ROLLBACK")
    assert all(s.startswith("the store is locked by another process") for s in said), said
    assert all("corrupt" not in s for s in said)
    assert pg.read_publication("s").revision == lite.read_publication("s").revision == 0
    pg.close()
    lite.close()
