"""Swarm testing against no swarm: how many known bugs the random schedules alone catch.

For every catalog mutant (``fencepost sut --mutant NAME``, run in-process) and every
deliberate bug of the Python example SUT (``examples/python-sut``, a subprocess,
processes reused), runs only the ``random schedules`` phase of ``fencepost conform``
at levels ``checkpointer,publisher`` with the same budget twice: each run switching a
random subset of fault and situation kinds on (swarm, :class:`ConformOptions.swarm`)
and every kind on in every run. Prints the bugs each setting caught and the totals;
the harness keeps whichever catches more (docs/performance.md, "Swarm testing").

The exhaustive phases are left out on purpose: they catch every bug by design, so
they would hide any difference between the two settings.

Usage: python benchmarks/swarm.py [--schedules N] [--seeds S,...] [--no-example]
Cost: about (mutants + bugs) x 2 x seeds conform runs of N random schedules each.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

from fencepost.harness.conformance import ConformOptions, conform
from fencepost.harness.transport import SubprocessSut, SutFactory
from fencepost.mutants import CATALOG
from fencepost.sut.adapter import InProcessSut

EXAMPLE = (
    Path(__file__).resolve().parent.parent / "examples" / "python-sut" / "fencepost_example.py"
)


def _example_bugs() -> list[str]:
    out = subprocess.run(
        [sys.executable, str(EXAMPLE), "--list-bugs"], capture_output=True, text=True, check=True
    ).stdout
    return [
        line.split()[0] for line in out.splitlines() if line.strip() and not line.startswith(" ")
    ]


def _caught(factory: SutFactory, swarm: bool, schedules: int, seed: int) -> bool:
    options = ConformOptions(
        levels=frozenset({"checkpointer", "publisher"}),
        schedules=schedules,
        seed=seed,
        only=frozenset({"random schedules"}),
        swarm=swarm,
        shrink_runs=0,
        shrink_seconds=0.0,
    )
    try:
        return not conform(factory, options).ok
    finally:
        factory.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--schedules", type=int, default=20)
    parser.add_argument("--seeds", default="0")
    parser.add_argument("--no-example", action="store_true")
    args = parser.parse_args()
    seeds = [int(s) for s in args.seeds.split(",")]
    subjects: list[tuple[str, object]] = [(f"mutant {n}", n) for n in sorted(CATALOG)]
    if not args.no_example:
        subjects += [(f"example {b}", b) for b in _example_bugs()]
    totals = {True: 0, False: 0}
    cases = 0
    started = time.perf_counter()
    for label, what in subjects:
        for seed in seeds:
            cases += 1
            row = []
            for swarm in (True, False):
                if label.startswith("mutant"):
                    factory: SutFactory = InProcessSut(CATALOG[str(what)])
                else:
                    factory = SubprocessSut([sys.executable, str(EXAMPLE), "--bug", str(what)])
                hit = _caught(factory, swarm, args.schedules, seed)
                totals[swarm] += hit
                row.append("caught" if hit else "missed")
            print(f"{label:<40} seed {seed}: swarm {row[0]:<7} all-on {row[1]}", flush=True)
    elapsed = time.perf_counter() - started
    print(
        f"random schedules only, {args.schedules} per run, levels checkpointer,publisher, "
        f"seeds {args.seeds}: swarm caught {totals[True]}/{cases}, every kind on caught "
        f"{totals[False]}/{cases} ({elapsed:.0f} s, load average {os.getloadavg()[0]:.1f})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
