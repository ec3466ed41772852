"""What only the SQLite backend has: its file, schema versions, pragmas and processes."""

from __future__ import annotations

import multiprocessing
import sqlite3
from pathlib import Path

import pytest

from fencepost.impl.cuts import Cut
from fencepost.impl.memory import MemoryStore
from fencepost.impl.open import OPENERS, open_store
from fencepost.impl.orders import IntegerOrder
from fencepost.impl.records import Membership, PublicationRecord
from fencepost.impl.sqlite import SQLiteStore
from fencepost.impl.sqlite_schema import (
    APPLICATION_ID,
    MIGRATIONS,
    SCHEMA_VERSION,
    decode_cut,
    encode_cut,
)
from fencepost.impl.stores import Applied, DefiniteStoreError, StoreOpenError

ORDER = IntegerOrder("offsets", successor_exact=True)
MEMBERS = Membership(1, "q", {"A": "offsets"}, {"offsets": ORDER})


def test_new_file_gets_the_current_schema_and_durable_pragmas(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "f.db")
    assert store.schema_version == SCHEMA_VERSION == len(MIGRATIONS)
    store.close()
    raw = sqlite3.connect(tmp_path / "f.db")
    assert raw.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert raw.execute("PRAGMA application_id").fetchone()[0] == APPLICATION_ID
    raw.close()
    store = SQLiteStore(tmp_path / "f.db")
    assert store._db.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
    assert store._db.execute("PRAGMA busy_timeout").fetchone()[0] == 10_000
    store.close()


def test_a_newer_schema_is_refused_naming_the_path(tmp_path: Path) -> None:
    path = tmp_path / "newer.db"
    SQLiteStore(path).close()
    raw = sqlite3.connect(path)
    raw.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    raw.commit()
    raw.close()
    with pytest.raises(StoreOpenError, match="newer than this fencepost knows") as info:
        SQLiteStore(path)
    assert str(path) in str(info.value)


def test_a_file_that_is_not_a_database_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "garbage.db"
    path.write_bytes(b"this is not sqlite at all" * 200)
    with pytest.raises(StoreOpenError, match="not a SQLite database or is corrupt") as info:
        SQLiteStore(path)
    assert str(path) in str(info.value)


def test_another_applications_database_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    raw = sqlite3.connect(path)
    raw.execute("CREATE TABLE customers (id INTEGER)")
    raw.commit()
    raw.close()
    with pytest.raises(StoreOpenError, match="not a fencepost store"):
        SQLiteStore(path)
    raw = sqlite3.connect(path)
    raw.execute("PRAGMA application_id = 1234")
    raw.execute("PRAGMA user_version = 1")
    raw.commit()
    raw.close()
    with pytest.raises(StoreOpenError, match="another application"):
        SQLiteStore(path)
    # Refusing it changed nothing.
    raw = sqlite3.connect(path)
    assert raw.execute("SELECT name FROM sqlite_master").fetchall() == [("customers",)]
    raw.close()


def test_migrations_run_in_order_inside_one_transaction(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "m.db"
    SQLiteStore(path).close()
    broken = (*MIGRATIONS, ("CREATE TABLE extra (x INTEGER)", "THIS IS NOT SQL"))
    monkeypatch.setattr("fencepost.impl.sqlite.MIGRATIONS", broken)
    monkeypatch.setattr("fencepost.impl.sqlite.SCHEMA_VERSION", len(broken))
    with pytest.raises(StoreOpenError):
        SQLiteStore(path)
    raw = sqlite3.connect(path)
    assert raw.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    tables = {r[0] for r in raw.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert "extra" not in tables  # the failed step left nothing behind
    raw.close()
    fixed = (*MIGRATIONS, ("CREATE TABLE extra (x INTEGER)",))
    monkeypatch.setattr("fencepost.impl.sqlite.MIGRATIONS", fixed)
    monkeypatch.setattr("fencepost.impl.sqlite.SCHEMA_VERSION", len(fixed))
    store = SQLiteStore(path)
    assert store.schema_version == len(fixed)
    store.close()


def test_counters_past_64_bits_are_refused_not_wrapped(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "c.db")
    with pytest.raises(DefiniteStoreError, match="2\\*\\*63-1"):
        store.create_stream("s", Membership(2**63, "q", {"A": "offsets"}, {"offsets": ORDER}))
    store.create_stream("s", MEMBERS)
    with pytest.raises(DefiniteStoreError, match="epoch"):
        store.write_publication("s", 0, 2**64, Cut.before(1), "w-1")
    assert store.read_publication("s") == PublicationRecord(1)
    store.close()


@pytest.mark.parametrize(
    "cut",
    [Cut.before(0), Cut.through(-(10**200)), Cut.before(10**6000), Cut.through("é\x00z")],
)
def test_cut_encoding_is_exact(cut: Cut) -> None:
    assert decode_cut(*encode_cut(cut)) == cut


def _hammer(path: str, worker: int, writes: int, out: multiprocessing.Queue) -> None:  # type: ignore[type-arg]
    store = SQLiteStore(path)
    applied = []
    done = 0
    while done < writes:
        record = store.read_publication("s")
        result = store.write_publication("s", record.revision, 1, Cut.through(worker), f"p{worker}")
        if isinstance(result, Applied):
            applied.append(result.record.revision)
            done += 1
    store.close()
    out.put(applied)


def test_several_processes_share_one_file_without_lost_updates(tmp_path: Path) -> None:
    path = str(tmp_path / "shared.db")
    store = SQLiteStore(path)
    store.create_stream("s", MEMBERS)
    context = multiprocessing.get_context("spawn")
    out: multiprocessing.Queue = context.Queue()  # type: ignore[type-arg]
    workers = [context.Process(target=_hammer, args=(path, i, 15, out)) for i in range(3)]
    for w in workers:
        w.start()
    revisions = [r for _ in workers for r in out.get(timeout=60)]
    for w in workers:
        w.join(timeout=60)
        assert w.exitcode == 0
    assert sorted(revisions) == list(range(1, 46))  # every applied write got its own revision
    assert store.read_publication("s").revision == 45
    store.close()


def test_open_store_dispatches_by_location(tmp_path: Path) -> None:
    assert isinstance(open_store("memory:"), MemoryStore)
    plain = open_store(str(tmp_path / "a.db"))
    assert isinstance(plain, SQLiteStore)
    plain.close()
    prefixed = open_store(f"sqlite:{tmp_path / 'b.db'}")
    assert isinstance(prefixed, SQLiteStore) and prefixed.path == str(tmp_path / "b.db")
    prefixed.close()
    url = open_store(f"sqlite://{tmp_path / 'c.db'}")
    assert isinstance(url, SQLiteStore) and url.path == str(tmp_path / "c.db")
    url.close()
    with pytest.raises(StoreOpenError, match="no store backend is registered for redis"):
        open_store("redis://localhost/0")
    with pytest.raises(StoreOpenError, match="does not exist"):
        open_store(str(tmp_path / "missing-folder" / "x.db"))
    with pytest.raises(StoreOpenError, match="memory:"):
        open_store("memory:extra")
    assert set(OPENERS) >= {"memory", "sqlite"}
