"""Broken and foreign SQLite files: refused unchanged, byte for byte, with what is wrong and
what to do; garbage rows named by table, row and field; a rolled-back record detected.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from fencepost.impl.cuts import Cut
from fencepost.impl.orders import IntegerOrder
from fencepost.impl.records import Checkpoint, Membership
from fencepost.impl.sqlite import SQLiteStore
from fencepost.impl.sqlite_schema import SCHEMA_VERSION
from fencepost.impl.stores import (
    CorruptStore,
    StoreBehind,
    StoreOpenError,
    StreamConflict,
    require_not_behind,
)

ORDER = IntegerOrder("offsets", successor_exact=True)
MEMBERS = Membership(1, "q", {"A": "offsets"}, {"offsets": ORDER})


def _raw(path: Path, *statements: str) -> None:
    db = sqlite3.connect(path)
    for statement in statements:
        db.execute(statement)
    db.commit()
    db.close()


def _snapshot(folder: Path) -> dict[str, str]:
    """Every file of ``folder`` and a hash of its bytes."""
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir())}


def _store_file(path: Path) -> None:
    store = SQLiteStore(path)
    store.create_stream("s", MEMBERS)
    store.write_publication("s", 0, 1, Cut.through(3), "w-1")
    store.write_checkpoint("s", None, Checkpoint("A", Cut.before(4), "t", 1, "q", 1))
    store.close()


def _foreign(path: Path) -> None:
    _raw(path, "CREATE TABLE customers (id INTEGER)", "INSERT INTO customers VALUES (1)")


def _other_application(path: Path) -> None:
    _raw(path, "PRAGMA application_id = 1234", "PRAGMA user_version = 1")


def _newer(path: Path) -> None:
    _store_file(path)
    _raw(path, f"PRAGMA user_version = {SCHEMA_VERSION + 1}")


def _negative_version(path: Path) -> None:
    _store_file(path)
    _raw(path, "PRAGMA user_version = -1")


def _dropped_table(path: Path) -> None:
    _store_file(path)
    _raw(path, "DROP TABLE outcomes")


def _not_sqlite(path: Path) -> None:
    path.write_bytes(os.urandom(8192))


@pytest.mark.parametrize(
    ("make", "says"),
    [
        (_foreign, "already holds tables that are not a fencepost store (customers)"),
        (_other_application, "belongs to another application"),
        (_newer, "newer than this fencepost knows"),
        (_negative_version, "schema version -1 is not one fencepost ever writes"),
        (_dropped_table, "table(s) outcomes are missing"),
        (_not_sqlite, "not a SQLite database or is corrupt"),
    ],
    ids=["foreign", "other-app", "newer", "user-version-minus-1", "dropped-table", "random"],
)
def test_a_refused_file_is_left_unchanged_byte_for_byte(
    tmp_path: Path, make: Callable[[Path], None], says: str
) -> None:
    path = tmp_path / "store.db"
    make(path)
    before = _snapshot(tmp_path)
    with pytest.raises(StoreOpenError) as info:
        SQLiteStore(path)
    assert says in str(info.value) and str(path) in str(info.value)
    # Not one byte changed, and no -wal or -shm file was created beside it.
    assert _snapshot(tmp_path) == before


def test_a_new_file_is_still_created_and_a_valid_one_opens(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _store_file(tmp_path / "a.db")
    store = SQLiteStore(tmp_path / "a.db")
    assert store.read_publication("s").revision == 1
    store.close()
    monkeypatch.chdir(tmp_path)
    memory = SQLiteStore(":memory:")  # SQLite's in-memory database, not a file of that name
    memory.create_stream("s", MEMBERS)
    memory.close()
    assert not (tmp_path / ":memory:").exists()


PR_CAPBSET_DROP = 24
CAP_DAC_OVERRIDE = 1


def _open_as_nobody(path: Path) -> subprocess.CompletedProcess[str]:
    """Open ``path`` as a store in a process that file permissions bind (root's child loses
    the capability to override them)."""
    code = (
        "import sys\nfrom fencepost.impl.sqlite import SQLiteStore\n"
        "from fencepost.impl.stores import StoreOpenError\n"
        "try:\n    SQLiteStore(sys.argv[1])\nexcept StoreOpenError as e:\n"
        "    print(e)\n    sys.exit(2)\n"
    )

    def drop() -> None:
        if os.geteuid() == 0:  # root writes anything: drop CAP_DAC_OVERRIDE for the child
            libc = ctypes.CDLL(None, use_errno=True)
            if libc.prctl(PR_CAPBSET_DROP, CAP_DAC_OVERRIDE, 0, 0, 0) != 0:
                raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP) failed")

    return subprocess.run(
        [sys.executable, "-c", code, str(path)],
        capture_output=True,
        text=True,
        preexec_fn=drop,
        timeout=60,
        check=False,
    )


@pytest.mark.parametrize("folder_writable", [True, False])
def test_a_read_only_file_is_refused_at_open_not_after_resuming(
    tmp_path: Path, folder_writable: bool
) -> None:
    folder = tmp_path / "ro"
    folder.mkdir()
    path = folder / "ro.db"
    _store_file(path)
    path.chmod(0o444)
    if not folder_writable:
        folder.chmod(0o555)
    before = _snapshot(folder)
    try:
        result = _open_as_nobody(path)
    finally:
        folder.chmod(0o755)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "read-only for this user" in result.stdout
    assert _snapshot(folder) == before


def _corrupt(path: Path, statement: str) -> SQLiteStore:
    _store_file(path)
    _raw(path, statement)
    return SQLiteStore(path)


@pytest.mark.parametrize(
    ("statement", "read", "where"),
    [
        (
            "UPDATE publications SET cut_at = 'garbage'",
            lambda s: s.read_publication("s"),
            "table publications, row stream='s', field cut_at",
        ),
        (
            "UPDATE publications SET cut_type = NULL",
            lambda s: s.read_publication("s"),
            "table publications, row stream='s', field cut_type",
        ),
        (
            "UPDATE memberships SET body = '{not json'",
            lambda s: s.read_membership("s"),
            "table memberships, row stream='s' epoch=1, field body",
        ),
        (
            "UPDATE memberships SET body = '{\"epoch\": 1}'",
            lambda s: s.read_membership("s"),
            "table memberships, row stream='s' epoch=1, field body",
        ),
        (
            "UPDATE checkpoints SET cut_at = '12x'",
            lambda s: s.read_checkpoints("s", 1),
            "table checkpoints, row epoch=1 partition='A', field cut_at",
        ),
        (
            "UPDATE checkpoints SET generation = 'x'",
            lambda s: s.read_checkpoint("s", 1, "A"),
            "table checkpoints, row epoch=1 partition='A', field generation",
        ),
    ],
    ids=[
        "cut-at",
        "cut-type",
        "membership-json",
        "membership-fields",
        "checkpoint-cut",
        "generation",
    ],
)
def test_garbage_rows_are_named_by_table_row_and_field(
    tmp_path: Path, statement: str, read: Callable[[SQLiteStore], object], where: str
) -> None:
    store = _corrupt(tmp_path / "c.db", statement)
    with pytest.raises(CorruptStore) as info:
        read(store)
    store.close()
    assert str(info.value).startswith(f"corrupt store: {tmp_path / 'c.db'}: {where}")


def test_a_damaged_page_is_corruption_not_another_source(tmp_path: Path) -> None:
    path = tmp_path / "d.db"
    store = SQLiteStore(path)
    store.create_stream("s", MEMBERS)
    for i in range(2000):
        store.record_outcome("s", f"event-{i:05d}", "processed")
    store.close()
    pages = path.stat().st_size // 4096
    with open(path, "r+b") as handle:  # garbage over every page after the first few
        handle.seek(4096 * 4)
        handle.write(b"\xa5" * 4096 * (pages - 4))
    store = SQLiteStore(path)
    with pytest.raises(CorruptStore, match="malformed"):
        store.outcomes("s", [f"event-{i:05d}" for i in range(2000)])
    store.close()


def test_another_first_membership_is_a_stream_conflict(tmp_path: Path) -> None:
    _store_file(tmp_path / "s.db")
    store = SQLiteStore(tmp_path / "s.db")
    other = Membership(1, "q", {"B": "offsets"}, {"offsets": ORDER})
    with pytest.raises(StreamConflict):
        store.create_stream("s", other)
    store.close()


def test_a_damaged_wal_rolls_back_silently_and_the_seen_revision_catches_it(
    tmp_path: Path,
) -> None:
    """SQLite drops WAL frames whose checksum fails, and every frame after them: the
    record goes back without an error (docs/robustness.md). Only what the caller saw
    before can tell: ``require_not_behind`` refuses the store."""
    live = tmp_path / "live"
    live.mkdir()
    store = SQLiteStore(live / "w.db")
    store.create_stream("s", MEMBERS)
    store._db.execute("PRAGMA wal_autocheckpoint = 0")  # keep every write in the WAL
    for revision in range(3):
        store.write_publication("s", revision, 1, Cut.through(revision + 1), f"w-{revision}")
    # Copy the file and its WAL while the store is open (as a crash would leave them).
    copy = tmp_path / "copy"
    copy.mkdir()
    for name in ("w.db", "w.db-wal"):
        shutil.copy(live / name, copy / name)
    store.close()
    wal = copy / "w.db-wal"
    data = bytearray(wal.read_bytes())
    data[-100] ^= 0xFF  # one flipped bit in the last frame
    wal.write_bytes(bytes(data))
    reopened = SQLiteStore(copy / "w.db")
    assert reopened.read_publication("s").revision < 3  # silently behind
    with pytest.raises(StoreBehind, match="behind revision 3 seen before"):
        require_not_behind(reopened, "s", 3)
    require_not_behind(reopened, "s", reopened.read_publication("s").revision)  # teeth
    reopened.close()
