"""The judge's reading of cuts: downsets, and their order (docs/semantics.md section 2).

Every function here is stated over downsets, case by case, and never through a
normalising sort key (the implementation's way):

- ``D(nothing) = {}``, ``D(before x) = {p : p < x}``, ``D(through x) = {p : p <= x}``;
- ``a <= b`` iff ``D(a)`` is inside ``D(b)`` for every set of events the order allows.

On one coordinate ``before x`` is strictly inside ``through x``. For ``x < y``
every downset at ``x`` is inside every downset at ``y``, and the two are equal
in exactly one case: ``through x`` and ``before y`` on an order whose successor
is exact with ``y = x + 1`` (no event can sit strictly between). Strings and
integer orders without an exact successor are dense (section 8), so ``before ""``
still ranks above ``nothing``: the conservative side, never claiming more than
the definition gives.

Cost: :func:`compare` and :func:`covers` are O(1) coordinate comparisons
(O(length) for strings, O(digits) for big integers); :func:`minimum` is O(n).
"""

from __future__ import annotations

from collections.abc import Iterable

from fencepost.judge.values import BadValue, Coordinate, Cut, Endpoint, Order


def covers(order: Order, cut: Cut, position: Coordinate) -> bool:
    """``position`` is in ``D(cut)``."""
    if cut.endpoint is Endpoint.NOTHING:
        return False
    assert cut.at is not None
    below = order.compare(position, cut.at)
    if cut.endpoint is Endpoint.BEFORE:
        return below < 0
    return below <= 0


def _adjacent(order: Order, lower: Coordinate, upper: Coordinate) -> bool:
    """No event can sit strictly between ``lower`` and ``upper`` (``lower < upper``)."""
    return order.successor and isinstance(lower, int) and upper == lower + 1


def compare(order: Order, a: Cut, b: Cut) -> int:
    """-1, 0 or 1 as ``D(a)`` is strictly inside, equal to, or strictly outside ``D(b)``.

    Coordinates are checked against ``order`` first: a string on an integer
    order is a :class:`BadValue`, not an answer.
    """
    for name, cut in (("a", a), ("b", b)):
        if cut.at is not None:
            order.validate(cut.at, f"{name}.at")
    if a.is_nothing or b.is_nothing:
        return (0 if a.is_nothing else 1) - (0 if b.is_nothing else 1)
    assert a.at is not None and b.at is not None
    where = order.compare(a.at, b.at)
    if where == 0:
        rank = {Endpoint.BEFORE: 0, Endpoint.THROUGH: 1}
        return (rank[a.endpoint] > rank[b.endpoint]) - (rank[a.endpoint] < rank[b.endpoint])
    low, high = (a, b) if where < 0 else (b, a)
    assert low.at is not None and high.at is not None
    if (
        low.endpoint is Endpoint.THROUGH
        and high.endpoint is Endpoint.BEFORE
        and _adjacent(order, low.at, high.at)
    ):
        return 0
    return where


def same_claim(order: Order, a: Cut, b: Cut) -> bool:
    """``a`` and ``b`` name the same downset: the same progress claim."""
    return compare(order, a, b) == 0


def at_least(order: Order, a: Cut, b: Cut) -> bool:
    """``a`` claims at least what ``b`` claims."""
    return compare(order, a, b) >= 0


def minimum(order: Order, cuts: Iterable[Cut]) -> Cut:
    """The weakest of ``cuts``, in the documented representation.

    When several equivalent cuts tie (``through x`` and ``before x+1`` on
    offsets), the one with the smaller coordinate is returned, ``through x``,
    whichever partition certified it (docs/semantics.md section 8).
    """
    best: Cut | None = None
    for cut in cuts:
        if best is None:
            best = cut
            continue
        c = compare(order, cut, best)
        if c < 0 or (
            c == 0
            and cut.at is not None
            and best.at is not None
            and order.compare(cut.at, best.at) < 0
        ):
            best = cut
    if best is None:
        raise BadValue("cuts", [], "the minimum of no cuts is undefined")
    return best
