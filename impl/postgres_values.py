"""How the PostgreSQL store holds values: exact columns, byte for byte.

Integer coordinates and epochs are ``numeric`` (no digit limit short of
PostgreSQL's), string coordinates, tokens and names ``bytea`` holding their UTF-8
bytes (``text`` cannot hold U+0000; ``bytea`` order is code-point order);
revisions and generations ``bigint``; membership bodies ASCII JSON
(docs/postgres.md). Every function here is O(size of the value).
"""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

from fencepost.impl.codec import membership_to_json
from fencepost.impl.cuts import ENDPOINT_BY_NAME, NOTHING, Cut
from fencepost.impl.errors import InvalidValue
from fencepost.impl.records import Checkpoint, Finality, Membership, PublicationRecord
from fencepost.impl.stores import (
    check_counter,
    check_name,
    check_revision,
)

Row = tuple[Any, ...]

# --- values <-> columns --------------------------------------------------------------


def _name(value: object, field: str) -> bytes:
    """A name as stored: its UTF-8 bytes (refused by name when it has none)."""
    return check_name(value, field).encode("utf-8")


def _str(value: bytes | memoryview) -> str:
    return bytes(value).decode("utf-8")


def _epoch(value: object, field: str) -> int:
    return check_revision(value, field)


def _counter(value: int, field: str) -> int:
    return check_counter(value, field, "PostgreSQL")


def encode_cut(cut: Cut) -> tuple[str, Decimal | None, bytes | None]:
    """``(kind, integer coordinate, UTF-8 string coordinate)``: exact for any coordinate."""
    kind = cut.endpoint._value_  # the member's own attribute: no enum lookup (impl/cuts.py)
    if kind == "nothing":
        return ("nothing", None, None)
    if type(cut.at) is int:
        return (kind, Decimal(cut.at), None)
    assert type(cut.at) is str
    return (kind, None, cut.at.encode("utf-8"))


def decode_cut(kind: str, at_int: Decimal | None, at_str: bytes | None) -> Cut:
    """The inverse of :func:`encode_cut`; a value no write makes is an
    :class:`~fencepost.impl.errors.InvalidValue` naming its column (the store reports it
    as :class:`~fencepost.impl.stores.CorruptStore`, as SQLite's does)."""
    if kind == "nothing":
        return NOTHING
    endpoint = ENDPOINT_BY_NAME.get(kind)  # the column's CHECK allows the three kinds only
    if endpoint is None:
        raise InvalidValue("cut_kind", kind, "nothing, before or through")
    if at_int is not None:
        return Cut(endpoint, int(at_int))
    if at_str is not None:
        try:
            return Cut(endpoint, bytes(at_str).decode("utf-8"))
        except UnicodeDecodeError as exc:
            raise InvalidValue("cut_str", bytes(at_str)[:40], f"not UTF-8 ({exc.reason})") from None
    raise InvalidValue("cut_int", None, f"a cut of kind {kind!r} has a coordinate")


def row_key(value: object) -> object:
    """A key column as a row is named in errors: numerics as integers, names as text."""
    if isinstance(value, Decimal) and value == value.to_integral_value():
        return int(value)
    if isinstance(value, (bytes, memoryview)):
        return bytes(value).decode("utf-8", "replace")
    return value


def _record(row: Row) -> PublicationRecord:
    epoch, kind, at_int, at_str, revision, op_id = row
    return PublicationRecord(
        int(epoch),
        decode_cut(kind, at_int, at_str),
        revision,
        None if op_id is None else _str(op_id),
    )


def _checkpoint(row: Row) -> Checkpoint:
    partition, epoch, kind, at_int, at_str, token, generation, scope, finality = row
    return Checkpoint(
        partition=_str(partition),
        cut=decode_cut(kind, at_int, at_str),
        token=None if token is None else _str(token),
        generation=generation,
        scope=_str(scope),
        epoch=int(epoch),
        finality=Finality(finality),
    )


def _membership_body(membership: Membership) -> str:
    # ensure_ascii: the body is plain ASCII, so any name survives the text column.
    return json.dumps(membership_to_json(membership), sort_keys=True, ensure_ascii=True)


def _coordinate_type(membership: Membership, partition: str) -> str:
    return "int" if membership.order_of(partition).kind == "integer" else "str"


_RECORD_COLUMNS = "epoch, cut_kind, cut_int, cut_str, revision, op_id"
_CHECKPOINT_COLUMNS = (
    "partition, epoch, cut_kind, cut_int, cut_str, token, generation, scope, finality"
)
