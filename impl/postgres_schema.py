"""The PostgreSQL store's schema: numbered migrations and the lock that serializes them.

Migrations are applied at open inside one transaction holding an advisory lock
derived from the schema name, so concurrent starters never race: the first
applies, the others wait and find the work done. A schema written by a newer
fencepost is refused (:mod:`fencepost.impl.postgres`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Any

import psycopg

from fencepost.impl.codec import membership_from_json
from fencepost.impl.cutkey import cut_key
from fencepost.impl.postgres_values import _str, decode_cut
from fencepost.impl.stores import (
    StoreOpenError,
)

#: A data step of a migration: ``(connection, quoted schema, location)``, run in the
#: migration's transaction; ``location`` names the store in a :class:`StoreOpenError`.
DataStep = Callable[[psycopg.Connection[Any], str, str], None]

#: Schema migrations: ``(version, description, statements)``; ``{s}`` is the quoted
#: schema name; a statement may be a :data:`DataStep`. Append new steps; never edit a
#: released one.
MIGRATIONS: tuple[tuple[int, str, tuple[str | DataStep, ...]], ...] = (
    (
        1,
        "streams, memberships, members, publications, checkpoints, outcomes",
        (
            """CREATE TABLE {s}.streams (
                stream bytea PRIMARY KEY,
                initial_epoch numeric NOT NULL
                    CHECK (initial_epoch >= 0 AND scale(initial_epoch) = 0),
                current_epoch numeric NOT NULL CHECK (current_epoch >= initial_epoch)
            )""",
            """CREATE TABLE {s}.memberships (
                stream bytea NOT NULL REFERENCES {s}.streams (stream),
                epoch numeric NOT NULL CHECK (epoch >= 0 AND scale(epoch) = 0),
                body text NOT NULL,
                PRIMARY KEY (stream, epoch)
            )""",
            # One row per member: what checkpoints reference, so the database itself
            # refuses a checkpoint whose epoch has no durable membership naming it, or
            # whose coordinate type does not fit the member's order.
            """CREATE TABLE {s}.members (
                stream bytea NOT NULL,
                epoch numeric NOT NULL,
                partition bytea NOT NULL,
                coordinate text NOT NULL CHECK (coordinate IN ('int', 'str')),
                PRIMARY KEY (stream, epoch, partition),
                UNIQUE (stream, epoch, partition, coordinate),
                FOREIGN KEY (stream, epoch) REFERENCES {s}.memberships (stream, epoch)
            )""",
            """CREATE TABLE {s}.publications (
                stream bytea PRIMARY KEY REFERENCES {s}.streams (stream),
                epoch numeric NOT NULL CHECK (epoch >= 0 AND scale(epoch) = 0),
                cut_kind text NOT NULL CHECK (cut_kind IN ('nothing', 'before', 'through')),
                cut_int numeric CHECK (scale(cut_int) = 0),
                cut_str bytea,
                revision bigint NOT NULL CHECK (revision >= 0),
                op_id bytea,
                CHECK ((cut_kind = 'nothing') = (num_nonnulls(cut_int, cut_str) = 0)),
                CHECK (num_nonnulls(cut_int, cut_str) <= 1)
            )""",
            """CREATE TABLE {s}.checkpoints (
                stream bytea NOT NULL,
                epoch numeric NOT NULL,
                partition bytea NOT NULL,
                cut_kind text NOT NULL CHECK (cut_kind IN ('nothing', 'before', 'through')),
                cut_int numeric CHECK (scale(cut_int) = 0),
                cut_str bytea,
                coordinate text GENERATED ALWAYS AS (
                    CASE WHEN cut_int IS NOT NULL THEN 'int'
                         WHEN cut_str IS NOT NULL THEN 'str' END) STORED,
                token bytea,
                generation bigint NOT NULL CHECK (generation >= 1),
                scope bytea NOT NULL,
                finality text NOT NULL CHECK (finality IN ('final', 'provisional')),
                write_id uuid NOT NULL,
                PRIMARY KEY (stream, epoch, partition),
                CONSTRAINT checkpoint_member FOREIGN KEY (stream, epoch, partition)
                    REFERENCES {s}.members (stream, epoch, partition),
                CONSTRAINT checkpoint_order FOREIGN KEY (stream, epoch, partition, coordinate)
                    REFERENCES {s}.members (stream, epoch, partition, coordinate),
                CHECK ((cut_kind = 'nothing') = (num_nonnulls(cut_int, cut_str) = 0)),
                CHECK (num_nonnulls(cut_int, cut_str) <= 1)
            )""",
            """CREATE TABLE {s}.outcomes (
                stream bytea NOT NULL REFERENCES {s}.streams (stream),
                event_id bytea NOT NULL,
                outcome bytea NOT NULL,
                PRIMARY KEY (stream, event_id)
            )""",
        ),
    ),
    (
        2,
        "indexes read_merge_summary probes: cut sort keys, scope flags, missing members",
        (
            # The cut's sort key (fencepost.impl.cutkey: byte order is the cut order, ties
            # broken by the published representation) and whether the scope is the epoch's.
            "ALTER TABLE {s}.checkpoints ADD COLUMN sort_key bytea, ADD COLUMN scope_ok boolean",
            # Members of an epoch without a checkpoint yet: written with the membership,
            # deleted by the statement that writes the member's first checkpoint.
            """CREATE TABLE {s}.missing_checkpoints (
                stream bytea NOT NULL,
                epoch numeric NOT NULL,
                partition bytea NOT NULL,
                PRIMARY KEY (stream, epoch, partition),
                FOREIGN KEY (stream, epoch, partition)
                    REFERENCES {s}.members (stream, epoch, partition)
            )""",
            # A B-tree entry holds at most ~2.7 kB, and a coordinate has any size: the index
            # holds the key's first 1 kB; ties of that prefix are ordered by the whole key.
            # Partial on a predicate only the summary states (every row has a sort key), so
            # the planner can never pick it for a lookup by (stream, epoch, partition), even
            # on a table that was never analyzed: that would scan the epoch for one row.
            "CREATE INDEX checkpoints_by_cut ON {s}.checkpoints "
            "(stream, epoch, substring(sort_key FROM 1 FOR 1024)) WHERE sort_key IS NOT NULL",
            "CREATE INDEX checkpoints_off_scope ON {s}.checkpoints (stream, epoch, partition) "
            "WHERE NOT scope_ok",
            "CREATE INDEX checkpoints_provisional ON {s}.checkpoints (stream, epoch, partition) "
            "WHERE finality = 'provisional'",
            lambda conn, s, location: _index_existing_checkpoints(conn, s, location),
        ),
    ),
)


def _index_existing_checkpoints(conn: psycopg.Connection[Any], s: str, location: str) -> None:
    """Migration 2's data step: sort keys, scope flags and missing members of older data."""
    memberships = conn.execute(f"SELECT stream, epoch, body FROM {s}.memberships").fetchall()
    for stream, epoch, body in memberships:
        name = _str(stream)
        membership = membership_from_json(json.loads(body), f"memberships[{name}][{epoch}]")
        rows = conn.execute(
            f"SELECT partition, cut_kind, cut_int, cut_str, scope FROM {s}.checkpoints "
            "WHERE stream = %s AND epoch = %s",
            (stream, epoch),
        ).fetchall()
        present = set()
        for partition, kind, at_int, at_str, scope in rows:
            member = _str(partition)
            if member not in membership.partitions:  # pragma: no cover - the foreign key
                raise StoreOpenError(
                    location, f"stream {name!r} epoch {epoch}: checkpoint of non-member {member!r}"
                )
            present.add(member)
            key = cut_key(membership.order_of(member), decode_cut(kind, at_int, at_str))
            conn.execute(
                f"UPDATE {s}.checkpoints SET sort_key = %s, scope_ok = %s "
                "WHERE stream = %s AND epoch = %s AND partition = %s",
                (key, _str(scope) == membership.scope, stream, epoch, partition),
            )
        missing = [p.encode("utf-8") for p in membership.partitions if p not in present]
        if missing:
            conn.execute(
                f"INSERT INTO {s}.missing_checkpoints (stream, epoch, partition) "
                "SELECT %s, %s, p FROM unnest(%s::bytea[]) AS u(p)",
                (stream, epoch, missing),
            )


#: The newest schema version this code knows.
SCHEMA_VERSION = MIGRATIONS[-1][0]


def quote_ident(name: str) -> str:
    """``name`` as a PostgreSQL identifier, quoted (``"a""b"`` for ``a"b``)."""
    return '"' + name.replace('"', '""') + '"'


def _migration_lock_key(schema: str) -> int:
    """A stable signed 64-bit advisory-lock key for migrating ``schema``."""
    digest = hashlib.sha256(f"fencepost-migrate:{schema}".encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)
