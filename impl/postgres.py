"""A durable :class:`~fencepost.impl.stores.Store` in PostgreSQL, for publishers on many machines.

Connection: ``PostgresStore(dsn)``; with no ``dsn`` the URL comes from the
environment variable ``FENCEPOST_DATABASE_URL`` (docs/postgres.md). Tables live
in one PostgreSQL schema (``fencepost`` by default), so several deployments or
test runs can share a database without seeing each other.

**Isolation level: READ COMMITTED, autocommit, one statement per operation.**
Every conditional write (publication revision, checkpoint generation, first
outcome) is ONE SQL statement that locks the row it decides on and writes it
under that lock: ``SELECT ... FOR UPDATE`` / ``INSERT ... ON CONFLICT DO
UPDATE`` always see the *latest committed* version of the row (PostgreSQL
re-reads a concurrently updated row under the lock in READ COMMITTED), so the
check "is the revision still r?" and the write of ``r + 1`` are one atomic step
and two writers that read the same revision cannot both win. Because the
locked row is also what a losing write returns, a :class:`~.stores.Conflict`
carries the record that was current at the moment the write lost, not an
older snapshot. A read is one statement whose snapshot is taken after it was
invoked and before it returns, and contains every write committed before it,
so reads of the record and the checkpoint vector are linearizable too (and a
vector read from one statement is never torn across partitions). Stronger
levels would add nothing that this needs: REPEATABLE READ would turn a lost
race into a serialization error instead of returning the current record, and
SERIALIZABLE would add retries (each a definite failure) without adding
guarantees: no operation reads one row to decide the write of another. The two
multi-statement operations (creating a stream, adding a membership epoch)
serialize on the stream's row lock, taken by their first statement.
``synchronous_commit`` is forced ``on`` per session, so an acknowledged write
has reached the server's write-ahead log on disk: a crash never takes it back.

**Definite vs indefinite failures.** A statement can only have taken effect if
it reached the server. The store knows it did *not* when: no connection could
be opened or taken from the pool (the statement is sent only on an open
connection); the connection was found closed or with unread bytes (a closing
server's FATAL, an EOF) *before* sending, in which case it is discarded and
another is used; or the server answered with an ``ERROR`` (in autocommit the
statement's implicit transaction is then rolled back). These raise
:class:`~.stores.DefiniteStoreError`. Every other failure after the statement
was handed to the socket (a dropped connection, a ``FATAL``/``PANIC`` mid
statement, no reply within ``op_timeout``) raises
:class:`~.stores.IndefiniteStoreError`: the server may have committed before
the reply was lost, and only an authoritative reread settles it. psycopg does
not report how many bytes of a failed send reached the server, so a failure
while sending is indefinite too (conservatively: it is rare, and rereading is
always safe).

**Values are stored exactly.** Integer coordinates are ``numeric`` (passed as
``Decimal``: no digit limit short of PostgreSQL's 131072), string coordinates
continuation tokens and names (stream, partition, scope, op_id, event id,
outcome) are ``bytea`` holding their UTF-8 bytes: PostgreSQL ``text`` cannot
hold U+0000, and a name must round-trip byte for byte whatever it contains
(``bytea`` order is also UTF-8 byte order, which is code-point order). Epochs
are ``numeric`` too; revisions and generations are ``bigint`` (they grow by one
per write). Membership bodies are ASCII JSON (every non-ASCII character
escaped) in a ``text`` column.

**Migrations** are numbered steps in :data:`MIGRATIONS`, recorded in the
schema's ``schema_version`` table and applied at open inside one transaction
holding a transaction-scoped advisory lock derived from the schema name, so
concurrent starters never race: the first applies, the others wait and find
the work done. A schema written by a newer fencepost is refused.

Layout: how values map to columns is in :mod:`~.postgres_values`, the numbered
migrations and their lock in :mod:`~.postgres_schema`, the per-operation deadline
and the definite / indefinite classification of failures in
:mod:`~.postgres_deadline`; this module holds the store's operations.

Fork safety: a :class:`PostgresStore` owns a connection pool with background
threads; create it in the process that uses it (after ``fork``), never share
one across processes.
"""

from __future__ import annotations

import os
import select
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from decimal import Decimal
from typing import Any, TypeVar

import psycopg
import psycopg_pool
from psycopg import errors as pg_errors
from psycopg import pq
from psycopg.conninfo import conninfo_to_dict

from fencepost.impl.cutkey import cut_key
from fencepost.impl.cuts import Cut
from fencepost.impl.errors import InvalidValue
from fencepost.impl.merge import DETAIL_NAMES, MergeSummary
from fencepost.impl.postgres_deadline import (
    _LOST_CONNECTION,
    DEFINITE_CONNECT_FAILURES,
    READ_ATTEMPTS,
    READ_RETRY_SECONDS,
    _Deadlines,
    redact,
)
from fencepost.impl.postgres_schema import (
    MIGRATIONS,
    SCHEMA_VERSION,
    _migration_lock_key,
    quote_ident,
)
from fencepost.impl.postgres_values import (
    _CHECKPOINT_COLUMNS,
    _RECORD_COLUMNS,
    Row,
    _checkpoint,
    _coordinate_type,
    _counter,
    _epoch,
    _membership_body,
    _name,
    _record,
    _str,
    decode_cut,
    encode_cut,
    row_key,
)
from fencepost.impl.records import Checkpoint, Membership, PublicationRecord
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
    check_revision,
    corrupt_row,
    stored_membership,
)

#: SQLSTATEs of a full disk (disk_full), of a lock another
#: session holds (lock_not_available), and of data the server found damaged.
_FULL = frozenset({"53100"})
_LOCKED = frozenset({"55P03"})
_CORRUPT = frozenset({"XX001", "XX002"})

#: The environment variable holding the PostgreSQL URL when no DSN is given.
DSN_ENV = "FENCEPOST_DATABASE_URL"

#: The PostgreSQL schema holding fencepost's tables unless another is named.
DEFAULT_SCHEMA = "fencepost"

T = TypeVar("T")
#: Names of offending members a summary carries (fencepost.impl.merge.MergeSummary).
_SUMMARY_NAMES = DETAIL_NAMES + 1

#: The summary read: four index probes in ONE statement, hence one snapshot. The least
#: cut is found in two probes of the cut index (which holds each key's first 1 kB): the
#: least prefix, then the least whole key among the rows with that prefix (nearly always
#: one), so no plan ever sorts the epoch's checkpoints, whatever the statistics say.
_SUMMARY_QUERY = """
(SELECT 'm', partition, NULL::text, NULL::numeric, NULL::bytea FROM {s}.missing_checkpoints
    WHERE stream = %(stream)s AND epoch = %(epoch)s ORDER BY partition LIMIT {n})
UNION ALL (SELECT 's', partition, NULL, NULL, NULL FROM {s}.checkpoints
    WHERE stream = %(stream)s AND epoch = %(epoch)s AND NOT scope_ok
    ORDER BY partition LIMIT {n})
UNION ALL (SELECT 'p', partition, NULL, NULL, NULL FROM {s}.checkpoints
    WHERE stream = %(stream)s AND epoch = %(epoch)s AND finality = 'provisional'
    ORDER BY partition LIMIT {n})
UNION ALL (SELECT 'c', NULL, cut_kind, cut_int, cut_str FROM {s}.checkpoints
    WHERE stream = %(stream)s AND epoch = %(epoch)s AND sort_key IS NOT NULL
      AND substring(sort_key FROM 1 FOR 1024) = (
        SELECT substring(sort_key FROM 1 FOR 1024) FROM {s}.checkpoints
        WHERE stream = %(stream)s AND epoch = %(epoch)s AND sort_key IS NOT NULL
        ORDER BY substring(sort_key FROM 1 FOR 1024) LIMIT 1)
    ORDER BY sort_key LIMIT 1)
"""


# --- the store ---------------------------------------------------------------------------


class PostgresStore:
    """All streams of one PostgreSQL schema; thread-safe; one per process.

    ``dsn``: a libpq URL or key/value string (default: ``$FENCEPOST_DATABASE_URL``).
    ``schema``: the PostgreSQL schema holding the tables (created if missing).
    ``min_connections``/``max_connections``: the pool's bounds.
    ``connect_timeout``: seconds to open the store or wait for a free connection
    (a :class:`~.stores.DefiniteStoreError` after that: nothing was sent).
    ``op_timeout``: seconds one statement may run: the server cancels it then
    (``statement_timeout``: a :class:`~.stores.DefiniteStoreError`, rolled back);
    if the server does not answer at all, the store gives up on the reply a
    little later (an :class:`~.stores.IndefiniteStoreError`: it may have committed).
    """

    def __init__(
        self,
        dsn: str | None = None,
        *,
        schema: str = DEFAULT_SCHEMA,
        min_connections: int = 1,
        max_connections: int = 4,
        connect_timeout: float = 10.0,
        op_timeout: float = 30.0,
        application_name: str = "fencepost",
    ) -> None:
        if dsn is None:
            dsn = os.environ.get(DSN_ENV, "")
            if not dsn:
                raise StoreOpenError(
                    f"${DSN_ENV}",
                    f"no PostgreSQL URL given: pass one (postgresql://user@host:5432/db) "
                    f"or set {DSN_ENV}",
                )
        if type(schema) is not str or not schema or "\x00" in schema or len(schema) > 63:
            raise InvalidValue("schema", schema, "a PostgreSQL schema name of 1 to 63 characters")
        for name, value in (
            ("min_connections", min_connections),
            ("max_connections", max_connections),
        ):
            if type(value) is not int or value < 1:
                raise InvalidValue(name, value, "a positive integer is required")
        if max_connections < min_connections:
            raise InvalidValue("max_connections", max_connections, "must be >= min_connections")
        for name, seconds in (("connect_timeout", connect_timeout), ("op_timeout", op_timeout)):
            if isinstance(seconds, bool) or not isinstance(seconds, int | float) or not seconds > 0:
                raise InvalidValue(name, seconds, "a positive number of seconds is required")
        self.dsn = dsn
        self.location = redact(dsn)
        self.schema = schema
        self.op_timeout = float(op_timeout)
        # The server's statement_timeout (op_timeout) cancels a slow statement with an
        # ERROR (definite: rolled back); the client gives up a little later, only when
        # the server itself does not answer (indefinite).
        self._client_deadline = self.op_timeout + max(1.0, self.op_timeout / 4)
        self.connect_timeout = float(connect_timeout)
        self._s = quote_ident(schema)
        self._summary_query = _SUMMARY_QUERY.format(s=self._s, n=_SUMMARY_NAMES)
        self._memberships: dict[tuple[str, int], Membership] = {}
        self._deadlines = _Deadlines()
        try:
            conninfo_to_dict(dsn)
        except psycopg.ProgrammingError as exc:
            raise StoreOpenError(self.location, f"not a PostgreSQL URL: {exc}") from None
        statement_timeout_ms = int(self.op_timeout * 1000)
        settings = (
            "SET synchronous_commit = on; "
            "SET default_transaction_isolation = 'read committed'; "
            f"SET statement_timeout = {statement_timeout_ms}"
        )

        def configure(conn: psycopg.Connection[Any]) -> None:
            conn.execute(settings)

        self._pool: psycopg_pool.ConnectionPool[psycopg.Connection[Any]] = (
            psycopg_pool.ConnectionPool(
                dsn,
                min_size=min_connections,
                max_size=max_connections,
                kwargs={
                    "autocommit": True,
                    "connect_timeout": max(1, int(connect_timeout)),
                    "application_name": application_name,
                    "keepalives": 1,
                    "keepalives_idle": 10,
                    "keepalives_interval": 5,
                    "keepalives_count": 3,
                },
                configure=configure,
                open=False,
                timeout=connect_timeout,
                name=f"fencepost-{schema}",
            )
        )
        self._first_contact()
        try:
            self._pool.open(wait=True, timeout=connect_timeout)
        except psycopg_pool.PoolTimeout:
            self._pool.close()
            raise StoreOpenError(self.location, self._unreachable()) from None
        try:
            self._migrate()
        except BaseException:
            self._pool.close()
            raise

    # --- opening -------------------------------------------------------------------

    def _first_contact(self) -> None:
        """Connect once before the pool does, and fail at once on a permanent refusal.

        The pool retries failed connections until ``connect_timeout``: right for a
        server that is restarting, pointless for a database or role that does not
        exist, a wrong password, a closed port, an unknown host or a bad sslmode.
        Those are :data:`DEFINITE_CONNECT_FAILURES`: refused in one round trip. Any
        other failure (a timeout, a server starting up or shutting down, too many
        clients) is left to the pool's retries. Cost: one connection at open.
        """
        try:
            psycopg.connect(
                self.dsn, connect_timeout=max(1, int(self.connect_timeout)), autocommit=True
            ).close()
        except psycopg.Error as exc:
            text = str(exc).strip()
            for marker, what in DEFINITE_CONNECT_FAILURES:
                if marker in text:
                    first = text.splitlines()[0] if text else type(exc).__name__
                    raise StoreOpenError(
                        self.location,
                        f"cannot connect to PostgreSQL: {what} ({first}); fix the URL or "
                        "the server: retrying cannot help",
                    ) from None

    def _unreachable(self) -> str:
        """Why no connection could be opened, asked directly so the message says it."""
        try:
            with psycopg.connect(self.dsn, connect_timeout=max(1, int(self.connect_timeout))):
                pass
        except psycopg.Error as exc:
            reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            return (
                f"cannot connect to PostgreSQL ({reason}); is the server running and the URL "
                f"right? (set {DSN_ENV} or pass the URL)"
            )
        return f"no connection became ready within {self.connect_timeout:g}s"

    def _migrate(self) -> None:
        """Bring the schema to :data:`SCHEMA_VERSION` under the migration advisory lock."""
        s = self._s
        with self._connection() as conn:
            try:
                with conn.transaction():
                    conn.execute(
                        "SELECT pg_advisory_xact_lock(%s)", (_migration_lock_key(self.schema),)
                    )
                    conn.execute(f"CREATE SCHEMA IF NOT EXISTS {s}")
                    conn.execute(
                        f"CREATE TABLE IF NOT EXISTS {s}.schema_version ("
                        "version integer PRIMARY KEY, description text NOT NULL, "
                        "applied_at timestamptz NOT NULL DEFAULT now())"
                    )
                    applied = {
                        int(v) for (v,) in conn.execute(f"SELECT version FROM {s}.schema_version")
                    }
                    newest = max(applied, default=0)
                    if newest > SCHEMA_VERSION:
                        raise StoreOpenError(
                            self.location,
                            f"schema {self.schema!r} is at version {newest}, newer than this "
                            f"fencepost knows ({SCHEMA_VERSION}); upgrade fencepost to use it",
                        )
                    for version, description, statements in MIGRATIONS:
                        if version in applied:
                            continue
                        for statement in statements:
                            if isinstance(statement, str):
                                conn.execute(statement.format(s=s))
                            else:
                                statement(conn, s, self.location)
                        conn.execute(
                            f"INSERT INTO {s}.schema_version (version, description) "
                            "VALUES (%s, %s)",
                            (version, description),
                        )
            except psycopg.Error as exc:
                raise StoreOpenError(
                    self.location, f"could not migrate schema {self.schema!r}: {exc}"
                ) from exc

    @property
    def schema_version(self) -> int:
        """The newest migration applied to this store's schema."""
        rows = self._run(f"SELECT max(version) FROM {self._s}.schema_version", (), write=False)
        return int(rows[0][0])

    # --- connections and error mapping -------------------------------------------

    @contextmanager
    def _connection(self) -> Iterator[psycopg.Connection[Any]]:
        """A pooled connection known, before anything is sent on it, to be usable.

        A connection the server closed while it sat in the pool (a restart, an
        idle timeout) shows up as unread bytes (its FATAL) or end of file: it is
        discarded and another is taken. No statement was sent on it, so this is
        never a reason to report a failure.
        """
        deadline = time.monotonic() + self.connect_timeout
        while True:
            remaining = deadline - time.monotonic()
            try:
                conn = self._pool.getconn(timeout=max(remaining, 0.001))
            except psycopg_pool.PoolTimeout:
                raise DefiniteStoreError(
                    f"{self.location}: no PostgreSQL connection within "
                    f"{self.connect_timeout:g}s; nothing was sent (is the server up?)"
                ) from None
            except psycopg_pool.PoolClosed:
                raise DefiniteStoreError(
                    f"{self.location}: this PostgresStore is closed; open a new store"
                ) from None
            if self._usable(conn):
                break
            conn.close()
            self._pool.putconn(conn)
        try:
            yield conn
        finally:
            self._pool.putconn(conn)

    @staticmethod
    def _usable(conn: psycopg.Connection[Any]) -> bool:
        if conn.closed or conn.broken:
            return False
        try:
            fd = conn.fileno()
        except psycopg.Error:
            return False
        poller = select.poll()
        poller.register(fd, select.POLLIN | select.POLLERR | select.POLLHUP)
        # An idle connection has nothing to read: anything there means the server
        # is closing it (or already has).
        return not poller.poll(0)

    def _run(
        self,
        query: str,
        params: Sequence[object] | Mapping[str, object],
        *,
        write: bool,
        what: str = "",
    ) -> list[Row]:
        """Run one statement; its rows, or the failure mapped to definite/indefinite."""
        return self._with_connection(lambda conn: _fetch(conn, query, params), write, what)

    def _with_connection(
        self, body: Callable[[psycopg.Connection[Any]], T], write: bool, what: str
    ) -> T:
        """Run ``body`` on a usable connection; failures mapped to definite/indefinite.

        A read whose connection was lost mid-statement (a dropped connection, an
        administrator's ``pg_terminate_backend``, a server restart: SQLSTATE class
        08 and 57P01-57P03) is retried on another connection, up to
        :data:`READ_ATTEMPTS` tries within :data:`READ_RETRY_SECONDS`: a read
        changes nothing. A write is never retried here: whether it was applied is
        the caller's to find out (an :class:`~.stores.IndefiniteStoreError`).
        """
        label = what or ("write" if write else "read")
        started = time.monotonic()
        attempt = 1
        while True:
            with self._connection() as conn:
                ticket = self._deadlines.arm(conn.fileno(), self._client_deadline)
                try:
                    return body(conn)
                except psycopg.Error as exc:
                    failure = self._failure(exc, label)
                    lost = conn.broken or (exc.sqlstate or "").startswith(_LOST_CONNECTION)
                    if (
                        write
                        or not lost
                        or not isinstance(failure, IndefiniteStoreError)
                        or attempt >= READ_ATTEMPTS
                        or time.monotonic() - started > READ_RETRY_SECONDS
                    ):
                        raise failure from exc
                finally:
                    self._deadlines.disarm(ticket)
            attempt += 1

    def _failure(self, exc: psycopg.Error, label: str) -> StoreError:
        diag = exc.diag
        severity = diag.severity_nonlocalized if exc.sqlstate else None
        said = f"PostgreSQL says: {exc.sqlstate}: {diag.message_primary or exc}"
        if exc.sqlstate and severity == "ERROR":
            # The same failure gets the same words on every backend (impl/stores.py).
            if exc.sqlstate in _FULL:
                return StoreFull(self.location, said)
            if exc.sqlstate in _LOCKED:
                return StoreLocked(self.location, said)
            if exc.sqlstate in _CORRUPT:
                return CorruptStore(self.location, None, None, None, said)
            # The server answered with an error: the implicit transaction rolled back.
            return DefiniteStoreError(
                f"{self.location}: PostgreSQL refused the {label} ({exc.sqlstate}: "
                f"{diag.message_primary or exc}); nothing was applied"
            )
        reason = str(exc).strip() or type(exc).__name__
        return IndefiniteStoreError(
            f"{self.location}: the {label}'s reply was lost ({reason}); "
            "it may or may not have been applied: reread before deciding"
        )

    # --- decoding rows: a row no write makes is corruption, named as every backend names it

    def _membership_of(self, body: object, stream: str, epoch: object) -> Membership:
        return stored_membership(self.location, stream, row_key(epoch), body)

    def _record_of(self, row: Row, stream: str) -> PublicationRecord:
        try:
            return _record(row)
        except ValueError as exc:
            raise corrupt_row(self.location, "publications", f"stream={stream!r}", exc) from None

    def _checkpoint_of(self, row: Row) -> Checkpoint:
        try:
            return _checkpoint(row)
        except ValueError as exc:
            where = f"epoch={row_key(row[1])!r} partition={row_key(row[0])!r}"
            raise corrupt_row(self.location, "checkpoints", where, exc) from None

    # --- memberships ---------------------------------------------------------------

    def create_stream(self, stream: str, membership: Membership) -> PublicationRecord:
        key = _name(stream, "stream")
        if not isinstance(membership, Membership):
            raise InvalidValue("membership", membership, "a Membership is required")
        s = self._s
        body = _membership_body(membership)
        epoch = Decimal(membership.epoch)

        def create(conn: psycopg.Connection[Any]) -> PublicationRecord:
            with conn.transaction():
                created = conn.execute(
                    f"INSERT INTO {s}.streams (stream, initial_epoch, current_epoch) "
                    "VALUES (%s, %s, %s) ON CONFLICT (stream) DO NOTHING RETURNING stream",
                    (key, epoch, epoch),
                ).fetchone()
                if created is None:
                    # It exists (our INSERT waited for any concurrent creator to commit):
                    # lock it and compare the first membership.
                    row = conn.execute(
                        f"SELECT m.body, m.epoch FROM {s}.streams t JOIN {s}.memberships m "
                        "ON m.stream = t.stream AND m.epoch = t.initial_epoch "
                        "WHERE t.stream = %s FOR SHARE OF t",
                        (key,),
                    ).fetchone()
                    assert row is not None
                    first = self._membership_of(row[0], stream, row[1])
                    if first != membership:
                        raise StreamConflict(
                            f"stream {stream!r} already exists with another first membership; "
                            "use write_membership to add a new epoch, or another stream name"
                        )
                    rec = conn.execute(
                        f"SELECT {_RECORD_COLUMNS} FROM {s}.publications WHERE stream = %s",
                        (key,),
                    ).fetchone()
                    assert rec is not None
                    return self._record_of(rec, stream)
                self._insert_membership(conn, key, membership, body)
                conn.execute(
                    f"INSERT INTO {s}.publications (stream, epoch, cut_kind, revision) "
                    "VALUES (%s, %s, 'nothing', 0)",
                    (key, epoch),
                )
                return PublicationRecord(epoch=membership.epoch)

        return self._with_connection(create, True, "stream creation")

    def _insert_membership(
        self, conn: psycopg.Connection[Any], stream: bytes, membership: Membership, body: str
    ) -> None:
        s = self._s
        epoch = Decimal(membership.epoch)
        conn.execute(
            f"INSERT INTO {s}.memberships (stream, epoch, body) VALUES (%s, %s, %s)",
            (stream, epoch, body),
        )
        members = sorted(membership.partitions)
        if members:
            names = [p.encode("utf-8") for p in members]
            conn.execute(
                f"INSERT INTO {s}.members (stream, epoch, partition, coordinate) "
                "SELECT %s, %s, p, c FROM unnest(%s::bytea[], %s::text[]) AS u(p, c)",
                (stream, epoch, names, [_coordinate_type(membership, p) for p in members]),
            )
            conn.execute(
                f"INSERT INTO {s}.missing_checkpoints (stream, epoch, partition) "
                "SELECT %s, %s, p FROM unnest(%s::bytea[]) AS u(p)",
                (stream, epoch, names),
            )

    def read_membership(self, stream: str, epoch: int | None = None) -> Membership:
        """The membership of ``epoch`` or the current one.

        Cost: one small statement (the current epoch) when this store object has
        parsed that epoch's membership before, as memberships never change once
        written; the body (O(partitions)) is fetched and parsed once per epoch.
        """
        key = _name(stream, "stream")
        s = self._s
        if epoch is None:
            rows = self._run(
                f"SELECT current_epoch FROM {s}.streams WHERE stream = %s",
                (key,),
                write=False,
                what="membership read",
            )
            if not rows:
                raise _unknown(stream)
            epoch = int(rows[0][0])
        _epoch(epoch, "epoch")
        cached = self._memberships.get((stream, epoch))
        if cached is not None:
            return cached
        rows = self._run(
            f"SELECT m.epoch, m.body, (SELECT array_agg(epoch ORDER BY epoch) FROM "
            f"{s}.memberships WHERE stream = t.stream) FROM {s}.streams t "
            f"LEFT JOIN {s}.memberships m ON m.stream = t.stream "
            + ("AND m.epoch = t.current_epoch " if epoch is None else "AND m.epoch = %s ")
            + "WHERE t.stream = %s",
            (key,) if epoch is None else (Decimal(epoch), key),
            write=False,
            what="membership read",
        )
        if not rows:
            raise _unknown(stream)
        found_epoch, body, epochs = rows[0]
        if body is None:
            stored = ", ".join(str(int(e)) for e in epochs or [])
            raise DefiniteStoreError(
                f"stream {stream!r} has no membership for epoch {epoch} (epochs stored: {stored})"
            )
        # A membership never changes once written: parse each (stream, epoch) once.
        cached = self._memberships.get((stream, int(found_epoch)))
        if cached is not None:
            return cached
        membership = self._membership_of(body, stream, found_epoch)
        self._memberships[(stream, membership.epoch)] = membership
        return membership

    def write_membership(self, stream: str, membership: Membership) -> None:
        key = _name(stream, "stream")
        if not isinstance(membership, Membership):
            raise InvalidValue("membership", membership, "a Membership is required")
        s = self._s
        body = _membership_body(membership)

        def write(conn: psycopg.Connection[Any]) -> None:
            with conn.transaction():
                # The stream's row lock serializes membership writes: the next
                # statement's snapshot contains every epoch committed before it.
                if (
                    conn.execute(
                        f"SELECT 1 FROM {s}.streams WHERE stream = %s FOR UPDATE", (key,)
                    ).fetchone()
                    is None
                ):
                    raise _unknown(stream)
                stored = {
                    int(e): self._membership_of(b, stream, e)
                    for e, b in conn.execute(
                        f"SELECT epoch, body FROM {s}.memberships WHERE stream = %s", (key,)
                    )
                }
                if admit_membership(stream, stored, membership):
                    self._insert_membership(conn, key, membership, body)
                    conn.execute(
                        f"UPDATE {s}.streams SET current_epoch = %s WHERE stream = %s",
                        (Decimal(membership.epoch), key),
                    )

        self._with_connection(write, True, "membership write")

    # --- publication ---------------------------------------------------------------

    def read_publication(self, stream: str) -> PublicationRecord:
        key = _name(stream, "stream")
        rows = self._run(
            f"SELECT {_RECORD_COLUMNS} FROM {self._s}.publications WHERE stream = %s",
            (key,),
            write=False,
            what="publication read",
        )
        if not rows:
            raise _unknown(stream)
        return self._record_of(rows[0], stream)

    def write_publication(
        self, stream: str, expected_revision: int, epoch: int, cut: Cut, op_id: str
    ) -> PublicationWrite:
        key = _name(stream, "stream")
        check_revision(expected_revision, "expected_revision")
        op_key = _name(op_id, "op_id")
        new_record = PublicationRecord(epoch, cut, expected_revision + 1, op_id)
        _counter(expected_revision + 1, "revision")
        kind, at_int, at_str = encode_cut(cut)
        s = self._s
        # One statement: lock the record (the latest committed version), write it
        # iff its revision is the expected one, and return either the new record
        # or the one that made the write lose.
        rows = self._run(
            f"""WITH current AS (
                    SELECT * FROM {s}.publications WHERE stream = %(stream)s FOR UPDATE
                ), written AS (
                    UPDATE {s}.publications p
                    SET epoch = %(epoch)s, cut_kind = %(kind)s, cut_int = %(at_int)s,
                        cut_str = %(at_str)s, revision = p.revision + 1, op_id = %(op_id)s
                    FROM current
                    WHERE p.stream = current.stream AND current.revision = %(expected)s
                    RETURNING true AS applied, p.epoch, p.cut_kind, p.cut_int, p.cut_str,
                              p.revision, p.op_id
                )
                SELECT * FROM written
                UNION ALL
                SELECT false, epoch, cut_kind, cut_int, cut_str, revision, op_id FROM current
                WHERE NOT EXISTS (SELECT 1 FROM written)""",
            {
                "stream": key,
                "epoch": Decimal(epoch),
                "kind": kind,
                "at_int": at_int,
                "at_str": at_str,
                "op_id": op_key,
                "expected": expected_revision,
            },
            write=True,
            what="publication write",
        )
        if not rows:
            raise _unknown(stream)
        applied, *record = rows[0]
        if applied:
            stored = self._record_of(tuple(record), stream)
            if stored != new_record:  # pragma: no cover - a broken server or schema
                raise DefiniteStoreError(f"stored {stored} differs from the write {new_record}")
            return Applied(stored)
        return Conflict(self._record_of(tuple(record), stream))

    # --- checkpoints ---------------------------------------------------------------

    def read_checkpoint(self, stream: str, epoch: int, partition: str) -> Checkpoint | None:
        key = _name(stream, "stream")
        part = _name(partition, "partition")
        _epoch(epoch, "epoch")
        s = self._s
        rows = self._run(
            f"SELECT c.partition IS NOT NULL, {_prefixed('c', _CHECKPOINT_COLUMNS)} "
            f"FROM {s}.streams t LEFT JOIN {s}.checkpoints c ON c.stream = t.stream "
            "AND c.epoch = %s AND c.partition = %s WHERE t.stream = %s",
            (Decimal(epoch), part, key),
            write=False,
            what="checkpoint read",
        )
        if not rows:
            raise _unknown(stream)
        found, *row = rows[0]
        return self._checkpoint_of(tuple(row)) if found else None

    def read_checkpoints(self, stream: str, epoch: int) -> Sequence[Checkpoint]:
        key = _name(stream, "stream")
        _epoch(epoch, "epoch")
        s = self._s
        rows = self._run(
            f"SELECT c.partition IS NOT NULL, {_prefixed('c', _CHECKPOINT_COLUMNS)} "
            f"FROM {s}.streams t LEFT JOIN {s}.checkpoints c ON c.stream = t.stream "
            "AND c.epoch = %s WHERE t.stream = %s",
            (Decimal(epoch), key),
            write=False,
            what="checkpoints read",
        )
        if not rows:
            raise _unknown(stream)
        found = [self._checkpoint_of(tuple(row)) for present, *row in rows if present]
        # Partition-name order is code-point order, whatever the database's collation.
        return sorted(found, key=lambda c: c.partition)

    def write_checkpoint(
        self, stream: str, expected_generation: int | None, checkpoint: Checkpoint
    ) -> CheckpointWrite:
        """One fenced checkpoint write: one statement. Cost: O(log N) for N partitions."""
        key = _name(stream, "stream")
        if expected_generation is not None:
            check_revision(expected_generation, "expected_generation")
        if not isinstance(checkpoint, Checkpoint):
            raise InvalidValue("checkpoint", checkpoint, "a Checkpoint is required")
        query, params = self._checkpoint_statement(stream, key, expected_generation, checkpoint)
        rows = self._run(query, params, write=True, what="checkpoint write")
        return self._checkpoint_result(rows)

    def write_checkpoints(self, stream: str, writes: Sequence[BatchWrite]) -> list[CheckpointWrite]:
        """Many fenced checkpoint writes in one transaction, sent in one pipeline.

        Each write is the same one statement as :meth:`write_checkpoint` (so each
        is decided on its own row lock and generation); the statements, BEGIN and
        COMMIT go to the server without waiting for each other's replies. They
        are sent in (epoch, partition) order whatever the batch's order (writes
        of one partition keep theirs), so concurrent batches take their row
        locks in one global order and never deadlock.
        Cost: one round trip and one WAL flush for the batch, O(B log N) for B
        writes to an epoch of N partitions.
        """
        key = _name(stream, "stream")
        batch = check_batch(writes)
        if not batch:
            return []
        sent = sorted(range(len(batch)), key=lambda i: (batch[i][1].epoch, batch[i][1].partition))
        statements = [self._checkpoint_statement(stream, key, *batch[i]) for i in sent]

        def write(conn: psycopg.Connection[Any]) -> list[CheckpointWrite]:
            with conn.pipeline(), conn.transaction():
                cursors = [_send(conn, q, p) for q, p in statements]
            answers = [self._checkpoint_result(list(cur.fetchall())) for cur in cursors]
            results: list[CheckpointWrite] = [answers[0]] * len(batch)
            for position, index in enumerate(sent):
                results[index] = answers[position]
            return results

        return self._with_connection(write, True, "checkpoint batch write")

    def _checkpoint_statement(
        self, stream: str, key: bytes, expected_generation: int | None, checkpoint: Checkpoint
    ) -> tuple[str, dict[str, object]]:
        """The one statement that writes ``checkpoint`` iff its generation is the expected one."""
        if expected_generation is not None:
            _counter(expected_generation + 1, "generation")
        # Memberships never change once written, so a cached one is authoritative.
        membership = self._membership_for(stream, checkpoint.epoch)
        admit_checkpoint(stream, membership, checkpoint)
        assert membership is not None
        generation = 1 if expected_generation is None else expected_generation + 1
        kind, at_int, at_str = encode_cut(checkpoint.cut)
        params: dict[str, object] = {
            "stream": key,
            "epoch": Decimal(checkpoint.epoch),
            "partition": checkpoint.partition.encode("utf-8"),
            "kind": kind,
            "at_int": at_int,
            "at_str": at_str,
            "token": None if checkpoint.token is None else checkpoint.token.encode("utf-8"),
            "generation": generation,
            "scope": checkpoint.scope.encode("utf-8"),
            "finality": checkpoint.finality.value,
            "sort_key": cut_key(membership.order_of(checkpoint.partition), checkpoint.cut),
            "scope_ok": checkpoint.scope == membership.scope,
            "write_id": uuid.uuid4(),
            "expected": expected_generation,
        }
        s = self._s
        returned = f"c.write_id = %(write_id)s, {_prefixed('c', _CHECKPOINT_COLUMNS)}"
        if expected_generation is None:
            # One statement: insert generation 1, or lock the existing row (even one
            # committed after this statement's snapshot) and return it unchanged; and
            # the member is no longer missing a checkpoint (deleted with the insert).
            query = f"""WITH written AS (
                    INSERT INTO {s}.checkpoints AS c (stream, epoch, partition, cut_kind,
                        cut_int, cut_str, token, generation, scope, finality, sort_key,
                        scope_ok, write_id)
                    VALUES (%(stream)s, %(epoch)s, %(partition)s, %(kind)s, %(at_int)s,
                        %(at_str)s, %(token)s, %(generation)s, %(scope)s, %(finality)s,
                        %(sort_key)s, %(scope_ok)s, %(write_id)s)
                    ON CONFLICT (stream, epoch, partition) DO UPDATE SET write_id = c.write_id
                    RETURNING {returned}
                ), found AS (
                    DELETE FROM {s}.missing_checkpoints
                    WHERE stream = %(stream)s AND epoch = %(epoch)s
                      AND partition = %(partition)s
                )
                SELECT * FROM written"""
        else:
            # One statement: lock the row, write it iff its generation is the expected
            # one, and return the new checkpoint or the newer one that stays.
            query = f"""WITH current AS (
                    SELECT * FROM {s}.checkpoints
                    WHERE stream = %(stream)s AND epoch = %(epoch)s AND partition = %(partition)s
                    FOR UPDATE
                ), written AS (
                    UPDATE {s}.checkpoints c
                    SET cut_kind = %(kind)s, cut_int = %(at_int)s, cut_str = %(at_str)s,
                        token = %(token)s, generation = c.generation + 1, scope = %(scope)s,
                        finality = %(finality)s, sort_key = %(sort_key)s,
                        scope_ok = %(scope_ok)s, write_id = %(write_id)s
                    FROM current
                    WHERE c.stream = current.stream AND c.epoch = current.epoch
                      AND c.partition = current.partition
                      AND current.generation = %(expected)s
                    RETURNING {returned}
                )
                SELECT * FROM written
                UNION ALL
                SELECT false, {_prefixed("c", _CHECKPOINT_COLUMNS)} FROM current c
                WHERE NOT EXISTS (SELECT 1 FROM written)"""
        return query, params

    def _checkpoint_result(self, rows: list[Row]) -> CheckpointWrite:
        if not rows:
            return CheckpointConflict(None)
        applied, *row = rows[0]
        stored = self._checkpoint_of(tuple(row))
        return CheckpointApplied(stored) if applied else CheckpointConflict(stored)

    def read_merge_summary(self, stream: str, epoch: int) -> MergeSummary:
        """The epoch's merge summary from four index probes in one statement (one snapshot).

        Cost: O(log N) for N partitions and O(1) rows, whatever the number of
        checkpoints, publishers or writes; the membership is fetched once per
        store object.
        """
        key = _name(stream, "stream")
        _epoch(epoch, "epoch")
        membership = self._memberships.get((stream, epoch))
        if membership is None:
            membership = self.read_membership(stream, epoch)
        rows = self._run(
            self._summary_query,
            {"stream": key, "epoch": Decimal(epoch)},
            write=False,
            what="merge summary read",
        )
        names: dict[str, list[str]] = {"m": [], "s": [], "p": []}
        least: Cut | None = None
        for tag, partition, kind, at_int, at_str in rows:
            if tag == "c":
                try:
                    least = decode_cut(kind, at_int, at_str)
                except ValueError as exc:
                    where = f"stream={stream!r} epoch={epoch} (the least cut)"
                    raise corrupt_row(self.location, "checkpoints", where, exc) from None
            else:
                names[tag].append(_str(partition))
        return MergeSummary(
            epoch,
            missing=tuple(sorted(names["m"])),
            wrong_scope=tuple(sorted(names["s"])),
            provisional=tuple(sorted(names["p"])),
            minimum=least if membership.order is not None else None,
        )

    def _membership_for(self, stream: str, epoch: int) -> Membership | None:
        cached = self._memberships.get((stream, epoch))
        if cached is not None:
            return cached
        try:
            return self.read_membership(stream, epoch)
        except UnknownStream:
            raise
        except DefiniteStoreError:
            return None  # no membership for that epoch: admit_checkpoint says so

    # --- outcomes ------------------------------------------------------------------

    def record_outcome(self, stream: str, event_id: str, outcome: str) -> str:
        key = _name(stream, "stream")
        event = _name(event_id, "event_id")
        first = _name(outcome, "outcome")
        try:
            # One statement: the first outcome wins; a replay locks and returns it.
            rows = self._run(
                f"INSERT INTO {self._s}.outcomes AS o (stream, event_id, outcome) "
                "VALUES (%s, %s, %s) ON CONFLICT (stream, event_id) "
                "DO UPDATE SET outcome = o.outcome RETURNING o.outcome",
                (key, event, first),
                write=True,
                what="outcome write",
            )
        except DefiniteStoreError as exc:
            if isinstance(exc.__cause__, pg_errors.ForeignKeyViolation):
                raise _unknown(stream) from None
            raise
        return _str(rows[0][0])

    def outcomes(self, stream: str, event_ids: Sequence[str]) -> dict[str, str]:
        key = _name(stream, "stream")
        ids = [_name(e, f"event_ids[{i}]") for i, e in enumerate(event_ids)]
        s = self._s
        rows = self._run(
            f"SELECT t.stream, o.event_id, o.outcome FROM {s}.streams t "
            f"LEFT JOIN {s}.outcomes o ON o.stream = t.stream AND o.event_id = ANY(%s::bytea[]) "
            "WHERE t.stream = %s",
            (ids, key),
            write=False,
            what="outcomes read",
        )
        if not rows:
            raise _unknown(stream)
        return {_str(e): _str(o) for _, e, o in rows if e is not None}

    def close(self) -> None:
        """Close the pool's connections; the durable state stays."""
        self._deadlines.close()
        self._pool.close()

    def __enter__(self) -> PostgresStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _send(conn: psycopg.Connection[Any], query: str, params: object) -> psycopg.Cursor[Any]:
    """Every statement of an operation goes through here (one place to observe them)."""
    cursor: psycopg.Cursor[Any] = conn.execute(query, params)  # type: ignore[call-overload]
    return cursor


def _fetch(conn: psycopg.Connection[Any], query: str, params: object) -> list[Row]:
    cur = _send(conn, query, params)
    # Rows only from a statement that returns them; asked of the result's status, not of
    # ``cur.description`` (which builds a column object per column of every statement).
    result = cur.pgresult
    if result is None or result.status != pq.ExecStatus.TUPLES_OK:
        return []
    return list(cur.fetchall())


def _prefixed(alias: str, columns: str) -> str:
    return ", ".join(f"{alias}.{c.strip()}" for c in columns.split(","))


def _unknown(stream: str) -> UnknownStream:
    return UnknownStream(f"stream {stream!r} does not exist: create it with create_stream first")


def open_postgres(location: str) -> PostgresStore:
    """The opener :func:`fencepost.impl.open.open_store` uses for ``postgresql://`` URLs.

    A ``fencepost_schema`` query parameter names the schema (default
    ``fencepost``); everything else is passed to libpq unchanged.
    """
    dsn = location
    if location.startswith("postgres://"):
        dsn = "postgresql://" + location[len("postgres://") :]
    dsn, schema = split_schema(dsn)
    return PostgresStore(dsn, schema=schema or DEFAULT_SCHEMA)


def split_schema(url: str) -> tuple[str, str | None]:
    """``url`` without its ``fencepost_schema`` query parameter, and that parameter (or None).

    libpq refuses parameters it does not know, so the schema is taken out
    before the URL reaches it; every other parameter is kept as written. A
    parameter given twice, empty, or not a PostgreSQL name is a
    :class:`StoreOpenError` (never silently the last one).
    """
    base, sep, query = url.partition("?")
    if not sep:
        return url, None
    from urllib.parse import unquote

    kept = []
    given: list[str] = []
    for part in query.split("&"):
        key, _, value = part.partition("=")
        if key == "fencepost_schema":
            given.append(unquote(value))
        elif part:
            kept.append(part)
    if len(given) > 1:
        raise StoreOpenError(
            redact(base),
            f"fencepost_schema is given {len(given)} times ({', '.join(map(repr, given))}); "
            "name the schema once",
        )
    schema = None
    if given:
        schema = given[0]
        if not schema or "\x00" in schema or len(schema) > 63:
            raise StoreOpenError(
                redact(base),
                f"fencepost_schema={schema!r}: a PostgreSQL schema name is 1 to 63 "
                "characters (leave the parameter out for the default 'fencepost')",
            )
    return base + ("?" + "&".join(kept) if kept else ""), schema
