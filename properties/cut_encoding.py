"""Z3 encodings of the orders and cuts of docs/semantics.md sections 1 and 2.

How each order is encoded, and why the encoding is sound, is explained in
:mod:`fencepost.properties.proofs`; this module holds the encodings
(:class:`OrderEncoding`: integers with an exact successor, dense integers, any
total order, code-point strings, Z3's string theory), the symbolic cuts built
on them with their downsets (:func:`covers`, :func:`downset_leq`), the closed
form the implementation uses (:func:`spec_leq`) and the merges
(:func:`min_merge`), plus :class:`CutValue`, a concrete cut read back from a
model.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Final, Literal, TypeAlias

import z3

from fencepost.solver import declare_sort

#: A Z3 term or formula (z3 ships no type information).
Expr: TypeAlias = Any

#: Length bound of the code-point strings used to find string witnesses.
STRING_WITNESS_LENGTH: Final = 3

#: The largest Unicode code point (Python's ``chr`` limit).
MAX_CODE_POINT: Final = 0x10FFFF

#: The largest character Z3's string theory orders correctly (SMT-LIB's alphabet).
Z3_MAX_CHAR: Final = 0x2FFFF


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
    element = declare_sort("TotalOrderElement")
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
    """The cut that claims nothing. Its coordinate is never read (every use of a cut's
    coordinate is guarded by ``not is_nothing``), so all of them share one constant.

    A fixed name rather than ``z3.FreshConst``: Z3 numbers fresh names with a counter
    of the whole process, and its heuristics order terms by name, so a fresh name
    would make the resource units a query consumes depend on how many queries ran
    before it (:mod:`fencepost.solver` measures and pins them).
    """
    return SymbolicCut(
        z3.BoolVal(True), z3.BoolVal(False), z3.Const("nothing.coordinate", order.coordinate_sort)
    )


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


#: The name of the position a downset quantifier binds.
BOUND_EVENT: Final = "downset.event"


def bound_event(order: OrderEncoding) -> Expr:
    """The variable :func:`downset_leq` and :func:`same_downset` quantify over.

    A fixed name is safe: it is only ever bound, and the bodies it is bound in hold
    cut terms, which are quantifier-free and never contain it, so no quantifier
    captures another's variable. A fixed name rather than ``z3.FreshConst`` keeps the
    resource units a query consumes independent of the queries run before it in the
    process (see :func:`nothing`).
    """
    return z3.Const(BOUND_EVENT, order.position_sort)


def downset_leq(
    order: OrderEncoding, a: SymbolicCut, b: SymbolicCut, *, hints: Sequence[Expr] = ()
) -> Expr:
    """``D(a)`` is inside ``D(b)`` for every event position the order allows (the definition).

    ``hints`` are positions at which the quantified inclusion is also stated outright.
    ``∀q φ(q) ∧ φ(h)`` is the same formula as ``∀q φ(q)``: the hints change nothing about
    what is proved, they only save Z3 from searching for the instance a proof needs.
    The bound position has a fixed name (:data:`BOUND_EVENT`, see :func:`bound_event`).
    """
    q = bound_event(order)

    def included(p: Expr) -> Expr:
        return z3.Implies(order.domain(p), z3.Implies(covers(order, a, p), covers(order, b, p)))

    return z3.And(z3.ForAll([q], included(q)), *[included(h) for h in hints])


def same_downset(order: OrderEncoding, a: SymbolicCut, b: SymbolicCut) -> Expr:
    """``D(a) == D(b)``: the two cuts are the same progress claim."""
    p = bound_event(order)
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
