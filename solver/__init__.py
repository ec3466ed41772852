"""Every Z3 check fencepost makes, bounded by a deterministic resource limit, never wall time.

Z3 counts its own work in *resource units* (its ``rlimit``). The same query, built
the same way, consumes the same number of units in the same Z3 version on any
machine, whatever else the machine is doing; a wall-clock timeout does not, and a
proof that flips to ``unknown`` when CI is busy is not a gate. So each check runs
under the rlimit of its *family* in :data:`fencepost.solver.budgets.BUDGETS`: the
units that family was measured to consume, times a stated margin. The verdict
(``sat``, ``unsat``, or ``unknown`` because the limit ran out) is then a function of
the query and the Z3 version alone.

How Z3's Python API honours the limit (z3-solver 5.4.1; ``tests/solver`` checks
each point, so an upgrade that changes one is noticed):

- ``solver.set("rlimit", N)`` is per check: each ``check()`` may consume ``N`` units
  more than the context had consumed when it started, so a solver reused with
  ``push``/``pop`` gets ``N`` per check, not ``N`` in all. This is what we use.
- ``z3.set_param("rlimit", N)`` is global: it limits every later solver of every
  context. We never set it: one family's limit would leak into every other query.
- The statistic ``rlimit count`` is the context's running total; a check's
  consumption is its difference across the check (:attr:`Answer.used`).
- A check that runs out answers ``unknown`` with the reason
  ``max. resource limit exceeded``, or ``canceled`` when the limit strikes inside
  nonlinear arithmetic: the reason does not tell an exhausted limit from a stopped
  timer, the counter does (``used >= rlimit``).

A query's consumption must not depend on what ran before it in the process, or the
measured figures would hold for one command and not another. So each
:class:`Query` owns a fresh Z3 context, and its terms reach it as SMT-LIB text
(:class:`Printed`), never by ``translate``: translating raises the destination's
counter of fresh names to the source's, and Z3 orders and hashes terms by name.
Uninterpreted sorts are declared in one order everywhere (:data:`SORTS`), so a
model translated back to the main context speaks of the caller's sorts.

Wall time remains only as a last-resort guard (:data:`GUARD_MS` per check, Z3's
``timeout``; ``fencepost prove --timeout`` changes it). Reaching it is never a
verdict: :class:`MachineTooSlow` is raised, and the commands report "machine too
slow" with exit 3.

Cost: per query a fresh context (a few milliseconds), printing and parsing its
terms (linear in their size; hypotheses shared by many queries are printed once);
the limit itself costs nothing.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Final

import z3
from z3 import z3core

from fencepost.solver.budgets import BUDGETS, FLOOR, MARGIN, Budget, UnknownFamily, budget

__all__ = [
    "BUDGETS",
    "FLOOR",
    "GUARD_MS",
    "MARGIN",
    "RLIMIT_EXHAUSTED",
    "SORTS",
    "Answer",
    "Budget",
    "MachineTooSlow",
    "Printed",
    "Query",
    "UnknownFamily",
    "UnknownSort",
    "budget",
    "declare_sort",
    "guard_ms",
    "metered",
    "wall_guard",
]

#: The default last-resort wall-clock guard per check, in milliseconds: 5 minutes,
#: hundreds of times what the largest family needs at its full limit on a quiet machine.
GUARD_MS: Final = 300_000

#: The detail of an ``unknown`` because the family's rlimit ran out.
RLIMIT_EXHAUSTED: Final = "resource limit exhausted"

_guard_ms = GUARD_MS
_meters: list[dict[str, int]] = []


class MachineTooSlow(RuntimeError):
    """A check reached the wall-clock guard before its deterministic limit: no verdict.

    Never reported as refuted or unknown: the same check on a less loaded machine
    (or with a longer guard) decides it within the same rlimit.
    """

    def __init__(self, family: str, seconds: float, used: int, rlimit: int) -> None:
        self.family = family
        self.seconds = seconds
        self.used = used
        self.rlimit = rlimit
        super().__init__(
            f"machine too slow: a Z3 check of {family} ran {seconds:.1f} s of wall time "
            f"(the guard) after {used:,} of its {rlimit:,} resource units; no verdict was "
            "reached. Run it on a less loaded machine, or raise the guard with "
            "`fencepost prove --timeout MS`"
        )


#: Every uninterpreted sort a query may use, in the order every context declares them.
#: Z3 numbers an uninterpreted sort by the order in which its context first declared
#: the name, and translating a sort between contexts copies that number, not the
#: name: a model translated back from a context that declared the names in another
#: order (or after a parser context, which numbers sorts of its own) speaks of other
#: sorts, and interprets nothing of the caller's. So the main context declares these
#: at import, in this order, and so does every :class:`Query` before anything else.
#: One home: add a sort here.
SORTS: Final = ("TotalOrderElement", "Partition", "Publisher", "Reader", "Event")

_MAIN_SORTS: Final = {name: z3.DeclareSort(name) for name in SORTS}


class UnknownSort(ValueError):
    """A sort name missing from :data:`SORTS`."""


def declare_sort(name: str) -> Any:
    """The main context's uninterpreted sort ``name`` (one of :data:`SORTS`).

    Use this, never ``z3.DeclareSort``, for a sort a :class:`Query` will see (see
    :data:`SORTS` for why).
    """
    try:
        return _MAIN_SORTS[name]
    except KeyError:
        raise UnknownSort(
            f"no uninterpreted sort {name!r} in fencepost.solver.SORTS ({', '.join(SORTS)}); "
            "add it there, in the order every context declares them"
        ) from None


def guard_ms() -> int:
    """The wall-clock guard now in force, per check, in milliseconds."""
    return _guard_ms


@contextmanager
def wall_guard(ms: int) -> Iterator[None]:
    """Run the block with another wall-clock guard per check (``fencepost prove --timeout``)."""
    global _guard_ms
    if ms < 1:
        raise ValueError(f"the wall-clock guard must be at least 1 ms, not {ms}")
    saved, _guard_ms = _guard_ms, ms
    try:
        yield
    finally:
        _guard_ms = saved


@contextmanager
def metered() -> Iterator[dict[str, int]]:
    """Collect, per family, the most units any one check in the block consumed.

    How the figures of :data:`BUDGETS` are measured and pinned (``tests/solver``).
    """
    peaks: dict[str, int] = {}
    _meters.append(peaks)
    try:
        yield peaks
    finally:
        _meters[:] = [m for m in _meters if m is not peaks]  # by identity: meters nest


@dataclass(frozen=True)
class Answer:
    """One check's result: ``sat``, ``unsat`` or ``unknown``, and what it cost.

    ``model`` (when ``sat``) is translated into the main context. ``detail`` says why
    the answer is ``unknown``: :data:`RLIMIT_EXHAUSTED` (deterministic: the same on
    every machine), or Z3's reason (incomplete quantifier reasoning, also
    deterministic). ``used`` is the resource units the check consumed.
    """

    result: Any
    model: Any
    detail: str
    used: int
    rlimit: int

    @property
    def sat(self) -> bool:
        return bool(self.result == z3.sat)

    @property
    def unsat(self) -> bool:
        return bool(self.result == z3.unsat)

    @property
    def unknown(self) -> bool:
        return bool(self.result == z3.unknown)


class Printed:
    """Main-context terms printed once as SMT-LIB text, ready to assert in many queries.

    Why text and not ``term.translate(ctx)``: translating between two Z3 contexts
    raises the destination's counter of fresh names to the source's (both ways), and
    Z3 orders and hashes terms by name, so a translated query would consume a
    number of resource units that depends on how many fresh names the main context
    had seen -- on every model translated back before it, in whatever command or
    test order. Text parsed into a fresh context starts its counter at zero: the
    query's consumption depends on the query alone. Printing once and parsing in
    every query that asserts the same hypotheses (the protocol's invariant, once per
    action) saves printing it again.
    """

    def __init__(self, *terms: Any) -> None:
        self.declarations: list[str] = []
        self.assertions: list[str] = []
        if not terms:
            return
        staging = z3.Solver()
        staging.add(*terms)
        for command in _commands(staging.sexpr()):
            if command.startswith("(declare-"):
                self.declarations.append(command)
            else:
                self.assertions.append(command)

    def each(self) -> list[Printed]:
        """One :class:`Printed` per assertion, in order, sharing the declarations.

        Printing many formulas of one vocabulary together (a protocol action's goals)
        prints the vocabulary once.
        """
        out = []
        for assertion in self.assertions:
            one = Printed()
            one.declarations = self.declarations
            one.assertions = [assertion]
            out.append(one)
        return out


#: A declaration of an uninterpreted sort, as Z3 prints it (the name plain or quoted).
_USER_SORT = re.compile(r"\(declare-sort (?:\|([^|]*)\||([^\s()|]+)) 0\)")

#: The tokens that matter for finding SMT-LIB's top-level commands: parentheses, and the
#: strings, quoted symbols and comments whose parentheses do not count.
_TOKENS = re.compile(r'"(?:[^"]|"")*"|\|[^|]*\||;[^\n]*|[()]')


def _commands(text: str) -> list[str]:
    """The top-level commands of SMT-LIB ``text``, in order."""
    out: list[str] = []
    depth = 0
    start = 0
    for match in _TOKENS.finditer(text):
        token = match.group()
        if token == "(":
            if depth == 0:
                start = match.start()
            depth += 1
        elif token == ")":
            depth -= 1
            if depth == 0:
                out.append(text[start : match.end()])
    return out


def _count(solver: Any) -> int:
    """The context's running total of resource units (Z3's ``rlimit count`` statistic).

    Read through Z3's C API: one statistics object, its keys searched from the end
    (where Z3 puts the counter) and compared as bytes, and freed at once. ``Statistics``
    of the Python API decodes every key, twice for ``get_key_value`` after ``keys``: a
    third of the cost, for the same figure (``tests/solver`` compares the two).
    Cost: tens of microseconds per read.
    """
    ctx = solver.ctx.ref()
    stats = z3core.Z3_solver_get_statistics(ctx, solver.solver)
    z3core.Z3_stats_inc_ref(ctx, stats)
    try:
        for idx in range(z3core.Z3_stats_size(ctx, stats) - 1, -1, -1):
            if z3core.Z3_stats_get_key_bytes(ctx, stats, idx) == b"rlimit count":
                return int(z3core.Z3_stats_get_uint_value(ctx, stats, idx))
        return 0
    finally:
        z3core.Z3_stats_dec_ref(ctx, stats)


class Query:
    """A Z3 solver in a fresh context of its own, every check limited by its family's rlimit.

    ``rlimit`` overrides the family's limit (tests use it to show that a too-small
    limit yields ``unknown``, the same every time); ``params`` are Z3 solver
    parameters (``{"smt.mbqi": True}``). Terms are built by the caller in the main
    context; :meth:`add` and :meth:`check` carry them over as text, and models come
    back translated into the main context.
    """

    def __init__(
        self, family: str, *, rlimit: int | None = None, params: Mapping[str, Any] | None = None
    ) -> None:
        self.family = family
        self.rlimit = budget(family).rlimit if rlimit is None else rlimit
        if self.rlimit < 1:
            raise ValueError(f"an rlimit must be at least 1, not {self.rlimit}")
        self.context = z3.Context()
        # The sorts first, before the parser context (which numbers sorts of its own).
        self._sorts = {name: z3.DeclareSort(name, self.context) for name in SORTS}
        self._parser = z3.ParserContext(self.context)
        for sort in self._sorts.values():
            self._parser.add_sort(sort)
        self.solver = z3.Solver(ctx=self.context)
        for key, value in (params or {}).items():
            self.solver.set(key, value)
        self.solver.set("rlimit", self.rlimit)
        self._declared: set[str] = set()

    def add(self, *terms: Any) -> None:
        """Assert ``terms``: main-context terms, or :class:`Printed` ones.

        They are carried into the query's context as SMT-LIB text, never translated
        (see :class:`Printed` for why); a declaration already made in this query is
        not repeated.
        """
        printed = [t for t in terms if isinstance(t, Printed)]
        plain = [t for t in terms if not isinstance(t, Printed)]
        if plain:
            printed.append(Printed(*plain))
        commands: list[str] = []
        for block in printed:
            for command in block.declarations:
                if command in self._declared:
                    continue
                self._declared.add(command)
                sort = _USER_SORT.fullmatch(command)
                if sort is None:
                    commands.append(command)
                elif (sort.group(1) or sort.group(2)) not in self._sorts:
                    declare_sort(sort.group(1) or sort.group(2))  # raises, naming SORTS
            commands.extend(block.assertions)
        self.solver.add(self._parser.from_string("\n".join(commands)))

    def push(self) -> None:
        self.solver.push()

    def pop(self) -> None:
        self.solver.pop()

    def check(self, *extra: Any, family: str | None = None) -> Answer:
        """Check the assertions and ``extra`` (asserted for this check only).

        ``family`` checks under another family's limit (a later stage of the same
        query, such as the search for a small counterexample), and is metered as that
        family. Raises :class:`MachineTooSlow` when the wall-clock guard, not the
        rlimit, stopped Z3.
        """
        name = self.family if family is None else family
        limit = self.rlimit if family is None else budget(family).rlimit
        solver = self.solver
        if extra:
            solver.push()
            self.add(*extra)
        try:
            solver.set("rlimit", limit)
            guard = _guard_ms
            solver.set("timeout", guard)
            before = _count(solver)
            started = time.perf_counter()
            result = solver.check()
            seconds = time.perf_counter() - started
            used = _count(solver) - before
            model = None
            detail = ""
            if result == z3.sat:
                model = solver.model().translate(z3.main_ctx())
            elif result == z3.unknown:
                if used >= limit:
                    detail = RLIMIT_EXHAUSTED
                elif solver.reason_unknown() == "timeout" or seconds * 1000 >= guard * 0.95:
                    raise MachineTooSlow(name, seconds, used, limit)
                else:
                    detail = solver.reason_unknown()
        finally:
            if extra:
                solver.pop()
        for peaks in _meters:
            if used > peaks.get(name, 0):
                peaks[name] = used
        return Answer(result, model, detail, used, limit)
