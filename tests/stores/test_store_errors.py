"""One taxonomy of store errors, said the same way whatever happened underneath.

- A store another process holds locked (an exclusive transaction, SQLITE_BUSY) is
  :class:`StoreLocked`, "locked by another process", at open and mid-run: before, it was
  "not a usable SQLite database ... is it corrupt or another file?".
- A full disk (SQLITE_FULL, at a statement or at COMMIT) is :class:`StoreFull`, definite
  (rolled back), and the demo stops with exit 2: before, a COMMIT refused for a full disk
  was an indefinite error, retried for ever (581 rounds in 40 s).
- A store that fails every round with nothing moving stops the demo after
  ``STUCK_ROUNDS`` rounds, exit 2.

The full disk is SQLite's own size limit (``max_page_count``: deterministic, no mount,
no privilege); a COMMIT refused with SQLITE_FULL is a connection whose COMMIT raises
SQLite's own error. docs/robustness.md records the same on a real full tmpfs.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from fencepost.cli import main
from fencepost.impl.cuts import Cut
from fencepost.impl.orders import IntegerOrder
from fencepost.impl.records import Membership
from fencepost.impl.sqlite import SQLITE_FULL, SQLiteStore
from fencepost.impl.stores import (
    DefiniteStoreError,
    IndefiniteStoreError,
    StoreFull,
    StoreLocked,
)

M = Membership(1, "q", {"A": "offsets"}, {"offsets": IntegerOrder("offsets", True)})
SMALL = ["--partitions", "2", "--events", "5", "--interval", "0"]


@pytest.fixture
def locked(tmp_path: Path) -> Iterator[Path]:
    """A store file another connection holds in an exclusive transaction."""
    path = tmp_path / "s.db"
    SQLiteStore(path).close()
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    yield path
    holder.execute("ROLLBACK")
    holder.close()


def test_a_store_locked_by_another_process_is_said_as_locked_at_open(locked: Path) -> None:
    with pytest.raises(StoreLocked) as caught:
        SQLiteStore(locked, busy_timeout_ms=100)
    message = str(caught.value)
    assert message.startswith("the store is locked by another process (waited 0.1s): ")
    assert "corrupt" not in message and "another file" not in message


def test_a_write_blocked_by_another_process_is_said_as_locked(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    store = SQLiteStore(path, busy_timeout_ms=100)
    store.create_stream("s", M)
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(StoreLocked, match="locked by another process"):
            store.write_publication("s", 0, 1, Cut.through(1), "w-1")
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert store.read_publication("s").revision == 0  # nothing was done
    store.close()


def test_the_demo_says_locked_and_exits_2(locked: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import fencepost.commands.demo as demo

    monkeypatch.setattr(demo, "open_store", lambda db: SQLiteStore(db, busy_timeout_ms=100))
    result = CliRunner().invoke(main, ["demo", "--db", str(locked), *SMALL])
    assert result.exit_code == 2, result.output
    assert "Error: the store is locked by another process" in result.output
    assert "corrupt" not in result.output and "Traceback" not in result.output


def full(path: Path) -> SQLiteStore:
    """A store whose file may not grow by one more page: a full disk, deterministically."""
    store = SQLiteStore(path)
    pages = store._db.execute("PRAGMA page_count").fetchone()[0]
    store._db.execute(f"PRAGMA max_page_count = {pages}")
    return store


def test_a_full_disk_is_store_full_and_definite(tmp_path: Path) -> None:
    store = full(tmp_path / "s.db")
    store._db.execute("PRAGMA max_page_count = 1000")
    store.create_stream("s", M)
    pages = store._db.execute("PRAGMA page_count").fetchone()[0]
    store._db.execute(f"PRAGMA max_page_count = {pages}")
    with pytest.raises(StoreFull) as caught:
        for i in range(10_000):
            store.record_outcome("s", f"event-{i}-{'x' * 200}", "ok")
    assert isinstance(caught.value, DefiniteStoreError)
    assert str(caught.value).startswith(f"the store's disk is full: {tmp_path / 's.db'}: ")
    store.close()


class _CommitRefused:
    """A connection whose COMMIT fails as SQLite's does on a full disk."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db

    def execute(self, sql: str, *args: Any) -> Any:
        if sql == "COMMIT":
            self.db.execute("ROLLBACK")
            error = sqlite3.OperationalError("database or disk is full")
            error.sqlite_errorcode = SQLITE_FULL
            raise error
        return self.db.execute(sql, *args)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.db, name)


def test_a_commit_refused_for_a_full_disk_is_definite_not_retried(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "s.db")
    store.create_stream("s", M)
    real = store._db
    store._db = _CommitRefused(real)  # type: ignore[assignment]
    with pytest.raises(StoreFull):  # before: IndefiniteStoreError, retried for ever
        store.write_publication("s", 0, 1, Cut.through(1), "w-1")
    store._db = real
    assert store.read_publication("s").revision == 0  # rolled back: definite
    store.close()


def test_the_demo_on_a_full_disk_is_reported_and_stopped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import fencepost.commands.demo as demo

    monkeypatch.setattr(demo, "open_store", lambda db: full(Path(db)))
    path = tmp_path / "demo.db"
    SQLiteStore(path).close()
    args = ["--partitions", "2", "--events", "300", "--interval", "0"]
    result = CliRunner().invoke(main, ["demo", "--db", str(path), *args])
    assert result.exit_code == 2, result.output
    assert (
        result.output.rstrip()
        .splitlines()[-1]
        .startswith(
            f"Error: the store's disk is full: {path}: SQLite says: database or disk is full"
        )
    )


class _Failing:
    """A store whose every outcome write is lost (a disk that stays broken)."""

    def __init__(self, inner: SQLiteStore) -> None:
        self.inner = inner

    def record_outcome(self, *args: object) -> str:
        raise IndefiniteStoreError("COMMIT failed (disk I/O error); reread before deciding")

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def test_a_store_failing_every_round_stops_the_demo(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import fencepost.commands.demo as demo

    monkeypatch.setattr(demo, "open_store", lambda db: _Failing(SQLiteStore(db)))
    result = CliRunner().invoke(main, ["demo", "--db", str(tmp_path / "d.db"), *SMALL])
    assert result.exit_code == 2, result.output
    rounds = [line for line in result.output.splitlines() if line.startswith("round")]
    assert len(rounds) == demo.STUCK_ROUNDS
    assert (
        f"the store failed in each of the last {demo.STUCK_ROUNDS} rounds and nothing moved"
        in result.output
    )
