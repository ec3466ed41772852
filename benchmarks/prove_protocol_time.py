"""How long `fencepost prove --protocol` takes, beside a baseline run in the same process.

Usage: python benchmarks/prove_protocol_time.py [ROUNDS]   (default 3 rounds)

The target is the whole protocol proof (every obligation of the publication, ingest and
composed protocols) in at most 2 minutes on 2 cores. The machine is shared and noisy,
so each round also times the cut-algebra theorems (`fencepost prove`) as the baseline
and prints the ratio; then the five slowest obligations of the last round.
"""

from __future__ import annotations

import sys
import time

from fencepost.properties.proofs import prove_all as prove_theorems
from fencepost.properties.protocol_proof import PROVED, Outcome, prove_all


def main(rounds: int) -> None:
    outcomes: list[Outcome] = []
    for i in range(rounds):
        started = time.perf_counter()
        prove_theorems()
        baseline = time.perf_counter() - started
        started = time.perf_counter()
        outcomes = prove_all()
        total = time.perf_counter() - started
        bad = [o.obligation.name for o in outcomes if o.status != PROVED]
        print(
            f"round {i + 1}: {len(outcomes)} obligations in {total:.2f} s "
            f"(cut-algebra theorems: {baseline:.2f} s, ratio {total / baseline:.2f}); "
            f"not proved: {bad}"
        )
    print("slowest:")
    for o in sorted(outcomes, key=lambda o: o.seconds, reverse=True)[:5]:
        print(f"  {o.seconds * 1000:8.1f} ms  {o.obligation.name}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 3)
