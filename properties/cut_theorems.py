"""The theorems of the cut algebra, each stated over the downset definition.

The order laws (:func:`total_preorder`, :func:`spec_order_exact`,
:func:`before_below_through`, :func:`through_equals_before_next`), which
rewrites are sound or unsound (:class:`Rewrite`), the merge laws
(:func:`merge_glb`, :func:`merge_sound`, :func:`merge_monotone`,
:func:`merge_deterministic`) and the two string facts. The registry of what
``fencepost prove`` runs is :data:`fencepost.properties.proofs.THEOREMS`.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final

import z3

from fencepost.properties.cut_encoding import (
    INTEGER_SUCCESSOR,
    STRING_NATIVE,
    STRING_TOTAL_ORDER,
    Comparator,
    Expr,
    Merge,
    OrderEncoding,
    SymbolicCut,
    WitnessValue,
    before,
    covers,
    downset_leq,
    min_merge,
    same_downset,
    same_representation,
    spec_leq,
    through,
    z3_string,
)
from fencepost.properties.cut_solving import (
    Scope,
    Status,
    TheoremResult,
    claim_true,
    prove_exists,
    prove_valid,
    solve,
)

#: Events per partition in the truth-based theorems. Truth of a claim is a conjunction
#: over events, so one event already reaches every counterexample; two show that several
#: events (possibly at one coordinate) change nothing.
EVENTS_PER_PARTITION: Final = 2


def total_preorder(
    order: OrderEncoding = INTEGER_SUCCESSOR, *, rlimit: int | None = None
) -> TheoremResult:
    """Downset inclusion is a total preorder whose equivalence is downset equality.

    Reflexive, transitive, total (any two cuts are comparable, which is what lets merge
    take a minimum), and ``a <= b <= a`` exactly when ``D(a) == D(b)``.
    """
    started = time.perf_counter()
    scope = Scope(order)
    a, b, c = scope.cut("a"), scope.cut("b"), scope.cut("c")

    def leq(x: SymbolicCut, y: SymbolicCut) -> Expr:
        return downset_leq(order, x, y)

    claim = z3.And(
        leq(a, a),
        z3.Implies(z3.And(leq(a, b), leq(b, c)), leq(a, c)),
        z3.Or(leq(a, b), leq(b, a)),
        z3.And(leq(a, b), leq(b, a)) == same_downset(order, a, b),
    )
    statement = (
        f"On the {order.description}: downset inclusion of cuts is reflexive, transitive "
        "and total, and a <= b <= a exactly when D(a) == D(b)."
    )
    return prove_valid(f"total_preorder.{order.key}", statement, scope, claim, rlimit, started)


def spec_order_exact(
    order: OrderEncoding = INTEGER_SUCCESSOR,
    *,
    comparator: Comparator = spec_leq,
    rlimit: int | None = None,
) -> TheoremResult:
    """The closed-form comparison is exactly downset inclusion (both directions).

    The counterexample of a refutation names the two cuts and the event position that is
    in one downset and not in the other.
    """
    started = time.perf_counter()
    scope = Scope(order)
    a, b = scope.cut("a"), scope.cut("b")
    p = scope.position("event")
    # Free `event` is universally quantified by validity: (a <= b) implies the inclusion
    # at every position; the converse direction needs the quantified definition.
    claim = z3.And(
        z3.Implies(comparator(order, a, b), z3.Implies(covers(order, a, p), covers(order, b, p))),
        z3.Implies(downset_leq(order, a, b), comparator(order, a, b)),
    )
    statement = (
        f"On the {order.description}: the closed-form order of docs/semantics.md section 2 "
        "(before x < through x; through x < before y for x < y unless y = succ(x)) "
        "holds between two cuts exactly when D(a) ⊆ D(b)."
    )
    return prove_valid(f"spec_order_exact.{order.key}", statement, scope, claim, rlimit, started)


def spec_order_sound(
    order: OrderEncoding = STRING_TOTAL_ORDER,
    *,
    comparator: Comparator = spec_leq,
    rlimit: int | None = None,
) -> TheoremResult:
    """The closed-form comparison never claims an inclusion that does not hold.

    This is what the implementation needs on strings: it treats them as dense, which on
    an arbitrary total order (one that may have successors, like code-point order) is
    safe but finer than downset equality.
    """
    started = time.perf_counter()
    scope = Scope(order)
    a, b = scope.cut("a"), scope.cut("b")
    p = scope.position("event")
    claim = z3.Implies(
        comparator(order, a, b), z3.Implies(covers(order, a, p), covers(order, b, p))
    )
    statement = (
        f"On the {order.description}: whenever the no-successor closed form says a <= b, "
        "D(a) ⊆ D(b) (it is sound, though it may rank equal claims strictly)."
    )
    return prove_valid(f"spec_order_sound.{order.key}", statement, scope, claim, rlimit, started)


def before_below_through(
    order: OrderEncoding = INTEGER_SUCCESSOR, *, rlimit: int | None = None
) -> TheoremResult:
    """``before x < through x``: the inclusion holds and is strict (``x`` itself separates)."""
    started = time.perf_counter()
    scope = Scope(order)
    x = scope.coordinate("x")
    p = scope.position("event")
    strict = z3.Not(downset_leq(order, through(x), before(x)))
    claim = z3.And(z3.Implies(covers(order, before(x), p), covers(order, through(x), p)), strict)
    statement = (
        f"On the {order.description}: for every x, D(before x) ⊊ D(through x), "
        "so before x < through x."
    )
    return prove_valid(
        f"before_below_through.{order.key}", statement, scope, claim, rlimit, started
    )


def through_equals_before_next(
    order: OrderEncoding = INTEGER_SUCCESSOR, *, rlimit: int | None = None
) -> TheoremResult:
    """``through x == before x+1`` as claims: true exactly when ``x+1`` is an exact successor.

    On a dense order the refutation's witness is an event strictly between ``x`` and
    ``x+1``: covered by ``before x+1``, not by ``through x``.
    """
    if order.increment is None:
        raise ValueError(f"the {order.description} has no x+1 to compare with")
    started = time.perf_counter()
    scope = Scope(order)
    x = scope.coordinate("x")
    p = scope.position("event")
    nxt = order.increment(x)
    claim = z3.Implies(
        order.incrementable(x),
        covers(order, through(x), p) == covers(order, before(nxt), p),
    )
    statement = (
        f"On the {order.description}: for every x, D(through x) == D(before x+1) "
        "(the same claim); expected to hold only when x+1 is an exact successor."
    )
    return prove_valid(
        f"through_equals_before_next.{order.key}", statement, scope, claim, rlimit, started
    )


@dataclass(frozen=True)
class Rewrite:
    """A rewrite of a certified cut at coordinate ``x`` into the cut that gets published."""

    key: str
    description: str
    source: Callable[[OrderEncoding, Expr], SymbolicCut]
    target: Callable[[OrderEncoding, Expr], SymbolicCut]
    defined: Callable[[OrderEncoding, Expr], Expr] = lambda _order, _x: z3.BoolVal(True)


def _next_coordinate(order: OrderEncoding, x: Expr) -> Expr:
    if order.increment is None:
        raise ValueError(f"the {order.description} has no arithmetic next coordinate")
    return order.increment(x)


#: The relabeling bug: publishing ``through x`` when only ``before x`` was certified.
RELABEL_BEFORE_AS_THROUGH: Final = Rewrite(
    key="relabel",
    description="certified before x published as through x",
    source=lambda _order, x: before(x),
    target=lambda _order, x: through(x),
)

#: The manufactured successor: ``through x`` published as ``before x+1``.
MANUFACTURED_SUCCESSOR: Final = Rewrite(
    key="manufactured_successor",
    description="certified through x published as before x+1 (x+1 manufactured)",
    source=lambda _order, x: through(x),
    target=lambda order, x: before(_next_coordinate(order, x)),
    defined=lambda order, x: order.incrementable(x),
)

#: The manufactured successor run backwards: ``before x+1`` published as ``through x``.
MANUFACTURED_PREDECESSOR: Final = Rewrite(
    key="manufactured_predecessor",
    description="certified before x+1 published as through x",
    source=lambda order, x: before(_next_coordinate(order, x)),
    target=lambda _order, x: through(x),
    defined=lambda order, x: order.incrementable(x),
)


def rewrite_unsound(
    order: OrderEncoding,
    rewrite: Rewrite,
    *,
    events: int = EVENTS_PER_PARTITION,
    rlimit: int | None = None,
) -> TheoremResult:
    """There are events on which the certified cut is true and the rewritten one is false.

    ``proved`` means Z3 built such a history; the witness names ``x`` and every event's
    position and finality: some non-final event lies in the rewritten downset.
    """
    started = time.perf_counter()
    scope = Scope(order)
    x = scope.coordinate("x")
    history = scope.events("event", events)
    condition = z3.And(
        rewrite.defined(order, x),
        claim_true(order, rewrite.source(order, x), history),
        z3.Not(claim_true(order, rewrite.target(order, x), history)),
    )
    statement = (
        f"On the {order.description}: {rewrite.description} is unsound — some set of events "
        "makes the certified claim true and the published claim false."
    )
    return prove_exists(
        f"{rewrite.key}_unsound.{order.key}",
        statement,
        scope,
        condition,
        rlimit,
        started,
        "rewrite_unsound",
    )


def rewrite_sound(
    order: OrderEncoding,
    rewrite: Rewrite,
    *,
    events: int = EVENTS_PER_PARTITION,
    rlimit: int | None = None,
) -> TheoremResult:
    """On every set of events, if the certified cut is true, so is the rewritten one."""
    started = time.perf_counter()
    scope = Scope(order)
    x = scope.coordinate("x")
    history = scope.events("event", events)
    claim = z3.Implies(
        z3.And(rewrite.defined(order, x), claim_true(order, rewrite.source(order, x), history)),
        claim_true(order, rewrite.target(order, x), history),
    )
    statement = (
        f"On the {order.description}: {rewrite.description} is sound — whenever the "
        "certified claim is true about a set of events, so is the published one."
    )
    return prove_valid(
        f"{rewrite.key}_sound.{order.key}",
        statement,
        scope,
        claim,
        rlimit,
        started,
        "rewrite_sound",
    )


def _merge_scope(order: OrderEncoding, size: int) -> tuple[Scope, list[SymbolicCut]]:
    if size < 1:
        raise ValueError(f"a checkpoint vector needs at least one partition, not {size}")
    scope = Scope(order)
    return scope, [scope.cut(f"c{i}") for i in range(1, size + 1)]


def merge_glb(
    order: OrderEncoding = INTEGER_SUCCESSOR,
    size: int = 2,
    *,
    merge: Merge = min_merge,
    rlimit: int | None = None,
) -> TheoremResult:
    """The merged cut is a lower bound of every partition's cut, and the greatest one."""
    started = time.perf_counter()
    scope, cuts = _merge_scope(order, size)
    low = scope.cut("lower_bound")
    p = scope.position("event")
    merged = merge(order, cuts)
    is_lower_bound = z3.And(
        *[z3.Implies(covers(order, merged, p), covers(order, c, p)) for c in cuts]
    )
    greatest = z3.Implies(
        z3.And(*[downset_leq(order, low, c) for c in cuts]),
        z3.Implies(covers(order, low, p), covers(order, merged, p)),
    )
    statement = (
        f"On the {order.description}, for {size} partitions: merge(c) ⊆ every D(ci), and "
        "every cut below all ci is below merge(c) (merge is the greatest lower bound)."
    )
    return prove_valid(
        f"merge_glb.{order.key}.n{size}",
        statement,
        scope,
        z3.And(is_lower_bound, greatest),
        rlimit,
        started,
    )


def merge_sound(
    order: OrderEncoding = INTEGER_SUCCESSOR,
    size: int = 2,
    *,
    merge: Merge = min_merge,
    events: int = EVENTS_PER_PARTITION,
    rlimit: int | None = None,
) -> TheoremResult:
    """If every partition's certified cut is true about its events, the merged cut is true
    about every partition's events."""
    started = time.perf_counter()
    scope, cuts = _merge_scope(order, size)
    histories = [scope.events(f"p{i}.event", events) for i in range(1, size + 1)]
    merged = merge(order, cuts)
    claim = z3.Implies(
        z3.And(*[claim_true(order, c, h) for c, h in zip(cuts, histories, strict=True)]),
        z3.And(*[claim_true(order, merged, h) for h in histories]),
    )
    statement = (
        f"On the {order.description}, for {size} partitions with {events} events each: "
        "when every partition's cut is true about its events, the merged cut is true about "
        "all of them (D(merge) lies inside every partition's downset)."
    )
    return prove_valid(f"merge_sound.{order.key}.n{size}", statement, scope, claim, rlimit, started)


def merge_monotone(
    order: OrderEncoding = INTEGER_SUCCESSOR,
    size: int = 2,
    *,
    merge: Merge = min_merge,
    rlimit: int | None = None,
) -> TheoremResult:
    """Advancing any one partition's cut never moves the merged cut back."""
    started = time.perf_counter()
    scope, cuts = _merge_scope(order, size)
    p = scope.position("event")
    merged = merge(order, cuts)
    conjuncts = []
    for j in range(size):
        advanced = scope.cut(f"c{j + 1}_advanced")
        moved = [advanced if i == j else c for i, c in enumerate(cuts)]
        conjuncts.append(
            z3.Implies(
                downset_leq(order, cuts[j], advanced, hints=[p]),
                z3.Implies(covers(order, merged, p), covers(order, merge(order, moved), p)),
            )
        )
    statement = (
        f"On the {order.description}, for {size} partitions: if one partition's cut "
        "advances (D grows), the merged downset does not shrink."
    )
    return prove_valid(
        f"merge_monotone.{order.key}.n{size}",
        statement,
        scope,
        z3.And(*conjuncts),
        rlimit,
        started,
    )


def merge_deterministic(
    order: OrderEncoding = INTEGER_SUCCESSOR,
    size: int = 2,
    *,
    merge: Merge = min_merge,
    rlimit: int | None = None,
) -> TheoremResult:
    """Every ordering of the partitions publishes the same representation, not just the
    same claim (docs/semantics.md section 2: ties are resolved deterministically)."""
    started = time.perf_counter()
    scope, cuts = _merge_scope(order, size)
    merged = merge(order, cuts)
    claim = z3.And(
        *[
            same_representation(order, merged, merge(order, list(permuted)))
            for permuted in itertools.permutations(cuts)
        ]
    )
    statement = (
        f"On the {order.description}, for {size} partitions: merge publishes the same "
        "representation (kind and coordinate) for every ordering of the partitions."
    )
    return prove_valid(
        f"merge_deterministic.{order.key}.n{size}", statement, scope, claim, rlimit, started
    )


#: Samples for the string successor theorem: empty, ASCII, a prefix pair, non-ASCII,
#: an astral character, and a string already ending in NUL.
STRING_SUCCESSOR_SAMPLES: Final = ("", "a", "ab", "é", "\U0001f600", "k\x00")


def string_has_exact_successor(
    samples: Sequence[str] = STRING_SUCCESSOR_SAMPLES,
    *,
    suffix: str = "\x00",
    rlimit: int | None = None,
) -> TheoremResult:
    """In code-point order ``x + "\\0"`` is the exact successor of ``x``.

    For each sample coordinate, Z3's string theory shows no event string separates
    ``through x`` from ``before x + suffix``. With the default suffix this holds (a pen
    proof: any ``p > x`` either extends ``x``, hence ``p >= x + "\\0"``, or differs from
    ``x`` at a larger code point, hence ``p > x + "\\0"``). The implementation treats
    strings as dense and ranks ``through x`` strictly below ``before x + "\\0"``: sound,
    but not the definition's equality. The witness of a refutation is the separating event.
    """
    started = time.perf_counter()
    name = "string_has_exact_successor"
    statement = (
        f"On Unicode strings in code-point order: D(through x) == D(before x+{suffix!r}) for "
        f"x in {list(samples)!r} — the order has an exact successor x ↦ x+'\\0', so "
        "through x and before x+'\\0' are one claim."
    )
    used = 0
    for sample in samples:
        scope = Scope(STRING_NATIVE)
        p = scope.position("event")
        claim = covers(STRING_NATIVE, through(z3_string(sample)), p) == covers(
            STRING_NATIVE, before(z3_string(sample + suffix)), p
        )
        answer = solve(scope, z3.Not(claim), name, rlimit)
        used = max(used, answer.used)
        if answer.sat:
            witness: dict[str, WitnessValue] = {"x": sample, **scope.witness(answer.model)}
            return TheoremResult(
                name,
                statement,
                Status.REFUTED,
                witness,
                time.perf_counter() - started,
                "",
                used,
                name,
            )
        if answer.unknown:
            return TheoremResult(
                name,
                statement,
                Status.UNKNOWN,
                None,
                time.perf_counter() - started,
                f"x={sample!r}: {answer.detail}",
                used,
                name,
            )
    return TheoremResult(
        name, statement, Status.PROVED, None, time.perf_counter() - started, "", used, name
    )


def string_before_empty_is_nothing(
    coordinate: str = "", *, rlimit: int | None = None
) -> TheoremResult:
    """``before ""`` covers no string at all: it is the same claim as ``nothing``.

    ``""`` is the least string in code-point order. The implementation ranks ``nothing``
    strictly below ``before ""`` and would publish ``before ""`` rather than withhold
    ``no_coverage``; that claim is vacuous (true, but claims nothing).
    """
    started = time.perf_counter()
    scope = Scope(STRING_NATIVE)
    p = scope.position("event")
    claim = z3.Not(covers(STRING_NATIVE, before(z3_string(coordinate)), p))
    statement = (
        f"On Unicode strings in code-point order: D(before {coordinate!r}) is empty, so "
        f"before {coordinate!r} == nothing."
    )
    return prove_valid("string_before_empty_is_nothing", statement, scope, claim, rlimit, started)
