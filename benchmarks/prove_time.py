"""How long `fencepost prove` takes: total wall time and the slowest theorems.

Usage: python benchmarks/prove_time.py [ROUNDS]   (default 3 rounds)

The target is the whole registry well under 10 s on one core. Prints, per round, the
total, then the five slowest theorems of the last round.
"""

from __future__ import annotations

import sys
import time

from fencepost.properties.proofs import THEOREMS, prove_all


def main(rounds: int) -> None:
    results = []
    for i in range(rounds):
        started = time.perf_counter()
        results = prove_all()
        total = time.perf_counter() - started
        bad = [r.name for r in results if r.status is not THEOREMS[r.name].expected]
        print(f"round {i + 1}: {len(results)} theorems in {total:.2f} s, not as expected: {bad}")
    print("slowest:")
    for r in sorted(results, key=lambda r: r.seconds, reverse=True)[:5]:
        print(f"  {r.seconds:7.3f} s  {r.name}  ({r.status.value})")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 3)
