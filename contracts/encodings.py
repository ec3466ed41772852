"""Coordinate encodings: how a provider writes a position, and the order-preserving decoding."""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta, timezone

from fencepost.contracts.facts import Encoding
from fencepost.impl.errors import InvalidValue
from fencepost.impl.orders import Coordinate, StringOrder

# ---------------------------------------------------------------------------
# Encodings

_DIGITS = re.compile(r"-?[0-9]{1,200}")
_LSN = re.compile(r"([0-9A-Fa-f]{1,8})/([0-9A-Fa-f]{1,8})")
_HLC = re.compile(r"([0-9]{1,19})\.([0-9]{10})")
_RFC3339 = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?([Zz]|[+-]\d{2}:\d{2})"
)


def decode(encoding: Encoding, value: object, field: str = "value") -> Coordinate:
    """Decode an API value to a coordinate; :class:`InvalidValue` names what is wrong.

    Every integer encoding preserves the provider's order: ``a`` before ``b``
    in the provider's order exactly when ``decode(a) < decode(b)``.
    """
    if isinstance(value, bool):
        raise InvalidValue(field, value, f"a bool is not a {encoding.value} value")
    if encoding is Encoding.STRING:
        return StringOrder("decode").validate(value, field)
    if encoding is Encoding.INTEGER:
        if type(value) is int:
            return value
        if type(value) is str and _DIGITS.fullmatch(value):
            return int(value)
        raise InvalidValue(field, value, "an integer or a string of decimal digits is required")
    if encoding is Encoding.LSN:
        m = _LSN.fullmatch(value) if type(value) is str else None
        if m is None:
            raise InvalidValue(field, value, 'an LSN is written "X/Y" with hexadecimal X and Y')
        return (int(m.group(1), 16) << 32) | int(m.group(2), 16)
    if encoding is Encoding.HLC:
        m = _HLC.fullmatch(value) if type(value) is str else None
        if m is None:
            raise InvalidValue(
                field, value, 'an HLC timestamp is written "WALL.LOGICAL" (10 logical digits)'
            )
        return int(m.group(1)) * 10**10 + int(m.group(2))
    if encoding is Encoding.RFC3339:
        return _rfc3339(value, field)
    if encoding is Encoding.BSON_TIMESTAMP:
        t, i = _pair(value, field, ("t", "i"))
        for part, name in ((t, "t"), (i, "i")):
            if not 0 <= part < 2**32:
                raise InvalidValue(f"{field}.{name}", part, "must be in 0..2**32-1")
        return (t << 32) | i
    if encoding is Encoding.PAIR64:
        a, b = _pair(value, field, ("value", "tiebreaker"))
        if not 0 <= b < 2**64:
            raise InvalidValue(f"{field}[1]", b, "the tiebreaker must be in 0..2**64-1")
        return a * 2**64 + b
    raise AssertionError(encoding)  # pragma: no cover - every encoding is handled above


def encode(encoding: Encoding, coordinate: Coordinate) -> str:
    """A coordinate written the way the provider's API writes it (inverse of :func:`decode`).

    Used to show witnesses and examples in the provider's own terms
    (``16/B374D848`` rather than ``98571409480``).
    """
    if encoding is Encoding.STRING or isinstance(coordinate, str):
        return repr(coordinate)
    x = coordinate
    if encoding is Encoding.LSN and 0 <= x < 2**64:
        return f"{x >> 32:X}/{x & 0xFFFFFFFF:X}"
    if encoding is Encoding.HLC and x >= 0:
        return f"{x // 10**10}.{x % 10**10:010d}"
    if encoding is Encoding.RFC3339:
        seconds, nanos = divmod(x, 10**9)
        try:
            moment = datetime.fromtimestamp(seconds, tz=UTC)
        except (OverflowError, OSError, ValueError):
            return str(x)
        fraction = f".{nanos:09d}".rstrip("0") if nanos else ""
        return moment.strftime("%Y-%m-%dT%H:%M:%S") + fraction + "Z"
    if encoding is Encoding.BSON_TIMESTAMP and 0 <= x < 2**64:
        return f"Timestamp({x >> 32}, {x & 0xFFFFFFFF})"
    if encoding is Encoding.PAIR64:
        return f"[{x // 2**64}, {x % 2**64}]"
    return str(x)


def _pair(value: object, field: str, names: tuple[str, str]) -> tuple[int, int]:
    if isinstance(value, Mapping) and set(value) == set(names):
        items = [value[names[0]], value[names[1]]]
    elif isinstance(value, list | tuple) and len(value) == 2:
        items = list(value)
    else:
        raise InvalidValue(
            field,
            value,
            f"a pair [{names[0]}, {names[1]}] (or a table with those keys) is required",
        )
    for k, item in enumerate(items):
        if type(item) is not int:
            raise InvalidValue(f"{field}[{k}]", item, "an integer is required")
    return items[0], items[1]


def _rfc3339(value: object, field: str) -> int:
    if isinstance(value, datetime):  # a TOML offset date-time, already parsed
        if value.tzinfo is None:
            raise InvalidValue(field, value, "a timestamp needs a time zone offset (Z or +hh:mm)")
        return int(value.replace(microsecond=0).timestamp()) * 10**9 + value.microsecond * 1000
    m = _RFC3339.fullmatch(value) if type(value) is str else None
    if m is None:
        raise InvalidValue(
            field, value, 'an RFC 3339 timestamp like "2024-05-01T12:00:00.123456789Z" is required'
        )
    year, month, day, hour, minute, second = (int(g) for g in m.groups()[:6])
    fraction = (m.group(7) or "").ljust(9, "0")
    zone = m.group(8)
    if zone in ("Z", "z"):
        tz = UTC
    else:
        sign = 1 if zone[0] == "+" else -1
        tz = timezone(sign * timedelta(hours=int(zone[1:3]), minutes=int(zone[4:6])))
    try:
        moment = datetime(year, month, day, hour, minute, second, tzinfo=tz)
    except ValueError as exc:
        raise InvalidValue(field, value, f"not a real date and time ({exc})") from None
    return int(moment.timestamp()) * 10**9 + int(fraction)
