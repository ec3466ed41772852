"""Conformance harness throughput: protocol messages per second.

Measures, against fencepost's own SUT both as a subprocess (``fencepost sut``)
and in-process (same messages, threads instead of processes):

1. **algebra stream**: one session answering compare/merge requests back to back;
2. **schedule stream**: one long run (two publishers, two readers, 2 x 150 events)
   with every check applied after every step: the harness's steady state;
3. **default budget**: ``fencepost conform``'s default search end to end, twice in
   the same run: with processes reused between runs (the SUT declares ``reset``)
   and, as the baseline, with fresh processes for every run (start-up included);
   the ratio of the two wall times is printed.

Usage: python benchmarks/conform.py [--quick] [--sut "fencepost sut"]
Target: >= 5,000 messages/s in steady state; the default budget within 15 s on two
cores with reuse.
"""

from __future__ import annotations

import argparse
import os
import random
import shlex
import shutil
import sys
import time

from fencepost.harness.algebra import random_cases, run_algebra
from fencepost.harness.conformance import ConformOptions, conform
from fencepost.harness.randomized import Biases, run_chosen
from fencepost.harness.schedule import Action
from fencepost.harness.transport import SubprocessSut, SutFactory
from fencepost.harness.world import (
    ClaimStyle,
    EpochSetup,
    EventSpec,
    PartitionSetup,
    WorldSetup,
)
from fencepost.judge.values import Order
from fencepost.sut.adapter import InProcessSut


def _long_world(events: int) -> WorldSetup:
    def part(name: str, style: ClaimStyle) -> PartitionSetup:
        positions = sorted(random.Random(name).randint(1, events) for _ in range(events))
        return PartitionSetup(
            name,
            tuple(EventSpec(f"{name}{i}", at) for i, at in enumerate(positions)),
            final=0,
            claims=style,
            end=events + 1,
        )

    return WorldSetup(
        order=Order.integer("offsets", True),
        epochs=(EpochSetup(1, (part("A", ClaimStyle.BEFORE), part("B", ClaimStyle.THROUGH))),),
        publishers=("w1", "w2"),
        readers=("r1", "r2"),
        page_size=3,
    )


def algebra_stream(factory: SutFactory, cases: int) -> tuple[int, float]:
    batch = random_cases(7, cases)
    started = time.perf_counter()
    result = run_algebra(factory, batch)
    elapsed = time.perf_counter() - started
    if not result.ok:
        raise SystemExit(f"algebra stream failed: {result.violations[0]}")
    return result.messages, elapsed


def schedule_stream(factory: SutFactory, steps: int) -> tuple[int, float]:
    setup = _long_world(150)
    rng = random.Random(11)
    biases = Biases.draw(rng, setup)

    def choose(possible: list[Action]) -> Action:
        return rng.choices(possible, weights=[biases.weight(a) for a in possible])[0]

    started = time.perf_counter()
    result = run_chosen(factory, setup, choose, steps, timeout=10.0)
    elapsed = time.perf_counter() - started
    if not result.ok:
        raise SystemExit(f"schedule stream failed: {result.first}")
    return result.messages, elapsed


def default_budget(factory: SutFactory, reuse: bool) -> tuple[int, int, float]:
    started = time.perf_counter()
    report = conform(factory, ConformOptions(reuse=reuse))
    elapsed = time.perf_counter() - started
    if not report.ok:
        raise SystemExit(f"default budget failed: {report.failures[0].violation}")
    return report.messages, report.runs, elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="smaller streams, no default budget")
    parser.add_argument("--sut", default=None, help="SUT command (default: fencepost sut)")
    args = parser.parse_args()
    command = shlex.split(args.sut) if args.sut else [_fencepost(), "sut"]
    cases, steps = (1000, 800) if args.quick else (5000, 4000)
    rows: list[tuple[str, str, int, float]] = []
    for label, make in (
        ("subprocess", lambda: SubprocessSut(command, prefetch=4)),
        ("in-process", lambda: InProcessSut()),
    ):
        factory = make()
        try:
            messages, elapsed = algebra_stream(factory, cases)
            rows.append((label, f"algebra stream ({cases} cases, 1 session)", messages, elapsed))
            messages, elapsed = schedule_stream(factory, steps)
            rows.append((label, f"schedule stream ({steps} steps, 4 workers)", messages, elapsed))
            if not args.quick:
                for reuse, how in ((True, "processes reused"), (False, "fresh processes")):
                    messages, runs, elapsed = default_budget(factory, reuse)
                    rows.append((label, f"default budget ({runs} runs, {how})", messages, elapsed))
        finally:
            factory.close()
    load = os.getloadavg()[0]
    print(f"conformance harness throughput (cpus: {os.cpu_count()}, load average {load:.2f})")
    print(f"{'SUT':<11} {'workload':<44} {'messages':>9} {'seconds':>8} {'msg/s':>9}")
    for label, workload, messages, elapsed in rows:
        rate = messages / elapsed if elapsed > 0 else 0.0
        print(f"{label:<11} {workload:<44} {messages:>9} {elapsed:>8.2f} {rate:>9,.0f}")
    budget = {
        workload.split(", ")[1].rstrip(")"): elapsed
        for label, workload, _, elapsed in rows
        if label == "subprocess" and workload.startswith("default budget")
    }
    if len(budget) == 2:
        reused, fresh = budget["processes reused"], budget["fresh processes"]
        print(
            f"default budget against a subprocess SUT: {reused:.1f} s with reuse, {fresh:.1f} s "
            f"with fresh processes: {fresh / reused:.1f}x faster (target: <= 15 s with reuse)"
        )
    return 0


def _fencepost() -> str:
    found = shutil.which("fencepost") or os.path.join(os.path.dirname(sys.executable), "fencepost")
    return found


if __name__ == "__main__":
    sys.exit(main())
