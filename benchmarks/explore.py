"""Exploration speed and memory per distinct state, beside a bare BFS over the same graph.

Run: ``python benchmarks/explore.py [--repeat N] [--tenfold] [--bounds]``.

For each part of the default bounds (ingest, publication, composed) it prints
the distinct states and transitions, then:

* **explorer**: distinct states per second of ``explore(config,
  keep_graph=False)`` from a cold start (the model's memo tables cleared: they
  are part of the cost), on one core;
* **baseline**: distinct states per second of a bare breadth-first search over
  the *same* reachable graph, pre-materialised before timing: for each state,
  the list of its transitions (duplicates and self-loops included, so the same
  number of transitions), each given as a fresh copy of the explorer's own key
  of the target (the same flat tuple of small ints the explorer hashes) and the
  target's number. The search probes a ``set`` with every key, adds the new
  ones and queues their numbers on a ``collections.deque``: exactly the hashing
  and queueing the explorer does, and nothing else (no successor computed, no
  key built, no invariant checked, no state built). The ratio explorer/baseline
  says how close the explorer comes to a search that is handed its graph;
  what is left is the cost of computing the transition relation;
* **bytes/state**: each part explored once more in a fresh process: its peak
  resident set (the kernel's high-water mark, ``VmHWM``: exact, not sampled)
  less the resident set just before the exploration started, per distinct
  state. Everything the exploration
  allocates counts: keys, parent pointers, the frontier, memo tables.

Speed figures are the median of ``--repeat`` rounds, explorer and baseline
alternating (the machine is shared; ratios move less than the figures).
The target is at least 50,000 distinct states per second over the whole
default exploration.

``--bounds`` explores each configuration of :data:`BOUNDS` (one bound raised
from a part's default) in a fresh process and prints its states, transitions per
state, states/s, bytes/state and peak resident set, with its states/s as a ratio
to its part's default explored in the same run: how the cost per state moves
as the bounds grow (the bare-BFS baseline above needs the whole graph in
memory, which these sizes would not fit on a small machine).

``--tenfold`` also explores :data:`TENFOLD` (the publication part with three
publishers instead of two: 990,789 states, 10.0 times the default's 99,111) in
a fresh process, prints its rate, peak resident set and bytes per state, and
exits 1 if the peak passes :data:`TENFOLD_BUDGET` (2 GiB).
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import time
from collections import deque

from baseline import rounds

from fencepost.explorer.search import explore, memory_in_use
from fencepost.model.config import DEFAULTS, ModelConfig, default_config
from fencepost.model.state import context_for

TARGET = 50_000

#: Ten times the default publication part's states: one more publisher (3 instead of 2).
TENFOLD = default_config("publication", publishers=3)
TENFOLD_STATES = 990_789
PUBLICATION_STATES = 99_111
#: The peak resident set the tenfold exploration must stay within.
TENFOLD_BUDGET = 2 << 30

#: Each bound raised alone from its part's default: (label, part, overrides). The first of
#: each part is its default, the reference of the ratio.
BOUNDS: tuple[tuple[str, str, dict[str, int]], ...] = (
    ("publication, default (2 partitions, 2 publishers)", "publication", {}),
    ("1 publisher", "publication", {"publishers": 1}),
    ("3 publishers", "publication", {"publishers": 3}),
    ("3 partitions", "publication", {"partitions": 3}),
    ("2 attempts", "publication", {"attempts": 2}),
    ("2 retries", "publication", {"retries": 2}),
    ("2 coordinates", "publication", {"coordinates": 2}),
    ("ingest, default (1 partition, 2 readers)", "ingest", {}),
    ("3 readers", "ingest", {"readers": 3}),
    ("3 events", "ingest", {"events_per_partition": 3}),
    ("composed, default", "composed", {}),
    ("3 passes", "composed", {"passes": 3}),
)


def bounds_config(name: str) -> ModelConfig:
    """The configuration :func:`memory_child` explores for ``name``: a part, ``tenfold``,
    or ``bounds:N`` (entry N of :data:`BOUNDS`)."""
    if name == "tenfold":
        return TENFOLD
    if name.startswith("bounds:"):
        _, part, overrides = BOUNDS[int(name.split(":")[1])]
        return default_config(part, **overrides)
    return DEFAULTS[name]


#: One state's transitions, pre-materialised: (a fresh copy of the target's key, its number).
Adjacency = list[list[tuple[tuple[int, ...], int]]]


def materialise(config: ModelConfig) -> tuple[Adjacency, tuple[int, ...], int]:
    """The reachable graph of ``config`` as the baseline walks it, its start key, and its
    transitions."""
    result = explore(config, keep_graph=True)
    keys = result.state_keys
    edges = result.edges
    assert keys is not None and edges is not None
    adjacency: Adjacency = [[] for _ in range(result.states)]
    for i in range(0, len(edges), 2):
        target = edges[i + 1]
        # A fresh tuple per transition, as the explorer builds one: equal, not identical.
        adjacency[edges[i]].append((tuple(list(keys[target])), target))
    return adjacency, keys[0], len(edges) // 2


def bare_bfs(adjacency: Adjacency, start: tuple[int, ...]) -> int:
    """Breadth-first search over ``adjacency`` from node 0: one set probe per transition,
    one insert and one queue append per new state. Returns the states found."""
    seen = {start}
    queue = deque([0])
    while queue:
        for key, target in adjacency[queue.popleft()]:
            if key in seen:
                continue
            seen.add(key)
            queue.append(target)
    return len(seen)


def explorer_rate(config: ModelConfig) -> float:
    context_for.cache_clear()  # a cold start: the memo tables are part of the cost
    started = time.perf_counter()
    result = explore(config, keep_graph=False)
    return result.states / (time.perf_counter() - started)


def memory_child(name: str) -> None:
    """Explore one configuration in this (fresh) process and print its figures as JSON."""
    config = bounds_config(name)
    before = memory_in_use()
    started = time.perf_counter()
    result = explore(config, keep_graph=False)
    seconds = time.perf_counter() - started
    peak = peak_memory()
    print(
        json.dumps(
            {
                "states": result.states,
                "transitions": result.transitions,
                "verdict": result.verdict,
                "seconds": seconds,
                "rss_before": before,
                "peak_rss": peak,
                "bytes_per_state": (peak - before) / result.states,
                "sampled_bytes_per_state": result.bytes_per_state,
            }
        )
    )


def peak_memory() -> int:
    """The peak resident set of this process, in bytes.

    ``VmHWM`` of ``/proc/self/status``: the high-water mark of this process's own
    address space. (``ru_maxrss`` would do elsewhere, but on Linux it keeps the
    parent's peak across fork and exec, so a child started by a big parent
    reports the parent's.)
    """
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024


def in_fresh_process(name: str) -> dict[str, float]:
    out = subprocess.run(
        [sys.executable, __file__, "--memory-child", name],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    figures: dict[str, float] = json.loads(out)
    return figures


def by_bounds() -> None:
    """Print the :data:`BOUNDS` table: each configuration explored in a fresh process."""
    print(
        f"{'configuration':<50} {'states':>10} {'per state':>9} {'states/s':>9}"
        f" {'vs default':>10} {'bytes/state':>11} {'peak RSS':>9}"
    )
    reference: dict[str, float] = {}
    for n, (label, part, _) in enumerate(BOUNDS):
        figures = in_fresh_process(f"bounds:{n}")
        rate = figures["states"] / figures["seconds"]
        reference.setdefault(part, rate)
        print(
            f"{label:<50} {figures['states']:>10,.0f}"
            f" {figures['transitions'] / figures['states']:>9.1f} {rate:>9,.0f}"
            f" {rate / reference[part]:>10.2f} {figures['bytes_per_state']:>11,.0f}"
            f" {figures['peak_rss'] / (1 << 20):>5,.0f} MiB"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="rounds per part (median counts)")
    parser.add_argument(
        "--tenfold", action="store_true", help="also explore the 10x configuration (~30 s)"
    )
    parser.add_argument(
        "--bounds",
        action="store_true",
        help="only explore each bound raised alone, in fresh processes (a few minutes)",
    )
    parser.add_argument("--memory-child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.memory_child:
        memory_child(args.memory_child)
        return
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    if args.bounds:
        by_bounds()
        return
    print(
        f"{'part':<12} {'states':>9} {'transitions':>12}  {'explorer':>10} {'baseline':>10}"
        f" {'ratio':>6}  {'bytes/state':>11}"
    )
    total_states = 0
    explorer_seconds = baseline_seconds = 0.0
    ratios: list[float] = []
    for part, config in DEFAULTS.items():
        adjacency, start, transitions = materialise(config)
        states = bare_bfs(adjacency, start)

        def baseline_rate(graph: Adjacency = adjacency, first: tuple[int, ...] = start) -> float:
            began = time.perf_counter()
            found = bare_bfs(graph, first)
            return found / (time.perf_counter() - began)

        def ours_rate(chosen: ModelConfig = config) -> float:
            return explorer_rate(chosen)

        ours, theirs = rounds(ours_rate, baseline_rate, args.repeat)
        del adjacency
        mine, bare = statistics.median(ours), statistics.median(theirs)
        memory = in_fresh_process(part)
        assert memory["states"] == states, (part, memory["states"], states)
        total_states += states
        explorer_seconds += states / mine
        baseline_seconds += states / bare
        ratios.append(mine / bare)
        print(
            f"{part:<12} {states:>9,} {transitions:>12,}  {mine:>10,.0f} {bare:>10,.0f}"
            f" {mine / bare:>6.3f}  {memory['bytes_per_state']:>11,.0f}"
        )
    mine = total_states / explorer_seconds
    bare = total_states / baseline_seconds
    print(
        f"total: explorer {mine:,.0f} states/s, baseline {bare:,.0f} states/s, "
        f"ratio {mine / bare:.3f} (parts {min(ratios):.3f}-{max(ratios):.3f})"
    )
    verdict = "meets" if mine >= TARGET else "misses"
    print(f"{verdict} the target of {TARGET:,} distinct states/s")
    if args.tenfold:
        big = in_fresh_process("tenfold")
        assert big["states"] == TENFOLD_STATES, big
        within = big["peak_rss"] <= TENFOLD_BUDGET
        print(
            f"tenfold (publication, 3 publishers): {big['states']:,.0f} states "
            f"({big['states'] / PUBLICATION_STATES:.1f}x the default's), "
            f"{big['transitions']:,.0f} transitions, "
            f"{big['states'] / big['seconds']:,.0f} states/s, "
            f"peak RSS {big['peak_rss'] / (1 << 20):,.0f} MiB "
            f"({big['bytes_per_state']:,.0f} bytes/state), "
            f"{'within' if within else 'OVER'} the {TENFOLD_BUDGET >> 30} GiB budget"
        )
        if not within:
            raise SystemExit(1)


if __name__ == "__main__":
    main()
