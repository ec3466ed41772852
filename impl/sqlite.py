"""A durable :class:`~fencepost.impl.stores.Store` in one SQLite file.

Durability and sharing:

- ``journal_mode=WAL`` and ``synchronous=FULL``: a write acknowledged to the
  caller has been fsynced, so a crash (``kill -9``, power loss) never takes back
  a publication, a checkpoint or an outcome that was reported applied.
- Several processes (and threads: every call holds this object's lock) may
  share one file. Every read-check-write runs in a ``BEGIN IMMEDIATE``
  transaction, which takes SQLite's write lock before the first read, so two
  writers that read the same revision or generation can never both win;
  ``busy_timeout`` makes the loser wait for the lock instead of failing.
- A failure before ``COMMIT`` is rolled back and raised as
  :class:`DefiniteStoreError` (nothing happened). A failure *during* ``COMMIT``
  is raised as :class:`IndefiniteStoreError`: the caller must reread.

Values are stored exactly. Cut coordinates are unbounded Python ints (Kinesis
sequence numbers have up to 129 digits) or Unicode strings, so they are kept as
TEXT with a type tag (``int`` decimal, ``int16`` hexadecimal for integers past
Python's decimal conversion limit, ``str``), never as a lossy SQLite number.
Epochs, revisions and generations are counters kept as SQLite INTEGERs; a value
past 2**63-1 is refused with a clear error rather than silently wrapped.

The schema (:mod:`~.sqlite_schema`) is versioned with ``PRAGMA user_version`` and marked with
``PRAGMA application_id``. Opening applies the missing steps of
:data:`MIGRATIONS` in order inside one transaction; a file written by a newer
fencepost, a corrupt file, or another application's database is refused with a
:class:`StoreOpenError` naming the path.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import TypeVar
from urllib.parse import quote

from fencepost.impl.codec import membership_to_json
from fencepost.impl.cutkey import cut_key
from fencepost.impl.cuts import Cut
from fencepost.impl.errors import InvalidValue
from fencepost.impl.merge import MergeSummary
from fencepost.impl.records import Checkpoint, Finality, Membership, PublicationRecord
from fencepost.impl.sqlite_schema import (
    _CURRENT_EPOCH_QUERY,
    _OUTCOME_CHUNK,
    _SUMMARY_QUERY,
    APPLICATION_ID,
    MIGRATIONS,
    SCHEMA_VERSION,
    _counter,
    _tables_of,
    decode_cut,
    encode_cut,
)
from fencepost.impl.stores import (
    Applied,
    BatchWrite,
    CheckpointApplied,
    CheckpointConflict,
    CheckpointWrite,
    Conflict,
    CorruptStore,
    DefiniteStoreError,
    IndefiniteStoreError,
    PublicationWrite,
    StoreError,
    StoreFull,
    StoreLocked,
    StoreOpenError,
    StreamConflict,
    UnknownStream,
    admit_checkpoint,
    admit_membership,
    check_batch,
    check_name,
    check_revision,
    corrupt_row,
    stored_membership,
)

T = TypeVar("T")


#: SQLite's primary result codes for a full disk and for a lock held by another process.
SQLITE_FULL = 13
SQLITE_BUSY, SQLITE_LOCKED = 5, 6


def _code(exc: sqlite3.Error) -> int:
    """SQLite's primary result code of ``exc`` (its extended code's low byte)."""
    return int(getattr(exc, "sqlite_errorcode", 0) or 0) & 0xFF


def classified(path: str, exc: sqlite3.Error, waited: float) -> StoreError | None:
    """The store error every backend gives for a full disk or a lock held elsewhere, or
    None: SQLite's result codes, not its words, decide."""
    code = _code(exc)
    if code == SQLITE_FULL:
        return StoreFull(path, f"SQLite says: {exc}")
    if code in (SQLITE_BUSY, SQLITE_LOCKED):
        return StoreLocked(path, f"SQLite says: {exc}", waited)
    return None


def _open_problem(exc: sqlite3.DatabaseError) -> str:
    """What an SQLite error at open says about the file, in words an operator can act on."""
    text = str(exc)
    if "not a database" in text or "malformed" in text:
        return (
            f"the file is not a SQLite database or is corrupt ({text}); "
            "restore it from a backup, or point --db at a new file"
        )
    if "readonly" in text or "read-only" in text:
        return (
            f"the file cannot be written ({text}); give write access to the file and its "
            "folder, or copy it elsewhere"
        )
    return f"not a usable SQLite database ({text}); is it corrupt or another file?"


class SQLiteStore:
    """All streams of one SQLite file; safe to share between threads and processes."""

    def __init__(self, path: str | Path, *, busy_timeout_ms: int = 10_000) -> None:
        self.path = str(path)
        self._lock = threading.Lock()
        # Memberships never change once written (one per epoch, never in place), so each
        # (stream, epoch) is parsed once: an attempt or a checkpoint write must not cost
        # O(partitions) in JSON parsing.
        self._memberships_seen: dict[tuple[str, int], Membership] = {}
        self._busy_seconds = busy_timeout_ms / 1000
        self._db = self._connect(busy_timeout_ms)
        try:
            # Everything is checked by reading only: a file refused here is left
            # exactly as it was, byte for byte (no WAL switch, no -wal/-shm files).
            version = self._validate()
            self._configure(busy_timeout_ms)
            self._migrate(version)
        except StoreOpenError:
            self._db.close()
            raise
        except sqlite3.DatabaseError as exc:
            self._db.close()
            known = classified(self.path, exc, busy_timeout_ms / 1000)
            if known is not None:  # locked by another process, or a full disk: not corruption
                raise known from exc
            raise StoreOpenError(self.path, _open_problem(exc)) from exc

    # --- opening -------------------------------------------------------------------

    def _connect(self, busy_timeout_ms: int) -> sqlite3.Connection:
        """Open the file for reading and writing, or create it.

        SQLite opens a file it may not write read-only without a word, and the first
        write fails much later (after the demo said "resuming"). A store is always
        written to, so the file, its ``-wal``/``-shm`` companions and (for those) its
        folder must be writable: checked here, before anything is read or written.
        """
        if self.path == ":memory:":  # SQLite's private in-memory database
            return sqlite3.connect(
                self.path,
                isolation_level=None,
                check_same_thread=False,
                timeout=busy_timeout_ms / 1000,
            )
        exists = os.path.exists(self.path)
        if exists and not os.path.isfile(self.path):
            raise StoreOpenError(self.path, "not a regular file (a folder or a device?)")
        folder = os.path.dirname(os.path.abspath(self.path))
        if exists:
            blocked = [
                name
                for name in (self.path, self.path + "-wal", self.path + "-shm")
                if os.path.exists(name) and not os.access(name, os.W_OK)
            ]
            if not blocked and not os.access(folder, os.W_OK | os.X_OK):
                blocked.append(f"{folder} (the write-ahead log is created there)")
            if blocked:
                raise StoreOpenError(
                    self.path,
                    f"read-only for this user: {', '.join(blocked)}; a store is written to "
                    "(publications, checkpoints, outcomes): give write access, or copy the "
                    "file somewhere writable",
                )
        uri = f"file:{quote(os.path.abspath(self.path))}?mode={'rw' if exists else 'rwc'}"
        try:
            return sqlite3.connect(
                uri,
                uri=True,
                isolation_level=None,
                check_same_thread=False,
                timeout=busy_timeout_ms / 1000,
            )
        except sqlite3.Error as exc:
            raise StoreOpenError(self.path, f"cannot open the SQLite file: {exc}") from exc

    def _validate(self) -> int:
        """Check, by reading only, that the file is a fencepost store this code can use.

        Returns its schema version (0: a new, empty file). Each refusal says what is
        wrong with the file and what to do about it.
        """
        db = self._db
        version = int(db.execute("PRAGMA user_version").fetchone()[0])
        app_id = int(db.execute("PRAGMA application_id").fetchone()[0])
        tables = {
            str(name) for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type='table'")
        }
        if app_id not in (0, APPLICATION_ID) or (version > 0 and app_id != APPLICATION_ID):
            raise StoreOpenError(
                self.path,
                "this SQLite file belongs to another application, not fencepost; "
                "point --db at a new file",
            )
        if version < 0:
            raise StoreOpenError(
                self.path,
                f"schema version {version} is not one fencepost ever writes (user_version was "
                "changed outside fencepost); restore the file from a backup, or use a new file",
            )
        if version > SCHEMA_VERSION:
            raise StoreOpenError(
                self.path,
                f"schema version {version} is newer than this fencepost knows "
                f"({SCHEMA_VERSION}); upgrade fencepost to open it",
            )
        if version == 0:
            if tables:
                raise StoreOpenError(
                    self.path,
                    "this SQLite file already holds tables that are not a fencepost store "
                    f"({', '.join(sorted(tables)[:5])}); point --db at a new file",
                )
            return 0
        missing = [t for t in _tables_of(version) if t not in tables]
        if missing:
            raise StoreOpenError(
                self.path,
                f"the fencepost table(s) {', '.join(missing)} are missing (dropped outside "
                "fencepost): the store cannot be trusted; restore it from a backup, or use "
                "a new file",
            )
        return version

    def _configure(self, busy_timeout_ms: int) -> None:
        db = self._db
        db.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
        mode = db.execute("PRAGMA journal_mode = WAL").fetchone()[0]
        if mode not in ("wal", "memory"):
            raise StoreOpenError(
                self.path, f"could not switch to WAL journaling (got {mode!r}); use a local disk"
            )
        db.execute("PRAGMA synchronous = FULL")
        db.execute("PRAGMA foreign_keys = ON")

    def _migrate(self, validated: int) -> None:
        db = self._db
        db.execute("BEGIN IMMEDIATE")
        try:
            # Another process may have migrated between the check and the lock: read again.
            version = db.execute("PRAGMA user_version").fetchone()[0]
            if version != validated:
                db.execute("ROLLBACK")
                self._migrate(self._validate())
                return
            if version == 0:
                db.execute(f"PRAGMA application_id = {APPLICATION_ID}")
            for step in range(version, SCHEMA_VERSION):
                for statement in MIGRATIONS[step]:
                    if isinstance(statement, str):
                        db.execute(statement)
                    else:
                        statement(db, self.path)
                db.execute(f"PRAGMA user_version = {step + 1}")
            db.execute("COMMIT")
        except BaseException:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise

    @property
    def schema_version(self) -> int:
        """The schema version stored in the file (``PRAGMA user_version``)."""
        with self._lock:
            return int(self._db.execute("PRAGMA user_version").fetchone()[0])

    # --- transactions --------------------------------------------------------------

    @contextmanager
    def _cursor(self) -> Iterator[sqlite3.Connection]:
        """Run a read-only statement group; SQLite errors become definite store errors."""
        with self._lock:
            try:
                yield self._db
            except sqlite3.Error as exc:
                raise self._failed("read", exc) from exc

    def _failed(self, what: str, exc: sqlite3.Error) -> DefiniteStoreError:
        """A failed statement: a damaged file or a dropped table is corruption, never a
        passing failure that running again would cure; a full disk and a lock held by
        another process are said as such (:func:`classified`)."""
        known = classified(self.path, exc, self._busy_seconds)
        if isinstance(known, DefiniteStoreError):
            return known
        text = str(exc)
        if "malformed" in text or "not a database" in text:
            return CorruptStore(self.path, None, None, None, f"SQLite says: {text}")
        if text.startswith("no such table") or text.startswith("no such column"):
            return CorruptStore(self.path, None, None, None, f"{text} (dropped or altered)")
        return DefiniteStoreError(f"{self.path}: SQLite {what} failed: {exc}")

    def _transaction(self, body: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``body`` in ``BEGIN IMMEDIATE`` ... ``COMMIT``: one atomic read-check-write.

        Anything raised before the commit rolls back (definite: nothing
        happened). A failed ``COMMIT`` may or may not have been applied, so it
        is an :class:`IndefiniteStoreError`.
        """
        with self._lock:
            db = self._db
            try:
                db.execute("BEGIN IMMEDIATE")
            except sqlite3.Error as exc:
                known = classified(self.path, exc, self._busy_seconds)
                if known is not None:
                    raise known from exc
                raise DefiniteStoreError(f"{self.path}: could not start a write: {exc}") from exc
            try:
                result = body(db)
            except BaseException as exc:
                with suppress(sqlite3.Error):
                    db.execute("ROLLBACK")
                if isinstance(exc, sqlite3.Error):
                    raise self._failed("write", exc) from exc
                raise
            try:
                db.execute("COMMIT")
            except sqlite3.Error as exc:
                with suppress(sqlite3.Error):
                    db.execute("ROLLBACK")
                # A commit refused for a full disk or a lock is rolled back (by SQLite, or by
                # the ROLLBACK above): definite, and retrying it cannot help until space is
                # freed; on a full disk it used to be retried for ever as indefinite.
                known = classified(self.path, exc, self._busy_seconds)
                if known is not None:
                    raise known from exc
                raise IndefiniteStoreError(
                    f"{self.path}: COMMIT failed ({exc}); the write may or may not be durable: "
                    "reread before deciding"
                ) from exc
            return result

    @staticmethod
    def _require_stream(db: sqlite3.Connection, stream: str) -> None:
        row = db.execute("SELECT 1 FROM publications WHERE stream = ?", (stream,)).fetchone()
        if row is None:
            raise UnknownStream(
                f"stream {stream!r} does not exist: create it with create_stream first"
            )

    def _corrupt(self, table: str, row: str, exc: Exception) -> CorruptStore:
        """A row that does not decode: name the table, the row and the field."""
        return corrupt_row(self.path, table, row, exc)

    def _membership_body(self, stream: str, epoch: object, body: object) -> Membership:
        return stored_membership(self.path, stream, epoch, body)

    def _memberships(self, db: sqlite3.Connection, stream: str) -> dict[int, Membership]:
        rows = db.execute("SELECT epoch, body FROM memberships WHERE stream = ?", (stream,))
        return {epoch: self._membership_body(stream, epoch, body) for epoch, body in rows}

    def _membership(self, db: sqlite3.Connection, stream: str, epoch: int) -> Membership | None:
        """The membership of ``epoch`` (parsed once per store object), None if there is none."""
        found = self._memberships_seen.get((stream, epoch))
        if found is not None:
            return found
        row = db.execute(
            "SELECT body FROM memberships WHERE stream = ? AND epoch = ?", (stream, epoch)
        ).fetchone()
        if row is None:
            return None
        found = self._membership_body(stream, epoch, row[0])
        self._memberships_seen[(stream, epoch)] = found
        return found

    def _insert_membership(
        self, db: sqlite3.Connection, stream: str, membership: Membership, body: str
    ) -> None:
        """Store a new epoch's membership, each member listed as missing its checkpoint."""
        db.execute(
            "INSERT INTO memberships (stream, epoch, body) VALUES (?, ?, ?)",
            (stream, membership.epoch, body),
        )
        db.executemany(
            "INSERT INTO missing_checkpoints (stream, epoch, partition) VALUES (?, ?, ?)",
            [(stream, membership.epoch, p) for p in membership.partitions],
        )

    def _record(self, db: sqlite3.Connection, stream: str) -> PublicationRecord | None:
        row = db.execute(
            "SELECT epoch, cut_kind, cut_type, cut_at, revision, op_id FROM publications "
            "WHERE stream = ?",
            (stream,),
        ).fetchone()
        if row is None:
            return None
        epoch, kind, tag, at, revision, op_id = row
        try:
            return PublicationRecord(epoch, decode_cut(kind, tag, at), revision, op_id)
        except ValueError as exc:
            raise self._corrupt("publications", f"stream={stream!r}", exc) from None

    def _checkpoint_from_row(self, row: tuple[object, ...]) -> Checkpoint:
        partition, epoch, kind, tag, at, token, generation, scope, finality = row
        try:
            return Checkpoint(
                partition=partition,  # type: ignore[arg-type]  # validated by Checkpoint
                cut=decode_cut(kind, tag, at),  # type: ignore[arg-type]
                token=token,  # type: ignore[arg-type]
                generation=generation,  # type: ignore[arg-type]
                scope=scope,  # type: ignore[arg-type]
                epoch=epoch,  # type: ignore[arg-type]
                finality=Finality(finality),
            )
        except ValueError as exc:
            if not isinstance(exc, InvalidValue):
                exc = InvalidValue("finality", finality, "'final' or 'provisional'")
            raise self._corrupt(
                "checkpoints", f"epoch={epoch!r} partition={partition!r}", exc
            ) from None

    _CHECKPOINT_COLUMNS = (
        "partition, epoch, cut_kind, cut_type, cut_at, token, generation, scope, finality"
    )

    # --- memberships ---------------------------------------------------------------

    def create_stream(self, stream: str, membership: Membership) -> PublicationRecord:
        check_name(stream, "stream")
        if not isinstance(membership, Membership):
            raise InvalidValue("membership", membership, "a Membership is required")
        _counter(membership.epoch, "epoch")
        body = json.dumps(membership_to_json(membership), sort_keys=True)

        def create(db: sqlite3.Connection) -> PublicationRecord:
            record = self._record(db, stream)
            if record is not None:
                stored = self._memberships(db, stream)
                first = min(stored)
                if first == membership.epoch and stored[first] == membership:
                    return record
                raise StreamConflict(
                    f"stream {stream!r} already exists with another first membership; "
                    "use write_membership to add a new epoch, or another stream name"
                )
            self._insert_membership(db, stream, membership, body)
            db.execute(
                "INSERT INTO publications (stream, epoch, cut_kind, revision) "
                "VALUES (?, ?, 'nothing', 0)",
                (stream, membership.epoch),
            )
            return PublicationRecord(epoch=membership.epoch)

        return self._transaction(create)

    def read_membership(self, stream: str, epoch: int | None = None) -> Membership:
        check_name(stream, "stream")
        if epoch is not None:
            check_revision(epoch, "epoch")
            _counter(epoch, "epoch")
        with self._lock:  # _cursor inline (see read_publication)
            db = self._db
            try:
                if epoch is None:
                    # One statement: the stream exists, and its current (highest) epoch.
                    exists, current = db.execute(_CURRENT_EPOCH_QUERY, (stream,)).fetchone()
                    if not exists:
                        raise UnknownStream(
                            f"stream {stream!r} does not exist: create it with create_stream first"
                        )
                    epoch = int(current)
                elif (stream, epoch) not in self._memberships_seen:
                    self._require_stream(db, stream)
                found = self._membership(db, stream, epoch)
            except sqlite3.Error as exc:
                raise self._failed("read", exc) from exc
        if found is None:
            raise DefiniteStoreError(f"stream {stream!r} has no membership for epoch {epoch}")
        return found

    def write_membership(self, stream: str, membership: Membership) -> None:
        check_name(stream, "stream")
        if not isinstance(membership, Membership):
            raise InvalidValue("membership", membership, "a Membership is required")
        _counter(membership.epoch, "epoch")
        body = json.dumps(membership_to_json(membership), sort_keys=True)

        def write(db: sqlite3.Connection) -> None:
            self._require_stream(db, stream)
            if admit_membership(stream, self._memberships(db, stream), membership):
                self._insert_membership(db, stream, membership, body)

        self._transaction(write)

    # --- publication ---------------------------------------------------------------

    def read_publication(self, stream: str) -> PublicationRecord:
        check_name(stream, "stream")
        # The lock and the error mapping of _cursor, inline: this is one of the four calls
        # of every publication attempt, and a generator context costs more than the read.
        with self._lock:
            try:
                record = self._record(self._db, stream)
            except sqlite3.Error as exc:
                raise self._failed("read", exc) from exc
        if record is None:
            raise UnknownStream(
                f"stream {stream!r} does not exist: create it with create_stream first"
            )
        return record

    def write_publication(
        self, stream: str, expected_revision: int, epoch: int, cut: Cut, op_id: str
    ) -> PublicationWrite:
        check_name(stream, "stream")
        check_revision(expected_revision, "expected_revision")
        check_name(op_id, "op_id")
        new_record = PublicationRecord(epoch, cut, expected_revision + 1, op_id)
        _counter(epoch, "epoch")
        _counter(expected_revision + 1, "revision")
        kind, tag, at = encode_cut(cut)

        def write(db: sqlite3.Connection) -> PublicationWrite:
            # The revision check and the write are one statement.
            updated = db.execute(
                "UPDATE publications SET epoch = ?, cut_kind = ?, cut_type = ?, cut_at = ?, "
                "revision = revision + 1, op_id = ? WHERE stream = ? AND revision = ?",
                (epoch, kind, tag, at, op_id, stream, expected_revision),
            ).rowcount
            if updated == 1:
                return Applied(new_record)
            current = self._record(db, stream)
            if current is None:
                raise UnknownStream(
                    f"stream {stream!r} does not exist: create it with create_stream first"
                )
            return Conflict(current)

        return self._transaction(write)

    # --- checkpoints ---------------------------------------------------------------

    def read_checkpoint(self, stream: str, epoch: int, partition: str) -> Checkpoint | None:
        check_name(stream, "stream")
        check_name(partition, "partition")
        check_revision(epoch, "epoch")
        _counter(epoch, "epoch")
        with self._cursor() as db:
            self._require_stream(db, stream)
            row = db.execute(
                f"SELECT {self._CHECKPOINT_COLUMNS} FROM checkpoints "
                "WHERE stream = ? AND epoch = ? AND partition = ?",
                (stream, epoch, partition),
            ).fetchone()
        return None if row is None else self._checkpoint_from_row(row)

    def read_checkpoints(self, stream: str, epoch: int) -> Sequence[Checkpoint]:
        check_name(stream, "stream")
        check_revision(epoch, "epoch")
        _counter(epoch, "epoch")
        with self._cursor() as db:
            self._require_stream(db, stream)
            rows = db.execute(
                f"SELECT {self._CHECKPOINT_COLUMNS} FROM checkpoints "
                "WHERE stream = ? AND epoch = ? ORDER BY partition",
                (stream, epoch),
            ).fetchall()
        # SQLite orders TEXT by bytes of UTF-8, which is code-point order: the same
        # as Python's sort of str. Sort anyway so the promise never rests on a collation.
        return sorted((self._checkpoint_from_row(r) for r in rows), key=lambda c: c.partition)

    def write_checkpoint(
        self, stream: str, expected_generation: int | None, checkpoint: Checkpoint
    ) -> CheckpointWrite:
        """One fenced checkpoint write: one ``BEGIN IMMEDIATE`` transaction, one fsync.

        Cost: O(log N) in the epoch's N partitions (the row, the cut index).
        """
        check_name(stream, "stream")
        if expected_generation is not None:
            check_revision(expected_generation, "expected_generation")
        if not isinstance(checkpoint, Checkpoint):
            raise InvalidValue("checkpoint", checkpoint, "a Checkpoint is required")
        batch = [(expected_generation, checkpoint)]
        return self._transaction(lambda db: self._write_checkpoints(db, stream, batch))[0]

    def write_checkpoints(self, stream: str, writes: Sequence[BatchWrite]) -> list[CheckpointWrite]:
        """Many fenced checkpoint writes in one ``BEGIN IMMEDIATE`` transaction, one fsync.

        Cost: O(B log N) for B writes to an epoch of N partitions.
        """
        check_name(stream, "stream")
        batch = check_batch(writes)
        if not batch:
            return []
        return self._transaction(lambda db: self._write_checkpoints(db, stream, batch))

    def _write_checkpoints(
        self, db: sqlite3.Connection, stream: str, batch: Sequence[BatchWrite]
    ) -> list[CheckpointWrite]:
        """Admit every write, then apply each one conditionally on its own generation."""
        prepared = []
        for expected, checkpoint in batch:
            if expected is not None:
                _counter(expected + 1, "generation")
            _counter(checkpoint.epoch, "epoch")
            membership = self._membership(db, stream, checkpoint.epoch)
            if membership is None:
                self._require_stream(db, stream)
            admit_checkpoint(stream, membership, checkpoint)
            assert membership is not None
            kind, tag, at = encode_cut(checkpoint.cut)
            key = cut_key(membership.order_of(checkpoint.partition), checkpoint.cut)
            prepared.append(
                (
                    expected,
                    checkpoint,
                    (
                        kind,
                        tag,
                        at,
                        checkpoint.token,
                        1 if expected is None else expected + 1,
                        checkpoint.scope,
                        checkpoint.finality.value,
                        key,
                        int(checkpoint.scope == membership.scope),
                        stream,
                        checkpoint.epoch,
                        checkpoint.partition,
                    ),
                )
            )
        return [self._write_one(db, expected, cp, values) for expected, cp, values in prepared]

    def _write_one(
        self,
        db: sqlite3.Connection,
        expected: int | None,
        checkpoint: Checkpoint,
        values: tuple[object, ...],
    ) -> CheckpointWrite:
        if expected is None:
            changed = db.execute(
                "INSERT INTO checkpoints (cut_kind, cut_type, cut_at, token, generation, "
                "scope, finality, sort_key, scope_ok, stream, epoch, partition) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
                "ON CONFLICT (stream, epoch, partition) DO NOTHING",
                values,
            ).rowcount
            if changed == 1:
                db.execute(
                    "DELETE FROM missing_checkpoints "
                    "WHERE stream = ? AND epoch = ? AND partition = ?",
                    values[-3:],
                )
        else:
            changed = db.execute(
                "UPDATE checkpoints SET cut_kind = ?, cut_type = ?, cut_at = ?, token = ?, "
                "generation = ?, scope = ?, finality = ?, sort_key = ?, scope_ok = ? "
                "WHERE stream = ? AND epoch = ? AND partition = ? AND generation = ?",
                (*values, expected),
            ).rowcount
        if changed == 1:
            stored = Checkpoint(
                checkpoint.partition,
                checkpoint.cut,
                checkpoint.token,
                1 if expected is None else expected + 1,
                checkpoint.scope,
                checkpoint.epoch,
                checkpoint.finality,
            )
            return CheckpointApplied(stored)
        row = db.execute(
            f"SELECT {self._CHECKPOINT_COLUMNS} FROM checkpoints "
            "WHERE stream = ? AND epoch = ? AND partition = ?",
            values[-3:],
        ).fetchone()
        return CheckpointConflict(None if row is None else self._checkpoint_from_row(row))

    def read_merge_summary(self, stream: str, epoch: int) -> MergeSummary:
        """The epoch's merge summary from four index probes in one statement (one snapshot).

        Cost: O(log N) for N partitions and O(1) rows, whatever the number of
        checkpoints, publishers or writes; the membership is parsed once per
        store object.
        """
        check_name(stream, "stream")
        check_revision(epoch, "epoch")
        _counter(epoch, "epoch")
        with self._lock:  # _cursor inline (see read_publication)
            db = self._db
            try:
                membership = self._membership(db, stream, epoch)
                if membership is None:
                    self._require_stream(db, stream)
                    raise DefiniteStoreError(
                        f"stream {stream!r} has no membership for epoch {epoch}"
                    )
                rows = db.execute(_SUMMARY_QUERY, (stream, epoch)).fetchall()
            except sqlite3.Error as exc:
                raise self._failed("read", exc) from exc
        if len(rows) == 1 and rows[0][0] == "c":
            # The usual answer (every member present, final, in scope): the least cut only.
            only = self._least_cut(stream, epoch, rows[0])
            return MergeSummary(epoch, minimum=only if membership.order is not None else None)
        names: dict[str, list[str]] = {"m": [], "s": [], "p": []}
        least: Cut | None = None
        for row in rows:
            if row[0] == "c":
                least = self._least_cut(stream, epoch, row)
            else:
                names[row[0]].append(row[1])
        return MergeSummary(
            epoch,
            missing=tuple(sorted(names["m"])),
            wrong_scope=tuple(sorted(names["s"])),
            provisional=tuple(sorted(names["p"])),
            minimum=least if membership.order is not None else None,
        )

    def _least_cut(self, stream: str, epoch: int, row: tuple[str, str, str, str]) -> Cut:
        try:
            return decode_cut(row[1], row[2], row[3])
        except ValueError as exc:
            where = f"stream={stream!r} epoch={epoch} (the least cut)"
            raise self._corrupt("checkpoints", where, exc) from None

    # --- outcomes ------------------------------------------------------------------

    def record_outcome(self, stream: str, event_id: str, outcome: str) -> str:
        check_name(stream, "stream")
        check_name(event_id, "event_id")
        check_name(outcome, "outcome")

        def record(db: sqlite3.Connection) -> str:
            self._require_stream(db, stream)
            db.execute(
                "INSERT INTO outcomes (stream, event_id, outcome) VALUES (?, ?, ?) "
                "ON CONFLICT (stream, event_id) DO NOTHING",
                (stream, event_id, outcome),
            )
            row = db.execute(
                "SELECT outcome FROM outcomes WHERE stream = ? AND event_id = ?",
                (stream, event_id),
            ).fetchone()
            return str(row[0])

        return self._transaction(record)

    def outcomes(self, stream: str, event_ids: Sequence[str]) -> dict[str, str]:
        check_name(stream, "stream")
        ids = list(event_ids)
        for i, event_id in enumerate(ids):
            check_name(event_id, f"event_ids[{i}]")
        found: dict[str, str] = {}
        with self._cursor() as db:
            self._require_stream(db, stream)
            for start in range(0, len(ids), _OUTCOME_CHUNK):
                chunk = ids[start : start + _OUTCOME_CHUNK]
                marks = ", ".join("?" * len(chunk))
                rows = db.execute(
                    "SELECT event_id, outcome FROM outcomes "
                    f"WHERE stream = ? AND event_id IN ({marks})",
                    (stream, *chunk),
                )
                found.update({str(e): str(o) for e, o in rows})
        return found

    def close(self) -> None:
        with self._lock:
            self._db.close()
