"""Durable publishes/s and checkpoint writes/s on PostgreSQL, 1, 4 and 8 publisher processes.

Each publisher process owns one stream (one partition) and loops: write the
partition's checkpoint one offset further (conditional on its generation), then
run one full :meth:`Publisher.attempt` (read record, membership, checkpoints;
merge; conditional write), which publishes the new cut. Every store call is
recorded and the whole history is checked (linearizability and docs/semantics.md
section 7) before the figures are printed. A publish is "durable" because
every commit waits for the write-ahead log flush (``synchronous_commit=on``).

    python benchmarks/postgres.py                       # $FENCEPOST_DATABASE_URL or pgserver
    python benchmarks/postgres.py --dsn postgresql://postgres@127.0.0.1:5432/test
    python benchmarks/postgres.py --processes 8 --seconds 10 --json
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import shutil
import sys
import tempfile
import time
import uuid
import warnings
from pathlib import Path
from typing import Any

import psycopg

from fencepost.audit.log import read_ops
from fencepost.audit.ops import Op, Status
from fencepost.audit.run import audit_ops
from fencepost.impl.cuts import Cut
from fencepost.impl.orders import IntegerOrder
from fencepost.impl.postgres import DSN_ENV, PostgresStore, quote_ident
from fencepost.impl.publisher import Outcome, Publisher
from fencepost.impl.recording import LogWriter, RecordingStore
from fencepost.impl.records import Checkpoint, Membership

ORDER = IntegerOrder("offsets", successor_exact=True)
MEMBERSHIP = Membership(1, "q", {"A": "offsets"}, {"offsets": ORDER})


def worker(dsn: str, schema: str, index: int, folder: str, start_at: float, seconds: float) -> None:
    """One publisher process: advance its checkpoint, publish, repeat until time is up."""
    stream = f"b{index}"
    sink = LogWriter(Path(folder) / f"w{index}.jsonl")
    name = f"fpbench-{schema}-{index}"
    inner = PostgresStore(dsn, schema=schema, max_connections=1, application_name=name)
    store = RecordingStore(inner, sink, f"w{index}")
    publisher = Publisher(store, stream, f"w{index}")
    generation: int | None = None
    offset = 0
    while time.monotonic() < start_at:
        time.sleep(0.001)
    deadline = start_at + seconds
    cpu_start, server_start = time.process_time(), _backend_cpu(dsn, name)
    while time.monotonic() < deadline:
        written = store.write_checkpoint(
            stream, generation, Checkpoint("A", Cut.through(offset), str(offset), 1, "q", 1)
        )
        assert written.checkpoint is not None
        generation = written.checkpoint.generation
        offset += 1
        result = store.attempt(publisher)
        if result.outcome is not Outcome.PUBLISHED:
            raise SystemExit(f"w{index}: attempt ended {result.outcome.value}: {result.detail}")
    server_end = _backend_cpu(dsn, name)
    cpu = {
        "client_s": time.process_time() - cpu_start,
        "server_s": None
        if server_start is None or server_end is None
        else server_end - server_start,
    }
    (Path(folder) / f"w{index}.cpu").write_text(json.dumps(cpu))
    store.close()
    sink.close()


def _backend_cpu(dsn: str, application_name: str) -> float | None:
    """CPU seconds used so far by the server backends serving ``application_name``
    (None when the server is not on this machine)."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        pids = [
            r[0]
            for r in conn.execute(
                "SELECT pid FROM pg_stat_activity WHERE application_name = %s", (application_name,)
            )
        ]
    total = 0.0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            return None
        total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total if pids else None


def _ms(ns: list[float], q: float) -> float:
    if not ns:
        return float("nan")
    ordered = sorted(ns)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] / 1e6


def run(dsn: str, processes: int, seconds: float) -> dict[str, Any]:
    schema = f"bench_{uuid.uuid4().hex[:10]}"
    setup = PostgresStore(dsn, schema=schema)
    for i in range(processes):
        setup.create_stream(f"b{i}", MEMBERSHIP)
    setup.close()
    folder = tempfile.mkdtemp(prefix="fencepost-bench-")
    ctx = multiprocessing.get_context("forkserver")
    start_at = time.monotonic() + 2.0 + 0.2 * processes
    procs = [
        ctx.Process(target=worker, args=(dsn, schema, i, folder, start_at, seconds))
        for i in range(processes)
    ]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    if any(p.exitcode != 0 for p in procs):
        raise SystemExit(f"a publisher process failed: exit codes {[p.exitcode for p in procs]}")
    ops = list(read_ops(sorted(Path(folder).glob("*.jsonl"))))
    cpus = [json.loads(p.read_text()) for p in Path(folder).glob("*.cpu")]
    shutil.rmtree(folder)
    anomalies = audit_ops(list(ops)).violations
    client_cpu = sum(c["client_s"] for c in cpus)
    server_cpu = (
        None if any(c["server_s"] is None for c in cpus) else sum(c["server_s"] for c in cpus)
    )
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA {quote_ident(schema)} CASCADE")
    first = min(op.t0 for op in ops)
    last = max(op.t1 for op in ops if op.status is Status.OK)
    elapsed = (last - first) / 1e9

    def done(kind: str) -> list[Op]:
        return [o for o in ops if o.kind == kind and o.status is Status.OK]

    publishes = done("write_publication")
    checkpoints = done("write_checkpoint")
    attempts = [o for o in done("attempt") if o.result["outcome"] == "published"]
    return {
        "processes": processes,
        "seconds": round(elapsed, 2),
        "publishes_per_s": round(len(publishes) / elapsed, 1),
        "checkpoint_writes_per_s": round(len(checkpoints) / elapsed, 1),
        "publish_attempt_ms_p50": round(_ms([o.t1 - o.t0 for o in attempts], 0.5), 2),
        "publish_attempt_ms_p99": round(_ms([o.t1 - o.t0 for o in attempts], 0.99), 2),
        "publication_write_ms_p50": round(_ms([o.t1 - o.t0 for o in publishes], 0.5), 2),
        "publication_write_ms_p99": round(_ms([o.t1 - o.t0 for o in publishes], 0.99), 2),
        "checkpoint_write_ms_p50": round(_ms([o.t1 - o.t0 for o in checkpoints], 0.5), 2),
        "checkpoint_write_ms_p99": round(_ms([o.t1 - o.t0 for o in checkpoints], 0.99), 2),
        "client_cpu_ms_per_publish": round(1000 * client_cpu / max(1, len(publishes)), 3),
        "server_cpu_ms_per_publish": None
        if server_cpu is None
        else round(1000 * server_cpu / max(1, len(publishes)), 3),
        "store_operations": len(ops) - len(attempts),
        "anomalies": len(anomalies),
        "first_anomalies": [f"{a.property}: {a.message}" for a in anomalies[:5]],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--dsn",
        default=os.environ.get(DSN_ENV, ""),
        help=f"PostgreSQL URL (default ${DSN_ENV}; unset: a throwaway pgserver)",
    )
    parser.add_argument("--processes", type=int, nargs="+", default=[1, 4, 8])
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--json", action="store_true", help="one JSON object per configuration")
    args = parser.parse_args(argv)
    dsn = args.dsn
    server = None
    if not dsn:
        from pgserver.postgres_server import get_server

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # platformdirs: XDG_RUNTIME_DIR unset
            server = get_server(
                tempfile.mkdtemp(prefix="fencepost-bench-pg-"), cleanup_mode="delete"
            )
        dsn = server.get_uri()
    where = "pgserver (Unix socket)" if server else dsn.split("@")[-1]
    results = [run(dsn, n, args.seconds) for n in args.processes]
    if args.json:
        for r in results:
            print(json.dumps(r))
    else:
        from rich.console import Console
        from rich.table import Table

        table = Table(
            title=f"PostgreSQL at {where}: {args.seconds:g}s per run, {os.cpu_count()} CPUs, "
            "synchronous_commit=on, every call recorded, history checked"
        )
        for column in (
            "procs",
            "publishes/s",
            "checkpoint writes/s",
            "attempt ms p50/p99",
            "publication write ms p50/p99",
            "checkpoint write ms p50/p99",
            "CPU ms/publish client+server",
            "store ops",
            "anomalies",
        ):
            table.add_column(column, justify="right")
        for r in results:
            server = r["server_cpu_ms_per_publish"]
            table.add_row(
                str(r["processes"]),
                f"{r['publishes_per_s']:.0f}",
                f"{r['checkpoint_writes_per_s']:.0f}",
                f"{r['publish_attempt_ms_p50']:.2f} / {r['publish_attempt_ms_p99']:.2f}",
                f"{r['publication_write_ms_p50']:.2f} / {r['publication_write_ms_p99']:.2f}",
                f"{r['checkpoint_write_ms_p50']:.2f} / {r['checkpoint_write_ms_p99']:.2f}",
                f"{r['client_cpu_ms_per_publish']:.2f} + "
                + ("?" if server is None else f"{server:.2f}"),
                str(r["store_operations"]),
                str(r["anomalies"]),
            )
        console = Console(width=200)
        console.print(table)
        load = os.getloadavg()
        console.print(
            f"load average after the runs: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} "
            f"on {os.cpu_count()} CPUs (other work on the machine shares them)"
        )
        for r in results:
            for line in r["first_anomalies"]:
                console.print(f"anomaly ({r['processes']} processes): {line}")
    return 1 if any(r["anomalies"] for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
