"""Frontier throughput: incremental vs naive re-merge, and durable publishes on SQLite.

Run: ``python benchmarks/frontier.py [--partitions 100000] [--updates 500000] [--repeat 3]``.

1. Checkpoint updates per second at N partitions with
   :class:`~fencepost.impl.frontier.IncrementalFrontier`: each update is
   ``update(checkpoint)`` followed by ``frontier()`` (the answer is read after
   every change). Target: >= 300,000 updates/s at N = 100,000. The best of
   ``--repeat`` runs is reported (with the median): on a shared machine the
   other runs measure the neighbours.
2. The same with a naive ``merge`` of all N checkpoints per update, measured
   on far fewer iterations (it is O(N) per update).
3. Durable publishes per second: a Publisher attempt (3 reads and one
   conditional write, fsynced: ``synchronous=FULL``) after every partition's
   checkpoint moved, on one SQLite file. Target: >= 500 publishes/s. The rate
   of whole cycles (4 fenced checkpoint writes + 1 publish) is printed too.

The checkpoints applied are built before timing starts and frozen out of the
cyclic garbage collector's view (``gc.freeze``): the figure measures the
frontier, not the construction or GC traversal of the benchmark's own million
input values.
"""

from __future__ import annotations

import argparse
import gc
import random
import tempfile
import time
from pathlib import Path

from fencepost.impl.cuts import Cut
from fencepost.impl.frontier import IncrementalFrontier
from fencepost.impl.merge import merge
from fencepost.impl.orders import IntegerOrder
from fencepost.impl.publisher import Outcome, Publisher
from fencepost.impl.records import Checkpoint, Membership
from fencepost.impl.sqlite import SQLiteStore

ORDER = IntegerOrder("offsets", successor_exact=True)


def membership(n: int) -> Membership:
    return Membership(1, "bench", {f"p{i:06d}": "offsets" for i in range(n)}, {"offsets": ORDER})


def advancing_updates(n: int, count: int, seed: int) -> tuple[list[Checkpoint], list[Checkpoint]]:
    """An initial checkpoint per partition, then ``count`` random advances."""
    rng = random.Random(seed)
    positions = [rng.randint(0, 1000) for _ in range(n)]
    initial = [
        Checkpoint(f"p{i:06d}", Cut.through(positions[i]), None, 1, "bench", 1) for i in range(n)
    ]
    updates = []
    for _ in range(count):
        i = rng.randrange(n)
        positions[i] += rng.randint(1, 50)
        cut = Cut.through(positions[i]) if rng.random() < 0.5 else Cut.before(positions[i])
        updates.append(Checkpoint(f"p{i:06d}", cut, None, 2, "bench", 1))
    return initial, updates


def bench_incremental(n: int, count: int) -> float:
    members = membership(n)
    initial, updates = advancing_updates(n, count, seed=1)
    frontier = IncrementalFrontier(members, initial)
    update, read = frontier.update, frontier.frontier
    # The million prebuilt input checkpoints are the benchmark's, not the frontier's:
    # keep the cyclic GC from re-traversing them during the timed loop.
    gc.collect()
    gc.freeze()
    start = time.perf_counter()
    for checkpoint in updates:
        update(checkpoint)
        read()
    elapsed = time.perf_counter() - start
    gc.unfreeze()
    # Spot-check the final answer against the plain merge.
    latest = {c.partition: c for c in initial}
    latest.update((c.partition, c) for c in updates)
    assert read() == merge(members, latest.values()), "incremental and merge disagree"
    return count / elapsed


def bench_naive(n: int, count: int) -> float:
    members = membership(n)
    initial, updates = advancing_updates(n, count, seed=1)
    latest = {c.partition: c for c in initial}
    gc.collect()
    gc.freeze()
    start = time.perf_counter()
    for checkpoint in updates:
        latest[checkpoint.partition] = checkpoint
        merge(members, latest.values())
    elapsed = time.perf_counter() - start
    gc.unfreeze()
    return count / elapsed


def bench_publishes(count: int, partitions: int = 4) -> tuple[float, float, int]:
    """(publishes/s timing only the attempts, full cycles/s including checkpoint writes, n)."""
    with tempfile.TemporaryDirectory() as folder:
        store = SQLiteStore(Path(folder) / "bench.db")
        members = Membership(
            1, "bench", {f"p{i}": "offsets" for i in range(partitions)}, {"offsets": ORDER}
        )
        store.create_stream("s", members)
        generations: dict[str, int | None] = dict.fromkeys(members.partitions)
        publisher = Publisher(store, "s", "bench")
        published = 0
        in_attempts = 0.0
        start = time.perf_counter()
        for step in range(1, count + 1):
            # Every partition moves to `step` (fenced, fsynced), then one durable publish.
            for p in members.partitions:
                expected = generations[p]
                checkpoint = Checkpoint(p, Cut.through(step), None, (expected or 0) + 1, "bench", 1)
                store.write_checkpoint("s", expected, checkpoint)
                generations[p] = checkpoint.generation
            before = time.perf_counter()
            outcome = publisher.attempt().outcome
            in_attempts += time.perf_counter() - before
            if outcome is Outcome.PUBLISHED:
                published += 1
        elapsed = time.perf_counter() - start
        store.close()
    return published / in_attempts, published / elapsed, published


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--partitions", type=int, default=100_000)
    parser.add_argument("--updates", type=int, default=500_000)
    parser.add_argument("--naive-updates", type=int, default=20)
    parser.add_argument("--publishes", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3, help="incremental runs (best is shown)")
    args = parser.parse_args()

    runs = sorted(bench_incremental(args.partitions, args.updates) for _ in range(args.repeat))
    incremental = runs[-1]
    print(
        f"incremental frontier: {incremental:,.0f} checkpoint updates/s best of {args.repeat} "
        f"(median {runs[len(runs) // 2]:,.0f}; N={args.partitions:,}, {args.updates:,} updates "
        "per run, frontier read after each)"
    )
    naive = bench_naive(args.partitions, args.naive_updates)
    print(
        f"naive re-merge:       {naive:,.1f} checkpoint updates/s "
        f"(N={args.partitions:,}, {args.naive_updates} updates)"
    )
    print(f"speed-up:             {incremental / naive:,.0f}x")
    rate, cycles, published = bench_publishes(args.publishes)
    print(
        f"durable publishes:    {rate:,.0f} publishes/s on SQLite synchronous=FULL "
        f"({published} published; each attempt = 3 reads + 1 fsynced conditional write)"
    )
    print(f"full cycles:          {cycles:,.0f}/s (4 fenced checkpoint writes + 1 publish each)")


if __name__ == "__main__":
    main()
