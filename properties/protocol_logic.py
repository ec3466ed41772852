"""One formula language, two meanings: Z3 terms, or plain values over a finite state.

The protocol's transition relation and invariants (:mod:`fencepost.properties.protocol_actions`,
:mod:`fencepost.properties.protocol_lemmas`) are written once, as Python functions
over a :class:`Logic`. :class:`Z3Logic` turns them into Z3 formulas over
uninterpreted sorts (partitions, publishers, readers, events) and integers,
for the unbounded proof. :class:`PyLogic` evaluates the very same functions on
a finite state encoded from the executable model, which is how tests tie the
relation to every transition the explorer takes (evaluating a Z3 formula per
transition would take hours) and how a counterexample to induction is looked
for among reachable states.

Arithmetic and comparisons use Python operators, which both meanings share;
connectives, ``If`` and quantifiers go through the :class:`Logic`. Every value
is total (a lookup outside the finite domain gives the field's default), so
eager evaluation in :class:`PyLogic` never fails.

A cut is a :class:`CutT`: a coordinate in half units (the model's
``Cut.half``) and an endpoint kind (0 before, 1 through); *nothing* is
``(-1, 0)``. Its rank orders cuts as their downsets are ordered
(:func:`rank`), and an event at ``pos`` is in its downset when :func:`covers`
(docs/semantics.md section 2; the same formulas as :mod:`fencepost.model.cuts`).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Sequence
from typing import Any, NamedTuple, TypeAlias

import z3

from fencepost.solver import declare_sort

#: A Z3 term or formula, or a Python value standing for one (z3 ships no types).
Term: TypeAlias = Any

#: Element sorts: partitions, publishers, readers, events; and epochs (integers).
SORTS = ("P", "W", "R", "V")
EPOCH = "E"


class CutT(NamedTuple):
    """A cut as two terms: coordinate in half units, and kind (0 before, 1 through)."""

    half: Term
    kind: Term


NOTHING_HALF = -1
NOTHING_CUT = CutT(NOTHING_HALF, 0)


class Logic:
    """The connectives, conditionals and quantifiers of the formula language."""

    true: Term
    false: Term

    def And(self, *xs: Term) -> Term:
        raise NotImplementedError

    def Or(self, *xs: Term) -> Term:
        raise NotImplementedError

    def Not(self, x: Term) -> Term:
        raise NotImplementedError

    def Implies(self, a: Term, b: Term) -> Term:
        raise NotImplementedError

    def If(self, c: Term, a: Term, b: Term) -> Term:
        raise NotImplementedError

    def ForAll(self, sort: str, body: Callable[[Term], Term]) -> Term:
        """``body`` holds for every element of ``sort`` (``E``: every epoch)."""
        raise NotImplementedError

    def Exists(self, sort: str, body: Callable[[Term], Term]) -> Term:
        raise NotImplementedError

    def ForAllCuts(self, body: Callable[[CutT], Term]) -> Term:
        """``body`` holds for every cut a provider may claim: any integer coordinate >= 0,
        either kind."""
        raise NotImplementedError

    def Even(self, x: Term) -> Term:
        raise NotImplementedError

    # -- cuts --------------------------------------------------------------------------
    def IfCut(self, c: Term, a: CutT, b: CutT) -> CutT:
        return CutT(self.If(c, a.half, b.half), self.If(c, a.kind, b.kind))

    def CutEq(self, a: CutT, b: CutT) -> Term:
        return self.And(a.half == b.half, a.kind == b.kind)


def rank(L: Logic, succ: Term, c: CutT) -> Term:
    """Orders cuts as their downsets (docs/semantics.md section 2).

    Dense: ``2*half + kind``. With an exact successor (events only at integer
    coordinates, even halves): ``half + 2*kind``, so ``through x == before x+1``.
    """
    return L.If(succ, c.half + 2 * c.kind, 2 * c.half + c.kind)


def covers(L: Logic, c: CutT, pos: Term) -> Term:
    """An event at ``pos`` (half units, >= 0) lies in the downset of ``c``."""
    return L.Or(pos < c.half, L.And(c.kind == 1, pos == c.half))


def candidate(L: Logic, c: CutT) -> Term:
    """``c`` is a cut a provider may claim: an integer coordinate >= 0 of either kind."""
    return L.And(c.half >= 0, L.Even(c.half), L.Or(c.kind == 0, c.kind == 1))


def well_formed(L: Logic, c: CutT) -> Term:
    """``c`` is *nothing* or a cut a provider may claim."""
    return L.Or(L.CutEq(c, NOTHING_CUT), candidate(L, c))


def max_cut(L: Logic, succ: Term, a: CutT, b: CutT) -> CutT:
    """The higher of two cuts (``a`` on a tie, as the model keeps the first stored)."""
    return L.IfCut(rank(L, succ, b) > rank(L, succ, a), b, a)


# ---------------------------------------------------------------------------- Z3


class Z3Logic(Logic):
    """Formulas as Z3 terms over uninterpreted sorts (the unbounded proof)."""

    def __init__(self) -> None:
        self.sorts: dict[str, Any] = {
            "P": declare_sort("Partition"),
            "W": declare_sort("Publisher"),
            "R": declare_sort("Reader"),
            "V": declare_sort("Event"),
            EPOCH: z3.IntSort(),
        }
        self.true = z3.BoolVal(True)
        self.false = z3.BoolVal(False)
        self._fresh = itertools.count()

    def var(self, sort: str, stem: str = "x") -> Term:
        """A fresh bound variable of ``sort``."""
        return z3.Const(f"{stem}!{next(self._fresh)}", self.sorts[sort])

    def And(self, *xs: Term) -> Term:
        return z3.And(*xs) if xs else self.true

    def Or(self, *xs: Term) -> Term:
        return z3.Or(*xs) if xs else self.false

    def Not(self, x: Term) -> Term:
        return z3.Not(x)

    def Implies(self, a: Term, b: Term) -> Term:
        return z3.Implies(a, b)

    def If(self, c: Term, a: Term, b: Term) -> Term:
        return z3.If(c, a, b)

    def ForAll(self, sort: str, body: Callable[[Term], Term]) -> Term:
        x = self.var(sort, sort.lower())
        return z3.ForAll([x], body(x))

    def Exists(self, sort: str, body: Callable[[Term], Term]) -> Term:
        x = self.var(sort, sort.lower())
        return z3.Exists([x], body(x))

    def ForAllCuts(self, body: Callable[[CutT], Term]) -> Term:
        h = z3.Int(f"h!{next(self._fresh)}")
        k = z3.Int(f"k!{next(self._fresh)}")
        c = CutT(h, k)
        return z3.ForAll([h, k], z3.Implies(candidate(self, c), body(c)))

    def Even(self, x: Term) -> Term:
        return x % 2 == 0


class FiniteZ3Logic(Z3Logic):
    """Z3 terms over a finite universe: quantifiers become conjunctions over its elements.

    For asking Z3 about one concrete state (its successors): the formulas are
    quantifier-free, so Z3 decides them completely and fast. ``elements`` maps
    each sort to its constants; ``epochs`` and ``cuts`` bound the other domains.
    """

    def __init__(
        self, elements: dict[str, Sequence[Term]], epochs: Sequence[int], cuts: Iterable[CutT]
    ) -> None:
        super().__init__()
        self.elements = {**elements, EPOCH: [z3.IntVal(e) for e in epochs]}
        self.cuts = tuple(cuts)

    def ForAll(self, sort: str, body: Callable[[Term], Term]) -> Term:
        return self.And(*(body(x) for x in self.elements[sort]))

    def Exists(self, sort: str, body: Callable[[Term], Term]) -> Term:
        return self.Or(*(body(x) for x in self.elements[sort]))

    def ForAllCuts(self, body: Callable[[CutT], Term]) -> Term:
        return self.And(*(body(c) for c in self.cuts))


# ---------------------------------------------------------------------------- Python


class PyLogic(Logic):
    """Formulas evaluated on a finite state: quantifiers range over given domains.

    ``domains`` lists every partition, publisher, reader, event and epoch the
    state has; ``cuts`` every cut a provider may claim within the bounds (the
    model's candidate cuts): a ``ForAllCuts`` ranges over them.
    """

    def __init__(self, domains: dict[str, Sequence[Term]], cuts: Iterable[CutT]) -> None:
        self.domains = domains
        self.cuts = tuple(cuts)
        self.true = True
        self.false = False

    def And(self, *xs: Term) -> Term:
        return all(xs)

    def Or(self, *xs: Term) -> Term:
        return any(xs)

    def Not(self, x: Term) -> Term:
        return not x

    def Implies(self, a: Term, b: Term) -> Term:
        return (not a) or bool(b)

    def If(self, c: Term, a: Term, b: Term) -> Term:
        return a if c else b

    def ForAll(self, sort: str, body: Callable[[Term], Term]) -> Term:
        return all(body(x) for x in self.domains[sort])

    def Exists(self, sort: str, body: Callable[[Term], Term]) -> Term:
        return any(body(x) for x in self.domains[sort])

    def ForAllCuts(self, body: Callable[[CutT], Term]) -> Term:
        return all(body(c) for c in self.cuts)

    def Even(self, x: Term) -> Term:
        return x % 2 == 0

    def IfCut(self, c: Term, a: CutT, b: CutT) -> CutT:
        return a if c else b

    def CutEq(self, a: CutT, b: CutT) -> Term:
        return a.half == b.half and a.kind == b.kind
