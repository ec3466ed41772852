"""Frontier throughput: IncrementalFrontier against a plain heap, and against re-merging.

Run: ``python benchmarks/frontier.py [--partitions 100000] [--updates 500000] [--rounds 5]``.

1. Checkpoint updates per second at N partitions with
   :class:`~fencepost.impl.frontier.IncrementalFrontier`: each update is
   ``update(checkpoint)`` followed by ``frontier()`` (the answer is read after
   every change), against the baseline in the same run: a plain ``heapq`` with
   lazy deletion (:class:`PlainHeap`: push the new key on every update, pop stale
   tops on every read) behind the same two calls, given the same checkpoints and
   computing the same keys, with none of the frontier's checks (membership,
   epoch, scope, finality, order). Both are timed in this process's CPU seconds
   (``time.process_time``), so other processes on a shared machine count less;
   the two alternate in rounds and the ratio is taken round by round. Target: >= 1.5x the
   plain heap at N = 100,000 (over 1M updates/s on a quiet machine).
2. The same with a naive ``merge`` of all N checkpoints per update, on far fewer
   iterations (it is O(N) per update), for scale.

Durable publishes and checkpoint writes, with their raw-driver baselines, are in
``benchmarks/scale.py``.

The checkpoints applied are built before timing starts and frozen out of the
cyclic garbage collector's view (``gc.freeze``): the figures measure the
frontier and the heap, not the construction or GC traversal of the benchmark's
own million input values. What each subject allocates stays in the collector's
view, as in a real program (the plain heap allocates one tuple per update, the
frontier none on its usual path).
"""

from __future__ import annotations

import argparse
import gc
import heapq
import random
import statistics
import time
from collections.abc import Callable
from typing import Protocol

from baseline import ratio_line, rounds

from fencepost.impl.cuts import Cut, Endpoint
from fencepost.impl.frontier import IncrementalFrontier
from fencepost.impl.merge import Withheld, merge
from fencepost.impl.orders import IntegerOrder
from fencepost.impl.records import Checkpoint, Membership

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


class PlainHeap:
    """The baseline: a plain ``heapq`` with lazy deletion, answering the same question.

    ``update`` pushes the checkpoint's key (the same order as the frontier's:
    ``through x`` normalised to ``x+1``, ties to the smaller coordinate) and
    remembers it as the partition's current entry; ``frontier`` pops stale tops
    until the top is current. No membership, epoch, scope, finality or order
    checks: the plain algorithm, with the same interface and call pattern.
    """

    def __init__(self, initial: list[Checkpoint]) -> None:
        self.current: dict[str, tuple[int, int, int, Checkpoint]] = {}
        self.heap: list[tuple[int, int, int, Checkpoint]] = []
        self.seq = 0
        for checkpoint in initial:
            self.update(checkpoint)

    def update(self, checkpoint: Checkpoint) -> None:
        cut = checkpoint.cut
        at = cut.at
        assert isinstance(at, int)
        self.seq += 1
        entry = (at + 1 if cut.endpoint is THROUGH else at, at, self.seq, checkpoint)
        self.current[checkpoint.partition] = entry
        heapq.heappush(self.heap, entry)

    def frontier(self) -> Cut:
        heap, current = self.heap, self.current
        top = heap[0]
        while current[top[3].partition] is not top:
            heapq.heappop(heap)
            top = heap[0]
        return top[3].cut


THROUGH = Endpoint.THROUGH


class Frontier(Protocol):
    def update(self, checkpoint: Checkpoint) -> None: ...

    def frontier(self) -> Cut | Withheld: ...


def updates_per_cpu_second(make: Callable[[], Frontier], updates: list[Checkpoint]) -> float:
    """``update`` then ``frontier`` for every checkpoint; updates per second of this
    process's CPU time (another process's load on the shared machine is not counted)."""
    subject = make()
    update, read = subject.update, subject.frontier
    start = time.process_time()
    for checkpoint in updates:
        update(checkpoint)
        read()
    elapsed = time.process_time() - start
    return len(updates) / elapsed


def compare(n: int, count: int, repeat: int) -> tuple[list[float], list[float]]:
    members = membership(n)
    initial, updates = advancing_updates(n, count, seed=1)
    latest = {c.partition: c for c in initial}
    latest.update((c.partition, c) for c in updates)
    expected = merge(members, latest.values())
    for make in (lambda: IncrementalFrontier(members, initial), lambda: PlainHeap(initial)):
        subject = make()
        for checkpoint in updates:
            subject.update(checkpoint)
        assert subject.frontier() == expected, "a subject disagrees with merge"
    # The prebuilt input checkpoints are the benchmark's, not the subjects': keep the
    # cyclic GC from re-traversing them during the timed loops. What each subject
    # allocates itself stays in the GC's view, as in a real program.
    gc.collect()
    gc.freeze()
    try:
        return rounds(
            lambda: updates_per_cpu_second(lambda: IncrementalFrontier(members, initial), updates),
            lambda: updates_per_cpu_second(lambda: PlainHeap(initial), updates),
            repeat,
        )
    finally:
        gc.unfreeze()


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--partitions", type=int, default=100_000)
    parser.add_argument("--updates", type=int, default=500_000)
    parser.add_argument("--naive-updates", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=5, help="alternating rounds of each")
    args = parser.parse_args()

    ours, theirs = compare(args.partitions, args.updates, args.rounds)
    print(
        ratio_line(
            f"incremental frontier (N={args.partitions:,}, {args.updates:,} updates per round, "
            "frontier read after each, per CPU second)",
            ours,
            theirs,
            "updates/s",
            "target >= 1.5x a plain heapq with lazy deletion",
        )
    )
    naive = bench_naive(args.partitions, args.naive_updates)
    print(
        f"naive re-merge: {naive:,.1f} updates/s (N={args.partitions:,}, "
        f"{args.naive_updates} updates); the incremental frontier is "
        f"{statistics.median(ours) / naive:,.0f}x faster"
    )


if __name__ == "__main__":
    main()
