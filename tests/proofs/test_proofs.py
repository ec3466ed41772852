"""The Z3 theorems get their expected verdicts, and every witness really breaks its claim.

Witnesses are checked here in plain Python against the downset definition
(``D(before x) = {p < x}``, ``D(through x) = {p <= x}``), sharing nothing with the Z3
encoding. Each theorem family also has teeth: a deliberately false claim, a broken
comparator, a broken merge or a broken order encoding must come out refuted.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from fractions import Fraction
from functools import cache
from itertools import product

import pytest
import z3

from fencepost.properties import proofs as P
from fencepost.properties.proofs import (
    INTEGER_DENSE,
    INTEGER_SUCCESSOR,
    MANUFACTURED_SUCCESSOR,
    RELABEL_BEFORE_AS_THROUGH,
    STRING_CODE_POINTS,
    STRING_TOTAL_ORDER,
    THEOREMS,
    CutValue,
    OrderEncoding,
    OrderKind,
    Status,
    SymbolicCut,
    TheoremResult,
    WitnessValue,
)
from fencepost.solver import budget

Position = int | Fraction | str


# ----------------------------------------------------------------- plain-Python downsets


def py_covers(cut: CutValue, position: Position) -> bool:
    """``position`` is in ``D(cut)``, straight from the definition."""
    if cut.kind == "nothing":
        return False
    x = cut.coordinate
    assert isinstance(x, int | str)
    if cut.kind == "through":
        return position <= x  # type: ignore[operator]
    return position < x  # type: ignore[operator]


def py_true(cut: CutValue, events: Sequence[tuple[Position, bool]]) -> bool:
    """The claim is true about the events: every covered event is final."""
    return all(final for position, final in events if py_covers(cut, position))


def events_of(
    witness: Mapping[str, WitnessValue], prefix: str = "event"
) -> list[tuple[Position, bool]]:
    found = []
    i = 1
    while f"{prefix}{i}.position" in witness:
        position, final = witness[f"{prefix}{i}.position"], witness[f"{prefix}{i}.final"]
        assert isinstance(position, int | Fraction | str) and isinstance(final, bool)
        found.append((position, final))
        i += 1
    assert found, f"witness {witness} names no events"
    return found


def py_increment(x: int | str) -> int | str:
    """The manufactured "next" coordinate: x + 1, or the last code point plus one."""
    if isinstance(x, int):
        return x + 1
    return x[:-1] + chr(ord(x[-1]) + 1)


def py_positions(coords: Sequence[int], dense: bool) -> list[Fraction]:
    """Every position that can separate cuts at ``coords`` (midpoints on a dense order)."""
    lo, hi = min(coords, default=0) - 1, max(coords, default=0) + 1
    points = [Fraction(n) for n in range(lo, hi + 1)]
    if dense:
        points += [Fraction(2 * n + 1, 2) for n in range(lo, hi)]
    return points


def py_leq(a: CutValue, b: CutValue, dense: bool) -> bool:
    coords = [c.coordinate for c in (a, b) if isinstance(c.coordinate, int)]
    return all(py_covers(b, p) for p in py_positions(coords, dense) if py_covers(a, p))


def literal_cut(cut: CutValue) -> SymbolicCut:
    if cut.kind == "nothing":
        return P.nothing(INTEGER_SUCCESSOR)
    assert isinstance(cut.coordinate, int)
    x = z3.IntVal(cut.coordinate)
    return P.through(x) if cut.kind == "through" else P.before(x)


def comparator_value(
    comparator: P.Comparator, order: OrderEncoding, a: CutValue, b: CutValue
) -> bool:
    """Evaluate a Z3 comparator on concrete cuts."""
    value = z3.simplify(comparator(order, literal_cut(a), literal_cut(b)))
    assert z3.is_true(value) or z3.is_false(value), value
    return bool(z3.is_true(value))


def cut_at(witness: Mapping[str, WitnessValue], key: str) -> CutValue:
    value = witness[key]
    assert isinstance(value, CutValue)
    return value


# ----------------------------------------------------------------- the registry


@cache
def result_of(name: str) -> TheoremResult:
    return THEOREMS[name].run()


@pytest.mark.parametrize("name", list(THEOREMS))
def test_theorem_gets_its_expected_verdict(name: str) -> None:
    result = result_of(name)
    assert result.name == name
    assert result.status is THEOREMS[name].expected, (result.detail, result.witness)
    assert result.seconds >= 0
    assert result.statement


def test_the_rlimit_table_holds_what_the_theorems_consumed() -> None:
    """fencepost.solver.budgets pins, per family, the most units one check of
    ``fencepost prove`` consumed: a Z3 upgrade (or a new encoding) that changes it is
    noticed here, and the figure remeasured (the failure message gives it)."""
    peaks: dict[str, int] = {}
    for name in THEOREMS:
        result = result_of(name)
        peaks[result.family] = max(peaks.get(result.family, 0), result.rlimit_used)
    table = {family: budget(family).measured for family in peaks}
    assert peaks == table, {f: (peaks[f], table[f]) for f in peaks if peaks[f] != table[f]}


def test_registry_covers_every_order_and_both_merge_sizes() -> None:
    names = set(THEOREMS)
    for key in ("integer_successor", "integer_dense", "string"):
        assert f"total_preorder.{key}" in names
        assert f"before_below_through.{key}" in names
        assert f"relabel_unsound.{key}" in names
        for family in ("merge_glb", "merge_sound", "merge_monotone", "merge_deterministic"):
            assert {f"{family}.{key}.n2", f"{family}.{key}.n3"} <= names
    assert THEOREMS["through_equals_before_next.integer_dense"].expected is Status.REFUTED


@pytest.mark.parametrize(
    "name",
    [
        "relabel_unsound.integer_successor",
        "relabel_unsound.integer_dense",
        "relabel_unsound.string",
    ],
)
def test_relabel_witness_is_an_uncovered_event_at_x(name: str) -> None:
    witness = result_of(name).witness
    assert witness is not None
    x = witness["x"]
    assert isinstance(x, int | str)
    events = events_of(witness)
    assert py_true(CutValue.before(x), events), "before x was true about these events"
    assert not py_true(CutValue.through(x), events), "through x is false about them"
    # The culprit sits exactly at x: in D(through x), not in D(before x), not final.
    assert any(p == x and not final for p, final in events)


@pytest.mark.parametrize(
    "name",
    ["manufactured_successor_unsound.integer_dense", "manufactured_successor_unsound.string"],
)
def test_manufactured_successor_witness_sits_strictly_between(name: str) -> None:
    witness = result_of(name).witness
    assert witness is not None
    x = witness["x"]
    assert isinstance(x, int | str)
    nxt = py_increment(x)
    events = events_of(witness)
    assert py_true(CutValue.through(x), events)
    assert not py_true(CutValue.before(nxt), events)
    culprits = [p for p, final in events if not final and x < p < nxt]  # type: ignore[operator]
    assert culprits, f"no non-final event strictly between {x!r} and {nxt!r}"
    if isinstance(x, int):
        assert all(isinstance(p, Fraction) and p.denominator != 1 for p in culprits)


def test_dense_successor_refutation_names_an_event_between_x_and_next() -> None:
    witness = result_of("through_equals_before_next.integer_dense").witness
    assert witness is not None
    x, event = witness["x"], witness["event"]
    assert isinstance(x, int) and isinstance(event, Fraction)
    assert x < event < x + 1
    assert py_covers(CutValue.before(x + 1), event)
    assert not py_covers(CutValue.through(x), event)


def test_string_successor_theorem_agrees_with_brute_force() -> None:
    """No short string lies strictly between x and x + NUL (the fact Z3 proved)."""
    for x in P.STRING_SUCCESSOR_SAMPLES:
        alphabet = sorted(set(x) | {"\x00", "a", "\U0010ffff"})
        between = [
            "".join(chars)
            for n in range(4)
            for chars in product(alphabet, repeat=n)
            if x < "".join(chars) < x + "\x00"
        ]
        assert between == [], (x, between[:3])


# ----------------------------------------------------------------- teeth: false claims


def test_claiming_the_manufactured_successor_sound_on_a_dense_order_is_refuted() -> None:
    result = P.rewrite_sound(INTEGER_DENSE, MANUFACTURED_SUCCESSOR)
    assert result.status is Status.REFUTED
    assert result.witness is not None
    x = result.witness["x"]
    assert isinstance(x, int)
    events = events_of(result.witness)
    assert py_true(CutValue.through(x), events) and not py_true(CutValue.before(x + 1), events)


def test_manufactured_successor_has_no_counterexample_on_an_exact_successor_order() -> None:
    result = P.rewrite_unsound(INTEGER_SUCCESSOR, MANUFACTURED_SUCCESSOR)
    assert result.status is Status.REFUTED
    assert result.witness is None


@pytest.mark.parametrize("order", [INTEGER_SUCCESSOR, INTEGER_DENSE, STRING_CODE_POINTS])
def test_claiming_relabel_sound_is_refuted(order: OrderEncoding) -> None:
    result = P.rewrite_sound(order, RELABEL_BEFORE_AS_THROUGH)
    assert result.status is Status.REFUTED
    assert result.witness is not None
    x = result.witness["x"]
    assert isinstance(x, int | str)
    events = events_of(result.witness)
    assert py_true(CutValue.before(x), events) and not py_true(CutValue.through(x), events)


def relabel_comparator(order: OrderEncoding, a: SymbolicCut, b: SymbolicCut) -> z3.ExprRef:
    """The field bug: before x compared as if it were through x."""

    def up(c: SymbolicCut) -> SymbolicCut:
        return SymbolicCut(c.is_nothing, z3.BoolVal(True), c.coordinate)

    return P.spec_leq(order, up(a), up(b))


def pretend_successor_comparator(
    order: OrderEncoding, a: SymbolicCut, b: SymbolicCut
) -> z3.ExprRef:
    """The manufactured successor: every order compared as if x + 1 were exact."""
    return P.spec_leq(replace(order, successor=lambda x: x + 1), a, b)


@pytest.mark.parametrize(
    ("order", "comparator"),
    [
        (INTEGER_SUCCESSOR, relabel_comparator),
        (INTEGER_DENSE, relabel_comparator),
        (INTEGER_DENSE, pretend_successor_comparator),
    ],
    ids=["relabel-successor", "relabel-dense", "manufactured-successor-dense"],
)
def test_broken_comparators_are_refuted_with_a_real_counterexample(
    order: OrderEncoding, comparator: P.Comparator
) -> None:
    result = P.spec_order_exact(order, comparator=comparator)
    assert result.status is Status.REFUTED
    assert result.witness is not None
    a, b = cut_at(result.witness, "a"), cut_at(result.witness, "b")
    dense = order is INTEGER_DENSE
    # The counterexample pair is one where the broken comparator and the downsets disagree.
    assert comparator_value(comparator, order, a, b) != py_leq(a, b, dense)
    # And the genuine closed form agrees with the downsets on that very pair.
    assert comparator_value(P.spec_leq, order, a, b) == py_leq(a, b, dense)


def test_no_successor_closed_form_is_not_exact_on_an_arbitrary_total_order() -> None:
    # Some total orders (code-point strings among them) have adjacent elements: the
    # dense closed form is only sound there. Also shows the order axioms have models.
    assert P.spec_order_exact(STRING_TOTAL_ORDER).status is Status.REFUTED
    assert P.spec_order_sound(STRING_TOTAL_ORDER).status is Status.PROVED


def test_encodings_that_are_not_orders_break_the_order_theorems() -> None:
    not_an_order = replace(INTEGER_SUCCESSOR, lt=lambda a, b: a != b)
    assert P.total_preorder(not_an_order).status is Status.REFUTED
    reflexive_lt = replace(INTEGER_DENSE, lt=lambda a, b: a <= b)
    result = P.before_below_through(reflexive_lt)
    assert result.status is Status.REFUTED


def skip_idle_merge(order: OrderEncoding, cuts: Sequence[SymbolicCut]) -> SymbolicCut:
    """The field bug: a partition with nothing certified is skipped as idle."""
    low = cuts[0]
    for cut in cuts[1:]:
        take = z3.Or(low.is_nothing, z3.And(z3.Not(cut.is_nothing), P.spec_leq(order, cut, low)))
        low = P.if_cut(take, cut, low)
    return low


def max_merge(order: OrderEncoding, cuts: Sequence[SymbolicCut]) -> SymbolicCut:
    """The most advanced partition's cut instead of the least advanced."""
    high = cuts[0]
    for cut in cuts[1:]:
        high = P.if_cut(P.spec_leq(order, high, cut), cut, high)
    return high


MergeTheorem = Callable[..., TheoremResult]


@pytest.mark.parametrize(
    ("theorem", "merge"),
    [
        (P.merge_glb, max_merge),
        (P.merge_sound, max_merge),
        (P.merge_glb, skip_idle_merge),
        (P.merge_sound, skip_idle_merge),
        (P.merge_monotone, skip_idle_merge),
    ],
    ids=["glb-max", "sound-max", "glb-skip-idle", "sound-skip-idle", "monotone-skip-idle"],
)
@pytest.mark.parametrize("order", [INTEGER_SUCCESSOR, INTEGER_DENSE, STRING_TOTAL_ORDER])
def test_broken_merges_are_refuted(
    theorem: MergeTheorem, merge: P.Merge, order: OrderEncoding
) -> None:
    result = theorem(order, 2, merge=merge)
    assert result.status is Status.REFUTED
    assert result.witness is not None
    if merge is skip_idle_merge and theorem is not P.merge_monotone:
        cuts = [cut_at(result.witness, k) for k in ("c1", "c2")]
        assert any(c.kind == "nothing" for c in cuts), "skipping idle partitions is the bug"


def test_earliest_on_ties_merge_is_not_deterministic_with_an_exact_successor() -> None:
    result = P.merge_deterministic(INTEGER_SUCCESSOR, 2, merge=P.first_min_merge)
    assert result.status is Status.REFUTED
    assert result.witness is not None
    c1, c2 = cut_at(result.witness, "c1"), cut_at(result.witness, "c2")
    # Two representations of one claim: through x and before x + 1.
    assert c1 != c2
    assert py_leq(c1, c2, dense=False) and py_leq(c2, c1, dense=False)
    # On a dense order equal claims are equal representations: no such pair exists.
    assert P.merge_deterministic(INTEGER_DENSE, 2, merge=P.first_min_merge).status is Status.PROVED


def test_a_non_successor_suffix_is_refuted_with_the_separating_string() -> None:
    result = P.string_has_exact_successor(("a", "é"), suffix="\x01")
    assert result.status is Status.REFUTED
    assert result.witness is not None
    x, event = result.witness["x"], result.witness["event"]
    assert isinstance(x, str) and isinstance(event, str)
    assert x < event < x + "\x01"


def test_before_a_nonempty_string_is_not_nothing() -> None:
    result = P.string_before_empty_is_nothing("a")
    assert result.status is Status.REFUTED
    assert result.witness is not None
    event = result.witness["event"]
    assert isinstance(event, str) and event < "a"


def test_unknown_is_reported_as_unknown_never_as_proved() -> None:
    # A true claim Z3's string theory cannot settle symbolically: x + NUL is the
    # successor of every x (proved for samples by string_has_exact_successor).
    scope = P.Scope(P.STRING_NATIVE)
    x, p = scope.coordinate("x"), scope.position("event")
    nul = P.z3_string("\x00")
    claim = z3.Implies(p < z3.Concat(x, nul), p <= x)
    result = P.prove_valid("successor.symbolic", "x+NUL succeeds x", scope, claim, 200_000, 0.0)
    assert result.status is Status.UNKNOWN
    assert result.detail and result.witness is None


# ----------------------------------------------------------------- decisions


@pytest.mark.parametrize(
    ("kind", "a", "b", "expected"),
    [
        (OrderKind.INTEGER_SUCCESSOR, CutValue.through(4), CutValue.before(5), 0),
        (OrderKind.INTEGER_DENSE, CutValue.through(4), CutValue.before(5), -1),
        (OrderKind.INTEGER_DENSE, CutValue.before(4), CutValue.through(4), -1),
        (OrderKind.INTEGER_SUCCESSOR, CutValue.nothing(), CutValue.before(-(10**40)), -1),
        (OrderKind.STRING, CutValue.through("a"), CutValue.before("a\x00"), 0),
        (OrderKind.STRING, CutValue.before(""), CutValue.nothing(), 0),
        (OrderKind.STRING, CutValue.through("\uffff"), CutValue.before("\U00010000"), -1),
        (OrderKind.STRING, CutValue.before("\U00030001"), CutValue.through("\U00030000"), 1),
    ],
)
def test_decide_cut_order_from_the_definition(
    kind: OrderKind, a: CutValue, b: CutValue, expected: int
) -> None:
    assert P.decide_cut_order(kind, a, b) == expected
    assert P.decide_cut_order(kind, b, a) == -expected


def test_code_points_beyond_z3s_alphabet_are_remapped_and_mapped_back() -> None:
    # Z3 alone mis-orders characters above U+2FFFF; the decision remaps them first.
    x, y = "\U00030001", "\U0010fffe"
    inclusion = P.downset_inclusion(OrderKind.STRING, CutValue.before(y), CutValue.through(x))
    assert not inclusion.holds
    assert isinstance(inclusion.event, str)
    assert x < inclusion.event < y
    with pytest.raises(ValueError, match="beyond Z3's alphabet"):
        P.z3_string("\U00030000")


def test_z3_string_literals_are_taken_literally() -> None:
    # z3.StringVal would read this as "A" and call the two cuts equal.
    tricky = "\\u{41}"
    assert tricky > "A"
    assert (
        P.decide_cut_order(OrderKind.STRING, CutValue.through(tricky), CutValue.through("A")) == 1
    )


@pytest.mark.parametrize(
    ("kind", "cut", "message"),
    [
        (OrderKind.INTEGER_DENSE, CutValue.before("5"), "needs an int coordinate"),
        (OrderKind.STRING, CutValue.before(5), "needs a str coordinate"),
    ],
)
def test_decide_rejects_coordinates_of_the_wrong_order(
    kind: OrderKind, cut: CutValue, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        P.decide_cut_order(kind, cut, CutValue.nothing())


@pytest.mark.parametrize(
    ("kind", "coordinate", "message"),
    [
        ("after", 1, "nothing, before or through"),
        ("nothing", 1, "no coordinate"),
        ("before", True, "int or str coordinate"),
        ("through", 1.5, "int or str coordinate"),
        ("before", None, "int or str coordinate"),
    ],
)
def test_cut_values_refuse_malformed_cuts(kind: str, coordinate: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        CutValue(kind, coordinate)  # type: ignore[arg-type]


# ----------------------------------------------------------------- registry plumbing


def test_select_takes_full_names_and_families_in_registry_order() -> None:
    chosen = [t.name for t in P.select(["merge_glb.string", "before_below_through.integer_dense"])]
    assert chosen == [
        "before_below_through.integer_dense",
        "merge_glb.string.n2",
        "merge_glb.string.n3",
    ]
    assert len(P.select()) == len(THEOREMS)
    with pytest.raises(P.UnknownTheorem, match="no theorem named 'merge'"):
        P.select(["merge"])
    with pytest.raises(P.UnknownTheorem, match="merge_gl"):
        P.select(["merge_gl"])


def test_prove_all_runs_the_selection() -> None:
    results = P.prove_all(["through_equals_before_next"])
    assert [r.name for r in results] == [
        "through_equals_before_next.integer_successor",
        "through_equals_before_next.integer_dense",
    ]
    assert [r.status for r in results] == [Status.PROVED, Status.REFUTED]


def test_results_serialise_to_unambiguous_json() -> None:
    data = json.loads(
        json.dumps(result_of("manufactured_successor_unsound.integer_dense").to_json())
    )
    assert data["status"] == "proved"
    positions = [v for k, v in data["witness"].items() if k.endswith(".position")]
    assert all(set(p) == {"rational"} for p in positions)
    cut = P.witness_to_json(CutValue.before("1/2"))
    assert cut == {"kind": "before", "coordinate": "1/2"}
