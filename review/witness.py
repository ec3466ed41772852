"""Z3 witnesses: concrete events that make a contract's derived claim false.

Each function states, as Z3 constraints, (a) what the provider's documented
facts allow (positions on the contract's order: integers when the successor is
exact, rationals when events may sit between integer labels, strings by code
point; distinct positions unless several events may share one) and (b) the
negation of the derived claim. A model is a witness: events the provider may
produce under which the claim is false. ``None`` means Z3 proved no such events
exist (the claim is true under the facts).

Among models, one with readable positions is preferred (the anchor coordinate
itself, then the half-way point after it), by asking Z3 again with those values
pinned; the preference never changes whether a witness exists. Every witness is
re-checked by plain arithmetic (:meth:`~fencepost.review.findings.Witness.verify`)
before it is shown.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from fractions import Fraction

import z3

from fencepost.contracts import CoordinateKind, Encoding, OrderFacts, encode
from fencepost.impl.orders import Coordinate
from fencepost.review.findings import (
    Cutlike,
    Position,
    Witness,
    WitnessEvent,
    WitnessKind,
    show_position,
)
from fencepost.solver import Query

#: When a caught-up signal is given, in milliseconds of the witness's clock.
SIGNAL_TIME = 1000


@dataclass(frozen=True)
class Axis:
    """The positions an order allows, as Z3 sees them."""

    facts: OrderFacts
    anchor: Coordinate

    @property
    def sort(self) -> str:
        if self.facts.kind is CoordinateKind.STRING:
            return "string"
        return "int" if self.facts.successor else "real"

    def var(self, name: str) -> z3.ExprRef:
        if self.sort == "string":
            return z3.String(name)
        return z3.Int(name) if self.sort == "int" else z3.Real(name)

    def val(self, value: Position) -> z3.ExprRef:
        if self.sort == "string":
            assert isinstance(value, str)
            return z3.StringVal(value)
        assert not isinstance(value, str)
        if self.sort == "int":
            return z3.IntVal(int(value))
        frac = Fraction(value)
        return z3.Q(frac.numerator, frac.denominator)

    def read(self, model: z3.ModelRef, var: z3.ExprRef) -> Position:
        value = model.eval(var, model_completion=True)
        if self.sort == "string":
            return _z3_text(str(value.as_string()))
        if self.sort == "int":
            return int(value.as_long())
        frac = Fraction(value.as_fraction())
        return frac.numerator if frac.denominator == 1 else frac

    def shifted(self, delta: int) -> Position:
        """The anchor moved by ``delta`` (integer orders only)."""
        if delta == 0:
            return self.anchor
        assert isinstance(self.anchor, int)
        return self.anchor + delta

    def show(self, p: Position) -> str:
        """A position in the provider's own notation; a rational between integers as x + a/b."""
        if isinstance(p, Fraction) and p.denominator != 1:
            if self.facts.encoding is Encoding.INTEGER:
                return show_position(p)
            whole = p.numerator // p.denominator
            return f"{encode(self.facts.encoding, whole)} + {p - whole}"
        if isinstance(p, Fraction):
            p = p.numerator
        return encode(self.facts.encoding, p)

    def cut(self, cut: Cutlike) -> str:
        """A cut in the provider's notation: ``before 16/B374D848``."""
        return f"{cut.kind} {self.show(cut.at)}"

    def hints(self, at: Position) -> list[Position]:
        """Readable candidate positions near ``at``, most readable first."""
        if self.sort == "string":
            return [at]
        assert not isinstance(at, str)
        out: list[Position] = [at, at - 1, at + 1]
        if self.sort == "real":
            out[1:1] = [Fraction(at) + Fraction(1, 2), Fraction(at) - Fraction(1, 2)]
        return out


def _z3_text(escaped: str) -> str:
    """A Z3 string model as text: Z3 writes characters outside printable ASCII as \\u{XXXX}."""
    return re.sub(r"\\u\{([0-9a-fA-F]+)\}", lambda m: chr(int(m.group(1), 16)), escaped)


def _shown(axis: Axis, events: tuple[WitnessEvent, ...]) -> tuple[WitnessEvent, ...]:
    """The events with their positions also written in the provider's notation."""
    return tuple(replace(e, shown=axis.show(e.at)) for e in events)


def in_downset(kind: str, at: z3.ExprRef, p: z3.ExprRef) -> z3.BoolRef:
    """``p`` is in ``D(kind at)``: ``p < at`` for before, ``p <= at`` for through."""
    return p < at if kind == "before" else p <= at


def _solve(
    constraints: Sequence[z3.BoolRef], preferences: Sequence[Sequence[z3.BoolRef]]
) -> z3.ModelRef | None:
    """A model of ``constraints``, the first preference it can also satisfy applied.

    Each check is bounded by the ``review.witness`` rlimit (deterministic, never wall
    time: :mod:`fencepost.solver`), so a review's findings do not depend on load.
    """
    query = Query("review.witness")
    query.add(*constraints)
    answer = query.check()
    if answer.unknown:
        raise RuntimeError(f"Z3 could not decide a witness: {answer.detail}")
    if not answer.sat:
        return None
    for preference in preferences:
        preferred = query.check(*preference)
        if preferred.sat:
            return preferred.model
    return answer.model


def _point_preferences(axis: Axis, var: z3.ExprRef, near: Position) -> list[list[z3.BoolRef]]:
    return [[var == axis.val(h)] for h in axis.hints(near)]


def outside(
    axis: Axis,
    claim: Cutlike,
    guarantee: Cutlike,
    claim_text: str,
    guarantee_text: str,
    consequence: str,
) -> Witness | None:
    """An event in ``D(claim)`` outside ``D(guarantee)``, or None if ``D(claim) ⊆ D(guarantee)``."""
    p = axis.var("p")
    constraints = [
        in_downset(claim.kind, axis.val(claim.at), p),
        z3.Not(in_downset(guarantee.kind, axis.val(guarantee.at), p)),
    ]
    model = _solve(constraints, _point_preferences(axis, p, guarantee.at))
    if model is None:
        return None
    at = axis.read(model, p)
    between = ""
    if isinstance(at, Fraction) and at.denominator != 1:
        lo = at.numerator // at.denominator
        between = (
            f" (between {axis.show(lo)} and {axis.show(lo + 1)}: the order has no exact "
            "successor, so an event can sit there)"
        )
    event = WitnessEvent(
        "e1", "p0", at, f"in D({axis.cut(claim)}), not in D({axis.cut(guarantee)})"
    )
    explanation = (
        f"e1 at {axis.show(at)}{between} is in D({axis.cut(claim)}) but not in "
        f"D({axis.cut(guarantee)}): {consequence}"
    )
    return Witness(
        WitnessKind.OUTSIDE,
        claim,
        claim_text,
        guarantee,
        guarantee_text,
        _shown(axis, (event,)),
        explanation,
    )


def tie(axis: Axis, claim: Cutlike, claim_text: str, guarantee_text: str) -> Witness | None:
    """Two events at one coordinate; the boundary names the first, the claim covers both.

    Positions are ``(coordinate, seq)`` with ``seq`` the provider's order among
    events sharing a coordinate; an event-level boundary at ``(x, s1)`` covers
    ``(p, s)`` only when ``p < x`` or ``p = x and s <= s1``.
    """
    x = axis.val(claim.at)
    p1, p2 = axis.var("p1"), axis.var("p2")
    s1, s2 = z3.Int("s1"), z3.Int("s2")
    covered = z3.Or(p2 < p1, z3.And(p2 == p1, s2 <= s1))
    constraints = [
        p1 == x,
        s1 >= 1,
        s2 >= 1,
        in_downset(claim.kind, x, p2),
        z3.Not(covered),
    ]
    model = _solve(constraints, [[p2 == x, s1 == 1, s2 == 2]])
    if model is None:
        return None
    at1, at2 = axis.read(model, p1), axis.read(model, p2)
    seq1, seq2 = model.eval(s1).as_long(), model.eval(s2).as_long()
    events = (
        WitnessEvent("e1", "p0", at1, "the event the provider's boundary names", seq=seq1),
        WitnessEvent(
            "e2",
            "p0",
            at2,
            "shares the coordinate, comes after e1, not yet returned",
            seq=seq2,
        ),
    )
    explanation = (
        f"e1 and e2 share coordinate {axis.show(at1)}; the provider's boundary is at e1, "
        f"so e2 was not yet returned, yet {axis.cut(claim)} covers every event at "
        f"{axis.show(claim.at)}: e2 would be certified without having been seen."
    )
    return Witness(
        WitnessKind.TIE, claim, claim_text, None, guarantee_text, _shown(axis, events), explanation
    )


def late(
    axis: Axis, claim: Cutlike, claim_text: str, guarantee_text: str, shared: bool
) -> Witness | None:
    """An event in ``D(claim)`` that became visible after a caught-up signal."""
    x = axis.val(claim.at)
    p, t = axis.var("p"), z3.Int("t")
    constraints = [in_downset(claim.kind, x, p), t > SIGNAL_TIME]
    if not shared:
        constraints.append(p != x)  # the record at x is the one the signal came with
    preferences = [[p == axis.val(h), t == SIGNAL_TIME + 1] for h in axis.hints(claim.at)]
    model = _solve(constraints, preferences)
    if model is None:
        return None
    at, when = axis.read(model, p), model.eval(t).as_long()
    events = (
        WitnessEvent(
            "e0", "p0", claim.at, "the last record returned with the caught-up signal", time=0
        ),
        WitnessEvent("e1", "p0", at, "visible only after the signal", time=when),
    )
    explanation = (
        f"The signal at t={SIGNAL_TIME}ms said 'caught up at this moment'. e1 at "
        f"{axis.show(at)} is in D({axis.cut(claim)}) but became visible at t={when}ms: "
        "certifying would cover an event that had not been delivered."
    )
    return Witness(
        WitnessKind.LATE,
        claim,
        claim_text,
        None,
        guarantee_text,
        _shown(axis, events),
        explanation,
        signal_time=SIGNAL_TIME,
    )


def unfinal(
    axis: Axis, claim: Cutlike, claim_text: str, guarantee_text: str, shared: bool, why: str
) -> Witness | None:
    """An event in ``D(claim)`` that the source had not finalized (or not returned)."""
    x = axis.val(claim.at)
    p = axis.var("p")
    constraints = [in_downset(claim.kind, x, p)]
    if not shared:
        constraints.append(p != x)
    model = _solve(constraints, _point_preferences(axis, p, claim.at))
    if model is None:
        return None
    at = axis.read(model, p)
    events = (
        WitnessEvent("e0", "p0", claim.at, "the event the claim's value came from"),
        WitnessEvent("e1", "p0", at, why, final=False),
    )
    explanation = f"e1 at {axis.show(at)} is in D({axis.cut(claim)}) but {why}."
    return Witness(
        WitnessKind.UNFINAL,
        claim,
        claim_text,
        None,
        guarantee_text,
        _shown(axis, events),
        explanation,
    )


def incomparable(axis: Axis, claim: Cutlike, claim_text: str) -> Witness | None:
    """Two partitions whose positions say nothing about each other's order of events.

    Partition A's event is not covered by the scalar cut, partition B's is,
    yet A's happened first: the scalar is not a prefix of any order the events
    share.
    """
    x = axis.val(claim.at)
    a, b = axis.var("a"), axis.var("b")
    ta, tb = z3.Int("ta"), z3.Int("tb")
    constraints = [
        z3.Not(in_downset(claim.kind, x, a)),
        in_downset(claim.kind, x, b),
        ta < tb,
        ta >= 0,
    ]
    preferences: list[list[z3.BoolRef]] = []
    if axis.sort != "string":
        assert not isinstance(claim.at, str)
        preferences.append(
            [a == axis.val(claim.at + 7), b == axis.val(claim.at - 7), ta == 1, tb == 2]
        )
    model = _solve(constraints, preferences)
    if model is None:
        return None
    pa, pb = axis.read(model, a), axis.read(model, b)
    wa, wb = model.eval(ta).as_long(), model.eval(tb).as_long()
    events = (
        WitnessEvent("a1", "A", pa, "not covered by the scalar cut; happened first", time=wa),
        WitnessEvent("b1", "B", pb, "covered by the scalar cut; happened later", time=wb),
    )
    explanation = (
        f"Positions of A and B are numbered independently. a1 (A at {axis.show(pa)}, "
        f"time {wa}) is outside D({axis.cut(claim)}) while b1 (B at {axis.show(pb)}, time {wb}) is "
        "inside: the scalar frontier reports b1 as covered before a1, which happened "
        "earlier. A single cut cannot be a prefix of both partitions' histories."
    )
    return Witness(
        WitnessKind.INCOMPARABLE, claim, claim_text, None, "", _shown(axis, events), explanation
    )


def new_member(axis: Axis, claim: Cutlike, claim_text: str) -> Witness | None:
    """An event of a partition added after the claim's membership was fixed."""
    x = axis.val(claim.at)
    p = axis.var("p")
    model = _solve([in_downset(claim.kind, x, p)], _point_preferences(axis, p, claim.at))
    if model is None:
        return None
    at = axis.read(model, p)
    events = (WitnessEvent("e1", "p-new", at, "in a partition added after the claim was computed"),)
    explanation = (
        f"Partition p-new joins; its event e1 at {axis.show(at)} lies in D({axis.cut(claim)}), "
        "but the published claim was computed over the old members only and nothing "
        "told readers that the membership changed."
    )
    return Witness(
        WitnessKind.NEW_MEMBER,
        claim,
        claim_text,
        None,
        "",
        _shown(axis, events),
        explanation,
        members=("p0",),
    )
