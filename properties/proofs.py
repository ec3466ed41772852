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
``unsat`` for its negation; ``unknown`` (timeout, incomplete quantifier reasoning) is
reported as ``unknown``. Theorems about unsoundness are existence statements (``there is
a set of events where the rewrite turns a true claim false``): ``proved`` means Z3 found
the counterexample, which is returned as the witness.
"""

from __future__ import annotations

import enum
import itertools
import re
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from functools import partial
from typing import Any, Final, Literal, TypeAlias

import z3

#: A Z3 term or formula (z3 ships no type information).
Expr: TypeAlias = Any

#: Per-theorem Z3 budget in milliseconds.
DEFAULT_TIMEOUT_MS: Final = 10_000

#: Length bound of the code-point strings used to find string witnesses.
STRING_WITNESS_LENGTH: Final = 3

#: The largest Unicode code point (Python's ``chr`` limit).
MAX_CODE_POINT: Final = 0x10FFFF

#: The largest character Z3's string theory orders correctly (SMT-LIB's alphabet).
Z3_MAX_CHAR: Final = 0x2FFFF

#: Events per partition in the truth-based theorems. Truth of a claim is a conjunction
#: over events, so one event already reaches every counterexample; two show that several
#: events (possibly at one coordinate) change nothing.
EVENTS_PER_PARTITION: Final = 2


# --------------------------------------------------------------------------- results


class Status(enum.Enum):
    """Z3's verdict on a theorem."""

    PROVED = "proved"
    REFUTED = "refuted"
    UNKNOWN = "unknown"


CutKind: TypeAlias = Literal["nothing", "before", "through"]


@dataclass(frozen=True)
class CutValue:
    """A concrete cut, as read back from a Z3 model or handed to :func:`decide_cut_order`.

    ``coordinate`` is ``None`` exactly for ``nothing``. On the abstract total order used
    for universal string theorems a coordinate is an opaque element name
    (``TotalOrderElement!val!0``): the theorem holds for every total order, so there is
    no particular string to show.
    """

    kind: CutKind
    coordinate: int | str | None = None

    def __post_init__(self) -> None:
        if self.kind not in ("nothing", "before", "through"):
            raise ValueError(f"cut kind must be nothing, before or through, not {self.kind!r}")
        if self.kind == "nothing":
            if self.coordinate is not None:
                raise ValueError("the nothing cut has no coordinate; pass coordinate=None")
        elif type(self.coordinate) not in (int, str):
            raise ValueError(
                f"a {self.kind} cut needs an int or str coordinate, "
                f"not {type(self.coordinate).__name__}"
            )

    @staticmethod
    def nothing() -> CutValue:
        return CutValue("nothing")

    @staticmethod
    def before(coordinate: int | str) -> CutValue:
        return CutValue("before", coordinate)

    @staticmethod
    def through(coordinate: int | str) -> CutValue:
        return CutValue("through", coordinate)

    def __str__(self) -> str:
        return "nothing" if self.kind == "nothing" else f"{self.kind} {self.coordinate!r}"


#: A value in a witness: an integer coordinate, a real event position, a string, a
#: finality flag, or a cut.
WitnessValue: TypeAlias = bool | int | Fraction | str | CutValue


@dataclass(frozen=True)
class TheoremResult:
    """The outcome of one theorem.

    ``witness`` holds the concrete values of the theorem's free variables in Z3's model:
    the counterexample of a refuted claim, or the example that proves an existence
    statement (an unsoundness theorem). It is ``None`` when there is no model.
    ``detail`` says why Z3 answered ``unknown``, and is empty otherwise.
    """

    name: str
    statement: str
    status: Status
    witness: Mapping[str, WitnessValue] | None
    seconds: float
    detail: str = ""

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


# --------------------------------------------------------------------------- orders


@dataclass(frozen=True)
class OrderEncoding:
    """How one kind of coordinate order is written in Z3.

    ``lt``/``eq`` compare event positions; ``embed`` turns a coordinate into the position
    it names. ``domain`` is the well-formedness of a value of the sort (``True`` except for
    bounded code-point strings); ``readable`` narrows it to values a person reads at a
    glance, tried first when looking for a witness. ``successor`` is the exact successor
    the order declares, if any. ``increment`` is the arithmetic "next" coordinate a
    careless implementation would manufacture (``x + 1``, or the last code point plus
    one), with ``incrementable`` saying where it is defined.
    """

    key: str
    description: str
    coordinate_sort: Expr
    position_sort: Expr
    embed: Callable[[Expr], Expr]
    lt: Callable[[Expr, Expr], Expr]
    eq: Callable[[Expr, Expr], Expr]
    read_coordinate: Callable[[Any, Expr], int | str]
    read_position: Callable[[Any, Expr], WitnessValue]
    domain: Callable[[Expr], Expr] = lambda _value: z3.BoolVal(True)
    successor: Callable[[Expr], Expr] | None = None
    increment: Callable[[Expr], Expr] | None = None
    incrementable: Callable[[Expr], Expr] = lambda _value: z3.BoolVal(True)
    axioms: tuple[Expr, ...] = ()
    readable: Callable[[Expr], Expr] = lambda _value: z3.BoolVal(True)

    def le(self, a: Expr, b: Expr) -> Expr:
        return z3.Or(self.lt(a, b), self.eq(a, b))

    def coordinate_lt(self, a: Expr, b: Expr) -> Expr:
        return self.lt(self.embed(a), self.embed(b))

    def coordinate_eq(self, a: Expr, b: Expr) -> Expr:
        return self.eq(self.embed(a), self.embed(b))


def _read_int(model: Any, value: Expr) -> int:
    return int(model.eval(value, model_completion=True).as_long())


def _read_real(model: Any, value: Expr) -> Fraction:
    evaluated = model.eval(value, model_completion=True)
    return Fraction(evaluated.as_fraction())


def _read_opaque(model: Any, value: Expr) -> str:
    return str(model.eval(value, model_completion=True))


INTEGER_SUCCESSOR: Final = OrderEncoding(
    key="integer_successor",
    description="integer order with exact successor (events only at integers)",
    coordinate_sort=z3.IntSort(),
    position_sort=z3.IntSort(),
    embed=lambda x: x,
    lt=lambda a, b: a < b,
    eq=lambda a, b: a == b,
    read_coordinate=_read_int,
    read_position=_read_int,
    successor=lambda x: x + 1,
    increment=lambda x: x + 1,
)

INTEGER_DENSE: Final = OrderEncoding(
    key="integer_dense",
    description="integer order without successor (events may sit between integers)",
    coordinate_sort=z3.IntSort(),
    position_sort=z3.RealSort(),
    embed=z3.ToReal,
    lt=lambda a, b: a < b,
    eq=lambda a, b: a == b,
    read_coordinate=_read_int,
    read_position=_read_real,
    increment=lambda x: x + 1,
)


def _total_order_encoding() -> OrderEncoding:
    element = z3.DeclareSort("TotalOrderElement")
    precedes = z3.Function("precedes", element, element, z3.BoolSort())
    a, b, c = z3.Consts("a b c", element)
    axioms = (
        z3.ForAll([a], z3.Not(precedes(a, a)), patterns=[precedes(a, a)]),
        z3.ForAll(
            [a, b, c],
            z3.Implies(z3.And(precedes(a, b), precedes(b, c)), precedes(a, c)),
            patterns=[z3.MultiPattern(precedes(a, b), precedes(b, c))],
        ),
        z3.ForAll([a, b], z3.Or(precedes(a, b), a == b, precedes(b, a))),
    )
    return OrderEncoding(
        key="string",
        description="string order, proved for every total order (code-point order is one)",
        coordinate_sort=element,
        position_sort=element,
        embed=lambda x: x,
        lt=precedes,
        eq=lambda x, y: x == y,
        read_coordinate=_read_opaque,
        read_position=_read_opaque,
        axioms=axioms,
    )


#: The string order for universal theorems: any strict total order.
STRING_TOTAL_ORDER: Final = _total_order_encoding()


def _code_point_string_encoding(length: int) -> OrderEncoding:
    datatype = z3.Datatype(f"CodePoints{length}")
    datatype.declare(
        "code_points", ("length", z3.IntSort()), *[(f"cp{i}", z3.IntSort()) for i in range(length)]
    )
    sort = datatype.create()
    size = sort.length
    cps = [getattr(sort, f"cp{i}") for i in range(length)]

    def domain(s: Expr) -> Expr:
        bounds = [z3.And(cp(s) >= 0, cp(s) <= MAX_CODE_POINT) for cp in cps]
        return z3.And(size(s) >= 0, size(s) <= length, *bounds)

    def eq(a: Expr, b: Expr) -> Expr:
        # Code points past the length are padding and do not take part.
        same = [z3.Implies(i < size(a), cps[i](a) == cps[i](b)) for i in range(length)]
        return z3.And(size(a) == size(b), *same)

    def lt(a: Expr, b: Expr) -> Expr:
        # Lexicographic by code point: a is a proper prefix of b, or at the first
        # difference a's code point is smaller.
        cases = []
        for i in range(length + 1):
            prefix = [cps[j](a) == cps[j](b) for j in range(i)]
            a_ends = z3.And(size(a) == i, size(b) > i)
            if i < length:
                differs = z3.And(size(a) > i, size(b) > i, cps[i](a) < cps[i](b))
                cases.append(z3.And(*prefix, z3.Or(a_ends, differs)))
            else:
                cases.append(z3.And(*prefix, a_ends))
        return z3.Or(*cases)

    def increment(x: Expr) -> Expr:
        bumped = [z3.If(size(x) == i + 1, cps[i](x) + 1, cps[i](x)) for i in range(length)]
        return sort.code_points(size(x), *bumped)

    def incrementable(x: Expr) -> Expr:
        last_below_max = [
            z3.Implies(size(x) == i + 1, cps[i](x) < MAX_CODE_POINT) for i in range(length)
        ]
        return z3.And(size(x) >= 1, *last_below_max)

    def read(model: Any, s: Expr) -> str:
        n = _read_int(model, size(s))
        return "".join(chr(_read_int(model, cps[i](s))) for i in range(n))

    return OrderEncoding(
        key="string",
        description=(
            f"string order, witnesses among strings of at most {length} code points "
            "compared lexicographically by code point"
        ),
        coordinate_sort=sort,
        position_sort=sort,
        embed=lambda x: x,
        lt=lt,
        eq=eq,
        read_coordinate=read,
        read_position=read,
        domain=domain,
        readable=lambda s: z3.And(
            *[z3.Or(cp(s) == 0, z3.And(cp(s) >= ord("a"), cp(s) <= ord("z"))) for cp in cps]
        ),
        increment=increment,
        incrementable=incrementable,
    )


#: The string order for witnesses: real code-point strings of bounded length.
STRING_CODE_POINTS: Final = _code_point_string_encoding(STRING_WITNESS_LENGTH)

_Z3_ESCAPE = re.compile(r"\\u\{([0-9a-fA-F]+)\}")


def _decode_z3_string(text: str) -> str:
    """Undo Z3's ``\\u{hex}`` escaping (a literal backslash is itself escaped as ``\\u{5c}``)."""
    return _Z3_ESCAPE.sub(lambda m: chr(int(m.group(1), 16)), text)


def _read_native_string(model: Any, value: Expr) -> str:
    return _decode_z3_string(model.eval(value, model_completion=True).as_string())


def z3_string(value: str) -> Expr:
    """A Z3 string literal built character by character.

    ``z3.StringVal`` interprets ``\\u{..}`` escapes inside its argument, so a coordinate
    containing that text would silently become a different string; characters above
    U+2FFFF are outside Z3's alphabet and are refused (see :func:`decide_cut_order`,
    which maps them into range first).
    """
    too_big = [c for c in value if ord(c) > Z3_MAX_CHAR]
    if too_big:
        raise ValueError(
            f"code point U+{ord(too_big[0]):04X} is beyond Z3's alphabet (U+{Z3_MAX_CHAR:04X});"
            " remap code points monotonically first"
        )
    if not value:
        return z3.Empty(z3.StringSort())
    units = [z3.Unit(z3.CharVal(ord(c))) for c in value]
    return units[0] if len(units) == 1 else z3.Concat(*units)


#: The string order in Z3's string theory: only for concrete coordinates.
STRING_NATIVE: Final = OrderEncoding(
    key="string",
    description="string order in Z3's string theory (concrete coordinates, any event string)",
    coordinate_sort=z3.StringSort(),
    position_sort=z3.StringSort(),
    embed=lambda x: x,
    lt=lambda a, b: a < b,
    eq=lambda a, b: a == b,
    read_coordinate=_read_native_string,
    read_position=_read_native_string,
)


# --------------------------------------------------------------------------- cuts


@dataclass(frozen=True)
class SymbolicCut:
    """A cut whose kind and coordinate are Z3 terms.

    ``is_nothing`` decides ``nothing``; otherwise ``is_through`` decides between
    ``through`` and ``before``. ``coordinate`` is meaningless for ``nothing``.
    """

    is_nothing: Expr
    is_through: Expr
    coordinate: Expr


def before(x: Expr) -> SymbolicCut:
    return SymbolicCut(z3.BoolVal(False), z3.BoolVal(False), x)


def through(x: Expr) -> SymbolicCut:
    return SymbolicCut(z3.BoolVal(False), z3.BoolVal(True), x)


def nothing(order: OrderEncoding) -> SymbolicCut:
    return SymbolicCut(z3.BoolVal(True), z3.BoolVal(False), z3.FreshConst(order.coordinate_sort))


def if_cut(condition: Expr, then: SymbolicCut, otherwise: SymbolicCut) -> SymbolicCut:
    """The cut ``then`` where ``condition`` holds, else ``otherwise``."""
    return SymbolicCut(
        z3.If(condition, then.is_nothing, otherwise.is_nothing),
        z3.If(condition, then.is_through, otherwise.is_through),
        z3.If(condition, then.coordinate, otherwise.coordinate),
    )


def covers(order: OrderEncoding, cut: SymbolicCut, position: Expr) -> Expr:
    """``position`` is in ``D(cut)``: the definition of the three downsets."""
    x = order.embed(cut.coordinate)
    return z3.And(
        z3.Not(cut.is_nothing),
        z3.If(cut.is_through, order.le(position, x), order.lt(position, x)),
    )


def downset_leq(
    order: OrderEncoding, a: SymbolicCut, b: SymbolicCut, *, hints: Sequence[Expr] = ()
) -> Expr:
    """``D(a)`` is inside ``D(b)`` for every event position the order allows (the definition).

    ``hints`` are positions at which the quantified inclusion is also stated outright.
    ``∀q φ(q) ∧ φ(h)`` is the same formula as ``∀q φ(q)``: the hints change nothing about
    what is proved, they only save Z3 from searching for the instance a proof needs.
    """
    q = z3.FreshConst(order.position_sort, "event")

    def included(p: Expr) -> Expr:
        return z3.Implies(order.domain(p), z3.Implies(covers(order, a, p), covers(order, b, p)))

    return z3.And(z3.ForAll([q], included(q)), *[included(h) for h in hints])


def same_downset(order: OrderEncoding, a: SymbolicCut, b: SymbolicCut) -> Expr:
    """``D(a) == D(b)``: the two cuts are the same progress claim."""
    p = z3.FreshConst(order.position_sort, "event")
    return z3.ForAll([p], z3.Implies(order.domain(p), covers(order, a, p) == covers(order, b, p)))


#: A candidate closed-form comparison: ``leq(order, a, b)`` as a Z3 formula.
Comparator: TypeAlias = Callable[[OrderEncoding, SymbolicCut, SymbolicCut], Expr]


def spec_leq(order: OrderEncoding, a: SymbolicCut, b: SymbolicCut) -> Expr:
    """The closed form of docs/semantics.md section 2, case by case.

    ``nothing`` is below everything and only ``nothing`` is below it; cuts of one kind
    compare by coordinate; ``through x <= before y`` iff ``x < y``; ``before x <=
    through y`` iff ``x <= y``, or ``x = succ(y)`` when the order has an exact successor.
    """
    xa, xb = a.coordinate, b.coordinate
    at_most = z3.Or(order.coordinate_lt(xa, xb), order.coordinate_eq(xa, xb))
    before_through = at_most
    if order.successor is not None:
        before_through = z3.Or(at_most, order.coordinate_eq(xa, order.successor(xb)))
    kinds = z3.If(
        a.is_through == b.is_through,
        at_most,
        z3.If(a.is_through, order.coordinate_lt(xa, xb), before_through),
    )
    return z3.If(a.is_nothing, z3.BoolVal(True), z3.If(b.is_nothing, z3.BoolVal(False), kinds))


#: A merge: the one cut published for a vector of partition cuts.
Merge: TypeAlias = Callable[[OrderEncoding, Sequence[SymbolicCut]], SymbolicCut]


def same_representation(order: OrderEncoding, a: SymbolicCut, b: SymbolicCut) -> Expr:
    """``a`` and ``b`` are written the same: both ``nothing``, or one kind at one coordinate."""
    return z3.Or(
        z3.And(a.is_nothing, b.is_nothing),
        z3.And(
            z3.Not(a.is_nothing),
            z3.Not(b.is_nothing),
            a.is_through == b.is_through,
            order.coordinate_eq(a.coordinate, b.coordinate),
        ),
    )


def _fold_minimum(
    order: OrderEncoding,
    cuts: Sequence[SymbolicCut],
    prefer: Callable[[SymbolicCut, SymbolicCut], Expr],
) -> SymbolicCut:
    if not cuts:
        raise ValueError("merge needs at least one partition cut")
    low = cuts[0]
    for cut in cuts[1:]:
        below, above = spec_leq(order, cut, low), spec_leq(order, low, cut)
        take = z3.Or(z3.And(below, z3.Not(above)), z3.And(below, above, prefer(cut, low)))
        low = if_cut(take, cut, low)
    return low


def min_merge(order: OrderEncoding, cuts: Sequence[SymbolicCut]) -> SymbolicCut:
    """The minimum of ``cuts`` under :func:`spec_leq`; among equal claims the smaller coordinate.

    This is merge as docs/semantics.md section 4 defines it once the withholding reasons are
    cleared: one of the certified cuts, published exactly as certified. Equal claims with
    different representations (``through x`` and ``before x+1`` with an exact successor)
    resolve to the smaller coordinate, ``through x``, as ``fencepost.impl.cuts.minimum``
    documents, so the published representation does not depend on partition order.
    """

    def smaller_coordinate(candidate: SymbolicCut, incumbent: SymbolicCut) -> Expr:
        return z3.And(
            z3.Not(candidate.is_nothing),
            z3.Not(incumbent.is_nothing),
            order.coordinate_lt(candidate.coordinate, incumbent.coordinate),
        )

    return _fold_minimum(order, cuts, smaller_coordinate)


def first_min_merge(order: OrderEncoding, cuts: Sequence[SymbolicCut]) -> SymbolicCut:
    """The minimum of ``cuts`` under :func:`spec_leq`, keeping the earliest on ties.

    Still the greatest lower bound, but which representation is published depends on the
    partitions' order: the determinism theorem refutes it on an order with a successor.
    """
    return _fold_minimum(order, cuts, lambda _candidate, _incumbent: z3.BoolVal(False))


# --------------------------------------------------------------------------- proving


@dataclass(frozen=True)
class _Event:
    position: Expr
    final: Expr


def _claim_true(order: OrderEncoding, cut: SymbolicCut, events: Iterable[_Event]) -> Expr:
    """The claim ``cut`` is true about ``events``: every event in its downset is final."""
    return z3.And(*[z3.Implies(covers(order, cut, e.position), e.final) for e in events])


@dataclass
class _Scope:
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
        self.readers.append((name, partial(_read_cut, self.order, cut)))
        return cut

    def events(self, prefix: str, count: int) -> list[_Event]:
        return [
            _Event(self.position(f"{prefix}{i}.position"), self.flag(f"{prefix}{i}.final"))
            for i in range(1, count + 1)
        ]

    def witness(self, model: Any) -> dict[str, WitnessValue]:
        return {name: read(model) for name, read in self.readers}


def _reader(
    read: Callable[[Any, Expr], WitnessValue], value: Expr
) -> Callable[[Any], WitnessValue]:
    return lambda model: read(model, value)


def _read_cut(order: OrderEncoding, cut: SymbolicCut, model: Any) -> CutValue:
    if z3.is_true(model.eval(cut.is_nothing, True)):
        return CutValue.nothing()
    coordinate = order.read_coordinate(model, cut.coordinate)
    return CutValue(
        "through" if z3.is_true(model.eval(cut.is_through, True)) else "before", coordinate
    )


def _solve(scope: _Scope, formula: Expr, timeout_ms: int) -> tuple[Any, Any, str]:
    solver = z3.Solver()
    solver.set("timeout", max(1, timeout_ms))
    solver.add(*scope.order.axioms, *scope.constraints, formula)
    answer = solver.check()
    if answer == z3.sat:
        return answer, solver.model(), ""
    if answer == z3.unknown:
        return answer, None, solver.reason_unknown()
    return answer, None, ""


def _prove_valid(
    name: str, statement: str, scope: _Scope, claim: Expr, timeout_ms: int, started: float
) -> TheoremResult:
    """``claim`` holds for every value of the scope's variables: ``unsat`` of its negation."""
    answer, model, reason = _solve(scope, z3.Not(claim), timeout_ms)
    if answer == z3.unsat:
        return TheoremResult(name, statement, Status.PROVED, None, time.perf_counter() - started)
    if answer == z3.sat:
        witness = scope.witness(model)
        return TheoremResult(
            name, statement, Status.REFUTED, witness, time.perf_counter() - started
        )
    return TheoremResult(
        name, statement, Status.UNKNOWN, None, time.perf_counter() - started, reason
    )


def _prove_exists(
    name: str, statement: str, scope: _Scope, condition: Expr, timeout_ms: int, started: float
) -> TheoremResult:
    """Some value of the scope's variables satisfies ``condition``; the model is the witness.

    A witness among readable values (letters and NUL for strings) is looked for first;
    it is still a witness, so the narrowing cannot make the verdict wrong, and only when
    there is none does the search widen to the whole domain.
    """
    narrowed, model, _ = _solve(scope, z3.And(condition, *scope.preferences), timeout_ms // 2)
    if narrowed == z3.sat:
        witness = scope.witness(model)
        return TheoremResult(name, statement, Status.PROVED, witness, time.perf_counter() - started)
    remaining = timeout_ms - int((time.perf_counter() - started) * 1000)
    answer, model, reason = _solve(scope, condition, remaining)
    if answer == z3.sat:
        witness = scope.witness(model)
        return TheoremResult(name, statement, Status.PROVED, witness, time.perf_counter() - started)
    if answer == z3.unsat:
        return TheoremResult(name, statement, Status.REFUTED, None, time.perf_counter() - started)
    return TheoremResult(
        name, statement, Status.UNKNOWN, None, time.perf_counter() - started, reason
    )


# --------------------------------------------------------------------------- theorems


def total_preorder(
    order: OrderEncoding = INTEGER_SUCCESSOR, *, timeout_ms: int = DEFAULT_TIMEOUT_MS
) -> TheoremResult:
    """Downset inclusion is a total preorder whose equivalence is downset equality.

    Reflexive, transitive, total (any two cuts are comparable, which is what lets merge
    take a minimum), and ``a <= b <= a`` exactly when ``D(a) == D(b)``.
    """
    started = time.perf_counter()
    scope = _Scope(order)
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
    return _prove_valid(f"total_preorder.{order.key}", statement, scope, claim, timeout_ms, started)


def spec_order_exact(
    order: OrderEncoding = INTEGER_SUCCESSOR,
    *,
    comparator: Comparator = spec_leq,
    timeout_ms: int = DEFAULT_TIMEOUT_MS,
) -> TheoremResult:
    """The closed-form comparison is exactly downset inclusion (both directions).

    The counterexample of a refutation names the two cuts and the event position that is
    in one downset and not in the other.
    """
    started = time.perf_counter()
    scope = _Scope(order)
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
    return _prove_valid(
        f"spec_order_exact.{order.key}", statement, scope, claim, timeout_ms, started
    )


def spec_order_sound(
    order: OrderEncoding = STRING_TOTAL_ORDER,
    *,
    comparator: Comparator = spec_leq,
    timeout_ms: int = DEFAULT_TIMEOUT_MS,
) -> TheoremResult:
    """The closed-form comparison never claims an inclusion that does not hold.

    This is what the implementation needs on strings: it treats them as dense, which on
    an arbitrary total order (one that may have successors, like code-point order) is
    safe but finer than downset equality.
    """
    started = time.perf_counter()
    scope = _Scope(order)
    a, b = scope.cut("a"), scope.cut("b")
    p = scope.position("event")
    claim = z3.Implies(
        comparator(order, a, b), z3.Implies(covers(order, a, p), covers(order, b, p))
    )
    statement = (
        f"On the {order.description}: whenever the no-successor closed form says a <= b, "
        "D(a) ⊆ D(b) (it is sound, though it may rank equal claims strictly)."
    )
    return _prove_valid(
        f"spec_order_sound.{order.key}", statement, scope, claim, timeout_ms, started
    )


def before_below_through(
    order: OrderEncoding = INTEGER_SUCCESSOR, *, timeout_ms: int = DEFAULT_TIMEOUT_MS
) -> TheoremResult:
    """``before x < through x``: the inclusion holds and is strict (``x`` itself separates)."""
    started = time.perf_counter()
    scope = _Scope(order)
    x = scope.coordinate("x")
    p = scope.position("event")
    strict = z3.Not(downset_leq(order, through(x), before(x)))
    claim = z3.And(z3.Implies(covers(order, before(x), p), covers(order, through(x), p)), strict)
    statement = (
        f"On the {order.description}: for every x, D(before x) ⊊ D(through x), "
        "so before x < through x."
    )
    return _prove_valid(
        f"before_below_through.{order.key}", statement, scope, claim, timeout_ms, started
    )


def through_equals_before_next(
    order: OrderEncoding = INTEGER_SUCCESSOR, *, timeout_ms: int = DEFAULT_TIMEOUT_MS
) -> TheoremResult:
    """``through x == before x+1`` as claims: true exactly when ``x+1`` is an exact successor.

    On a dense order the refutation's witness is an event strictly between ``x`` and
    ``x+1``: covered by ``before x+1``, not by ``through x``.
    """
    if order.increment is None:
        raise ValueError(f"the {order.description} has no x+1 to compare with")
    started = time.perf_counter()
    scope = _Scope(order)
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
    return _prove_valid(
        f"through_equals_before_next.{order.key}", statement, scope, claim, timeout_ms, started
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
    timeout_ms: int = DEFAULT_TIMEOUT_MS,
) -> TheoremResult:
    """There are events on which the certified cut is true and the rewritten one is false.

    ``proved`` means Z3 built such a history; the witness names ``x`` and every event's
    position and finality: some non-final event lies in the rewritten downset.
    """
    started = time.perf_counter()
    scope = _Scope(order)
    x = scope.coordinate("x")
    history = scope.events("event", events)
    condition = z3.And(
        rewrite.defined(order, x),
        _claim_true(order, rewrite.source(order, x), history),
        z3.Not(_claim_true(order, rewrite.target(order, x), history)),
    )
    statement = (
        f"On the {order.description}: {rewrite.description} is unsound — some set of events "
        "makes the certified claim true and the published claim false."
    )
    return _prove_exists(
        f"{rewrite.key}_unsound.{order.key}", statement, scope, condition, timeout_ms, started
    )


def rewrite_sound(
    order: OrderEncoding,
    rewrite: Rewrite,
    *,
    events: int = EVENTS_PER_PARTITION,
    timeout_ms: int = DEFAULT_TIMEOUT_MS,
) -> TheoremResult:
    """On every set of events, if the certified cut is true, so is the rewritten one."""
    started = time.perf_counter()
    scope = _Scope(order)
    x = scope.coordinate("x")
    history = scope.events("event", events)
    claim = z3.Implies(
        z3.And(rewrite.defined(order, x), _claim_true(order, rewrite.source(order, x), history)),
        _claim_true(order, rewrite.target(order, x), history),
    )
    statement = (
        f"On the {order.description}: {rewrite.description} is sound — whenever the "
        "certified claim is true about a set of events, so is the published one."
    )
    return _prove_valid(
        f"{rewrite.key}_sound.{order.key}", statement, scope, claim, timeout_ms, started
    )


def _merge_scope(order: OrderEncoding, size: int) -> tuple[_Scope, list[SymbolicCut]]:
    if size < 1:
        raise ValueError(f"a checkpoint vector needs at least one partition, not {size}")
    scope = _Scope(order)
    return scope, [scope.cut(f"c{i}") for i in range(1, size + 1)]


def merge_glb(
    order: OrderEncoding = INTEGER_SUCCESSOR,
    size: int = 2,
    *,
    merge: Merge = min_merge,
    timeout_ms: int = DEFAULT_TIMEOUT_MS,
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
    return _prove_valid(
        f"merge_glb.{order.key}.n{size}",
        statement,
        scope,
        z3.And(is_lower_bound, greatest),
        timeout_ms,
        started,
    )


def merge_sound(
    order: OrderEncoding = INTEGER_SUCCESSOR,
    size: int = 2,
    *,
    merge: Merge = min_merge,
    events: int = EVENTS_PER_PARTITION,
    timeout_ms: int = DEFAULT_TIMEOUT_MS,
) -> TheoremResult:
    """If every partition's certified cut is true about its events, the merged cut is true
    about every partition's events."""
    started = time.perf_counter()
    scope, cuts = _merge_scope(order, size)
    histories = [scope.events(f"p{i}.event", events) for i in range(1, size + 1)]
    merged = merge(order, cuts)
    claim = z3.Implies(
        z3.And(*[_claim_true(order, c, h) for c, h in zip(cuts, histories, strict=True)]),
        z3.And(*[_claim_true(order, merged, h) for h in histories]),
    )
    statement = (
        f"On the {order.description}, for {size} partitions with {events} events each: "
        "when every partition's cut is true about its events, the merged cut is true about "
        "all of them (D(merge) lies inside every partition's downset)."
    )
    return _prove_valid(
        f"merge_sound.{order.key}.n{size}", statement, scope, claim, timeout_ms, started
    )


def merge_monotone(
    order: OrderEncoding = INTEGER_SUCCESSOR,
    size: int = 2,
    *,
    merge: Merge = min_merge,
    timeout_ms: int = DEFAULT_TIMEOUT_MS,
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
    return _prove_valid(
        f"merge_monotone.{order.key}.n{size}",
        statement,
        scope,
        z3.And(*conjuncts),
        timeout_ms,
        started,
    )


def merge_deterministic(
    order: OrderEncoding = INTEGER_SUCCESSOR,
    size: int = 2,
    *,
    merge: Merge = min_merge,
    timeout_ms: int = DEFAULT_TIMEOUT_MS,
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
    return _prove_valid(
        f"merge_deterministic.{order.key}.n{size}", statement, scope, claim, timeout_ms, started
    )


#: Samples for the string successor theorem: empty, ASCII, a prefix pair, non-ASCII,
#: an astral character, and a string already ending in NUL.
STRING_SUCCESSOR_SAMPLES: Final = ("", "a", "ab", "é", "\U0001f600", "k\x00")


def string_has_exact_successor(
    samples: Sequence[str] = STRING_SUCCESSOR_SAMPLES,
    *,
    suffix: str = "\x00",
    timeout_ms: int = DEFAULT_TIMEOUT_MS,
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
    deadline = started + timeout_ms / 1000
    name = "string_has_exact_successor"
    statement = (
        f"On Unicode strings in code-point order: D(through x) == D(before x+{suffix!r}) for "
        f"x in {list(samples)!r} — the order has an exact successor x ↦ x+'\\0', so "
        "through x and before x+'\\0' are one claim."
    )
    for sample in samples:
        scope = _Scope(STRING_NATIVE)
        p = scope.position("event")
        claim = covers(STRING_NATIVE, through(z3_string(sample)), p) == covers(
            STRING_NATIVE, before(z3_string(sample + suffix)), p
        )
        remaining = int((deadline - time.perf_counter()) * 1000)
        answer, model, reason = _solve(scope, z3.Not(claim), remaining)
        if answer == z3.sat:
            witness: dict[str, WitnessValue] = {"x": sample, **scope.witness(model)}
            return TheoremResult(
                name, statement, Status.REFUTED, witness, time.perf_counter() - started
            )
        if answer == z3.unknown:
            return TheoremResult(
                name,
                statement,
                Status.UNKNOWN,
                None,
                time.perf_counter() - started,
                f"x={sample!r}: {reason}",
            )
    return TheoremResult(name, statement, Status.PROVED, None, time.perf_counter() - started)


def string_before_empty_is_nothing(
    coordinate: str = "", *, timeout_ms: int = DEFAULT_TIMEOUT_MS
) -> TheoremResult:
    """``before ""`` covers no string at all: it is the same claim as ``nothing``.

    ``""`` is the least string in code-point order. The implementation ranks ``nothing``
    strictly below ``before ""`` and would publish ``before ""`` rather than withhold
    ``no_coverage``; that claim is vacuous (true, but claims nothing).
    """
    started = time.perf_counter()
    scope = _Scope(STRING_NATIVE)
    p = scope.position("event")
    claim = z3.Not(covers(STRING_NATIVE, before(z3_string(coordinate)), p))
    statement = (
        f"On Unicode strings in code-point order: D(before {coordinate!r}) is empty, so "
        f"before {coordinate!r} == nothing."
    )
    return _prove_valid(
        "string_before_empty_is_nothing", statement, scope, claim, timeout_ms, started
    )


# --------------------------------------------------------------------------- registry


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


# --------------------------------------------------------------------------- decisions


class OrderKind(enum.Enum):
    """The three orders of docs/semantics.md section 1, for deciding concrete cut comparisons."""

    INTEGER_SUCCESSOR = "integer_successor"
    INTEGER_DENSE = "integer_dense"
    STRING = "string"


@dataclass(frozen=True)
class Inclusion:
    """Whether ``D(a) ⊆ D(b)``; if not, ``event`` is a position in ``D(a)`` but not ``D(b)``."""

    holds: bool
    event: WitnessValue | None = None


def _code_point_map(values: Iterable[str]) -> dict[int, int] | None:
    """An order-preserving relabelling of the code points used into Z3's alphabet.

    ``None`` when every code point is already inside it. NUL keeps code point 0. Sound
    because whether an event separates two cuts depends only on the relative order of
    the code points involved and on NUL being least: if one does, one built from the
    cuts' own characters and NUL does (``x``, ``y`` or ``y + "\\0"``).
    """
    used = sorted({ord(c) for v in values for c in v} | {0})
    if used[-1] <= Z3_MAX_CHAR:
        return None
    return {cp: rank for rank, cp in enumerate(used)}


def downset_inclusion(
    kind: OrderKind, a: CutValue, b: CutValue, *, timeout_ms: int = DEFAULT_TIMEOUT_MS
) -> Inclusion:
    """Decide ``D(a) ⊆ D(b)`` with Z3 from the definition, over every event the order allows.

    Integer orders search integer (with successor) or real (without) event positions;
    the string order searches all strings with Z3's string theory. Raises
    :class:`ProofIncomplete` if Z3 cannot decide, and ``ValueError`` for a coordinate of
    the wrong type for ``kind``.
    """
    for label, cut in (("a", a), ("b", b)):
        if cut.kind == "nothing":
            continue
        if kind is OrderKind.STRING and type(cut.coordinate) is not str:
            raise ValueError(f"cut {label}: the string order needs a str coordinate, got {cut}")
        if kind is not OrderKind.STRING and type(cut.coordinate) is not int:
            raise ValueError(f"cut {label}: an integer order needs an int coordinate, got {cut}")
    order = {
        OrderKind.INTEGER_SUCCESSOR: INTEGER_SUCCESSOR,
        OrderKind.INTEGER_DENSE: INTEGER_DENSE,
        OrderKind.STRING: STRING_NATIVE,
    }[kind]
    mapping: dict[int, int] | None = None
    if kind is OrderKind.STRING:
        mapping = _code_point_map(c.coordinate for c in (a, b) if isinstance(c.coordinate, str))

    def literal(value: int | str | None) -> Expr:
        if isinstance(value, str):
            mapped = value if mapping is None else "".join(chr(mapping[ord(c)]) for c in value)
            return z3_string(mapped)
        return z3.IntVal(value)

    def symbolic(cut: CutValue) -> SymbolicCut:
        if cut.kind == "nothing":
            return nothing(order)
        coordinate = literal(cut.coordinate)
        return through(coordinate) if cut.kind == "through" else before(coordinate)

    scope = _Scope(order)
    p = scope.position("event")
    query = [covers(order, symbolic(a), p), z3.Not(covers(order, symbolic(b), p))]
    if mapping is not None:
        alphabet = z3.Union(*[z3.Re(z3_string(chr(v))) for v in mapping.values()])
        query.append(z3.InRe(p, z3.Star(alphabet)))
    answer, model, reason = _solve(scope, z3.And(*query), timeout_ms)
    if answer == z3.unsat:
        return Inclusion(True)
    if answer == z3.unknown:
        raise ProofIncomplete(f"Z3 could not decide D({a}) ⊆ D({b}): {reason}")
    event = scope.witness(model)["event"]
    if mapping is not None and isinstance(event, str):
        back = {v: k for k, v in mapping.items()}
        event = "".join(chr(back[ord(c)]) for c in event)
    return Inclusion(False, event)


def decide_cut_order(
    kind: OrderKind, a: CutValue, b: CutValue, *, timeout_ms: int = DEFAULT_TIMEOUT_MS
) -> int:
    """-1, 0 or 1 as ``D(a)`` is strictly inside, equal to, or strictly contains ``D(b)``.

    Decided by Z3 from the definition alone; the reference the implementation's
    ``compare_cuts`` is cross-checked against.
    """
    a_in_b = downset_inclusion(kind, a, b, timeout_ms=timeout_ms).holds
    b_in_a = downset_inclusion(kind, b, a, timeout_ms=timeout_ms).holds
    if a_in_b and b_in_a:
        return 0
    if a_in_b:
        return -1
    if b_in_a:
        return 1
    raise ProofIncomplete(f"neither D({a}) ⊆ D({b}) nor the converse: the order is not total")
