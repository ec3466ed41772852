"""The model's own cut semantics (docs/semantics.md section 2), checked against downsets."""

from __future__ import annotations

import itertools

import pytest

from fencepost.model.cuts import (
    BEFORE,
    NOTHING,
    THROUGH,
    Cut,
    before,
    compare,
    covers,
    minimum,
    rank,
    successor_cut,
    through,
    to_half,
)


def _downset(cut: Cut, positions: range) -> frozenset[int]:
    return frozenset(h for h in positions if covers(cut, h))


def test_before_is_weaker_than_through_at_the_same_coordinate() -> None:
    for successor in (True, False):
        assert compare(before(1), through(1), successor) == -1
        assert compare(through(1), before(1), successor) == 1


def test_through_x_equals_before_next_only_with_an_exact_successor() -> None:
    assert compare(through(1), before(2), successor=True) == 0
    assert compare(through(1), before(2), successor=False) == -1


def test_nothing_is_below_every_cut() -> None:
    for successor in (True, False):
        for cut in (before(0), through(0), before(3)):
            assert compare(NOTHING, cut, successor) == -1
    assert str(NOTHING) == "nothing"


def _quarter_downset(cut: Cut) -> frozenset[int]:
    # Positions in quarter units: finer than any cut, as on a dense order.
    edge = 2 * cut.half
    return frozenset(q for q in range(0, 40) if q < edge or (cut.kind == THROUGH and q == edge))


def test_rank_orders_cuts_exactly_as_downsets_on_a_dense_order() -> None:
    # Dense order: an event may sit between any two cut coordinates.
    cuts = [Cut(h, k) for h in range(0, 8) for k in (BEFORE, THROUGH)]
    for a, b in itertools.product(cuts, repeat=2):
        da, db = _quarter_downset(a), _quarter_downset(b)
        expected = 0 if da == db else (-1 if da < db else 1)
        assert compare(a, b, successor=False) == expected, (a, b)


def test_rank_orders_cuts_exactly_as_downsets_with_a_successor() -> None:
    # Successor order: events only at integer coordinates (even half units).
    positions = range(0, 10, 2)
    cuts = [Cut(h, k) for h in range(0, 8, 2) for k in (BEFORE, THROUGH)]
    for a, b in itertools.product(cuts, repeat=2):
        da, db = _downset(a, positions), _downset(b, positions)
        expected = 0 if da == db else (-1 if da < db else 1)
        assert compare(a, b, successor=True) == expected, (a, b)


def test_minimum_breaks_ties_towards_the_smaller_coordinate() -> None:
    # through 1 == before 2 with a successor: the documented representation is through 1.
    assert minimum([before(2), through(1)], successor=True) == through(1)
    assert minimum([through(1), before(2)], successor=True) == through(1)
    # Without a successor they are not equal: through 1 is simply smaller.
    assert minimum([before(2), through(1)], successor=False) == through(1)
    assert minimum([before(1), through(1)], successor=False) == before(1)
    assert minimum([], successor=False) == NOTHING


def test_the_manufactured_successor_is_unsound_on_a_dense_order() -> None:
    made = successor_cut(through(1))
    assert made == before(2)
    between = to_half(1.5)
    assert covers(made, between) and not covers(through(1), between)
    assert successor_cut(before(1)) == before(1)


def test_coordinates_render_and_convert_in_half_units() -> None:
    assert str(before(1)) == "before 1"
    assert str(through(1.5)) == "through 1.5"
    assert rank(through(0), successor=True) == rank(before(1), successor=True)
    with pytest.raises(ValueError, match=r"multiple of 0\.5"):
        to_half(0.25)
