"""Byte sort keys order cuts exactly as the cut order, ties by the published representation.

The stores find an epoch's minimum cut with ``ORDER BY sort_key LIMIT 1``; these
tests show the byte order of :func:`~fencepost.impl.cutkey.cut_key` is
:func:`~fencepost.impl.cuts.compare_cuts`, with equivalent cuts ordered as
:func:`~fencepost.impl.cuts.minimum` chooses (``through x`` before ``before x+1``),
on huge and negative integers and on strings with NUL and characters above U+FFFF.
The teeth: keys that look plausible (decimal text, UTF-16) fail the same check.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from fencepost.impl.cutkey import cut_key, integer_key, string_key
from fencepost.impl.cuts import NOTHING, Cut, Endpoint, compare_cuts, minimum
from fencepost.impl.orders import IntegerOrder, Order, StringOrder

OFFSETS = IntegerOrder("offsets", successor_exact=True)
MILLIS = IntegerOrder("ms", successor_exact=False)
KEYS = StringOrder("keys")
ORDERS: list[Order] = [OFFSETS, MILLIS, KEYS]

integers = st.one_of(
    st.integers(-5, 5),
    st.integers(),
    st.sampled_from([2**64 - 1, 2**64, 2**64 + 1, -(2**64), 10**40, -(10**40), 10**300 + 7]),
)
strings = st.one_of(
    st.sampled_from(["", "\x00", "a", "a\x00", "a\x00b", "ab", "é", "\uffff", "\U0001f600"]),
    st.text(alphabet=st.characters(codec="utf-8"), max_size=6),
)


def cuts(order: Order) -> st.SearchStrategy[Cut]:
    coordinate: st.SearchStrategy[int | str] = integers if order.kind == "integer" else strings
    return st.one_of(
        st.just(NOTHING),
        st.builds(Cut, st.sampled_from([Endpoint.BEFORE, Endpoint.THROUGH]), coordinate),
    )


def expected_order(order: Order, a: Cut, b: Cut) -> int:
    """-1/0/1: the cut order, equivalent cuts ordered by the representation ``minimum`` picks."""
    c = compare_cuts(order, a, b)
    if c != 0 or a == b:
        return c
    return -1 if minimum(order, [a, b]) == a and minimum(order, [b, a]) == a else 1


def check_key(order: Order, a: Cut, b: Cut, key: Callable[[Order, Cut], bytes] = cut_key) -> None:
    ka, kb = key(order, a), key(order, b)
    assert ((ka > kb) - (ka < kb)) == expected_order(order, a, b), (order.name, a, b, ka, kb)


@given(st.sampled_from(ORDERS).flatmap(lambda o: st.tuples(st.just(o), cuts(o), cuts(o))))
@example((OFFSETS, Cut.through(4), Cut.before(5)))
@example((OFFSETS, Cut.before(2**64), Cut.through(2**64 - 1)))
@example((MILLIS, Cut.through(4), Cut.before(5)))
@example((MILLIS, Cut.before(7), Cut.through(7)))
@example((KEYS, Cut.through("a"), Cut.before("a\x00")))
@example((KEYS, Cut.through("\uffff"), Cut.through("\U0001f600")))
@example((KEYS, Cut.before(""), NOTHING))
def test_byte_order_of_keys_is_the_cut_order(case: tuple[Order, Cut, Cut]) -> None:
    check_key(*case)


@given(
    st.sampled_from(ORDERS).flatmap(
        lambda o: st.tuples(st.just(o), st.lists(cuts(o), min_size=1, max_size=8))
    )
)
def test_the_least_key_is_the_minimum(case: tuple[Order, list[Cut]]) -> None:
    order, some = case
    assert min(some, key=lambda c: cut_key(order, c)) == minimum(order, some)


@given(integers, integers)
def test_integer_keys_are_numeric_order(a: int, b: int) -> None:
    ka, kb = integer_key(a), integer_key(b)
    assert ((ka > kb) - (ka < kb)) == ((a > b) - (a < b))


@given(strings, strings)
def test_string_keys_are_code_point_order(a: str, b: str) -> None:
    ka, kb = string_key(a), string_key(b)
    assert ((ka > kb) - (ka < kb)) == ((a > b) - (a < b))


def test_equivalent_cuts_tie_to_through_on_an_exact_successor() -> None:
    assert cut_key(OFFSETS, Cut.through(4)) < cut_key(OFFSETS, Cut.before(5))
    assert cut_key(OFFSETS, Cut.before(5)) < cut_key(OFFSETS, Cut.through(5))
    assert cut_key(OFFSETS, NOTHING) < cut_key(OFFSETS, Cut.before(-(10**40)))


# --- teeth: plausible keys that are wrong --------------------------------------------------


def decimal_text_key(order: Order, cut: Cut) -> bytes:
    """Integers as decimal text: "10" sorts before "9"."""
    if cut.is_nothing:
        return b"\x00"
    return b"\x01" + str(cut.at).encode() + (b"\x01" if cut.endpoint is Endpoint.THROUGH else b"")


def utf16_key(order: Order, cut: Cut) -> bytes:
    """Strings as UTF-16: characters above U+FFFF sort below U+E000..U+FFFF."""
    if cut.is_nothing:
        return b"\x00"
    assert isinstance(cut.at, str)
    tie = b"\x01" if cut.endpoint is Endpoint.THROUGH else b"\x00"
    return b"\x01" + cut.at.encode("utf-16-be") + b"\x00\x00" + tie


def through_first_key(order: Order, cut: Cut) -> bytes:
    """The tie byte swapped: ``through x`` below ``before x`` at one coordinate."""
    key = cut_key(order, cut)
    return key[:-1] + bytes([1 - key[-1]]) if len(key) > 1 else key


@pytest.mark.parametrize(
    ("key", "order", "a", "b"),
    [
        (decimal_text_key, MILLIS, Cut.before(9), Cut.before(10)),
        (utf16_key, KEYS, Cut.before("\uffff"), Cut.before("\U0001f600")),
        (through_first_key, OFFSETS, Cut.before(5), Cut.through(5)),
    ],
    ids=["decimal-text", "utf-16", "through-below-before"],
)
def test_the_key_check_catches_wrong_keys(
    key: Callable[[Order, Cut], bytes], order: Order, a: Cut, b: Cut
) -> None:
    check_key(order, a, b)  # the real key passes...
    with pytest.raises(AssertionError):
        check_key(order, a, b, key)  # ...the plausible one does not
