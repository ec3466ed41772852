"""The unbounded proof: section 7 as inductive invariants of the protocol, checked by Z3.

For each protocol (publication, ingest, and the two composed) the obligations are:

- **initiation**: every initial state satisfies each lemma of the invariant;
- **consecution**: for every action and every lemma, a state satisfying the
  whole invariant and the action's guard leads to a state satisfying the lemma;
- **safety**: the invariant implies each section 7 property.

Each obligation is one Z3 check (of its negation, for ``unsat``) under the
deterministic rlimit of its kind (the families ``protocol.initiation``,
``protocol.consecution``, ``protocol.safety`` in :data:`fencepost.solver.BUDGETS`;
the search for a small counterexample is ``protocol.counterexample``), never a
wall-clock timeout, so the verdicts do not depend on the machine's load;
``proved`` means ``unsat``, ``refuted`` that Z3 found a model (for a
consecution, a *counterexample to induction*: a state satisfying the
invariant from which the action breaks the lemma), ``unknown`` an exhausted
limit or incomplete quantifier reasoning, never counted as a proof. Each solver
(the initiation, the safety, and one per action) works in a Z3 context of its
own (:class:`fencepost.solver.Query`). Sorts are
uninterpreted (partitions, publishers, readers, events), epochs, revisions,
generations and budgets are unbounded integers, tokens and keys reals; every
configuration switch (order kind, cutover policy, faults, retry budgets) is a
free constant, so one proof covers them all.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import z3

from fencepost.properties.protocol_actions import (
    COMPOSED,
    INGEST,
    PROTOCOLS,
    PUBLICATION,
    Action,
    Param,
    actions_of,
)
from fencepost.properties.protocol_lemmas import (
    initial,
    invariant_of,
    properties_of,
)
from fencepost.properties.protocol_logic import CutT, Term, Z3Logic
from fencepost.properties.protocol_state import View, z3_state
from fencepost.solver import Printed, Query

PROVED = "proved"
REFUTED = "refuted"
UNKNOWN = "unknown"

INITIATION = "initiation"
CONSECUTION = "consecution"
SAFETY = "safety"


@dataclass(frozen=True)
class Obligation:
    """One check: its protocol, its kind, the lemma or property, and the action."""

    protocol: str
    kind: str
    lemma: str
    action: str | None = None

    @property
    def name(self) -> str:
        what = self.lemma if self.action is None else f"{self.action} keeps {self.lemma}"
        return f"{self.protocol}: {self.kind}: {what}"


@dataclass
class Outcome:
    """The verdict of one obligation, its time, Z3's model when refuted, and the resource
    units its first check consumed (to compare with its kind's rlimit)."""

    obligation: Obligation
    status: str
    seconds: float
    detail: str = ""
    model: Any = None
    pre: View | None = None
    post: View | None = None
    params: dict[str, Any] = field(default_factory=dict)
    rlimit_used: int = 0


def _params(L: Z3Logic, action: Action, tag: str) -> dict[str, Any]:
    """Fresh Z3 symbols for an action's parameters."""
    out: dict[str, Any] = {}
    for p in action.params:
        out[p.name] = _symbol(L, p, f"{tag}.{p.name}")
    return out


def _symbol(L: Z3Logic, p: Param, name: str) -> Any:
    kind = p.kind
    if kind in L.sorts:
        return z3.Const(name, L.sorts[kind])
    if kind == "Int":
        return z3.Int(name)
    if kind == "Real":
        return z3.Real(name)
    if kind == "Bool":
        return z3.Bool(name)
    if kind == "Cut":
        return CutT(z3.Int(f"{name}.half"), z3.Int(f"{name}.kind"))
    arg, value = kind.split("->")
    value_sort = {"Int": z3.IntSort(), "Real": z3.RealSort()}[value]
    fn = z3.Function(name, L.sorts[arg], value_sort)
    return lambda x: fn(x)


def _one_of(names: list[Term]) -> Callable[[Term], Term]:
    return lambda x: z3.Or(*(x == n for n in names))


def small(L: Z3Logic, s: View, params: dict[str, Any]) -> list[Term]:
    """Bounds that make a counterexample easy to read: at most two partitions, publishers
    and readers, three events, three epochs, small coordinates, budgets and generations.
    Only a preference: the counterexample found without them stands if none fits."""
    out: list[Term] = []
    for sort, most in (("P", 2), ("W", 2), ("R", 2), ("V", 3)):
        names = [z3.Const(f"small.{sort}{i}", L.sorts[sort]) for i in range(most)]
        out.append(L.ForAll(sort, _one_of(names)))

    def cut_small(c: CutT) -> Term:
        return z3.And(c.half <= 6, c.half >= -1, c.kind >= 0, c.kind <= 1)

    def between(x: Term, low: int, high: int) -> Term:
        return z3.And(x >= low, x <= high)

    out += [
        between(s.E(), 1, 3),
        between(s.rec_rev(), 0, 3),
        cut_small(s.rec_cut()),
        between(s.pub_retries, 0, 2),
        between(s.reader_retries, 0, 2),
        L.ForAll(
            "P",
            lambda p: L.ForAll(
                "E",
                lambda e: z3.And(
                    between(s.gen(p, e), 0, 3),
                    cut_small(s.cp_cut(p, e)),
                    cut_small(s.peak(p, e)),
                    between(s.cp_tok(p, e), -1, 8),
                ),
            ),
        ),
        L.ForAll(
            "V",
            lambda v: z3.And(
                between(s.pos(v), 0, 6), between(s.since(v), 1, 4), between(s.key(v), 0, 8)
            ),
        ),
        L.ForAll(
            "W",
            lambda w: z3.And(
                between(s.att(w), 0, 2),
                between(s.ret(w), 0, 2),
                between(s.rr(w), -1, 3),
                between(s.me(w), 0, 3),
                between(s.re(w), 0, 3),
                between(s.oe(w), 0, 3),
                between(s.orr(w), 0, 3),
                cut_small(s.pr(w)),
                cut_small(s.rc(w)),
                cut_small(s.oc(w)),
            ),
        ),
        L.ForAll(
            "R",
            lambda r: z3.And(
                between(s.rpass(r), 0, 2),
                between(s.rret(r), 0, 2),
                between(s.rexp(r), -1, 3),
                between(s.rep(r), 0, 3),
                between(s.rtok(r), -1, 8),
                between(s.rbt(r), -1, 8),
                cut_small(s.rb(r)),
                cut_small(s.rcl(r)),
            ),
        ),
    ]
    for value in params.values():
        if isinstance(value, CutT):
            out.append(cut_small(value))
    return out


def _idle_other_half(L: Z3Logic, s: View, action: Action) -> list[Term]:
    """In the composed protocol: the processes of the half ``action`` is not in, idle."""
    if INGEST in action.protocols and PUBLICATION not in action.protocols:
        return [L.ForAll("W", lambda w: z3.And(s.ph(w) == 0, s.oe(w) == 0))]
    if PUBLICATION in action.protocols and INGEST not in action.protocols:
        return [L.ForAll("R", lambda r: s.rph(r) == 0)]
    return []


#: The family of the search for a small counterexample (a later stage of an obligation).
COUNTEREXAMPLE = "protocol.counterexample"


def family_of(kind: str) -> str:
    """The rlimit family of an obligation kind: ``protocol.consecution`` and so on."""
    return f"protocol.{kind}"


class Hints:
    """The counterexample stage's extra assertions for one action, built on first use.

    ``prefer`` (small universes, :func:`small`) and ``quiet`` (the other half's
    processes idle, :func:`_idle_other_half`) matter only to an obligation whose first
    check is not ``unsat``; in a passing run no obligation needs them, so building and
    printing them for every action (a third of the proof's printing) was wasted work.
    Their bound variables' names are reserved when the action is set up
    (:func:`_hints_of`), so building them later, or never, leaves every formula's
    names -- and so its text and the resource units it consumes -- as they were.
    Cost when used: one build and one print per action.
    """

    def __init__(self, make: Callable[[], tuple[list[Term], list[Term]]] | None = None) -> None:
        self._make = make
        self._built: tuple[Printed | None, Printed | None] | None = None

    def _build(self) -> tuple[Printed | None, Printed | None]:
        if self._built is None:
            prefer, quiet = self._make() if self._make is not None else ([], [])
            self._built = (
                Printed(*prefer) if prefer else None,
                Printed(*quiet) if quiet else None,
            )
        return self._built

    @property
    def prefer(self) -> Printed | None:
        return self._build()[0]

    @property
    def quiet(self) -> Printed | None:
        return self._build()[1]


_NO_HINTS = Hints()


def _check(query: Query, negated: Printed, hints: Hints = _NO_HINTS) -> tuple[str, Any, str, int]:
    """Decide a goal over the query's hypotheses from its ``negated`` form: proved (the
    negation unsat), refuted (a model), or unknown; with the units the first check
    consumed.

    Stages, each under a deterministic rlimit: a first try (the obligation's family);
    then, when it is undecided, small universes (``hints.prefer``) and small universes
    with the other half's processes idle (``hints.quiet``), under
    ``protocol.counterexample`` -- a counterexample among them is one (their unsat
    proves nothing). A counterexample found is shrunk towards ``prefer`` when it can be.
    The hints are built only when the first check is not ``unsat``.
    """
    query.push()
    query.add(negated)
    try:
        first = query.check()
        answer, model, reason = first.result, first.model, first.detail
        prefer = hints.prefer if not first.unsat else None
        quiet = hints.quiet if prefer is not None else None
        if first.unknown and prefer:
            stages: list[list[Printed]] = [[prefer], [prefer] + ([quiet] if quiet else [])]
            for extra in stages:
                got = query.check(*extra, family=COUNTEREXAMPLE)
                if got.sat:
                    answer, model, reason = got.result, got.model, ""
                    break
        elif first.sat and prefer:
            got = query.check(prefer, family=COUNTEREXAMPLE)
            if got.sat:
                model = got.model
    finally:
        query.pop()
    if answer == z3.unsat:
        return PROVED, None, "", first.used
    if answer == z3.sat:
        return REFUTED, model, "", first.used
    return UNKNOWN, None, reason, first.used


#: The bound variables :func:`small` names: one per quantifier it writes (four sorts'
#: element lists, partition-and-epoch, events, publishers, readers).
_SMALL_NAMES = 9


def _hint_names(protocol: str, action: Action) -> int:
    """How many bound variables ``action``'s hints name (:func:`small`, the idle half)."""
    idle = protocol == COMPOSED and (INGEST in action.protocols) != (
        PUBLICATION in action.protocols
    )
    return _SMALL_NAMES + (1 if idle else 0)


def _hints_of(
    L: Z3Logic, protocol: str, s: View, action: Action, params: dict[str, Any]
) -> Callable[[], tuple[list[Term], list[Term]]]:
    """How to build ``action``'s counterexample hints, later, under the same names.

    The names the hints' bound variables would have taken from ``L`` now are reserved
    (``L``'s counter moves past them), and the hints, when built, are built in a logic
    of their own counting from the first of them: every formula gets exactly the names
    it got when the hints were built here, eagerly, so its text -- and the resource
    units Z3 spends on it, which depend on the names -- are unchanged.
    """
    count = _hint_names(protocol, action)
    first = next(L._fresh)
    for _ in range(count - 1):
        next(L._fresh)

    def make() -> tuple[list[Term], list[Term]]:
        own = Z3Logic()
        own._fresh = itertools.count(first)
        prefer = small(own, s, params)
        idle = _idle_other_half(own, s, action) if protocol == COMPOSED else []
        used = next(own._fresh) - first
        if used != count:
            raise AssertionError(
                f"{action.name}'s hints named {used} bound variables, {count} were reserved: "
                "update _SMALL_NAMES or _hint_names with small() and _idle_other_half()"
            )
        return prefer, idle

    return make


def _solver(kind: str, rlimit: int | None) -> Query:
    return Query(family_of(kind), rlimit=rlimit, params={"smt.mbqi": True})


def prove_protocol(
    protocol: str,
    *,
    mutant: str | None = None,
    rlimit: int | None = None,
    actions: Iterable[str] | None = None,
    lemmas: Iterable[str] | None = None,
    kinds: Sequence[str] = (INITIATION, CONSECUTION, SAFETY),
    without: Iterable[str] = (),
    report: Callable[[Outcome], None] | None = None,
) -> list[Outcome]:
    """Run ``protocol``'s obligations (optionally only some actions / lemmas / kinds).

    ``mutant`` switches a model mutant on in the actions (the induction should then
    fail); ``without`` drops lemmas from the invariant (to show each one is needed).
    ``report`` is called with each outcome as it is decided. ``rlimit`` overrides the
    limit of every obligation's first check (its family's, by default).
    """
    if protocol not in PROTOCOLS:
        raise ValueError(f"unknown protocol {protocol!r}; choose one of {', '.join(PROTOCOLS)}")
    L = Z3Logic()
    s = z3_state(L)
    dropped = set(without)
    invariant = [x for x in invariant_of(protocol) if x.name not in dropped]
    wanted = set(lemmas) if lemmas is not None else None
    chosen = [x for x in invariant if wanted is None or x.name in wanted]
    inv_terms = [x.formula(L, s) for x in invariant]
    inv_printed = Printed(*inv_terms)
    outcomes: list[Outcome] = []

    def done(out: Outcome) -> None:
        outcomes.append(out)
        if report is not None:
            report(out)

    if INITIATION in kinds:
        solver = _solver(INITIATION, rlimit)
        solver.add(initial(L, s))
        negated = _negations([lemma.formula(L, s) for lemma in chosen])
        for lemma, goal in zip(chosen, negated, strict=True):
            ob = Obligation(protocol, INITIATION, lemma.name)
            done(_run(solver, ob, goal, pre=s))
    if CONSECUTION in kinds:
        names = set(actions) if actions is not None else None
        for action in actions_of(protocol):
            if names is not None and action.name not in names:
                continue
            prm = _params(L, action, action.name)
            guard, changes = action.build(L, s, prm, mutant)
            post = s.replace(**changes)
            solver = _solver(CONSECUTION, rlimit)
            solver.add(inv_printed, guard)
            hints = Hints(_hints_of(L, protocol, s, action, prm))
            negated = _negations([lemma.formula(L, post) for lemma in chosen])
            for lemma, goal in zip(chosen, negated, strict=True):
                ob = Obligation(protocol, CONSECUTION, lemma.name, action.name)
                done(_run(solver, ob, goal, s, post, prm, hints))
    if SAFETY in kinds:
        solver = _solver(SAFETY, rlimit)
        solver.add(inv_printed)
        props = [p for p in properties_of(protocol) if wanted is None or p.name in wanted]
        negated = _negations([prop.formula(L, s) for prop in props])
        for prop, goal in zip(props, negated, strict=True):
            ob = Obligation(protocol, SAFETY, prop.name)
            done(_run(solver, ob, goal, pre=s))
    return outcomes


def _negations(goals: list[Term]) -> list[Printed]:
    """Each goal's negation, printed together (one vocabulary, printed once)."""
    negated = Printed(*[z3.Not(g) for g in goals]).each()
    if len(negated) != len(goals):
        raise AssertionError(f"{len(goals)} goals printed as {len(negated)} assertions")
    return negated


def _run(
    solver: Query,
    ob: Obligation,
    goal: Printed,
    pre: View | None = None,
    post: View | None = None,
    params: dict[str, Any] | None = None,
    hints: Hints = _NO_HINTS,
) -> Outcome:
    started = time.perf_counter()
    status, model, reason, used = _check(solver, goal, hints)
    seconds = time.perf_counter() - started
    return Outcome(ob, status, seconds, reason, model, pre, post, params or {}, used)


def prove_all(
    *,
    mutant: str | None = None,
    protocols: Sequence[str] = PROTOCOLS,
    report: Callable[[Outcome], None] | None = None,
) -> list[Outcome]:
    """Every obligation of every protocol (publication, ingest, composed), in order."""
    out: list[Outcome] = []
    for protocol in protocols:
        out.extend(prove_protocol(protocol, mutant=mutant, report=report))
    return out
