"""Linearizability of one revision-conditional register, streamed, within a budget.

The register is the publication record of a stream (or one checkpoint, its
generation standing for the revision). Its sequential specification
(docs/semantics.md section 5): it holds ``(revision, value)``; a read returns
both; a write naming ``expected`` applies iff the revision is ``expected`` and
leaves ``(expected + 1, its value)``, else it changes nothing (a conflict,
which shows the current pair); ``create`` makes ``(0, initial value)`` if the
register does not exist yet and shows the current pair.

A history is linearizable when every operation can be given a point in time
between its invocation and its completion such that, taken in the order of the
points, every operation returns what it returned. Points are real numbers: an
operation A must come before B only when A completed strictly before B was
invoked (``A.t1 < B.t0``); ties and overlaps leave the order open. An
indefinite operation (lost response) may take effect at any time after its
invocation, or never.

The check is the configuration search of Wing & Gong and Lowe, as Porcupine
runs it, made incremental: the events (invocations, and completions at the
same time after them) are taken in time order, and the *frontier* holds every
configuration the history so far can be in. A configuration is only
``(revision, value)``: because revisions only grow and each is made by one
write, which in-flight operations a configuration has already linearized
follows from its revision (a read of revision ``r`` is done once the register
is past ``r``; a configuration may not leave revision ``r`` while a read of
``r`` showing another value, or another acknowledged write expecting ``r``, is
in flight). So the frontier holds at most one configuration per
``(revision, value)`` a write in flight could make: at most ``W + 1`` for ``W``
writes in flight, and the search never branches over subsets of operations,
where Porcupine's generic search blows up.

Completed operations are forgotten: memory is O(frontier + operations in
flight + the window kept for explanations). Indefinite writes stay in flight
until every configuration is past their expected revision (then they can never
apply). Cost per event: O(F x (1 + W_r)) for F configurations and W_r writes in
flight expecting the revision of a configuration; a :class:`Budget` caps the
configurations visited, and a register that exceeds it is *undecided*, never a
hang.

When a completion leaves no configuration, the register is not linearizable:
:meth:`Register.complete` returns the smallest fragment it can find (the
operations since the last snapshot of the frontier, shrunk one operation at a
time while the fragment stays non-linearizable).
"""

from __future__ import annotations

import heapq
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass, field

from fencepost.audit.ops import INF, Op


class _Wild:
    """The value of a revision nobody has shown yet (the log began after it was made)."""

    def __repr__(self) -> str:
        return "unknown"


WILD: Hashable = _Wild()
ABSENT = -1  # the register does not exist yet (the stream was not created)
UNKNOWN = -2  # the log began after the register was made: any state

Config = tuple[int, Hashable]

READ, WRITE, CREATE = "read", "write", "create"


@dataclass(slots=True, eq=False)
class RegOp:
    """One operation as the register sees it.

    ``read``: shows ``(rev, value)``. ``write``: expects ``rev`` and writes
    ``value``; ``must`` when acknowledged as applied (otherwise indefinite: may
    apply). ``create``: makes ``(0, init)`` if absent, and, when ``must``
    (answered), shows ``(rev, value)``.
    """

    op: Op
    kind: str
    rev: int
    value: Hashable
    must: bool
    init: Hashable = None

    @property
    def t0(self) -> int:
        return self.op.t0

    @property
    def t1(self) -> float:
        return self.op.t1


class Undecided(Exception):
    """The budget ran out before the register was decided."""


@dataclass
class Budget:
    """How many configurations one register may visit in all (a guard, not a tuning knob)."""

    configurations: int = 2_000_000
    spent: int = 0

    def spend(self, n: int = 1) -> None:
        self.spent += n
        if self.spent > self.configurations:
            raise Undecided(
                f"more than {self.configurations:,} configurations visited; rerun with a larger "
                "--budget"
            )


@dataclass(frozen=True)
class Snapshot:
    """The frontier and the operations in flight at one point of the history."""

    frontier: frozenset[Config]
    inflight: tuple[RegOp, ...]


@dataclass(frozen=True)
class Failure:
    """A non-linearizable fragment: start state, operations, and the one that cannot complete."""

    start: frozenset[Config]
    ops: tuple[RegOp, ...]
    culprit: RegOp


class _Engine:
    """The frontier and the indexes of the operations in flight."""

    def __init__(self, frontier: Iterable[Config], budget: Budget) -> None:
        self.frontier: set[Config] = set(frontier)
        self.budget = budget
        self.inflight: dict[RegOp, RegOp] = {}  # keyed by identity (RegOp has eq=False)
        self.reads: dict[int, dict[Hashable, int]] = {}  # rev -> value -> count
        self.writes: dict[int, list[RegOp]] = {}  # expected -> writes
        self.musts: dict[int, int] = {}  # expected -> acknowledged writes
        self.creates: list[RegOp] = []
        self.definite = 0  # operations in flight that will complete
        self.maybe = 0  # writes in flight that may apply (indefinite): _prune's work

    # --- the indexes -------------------------------------------------------------

    def _shows(self, r: RegOp) -> bool:
        return r.kind == READ or (r.kind == CREATE and r.must)

    def add(self, r: RegOp) -> None:
        self.inflight[r] = r
        if r.op.t1 != INF:
            self.definite += 1
        kind, rev = r.kind, r.rev
        if kind == READ or (kind == CREATE and r.must):  # _shows(r)
            at = self.reads.get(rev)
            if at is None:
                self.reads[rev] = {r.value: 1}
            else:
                at[r.value] = at.get(r.value, 0) + 1
        if kind == WRITE:
            ws = self.writes.get(rev)
            if ws is None:
                self.writes[rev] = [r]
            else:
                ws.append(r)
            if r.must:
                self.musts[rev] = self.musts.get(rev, 0) + 1
            else:
                self.maybe += 1
        elif kind == CREATE:
            self.creates.append(r)

    def remove(self, r: RegOp) -> None:
        if self.inflight.pop(r, None) is None:
            return
        if r.op.t1 != INF:
            self.definite -= 1
        kind, rev = r.kind, r.rev
        if kind == READ or (kind == CREATE and r.must):  # _shows(r)
            at = self.reads[rev]
            left = at[r.value] - 1
            if left:
                at[r.value] = left
            else:
                del at[r.value]
                if not at:
                    del self.reads[rev]
        if kind == WRITE:
            ws = self.writes[rev]
            ws.remove(r)
            if not ws:
                del self.writes[rev]
            if r.must:
                self.musts[rev] -= 1
                if not self.musts[rev]:
                    del self.musts[rev]
            else:
                self.maybe -= 1
        elif kind == CREATE:
            self.creates.remove(r)

    # --- configurations ------------------------------------------------------------

    def _normal(self, rev: int, value: Hashable) -> Config | None:
        """``(rev, value)`` once the reads in flight at ``rev`` are taken, or None if one
        of them can never be (it shows another value, and the register only moves on)."""
        shown = self.reads.get(rev)
        if not shown:
            return (rev, value)
        if value is WILD:
            if len(shown) > 1:
                return None
            return (rev, next(iter(shown)))
        if len(shown) > 1 or value not in shown:
            return None
        return (rev, value)

    def _invoke_rule(self, c: Config, r: RegOp) -> Config | None:
        rev, value = c
        if rev < 0:
            return c
        if self._shows(r):
            if rev > r.rev:
                return None
            if rev == r.rev:
                if value is WILD:
                    return self._normal(rev, r.value)
                return c if value == r.value else None
            return c
        if r.kind == WRITE and r.must and rev > r.rev:
            return None
        return c

    def _successors(self, c: Config) -> list[Config]:
        rev, _ = c
        out: list[Config] = []
        if rev == UNKNOWN:
            bound = min(
                [*self.reads, *self.musts, *(r.rev for r in self.creates if r.must)],
                default=None,
            )
            for k in {*self.reads, *self.writes, *(r.rev for r in self.creates if r.must)}:
                if bound is None or k <= bound:
                    n = self._normal(k, WILD)
                    if n is not None:
                        out.append(n)
            return out
        if rev == ABSENT:
            for cr in self.creates:
                n = self._normal(0, cr.init)
                if n is not None:
                    out.append(n)
            return out
        musts = self.musts.get(rev, 0)
        for w in self.writes.get(rev, ()):
            if musts - (1 if w.must else 0) > 0:
                continue  # another acknowledged write expecting this revision would never apply
            n = self._normal(rev + 1, w.value)
            if n is not None:
                out.append(n)
        return out

    @staticmethod
    def _done(c: Config, r: RegOp) -> bool:
        rev, value = c
        if rev < 0:
            return False
        if r.kind == WRITE:
            return rev > r.rev
        return rev > r.rev or (rev == r.rev and value == r.value)

    # --- events ----------------------------------------------------------------------

    def invoke(self, r: RegOp) -> None:
        self.add(r)
        if r.kind == WRITE and not r.must:
            return
        if r.kind == CREATE and not r.must:
            return
        if len(self.frontier) == 1:
            for c in self.frontier:
                rev = c[0]
                if rev < 0 or rev < r.rev:
                    return  # _invoke_rule keeps c
                if r.kind == WRITE:
                    if rev == r.rev:
                        return
                elif rev == r.rev and c[1] is not WILD and c[1] == r.value:
                    return
                n = self._invoke_rule(c, r)
                if n != c:
                    self.frontier = set() if n is None else {n}
            return
        survivors: set[Config] = set()
        for c in self.frontier:
            n = self._invoke_rule(c, r)
            if n is not None:
                survivors.add(n)
        self.frontier = survivors

    def complete(self, r: RegOp) -> bool:
        """Linearize ``r`` in every configuration that can; False if none can."""
        if len(self.frontier) == 1:  # the usual case: one configuration, often past r
            for c in self.frontier:
                rev = c[0]
                if rev >= 0 and (
                    rev > r.rev or (r.kind != WRITE and rev == r.rev and c[1] == r.value)
                ):  # _done(c, r)
                    self.remove(r)
                    if self.maybe or self.creates:
                        self._prune()
                    return True
                if r.kind == WRITE and c[0] == r.rev:
                    # Every successor of c is past r (revision r.rev + 1), so the search
                    # below would take exactly c's successors, one step: take them here.
                    found = set(self._successors(c))
                    if found:
                        self.budget.spend(len(found))
                    self.remove(r)
                    self.frontier = found
                    if found:
                        self._prune()
                    return bool(found)
        done: set[Config] = set()
        seen = set(self.frontier)
        work = list(self.frontier)
        spend = self.budget.spend
        while work:
            c = work.pop()
            if self._done(c, r):
                done.add(c)
                continue
            for n in self._successors(c):
                if n not in seen:
                    spend()
                    seen.add(n)
                    work.append(n)
        self.remove(r)
        self.frontier = done
        if done:
            self._prune()
        return bool(done)

    def _prune(self) -> None:
        """Forget indefinite writes (and creates) that no configuration can apply any more."""
        if not self.maybe and not self.creates:
            return
        low = min(rev for rev, _ in self.frontier)
        if low < 0:
            return
        if self.maybe:
            for expected in [e for e in self.writes if e < low]:
                for w in list(self.writes[expected]):
                    if not w.must:
                        self.remove(w)
        for cr in [cr for cr in self.creates if not cr.must]:
            self.remove(cr)

    def snapshot(self) -> Snapshot:
        return Snapshot(frozenset(self.frontier), tuple(self.inflight.values()))


def replay(start: Snapshot, ops: Sequence[RegOp], budget: Budget) -> RegOp | None:
    """Run ``ops`` from ``start``; the operation that cannot complete, or None."""
    engine = _Engine(start.frontier, budget)
    pending: list[tuple[float, int, RegOp]] = []
    for r in start.inflight:
        engine.add(r)
        if r.t1 != INF:
            pending.append((r.t1, len(pending), r))
    heapq.heapify(pending)
    tie = len(pending)
    for r in sorted(ops, key=lambda r: (r.t0, r.op.index)):
        while pending and pending[0][0] < r.t0:
            done = heapq.heappop(pending)[2]
            if not engine.complete(done):
                return done
        engine.invoke(r)
        if not engine.frontier:
            return r
        if r.t1 != INF:
            heapq.heappush(pending, (r.t1, tie, r))
            tie += 1
    while pending:
        done = heapq.heappop(pending)[2]
        if not engine.complete(done):
            return done
    return None


#: Snapshots are taken at quiescent points (no answered call in flight) and at
#: least every this many invocations, so a fragment starts at most about twice
#: as far back.
SNAPSHOT_EVERY = 32


@dataclass
class Register:
    """One register's streaming check. Feed :meth:`invoke` in ``t0`` order and
    :meth:`complete` in ``t1`` order, completions before invocations at later times
    (the caller orders events; see :mod:`fencepost.audit.stream`).

    ``initial`` is the frontier at the start of the log: the register may not
    exist yet (``ABSENT``) or exist in a state the log never shows (``UNKNOWN``).
    """

    name: str
    budget: Budget = field(default_factory=Budget)
    initial: frozenset[Config] = frozenset({(ABSENT, None), (UNKNOWN, WILD)})

    def __post_init__(self) -> None:
        self._engine = _Engine(self.initial, self.budget)
        self._older = self._engine.snapshot()
        self._newer = self._older
        self._window: list[RegOp] = []  # invoked since the older snapshot
        self._since = 0  # invocations since the newer snapshot
        self._split = 0  # index in _window where the newer snapshot starts
        self.failed: Failure | None = None
        self.undecided: str | None = None
        self.operations = 0
        self.largest = 1  # the most configurations the frontier ever held

    @property
    def live(self) -> bool:
        return self.failed is None and self.undecided is None

    @property
    def frontier(self) -> frozenset[Config]:
        return frozenset(self._engine.frontier)

    def invoke(self, r: RegOp) -> None:
        if self.failed is not None or self.undecided is not None:  # not live
            return
        self.operations += 1
        engine = self._engine
        if self._since >= SNAPSHOT_EVERY or (engine.definite == 0 and self._since >= 4):
            self._older, self._newer = self._newer, engine.snapshot()
            del self._window[: self._split]
            self._split = len(self._window)
            self._since = 0
        self._window.append(r)
        self._since += 1
        try:
            engine.invoke(r)
        except Undecided as exc:
            self.undecided = str(exc)
            return
        if not engine.frontier:
            self._fail(r)

    def complete(self, r: RegOp) -> None:
        if self.failed is not None or self.undecided is not None:  # not live
            return
        if r not in self._engine.inflight:
            return
        try:
            ok = self._engine.complete(r)
        except Undecided as exc:
            self.undecided = str(exc)
            return
        if not ok:
            self._fail(r)
        elif len(self._engine.frontier) > self.largest:
            self.largest = len(self._engine.frontier)

    def _fail(self, culprit: RegOp) -> None:
        """Shrink the window to a fragment that is still not linearizable."""
        start = self._older
        ops = [r for r in self._window if r.t0 <= culprit.t1]
        inflight = list(start.inflight)
        budget = Budget(self.budget.configurations)
        try:
            absent = any(rev == ABSENT for rev, _ in start.frontier)
            for i in range(len(ops) - 1, -1, -1):
                if ops[i] is culprit or (absent and ops[i].kind == CREATE):
                    continue  # without its creation, a register explains nothing
                trial = ops[:i] + ops[i + 1 :]
                if replay(Snapshot(start.frontier, tuple(inflight)), trial, budget) is not None:
                    ops = trial
            for i in range(len(inflight) - 1, -1, -1):
                trial_in = inflight[:i] + inflight[i + 1 :]
                if replay(Snapshot(start.frontier, tuple(trial_in)), ops, budget) is not None:
                    inflight = trial_in
            found = replay(Snapshot(start.frontier, tuple(inflight)), ops, budget)
        except Undecided:
            found = None
        if found is None:  # shrinking ran out of budget: show the whole window
            ops, inflight, found = (
                [r for r in self._window if r.t0 <= culprit.t1],
                list(start.inflight),
                culprit,
            )
        shown = sorted([*inflight, *ops], key=lambda r: (r.t0, r.op.index))
        self.failed = Failure(start.frontier, tuple(shown), found)
