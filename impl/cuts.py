"""Cuts: certified coverage boundaries, compared by their downsets.

A cut is ``before x``, ``through x`` or ``nothing`` (docs/semantics.md section 2):

- ``D(before x) = {p : p < x}``: every event strictly before ``x`` is covered;
- ``D(through x) = {p : p <= x}``: events at ``x`` are covered too;
- ``D(nothing) = {}``: no coverage certified yet.

``c1 <= c2`` exactly when ``D(c1)`` is inside ``D(c2)`` for every set of events
the order allows. So at one coordinate ``before x < through x``; and for
``x < y``, ``through x < before y`` unless the order has an exact successor and
``y = succ(x)``, where the two are the same claim. The endpoint kind is part of
the claim: nothing here ever turns ``before x`` into ``through x`` or builds
``before succ(x)`` on an order without an exact successor.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from fencepost.impl.errors import InvalidValue
from fencepost.impl.orders import Coordinate, Order


class Endpoint(Enum):
    """What a cut certifies about events exactly at its coordinate."""

    NOTHING = "nothing"
    BEFORE = "before"
    THROUGH = "through"


# The members as module constants. On Python 3.11 ``Endpoint.NOTHING`` is a lookup
# through the enum's metaclass and ``member.value`` a Python-level property (each about
# 0.2 us, dozens of times per publication attempt); a module global and ``_value_`` (the
# member's own attribute) are a dictionary read. Same objects, same strings.
_NOTHING_KIND = Endpoint.NOTHING
_BEFORE_KIND = Endpoint.BEFORE
_THROUGH_KIND = Endpoint.THROUGH
#: An endpoint by its stored name (``before``/``through``/``nothing``): what a store reads.
ENDPOINT_BY_NAME: dict[str, Endpoint] = {e._value_: e for e in Endpoint}


@dataclass(frozen=True, slots=True)
class Cut:
    """A coverage claim: ``nothing``, ``before at`` or ``through at``.

    Equality here is representational (``through 4`` and ``before 5`` are
    different objects even on an order where they are the same claim); use
    :func:`compare_cuts` or :func:`same_claim` for claim equality.
    """

    endpoint: Endpoint
    at: Coordinate | None = None

    def __post_init__(self) -> None:
        endpoint = self.endpoint
        if endpoint is _NOTHING_KIND:
            if self.at is not None:
                raise InvalidValue("cut.at", self.at, "the nothing cut has no coordinate")
        elif endpoint is not _BEFORE_KIND and endpoint is not _THROUGH_KIND:
            # the three members are every Endpoint there is: anything else is not one
            raise InvalidValue("cut.kind", endpoint, "a cut's kind is before or through")
        elif type(self.at) not in (int, str):
            raise InvalidValue(
                "cut.at", self.at, "a before/through cut needs an int or str coordinate"
            )

    @staticmethod
    def nothing() -> Cut:
        """The bottom cut: no coverage certified."""
        return NOTHING

    @staticmethod
    def before(at: Coordinate) -> Cut:
        """Every event strictly before ``at`` is covered; events at ``at`` are not."""
        return Cut(_BEFORE_KIND, at)

    @staticmethod
    def through(at: Coordinate) -> Cut:
        """Every event at or before ``at`` is covered."""
        return Cut(_THROUGH_KIND, at)

    @property
    def is_nothing(self) -> bool:
        return self.endpoint is _NOTHING_KIND

    def validated(self, order: Order, field: str = "cut") -> Cut:
        """This cut, with its coordinate checked against ``order``."""
        if self.endpoint is not _NOTHING_KIND:
            order.validate(self.at, f"{field}.at")
        return self

    def __str__(self) -> str:
        if self.endpoint is _NOTHING_KIND:
            return "nothing"
        return f"{self.endpoint._value_} {self.at!r}"


NOTHING = Cut(_NOTHING_KIND)


def _key(order: Order, cut: Cut) -> tuple[int, Coordinate | None, int]:
    """A sort key whose order is downset inclusion.

    ``nothing`` sorts first. On an order with an exact successor ``through x``
    is normalised to ``before succ(x)``, so equivalent claims get equal keys.
    Otherwise ``(x, before) < (x, through) < (y, before)`` for ``x < y``, which
    is exactly inclusion of downsets on a dense order.
    """
    if cut.endpoint is _NOTHING_KIND:
        return (0, None, 0)
    assert cut.at is not None
    if order.has_successor:
        at = cut.at if cut.endpoint is _BEFORE_KIND else order.successor(cut.at)
        return (1, at, 0)
    return (1, cut.at, 0 if cut.endpoint is _BEFORE_KIND else 1)


def compare_cuts(order: Order, a: Cut, b: Cut) -> int:
    """-1, 0 or 1 as ``D(a)`` is strictly inside, equal to, or strictly outside ``D(b)``.

    Both cuts are validated against ``order`` first, so a float on an integer
    order or a string on an integer order is refused rather than compared.
    """
    a.validated(order, "a")
    b.validated(order, "b")
    ka, kb = _key(order, a), _key(order, b)
    if ka[0] != kb[0]:
        return -1 if ka[0] < kb[0] else 1
    if ka[0] == 0:
        return 0
    assert ka[1] is not None and kb[1] is not None
    c = order.compare(ka[1], kb[1])
    if c != 0:
        return c
    return (ka[2] > kb[2]) - (ka[2] < kb[2])


def same_claim(order: Order, a: Cut, b: Cut) -> bool:
    """True when ``a`` and ``b`` have the same downset: the same progress claim."""
    return compare_cuts(order, a, b) == 0


def at_least(order: Order, a: Cut, b: Cut) -> bool:
    """True when ``a`` claims at least what ``b`` claims (``D(b)`` inside ``D(a)``)."""
    return compare_cuts(order, a, b) >= 0


def minimum(order: Order, cuts: list[Cut]) -> Cut:
    """The weakest of ``cuts`` (their greatest lower bound: the order is total).

    When equivalent cuts tie for the minimum (``through x`` and ``before x+1`` on
    an order with an exact successor), the representation with the smaller
    coordinate, ``through x``, is returned, whatever the input order: the choice
    depends only on the claims, never on which partition certified them.
    """
    if not cuts:
        raise InvalidValue("cuts", cuts, "the minimum of no cuts is undefined")
    best = cuts[0]
    for cut in cuts[1:]:
        c = compare_cuts(order, cut, best)
        if c < 0 or (c == 0 and _prefer(order, cut, best)):
            best = cut
    return best


def _prefer(order: Order, candidate: Cut, incumbent: Cut) -> bool:
    """Among equivalent cuts, prefer the smaller coordinate (``through x`` over ``before x+1``)."""
    if candidate.endpoint is _NOTHING_KIND or incumbent.endpoint is _NOTHING_KIND:
        return False
    assert candidate.at is not None and incumbent.at is not None
    return order.compare(candidate.at, incumbent.at) < 0
