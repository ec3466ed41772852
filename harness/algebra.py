"""The algebra level: ``compare`` and ``merge`` checked against the project's cut algebra.

Inputs are generated to sit where implementations go wrong: equal coordinates
with different endpoint kinds, successor edges (``through x`` against
``before x+1``, equal on an order with an exact successor and not otherwise),
huge integers, strings compared by code point, several faults at once in one
checkpoint vector (so the withheld reason must be the *first* in the documented
order), checkpoints of non-members (ignored), incomparable orders.

Equivalent cuts are equal claims: a ``merge_ok`` frontier is accepted in any
representation with the same downset as the expected one (``before 5`` for
``through 4`` on offsets); a different claim is reported with both the
expected and the received cut.

Before the cases the SUT is probed on error handling: a line that is not JSON
must be answered with ``error`` (id null) and a request with an unparsable cut
with ``error`` carrying the request's id, and the SUT must keep running.
"""

from __future__ import annotations

import dataclasses
import random
from dataclasses import dataclass

from fencepost.harness.classes import coordinate_classes, name_classes
from fencepost.harness.coverage import Situation, order_situation
from fencepost.harness.power import algebra_compare_caught, algebra_merge_caught
from fencepost.harness.protocol import (
    CompareOk,
    ErrorReply,
    MergeOk,
    compare_message,
    merge_message,
    parse_sut_message,
)
from fencepost.harness.results import TranscriptLine
from fencepost.harness.rules import Rule, SutFailure, Violation
from fencepost.harness.session import LineSession
from fencepost.harness.transport import SutFactory
from fencepost.inputs.jsonlines import (
    MessageError,
    encode,
)
from fencepost.judge.cuts import compare, same_claim
from fencepost.judge.merge import Withheld, merge
from fencepost.judge.values import (
    NOTHING,
    BadValue,
    Checkpoint,
    Coordinate,
    Cut,
    Finality,
    Membership,
    Order,
)
from fencepost.judge.wire import (
    checkpoint_from_json,
    cut_from_json,
    membership_from_json,
    order_from_json,
)

OFFSETS = Order.integer("offsets", True)
MILLIS = Order.integer("millis", False)
KEYS = Order.string("keys")
ORDERS: tuple[Order, ...] = (OFFSETS, MILLIS, KEYS)

#: Integers the random cases draw from; the last two are replaced by the top of a declared
#: range (``hello_ok.integers``), so a SUT with 64-bit integers is tested at its edge.
#: The value classes of harness/classes.py: negatives, zero, digit counts (9, 10), the
#: 32-bit sentinel, 2^53 and 2^63 with neighbours, and beyond 64 bits (kept last: a
#: declared range moves them to its edge); the empty string, prefixes, case variants, a
#: combining mark against its precomposed form, characters on both sides of the UTF-16
#: surrogate range.
_INT_POOL: tuple[int, ...] = (
    -12,
    -1,
    0,
    1,
    2,
    3,
    5,
    9,
    10,
    2**31 - 1,
    2**31,
    2**53,
    2**53 + 1,
    2**63 - 1,
    2**63,
    2**63 + 1,
    10**40,
    10**40 + 1,
)
_STR_POOL: tuple[str, ...] = (
    "",
    "a",
    "a\x00",
    "ab",
    "b",
    "A",
    "é",
    "e\u0301",
    "\uffee",
    "\U0001f600",
    "z",
)
#: For each string of the pool, the one a plausible mistaken comparison confuses it with
#: or orders the other way: above/below the UTF-16 surrogate range, case variants, a
#: combining sequence and its precomposed form, a string and its prefix.
_STR_NEIGHBOURS: dict[str, str] = {
    "\uffee": "\U0001f600",
    "\U0001f600": "\uffee",
    "a": "A",
    "A": "a",
    "é": "e\u0301",
    "e\u0301": "é",
    "ab": "a",
    "a\x00": "a",
    "": "a",
    "b": "ab",
    "z": "\uffee",
}
#: Integer pairs a mistaken minimum orders the other way or takes for equal.
_INT_PAIRS: tuple[tuple[int, int], ...] = (
    (2**53, 2**53 + 1),
    (9, 10),
    (-1, 0),
    (2**63 - 1, 2**63),
    (2**31, 2**31 + 1),
)
#: Member names: plain, differing only in case, equal after NFC normalisation.
_NAME_SETS: tuple[tuple[str, ...], ...] = (
    ("A", "B", "C", "D"),
    ("A", "a", "B", "b"),
    ("\u00c5", "A\u030a", "B", "C"),
)


@dataclass(frozen=True, slots=True)
class CompareCase:
    order: Order
    a: Cut
    b: Cut


@dataclass(frozen=True, slots=True)
class MergeCase:
    membership: Membership
    checkpoints: tuple[Checkpoint, ...]


AlgebraCase = CompareCase | MergeCase


def case_message(case: AlgebraCase, request_id: int) -> dict[str, object]:
    """The request that asks the SUT about ``case``."""
    if isinstance(case, CompareCase):
        return compare_message(request_id, case.order, case.a, case.b)
    return merge_message(request_id, case.membership, case.checkpoints)


def case_from_message(message: dict[str, object]) -> AlgebraCase:
    """The case a ``compare``/``merge`` request asks about (regression files store these)."""
    kind = message.get("type")
    try:
        if kind == "compare" and set(message) == {"type", "id", "order", "a", "b"}:
            order = order_from_json(message["order"], "case.order")
            return CompareCase(
                order,
                cut_from_json(message["a"], "case.a", order),
                cut_from_json(message["b"], "case.b", order),
            )
        if kind == "merge" and set(message) == {"type", "id", "membership", "checkpoints"}:
            raw = message["checkpoints"]
            if not isinstance(raw, list):
                raise MessageError("case.checkpoints", "a list of checkpoints is required")
            return MergeCase(
                membership_from_json(message["membership"], "case.membership"),
                tuple(checkpoint_from_json(c, f"case.checkpoints[{i}]") for i, c in enumerate(raw)),
            )
    except BadValue as exc:
        raise MessageError(exc.field, f"{exc.problem} (got {exc.value!r})") from None
    raise MessageError("case", "an algebra case is a compare or merge request with every field")


def describe_case(case: AlgebraCase) -> str:
    if isinstance(case, CompareCase):
        o = case.order
        kind = f"{o.kind.value}{', exact successor' if o.has_successor else ''}"
        return f"compare on {o.name} ({kind}): a = {case.a}, b = {case.b}"
    m = case.membership
    members = ", ".join(f"{p}:{o}" for p, o in sorted(m.partitions.items())) or "none"
    cps = "; ".join(
        f"{c.partition} {c.cut} epoch {c.epoch} scope {c.scope} {c.finality.value}"
        for c in case.checkpoints
    )
    return (
        f"merge for epoch {m.epoch} scope {m.scope} members [{members}] "
        f"checkpoints [{cps or 'none'}]"
    )


def expected(case: AlgebraCase) -> int | Cut | Withheld:
    if isinstance(case, CompareCase):
        return compare(case.order, case.a, case.b)
    return merge(case.membership, case.checkpoints)


# --- generation -------------------------------------------------------------------------


def _coordinate(rng: random.Random, order: Order) -> Coordinate:
    return rng.choice(_INT_POOL) if order.kind == "integer" else rng.choice(_STR_POOL)


def _within(case: AlgebraCase, top: int) -> AlgebraCase:
    """``case`` with its huge integers moved to the top of a declared range.

    The shift ``x -> top - (10**40 + 1 - x)`` keeps every order and successor
    relation among the coordinates, so the case asks the same question at the
    edge the SUT declared instead of beyond it.
    """
    edge = _INT_POOL[-1]

    def move(cut: Cut) -> Cut:
        if isinstance(cut.at, int) and cut.at >= edge - 10:
            return Cut(cut.endpoint, top - (edge - cut.at))
        return cut

    if isinstance(case, CompareCase):
        return CompareCase(case.order, move(case.a), move(case.b))
    return MergeCase(
        case.membership,
        tuple(dataclasses.replace(c, cut=move(c.cut)) for c in case.checkpoints),
    )


def fits(case: AlgebraCase, limits: tuple[int, int] | None) -> bool:
    """Every integer of ``case`` lies within the SUT's declared range (None: any size)."""
    if limits is None:
        return True
    cuts = [case.a, case.b] if isinstance(case, CompareCase) else [c.cut for c in case.checkpoints]
    low, high = limits
    return all(not isinstance(c.at, int) or low <= c.at <= high for c in cuts)


def _cut(rng: random.Random, order: Order, near: Cut | None = None) -> Cut:
    roll = rng.random()
    if roll < 0.12:
        return NOTHING
    at: Coordinate
    if near is not None and not near.is_nothing and roll < 0.6:
        assert near.at is not None
        at = near.at
        if order.kind == "integer" and rng.random() < 0.4:
            assert isinstance(at, int)
            at = at + rng.choice((1, -1))
        elif isinstance(at, str) and rng.random() < 0.4:
            # The string neighbour a mistaken comparison confuses with this one (UTF-16
            # order, case folding, normalisation, prefixes): a merge or compare of the
            # two tells the right answer apart from the mistaken one.
            at = _STR_NEIGHBOURS.get(at, at)
    else:
        at = _coordinate(rng, order)
    return Cut.before(at) if rng.random() < 0.5 else Cut.through(at)


def random_compare(rng: random.Random) -> CompareCase:
    order = rng.choice(ORDERS)
    a = _cut(rng, order)
    return CompareCase(order, a, _cut(rng, order, a))


def _confusable_pair(
    rng: random.Random, membership: Membership, order: Order, epoch: int
) -> list[Checkpoint]:
    """A valid vector whose minimum lies between two values a mistaken minimum orders
    the other way: for strings, half the time the pair on both sides of the UTF-16
    surrogate range, else case, normalisation or a prefix; for integers, 2^53 and its
    neighbour (64-bit floats), 9 and 10 or -1 and 0 (text), 2^63 and its neighbour,
    all but the last two above a 32-bit sentinel. Two members of ``order`` hold the
    pair, every other member a cut above both, so only the pair decides."""
    top: Coordinate
    pair: list[Coordinate]
    if order.kind == "string":
        pool = ("\uffee", "\U0001f600") if rng.random() < 0.5 else sorted(_STR_NEIGHBOURS)
        first = rng.choice(pool)
        pair, top = [first, _STR_NEIGHBOURS[first]], "\U0010ffff"
    else:
        pair = list(rng.choice(_INT_PAIRS))
        top = _INT_POOL[-1]
    out = []
    for name in sorted(membership.partitions):
        o = membership.order_of(name)
        if o is order and pair:
            cut = (Cut.through if rng.random() < 0.5 else Cut.before)(pair.pop())
        elif o is order:
            cut = Cut.through(top)
        else:
            cut = _cut(rng, o)
        out.append(Checkpoint(name, cut, f"tok-{name}", 1, "q1", epoch))
    rng.shuffle(out)
    return out


def random_merge(rng: random.Random) -> MergeCase:
    order = rng.choice(ORDERS)
    other = rng.choice([o for o in ORDERS if o.name != order.name])
    epoch = rng.randint(1, 3)
    names = list(rng.choice(_NAME_SETS))[: rng.randint(0, 4)]
    partitions = {n: order.name for n in names}
    if names and rng.random() < 0.15:
        partitions[rng.choice(names)] = other.name
    membership = Membership(epoch, "q1", partitions, {order.name: order, other.name: other})
    checkpoints: list[Checkpoint] = []
    anchor: Cut | None = None
    for name in names:
        if rng.random() < 0.1:
            continue
        o = membership.order_of(name)
        cut = _cut(rng, o, anchor if o is order else None)
        anchor = cut if o is order else anchor
        checkpoints.append(
            Checkpoint(
                partition=name,
                cut=cut,
                token=rng.choice((None, "t", f"tok-{name}")),
                generation=rng.randint(1, 5),
                scope="q0" if rng.random() < 0.1 else "q1",
                epoch=epoch - 1 if rng.random() < 0.1 else epoch,
                finality=Finality.PROVISIONAL if rng.random() < 0.1 else Finality.FINAL,
            )
        )
    if sum(o == order.name for o in partitions.values()) >= 2 and rng.random() < 0.3:
        checkpoints = _confusable_pair(rng, membership, order, epoch)
    if rng.random() < 0.15:
        checkpoints.append(Checkpoint("GONE", _cut(rng, order), None, 1, "q1", epoch))
    rng.shuffle(checkpoints)
    return MergeCase(membership, tuple(checkpoints))


def random_cases(
    seed: int, count: int = 100, limits: tuple[int, int] | None = None
) -> list[AlgebraCase]:
    """``count`` generated cases, about 60% compare and 40% merge, from ``seed``.

    With ``limits`` (a declared integer range) every case stays inside it: huge
    integers are moved to the range's top edge, and a case still outside it (one
    past the edge) is drawn again.
    """
    rng = random.Random(seed)
    cases: list[AlgebraCase] = []
    while len(cases) < count:
        case = random_compare(rng) if rng.random() < 0.6 else random_merge(rng)
        if limits is not None:
            case = _within(case, limits[1])
            if not fits(case, limits):
                continue
        cases.append(case)
    return cases


def exhaustive_cases() -> list[AlgebraCase]:
    """Every case within small bounds.

    All pairs of cuts over three coordinates on each order (147 compares), and
    every pair of per-member states over two members of one order (each of:
    missing, nothing, before/through at two coordinates, wrong epoch, wrong
    scope, provisional), two members of different orders, and the empty
    membership.
    """
    cases: list[AlgebraCase] = []
    for order in ORDERS:
        # Strings: U+FFEE sorts below U+1F600 by code point, above it in UTF-16 units.
        coords: tuple[Coordinate, ...] = (
            (1, 2, 3) if order.kind == "integer" else ("a", "\uffee", "\U0001f600")
        )
        cuts = [NOTHING] + [k(x) for x in coords for k in (Cut.before, Cut.through)]
        cases.extend(CompareCase(order, a, b) for a in cuts for b in cuts)

    states: list[tuple[str, Cut]] = [
        ("missing", NOTHING),
        ("ok", NOTHING),
        ("ok", Cut.before(1)),
        ("ok", Cut.through(1)),
        ("ok", Cut.before(2)),
        ("wrong_epoch", Cut.through(1)),
        ("wrong_scope", Cut.through(1)),
        ("provisional", Cut.through(1)),
    ]

    def checkpoint(name: str, state: str, cut: Cut) -> Checkpoint | None:
        if state == "missing":
            return None
        return Checkpoint(
            name,
            cut,
            None,
            1,
            "q0" if state == "wrong_scope" else "q1",
            1 if state == "wrong_epoch" else 2,
            Finality.PROVISIONAL if state == "provisional" else Finality.FINAL,
        )

    one_order = Membership(2, "q1", {"A": "offsets", "B": "offsets"}, {"offsets": OFFSETS})
    for sa, ca in states:
        for sb, cb in states:
            cps = [c for c in (checkpoint("A", sa, ca), checkpoint("B", sb, cb)) if c is not None]
            cases.append(MergeCase(one_order, tuple(cps)))
    two_orders = Membership(
        2, "q1", {"A": "offsets", "B": "millis"}, {"offsets": OFFSETS, "millis": MILLIS}
    )
    few = [s for s in states if s[0] in ("missing", "wrong_scope") or s[1] == Cut.through(1)]
    for sa, ca in few:
        for sb, cb in few:
            cps = [c for c in (checkpoint("A", sa, ca), checkpoint("B", sb, cb)) if c is not None]
            cases.append(MergeCase(two_orders, tuple(cps)))
    cases.append(MergeCase(Membership(2, "q1", {}, {"offsets": OFFSETS}), ()))
    return cases


# --- running ----------------------------------------------------------------------------


@dataclass(frozen=True)
class AlgebraResult:
    """One algebra run: the first failing case (if any), the transcript, the counts."""

    violations: tuple[Violation, ...]
    transcript: tuple[TranscriptLine, ...]
    messages: int
    cases_run: int
    failing: AlgebraCase | None
    equivalent_representations: int
    stderr: dict[str, str]
    situations: frozenset[Situation] = frozenset()
    #: The wrong answers this batch would have caught (harness/power.py).
    caught: frozenset[str] = frozenset()
    #: The value classes its cases held (harness/classes.py).
    classes: frozenset[str] = frozenset()

    @property
    def ok(self) -> bool:
        return not self.violations


def caught_by(case: AlgebraCase, known: set[str] | frozenset[str] = frozenset()) -> set[str]:
    """The wrong answers (harness/power.py) this case tells apart from the right one
    (those in ``known``, already counted for the batch, are not weighed again)."""
    if isinstance(case, CompareCase):
        return algebra_compare_caught(case.order, case.a, case.b, known)
    return algebra_merge_caught(case.membership, case.checkpoints, known)


def classes_of(case: AlgebraCase) -> set[str]:
    """The value classes (harness/classes.py) one case holds."""
    if isinstance(case, CompareCase):
        exact = case.order.successor
        return coordinate_classes((c.at for c in (case.a, case.b) if c.at is not None), exact)
    m = case.membership
    exact = any(o.successor for o in m.orders.values())
    found = coordinate_classes((c.cut.at for c in case.checkpoints if c.cut.at is not None), exact)
    held = {c.partition for c in case.checkpoints}
    found |= name_classes([(m.epoch, list(m.partitions), any(p not in held for p in m.partitions))])
    if len(set(m.partitions.values())) > 1:
        found.add("incomparable_orders")
    return found


def situations_of(case: AlgebraCase) -> set[Situation]:
    """The situations of docs/procedure.md one compare or merge case puts to the SUT."""
    if isinstance(case, CompareCase):
        orders = [case.order]
        cuts = [case.a, case.b]
    else:
        m = case.membership
        orders = [m.order_of(p) for p in sorted(m.partitions)]
        cuts = [c.cut for c in case.checkpoints]
    found = {order_situation(o) for o in orders}
    marks = {(c.endpoint.value, c.at) for c in cuts if c.at is not None}
    for kind, at in marks:
        if kind == "before" and ("through", at) in marks:
            found.add(Situation.BOTH_KINDS_ONE_COORDINATE)
        if (
            isinstance(at, int)
            and kind == "through"
            and ("before", at + 1) in marks
            and any(o.successor for o in orders)
        ):
            found.add(Situation.SUCCESSOR_EDGE)
        if isinstance(at, str) and any(ord(ch) > 0xFFFF for ch in at):
            found.add(Situation.ASTRAL_STRINGS)
    if isinstance(case, MergeCase):
        want = expected(case)
        if isinstance(want, Withheld):
            found.add(Situation(f"withheld_{want.reason.value}"))
    return found


def judge(case: AlgebraCase, reply: CompareOk | MergeOk) -> tuple[Rule, str] | str | None:
    """None when right, a (rule, message) when wrong, ``"equivalent"`` for an equal
    claim in another representation."""
    want = expected(case)
    if isinstance(case, CompareCase):
        assert isinstance(want, int)
        if not isinstance(reply, CompareOk):
            return (
                Rule.CALL_PAIRING,
                f"merge_ok answers a compare request ({describe_case(case)})",
            )
        if reply.result != want:
            return (
                Rule.ALGEBRA_COMPARE,
                f"{describe_case(case)}: expected {want}, got {reply.result}",
            )
        return None
    if not isinstance(reply, MergeOk):
        return (Rule.CALL_PAIRING, f"compare_ok answers a merge request ({describe_case(case)})")
    if isinstance(want, Withheld):
        if reply.withheld != want.reason.value:
            said = f"withheld {reply.withheld}" if reply.withheld else f"frontier {reply.frontier}"
            return (
                Rule.ALGEBRA_MERGE,
                f"{describe_case(case)}: expected withheld {want.reason.value}, got {said}",
            )
        return None
    assert isinstance(want, Cut)
    if reply.frontier is None:
        return (
            Rule.ALGEBRA_MERGE,
            f"{describe_case(case)}: expected frontier {want}, got withheld {reply.withheld}",
        )
    m = case.membership
    order = m.order_of(sorted(m.partitions)[0])
    try:
        got = reply.frontier.validated(order, "merge_ok.frontier")
        same = same_claim(order, got, want)
    except ValueError as exc:
        return (Rule.ALGEBRA_MERGE, f"{describe_case(case)}: frontier does not fit: {exc}")
    if not same:
        return (
            Rule.ALGEBRA_MERGE,
            f"{describe_case(case)}: expected frontier {want}, got {got} (a different claim)",
        )
    return "equivalent" if got != want else None


def ask(session: LineSession, case: AlgebraCase) -> CompareOk | MergeOk:
    """Ask the SUT about one case; a malformed or misplaced answer is a SutFailure."""
    session.next_id += 1
    request_id = session.next_id
    session.send(encode(case_message(case, request_id)))
    line = session.receive()
    try:
        msg = parse_sut_message(line)
    except MessageError as exc:
        raise SutFailure(Rule.MESSAGE_SCHEMA, str(exc), session.worker) from None
    if isinstance(msg, ErrorReply):
        raise SutFailure(
            Rule.SUT_ERROR,
            f"{describe_case(case)} was answered with an error: {msg.message[:300]}",
            session.worker,
        )
    if not isinstance(msg, CompareOk | MergeOk):
        raise SutFailure(Rule.CALL_PAIRING, f"unexpected answer {line[:200]!r}", session.worker)
    if type(msg.id) is not int or msg.id != request_id:
        raise SutFailure(
            Rule.CALL_PAIRING,
            f"the answer carries id {msg.id!r}; the request's id is {request_id}",
            session.worker,
        )
    return msg


def run_algebra(
    factory: SutFactory, cases: list[AlgebraCase], *, timeout: float = 10.0
) -> AlgebraResult:
    """Ask the SUT about every case in one session; stop at the first wrong answer."""
    session = LineSession(factory, timeout, "alg", require="algebra")
    violations: list[Violation] = []
    failing: AlgebraCase | None = None
    equivalent = 0
    ran = 0
    seen: set[Situation] = set()
    caught: set[str] = set()
    classes: set[str] = set()
    try:
        session.open()
        for case in cases:
            session.case_no += 1
            ran += 1
            seen |= situations_of(case)
            caught |= caught_by(case, caught)
            classes |= classes_of(case)
            verdict = judge(case, ask(session, case))
            if verdict == "equivalent":
                equivalent += 1
            elif verdict is not None:
                assert isinstance(verdict, tuple)
                violations.append(Violation(verdict[0], verdict[1], session.case_no, "alg"))
                session.note("**", f"VIOLATION {verdict[0].value}: {verdict[1]}")
                failing = case
                break
    except SutFailure as failure:
        violations.append(Violation(failure.rule, failure.message, session.case_no, "alg"))
        session.note("**", f"VIOLATION {failure.rule.value}: {failure.message}")
        failing = cases[session.case_no - 1] if 0 < session.case_no <= len(cases) else None
    closing = session.close(clean=not violations)
    if closing is not None:
        violations.append(closing)
    stderr = {}
    if violations and session.channel is not None:
        stderr["alg"] = session.channel.stderr_tail()
    return AlgebraResult(
        tuple(violations),
        tuple(session.lines),
        session.messages,
        ran,
        failing,
        equivalent,
        stderr,
        frozenset(seen),
        frozenset(caught),
        frozenset(classes),
    )


def _smaller(case: AlgebraCase) -> list[AlgebraCase]:
    """Simpler variants of a merge case: one member or one stray checkpoint fewer."""
    if isinstance(case, CompareCase):
        return []
    m = case.membership
    out: list[AlgebraCase] = []
    for name in sorted(m.partitions):
        rest = {p: o for p, o in m.partitions.items() if p != name}
        out.append(
            MergeCase(
                Membership(m.epoch, m.scope, rest, dict(m.orders)),
                tuple(c for c in case.checkpoints if c.partition != name),
            )
        )
    for i, c in enumerate(case.checkpoints):
        if c.partition not in m.partitions:
            out.append(MergeCase(m, case.checkpoints[:i] + case.checkpoints[i + 1 :]))
    return out


def shrink_case(
    factory: SutFactory, case: AlgebraCase, rule: Rule, *, timeout: float = 10.0, budget: int = 60
) -> tuple[AlgebraCase, AlgebraResult, int]:
    """The smallest variant of ``case`` that still breaks ``rule`` (greedy), with its run."""
    best = case
    result = run_algebra(factory, [case], timeout=timeout)
    runs = 1
    improved = True
    while improved and runs < budget:
        improved = False
        for candidate in _smaller(best):
            if runs >= budget:
                break
            attempt = run_algebra(factory, [candidate], timeout=timeout)
            runs += 1
            if attempt.violations and attempt.violations[0].rule is rule:
                best, result, improved = candidate, attempt, True
                break
    return best, result, runs
