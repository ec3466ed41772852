"""The cost of one dlt sync behind ``fencepost adapter dlt``, beside what it cut out.

Run: ``python benchmarks/dlt_sync.py [--rows 20] [--repeat 30]``.

One sync reads ``--rows`` rows (pages of 5) from an in-memory source and
commits them with dlt's state. Four ways, alternated, median of ``--repeat``:

- **baseline**: the same queries and commit without dlt (the source's own cost);
- **adapter**: ``DltTool.sync``, the adapter's path (dlt's pipe iterator, the
  ``Incremental`` step, the state restored and dumped);
- **extract**: the same source through a real ``Pipeline.extract`` (load
  package files, the pipeline's working folder), the step the adapter cuts;
- **run**: ``Pipeline.run`` to dlt's local ``filesystem`` destination
  (extract, normalize and load), what a dlt user's run costs.

The machine is shared: every figure is printed beside the baseline from the
same run, and the ratios are what to compare.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence

from fencepost.adapters.dlt_adapter import DltTool, _Seen, build
from fencepost.adapters.runtime import (
    KEEP_STATE,
    Bound,
    Mode,
    Page,
    Row,
    Source,
    SourceClient,
    SyncRequest,
)

T0 = 1_704_067_200_000
SOURCE = Source("orders", "updated_at", "timestamp", 1000, 10_000, False, False)


class MemorySource(SourceClient):
    """Rows in memory, pages of 5, the state kept; enough for a sync's calls."""

    def __init__(self, rows: int) -> None:
        self.rows = [Row(f"r{i}", T0 + 1000 * i) for i in range(rows)]
        self.state: object = None

    def read_state(self) -> object:
        return self.state

    def list_partitions(self) -> list[str]:
        return ["main"]

    def query(
        self, partition: str, lower: Bound | None, upper: Bound | None, after: str | None
    ) -> Page:
        start = int(after or 0)
        rows = [
            r
            for r in self.rows
            if lower is None or r.at > lower.at or (lower.inclusive and r.at == lower.at)
        ]
        page = rows[start : start + 5]
        return Page(tuple(page), str(start + 5) if start + 5 < len(rows) else None, None)

    def commit(self, records: Sequence[str], mode: Mode, state: object = KEEP_STATE) -> None:
        if state is not KEEP_STATE:
            self.state = json.loads(json.dumps(state))


def baseline(rows: int) -> None:
    client = MemorySource(rows)
    client.read_state()
    client.list_partitions()
    after, ids = None, []
    while True:
        page = client.query("main", None, None, after)
        ids += [r.id for r in page.rows]
        if page.next is None:
            break
        after = page.next
    client.commit(ids, "append", {"last": page.rows[-1].at})


def adapter(tool: DltTool, rows: int) -> None:
    tool.sync(SyncRequest(1, "t1", T0 + 1000 * rows, SOURCE), MemorySource(rows))


def pipeline_step(tool: DltTool, rows: int, *, run: bool) -> None:

    folder = tempfile.mkdtemp(prefix="fencepost-bench-")
    try:
        _pipeline_step(tool, rows, folder, run=run)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _pipeline_step(tool: DltTool, rows: int, folder: str, *, run: bool) -> None:
    import dlt

    pipeline = dlt.pipeline(
        pipeline_name="fencepost",
        pipelines_dir=folder,
        destination=dlt.destinations.filesystem(os.path.join(folder, "out")) if run else None,
    )
    with tool._isolated(T0):
        source = tool._source(SOURCE, T0 + 1000 * rows, ["main"], MemorySource(rows), _Seen())
        if run:
            pipeline.run(source, loader_file_format="jsonl")
        else:
            pipeline.extract(source)


def measure(ways: dict[str, Callable[[], None]], repeat: int) -> dict[str, float]:
    times: dict[str, list[float]] = {name: [] for name in ways}
    for way in ways.values():
        way()  # warm
    for _ in range(repeat):
        for name, way in ways.items():
            t = time.perf_counter()
            way()
            times[name].append(time.perf_counter() - t)
    return {name: statistics.median(ts) * 1000 for name, ts in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=30)
    args = parser.parse_args()
    from dlt.common.runtime.run_context import RunContext, switched_run_context

    os.environ["RUNTIME__DLTHUB_TELEMETRY"] = "false"
    home = tempfile.mkdtemp(prefix="fencepost-bench-")
    context = RunContext(home)
    context._global_dir = home  # dlt writes its anonymous id there even with telemetry off
    try:
        with switched_run_context(context):
            run(args.rows, args.repeat)
    finally:
        shutil.rmtree(home, ignore_errors=True)


def run(rows: int, repeat: int) -> None:
    tool = build({})
    ways: dict[str, Callable[[], None]] = {
        "baseline": lambda: baseline(rows),
        "adapter": lambda: adapter(tool, rows),
        "extract": lambda: pipeline_step(tool, rows, run=False),
        "run": lambda: pipeline_step(tool, rows, run=True),
    }
    medians = measure(ways, repeat)
    print(f"one sync of {rows} rows, median of {repeat} (ms):")
    for name, ms in medians.items():
        ratio = ms / medians["baseline"]
        print(f"  {name:9} {ms:9.2f}   x{ratio:,.0f} the baseline")
    print(
        f"adapter / Pipeline.extract: {medians['adapter'] / medians['extract']:.2f}; "
        f"adapter / Pipeline.run: {medians['adapter'] / medians['run']:.2f}"
    )
    tool.reset()


if __name__ == "__main__":
    main()
