"""Bounded breadth-first exploration of the model with canonical state keys.

Breadth-first order makes the first violating state found one at the least
depth, so the counterexample printed is a shortest path (in steps) to a broken
invariant. States are deduplicated by a *canonical key*:

* **Revision and generation numbers are abstracted.** A publisher's held
  revision matters only through equality with the record's current revision,
  and a reader's expected generation only through equality with the stored
  generation: both only ever grow, so "still current" is all a transition or an
  invariant can observe. The record's ``op_id`` and a publisher's attempt
  counter are write-only (no transition or invariant reads them) and are left
  out. States differing only there are bisimilar.
* **Symmetry reduction.** Partitions are sorted as wholes (ground truth,
  checkpoints per epoch, peaks and their readers, readers sorted among
  themselves) and publishers are sorted by local state. This is sound because
  no invariant names a particular partition, reader or publisher: each
  quantifies over all of them; the transitions are the same for every
  partition and publisher (a reshard chooses its target among all
  partitions); and nothing outside a partition's tuple refers to it by
  position, nor anything outside a publisher's tuple to it (op_id is left
  out). Permuting them maps reachable states to reachable states and
  violations to violations, so one representative per orbit suffices.

The reachable graph is kept as a flat edge list during the search and handed
out as a ``networkx.DiGraph`` (``result.graph``, built in bulk on first use)
whose nodes are state numbers: ``result.keys[n]`` is node ``n``'s canonical key
and ``result.representatives[n]`` the state explored for it.
"""

from __future__ import annotations

import itertools
import os
import time
from array import array
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any

import networkx as nx

from fencepost.model.config import ModelConfig
from fencepost.model.cuts import NOTHING
from fencepost.model.invariants import INVARIANTS, Invariant
from fencepost.model.machine import initial, successors
from fencepost.model.state import (
    CONFIRMED,
    PUBLISHED,
    PUBLISHER_LOCAL,
    PUBLISHER_PHASES,
    READER_EXPECTED,
    READER_PHASES,
    Action,
    Partition,
    Publisher,
    State,
)

#: Verdicts.
HOLDS = "holds"
VIOLATED = "violated"
INCOMPLETE = "incomplete"

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

    @property
    def states_per_second(self) -> float:
        return self.states / self.seconds if self.seconds > 0 else 0.0


_CLAIMS = (PUBLISHED, CONFIRMED)


def _partition_abstract(part: Partition, symmetry: bool) -> tuple[Any, ...]:
    """A partition less its generation numbers (readers keep "my expected one is current")."""
    if not part.readers:
        return (part.truth, part.checkpoints, part.peaks)
    gens = part.generations
    readers = [
        (*r[:READER_EXPECTED], r.epoch > 0 and r.expected == gens[r.epoch - 1])
        for r in part.readers
    ]
    if symmetry:
        readers.sort()
    return (part.truth, part.checkpoints, part.peaks, tuple(readers))


def _publisher_abstract(pub: Publisher, revision: int) -> tuple[Any, ...]:
    """A publisher less its revision number (kept: "the one I read is current"), op ids and,
    when idle, its last report (kept: whether a published/confirmed report was justified)."""
    if pub.phase:
        return (*pub[:PUBLISHER_LOCAL], pub.rec_revision == revision)
    honest = pub.justified or pub.outcome not in _CLAIMS
    return (0, pub.attempts_left, pub.orphan_epoch, pub.orphan_cut, honest)


def canonical_key(state: State, symmetry: bool = True) -> Hashable:
    """The key identifying ``state`` up to bisimilar numbering and (optionally) symmetry."""
    rec = state.record
    pubs = [_publisher_abstract(p, rec.revision) for p in state.publishers]
    parts = [_partition_abstract(part, symmetry) for part in state.partitions]
    if symmetry:
        parts.sort()
        pubs.sort()
    return (state.epoch, rec.epoch, rec.cut, state.history, tuple(parts), tuple(pubs))


class _Keyer:
    """Canonical keys, computed incrementally for the explorer.

    Each distinct abstract partition / publisher is interned to a small int, so
    a key is a short tuple of ints (cheap to hash); equal abstractions get equal
    ints, so sorting the ints is the same symmetry reduction as sorting the
    abstractions. A successor reuses its parent's ints for every partition and
    publisher object it shares with the parent (transitions rebuild only what
    they change), so most keys cost a few identity tests.
    """

    def __init__(self, symmetry: bool) -> None:
        self.symmetry = symmetry
        self.interned: dict[Hashable, int] = {}
        self.partition_ids: dict[Partition, int] = {}
        self.publisher_ids: dict[tuple[Publisher, int], int] = {}

    def partition_id(self, part: Partition) -> int:
        got = self.partition_ids.get(part)
        if got is None:
            abstract = ("partition", _partition_abstract(part, self.symmetry))
            got = self.interned.setdefault(abstract, len(self.interned))
            self.partition_ids[part] = got
        return got

    def publisher_id(self, pub: Publisher, revision: int) -> int:
        probe = (pub, revision)
        got = self.publisher_ids.get(probe)
        if got is None:
            abstract = ("publisher", _publisher_abstract(pub, revision))
            got = self.interned.setdefault(abstract, len(self.interned))
            self.publisher_ids[probe] = got
        return got

    def ids(self, state: State) -> tuple[list[int], list[int]]:
        rev = state.record.revision
        return (
            [self.partition_id(p) for p in state.partitions],
            [self.publisher_id(p, rev) for p in state.publishers],
        )

    def key(
        self, new: State, parent: State, part_ids: list[int], pub_ids: list[int]
    ) -> tuple[Hashable, list[int], list[int]]:
        old_parts = parent.partitions
        parts = new.partitions
        pids = [
            part_ids[i] if parts[i] is old_parts[i] else self.partition_id(parts[i])
            for i in range(len(parts))
        ]
        rec = new.record
        pubs = new.publishers
        if rec is parent.record:
            old_pubs = parent.publishers
            qids = [
                pub_ids[k] if pubs[k] is old_pubs[k] else self.publisher_id(pubs[k], rec.revision)
                for k in range(len(pubs))
            ]
        else:
            qids = [self.publisher_id(p, rec.revision) for p in pubs]
        if self.symmetry:
            key = (
                new.epoch,
                rec.epoch,
                rec.cut,
                new.history,
                tuple(sorted(pids)),
                tuple(sorted(qids)),
            )
        else:
            key = (new.epoch, rec.epoch, rec.cut, new.history, tuple(pids), tuple(qids))
        return key, pids, qids


@dataclass(frozen=True, slots=True)
class Step:
    """One step of a counterexample: the action taken and the state after it."""

    index: int
    action: Action | None
    state: State

    @property
    def text(self) -> str:
        """What happened, in domain words."""
        return "initial state" if self.action is None else self.action.describe()

    def summary(self) -> list[str]:
        """The record, the checkpoints and the moving processes after this step."""
        return summarize(self.state)


@dataclass(frozen=True, slots=True)
class Violation:
    """The invariant a counterexample breaks (the first in INVARIANTS order) and any others."""

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
    representatives: list[State] = field(default_factory=list)
    edges: array[int] | None = None
    #: Why an ``incomplete`` exploration stopped: ``max_states`` or ``max_memory``.
    stopped_by: str | None = None
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
            self._keys = [canonical_key(rep, self.symmetry) for rep in self.representatives]
        return self._keys

    @property
    def states_per_second(self) -> float:
        """Distinct states explored per second of wall time."""
        return self.states / self.seconds if self.seconds > 0 else float("inf")

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
        """``violated`` if any part is, else ``incomplete`` if any hit the cap, else ``holds``."""
        verdicts = {r.verdict for r in self.results}
        for v in (VIOLATED, INCOMPLETE):
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


def explore(
    config: ModelConfig,
    *,
    symmetry: bool = True,
    keep_graph: bool = True,
    max_states: int | None = None,
    invariants: Sequence[Invariant] = INVARIANTS,
    max_memory: int | None = None,
    progress: Callable[[ExploreProgress], None] | None = None,
    progress_every: float = 2.0,
) -> ExploreResult:
    """Explore every state reachable within ``config``'s bounds, breadth first.

    Stops at the first state breaking one of ``invariants`` (verdict
    ``violated``, with a shortest counterexample), or when a budget runs out
    (verdict ``incomplete``, ``stopped_by`` saying which): ``max_states``
    distinct states, or ``max_memory`` bytes in use by the process (looked at
    every 1,024 new states, so it is overshot by at most that many states'
    worth, about 1 KB each). Otherwise the verdict is ``holds``: no reachable
    state breaks any of them. ``progress`` is called about every
    ``progress_every`` seconds with an :class:`ExploreProgress`.
    """
    started = time.perf_counter()
    start = initial(config)
    keyer = _Keyer(symmetry)
    ids0 = keyer.ids(start)
    key0 = keyer.key(start, start, *ids0)[0]
    seen: dict[Hashable, int] = {key0: 0}
    reps: list[State] = [start]
    rep_ids: list[tuple[list[int], list[int]]] = [ids0]
    parent: list[int] = [-1]
    via: list[Action | None] = [None]
    edges = array("l")
    transitions = 0
    depth = 0
    checks = [inv.check for inv in invariants]
    found = _violated(start, invariants)
    frontier = [0] if found is None else []
    capped = False
    stopped_by: str | None = None
    hit = 0
    next_check = _CHECK_EVERY
    next_report = started + progress_every
    while frontier and found is None and not capped:
        nxt: list[int] = []
        for sid in frontier:
            state = reps[sid]
            part_ids, pub_ids = rep_ids[sid]
            for action, new in successors(state):
                transitions += 1
                k, pids, qids = keyer.key(new, state, part_ids, pub_ids)
                tid = seen.get(k)
                if tid is None:
                    tid = len(reps)
                    seen[k] = tid
                    reps.append(new)
                    rep_ids.append((pids, qids))
                    parent.append(sid)
                    via.append(action)
                    nxt.append(tid)
                    for check in checks:
                        if check(new) is not None:
                            found = _violated(new, invariants)
                            hit = tid
                            break
                    if keep_graph:
                        edges.append(sid)
                        edges.append(tid)
                    if found is not None:
                        break
                    if max_states is not None and len(reps) >= max_states:
                        capped, stopped_by = True, "max_states"
                        break
                    if len(reps) >= next_check:
                        next_check += _CHECK_EVERY
                        memory = memory_in_use() if max_memory or progress else 0
                        if max_memory is not None and memory > max_memory:
                            capped, stopped_by = True, "max_memory"
                            break
                        now = time.perf_counter()
                        if progress is not None and now >= next_report:
                            next_report = now + progress_every
                            progress(
                                ExploreProgress(
                                    config.part,
                                    len(reps),
                                    transitions,
                                    depth + 1,
                                    now - started,
                                    memory,
                                )
                            )
                elif keep_graph:
                    edges.append(sid)
                    edges.append(tid)
            if found is not None or capped:
                break
        if nxt:
            depth += 1
        frontier = nxt
    seconds = time.perf_counter() - started
    result = ExploreResult(
        part=config.part,
        config=config,
        states=len(reps),
        transitions=transitions,
        depth=depth,
        seconds=seconds,
        verdict=HOLDS,
        symmetry=symmetry,
        representatives=reps if keep_graph else [],
        edges=edges if keep_graph else None,
    )
    if found is not None:
        result.verdict = VIOLATED
        result.violation = found
        path = []
        node = hit
        while node >= 0:
            path.append(node)
            node = parent[node]
        path.reverse()
        result.counterexample = [Step(n, via[i], reps[i]) for n, i in enumerate(path)]
        result.depth = len(path) - 1
    elif capped:
        result.verdict = INCOMPLETE
        result.stopped_by = stopped_by
    return result


def explore_parts(
    configs: Sequence[ModelConfig],
    *,
    symmetry: bool = True,
    keep_graph: bool = True,
    max_states: int | None = None,
    invariants: Sequence[Invariant] = INVARIANTS,
    max_memory: int | None = None,
    progress: Callable[[ExploreProgress], None] | None = None,
    progress_every: float = 2.0,
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


# ---------------------------------------------------------------------------
# Rendering


def summarize(state: State) -> list[str]:
    """Lines describing the durable state and the busy processes, in domain words."""
    ctx = state.context
    lines = []
    if ctx.has_publishers:
        rec = state.record
        op = f", op {rec.op_id}" if rec.op_id else ""
        lines.append(f"record: epoch {rec.epoch}, {rec.cut}, revision {rec.revision}{op}")
    cps = []
    for i, part in enumerate(state.partitions):
        name = ctx.partition_names[i]
        for e0, cp in enumerate(part.checkpoints[: state.epoch]):
            if cp.epoch == 0:
                cps.append(f"{name}@{e0 + 1} none")
                continue
            flags = []
            if not cp.final:
                flags.append("provisional")
            if cp.scope != ctx.config.scope:
                flags.append(f"scope {cp.scope}")
            if cp.epoch != e0 + 1:
                flags.append(f"stamped epoch {cp.epoch}")
            extra = f" [{', '.join(flags)}]" if flags else ""
            cps.append(f"{name}@{e0 + 1} {cp.cut} (gen {part.generations[e0]}){extra}")
    lines.append(f"membership epoch {state.epoch}; checkpoints: {'; '.join(cps)}")
    lines.append(truth_line(state))
    busy = []
    for k, pub in enumerate(state.publishers):
        name = ctx.publisher_names[k]
        if pub.phase:
            desc = PUBLISHER_PHASES[pub.phase]
            if pub.proposal != NOTHING:
                desc += f" (epoch {pub.mem_epoch}, {pub.proposal})"
            busy.append(f"{name} {desc}")
        elif pub.outcome:
            reason = f" ({pub.reason})" if pub.reason else ""
            busy.append(f"{name} reported {pub.outcome}{reason}")
        if pub.orphan_epoch:
            busy.append(f"{name}'s write (epoch {pub.orphan_epoch}, {pub.orphan_cut}) in flight")
    for i, part in enumerate(state.partitions):
        for j, r in enumerate(part.readers):
            if r.phase:
                busy.append(
                    f"{ctx.reader_names[i][j]} {READER_PHASES[r.phase]} "
                    f"(epoch {r.epoch}, holds claim {r.claim})"
                )
    if busy:
        lines.append("processes: " + "; ".join(busy))
    return lines


def truth_line(state: State) -> str:
    """The ground truth of the current epoch: each event, its position and its flags."""
    words = []
    for i in range(len(state.partitions)):
        for ev in state.events(i, state.epoch):
            if ev.final and ev.durable:
                flags = "settled"
            else:
                flags = ("final" if ev.final else "not final") + (
                    ", outcome durable" if ev.durable else ", no outcome"
                )
            words.append(f"{ev.name}@{_coord(ev.half)} {flags}")
    return f"ground truth (epoch {state.epoch}): {'; '.join(words) or 'no events'}"


def _coord(half: int) -> str:
    return str(half // 2) if half % 2 == 0 else f"{half / 2:g}"


def render_counterexample(result: ExploreResult) -> str:
    """The shortest path to the violation, step by step, then the invariant it breaks."""
    if result.counterexample is None or result.violation is None:
        return ""
    v = result.violation
    out = [
        f"Counterexample in part '{result.part}' ({len(result.counterexample) - 1} steps):",
    ]
    last_truth = ""
    for step in result.counterexample:
        out.append(f"{step.index:3d}. {step.text}")
        for line in step.summary():
            if line.startswith("ground truth"):
                # The ground truth is shown when it changes, not after every step.
                if line == last_truth:
                    continue
                last_truth = line
            out.append(f"       {line}")
    out.append(f"Invariant broken: {v.invariant} — {v.doc}")
    out.append(f"  {v.message}")
    if v.also:
        out.append(f"  (the same state also breaks: {', '.join(v.also)})")
    return "\n".join(out)


def _dot_quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def counterexample_dot(result: ExploreResult) -> str:
    """The counterexample path as a Graphviz DOT chain (states boxed, actions on edges)."""
    steps = result.counterexample or []
    lines = ["digraph counterexample {", "  rankdir=TB;", "  node [shape=box, fontsize=10];"]
    for step in steps:
        label = "\n".join(step.summary())
        attrs = ", color=red" if step is steps[-1] else ""
        lines.append(f"  s{step.index} [label={_dot_quote(label)}{attrs}];")
    for prev, step in itertools.pairwise(steps):
        lines.append(f"  s{prev.index} -> s{step.index} [label={_dot_quote(step.text)}];")
    if result.violation is not None:
        v = result.violation
        lines.append(
            "  violation [shape=note, color=red, "
            f"label={_dot_quote(v.invariant + ': ' + v.message)}];"
        )
        if steps:
            lines.append(f"  s{steps[-1].index} -> violation [style=dashed];")
    lines.append("}")
    return "\n".join(lines) + "\n"


def graphs_dot(results: Sequence[ExploreResult]) -> str:
    """The bounded reachable graphs as one DOT digraph, one cluster per part.

    Nodes are labelled with the record and the membership epoch, edges with the
    acting process. Needs the graphs kept (``keep_graph=True``).
    """
    lines = ["digraph reachable {", "  node [shape=box, fontsize=9];"]
    for c, result in enumerate(results):
        if result.graph is None:
            raise ValueError("the exploration did not keep its graph; explore with keep_graph=True")
        lines.append(f"  subgraph cluster_{c} {{")
        lines.append(f"    label={_dot_quote(result.part)};")
        for n, state in enumerate(result.representatives):
            rec = state.record
            label = (
                f"#{n}\nrecord e{rec.epoch} {rec.cut} r{rec.revision}\nmembership e{state.epoch}"
            )
            lines.append(f"    c{c}n{n} [label={_dot_quote(label)}];")
        index = {k: n for n, k in enumerate(result.keys)}
        for n, state in enumerate(result.representatives):
            for action, new in successors(state):
                target = index.get(canonical_key(new, result.symmetry))
                if target is not None:
                    lines.append(
                        f"    c{c}n{n} -> c{c}n{target} [label={_dot_quote(action.actor)}];"
                    )
        lines.append("  }")
    lines.append("}")
    return "\n".join(lines) + "\n"
