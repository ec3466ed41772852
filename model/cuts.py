"""The model's own cut semantics, written independently of ``fencepost.impl``.

Checking the implementation against the model only means something if the two
were not written as one, so this module re-derives docs/semantics.md section 2 from
downsets in a few lines over tuples.

Coordinates are stored in *half units*: the model coordinate value ``h`` stands
for ``h / 2``. Integer coordinates (where provider claims sit) are even; on a
dense order (no exact successor) events may also sit at odd ``h``, between two
integer coordinates, which is what makes a manufactured successor visibly
unsound: ``through 1`` does not cover an event at 1.5 while ``before 2`` does.

The bottom cut *nothing* is the sentinel :data:`NOTHING` (a :class:`Cut` below
every other), so states never mix ``None`` with tuples and stay totally ordered,
which the explorer's canonical sorting relies on.
"""

from __future__ import annotations

from collections.abc import Iterable
from fractions import Fraction
from typing import NamedTuple

#: Endpoint kinds. ``before x`` covers positions strictly below x, ``through x``
#: also covers x itself. Plain ints keep states cheap to hash and sort.
BEFORE = 0
THROUGH = 1

KIND_NAMES = ("before", "through")


class Cut(NamedTuple):
    """A certified boundary: a coordinate (in half units) and an endpoint kind.

    ``Cut(2, BEFORE)`` is ``before 1``; ``Cut(2, THROUGH)`` is ``through 1``;
    ``Cut(3, THROUGH)`` is ``through 1.5`` (only meaningful on a dense order).
    """

    half: int
    kind: int

    def __str__(self) -> str:
        if self.half < 0:
            return "nothing"
        return f"{KIND_NAMES[self.kind]} {coordinate_text(self.half)}"


#: The bottom cut: no coverage certified yet. ``D(nothing) = {}``.
NOTHING = Cut(-1, BEFORE)


def coordinate_text(half: int) -> str:
    """Render a half-unit coordinate in coordinate units: ``2 -> "1"``, ``3 -> "1.5"``."""
    return str(half // 2) if half % 2 == 0 else f"{half / 2:g}"


def to_half(coordinate: int | float | Fraction) -> int:
    """Convert a coordinate (an integer or a multiple of 0.5) to half units.

    Raises ``ValueError`` naming the value when it is not a whole multiple of 0.5.
    """
    doubled = Fraction(coordinate) * 2
    if doubled.denominator != 1:
        raise ValueError(
            f"coordinate {coordinate!r} is not a multiple of 0.5; the model places events "
            "at integer coordinates or half-way between two of them"
        )
    return int(doubled)


def before(coordinate: int | float | Fraction) -> Cut:
    """``before x``: every position strictly less than ``x``."""
    return Cut(to_half(coordinate), BEFORE)


def through(coordinate: int | float | Fraction) -> Cut:
    """``through x``: every position less than or equal to ``x``."""
    return Cut(to_half(coordinate), THROUGH)


def rank(cut: Cut, successor: bool) -> int:
    """An integer that orders cuts exactly as their downsets are ordered by inclusion.

    On a dense order every cut is distinct: ``rank = 2*half + kind``, so
    ``through x < before y`` for every ``y > x`` (an event may sit between them).
    On an order with an exact successor (integer coordinates only, ``half`` even)
    ``through x`` and ``before x+1`` hold exactly the same positions, so both get
    ``half + 2*kind``. :data:`NOTHING` (half -1) falls below every cut by the same
    formulas (``before 0`` admits negative coordinates in principle, so it is not
    *nothing*, though it holds no position the model places).
    """
    if successor:
        return cut.half + 2 * cut.kind
    return 2 * cut.half + cut.kind


def covers(cut: Cut, half: int) -> bool:
    """Whether an event at ``half`` (never negative) lies in the downset ``D(cut)``."""
    return half < cut.half or (cut.kind == THROUGH and half == cut.half)


def compare(a: Cut, b: Cut, successor: bool) -> int:
    """-1, 0 or 1 as ``D(a)`` is a strict subset of, equal to, or a strict superset of ``D(b)``."""
    ra, rb = rank(a, successor), rank(b, successor)
    return (ra > rb) - (ra < rb)


def minimum(cuts: Iterable[Cut], successor: bool) -> Cut:
    """The earliest cut, with the documented tie rule.

    When equivalent cuts tie for the minimum (``through x == before x+1`` on an
    order with an exact successor) the representation with the *smaller
    coordinate* is published, i.e. ``through x``: it names the last position the
    claim covers, so readers never see a coordinate no partition reported.
    An empty vector has no minimum and yields *nothing*.
    """
    best = NOTHING
    best_key: tuple[int, int] | None = None
    for cut in cuts:
        key = (rank(cut, successor), cut.half)
        if best_key is None or key < best_key:
            best, best_key = cut, key
    return best


def successor_cut(cut: Cut) -> Cut:
    """``before x+1`` built from ``through x``: sound only on an order with an exact successor.

    The model uses it in exactly one place, the ``epsilon`` mutant, which
    manufactures it on a dense order where it is visibly unsound.
    """
    return Cut(cut.half + 2, BEFORE) if cut.kind == THROUGH else cut


def integer_cuts(coordinates: int) -> tuple[Cut, ...]:
    """The cuts providers claim in the model, in ascending order.

    Both endpoint kinds at each integer coordinate ``0 .. coordinates-1``.
    """
    return tuple(Cut(2 * x, kind) for x in range(coordinates) for kind in (BEFORE, THROUGH))
