"""The singer adapter's cost per sync, beside a baseline that makes the same calls without the SDK.

Run: ``python benchmarks/singer_sync.py [--quick] [--rows 10]``.

1. **In process.** One sync of ``fencepost adapter singer``'s tool (a singer-sdk
   Tap built and run, its messages serialized and parsed, the target's two
   commits) on an in-memory source gaining ``--rows`` new rows per sync,
   against the baseline: a hand-written incremental loop making the same calls
   (read_state, list_partitions, the same query, the records commit, the state
   commit) with no SDK. Syncs per second.
2. **Over the wire.** ``fencepost adapter singer`` as a process, driven by this
   script playing the harness: the time to ``hello_ok`` (start-up, singer-sdk's
   import included) and syncs per second, against the same runtime serving the
   hand-written loop in a process of its own (``python -c``), so the ratio is
   singer-sdk's share.

The machine is shared: each figure is printed beside its baseline from the
same run, alternated in rounds (:func:`baseline.rounds`).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from typing import IO, Any

from baseline import ratio_line, rounds

from fencepost.adapters.runtime import (
    KEEP_STATE,
    Bound,
    Delivery,
    Mode,
    Page,
    Row,
    Source,
    SourceClient,
    SyncRequest,
    SyncResult,
)
from fencepost.adapters.singer_adapter import build

T0 = 1_704_067_200_000
PAGE = 100
SOURCE = Source("orders", "updated_at", "timestamp", 1000, 10_000, False, False)

BASELINE_TOOL = '''
from fencepost.adapters.runtime import protect_stdout, serve_stdio, SyncResult, Bound, Coverage

class Loop:
    """Incremental by hand: >= the bookmark (floored), page by page, records then state."""
    name = "hand-written loop"
    delivery = "at-least-once"
    def reset(self):
        pass
    def sync(self, request, source):
        state = source.read_state() or {}
        lower = state.get("bookmark")
        bound = None if lower is None else Bound(lower - lower % 1000, True)
        ids, best = [], lower
        for p in source.list_partitions():
            token = None
            while True:
                page = source.query(p, bound, None, token)
                ids += [r.id for r in page.rows]
                best = max([best or 0] + [r.at for r in page.rows])
                if page.next is None:
                    break
                token = page.next
        source.commit(ids, "append")
        source.commit([], "append", state={"bookmark": best})
        return SyncResult("completed", None)

if __name__ == "__main__":
    import sys
    wire = protect_stdout()
    sys.exit(serve_stdio(Loop(), wire))
'''


class Memory(SourceClient):
    """One partition of rows, all visible, pages of ``PAGE``; the state as last committed."""

    def __init__(self) -> None:
        self.rows: list[Row] = []
        self.state: object = None
        self.copies = 0

    def grow(self, n: int) -> None:
        start = len(self.rows)
        self.rows += [Row(f"r{i}", T0 + 137 * i) for i in range(start, start + n)]

    def read_state(self) -> object:
        return json.loads(json.dumps(self.state))

    def list_partitions(self) -> list[str]:
        return ["main"]

    def query(
        self, partition: str, lower: Bound | None, upper: Bound | None, after: str | None
    ) -> Page:
        skip = int(after) if after else 0
        rows = [r for r in self.rows if lower is None or r.at >= lower.at]
        page = rows[skip : skip + PAGE]
        more = len(rows) > skip + PAGE
        return Page(tuple(page), str(skip + PAGE) if more else None, None)

    def commit(self, records: Sequence[str], mode: Mode, state: object = KEEP_STATE) -> None:
        self.copies += len(records)
        if state is not KEEP_STATE:
            self.state = json.loads(json.dumps(state))


def _baseline_tool() -> Any:
    scope: dict[str, Any] = {"__name__": "baseline_tool"}
    exec(BASELINE_TOOL, scope)
    return scope["Loop"]()


def in_process(tool: Any, rows: int, syncs: int) -> float:
    """Syncs per second of ``tool`` on a fresh source gaining ``rows`` rows per sync."""
    source = Memory()
    start = time.perf_counter()
    for n in range(syncs):
        source.grow(rows)
        result: SyncResult = tool.sync(SyncRequest(n, "t1", T0 + 10**9, SOURCE), source)
        assert result.outcome == "completed"
    assert source.copies >= rows * syncs
    return syncs / (time.perf_counter() - start)


class Wire:
    """A process speaking the sync level; this side answers its calls from a :class:`Memory`."""

    def __init__(self, argv: list[str]) -> None:
        start = time.perf_counter()
        self.proc = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
        )
        self.send({"type": "hello", "protocol": 1})
        hello = self.receive()
        assert hello["type"] == "hello_ok", hello
        self.startup = time.perf_counter() - start
        self.source = Memory()
        self.n = 0

    def send(self, msg: dict[str, object]) -> None:
        stdin: IO[bytes] | None = self.proc.stdin
        assert stdin is not None
        stdin.write(json.dumps(msg).encode() + b"\n")
        stdin.flush()

    def receive(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        msg = json.loads(self.proc.stdout.readline())
        assert isinstance(msg, dict)
        return msg

    def sync(self, rows: int) -> None:
        self.n += 1
        self.source.grow(rows)
        source = {
            "stream": SOURCE.stream,
            "cursor": SOURCE.cursor,
            "cursor_type": SOURCE.cursor_type,
            "granularity": SOURCE.granularity,
            "max_commit_delay": SOURCE.max_commit_delay,
            "partitioned": False,
            "horizon": False,
        }
        now = T0 + 10**9
        self.send({"type": "sync", "id": self.n, "worker": "t1", "now": now, "source": source})
        while True:
            msg = self.receive()
            if msg["type"] == "sync_ok":
                assert msg["outcome"] == "completed", msg
                return
            reply: dict[str, object] = {"type": "reply", "call_id": msg["call_id"], "ok": True}
            op = msg["op"]
            if op == "read_state":
                reply["state"] = self.source.read_state()
            elif op == "list_partitions":
                reply["partitions"] = self.source.list_partitions()
            elif op == "query":

                def bound(b: Any) -> Bound | None:
                    return None if b is None else Bound(b["at"], b["inclusive"])

                page = self.source.query(
                    msg["partition"], bound(msg["lower"]), bound(msg["upper"]), msg["after"]
                )
                reply.update(
                    rows=[{"id": r.id, "at": r.at} for r in page.rows],
                    next=page.next,
                    horizon=None,
                )
            else:
                self.source.commit(msg["records"], msg["mode"], msg.get("state", KEEP_STATE))
            self.send(reply)

    def close(self) -> None:
        self.send({"type": "shutdown"})
        self.proc.wait(timeout=30)


def over_the_wire(rows: int, syncs: int) -> tuple[float, float, float, float]:
    """(singer syncs/s, baseline syncs/s, singer start-up s, baseline start-up s)."""
    singer = Wire([sys.executable, "-m", "fencepost", "adapter", "singer"])
    loop = Wire([sys.executable, "-c", BASELINE_TOOL])
    rates = []
    for wire in (singer, loop):
        start = time.perf_counter()
        for _ in range(syncs):
            wire.sync(rows)
        rates.append(syncs / (time.perf_counter() - start))
        wire.close()
    return rates[0], rates[1], singer.startup, loop.startup


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds and syncs")
    parser.add_argument("--rows", type=int, default=10, help="new rows per sync (default 10)")
    args = parser.parse_args(argv)
    count, syncs = (3, 50) if args.quick else (7, 200)
    delivery: Delivery = build({}).delivery
    print(f"singer-sdk adapter ({delivery}), {args.rows} new rows per sync, pages of {PAGE}")

    singer, loop = build({}), _baseline_tool()
    ours, theirs = rounds(
        lambda: in_process(singer, args.rows, syncs),
        lambda: in_process(loop, args.rows, syncs),
        count,
    )
    print(ratio_line("in process", ours, theirs, "syncs/s", "the SDK's share of a sync"))
    print(f"  one sync: {1000 / statistics.median(ours):.2f} ms with singer-sdk")

    wire = [over_the_wire(args.rows, syncs // 2) for _ in range(max(1, count // 2))]
    print(
        ratio_line(
            "over the wire",
            [w[0] for w in wire],
            [w[1] for w in wire],
            "syncs/s",
            "the process, as the harness drives it",
        )
    )
    print(
        f"  start-up to hello_ok: {statistics.median(w[2] for w in wire):.2f} s "
        f"(baseline {statistics.median(w[3] for w in wire):.2f} s)"
    )


if __name__ == "__main__":
    main()
