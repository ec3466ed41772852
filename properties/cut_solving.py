"""Proving with Z3: verdicts, witnesses, and the two proof shapes of the cut theorems.

A :class:`Scope` gathers a theorem's free variables (coordinates, event
positions, flags, cuts) with their domain constraints and how to read them back
from a model; :func:`prove_valid` proves a claim for every value (``unsat`` of
its negation, else the counterexample), :func:`prove_exists` finds a witness.
Verdicts are honest: ``unknown`` (the family's resource limit ran out,
incomplete quantifier reasoning) is never counted as a proof. Every check runs
through :class:`fencepost.solver.Query`: a fresh context, and the deterministic
rlimit of the theorem's family (:data:`fencepost.solver.BUDGETS`), so a verdict
does not depend on the machine's load.
"""

from __future__ import annotations

import enum
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from functools import partial
from typing import Any

import z3

from fencepost.properties.cut_encoding import (
    CutValue,
    Expr,
    OrderEncoding,
    SymbolicCut,
    WitnessValue,
    covers,
)
from fencepost.solver import Answer, Query


class Status(enum.Enum):
    """Z3's verdict on a theorem."""

    PROVED = "proved"
    REFUTED = "refuted"
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class TheoremResult:
    """The outcome of one theorem.

    ``witness`` holds the concrete values of the theorem's free variables in Z3's model:
    the counterexample of a refuted claim, or the example that proves an existence
    statement (an unsoundness theorem). It is ``None`` when there is no model.
    ``detail`` says why Z3 answered ``unknown``, and is empty otherwise.
    ``rlimit_used`` is the most resource units one of its checks consumed, to compare
    with the limit of its ``family`` (:data:`fencepost.solver.BUDGETS`).
    """

    name: str
    statement: str
    status: Status
    witness: Mapping[str, WitnessValue] | None
    seconds: float
    detail: str = ""
    rlimit_used: int = 0
    family: str = ""

    def to_json(self) -> dict[str, object]:
        """A JSON-ready dict; reals become ``{"rational": "1/2"}``, cuts ``{kind, coordinate}``."""
        witness = (
            None
            if self.witness is None
            else {key: witness_to_json(value) for key, value in self.witness.items()}
        )
        return {
            "name": self.name,
            "statement": self.statement,
            "status": self.status.value,
            "witness": witness,
            "seconds": round(self.seconds, 4),
            "detail": self.detail,
            "rlimit_used": self.rlimit_used,
            "family": self.family,
        }


def witness_to_json(value: WitnessValue) -> object:
    """The JSON form of one witness value, unambiguous between strings and reals."""
    if isinstance(value, CutValue):
        return {"kind": value.kind, "coordinate": value.coordinate}
    if isinstance(value, Fraction):
        return {"rational": str(value)}
    return value


def render_witness(value: WitnessValue) -> str:
    """A one-line human rendering: strings quoted (``'a\\x00'``), reals as fractions."""
    if isinstance(value, str):
        return repr(value)
    return str(value)


class ProofIncomplete(RuntimeError):
    """Z3 answered ``unknown`` where a decision was required (see :func:`decide_cut_order`)."""


@dataclass(frozen=True)
class EventVar:
    position: Expr
    final: Expr


def claim_true(order: OrderEncoding, cut: SymbolicCut, events: Iterable[EventVar]) -> Expr:
    """The claim ``cut`` is true about ``events``: every event in its downset is final."""
    return z3.And(*[z3.Implies(covers(order, cut, e.position), e.final) for e in events])


@dataclass
class Scope:
    """The free variables of one theorem: their domain constraints and how to read them."""

    order: OrderEncoding
    constraints: list[Expr] = field(default_factory=list)
    preferences: list[Expr] = field(default_factory=list)
    readers: list[tuple[str, Callable[[Any], WitnessValue]]] = field(default_factory=list)

    def coordinate(self, name: str) -> Expr:
        value = z3.Const(name, self.order.coordinate_sort)
        self.constraints.append(self.order.domain(value))
        self.preferences.append(self.order.readable(value))
        self.readers.append((name, _reader(self.order.read_coordinate, value)))
        return value

    def position(self, name: str) -> Expr:
        value = z3.Const(name, self.order.position_sort)
        self.constraints.append(self.order.domain(value))
        self.preferences.append(self.order.readable(value))
        self.readers.append((name, _reader(self.order.read_position, value)))
        return value

    def flag(self, name: str) -> Expr:
        value = z3.Bool(name)
        self.readers.append((name, lambda model: z3.is_true(model.eval(value, True))))
        return value

    def cut(self, name: str) -> SymbolicCut:
        coordinate = z3.Const(f"{name}.coordinate", self.order.coordinate_sort)
        self.constraints.append(self.order.domain(coordinate))
        self.preferences.append(self.order.readable(coordinate))
        cut = SymbolicCut(z3.Bool(f"{name}.nothing"), z3.Bool(f"{name}.through"), coordinate)
        self.readers.append((name, partial(read_cut, self.order, cut)))
        return cut

    def events(self, prefix: str, count: int) -> list[EventVar]:
        return [
            EventVar(self.position(f"{prefix}{i}.position"), self.flag(f"{prefix}{i}.final"))
            for i in range(1, count + 1)
        ]

    def witness(self, model: Any) -> dict[str, WitnessValue]:
        return {name: read(model) for name, read in self.readers}


def _reader(
    read: Callable[[Any, Expr], WitnessValue], value: Expr
) -> Callable[[Any], WitnessValue]:
    return lambda model: read(model, value)


def read_cut(order: OrderEncoding, cut: SymbolicCut, model: Any) -> CutValue:
    if z3.is_true(model.eval(cut.is_nothing, True)):
        return CutValue.nothing()
    coordinate = order.read_coordinate(model, cut.coordinate)
    return CutValue(
        "through" if z3.is_true(model.eval(cut.is_through, True)) else "before", coordinate
    )


def solve(scope: Scope, formula: Expr, family: str, rlimit: int | None = None) -> Answer:
    """Check ``formula`` with the scope's axioms and constraints, under ``family``'s rlimit.

    The query is solved in a fresh Z3 context of its own (:class:`fencepost.solver.Query`),
    so the solver's search, and the resource units it consumes, depend on the query
    alone and not on whatever terms other queries created earlier in the process. The
    model comes back translated into the main context, where the scope's terms live.
    ``rlimit`` overrides the family's limit.
    """
    query = Query(family, rlimit=rlimit)
    query.add(*scope.order.axioms, *scope.constraints, formula)
    return query.check()


def family_of(name: str) -> str:
    """A theorem's rlimit family by default: its name up to the first dot
    (``merge_glb`` for ``merge_glb.string.n3``)."""
    return name.split(".")[0]


def prove_valid(
    name: str,
    statement: str,
    scope: Scope,
    claim: Expr,
    rlimit: int | None,
    started: float,
    family: str | None = None,
) -> TheoremResult:
    """``claim`` holds for every value of the scope's variables: ``unsat`` of its negation.

    Checked under the rlimit of ``family`` (by default :func:`family_of` the name), or
    ``rlimit``.
    """
    family = family or family_of(name)
    answer = solve(scope, z3.Not(claim), family, rlimit)
    seconds = time.perf_counter() - started
    status = Status.PROVED if answer.unsat else Status.REFUTED if answer.sat else Status.UNKNOWN
    return TheoremResult(
        name,
        statement,
        status,
        scope.witness(answer.model) if answer.sat else None,
        seconds,
        answer.detail,
        answer.used,
        family,
    )


def prove_exists(
    name: str,
    statement: str,
    scope: Scope,
    condition: Expr,
    rlimit: int | None,
    started: float,
    family: str | None = None,
) -> TheoremResult:
    """Some value of the scope's variables satisfies ``condition``; the model is the witness.

    A witness among readable values (letters and NUL for strings) is looked for first;
    it is still a witness, so the narrowing cannot make the verdict wrong, and only when
    there is none does the search widen to the whole domain. Each of the two checks
    has the whole rlimit of ``family`` (by default :func:`family_of` the name), or
    ``rlimit``.
    """
    family = family or family_of(name)
    narrowed = solve(scope, z3.And(condition, *scope.preferences), family, rlimit)
    if narrowed.sat:
        seconds = time.perf_counter() - started
        found = scope.witness(narrowed.model)
        return TheoremResult(
            name, statement, Status.PROVED, found, seconds, "", narrowed.used, family
        )
    answer = solve(scope, condition, family, rlimit)
    used = max(narrowed.used, answer.used)
    seconds = time.perf_counter() - started
    status = Status.PROVED if answer.sat else Status.REFUTED if answer.unsat else Status.UNKNOWN
    witness = scope.witness(answer.model) if answer.sat else None
    return TheoremResult(name, statement, status, witness, seconds, answer.detail, used, family)
