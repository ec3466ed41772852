"""Crashes of a slow-starting tool in the late-commit world: recycled processes against kills.

A tool like airbyte-cdk takes seconds to start (its import), and the late-commit
search simulates a crash at every commit of its stories. Killing the process for
each crash makes every one of them pay the start-up again; draining the crashed
process with lost answers and resetting it (``late_runner.LateRun._recycle``, the
default for a tool that declared ``reset``) pays it once. This runs the stories that
crash (``crash-between-commits`` and ``lost-commit``, every inserted step, no random
worlds) against the reference correct tool started as a subprocess with
``--start-ms N`` of start-up (default 2000: airbyte-cdk's import on a quiet machine),
twice in the same run: with recycling, and as the baseline with every crash killing
its process. It prints the runs, the crashes, the processes started, the wall time of
each and the ratio.

Usage: python benchmarks/late_startup.py [--start-ms 2000]
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from pathlib import Path

from fencepost.harness.late_search import LateOptions, LateReport, late_conform
from fencepost.harness.transport import SubprocessSut

TOOL = Path(__file__).resolve().parents[1] / "tests" / "harness" / "late" / "late_tools.py"
STORIES = ("crash-between-commits", "lost-commit")


def search(start_ms: int, recycle: bool) -> tuple[LateReport, float]:
    factory = SubprocessSut([sys.executable, str(TOOL), "correct", "--start-ms", str(start_ms)])
    options = dataclasses.replace(LateOptions(), stories=STORIES, schedules=0, recycle=recycle)
    started = time.perf_counter()
    try:
        report = late_conform(factory, options)
    finally:
        factory.close()
    elapsed = time.perf_counter() - started
    if not report.ok:
        raise SystemExit(f"the correct tool failed: {[str(f.violation) for f in report.findings]}")
    return report, elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--start-ms", type=int, default=2000)
    args = parser.parse_args()
    kept, kept_s = search(args.start_ms, recycle=True)
    killed, killed_s = search(args.start_ms, recycle=False)
    print(
        f"late-commit world, stories {', '.join(STORIES)}, reference correct tool with "
        f"{args.start_ms} ms of start-up"
    )
    for label, report, seconds in (
        ("crashes recycled (reset)", kept, kept_s),
        ("baseline: crashes killed", killed, killed_s),
    ):
        print(
            f"  {label:<26} {report.runs:>4} runs  {report.totals.syncs:>4} syncs  "
            f"{report.processes:>3} processes started  {seconds:6.1f} s"
        )
    print(f"  ratio {killed_s / kept_s:.1f}x faster with recycling")


if __name__ == "__main__":
    main()
