"""Byte keys whose plain byte order is the cut order: what a store's index sorts by.

A store finds the minimum cut of an epoch with one index probe (``ORDER BY
sort_key LIMIT 1``) instead of reading every checkpoint. SQLite compares BLOBs
and PostgreSQL compares ``bytea`` byte by byte (``memcmp``), so the key of a
cut is built so that, for two cuts ``a`` and ``b`` of one order:

- ``key(a) < key(b)`` when ``D(a)`` is strictly inside ``D(b)``
  (:func:`fencepost.impl.cuts.compare_cuts` says -1);
- among equivalent cuts (``through x`` and ``before x+1`` on an order with an
  exact successor) the one with the smaller coordinate, ``through x``, has the
  smaller key: the published representation of docs/semantics.md section 8, the
  same choice as :func:`fencepost.impl.cuts.minimum`;
- ``key(a) == key(b)`` only when ``a == b``.

So the first row of an index on ``(stream, epoch, sort_key)`` is exactly what
``minimum`` returns over the epoch's checkpoints. Keys of different orders are
never compared: a membership with several orders is withheld as incomparable
before any minimum is looked at.

Layout (every part is self-delimiting, so what follows it never changes how two
keys compare):

- ``nothing``: ``00``.
- otherwise ``01``, the coordinate, then one tie byte: ``00`` for ``before``,
  ``01`` for ``through``. On an order with an exact successor this is already
  right: ``(x, before) < (x, through) < (x+1, before)``, and ``through x`` (the
  same claim as ``before x+1``) sorts first, as the representation rule wants;
  no integer sits between ``x`` and ``x+1`` to break the tie the other way.
- an integer of any size: ``01``, its magnitude's byte length (4 bytes,
  big-endian), the magnitude (big-endian, minimal) when it is >= 0; ``00``, the
  complement of the length, the complemented magnitude when it is negative.
- a string: its UTF-8 bytes (whose byte order is code-point order, characters
  above U+FFFF included), with ``00`` written as ``00 FF``, then ``00 00``.

Cost: O(size of the coordinate); nothing here depends on the number of partitions.
"""

from __future__ import annotations

from fencepost.impl.cuts import Cut
from fencepost.impl.orders import Order

_NOTHING_KEY = b"\x00"
_LENGTH_BYTES = 4
_MAX_LENGTH = 0xFFFF_FFFF  # the largest length in _LENGTH_BYTES bytes


def integer_key(value: int) -> bytes:
    """``value`` as bytes whose byte order is numeric order, for integers of any size."""
    magnitude = -value if value < 0 else value
    size = (magnitude.bit_length() + 7) // 8
    if size > _MAX_LENGTH:  # pragma: no cover - 4 GiB integers are not coordinates
        raise ValueError("an integer coordinate of more than 2**32 bytes has no sort key")
    if value >= 0:
        return b"\x01" + size.to_bytes(_LENGTH_BYTES, "big") + magnitude.to_bytes(size, "big")
    flipped = ((1 << (8 * size)) - 1 - magnitude).to_bytes(size, "big")  # every byte 255 - b
    return b"\x00" + (_MAX_LENGTH - size).to_bytes(_LENGTH_BYTES, "big") + flipped


def string_key(value: str) -> bytes:
    """``value`` as bytes whose byte order is code-point order, terminated."""
    return value.encode("utf-8").replace(b"\x00", b"\x00\xff") + b"\x00\x00"


def cut_key(order: Order, cut: Cut) -> bytes:
    """The sort key of ``cut`` (module docstring); ``cut`` must fit ``order``.

    The key does not depend on whether ``order`` has an exact successor (see the
    module docstring); ``order`` is taken so that a future order kind can differ.
    """
    kind = cut.endpoint._value_  # the member's own attribute: no enum lookup (impl/cuts.py)
    if kind == "nothing":
        return _NOTHING_KEY
    at = cut.at
    tie = b"\x01" if kind == "through" else b"\x00"
    if type(at) is int:
        return b"\x01" + integer_key(at) + tie
    assert type(at) is str
    return b"\x01" + string_key(at) + tie
