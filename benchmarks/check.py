"""`fencepost check` wall time on one worker and on two, in the same run, with the ratio.

Run: ``python benchmarks/check.py [--rounds N] [--busy K] [--only PARTS] [--jobs 2,4]``.

Each round runs ``fencepost check --jobs 1`` (every part in one process, as the gate
ran before it had workers: the baseline) and ``fencepost check --jobs N`` for each N
of ``--jobs`` (default 2), alternating,
each in a fresh process, and prints their wall times, exit codes, the medians and the
ratio baseline/parallel. The per-part seconds of the last run on each are printed
too (what each part costs; with two workers a part's seconds are the sum of its
pieces'). ``--busy K`` starts K CPU-bound processes (``while True: pass``), each in a
session of its own (so that, where the kernel groups CPU shares by session, each is
as much load as another job on the machine), for the whole run, and stops them
after, by their process ids: the gate's verdict must not change beside them (its
proofs are bounded by Z3 resource limits, not wall time), only its duration.

The machine is shared and noisy: quote the ratio, not the figures.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time


def run_check(jobs: int, only: str | None) -> tuple[float, int, str]:
    """Wall seconds, exit code and output of one ``fencepost check --jobs N``."""
    command = [sys.executable, "-m", "fencepost", "check", "--jobs", str(jobs)]
    if only:
        command += ["--only", only]
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    return time.perf_counter() - started, done.returncode, done.stdout + done.stderr


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2, help="rounds of both runs")
    parser.add_argument("--busy", type=int, default=0, help="CPU-bound processes beside")
    parser.add_argument("--only", default=None, help="parts, as for fencepost check --only")
    parser.add_argument(
        "--jobs", default="2", help="comma-separated --jobs values to compare with --jobs 1"
    )
    args = parser.parse_args()
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(args.busy)]
    compared = [1, *(int(j) for j in args.jobs.split(",") if int(j) != 1)]
    times: dict[int, list[float]] = {jobs: [] for jobs in compared}
    last: dict[int, str] = {}
    try:
        for i in range(args.rounds):
            for jobs in compared:
                seconds, code, output = run_check(jobs, args.only)
                times[jobs].append(seconds)
                last[jobs] = output
                print(f"round {i + 1}: --jobs {jobs}: {seconds:6.1f} s, exit {code}", flush=True)
                if code != 0:
                    print(output)
    finally:
        for process in busy:
            process.kill()
            process.wait()
    load = os.getloadavg()[0]
    one = statistics.median(times[1])
    print(f"\nbeside {args.busy} busy processes (load average now {load:.1f}):")
    print(f"  --jobs 1 (baseline): median {one:6.1f} s")
    for jobs in compared[1:]:
        median = statistics.median(times[jobs])
        ratio = one / median
        print(f"  --jobs {jobs}:            median {median:6.1f} s, baseline / this: {ratio:.2f}")
    for jobs in compared:
        print(f"\nlast run, --jobs {jobs}:\n{last[jobs]}")


if __name__ == "__main__":
    main()
