"""A PostgreSQL transactional outbox as a provider whose coverage comes from the snapshot.

The problem (docs/outbox.md section 1). Writers insert outbox rows inside their
business transactions; ids come from a sequence at insert time, but transactions
commit in any order, and a row is invisible until its transaction commits. A poller
that resumes "after the greatest id seen" skips, forever, every row whose lower
id committed after a higher one was read: the greatest event observed is not a
coverage boundary (docs/procedure.md, "Represent the boundary explicitly").

The coordinate. Each row carries the id of the transaction that wrote it, an
``xid8`` column filled by ``DEFAULT pg_current_xact_id()``. Every row of one
transaction has the same coordinate (the top-level transaction id, also inside
savepoints). ``xid8`` is 64 bits, the epoch included, so it never wraps: the
order is the integers with an exact successor (:data:`XID8_ORDER`). The 32-bit
``xid`` (and the ``xmin`` system column) wraps every 2**32 transactions and is
frozen by VACUUM; it is never used.

The claim. PostgreSQL documents the snapshot's ``xmin`` as the "lowest
transaction ID that was still active. All transaction IDs less than xmin are
either committed and visible, or rolled back and dead." Transaction ids are
handed out in increasing order, so no transaction below ``xmin`` can ever start
again. Hence, within the snapshot that served a page, every row with
``xid < xmin`` that will ever exist is visible, and no other will ever appear:
``before xmin`` is a *final* claim, exact (not ``through xmin``: the transaction
``xmin`` itself may still be running, and not ``before xmin + 1``).

Why one snapshot, and why the page stops at ``xmin``. A page and its claim are
one SQL statement inside one ``REPEATABLE READ READ ONLY`` transaction, so the
``xmin`` is that of the snapshot the rows were read from. An ``xmin`` read
*later* (another statement in READ COMMITTED, another transaction) may cover a
transaction that committed after the page was read and whose rows the page
does not hold. The query also returns only rows with ``xid < xmin``: rows of
transactions at or above ``xmin`` may be visible already (committed above a
still-running one), but keyset pagination must never move its position past a
transaction that is still undecided, or that transaction's rows would sort
below the position and never be fetched. So the position (the token) only ever
passes decided rows, and rows at or above ``xmin`` wait for a later page.

Pages. Keyset pagination on ``(xid, id)``: a page is the next ``page_size``
decided rows after the position, in that order, read with one extra row that
is not delivered and only tells where the page stopped. A full page claims
``before`` the first undelivered row's xid (every row below it has been
delivered, on this page or an earlier one); a page that reached the end claims
``before xmin``. An empty page still claims ``before xmin``: an idle partition
advances with the cluster. The token is opaque (versioned base64 of the
partition and the position) and is refused for another partition.

What it costs. One page: one connection round trip for each of BEGIN, the
statement and COMMIT; one index range scan of ``page_size + 1`` entries on an
index on ``(xid, id)`` (create it: docs/outbox.md section 5), so the cost does
not grow with the table. Without that index each page sorts the table's decided rows.

Assumptions the claim rests on (docs/outbox.md section 6):

- the xid column is filled by ``pg_current_xact_id()`` in the inserting
  transaction and never written otherwise (checked at start-up: the column's
  default must be exactly that, unless ``check_xid_default=False`` because a
  trigger sets it);
- rows are inserted, never updated in place and never deleted before their
  outcome is durable (delete only below the published frontier);
- the id column is unique within a relation (it keys the event id);
- the reading role sees every row: row-level security that applies to it is
  refused at start-up (hidden rows would be covered and never read);
- all pages of a partition come from one cluster's transaction history: a
  token whose position is at or above the current snapshot's ``xmin`` is
  impossible there (``xmin`` never decreases) and is refused with
  :class:`OutboxError` (a dump restored into another cluster, or a standby
  that lags behind the server that served the token).

Progress (docs/outbox.md section 7): any transaction anywhere in the cluster
that holds a transaction id (any database, a prepared transaction) holds
``xmin`` back, and the claim waits for it; read-only transactions hold no id
and do not. That delays coverage; it never makes it false.
:meth:`PostgresOutbox.holders` names the transactions in the way.
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg import IsolationLevel, sql
from psycopg import errors as pg_errors

from fencepost.impl.cuts import Cut, Endpoint
from fencepost.impl.errors import InvalidValue
from fencepost.impl.orders import IntegerOrder
from fencepost.impl.postgres_deadline import redact
from fencepost.impl.provider import Claim, Event, Page, ProviderTimeout
from fencepost.impl.records import Membership

#: Transaction ids as 64-bit ``xid8``: integers with an exact successor, one order
#: for every table of the cluster.
XID8_ORDER = IntegerOrder("postgres-xid8", successor_exact=True)

#: The greatest ``xid8`` value (epoch and xid both at their maximum).
XID8_MAX = 2**64 - 1

#: The default page size (rows delivered per page).
DEFAULT_PAGE_SIZE = 500

_TOKEN_PREFIX = "pgo1."
_LOG = logging.getLogger("fencepost.outbox")


class OutboxError(Exception):
    """The outbox cannot be read as configured; refetching will not help.

    A missing table or column, a column of the wrong type or default, a missing
    privilege, a server older than PostgreSQL 13, or a token that this
    cluster's transaction history cannot have issued. The message names the
    relation and the fix.
    """


@dataclass(frozen=True, slots=True)
class OutboxEvent(Event):
    """One outbox row: ``id`` is ``"<partition>:<row id>"``, ``at`` its transaction's xid8.

    ``values`` holds the extra columns the provider was asked for, as
    ``(column, value)`` pairs in the order they were named.
    """

    partition: str
    row_id: str
    values: tuple[tuple[str, object], ...] = ()

    def value(self, column: str) -> object:
        """The value of ``column`` (one of the provider's ``columns``)."""
        for name, value in self.values:
            if name == column:
                return value
        raise KeyError(f"column {column!r} was not fetched; name it in PostgresOutbox(columns=...)")


@dataclass(frozen=True, slots=True)
class Position:
    """Where a partition's keyset pagination stands.

    After the row ``(xid, row_id)``; or, with ``row_id`` None, at ``xid``: every
    row whose xid is at least ``xid`` is still to come.
    """

    xid: int
    row_id: str | None


@dataclass(frozen=True, slots=True)
class OutboxRow:
    """A decided row as the page query returns it: xid8, the id as text, extra values."""

    xid: int
    row_id: str
    values: tuple[tuple[str, object], ...] = ()


@dataclass(frozen=True, slots=True)
class OutboxTable:
    """A relation checked at start-up: its catalog name, id type and whether it is indexed."""

    relation: str
    qualified: str
    id_type: str
    indexed: bool


@dataclass(frozen=True, slots=True)
class Holder:
    """A transaction holding the snapshot's xmin back (a backend or a prepared transaction)."""

    kind: str
    who: str
    xid: str
    age: int
    running_for: str
    state: str
    database: str
    query: str


# --- tokens ----------------------------------------------------------------------------


def encode_token(partition: str, position: Position) -> str:
    """The opaque token for ``position`` in ``partition``."""
    payload = json.dumps([partition, str(position.xid), position.row_id], separators=(",", ":"))
    text = base64.urlsafe_b64encode(payload.encode("utf-8")).decode("ascii").rstrip("=")
    return _TOKEN_PREFIX + text


def decode_token(partition: str, token: str) -> Position:
    """The position in ``token``; :class:`InvalidValue` unless issued for ``partition`` by us."""
    if type(token) is not str or not token.startswith(_TOKEN_PREFIX):
        raise InvalidValue("token", token, "not a token of the PostgreSQL outbox provider")
    body = token[len(_TOKEN_PREFIX) :]
    try:
        raw = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))
        issued_for, xid_text, row_id = json.loads(raw.decode("utf-8"))
        xid = int(xid_text) if type(xid_text) is str and xid_text.isdigit() else -1
    except (binascii.Error, UnicodeDecodeError, ValueError, TypeError):
        raise InvalidValue("token", token, "a damaged PostgreSQL outbox token") from None
    if not 0 <= xid <= XID8_MAX or (row_id is not None and type(row_id) is not str):
        raise InvalidValue("token", token, "a damaged PostgreSQL outbox token")
    if issued_for != partition:
        raise InvalidValue(
            "token", token, f"issued for partition {issued_for!r}, not {partition!r}"
        )
    return Position(xid, row_id)


def resume_token(partition: str, cut: Cut) -> str | None:
    """A token that resumes ``partition`` from a checkpoint's cut alone (no stored token).

    ``before x`` resumes at ``xid >= x``: every row below ``x`` is covered by
    the checkpoint, so nothing uncertified is skipped. ``nothing`` resumes at
    the start (None). A ``through`` cut is refused: this provider never
    certifies one.
    """
    if cut.is_nothing:
        return None
    if cut.endpoint is not Endpoint.BEFORE or type(cut.at) is not int:
        raise InvalidValue("cut", cut, "the outbox provider resumes only from before-xid cuts")
    if not 0 <= cut.at <= XID8_MAX + 1:
        raise InvalidValue("cut.at", cut.at, "not an xid8 bound (0 .. 2**64)")
    return encode_token(partition, Position(cut.at, None))


# --- the page and its claim (pure) ----------------------------------------------------------


def build_page(partition: str, xmin: int, rows: Sequence[OutboxRow], page_size: int) -> Page:
    """The page for ``rows`` read in a snapshot whose xmin is ``xmin``.

    ``rows`` are the decided rows after the position (``xid < xmin``) in
    ``(xid, id)`` order, at most ``page_size + 1`` of them: the last one, if
    present, is not delivered and only says where the page stopped. The claim
    is ``before`` that row's xid, or ``before xmin`` when the page reached the
    end. Raises :class:`OutboxError` if ``rows`` break what the claim rests on.
    """
    if len(rows) > page_size + 1:
        raise OutboxError(f"{len(rows)} rows for a page of {page_size}: the page query is wrong")
    previous = -1
    for row in rows:
        if not previous <= row.xid < xmin:
            raise OutboxError(
                f"row {row.row_id} of {partition} has xid {row.xid}, outside the decided and "
                f"ordered range below the snapshot's xmin {xmin}: the page query is wrong"
            )
        previous = row.xid
    delivered = rows[:page_size]
    claim_at = rows[page_size].xid if len(rows) > page_size else xmin
    events = tuple(
        OutboxEvent(f"{partition}:{row.row_id}", row.xid, partition, row.row_id, row.values)
        for row in delivered
    )
    last = delivered[-1] if delivered else None
    token = None if last is None else encode_token(partition, Position(last.xid, last.row_id))
    return Page(events, token, Claim(Cut.before(claim_at), final=True))


# --- the provider ----------------------------------------------------------------------------


class PostgresOutbox:
    """The :class:`~fencepost.impl.provider.Provider` of an outbox in PostgreSQL (13 or later).

    ``partitions`` maps each partition name to a relation (a table, or one hash
    partition of a partitioned table; :meth:`partitions_of` lists them), or is
    a list of relations named after themselves. Each relation needs ``xid_column``
    (``xid8 NOT NULL DEFAULT pg_current_xact_id()``) and a unique ``id_column``;
    ``columns`` are fetched too and handed to the handler in
    :attr:`OutboxEvent.values`. Start-up checks every relation and raises
    :class:`OutboxError` naming what is wrong.

    Thread-safe: fetches are serialized on one connection. A lost connection
    or a statement timeout raises :class:`ProviderTimeout` (the reader refetches;
    a page is a read) and the next fetch reconnects.
    """

    def __init__(
        self,
        dsn: str,
        partitions: Mapping[str, str] | Iterable[str],
        *,
        xid_column: str = "xid",
        id_column: str = "id",
        columns: Sequence[str] = (),
        page_size: int = DEFAULT_PAGE_SIZE,
        statement_timeout: float = 30.0,
        connect_timeout: float = 10.0,
        check_xid_default: bool = True,
        log: logging.Logger | None = None,
    ) -> None:
        if type(page_size) is not int or not 1 <= page_size <= 100_000:
            raise ValueError(f"page_size must be an int in 1..100000, got {page_size!r}")
        for value, name in ((statement_timeout, "statement_timeout"), (connect_timeout, "")):
            if type(value) not in (int, float) or not 0 < value <= 3600:
                raise ValueError(f"{name or 'connect_timeout'} must be seconds in (0, 3600]")
        mapping = (
            dict(partitions) if isinstance(partitions, Mapping) else {p: p for p in partitions}
        )
        if not mapping:
            raise ValueError("an outbox needs at least one partition")
        for name, relation in mapping.items():
            if type(name) is not str or not name or type(relation) is not str or not relation:
                raise ValueError(f"partition {name!r} -> {relation!r}: both are non-empty strings")
        self.dsn = dsn
        self.location = redact(dsn)
        self.xid_column = xid_column
        self.id_column = id_column
        self.columns = tuple(columns)
        self.page_size = page_size
        self.statement_timeout = float(statement_timeout)
        self.connect_timeout = float(connect_timeout)
        self.order = XID8_ORDER
        self.log = log if log is not None else _LOG
        self._lock = threading.Lock()
        self._conn: psycopg.Connection[Any] | None = None
        #: Pages served so far (all partitions).
        self.fetches = 0
        with self._lock:
            conn = self._connection(setup=True)
            self.database, version = _one(
                conn, "SELECT current_database(), current_setting('server_version_num')::int"
            )
            if version < 130000:
                raise OutboxError(
                    "the outbox provider needs PostgreSQL 13 or later (xid8, "
                    f"pg_current_snapshot); {self.location} runs {version}"
                )
            self.tables = {
                name: self._inspect(conn, relation, check_xid_default)
                for name, relation in mapping.items()
            }
        self._queries = {name: self._page_queries(table) for name, table in self.tables.items()}

    # --- set-up ----------------------------------------------------------------------

    def _connection(self, *, setup: bool = False) -> psycopg.Connection[Any]:
        if self._conn is not None and not self._conn.closed and not self._conn.broken:
            return self._conn
        try:
            conn = psycopg.connect(
                self.dsn, autocommit=True, connect_timeout=max(1, round(self.connect_timeout))
            )
        except psycopg.OperationalError as exc:
            if setup:
                raise OutboxError(
                    f"cannot connect to {self.location}: {_first_line(exc)}; check the URL, "
                    "that the server runs and accepts this role"
                ) from None
            raise ProviderTimeout(f"outbox connection failed: {_first_line(exc)}") from None
        except psycopg.ProgrammingError as exc:
            raise OutboxError(f"not a PostgreSQL URL: {self.location} ({exc})") from None
        conn.execute(
            "SELECT set_config('statement_timeout', %s, false)",
            (str(round(self.statement_timeout * 1000)),),
        )
        conn.isolation_level = IsolationLevel.REPEATABLE_READ
        conn.read_only = True
        self._conn = conn
        return conn

    def _inspect(
        self, conn: psycopg.Connection[Any], relation: str, check_default: bool
    ) -> OutboxTable:
        try:
            params = {"rel": relation, "xid": self.xid_column, "id": self.id_column}
            row = conn.execute(_INSPECT, params).fetchone()
        except psycopg.Error as exc:
            raise OutboxError(f"relation {relation!r}: {_first_line(exc)}") from None
        if row is None or row[0] is None:
            raise OutboxError(
                f"relation {relation!r} does not exist in database {self.database!r} (or is not "
                "visible on this role's search_path); create the outbox table first "
                "(docs/outbox.md section 5) or name it schema-qualified"
            )
        qualified, kind, can_select, xid_type, xid_default, id_type, names, indexed, hidden = row
        if kind not in ("r", "p"):
            raise OutboxError(f"{qualified} is not a table (relkind {kind!r})")
        if not can_select:
            raise OutboxError(f"this role may not SELECT from {qualified}; GRANT SELECT first")
        if hidden:
            raise OutboxError(
                f"row-level security applies to this role on {qualified}: rows it cannot see "
                "would be covered by the claim and never read; read as a role with BYPASSRLS "
                "(or the owner, without FORCE ROW LEVEL SECURITY)"
            )
        if xid_type is None:
            raise OutboxError(
                f"{qualified} has no column {self.xid_column!r}; add it: ALTER TABLE {qualified} "
                f"ADD COLUMN {self.xid_column} xid8 NOT NULL DEFAULT pg_current_xact_id()"
            )
        if xid_type != "xid8":
            raise OutboxError(
                f"{qualified}.{self.xid_column} is {xid_type}, not xid8: a 32-bit xid wraps "
                "around and cannot order transactions across epochs"
            )
        if check_default and (xid_default or "").strip() != "pg_current_xact_id()":
            raise OutboxError(
                f"{qualified}.{self.xid_column} has default {xid_default or 'none'}; it must be "
                "DEFAULT pg_current_xact_id() (or pass check_xid_default=False if a trigger "
                "sets it to pg_current_xact_id() on every insert)"
            )
        if id_type is None:
            raise OutboxError(f"{qualified} has no column {self.id_column!r} (the unique row id)")
        missing = [c for c in self.columns if c not in set(names)]
        if missing:
            raise OutboxError(f"{qualified} has no column(s) {', '.join(map(repr, missing))}")
        if not indexed:
            columns = f"({self.xid_column}, {self.id_column})"
            self.log.warning(
                "%s has no index on %s: every page sorts the decided rows; CREATE INDEX ON %s %s",
                qualified,
                columns,
                qualified,
                columns,
            )
        return OutboxTable(relation, str(qualified), str(id_type), bool(indexed))

    def _page_queries(self, table: OutboxTable) -> dict[str, sql.Composed]:
        """The three page statements of ``table``: from the start, after a row, at an xid."""
        xid, rid = sql.Identifier(self.xid_column), sql.Identifier(self.id_column)
        wanted = sql.SQL(", ").join(
            [
                sql.SQL("t.{}::text").format(xid),
                sql.SQL("t.{}::text").format(rid),
                *(sql.SQL("t.{}").format(sql.Identifier(c)) for c in self.columns),
            ]
        )
        bounds = {
            "start": sql.SQL(""),
            "after": sql.SQL(" AND ({x}, {i}) > (%(xid)s::xid8, %(id)s::{t})").format(
                x=sql.SQL("t.{}").format(xid),
                i=sql.SQL("t.{}").format(rid),
                t=sql.SQL(table.id_type),
            ),
            "at": sql.SQL(" AND t.{} >= %(xid)s::xid8").format(xid),
        }
        return {
            name: sql.SQL(
                "SELECT s.xmin::text, r.* "
                "FROM (SELECT pg_snapshot_xmin(pg_current_snapshot()) AS xmin) s "
                "LEFT JOIN LATERAL (SELECT {wanted} FROM {rel} t WHERE t.{x} < s.xmin{bound} "
                "ORDER BY t.{x}, t.{i} LIMIT %(limit)s) r ON true"
            ).format(wanted=wanted, rel=sql.SQL(table.qualified), x=xid, i=rid, bound=bound)
            for name, bound in bounds.items()
        }

    # --- the Provider protocol ----------------------------------------------------------

    @property
    def partitions(self) -> tuple[str, ...]:
        return tuple(self.tables)

    @property
    def scope(self) -> str:
        """The query scope: the database and the relations read (another set is another scope)."""
        relations = ",".join(sorted(t.qualified for t in self.tables.values()))
        return f"postgres-outbox:{self.database}:{relations}"

    def membership(self, epoch: int = 1) -> Membership:
        """Every partition on :data:`XID8_ORDER`: one order, so one scalar frontier."""
        return Membership(
            epoch=epoch,
            scope=self.scope,
            partitions={p: XID8_ORDER.name for p in self.tables},
            orders={XID8_ORDER.name: XID8_ORDER},
        )

    def fetch_page(self, partition: str, token: str | None) -> Page:
        """The next decided rows of ``partition`` after ``token`` and the snapshot's claim."""
        if partition not in self.tables:
            raise InvalidValue("partition", partition, "not a partition of this outbox")
        position = None if token is None else decode_token(partition, token)
        xmin, rows = self._read(partition, position)
        if position is not None and (
            position.xid > xmin or (position.row_id is not None and position.xid >= xmin)
        ):
            raise OutboxError(
                f"the token of {partition} stands at xid {position.xid} but this server's "
                f"snapshot xmin is {xmin}: it was issued by another transaction history (a "
                "restored dump, another cluster, a standby that lags); start a new stream or "
                "epoch for this server"
            )
        self.fetches += 1
        return build_page(partition, xmin, rows, self.page_size)

    def _read(self, partition: str, position: Position | None) -> tuple[int, list[OutboxRow]]:
        """One REPEATABLE READ READ ONLY transaction: the snapshot's xmin and the rows below it."""
        queries = self._queries[partition]
        params: dict[str, object] = {"limit": self.page_size + 1}
        if position is None:
            query = queries["start"]
        else:
            params["xid"] = str(position.xid)
            if position.row_id is None:
                query = queries["at"]
            else:
                query = queries["after"]
                params["id"] = position.row_id
        with self._lock:
            try:
                conn = self._connection()
                with conn.transaction():
                    found = conn.execute(query, params).fetchall()
            except (psycopg.OperationalError, pg_errors.QueryCanceled) as exc:
                self._discard()
                raise ProviderTimeout(f"outbox fetch of {partition}: {_first_line(exc)}") from None
            except psycopg.Error as exc:
                raise OutboxError(
                    f"reading {self.tables[partition].qualified}: {_first_line(exc)}"
                ) from None
        xmin = int(found[0][0])
        rows = [
            OutboxRow(int(r[1]), str(r[2]), tuple(zip(self.columns, r[3:], strict=True)))
            for r in found
            if r[1] is not None
        ]
        return xmin, rows

    def _discard(self) -> None:
        if self._conn is not None:
            try:
                self._conn.close()
            finally:
                self._conn = None

    # --- diagnostics and set-up helpers -----------------------------------------------

    def snapshot_xmin(self) -> int:
        """The xmin of a fresh snapshot: the claim an empty page would make now."""
        with self._lock:
            try:
                conn = self._connection()
                with conn.transaction():
                    row = _one(conn, "SELECT pg_snapshot_xmin(pg_current_snapshot())::text")
            except (psycopg.OperationalError, pg_errors.QueryCanceled) as exc:
                self._discard()
                raise ProviderTimeout(f"reading the snapshot: {_first_line(exc)}") from None
        return int(row[0])

    def holders(self, limit: int = 3) -> list[Holder]:
        """The oldest transactions holding an xid (backends and prepared ones), oldest first.

        These hold the snapshot's xmin, and so every partition's claim, back.
        Other roles' queries show as ``<insufficient privilege>`` unless this
        role has ``pg_read_all_stats``.
        """
        with self._lock:
            conn = self._connection()
            with conn.transaction():
                found = conn.execute(_HOLDERS, {"limit": limit}).fetchall()
        return [
            Holder(str(k), str(w), str(x), int(a), str(r), str(s), str(d), str(q))
            for k, w, x, a, r, s, d, q in found
        ]

    @staticmethod
    def partitions_of(dsn: str, parent: str) -> dict[str, str]:
        """The partitions of the partitioned table ``parent``, each named after its relation.

        Hash partitions (``PARTITION BY HASH``) are the usual case; each child is
        read as one partition. Raises :class:`OutboxError` when ``parent`` does
        not exist or has no partitions.
        """
        try:
            with psycopg.connect(dsn, autocommit=True, connect_timeout=10) as conn:
                found = conn.execute(_CHILDREN, {"parent": parent}).fetchall()
        except psycopg.Error as exc:
            raise OutboxError(f"listing the partitions of {parent!r}: {_first_line(exc)}") from None
        if not found:
            raise OutboxError(
                f"{parent!r} is not a partitioned table with partitions in this database; "
                f"for a plain table, pass the mapping yourself: {{'main': {parent!r}}} "
                "(one partition named main, read from that table)"
            )
        return {str(name): str(name) for (name,) in found}

    def close(self) -> None:
        with self._lock:
            self._discard()

    def __enter__(self) -> PostgresOutbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _one(conn: psycopg.Connection[Any], query: str) -> tuple[Any, ...]:
    row = conn.execute(query).fetchone()
    assert row is not None
    return tuple(row)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


_INSPECT = """
SELECT c.oid::regclass::text, c.relkind::text, has_table_privilege(c.oid, 'SELECT'),
    format_type(ax.atttypid, ax.atttypmod), pg_get_expr(d.adbin, d.adrelid),
    format_type(ai.atttypid, ai.atttypmod),
    ARRAY(SELECT a.attname::text FROM pg_attribute a
          WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped),
    EXISTS (SELECT 1 FROM pg_index i
            WHERE i.indrelid = c.oid AND i.indnatts >= 2
              AND i.indkey[0] = ax.attnum AND i.indkey[1] = ai.attnum),
    c.relrowsecurity
        AND NOT (SELECT r.rolsuper OR r.rolbypassrls FROM pg_roles r WHERE r.rolname = current_user)
        AND (c.relforcerowsecurity OR NOT pg_has_role(c.relowner, 'USAGE'))
FROM pg_class c
LEFT JOIN pg_attribute ax ON ax.attrelid = c.oid AND ax.attname = %(xid)s
    AND ax.attnum > 0 AND NOT ax.attisdropped
LEFT JOIN pg_attrdef d ON d.adrelid = c.oid AND d.adnum = ax.attnum
LEFT JOIN pg_attribute ai ON ai.attrelid = c.oid AND ai.attname = %(id)s
    AND ai.attnum > 0 AND NOT ai.attisdropped
WHERE c.oid = to_regclass(%(rel)s)
"""

_HOLDERS = """
SELECT * FROM (
    SELECT 'backend', pid::text, backend_xid::text, age(backend_xid),
        coalesce((now() - xact_start)::text, ''), coalesce(state, ''),
        coalesce(datname::text, ''), coalesce(left(query, 120), '')
    FROM pg_stat_activity WHERE backend_xid IS NOT NULL
    UNION ALL
    SELECT 'prepared', gid, transaction::text, age(transaction),
        (now() - prepared)::text, 'prepared', database::text, ''
    FROM pg_prepared_xacts
) h ORDER BY 4 DESC LIMIT %(limit)s
"""

_CHILDREN = """
SELECT c.oid::regclass::text FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
WHERE i.inhparent = to_regclass(%(parent)s) ORDER BY c.relname
"""
