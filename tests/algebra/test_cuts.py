"""The production cut order against a brute-force downset oracle.

The oracle enumerates the positions an order allows near the cuts' coordinates
(integers only for an order with an exact successor; also the midpoints for a
dense order) and compares downsets as sets. It shares no code with
``fencepost.impl.cuts``.
"""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fencepost.impl.cuts import Cut, Endpoint, at_least, compare_cuts, minimum, same_claim
from fencepost.impl.errors import InvalidValue
from fencepost.impl.orders import IntegerOrder, StringOrder

OFFSETS = IntegerOrder("offsets", True)
MILLIS = IntegerOrder("millis", False)
KEYS = StringOrder("keys")


def positions(order: IntegerOrder, lo: int, hi: int) -> list[Fraction]:
    """Every position the order allows in [lo-1, hi+1], sampled densely enough."""
    points = [Fraction(n) for n in range(lo - 1, hi + 2)]
    if not order.has_successor:
        points += [Fraction(2 * n + 1, 2) for n in range(lo - 1, hi + 1)]
    return points


def downset(cut: Cut, points: list[Fraction]) -> frozenset[Fraction]:
    if cut.endpoint is Endpoint.NOTHING:
        return frozenset()
    assert isinstance(cut.at, int)
    if cut.endpoint is Endpoint.BEFORE:
        return frozenset(p for p in points if p < cut.at)
    return frozenset(p for p in points if p <= cut.at)


def oracle(order: IntegerOrder, a: Cut, b: Cut) -> int:
    coords = [c.at for c in (a, b) if isinstance(c.at, int)] or [0]
    pts = positions(order, min(coords), max(coords))
    da, db = downset(a, pts), downset(b, pts)
    if da == db:
        return 0
    if da < db:
        return -1
    assert da > db, "downsets of one total order are always nested"
    return 1


def int_cuts(lo: int = -3, hi: int = 3) -> st.SearchStrategy[Cut]:
    coord = st.integers(lo, hi)
    return st.one_of(
        st.just(Cut.nothing()),
        coord.map(Cut.before),
        coord.map(Cut.through),
    )


@pytest.mark.parametrize("order", [OFFSETS, MILLIS], ids=["successor", "dense"])
@given(a=int_cuts(), b=int_cuts())
def test_compare_agrees_with_downset_inclusion(order: IntegerOrder, a: Cut, b: Cut) -> None:
    assert compare_cuts(order, a, b) == oracle(order, a, b)


@pytest.mark.parametrize("order", [OFFSETS, MILLIS], ids=["successor", "dense"])
@given(cuts=st.lists(int_cuts(), min_size=1, max_size=6))
def test_minimum_is_the_greatest_lower_bound(order: IntegerOrder, cuts: list[Cut]) -> None:
    low = minimum(order, cuts)
    assert low in cuts, "the minimum is one of the certified cuts, published as certified"
    assert all(oracle(order, low, c) <= 0 for c in cuts)


@given(cuts=st.lists(int_cuts(), min_size=1, max_size=6).flatmap(st.permutations))
def test_tie_representation_does_not_depend_on_input_order(cuts: list[Cut]) -> None:
    low = minimum(OFFSETS, cuts)
    assert low == minimum(OFFSETS, sorted(cuts, key=repr))
    ties = [c for c in cuts if same_claim(OFFSETS, c, low)]
    assert all(
        not isinstance(c.at, int) or not isinstance(low.at, int) or c.at >= low.at for c in ties
    )


def test_reasoned_example_of_the_procedure() -> None:
    # A before 100, B through 100: the frontier is before 100 on either kind of order.
    for order in (OFFSETS, MILLIS):
        assert minimum(order, [Cut.before(100), Cut.through(100)]) == Cut.before(100)
        assert compare_cuts(order, Cut.before(100), Cut.through(100)) == -1


def test_successor_only_where_exact() -> None:
    assert same_claim(OFFSETS, Cut.through(4), Cut.before(5))
    assert compare_cuts(MILLIS, Cut.through(4), Cut.before(5)) == -1
    with pytest.raises(InvalidValue, match="no exact successor"):
        MILLIS.successor(4)
    with pytest.raises(InvalidValue, match="no exact successor"):
        KEYS.successor("a")


@given(a=st.text(max_size=4), b=st.text(max_size=4))
def test_strings_compare_by_code_point(a: str, b: str) -> None:
    # Dense: before x < through x < before y for x < y; code point order of str.
    assert compare_cuts(KEYS, Cut.before(a), Cut.through(a)) == -1
    if a < b:
        assert compare_cuts(KEYS, Cut.through(a), Cut.before(b)) == -1
        assert not at_least(KEYS, Cut.through(a), Cut.before(b))


def test_huge_integers_keep_exact_successor() -> None:
    big = 10**128
    assert same_claim(OFFSETS, Cut.through(big), Cut.before(big + 1))
    assert compare_cuts(MILLIS, Cut.through(big), Cut.before(big + 1)) == -1


@pytest.mark.parametrize(
    ("order", "value", "message"),
    [
        (OFFSETS, True, "not a bool"),
        (OFFSETS, 1.0, "floats are not coordinates"),
        (OFFSETS, float("nan"), "floats are not coordinates"),
        (OFFSETS, "5", "needs an integer"),
        (KEYS, 5, "needs a string"),
        (KEYS, "\ud800", "not encodable as UTF-8"),
    ],
)
def test_bad_coordinates_name_the_field(order: IntegerOrder, value: object, message: str) -> None:
    if type(value) not in (int, str):
        # Not a coordinate of any order: refused when the cut is built.
        with pytest.raises(InvalidValue, match=r"cut\.at"):
            Cut(Endpoint.BEFORE, value)  # type: ignore[arg-type]
        with pytest.raises(InvalidValue, match=message):
            order.validate(value, "cut.at")
        return
    with pytest.raises(InvalidValue, match=message) as info:
        compare_cuts(order, Cut(Endpoint.BEFORE, value), Cut.nothing())  # type: ignore[arg-type]
    assert info.value.field == "a.at"


def test_cut_shape_errors() -> None:
    with pytest.raises(InvalidValue, match="no coordinate"):
        Cut(Endpoint.NOTHING, 3)
    with pytest.raises(InvalidValue, match="before or through"):
        Cut("after", 3)  # type: ignore[arg-type]
    with pytest.raises(InvalidValue, match="undefined"):
        minimum(OFFSETS, [])


def _all_small_cuts() -> list[Cut]:
    return [Cut.nothing()] + [k(x) for x in range(-2, 3) for k in (Cut.before, Cut.through)]


def _disagreements(order: IntegerOrder, compare: object) -> list[tuple[Cut, Cut]]:
    assert callable(compare)
    cuts = _all_small_cuts()
    return [(a, b) for a in cuts for b in cuts if compare(order, a, b) != oracle(order, a, b)]


def test_oracle_has_teeth() -> None:
    """Broken comparisons of the kind the field got wrong are caught by the oracle."""

    def relabel(order: IntegerOrder, a: Cut, b: Cut) -> int:
        # before x treated as through x: the relabeling bug.
        def up(c: Cut) -> Cut:
            return Cut.through(c.at) if c.endpoint is Endpoint.BEFORE and c.at is not None else c

        return compare_cuts(order, up(a), up(b))

    def epsilon(order: IntegerOrder, a: Cut, b: Cut) -> int:
        # through x treated as before x+1 on every order: the manufactured successor.
        return compare_cuts(OFFSETS, a, b)

    assert _disagreements(OFFSETS, compare_cuts) == []
    assert _disagreements(MILLIS, compare_cuts) == []
    assert (Cut.before(0), Cut.through(0)) in _disagreements(OFFSETS, relabel)
    assert (Cut.through(0), Cut.before(1)) in _disagreements(MILLIS, epsilon)
