"""Exploration speed: distinct states per second on the default bounds, per part.

Run: ``/work/venv/bin/python benchmarks/explore.py [--repeat N] [--graph]``.
Prints states, transitions and distinct states per second for each part and in
total (best of ``--repeat`` runs, each from a cold start, on one core). The
target is at least 20,000 distinct states per second over the whole default exploration. Without
``--graph`` the explorer skips building the networkx graph (the fast path);
with it, the figure includes building the graph as the CLI does.
"""

from __future__ import annotations

import argparse
import time

from fencepost.model.config import DEFAULTS
from fencepost.model.explorer import explore
from fencepost.model.state import context_for

TARGET = 20_000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="runs per part; the best counts")
    parser.add_argument("--graph", action="store_true", help="also build the networkx graph")
    args = parser.parse_args()
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    total_states = 0
    total_seconds = 0.0
    print(f"{'part':<12} {'states':>9} {'transitions':>12} {'seconds':>8} {'states/s':>10}")
    for part, cfg in DEFAULTS.items():
        best = float("inf")
        states = transitions = 0
        for _ in range(args.repeat):
            # A cold start every run: the context's memo tables are part of the cost.
            context_for.cache_clear()
            started = time.perf_counter()
            result = explore(cfg, keep_graph=args.graph)
            best = min(best, time.perf_counter() - started)
            states, transitions = result.states, result.transitions
        total_states += states
        total_seconds += best
        print(f"{part:<12} {states:>9,} {transitions:>12,} {best:>8.2f} {states / best:>10,.0f}")
    rate = total_states / total_seconds
    print(f"{'total':<12} {total_states:>9,} {'':>12} {total_seconds:>8.2f} {rate:>10,.0f}")
    verdict = "meets" if rate >= TARGET else "misses"
    print(f"{verdict} the target of {TARGET:,} distinct states/s")


if __name__ == "__main__":
    main()
