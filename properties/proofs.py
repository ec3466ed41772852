"""Z3 proofs of the before/through cut algebra, derived from the downset definition.

No theorem assumes a closed-form comparison is right. Every one is stated over
docs/semantics.md section 2: a cut names a downset of event positions,

- ``D(nothing) = {}``, ``D(before x) = {p : p < x}``, ``D(through x) = {p : p <= x}``,
- ``c1 <= c2`` iff ``D(c1)`` is inside ``D(c2)`` for every set of events the order allows,

and a claim is *true* about a set of events when every event in its downset is final.
The closed form the implementation uses ("same coordinate: before < through; through x
equals before succ(x) only with an exact successor") is itself a theorem here
(``spec_order_exact``), proved equal to downset inclusion; merge, computed with that
closed form as the implementation computes it, is proved to be the greatest lower bound
of the inclusion order, sound, monotone and deterministic in its representation.

How each order is encoded, and why the encoding is sound:

``integer_successor``
    Coordinates and event positions are Z3 integers: events sit only on coordinates, so
    ``x + 1`` is the exact successor.
``integer_dense``
    Coordinates are integers but event positions are Z3 reals: an event may sit strictly
    between ``x`` and ``x + 1`` (a timestamp truncated to a precision). The reals are a
    dense order, so any witness found is a real possibility for such a source.
``string`` (universal theorems)
    An uninterpreted sort with a strict total order given only by axioms (irreflexive,
    transitive, total); no density, no successor, no least element is assumed. A theorem
    proved for every total order holds for the code-point order on Python strings, which
    is one. Z3's own string theory cannot be used symbolically: it times out on
    lexicographic order and silently mis-orders characters above U+2FFFF (its alphabet).
``string`` (witnesses)
    Strings of at most :data:`STRING_WITNESS_LENGTH` code points, each in
    ``[0, 0x10FFFF]``, ordered lexicographically by code point (the order of Python's
    ``str``). A witness only needs to exist, so a length bound cannot make one unsound.
``string`` (concrete facts)
    Z3's string theory with concrete coordinates and a symbolic event, which it decides
    quickly; used for :func:`decide_cut_order` and the two string-specific theorems.

Two facts about strings follow from the definition and are proved here because the
implementation's "strings are dense" treatment does not match them exactly (both
directions it errs in are safe: it never claims an inclusion that does not hold):
``x + "\\0"`` is the exact successor of ``x`` in code-point order, so
``through x == before x + "\\0"``; and ``""`` is the least string, so
``before "" == nothing``.

Verdicts are honest: a theorem expected to hold is ``proved`` only when Z3 answers
``unsat`` for its negation; ``unknown`` (the family's deterministic resource limit ran
out, incomplete quantifier reasoning) is reported as ``unknown``. Each check is bounded
by its family's rlimit in :data:`fencepost.solver.BUDGETS` (measured, times a margin),
never by wall time, so a verdict does not depend on the machine's load. Theorems about
unsoundness are existence statements (``there is a set of events where the rewrite
turns a true claim false``): ``proved`` means Z3 found the counterexample, which is
returned as the witness.

The pieces live in their own modules: :mod:`~fencepost.properties.cut_encoding`
(orders and symbolic cuts), :mod:`~fencepost.properties.cut_solving` (verdicts,
witnesses, the proof shapes), :mod:`~fencepost.properties.cut_theorems` (the
theorems) and :mod:`~fencepost.properties.cut_decisions` (deciding concrete
comparisons). This module is the registry ``fencepost prove`` runs, and
re-exports them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Final

from fencepost.properties.cut_decisions import (
    Inclusion,
    OrderKind,
    decide_cut_order,
    downset_inclusion,
)
from fencepost.properties.cut_encoding import (
    INTEGER_DENSE,
    INTEGER_SUCCESSOR,
    MAX_CODE_POINT,
    STRING_CODE_POINTS,
    STRING_NATIVE,
    STRING_TOTAL_ORDER,
    STRING_WITNESS_LENGTH,
    Z3_MAX_CHAR,
    Comparator,
    CutKind,
    CutValue,
    Expr,
    Merge,
    OrderEncoding,
    SymbolicCut,
    WitnessValue,
    before,
    covers,
    downset_leq,
    first_min_merge,
    if_cut,
    min_merge,
    nothing,
    same_downset,
    same_representation,
    spec_leq,
    through,
    z3_string,
)
from fencepost.properties.cut_solving import (
    ProofIncomplete,
    Scope,
    Status,
    TheoremResult,
    prove_exists,
    prove_valid,
    render_witness,
    witness_to_json,
)
from fencepost.properties.cut_theorems import (
    EVENTS_PER_PARTITION,
    MANUFACTURED_PREDECESSOR,
    MANUFACTURED_SUCCESSOR,
    RELABEL_BEFORE_AS_THROUGH,
    STRING_SUCCESSOR_SAMPLES,
    Rewrite,
    before_below_through,
    merge_deterministic,
    merge_glb,
    merge_monotone,
    merge_sound,
    rewrite_sound,
    rewrite_unsound,
    spec_order_exact,
    spec_order_sound,
    string_before_empty_is_nothing,
    string_has_exact_successor,
    through_equals_before_next,
    total_preorder,
)

__all__ = [
    "EVENTS_PER_PARTITION",
    "INTEGER_DENSE",
    "INTEGER_SUCCESSOR",
    "MANUFACTURED_PREDECESSOR",
    "MANUFACTURED_SUCCESSOR",
    "MAX_CODE_POINT",
    "RELABEL_BEFORE_AS_THROUGH",
    "STRING_CODE_POINTS",
    "STRING_NATIVE",
    "STRING_SUCCESSOR_SAMPLES",
    "STRING_TOTAL_ORDER",
    "STRING_WITNESS_LENGTH",
    "THEOREMS",
    "Z3_MAX_CHAR",
    "Comparator",
    "CutKind",
    "CutValue",
    "Expr",
    "Inclusion",
    "Merge",
    "OrderEncoding",
    "OrderKind",
    "ProofIncomplete",
    "Rewrite",
    "Scope",
    "Status",
    "SymbolicCut",
    "Theorem",
    "TheoremResult",
    "UnknownTheorem",
    "WitnessValue",
    "before",
    "before_below_through",
    "covers",
    "decide_cut_order",
    "downset_inclusion",
    "downset_leq",
    "first_min_merge",
    "if_cut",
    "merge_deterministic",
    "merge_glb",
    "merge_monotone",
    "merge_sound",
    "min_merge",
    "nothing",
    "prove_all",
    "prove_exists",
    "prove_valid",
    "render_witness",
    "rewrite_sound",
    "rewrite_unsound",
    "same_downset",
    "same_representation",
    "select",
    "spec_leq",
    "spec_order_exact",
    "spec_order_sound",
    "string_before_empty_is_nothing",
    "string_has_exact_successor",
    "through",
    "through_equals_before_next",
    "total_preorder",
    "witness_to_json",
    "z3_string",
]


@dataclass(frozen=True)
class Theorem:
    """A registry entry: the theorem's name, the verdict it must get, and how to run it."""

    name: str
    expected: Status
    run: Callable[[], TheoremResult]


def _registry() -> tuple[Theorem, ...]:
    proved, refuted = Status.PROVED, Status.REFUTED
    entries: list[Theorem] = []

    def add(name: str, expected: Status, run: Callable[[], TheoremResult]) -> None:
        entries.append(Theorem(name, expected, run))

    universal = (INTEGER_SUCCESSOR, INTEGER_DENSE, STRING_TOTAL_ORDER)
    witnesses = (INTEGER_SUCCESSOR, INTEGER_DENSE, STRING_CODE_POINTS)
    for order in universal:
        add(f"total_preorder.{order.key}", proved, partial(total_preorder, order))
    for order in (INTEGER_SUCCESSOR, INTEGER_DENSE):
        add(f"spec_order_exact.{order.key}", proved, partial(spec_order_exact, order))
    add("spec_order_sound.string", proved, partial(spec_order_sound, STRING_TOTAL_ORDER))
    for order in universal:
        add(f"before_below_through.{order.key}", proved, partial(before_below_through, order))
    add(
        "through_equals_before_next.integer_successor",
        proved,
        partial(through_equals_before_next, INTEGER_SUCCESSOR),
    )
    add(
        "through_equals_before_next.integer_dense",
        refuted,
        partial(through_equals_before_next, INTEGER_DENSE),
    )
    for rewrite in (MANUFACTURED_SUCCESSOR, MANUFACTURED_PREDECESSOR):
        add(
            f"{rewrite.key}_sound.integer_successor",
            proved,
            partial(rewrite_sound, INTEGER_SUCCESSOR, rewrite),
        )
    for order in witnesses:
        add(
            f"relabel_unsound.{order.key}",
            proved,
            partial(rewrite_unsound, order, RELABEL_BEFORE_AS_THROUGH),
        )
    for order in (INTEGER_DENSE, STRING_CODE_POINTS):
        add(
            f"manufactured_successor_unsound.{order.key}",
            proved,
            partial(rewrite_unsound, order, MANUFACTURED_SUCCESSOR),
        )
    add("string_has_exact_successor", proved, string_has_exact_successor)
    add("string_before_empty_is_nothing", proved, string_before_empty_is_nothing)
    for family in (merge_glb, merge_sound, merge_monotone, merge_deterministic):
        for order in universal:
            for size in (2, 3):
                add(
                    f"{family.__name__}.{order.key}.n{size}",
                    proved,
                    partial(family, order, size),
                )
    return tuple(entries)


#: Every theorem ``fencepost prove`` runs, in order, by name.
THEOREMS: Final[Mapping[str, Theorem]] = {t.name: t for t in _registry()}


class UnknownTheorem(KeyError):
    """A theorem name (or family) that is not in :data:`THEOREMS`."""

    def __init__(self, name: str) -> None:
        self.name = name
        families = sorted({n.split(".")[0] for n in THEOREMS})
        super().__init__(
            f"no theorem named {name!r}; use a full name from `fencepost prove --list` "
            f"or a family: {', '.join(families)}"
        )

    def __str__(self) -> str:
        return str(self.args[0])


def select(names: Iterable[str] = ()) -> list[Theorem]:
    """The theorems named, in registry order; all of them when ``names`` is empty.

    A name is a full theorem name (``merge_glb.integer_dense.n3``) or a prefix ending at a
    dot boundary (``merge_glb`` or ``merge_glb.integer_dense``).
    """
    wanted = list(names)
    if not wanted:
        return list(THEOREMS.values())
    chosen: set[str] = set()
    for name in wanted:
        matches = {n for n in THEOREMS if n == name or n.startswith(name + ".")}
        if not matches:
            raise UnknownTheorem(name)
        chosen |= matches
    return [t for n, t in THEOREMS.items() if n in chosen]


def prove_all(names: Iterable[str] = ()) -> list[TheoremResult]:
    """Run the selected theorems (all by default) in registry order."""
    return [theorem.run() for theorem in select(names)]
