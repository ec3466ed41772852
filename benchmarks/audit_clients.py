"""The audit against Porcupine's algorithm by number of clients, on the same histories.

Run: ``python benchmarks/audit_clients.py [--ops 5000] [--clients 2 4 8 16 32 64]``.

One stream, ``--ops`` operations over N clients (:func:`fencepost.audit.synth.simulate`,
real linearization points), in two mixes: the size benchmark's (40% reads, 5% lost
responses, 1% failed) and the concurrency benchmark's (10% reads, half the responses
lost: many concurrent indefinite writes). Each history is checked in this process by

- the audit (:func:`fencepost.audit.run.audit_ops`), and
- Porcupine's search (``benchmarks/wgl.py``: its ``checkSingle`` transcribed to Python, a
  baseline and not a judge, first checked against the brute-force checker on
  ``--cross-check`` small histories), bounded by ``--max-steps``,

best of ``--repeat`` CPU times each, and the verdicts must agree. Both are Python on
the same interpreter, so the ratio is the algorithms', not the languages'. Porcupine
itself is Go; no Go toolchain is assumed (docs/performance.md, "audit", says how the
figures relate).
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
from collections.abc import Callable

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import wgl

from fencepost.audit import brute, synth
from fencepost.audit.ops import Op
from fencepost.audit.run import audit_ops

MIXES = {
    "5% lost": {"lost": 0.05, "failed": 0.01, "reads": 0.4, "span": 50},
    "50% lost": {"lost": 0.5, "failed": 0.0, "reads": 0.1, "span": 200},
}


def best(repeat: int, run: Callable[[], object]) -> tuple[float, object]:
    """The least CPU time of ``repeat`` runs, and the last run's answer."""
    times = []
    answer: object = None
    for _ in range(repeat):
        started = time.process_time()
        answer = run()
        times.append(time.process_time() - started)
    return min(times), answer


def history(clients: int, ops: int, mix: dict[str, float]) -> list[Op]:
    return synth.simulate(
        random.Random(clients),
        clients=clients,
        ops=ops,
        lost=mix["lost"],
        failed=mix["failed"],
        reads=mix["reads"],
        span=int(mix["span"]),
    )


def cross_check(count: int) -> None:
    """The baseline agrees with the brute-force checker on ``count`` small histories,
    half of them corrupted (else its timings would compare against a wrong checker)."""
    rng = random.Random(5)
    for _ in range(count):
        h = synth.simulate(rng, clients=3, ops=rng.randrange(3, 8), lost=0.3)
        if rng.random() < 0.5:
            h = synth.corrupt(h, rng)
        if wgl.linearizable(h) != brute.linearizable(h):
            raise SystemExit(f"benchmarks/wgl.py disagrees with the brute-force checker: {h}")
    print(f"baseline checked: agrees with the brute-force checker on {count} small histories")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", type=int, default=5_000)
    parser.add_argument("--clients", type=int, nargs="+", default=[2, 4, 8, 16, 32, 64])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--max-steps", type=int, default=5_000_000)
    parser.add_argument("--cross-check", type=int, default=400)
    args = parser.parse_args(argv)
    cross_check(args.cross_check)
    print(f"one stream, {args.ops:,} operations; CPU seconds, best of {args.repeat}")
    print(
        f"{'mix':>9} {'clients':>8} {'audit s':>9} {'audit ops/s':>12} "
        f"{'wgl s':>9} {'wgl ops/s':>10} {'wgl/audit':>10} {'verdict':>8}"
    )
    for name, mix in MIXES.items():
        for clients in args.clients:
            h = history(clients, args.ops, mix)

            def audit(h: list[Op] = h) -> object:
                return audit_ops(list(h))

            ours, report = best(args.repeat, audit)
            exit_code = getattr(report, "exit_code", None)

            def porcupine(h: list[Op] = h) -> bool | None:
                try:
                    return wgl.linearizable(h, args.max_steps)
                except wgl.GaveUp:
                    return None

            theirs, verdict = best(args.repeat, porcupine)
            if verdict is None:
                shown = f">{theirs:>8.2f}"
                ratio = f">{theirs / ours:>9.1f}"
            else:
                if verdict != (exit_code == 0):
                    raise SystemExit(f"verdicts differ at {clients} clients: {verdict} {exit_code}")
                shown = f"{theirs:>9.2f}"
                ratio = f"{theirs / ours:>10.1f}"
            wgl_rate = f"{len(h) / theirs:>10,.0f}" if verdict is not None else f"{'gave up':>10}"
            print(
                f"{name:>9} {clients:>8} {ours:>9.3f} {len(h) / ours:>12,.0f} "
                f"{shown} {wgl_rate} {ratio} {'ok' if exit_code == 0 else exit_code!s:>8}"
            )
    load = os.getloadavg()
    print(f"(load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
