"""Audit throughput by history size and concurrency, each beside its own baseline.

Run: ``python benchmarks/audit.py [--sizes 10000 100000 1000000] [--quick] [--parts ...]``.

1. **Size.** Logs of N operations over N/1000 streams (4 clients each, 5% lost
   responses), simulated with real linearization points
   (:mod:`fencepost.audit.synth`), written in the log format. Each is audited
   in a child process (CPU seconds, wall seconds, peak memory) beside the
   baseline: the same child doing nothing but ``json.loads`` of every line.
   Target: 1,000,000 operations over 1,000 streams in at most 60 s of one core,
   with memory bounded (``--memory-ops`` operations sorted in memory, the rest
   spilled to disk).
2. **Concurrency.** One stream, 4 to 16 clients, half the responses lost (many
   concurrent indefinite writes: the histories on which a generic
   linearizability search blows up). Operations/s and the largest frontier.
3. **Small histories** against the brute-force checker
   (:mod:`fencepost.audit.brute`), the plain algorithm, on the same histories.
*Stages* (``--parts stages``): reading (``read_entries``: the lines checked, as plain
tuples), sorting and checking (operations built, then audited) a 100,000-operation
log, each timed alone in rounds over ``json.loads`` of the same lines.

4. **Recording overhead** on durable SQLite publishes: publisher attempts
   (after a checkpoint advance) with and without
   :class:`~fencepost.impl.recording.RecordingStore`, alternated, best of
   ``--repeat``. Target: under 10%.

The machine is shared: every figure is printed beside its baseline from the
same run, and the ratio is what to compare.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from fencepost.audit import brute, synth
from fencepost.audit.log import op_to_json
from fencepost.audit.run import audit_ops
from fencepost.impl.cuts import Cut
from fencepost.impl.memory import MemoryStore
from fencepost.impl.orders import IntegerOrder
from fencepost.impl.publisher import Publisher
from fencepost.impl.recording import LogWriter, RecordingStore
from fencepost.impl.records import Checkpoint, Membership
from fencepost.impl.sqlite import SQLiteStore
from fencepost.impl.stores import Store

CHILD = """
import json, resource, sys, time
mode, path, memory_ops = sys.argv[1], sys.argv[2], int(sys.argv[3])
if mode != "plain":
    from fencepost.audit.run import audit
wall, cpu = time.perf_counter(), time.process_time()
if mode == "plain":
    n = 0
    with open(path, "rb") as f:
        for line in f:
            json.loads(line)
            n += 1
    out = {"operations": n}
else:
    r = audit([path], memory_ops=memory_ops)
    out = {"operations": r.operations, "exit": r.exit_code, "runs": r.spilled_runs}
out["wall"] = time.perf_counter() - wall
out["cpu"] = time.process_time() - cpu
out["rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps(out))
"""


def write_log(path: Path, ops: int, streams: int, clients: int, lost: float, seed: int) -> None:
    rng = random.Random(seed)
    per = max(2, ops // streams)
    with open(path, "w") as out:
        for s in range(streams):
            history = synth.simulate(
                rng,
                stream=f"s{s:05d}",
                clients=clients,
                ops=per - 1,
                lost=lost,
                failed=0.01,
                span=50,
                worker_prefix=f"s{s}c",
            )
            out.writelines(
                json.dumps(op_to_json(op), separators=(",", ":")) + "\n" for op in history
            )


def child(mode: str, path: Path, memory_ops: int) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-c", CHILD, mode, str(path), str(memory_ops)],
        capture_output=True,
        text=True,
        check=True,
    )
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def by_size(sizes: list[int], memory_ops: int) -> None:
    print("1. size: N operations over N/1000 streams, 4 clients each, 5% lost responses")
    print(
        f"{'ops':>10} {'streams':>8} {'audit cpu s':>12} {'ops/s (cpu)':>12} {'wall s':>8} "
        f"{'rss MB':>7} {'runs':>5} {'json.loads cpu s':>17} {'ratio':>6} {'verdict':>8} "
        f"{'load':>5}"
    )
    with tempfile.TemporaryDirectory() as folder:
        for n in sizes:
            streams = max(1, n // 1000)
            path = Path(folder) / f"{n}.log"
            write_log(path, n, streams, 4, 0.05, n)
            plain = child("plain", path, memory_ops)
            full = child("audit", path, memory_ops)
            verdict = "ok" if full["exit"] == 0 else str(full["exit"])
            load = os.getloadavg()[0]
            print(
                f"{full['operations']:>10,} {streams:>8,} {full['cpu']:>12.1f} "
                f"{full['operations'] / full['cpu']:>12,.0f} {full['wall']:>8.1f} "
                f"{full['rss_mb']:>7.0f} {full['runs']:>5} {plain['cpu']:>17.1f} "
                f"{full['cpu'] / plain['cpu']:>6.1f} {verdict:>8} {load:>5.1f}"
            )
            path.unlink()


def by_stage(size: int, memory_ops: int) -> None:
    """Where the time goes: each stage of the audit timed alone in this process (best of
    3 rounds, CPU time), over ``json.loads`` of the same lines."""
    from fencepost.audit.log import LogStats, read_entries
    from fencepost.audit.run import AuditReport, audit, sorted_entries

    def plain(path: Path) -> None:
        with open(path, "rb") as f:
            for line in f:
                json.loads(line)

    def reading(path: Path) -> None:
        for _ in read_entries([path], LogStats()):
            pass

    def sorting(path: Path) -> None:
        for _ in sorted_entries(read_entries([path], LogStats()), memory_ops, AuditReport()):
            pass

    def whole(path: Path) -> None:
        audit([path], memory_ops=memory_ops)

    print(f"\nstages: {size:,} operations, --memory-ops {memory_ops:,}; CPU s, best of 3 rounds")
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "stages.log"
        write_log(path, size, max(1, size // 1000), 4, 0.05, size)
        stages = [("json.loads", plain), ("read", reading), ("+ sort", sorting)]
        stages.append(("+ checks", whole))
        took: dict[str, list[float]] = {name: [] for name, _ in stages}
        for _ in range(3):  # rounds, each stage once per round: a busy minute hits them all
            for name, run in stages:
                gc.collect()
                gc.disable()  # as the audit runs (fencepost.audit.run.audit_ops)
                started = time.process_time()
                run(path)
                took[name].append(time.process_time() - started)
                gc.enable()
        base = min(took["json.loads"])
        for name, _ in stages:
            best = min(took[name])
            print(f"   {name:<11} {best:>7.2f} s {best / base:>6.2f} x json.loads")
        print(f"   (load average {os.getloadavg()[0]:.1f})")


def by_concurrency(ops: int) -> None:
    print(f"\n2. concurrency: one stream, {ops:,} operations, 90% writes, half the responses lost")
    print(f"{'clients':>8} {'ops/s':>10} {'largest frontier':>17} {'verdict':>8}")
    for clients in (4, 8, 12, 16):
        history = synth.simulate(
            random.Random(clients),
            clients=clients,
            ops=ops,
            lost=0.5,
            failed=0.0,
            reads=0.1,
            span=200,
        )
        started = time.process_time()
        report = audit_ops(history)
        spent = time.process_time() - started
        largest = max(v.largest_frontier for v in report.verdicts)
        verdict = "ok" if report.exit_code == 0 else str(report.exit_code)
        print(f"{clients:>8} {len(history) / spent:>10,.0f} {largest:>17} {verdict:>8}")


def against_brute(count: int) -> None:
    rng = random.Random(3)
    histories = []
    for _ in range(count):
        h = synth.simulate(rng, clients=3, ops=rng.randrange(3, 7))
        if rng.random() < 0.5:
            h = synth.corrupt(h, rng)
        histories.append(h)
    started = time.process_time()
    for h in histories:
        brute.linearizable(h)
    plain = time.process_time() - started
    started = time.process_time()
    for h in histories:
        audit_ops(list(h))
    ours = time.process_time() - started
    print(f"\n3. {count} small histories (4-7 operations, 3 clients), half corrupted")
    print(
        f"   brute force {plain * 1e6 / count:,.0f} us/history, audit {ours * 1e6 / count:,.0f} "
        f"us/history: ratio audit/brute {ours / plain:.2f}"
    )


ORDER = IntegerOrder("offsets", successor_exact=True)


def publishes(store: Store, recorder: RecordingStore | None, count: int, start: int) -> float:
    """Seconds for ``count`` (checkpoint advance + publisher attempt) cycles."""
    target: Store = store if recorder is None else recorder
    publisher = Publisher(target, "s", f"bench-{start}")
    current = store.read_checkpoint("s", 1, "A")
    generation = None if current is None else current.generation
    started = time.perf_counter()
    for i in range(start, start + count):
        written = target.write_checkpoint(
            "s", generation, Checkpoint("A", Cut.through(i), str(i), 1, "q", 1)
        )
        assert written.checkpoint is not None
        generation = written.checkpoint.generation
        if recorder is None:
            publisher.attempt()
        else:
            recorder.attempt(publisher)
    return time.perf_counter() - started


def recording_overhead(count: int, repeat: int) -> None:
    """Wall time per publish cycle on SQLite with and without the recorder (alternated), and
    the recorder's own CPU per cycle measured on the in-memory store (no I/O to hide it)."""
    print(f"\n4. recording overhead: SQLite (synchronous=FULL), {count} publish cycles per run")
    membership = Membership(1, "q", {"A": "offsets"}, {"offsets": ORDER})
    with tempfile.TemporaryDirectory() as folder:
        store = SQLiteStore(Path(folder) / "bench.db")
        store.create_stream("s", membership)
        log = LogWriter(Path(folder) / "audit.log")
        recorder = RecordingStore(store, log, "bench")
        runs: dict[bool, list[float]] = {False: [], True: []}
        at = 0
        publishes(store, None, count // 4, at)  # warm up the file and the page cache
        at += count
        for i in range(repeat):
            for recorded in (i % 2 == 0, i % 2 == 1):  # alternate which goes first
                took = publishes(store, recorder if recorded else None, count, at)
                runs[recorded].append(took / count)
                at += count
        log.close()
        lines = len((Path(folder) / "audit.log").read_bytes().splitlines())
        store.close()
        memory = MemoryStore()
        memory.create_stream("s", membership)
        cpu: dict[bool, float] = {}
        for recorded in (False, True):
            log = LogWriter(Path(folder) / "memory.log")
            started = time.process_time()
            publishes(memory, RecordingStore(memory, log, "m") if recorded else None, 2000, at)
            cpu[recorded] = (time.process_time() - started) / 2000
            at += 2000
            log.close()
    plain, with_log = statistics.median(runs[False]), statistics.median(runs[True])
    own = cpu[True] - cpu[False]
    print(
        f"   median per cycle: plain {plain * 1e3:.2f} ms, recorded {with_log * 1e3:.2f} ms "
        f"({lines:,} lines): overhead {100 * (with_log / plain - 1):+.1f}% (target < 10%)"
    )
    print(
        f"   the recorder's own CPU: {own * 1e6:.0f} us per cycle (8 lines), "
        f"{100 * own / plain:.1f}% of a plain SQLite cycle"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--memory-ops", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--quick", action="store_true", help="small sizes only (a smoke run)")
    parser.add_argument(
        "--parts",
        nargs="+",
        choices=["size", "stages", "concurrency", "brute", "recording"],
        default=["size", "concurrency", "brute", "recording"],
        help="which parts to run (all by default)",
    )
    args = parser.parse_args(argv)
    sizes = [2_000, 10_000] if args.quick else args.sizes
    if "size" in args.parts:
        by_size(sizes, args.memory_ops)
    if "stages" in args.parts:
        by_stage(2_000 if args.quick else 100_000, args.memory_ops)
    if "concurrency" in args.parts:
        by_concurrency(2_000 if args.quick else 20_000)
    if "brute" in args.parts:
        against_brute(100 if args.quick else 500)
    if "recording" in args.parts:
        recording_overhead(100 if args.quick else 200, 2 if args.quick else args.repeat)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"\n(this process peaked at {peak:.0f} MB)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
