"""Bounded breadth-first exploration of a model handed over as pure functions.

The model is a :class:`fencepost.model.spec.Spec` (by default the fencepost
model, :data:`fencepost.model.spec.SPEC`): its initial state, its successors,
its invariants and sometimes properties, its canonical key (which states are the
same, symmetry included: the model's claim, argued in
:mod:`fencepost.model.canonical`) and its transition relation factored by what
each move reads. This module knows nothing else of it.

Breadth-first order makes the first violating state found one at the least
depth, so the counterexample printed is a shortest path (in steps) to a broken
invariant. States are deduplicated by their canonical key.

The search itself works on interned ids (:class:`fencepost.explorer.keys.Keys`): a
key is a flat tuple of small ints carrying the same information as the model's
canonical key, computed for each successor from its parent's ids and the
memoized moves of the model's factored relation, and the successor is built
only when its key is new. Behind the search only the keys, a parent pointer and
a move number per state are kept; a counterexample is replayed from the initial
state.

With ``keep_graph`` the reachable graph is kept as a flat edge list during the
search and handed out as a ``networkx.DiGraph`` (``result.graph``, built in
bulk on first use) whose nodes are state numbers: ``result.keys[n]`` is node
``n``'s canonical key and ``result.representatives[n]`` the state explored for
it.
"""

from __future__ import annotations

import functools
import gc
import os
import time
from array import array
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any, ParamSpec, TypeVar

import networkx as nx

from fencepost.explorer.keys import Keys, Node, changes
from fencepost.model.spec import (
    SPEC,
    Action,
    Invariant,
    ModelConfig,
    Sometimes,
    Spec,
    State,
)

#: Verdicts. ``vacuous``: every invariant holds in every reachable state, but a situation
#: the part must reach (a ``sometimes`` property) never was, so some invariant passed
#: vacuously within these bounds.
HOLDS = "holds"
VIOLATED = "violated"
INCOMPLETE = "incomplete"
VACUOUS = "vacuous"

#: New states between two looks at the clock and the memory in use (a cheap read).
_CHECK_EVERY = 1024


def memory_in_use() -> int:
    """Bytes of memory this process uses now (resident set; its peak where /proc is absent)."""
    try:
        with open("/proc/self/statm", "rb") as handle:
            return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        import resource

        return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024


@dataclass(frozen=True, slots=True)
class ExploreProgress:
    """Where a long exploration is: what :func:`explore` hands its ``progress`` callback."""

    part: str
    states: int
    transitions: int
    depth: int
    seconds: float
    memory: int
    #: Growth of the resident set since the exploration started (bytes).
    memory_growth: int = 0

    @property
    def states_per_second(self) -> float:
        return self.states / self.seconds if self.seconds > 0 else 0.0

    @property
    def bytes_per_state(self) -> float:
        """Resident-set growth since the start per distinct state so far."""
        return self.memory_growth / self.states if self.states else 0.0


@dataclass(frozen=True, slots=True)
class Step:
    """One step of a counterexample: the action taken and the state after it."""

    index: int
    action: Action | None
    state: State
    #: The state in the model's words (:attr:`Spec.describe`), line by line.
    lines: tuple[str, ...] = ()

    @property
    def text(self) -> str:
        """What happened, in domain words."""
        return "initial state" if self.action is None else self.action.describe()

    def summary(self) -> list[str]:
        """The record, the checkpoints and the moving processes after this step."""
        return list(self.lines)


@dataclass(frozen=True, slots=True)
class Reached:
    """Where a ``sometimes`` property was first reached: steps from the start, and by what."""

    name: str
    steps: int
    action: str


@dataclass(frozen=True, slots=True)
class Violation:
    """The invariant a counterexample breaks (the first in the model's order) and any others."""

    invariant: str
    doc: str
    message: str
    also: tuple[str, ...] = ()


@dataclass(slots=True)
class ExploreResult:
    """The outcome of exploring one part within its bounds."""

    part: str
    config: ModelConfig
    states: int
    transitions: int
    depth: int
    seconds: float
    verdict: str
    counterexample: list[Step] | None = None
    violation: Violation | None = None
    symmetry: bool = True
    reached: dict[str, Reached] = field(default_factory=dict)
    unreached: tuple[Sometimes, ...] = ()
    representatives: list[State] = field(default_factory=list)
    edges: array[int] | None = None
    #: Why an ``incomplete`` exploration stopped: ``max_states`` or ``max_memory``.
    stopped_by: str | None = None
    #: Resident set of the process when the exploration started, and its peak during it
    #: (sampled every 1,024 new states and at the end), in bytes.
    memory_start: int = 0
    memory_peak: int = 0
    #: The explorer's own key of every node, by state number (kept with the graph): flat
    #: tuples of small ints (see :class:`Keys`), for a same-run baseline over the graph.
    state_keys: list[tuple[int, ...]] | None = None
    #: The model explored (its canonical key names the nodes, its successors the edges).
    model: Spec = SPEC
    _graph: Any = None
    _keys: list[Hashable] | None = None

    @property
    def graph(self) -> Any:
        """The reachable graph as a ``networkx.DiGraph`` (None unless kept).

        Node ``n`` is the ``n``-th distinct state found (``representatives[n]``,
        canonical key ``keys[n]``); an edge is at least one transition between
        them. Built in bulk on first use from the edge list the exploration
        kept, so exploring stays fast when nobody looks at it.
        """
        if self._graph is None and self.edges is not None:
            graph = nx.DiGraph()
            graph.add_nodes_from(range(self.states))
            flat = self.edges
            graph.add_edges_from(zip(flat[0::2], flat[1::2], strict=True))
            self._graph = graph
        return self._graph

    @property
    def keys(self) -> list[Hashable]:
        """Canonical key of every node (empty unless the graph was kept)."""
        if self._keys is None:
            key = self.model.canonical_key
            self._keys = [key(rep, self.symmetry) for rep in self.representatives]
        return self._keys

    @property
    def states_per_second(self) -> float:
        """Distinct states explored per second of wall time."""
        return self.states / self.seconds if self.seconds > 0 else float("inf")

    @property
    def bytes_per_state(self) -> float:
        """Peak resident-set growth during the exploration per distinct state.

        Everything the exploration allocated counts (keys, parent pointers, the
        frontier, the model's memo tables, the graph when kept). Memory freed by
        an earlier exploration in the same process and reused counts as no
        growth, so the first exploration of a process gives the honest figure
        (``benchmarks/explore.py`` measures each part in a fresh process).
        """
        return (self.memory_peak - self.memory_start) / self.states if self.states else 0.0

    @property
    def broken(self) -> tuple[str, ...]:
        """Every invariant the counterexample's last state breaks (empty when none)."""
        if self.violation is None:
            return ()
        return (self.violation.invariant, *self.violation.also)


@dataclass(slots=True)
class Exploration:
    """Results of several parts explored one after another."""

    results: list[ExploreResult]

    @property
    def verdict(self) -> str:
        """``violated`` if any part is, else ``incomplete`` if any hit the cap, else
        ``vacuous`` if any left a situation unreached, else ``holds``."""
        verdicts = {r.verdict for r in self.results}
        for v in (VIOLATED, INCOMPLETE, VACUOUS):
            if v in verdicts:
                return v
        return HOLDS

    @property
    def states(self) -> int:
        """Distinct states over all parts."""
        return sum(r.states for r in self.results)

    @property
    def transitions(self) -> int:
        """Transitions over all parts."""
        return sum(r.transitions for r in self.results)

    @property
    def seconds(self) -> float:
        """Wall time over all parts."""
        return sum(r.seconds for r in self.results)

    @property
    def states_per_second(self) -> float:
        """Distinct states per second over all parts."""
        return self.states / self.seconds if self.seconds > 0 else float("inf")


_P = ParamSpec("_P")
_R = TypeVar("_R")


def _without_cyclic_gc(run: Callable[_P, _R]) -> Callable[_P, _R]:
    """``run`` with the cyclic garbage collector paused while it runs (restored after)."""

    @functools.wraps(run)
    def paused(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        collecting = gc.isenabled()
        gc.disable()
        try:
            return run(*args, **kwargs)
        finally:
            if collecting:
                gc.enable()

    return paused


@_without_cyclic_gc
def explore(
    config: ModelConfig,
    *,
    symmetry: bool = True,
    keep_graph: bool = True,
    max_states: int | None = None,
    invariants: Sequence[Invariant] | None = None,
    max_memory: int | None = None,
    progress: Callable[[ExploreProgress], None] | None = None,
    progress_every: float = 2.0,
    sometimes: Sequence[Sometimes] | None = None,
    model: Spec = SPEC,
) -> ExploreResult:
    """Explore every state of ``model`` reachable within ``config``'s bounds, breadth first.

    Stops at the first state breaking one of ``invariants`` (by default the
    model's: :attr:`Spec.invariants`; verdict
    ``violated``, with a shortest counterexample), or when a budget runs out
    (verdict ``incomplete``, ``stopped_by`` saying which): ``max_states``
    distinct states, or ``max_memory`` bytes in use by the process (looked at
    every 1,024 new states, so it is overshot by at most that many states'
    worth, a few hundred bytes each). Otherwise every transition was also checked
    against the ``sometimes`` properties (by default those the model requires of
    ``config``: :attr:`Spec.sometimes`): the verdict is
    ``holds`` when each was reached (``result.reached`` says where first), else
    ``vacuous`` (``result.unreached`` lists them). Checking them costs, while
    any is unreached, building the successor and one test per unreached
    property on each transition of an action kind that can reach one
    (``Sometimes.kinds``), nothing once all
    are. ``progress`` is called about every ``progress_every`` seconds with an
    :class:`ExploreProgress`.

    Cost. Time: per distinct state, one memo lookup per partition, reader and
    publisher (:class:`Keys`, over the model's factored relation) and the
    invariants reading a field its transition changed (``Invariant.reads``);
    per transition, one key (a tuple of ``1 + partitions + publishers`` small
    ints) and one set probe; a successor state is built only when its key is
    new. 12-25 microseconds per distinct state at the default bounds
    (docs/performance.md). Memory: per distinct state its key in a set (about
    100 bytes at the default bounds) and 16 bytes of parent pointer and move
    number; the states themselves only for the current and next depth (all of
    them, and a graph, with ``keep_graph``); plus the memo tables, which grow
    with distinct sub-states (cores, readers, partitions, publishers, records),
    not with states, except that readers make most partitions distinct. About
    250 bytes per state in all for the publication part, 750 for ingest.
    ``result.memory_peak`` is the peak of the process's resident set sampled
    every 1,024 states (``result.bytes_per_state`` its growth per state).

    Cyclic garbage collection is paused while it runs (and restored after):
    the exploration allocates only acyclic tuples and lists, and a collector
    walking every key again as they accumulate would cost a third of the time.
    """
    started = time.perf_counter()
    memory_start = memory_peak = memory_in_use()
    if invariants is None:
        invariants = model.invariants
    start = model.initial(config)
    keys = Keys(model.factored, symmetry)
    node0 = keys.node(start)
    key0 = keys.key(node0[5], node0[3], node0[4])
    # Without the graph, membership is all that is asked of a key: a set (no state numbers).
    index: dict[tuple[int, ...], int] = {key0: 0}
    seen: set[tuple[int, ...]] = {key0}
    count = 1
    reps: list[State] = [start]
    # Parent pointers and the position of the move in successors(parent): a counterexample
    # is replayed from the initial state (the exploration keeps no states behind it).
    parent = array("l", [-1])
    moved = array("l", [-1])
    edges = array("l")
    transitions = 0
    depth = 0
    # Per candidate kind, the invariants a successor of that kind must be checked against:
    # those reading a field it changes (the state it leaves passed every one).
    checks = [
        [inv.check for inv in invariants if inv.reads is None or inv.reads & changed]
        for changed in changes(model.factored)
    ]
    waiting = list(model.sometimes(config) if sometimes is None else sometimes)
    trigger = _kinds(waiting)
    reached: dict[str, Reached] = {}
    found = _violated(start, invariants)
    frontier: list[Node] = [node0] if found is None else []
    capped = False
    stopped_by: str | None = None
    hit = 0
    next_check = _CHECK_EVERY
    next_report = started + progress_every
    candidates = keys.candidates
    build = keys.build
    while frontier and found is None and not capped:
        nxt: list[Node] = []
        for node in frontier:
            sid = node[0]
            state = node[1]
            # Every transition is looked at while a situation is unreached or the graph is
            # kept; otherwise only those to new keys are listed (``seen`` is filled there).
            every = bool(waiting) or keep_graph
            moves, cands = candidates(node, None if every else seen)
            transitions += moves
            for cand in cands:
                m = cand[0]
                built = None
                if waiting and (trigger is None or cand[1].kind in trigger):
                    built = build(node, cand, count)
                    action, new = cand[1], built[1]
                    for situation in [
                        s
                        for s in waiting
                        if (s.kinds is None or action.kind in s.kinds)
                        and s.check(state, action, new)
                    ]:
                        waiting.remove(situation)
                        trigger = _kinds(waiting)
                        reached[situation.name] = Reached(
                            situation.name, depth + 1, action.describe()
                        )
                if keep_graph:
                    tid = index.setdefault(cand[2], count)
                    edges.append(sid)
                    edges.append(tid)
                    if tid != count:
                        continue
                elif every:
                    if cand[2] in seen:
                        continue
                    seen.add(cand[2])
                tid = count
                count += 1
                if built is None:
                    built = build(node, cand, tid)
                new = built[1]
                parent.append(sid)
                moved.append(m)
                nxt.append(built)
                if keep_graph:
                    reps.append(new)
                for check in checks[cand[3]]:
                    if check(new) is not None:
                        found = _violated(new, invariants)
                        hit = tid
                        break
                if found is not None:
                    break
                if max_states is not None and count >= max_states:
                    capped, stopped_by = True, "max_states"
                    break
                if count >= next_check:
                    next_check += _CHECK_EVERY
                    memory = memory_in_use()
                    memory_peak = max(memory_peak, memory)
                    if max_memory is not None and memory > max_memory:
                        capped, stopped_by = True, "max_memory"
                        break
                    now = time.perf_counter()
                    if progress is not None and now >= next_report:
                        next_report = now + progress_every
                        progress(
                            ExploreProgress(
                                config.part,
                                count,
                                transitions - (moves - m - 1),
                                depth + 1,
                                now - started,
                                memory,
                                memory - memory_start,
                            )
                        )
            if found is not None or capped:
                # Only the transitions up to the one that stopped it were taken.
                transitions -= moves - m - 1
                break
        if nxt:
            depth += 1
        frontier = nxt
    seconds = time.perf_counter() - started
    memory_peak = max(memory_peak, memory_in_use())
    result = ExploreResult(
        part=config.part,
        config=config,
        states=count,
        transitions=transitions,
        depth=depth,
        seconds=seconds,
        verdict=HOLDS,
        symmetry=symmetry,
        reached=reached,
        representatives=reps if keep_graph else [],
        edges=edges if keep_graph else None,
        memory_start=memory_start,
        memory_peak=memory_peak,
        state_keys=list(index) if keep_graph else None,
        model=model,
    )
    if found is not None:
        result.verdict = VIOLATED
        result.violation = found
        path = []
        at = hit
        while at >= 0:
            path.append(at)
            at = parent[at]
        path.reverse()
        result.counterexample = _replay(model, start, [moved[n] for n in path[1:]])
        result.depth = len(path) - 1
    elif capped:
        result.verdict = INCOMPLETE
        result.stopped_by = stopped_by
    elif waiting:
        result.verdict = VACUOUS
        result.unreached = tuple(waiting)
    return result


def _kinds(waiting: Sequence[Sometimes]) -> frozenset[str] | None:
    """Action kinds that can reach one of ``waiting`` (``None``: any kind may)."""
    kinds: set[str] = set()
    for situation in waiting:
        if situation.kinds is None:
            return None
        kinds |= situation.kinds
    return frozenset(kinds)


def _replay(model: Spec, start: State, moves: Sequence[int]) -> list[Step]:
    """The path taking the ``moves``-th successor at each step from ``start``.

    The transitions are functions, so this rebuilds exactly the states the
    exploration met; it costs one call of the model's successors per step.
    """
    describe = model.describe
    steps = [Step(0, None, start, tuple(describe(start)))]
    state = start
    for n, m in enumerate(moves, 1):
        action, state = model.successors(state)[m]
        steps.append(Step(n, action, state, tuple(describe(state))))
    return steps


def explore_parts(
    configs: Sequence[ModelConfig],
    *,
    symmetry: bool = True,
    keep_graph: bool = True,
    max_states: int | None = None,
    invariants: Sequence[Invariant] | None = None,
    max_memory: int | None = None,
    progress: Callable[[ExploreProgress], None] | None = None,
    progress_every: float = 2.0,
    sometimes: Sequence[Sometimes] | None = None,
    model: Spec = SPEC,
) -> Exploration:
    """Explore each configuration (typically one per part) in turn."""
    return Exploration(
        [
            explore(
                c,
                symmetry=symmetry,
                keep_graph=keep_graph,
                max_states=max_states,
                invariants=invariants,
                max_memory=max_memory,
                progress=progress,
                progress_every=progress_every,
                sometimes=sometimes,
                model=model,
            )
            for c in configs
        ]
    )


def _violated(state: State, invariants: Sequence[Invariant]) -> Violation | None:
    broken = [(inv, msg) for inv in invariants if (msg := inv.check(state)) is not None]
    if not broken:
        return None
    first, msg = broken[0]
    return Violation(first.name, first.doc, msg, tuple(inv.name for inv, _ in broken[1:]))
