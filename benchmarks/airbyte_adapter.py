"""What one sync of ``fencepost adapter airbyte`` costs, beside its baselines.

Run: ``python benchmarks/airbyte_adapter.py [--repeat 20] [--rows 40] [--page-size 10]``.

1. **Start-up**, in a child process: ``import airbyte_cdk`` and the adapter's
   ``build`` (which lets airbyte-cdk build the stream once to check the
   configuration), beside the baseline of a child that only starts Python.
2. **One sync** over an in-memory source of ``--rows`` rows (pages of
   ``--page-size``): the adapter as it runs (the declarative component schema
   parsed once per process, the source built fresh per sync), beside the same
   sync with airbyte-cdk parsing its YAML schema in every
   ``ConcurrentDeclarativeSource`` as it does by default (the cost the cache
   removes), and beside the floor: the same queries and commits made directly,
   without airbyte. Alternated, best of ``--repeat``.
3. **Per page**: the sync's time divided by its pages (one loopback HTTP
   request each), against the floor's.

The machine is shared: every figure is printed beside its baseline from the
same run, and the ratio is what to compare.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from collections.abc import Callable, Sequence

from fencepost.adapters import airbyte_adapter as adapter
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


class MemorySource(SourceClient):
    """``rows`` rows one second apart, every one visible; pages of ``page_size``."""

    def __init__(self, rows: int, page_size: int) -> None:
        self.rows = [Row(f"r{i}", T0 + 1000 * i + 412) for i in range(rows)]
        self.page_size = page_size
        self.state: object = None
        self.pages = 0

    def read_state(self) -> object:
        return self.state

    def list_partitions(self) -> list[str]:
        return ["main"]

    def query(
        self, partition: str, lower: Bound | None, upper: Bound | None, after: str | None
    ) -> Page:
        self.pages += 1
        rows = [
            r
            for r in self.rows
            if (lower is None or r.at > lower.at or (lower.inclusive and r.at == lower.at))
            and (upper is None or r.at < upper.at or (upper.inclusive and r.at == upper.at))
        ]
        start = 0 if after is None else int(after)
        page = rows[start : start + self.page_size]
        more = start + self.page_size < len(rows)
        return Page(tuple(page), str(start + self.page_size) if more else None, None)

    def commit(self, records: Sequence[str], mode: Mode, state: object = KEEP_STATE) -> None:
        if state is not KEEP_STATE:
            self.state = state


SOURCE = Source("orders", "updated_at", "timestamp", 1000, 10_000, False, False)


def floor_sync(source: MemorySource, now: int) -> None:
    """The same reads and commits, without airbyte: the cost of the world's side alone."""
    source.read_state()
    after: str | None = None
    ids: list[str] = []
    while True:
        page = source.query("main", Bound(T0, True), Bound(now - now % 1000, True), after)
        ids += [r.id for r in page.rows]
        if page.next is None:
            break
        after = page.next
    source.commit(ids, "append")
    source.commit([], "append", {"at": now})


def best(repeat: int, runs: dict[str, Callable[[], None]]) -> dict[str, float]:
    times: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(repeat):
        for name, run in runs.items():
            start = time.perf_counter()
            run()
            times[name].append(time.perf_counter() - start)
    return {name: min(ts) for name, ts in times.items()}


def child(code: str) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True)
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--rows", type=int, default=40)
    parser.add_argument("--page-size", type=int, default=10)
    args = parser.parse_args(argv)

    python = min(child("pass") for _ in range(3))
    startup = min(
        child("from fencepost.adapters.airbyte_adapter import build; build({})") for _ in range(3)
    )
    print(
        f"start-up: import airbyte-cdk + build {startup:.2f} s, "
        f"bare python {python:.2f} s (x{startup / python:.0f})"
    )

    tool = adapter.build({})
    now = T0 + 1000 * args.rows + 5000
    pages = MemorySource(args.rows, args.page_size)

    def cached(rows: int = args.rows) -> None:
        # a fresh world and no input state each time: every sync reads every page
        tool.sync(SyncRequest(1, "t1", now, SOURCE), MemorySource(rows, args.page_size))

    def one_page() -> None:
        cached(args.page_size)

    def uncached() -> None:
        with adapter._patched(adapter, "_component_schema", adapter._parse_component_schema):
            cached()

    def floor() -> None:
        floor_sync(pages, now)

    result = best(
        args.repeat,
        {"adapter": cached, "one page": one_page, "per sync": uncached, "floor": floor},
    )
    n_pages = -(-args.rows // args.page_size)
    per_page = (result["adapter"] - result["one page"]) / max(1, n_pages - 1)
    print(f"one sync of {args.rows} rows in {n_pages} pages (best of {args.repeat}):")
    print(f"  adapter (schema parsed once)   {1000 * result['adapter']:8.1f} ms")
    print(
        f"  schema parsed per sync (CDK)   {1000 * result['per sync']:8.1f} ms"
        f"  (x{result['per sync'] / result['adapter']:.1f} the adapter)"
    )
    print(
        f"  floor (no airbyte)             {1000 * result['floor']:8.3f} ms"
        f"  (the adapter is x{result['adapter'] / result['floor']:.0f})"
    )
    print(
        f"  one page: {1000 * result['one page']:.1f} ms; each further page "
        f"{1000 * per_page:.1f} ms (a loopback HTTP request through airbyte's retriever)"
    )
    tool.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
