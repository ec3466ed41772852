"""The late-commit world's default budget against a slow sync tool: runs, syncs, seconds.

``fencepost conform --world late-commits`` judges tools whose every sync costs
tens of milliseconds (a library pipeline). This runs the default budget end to
end against the reference correct tool (tests/harness/late/late_tools.py)
started as a subprocess, as ``fencepost adapter`` starts a tool, twice in the
same run: with ``--sync-ms N`` milliseconds of work per sync (default 75: a
tool whose sync costs 50 to 100 ms), and as the baseline with no work, so the
harness's own cost and the tool's are told apart. It prints the runs, the syncs,
the wall time of each and their ratio, and the time per sync the budget
implies.

Usage: python benchmarks/late_commits.py [--sync-ms 75]
Target: the default budget well under a minute at 75 ms per sync, on two cores.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from fencepost.harness.late_search import LateOptions, LateReport, late_conform
from fencepost.harness.transport import SubprocessSut

TOOL = Path(__file__).resolve().parents[1] / "tests" / "harness" / "late" / "late_tools.py"


def budget(sync_ms: int) -> tuple[LateReport, float]:
    factory = SubprocessSut([sys.executable, str(TOOL), "correct", "--sync-ms", str(sync_ms)])
    started = time.perf_counter()
    try:
        report = late_conform(factory, LateOptions())
    finally:
        factory.close()
    elapsed = time.perf_counter() - started
    if not report.ok:
        raise SystemExit(f"the correct tool failed: {[str(f.violation) for f in report.findings]}")
    return report, elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sync-ms", type=int, default=75)
    args = parser.parse_args()
    base, base_s = budget(0)
    slow, slow_s = budget(args.sync_ms)
    print("late-commit world, default budget, reference correct tool as a subprocess")
    for label, report, seconds in (
        ("baseline (0 ms per sync)", base, base_s),
        (f"{args.sync_ms} ms per sync", slow, slow_s),
    ):
        t = report.totals
        print(
            f"  {label:<24} {report.runs:>4} runs  {t.syncs:>4} syncs  {report.messages:>6} "
            f"messages  {seconds:6.1f} s  ({report.processes} processes, {report.reused} reused)"
        )
    tool_s = slow.totals.syncs * args.sync_ms / 1000
    print(
        f"  ratio {slow_s / base_s:.1f}x; the tool's own work {tool_s:.1f} s of {slow_s:.1f} s "
        f"(harness and start-up {slow_s - tool_s:.1f} s)"
    )


if __name__ == "__main__":
    main()
