"""The SQLite store's schema and how it holds values.

:data:`MIGRATIONS` are applied in order at open (``PRAGMA user_version`` counts
them) inside one transaction; :func:`encode_cut` / :func:`decode_cut` store a cut
exactly, whatever its coordinate's size (TEXT with a type tag, never a lossy SQLite
number); :data:`_SUMMARY_QUERY` is the index-only read behind
``read_merge_summary`` (O(log partitions), docs/performance.md). The store's
operations are in :mod:`fencepost.impl.sqlite`.
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Callable

from fencepost.impl.codec import membership_from_json
from fencepost.impl.cutkey import cut_key
from fencepost.impl.cuts import ENDPOINT_BY_NAME, NOTHING, Cut
from fencepost.impl.errors import InvalidValue
from fencepost.impl.merge import DETAIL_NAMES
from fencepost.impl.stores import StoreOpenError, check_counter

#: ``PRAGMA application_id`` of a fencepost store ("FPST"): tells our files from others'.
APPLICATION_ID = 0x46505354

#: A data step of a migration: runs in the migration's transaction; ``path`` names the file
#: in a :class:`StoreOpenError` when the stored data cannot be migrated.
DataStep = Callable[[sqlite3.Connection, str], None]

#: Schema migrations, applied in order; migration ``i`` brings ``user_version`` to ``i + 1``.
#: Each step is an SQL statement or a :data:`DataStep`. Append new steps; never edit a
#: released one.
MIGRATIONS: tuple[tuple[str | DataStep, ...], ...] = (
    (
        """CREATE TABLE memberships (
            stream TEXT NOT NULL,
            epoch INTEGER NOT NULL CHECK (epoch >= 0),
            body TEXT NOT NULL,
            PRIMARY KEY (stream, epoch)
        ) WITHOUT ROWID""",
        """CREATE TABLE publications (
            stream TEXT PRIMARY KEY,
            epoch INTEGER NOT NULL CHECK (epoch >= 0),
            cut_kind TEXT NOT NULL CHECK (cut_kind IN ('nothing', 'before', 'through')),
            cut_type TEXT CHECK (cut_type IN ('int', 'int16', 'str')),
            cut_at TEXT,
            revision INTEGER NOT NULL CHECK (revision >= 0),
            op_id TEXT
        ) WITHOUT ROWID""",
        """CREATE TABLE checkpoints (
            stream TEXT NOT NULL,
            epoch INTEGER NOT NULL,
            partition TEXT NOT NULL,
            cut_kind TEXT NOT NULL CHECK (cut_kind IN ('nothing', 'before', 'through')),
            cut_type TEXT CHECK (cut_type IN ('int', 'int16', 'str')),
            cut_at TEXT,
            token TEXT,
            generation INTEGER NOT NULL CHECK (generation >= 1),
            scope TEXT NOT NULL,
            finality TEXT NOT NULL CHECK (finality IN ('final', 'provisional')),
            PRIMARY KEY (stream, epoch, partition)
        ) WITHOUT ROWID""",
        """CREATE TABLE outcomes (
            stream TEXT NOT NULL,
            event_id TEXT NOT NULL,
            outcome TEXT NOT NULL,
            PRIMARY KEY (stream, event_id)
        ) WITHOUT ROWID""",
    ),
    # 2: what read_merge_summary probes instead of reading every checkpoint.
    (
        # The cut's sort key (fencepost.impl.cutkey: byte order is the cut order, ties
        # broken by the published representation) and whether the scope is the epoch's.
        "ALTER TABLE checkpoints ADD COLUMN sort_key BLOB",
        "ALTER TABLE checkpoints ADD COLUMN scope_ok INTEGER CHECK (scope_ok IN (0, 1))",
        # Members of an epoch without a checkpoint yet: written with the membership,
        # deleted by the member's first checkpoint write, in the same transaction.
        """CREATE TABLE missing_checkpoints (
            stream TEXT NOT NULL,
            epoch INTEGER NOT NULL,
            partition TEXT NOT NULL,
            PRIMARY KEY (stream, epoch, partition)
        ) WITHOUT ROWID""",
        "CREATE INDEX checkpoints_by_cut ON checkpoints (stream, epoch, sort_key)",
        # The current epoch without touching membership bodies (O(partitions) each: a
        # lookup in the table itself walks the body's overflow pages).
        "CREATE INDEX memberships_by_epoch ON memberships (stream, epoch)",
        "CREATE INDEX checkpoints_off_scope ON checkpoints (stream, epoch, partition) "
        "WHERE scope_ok = 0",
        "CREATE INDEX checkpoints_provisional ON checkpoints (stream, epoch, partition) "
        "WHERE finality = 'provisional'",
        lambda db, path: _index_existing_checkpoints(db, path),
    ),
)

SCHEMA_VERSION = len(MIGRATIONS)

#: Names of offending members a summary carries (fencepost.impl.merge.MergeSummary).
_SUMMARY_NAMES = DETAIL_NAMES + 1

#: The stream's existence and current (highest) epoch, from indexes only: reading the
#: memberships table itself would walk an O(partitions) body.
_CURRENT_EPOCH_QUERY = (
    "SELECT EXISTS (SELECT 1 FROM publications WHERE stream = ?1), "
    "(SELECT max(epoch) FROM memberships INDEXED BY memberships_by_epoch WHERE stream = ?1)"
)

#: The summary read: four index probes in ONE statement, hence one snapshot of the file.
#: ``INDEXED BY`` pins each probe to its index: a scan would cost O(partitions).
#: Row tags: m missing, s another scope, p provisional, c the least cut.
_SUMMARY_QUERY = f"""
SELECT 'm', partition, NULL, NULL FROM (
    SELECT partition FROM missing_checkpoints WHERE stream = ?1 AND epoch = ?2
    ORDER BY partition LIMIT {_SUMMARY_NAMES})
UNION ALL SELECT 's', partition, NULL, NULL FROM (
    SELECT partition FROM checkpoints INDEXED BY checkpoints_off_scope
    WHERE stream = ?1 AND epoch = ?2 AND scope_ok = 0
    ORDER BY partition LIMIT {_SUMMARY_NAMES})
UNION ALL SELECT 'p', partition, NULL, NULL FROM (
    SELECT partition FROM checkpoints INDEXED BY checkpoints_provisional
    WHERE stream = ?1 AND epoch = ?2 AND finality = 'provisional'
    ORDER BY partition LIMIT {_SUMMARY_NAMES})
UNION ALL SELECT 'c', cut_kind, cut_type, cut_at FROM (
    SELECT cut_kind, cut_type, cut_at FROM checkpoints INDEXED BY checkpoints_by_cut
    WHERE stream = ?1 AND epoch = ?2 ORDER BY sort_key LIMIT 1)
"""


def _index_existing_checkpoints(db: sqlite3.Connection, path: str) -> None:
    """Migration 2's data step: sort keys, scope flags and missing members of older data.

    A row that cannot be read refuses the migration (nothing is changed: the
    migration is one transaction) with a :class:`StoreOpenError` naming it.
    """
    memberships = db.execute("SELECT stream, epoch, body FROM memberships").fetchall()
    for stream, epoch, body in memberships:
        where = f"stream {stream!r} epoch {epoch}"
        try:
            membership = membership_from_json(json.loads(body), "body")
        except (ValueError, TypeError, RecursionError) as exc:
            raise StoreOpenError(
                path, f"the membership of {where} cannot be read ({exc}): the file is corrupt"
            ) from None
        rows = db.execute(
            "SELECT partition, cut_kind, cut_type, cut_at, scope FROM checkpoints "
            "WHERE stream = ? AND epoch = ?",
            (stream, epoch),
        ).fetchall()
        present = set()
        for partition, kind, tag, at, scope in rows:
            if partition not in membership.partitions:
                raise StoreOpenError(
                    path,
                    f"{where} has a checkpoint of {partition!r}, which is not a member: "
                    "the file is corrupt",
                )
            present.add(partition)
            order = membership.order_of(partition)
            try:
                cut = decode_cut(kind, tag, at).validated(order)
            except ValueError as exc:
                raise StoreOpenError(
                    path, f"the checkpoint of {partition!r} in {where} cannot be read ({exc})"
                ) from None
            db.execute(
                "UPDATE checkpoints SET sort_key = ?, scope_ok = ? "
                "WHERE stream = ? AND epoch = ? AND partition = ?",
                (cut_key(order, cut), int(scope == membership.scope), stream, epoch, partition),
            )
        db.executemany(
            "INSERT INTO missing_checkpoints (stream, epoch, partition) VALUES (?, ?, ?)",
            [(stream, epoch, p) for p in membership.partitions if p not in present],
        )


_OUTCOME_CHUNK = 500


def _counter(value: int, field: str) -> int:
    return check_counter(value, field, "SQLite")


def encode_cut(cut: Cut) -> tuple[str, str | None, str | None]:
    """``(kind, type tag, text)`` storing ``cut`` exactly, whatever its coordinate's size."""
    kind = cut.endpoint._value_  # the member's own attribute: no enum lookup (impl/cuts.py)
    if kind == "nothing":
        return ("nothing", None, None)
    at = cut.at
    if type(at) is str:
        return (kind, "str", at)
    assert type(at) is int
    try:
        return (kind, "int", str(at))
    except ValueError:  # past sys.get_int_max_str_digits(): hexadecimal has no limit
        return (kind, "int16", format(at, "x"))


def decode_cut(kind: str, tag: str | None, text: str | None) -> Cut:
    """The inverse of :func:`encode_cut`; :class:`InvalidValue` naming the column when the
    stored value is not one :func:`encode_cut` writes (a corrupt row)."""
    if kind == "nothing":
        return NOTHING
    endpoint = _ENDPOINTS.get(kind)
    if endpoint is None:
        raise InvalidValue("cut_kind", kind, "not a cut kind: nothing, before or through")
    if type(text) is not str:
        raise InvalidValue("cut_at", text, f"a cut of kind {kind!r} needs its coordinate as text")
    if tag == "str":
        return Cut(endpoint, text)
    try:
        if tag == "int":
            return Cut(endpoint, int(text))
        if tag == "int16":
            return Cut(endpoint, int(text, 16))
    except ValueError:
        raise InvalidValue("cut_at", text, f"not an integer of type tag {tag!r}") from None
    raise InvalidValue("cut_type", tag, "an unknown type tag (int, int16 or str)")


#: The stored kinds of a cut with a coordinate (``nothing`` has none).
_ENDPOINTS = {name: e for name, e in ENDPOINT_BY_NAME.items() if name != "nothing"}


def _tables_of(version: int) -> list[str]:
    """The tables the first ``version`` migrations create."""
    return [
        m.group(1)
        for step in MIGRATIONS[:version]
        for statement in step
        if isinstance(statement, str) and (m := re.match(r"\s*CREATE TABLE (\w+)", statement))
    ]
