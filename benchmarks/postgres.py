"""Durable publishes/s on PostgreSQL at 1, 4 and 8 processes, against the same statements.

Each process owns one stream (one partition) and loops: write the partition's
checkpoint one offset further (conditional on its generation), then run one full
:meth:`Publisher.attempt` (read the record, the current membership and the
epoch's checkpoints; decide; write the record conditionally), which publishes
the new cut. Every store call is recorded in the audit log format
(:class:`~fencepost.impl.recording.RecordingStore`: an audited publisher reads
the whole checkpoint vector, so that the audit sees what it decided from) and
the whole history is audited (``fencepost audit``'s checks: linearizability
and docs/semantics.md section 7) before the figures are printed: 0 anomalies
is part of the result. (The unrecorded summary read is measured, against the
same baseline, in ``benchmarks/scale.py``.)

The baseline, in the same run, alternating with fencepost at each process count:
the same processes issuing **the same five statements** per cycle through psycopg
on one connection each, with server-side prepared statements (``prepare=True``)
and nothing else (no pool, no deadline, no recording, no decision). The
statements are captured from a fencepost cycle first and compared: a baseline
issuing other statements is refused. A publish is durable on both sides: every
commit waits for the write-ahead log flush (``synchronous_commit=on``).

    python benchmarks/postgres.py                       # $FENCEPOST_DATABASE_URL or pgserver
    python benchmarks/postgres.py --dsn postgresql://postgres@127.0.0.1:5432/test
    python benchmarks/postgres.py --processes 8 --seconds 10 --json

Target: fencepost's publishes/s >= 50% of the baseline's cycles/s at each count.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from decimal import Decimal
from pathlib import Path
from typing import Any

import psycopg
from baseline import StatementLog, postgres_dsn

from fencepost.audit.log import read_ops
from fencepost.audit.ops import Op, Status
from fencepost.audit.run import audit_ops
from fencepost.impl.cutkey import cut_key
from fencepost.impl.cuts import Cut
from fencepost.impl.orders import IntegerOrder
from fencepost.impl.postgres import PostgresStore
from fencepost.impl.postgres_schema import quote_ident
from fencepost.impl.publisher import Outcome, Publisher
from fencepost.impl.recording import LogWriter, RecordingStore
from fencepost.impl.records import Checkpoint, Membership

ORDER = IntegerOrder("offsets", successor_exact=True)
MEMBERSHIP = Membership(1, "q", {"A": "offsets"}, {"offsets": ORDER})


def _start(barrier: Any, seconds: float) -> tuple[float, float]:
    """Wait until every process of the run is ready (connected, set up), then start
    together: ``(start, deadline)``. A fixed head start was not enough on a loaded
    machine (processes still importing when the window had closed)."""
    barrier.wait(timeout=300)
    start = time.monotonic()
    return start, start + seconds


# --- fencepost ------------------------------------------------------------------------------


def fencepost_worker(
    dsn: str, schema: str, index: int, folder: str, barrier: Any, seconds: float
) -> None:
    """One publisher process: advance its checkpoint, publish, repeat until time is up."""
    stream = f"b{index}"
    sink = LogWriter(Path(folder) / f"w{index}.jsonl")
    name = f"fpbench-{schema}-{index}"
    inner = PostgresStore(dsn, schema=schema, max_connections=1, application_name=name)
    store = RecordingStore(inner, sink, f"w{index}")
    publisher = Publisher(store, stream, f"w{index}")
    generation: int | None = None
    offset = 0
    _, deadline = _start(barrier, seconds)
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


# --- the baseline: the same statements, raw psycopg, prepared ------------------------------


def capture_statements(dsn: str) -> dict[str, str]:
    """The five statements of one fencepost cycle (checkpoint write + attempt), by role."""
    schema = f"bench_{uuid.uuid4().hex[:10]}"
    store = PostgresStore(dsn, schema=schema)
    try:
        store.create_stream("probe", MEMBERSHIP)
        store.write_checkpoint("probe", None, Checkpoint("A", Cut.through(0), "0", 1, "q", 1))
        folder = tempfile.mkdtemp(prefix="fencepost-bench-probe-")
        writer = LogWriter(Path(folder) / "probe.jsonl")
        recorded = RecordingStore(store, writer, "probe")
        log = StatementLog()
        with log.capture_postgres():
            recorded.write_checkpoint("probe", 1, Checkpoint("A", Cut.through(1), "1", 2, "q", 1))
            published = recorded.attempt(Publisher(recorded, "probe", "w"))
        assert published.outcome is Outcome.PUBLISHED
        writer.close()
        shutil.rmtree(folder)
    finally:
        store.close()
        _drop(dsn, schema)
    checkpoint, record, epoch, checkpoints, publication = log.statements
    return {
        "checkpoint": checkpoint,
        "record": record,
        "epoch": epoch,
        "checkpoints": checkpoints,
        "publication": publication,
    }


def _for_schema(statements: dict[str, str], schema: str) -> dict[str, str]:
    """The captured statements (made on a probe schema) for ``schema``."""
    probe = statements["record"].split(".publications")[0].split("FROM ")[-1]
    return {k: v.replace(probe + ".", quote_ident(schema) + ".") for k, v in statements.items()}


def baseline_worker(
    dsn: str,
    schema: str,
    statements: dict[str, str],
    index: int,
    folder: str,
    barrier: Any,
    seconds: float,
) -> None:
    """One process: the same five statements per cycle, one connection, prepared."""
    sql = _for_schema(statements, schema)
    stream = f"b{index}".encode()
    conn = psycopg.connect(dsn, autocommit=True)
    conn.execute("SET synchronous_commit = on")
    generation, offset, cycles = 1, 1, 0  # the stored checkpoint is generation 1
    write_id = uuid.uuid4()
    first, deadline = _start(barrier, seconds)
    while time.monotonic() < deadline:
        cut = Cut.through(offset)
        rows = conn.execute(
            sql["checkpoint"],
            {
                "stream": stream,
                "epoch": Decimal(1),
                "partition": b"A",
                "kind": "through",
                "at_int": Decimal(offset),
                "at_str": None,
                "token": str(offset).encode(),
                "generation": generation + 1,
                "scope": b"q",
                "finality": "final",
                "sort_key": cut_key(ORDER, cut),
                "scope_ok": True,
                "write_id": write_id,
                "expected": generation,
            },
            prepare=True,
        ).fetchall()
        assert rows and rows[0][0], rows
        generation += 1
        record = conn.execute(sql["record"], (stream,), prepare=True).fetchone()
        assert record is not None
        conn.execute(sql["epoch"], (stream,), prepare=True).fetchone()
        conn.execute(sql["checkpoints"], (Decimal(1), stream), prepare=True).fetchall()
        rows = conn.execute(
            sql["publication"],
            {
                "stream": stream,
                "epoch": Decimal(1),
                "kind": "through",
                "at_int": Decimal(offset),
                "at_str": None,
                "op_id": f"raw-{offset}".encode(),
                "expected": record[4],
            },
            prepare=True,
        ).fetchall()
        assert rows and rows[0][0], rows
        offset += 1
        cycles += 1
    elapsed = time.monotonic() - first
    conn.close()
    (Path(folder) / f"r{index}.json").write_text(json.dumps({"cycles": cycles, "s": elapsed}))


# --- runs ----------------------------------------------------------------------------------


def _setup(dsn: str, processes: int, first_generation: bool) -> str:
    schema = f"bench_{uuid.uuid4().hex[:10]}"
    setup = PostgresStore(dsn, schema=schema)
    for i in range(processes):
        setup.create_stream(f"b{i}", MEMBERSHIP)
        if first_generation:  # the baseline starts from a stored checkpoint (generation 1)
            setup.write_checkpoint(f"b{i}", None, Checkpoint("A", Cut.nothing(), None, 1, "q", 1))
    setup.close()
    return schema


def _drop(dsn: str, schema: str) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA {quote_ident(schema)} CASCADE")


def _spawn(target: Any, args_of: Any, processes: int) -> None:
    """Run ``target(*args_of(i, barrier))`` in ``processes`` processes that start together."""
    ctx = multiprocessing.get_context("forkserver")
    barrier = ctx.Barrier(processes)
    procs = [ctx.Process(target=target, args=args_of(i, barrier)) for i in range(processes)]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    if any(p.exitcode != 0 for p in procs):
        raise SystemExit(f"a benchmark process failed: exit codes {[p.exitcode for p in procs]}")


def run_fencepost(dsn: str, processes: int, seconds: float) -> dict[str, Any]:
    schema = _setup(dsn, processes, first_generation=False)
    folder = tempfile.mkdtemp(prefix="fencepost-bench-")
    try:
        _spawn(
            fencepost_worker,
            lambda i, barrier: (dsn, schema, i, folder, barrier, seconds),
            processes,
        )
        ops = list(read_ops(sorted(Path(folder).glob("*.jsonl"))))
        cpus = [json.loads(p.read_text()) for p in Path(folder).glob("*.cpu")]
    finally:
        shutil.rmtree(folder)
        _drop(dsn, schema)
    anomalies = audit_ops(list(ops)).violations
    client_cpu = sum(c["client_s"] for c in cpus)
    server_cpu = (
        None if any(c["server_s"] is None for c in cpus) else sum(c["server_s"] for c in cpus)
    )
    first = min(op.t0 for op in ops)
    last = max(op.t1 for op in ops if op.status is Status.OK)
    elapsed = (last - first) / 1e9

    def done(kind: str) -> list[Op]:
        return [o for o in ops if o.kind == kind and o.status is Status.OK]

    publishes = done("write_publication")  # OK means applied (a lost race is "conflict")
    attempts = [o for o in done("attempt") if o.result["outcome"] == "published"]
    return {
        "publishes_per_s": len(publishes) / elapsed,
        "attempt_ms_p50": _ms([o.t1 - o.t0 for o in attempts], 0.5),
        "attempt_ms_p99": _ms([o.t1 - o.t0 for o in attempts], 0.99),
        "client_cpu_ms_per_publish": 1000 * client_cpu / max(1, len(publishes)),
        "server_cpu_ms_per_publish": None
        if server_cpu is None
        else 1000 * server_cpu / max(1, len(publishes)),
        "store_operations": len(ops) - len(attempts),
        "anomalies": len(anomalies),
        "first_anomalies": [f"{a.property}: {a.message}" for a in anomalies[:5]],
    }


def run_baseline(
    dsn: str, statements: dict[str, str], processes: int, seconds: float
) -> dict[str, Any]:
    schema = _setup(dsn, processes, first_generation=True)
    folder = tempfile.mkdtemp(prefix="fencepost-bench-raw-")
    try:
        _spawn(
            baseline_worker,
            lambda i, barrier: (dsn, schema, statements, i, folder, barrier, seconds),
            processes,
        )
        runs = [json.loads(p.read_text()) for p in Path(folder).glob("r*.json")]
    finally:
        shutil.rmtree(folder)
        _drop(dsn, schema)
    return {"cycles_per_s": sum(r["cycles"] / r["s"] for r in runs)}


def _ms(ns: list[float], q: float) -> float:
    if not ns:
        return float("nan")
    ordered = sorted(ns)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] / 1e6


def measure(
    dsn: str, statements: dict[str, str], processes: int, seconds: float, rounds: int
) -> dict[str, Any]:
    """``rounds`` runs of each, alternating; the median of the per-round ratios."""
    ours: list[dict[str, Any]] = []
    theirs: list[float] = []
    for r in range(rounds):
        if r % 2:
            theirs.append(run_baseline(dsn, statements, processes, seconds)["cycles_per_s"])
            ours.append(run_fencepost(dsn, processes, seconds))
        else:
            ours.append(run_fencepost(dsn, processes, seconds))
            theirs.append(run_baseline(dsn, statements, processes, seconds)["cycles_per_s"])
    rates = [o["publishes_per_s"] for o in ours]
    ratios = [a / b for a, b in zip(rates, theirs, strict=True)]
    best = ours[rates.index(statistics.median_high(rates))]
    return {
        "processes": processes,
        "publishes_per_s": round(statistics.median(rates), 1),
        "baseline_cycles_per_s": round(statistics.median(theirs), 1),
        "ratio": round(statistics.median(ratios), 3),
        "ratio_min": round(min(ratios), 3),
        "ratio_max": round(max(ratios), 3),
        "attempt_ms_p50": round(best["attempt_ms_p50"], 2),
        "attempt_ms_p99": round(best["attempt_ms_p99"], 2),
        "client_cpu_ms_per_publish": round(best["client_cpu_ms_per_publish"], 3),
        "server_cpu_ms_per_publish": None
        if best["server_cpu_ms_per_publish"] is None
        else round(best["server_cpu_ms_per_publish"], 3),
        "store_operations": sum(o["store_operations"] for o in ours),
        "anomalies": sum(o["anomalies"] for o in ours),
        "first_anomalies": [a for o in ours for a in o["first_anomalies"]][:5],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dsn", default=None, help="PostgreSQL URL (default: see above)")
    parser.add_argument("--processes", type=int, nargs="+", default=[1, 4, 8])
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--rounds", type=int, default=2, help="runs of each, alternating")
    parser.add_argument("--json", action="store_true", help="one JSON object per configuration")
    args = parser.parse_args(argv)
    dsn, where = postgres_dsn(args.dsn)
    statements = capture_statements(dsn)
    results = [measure(dsn, statements, n, args.seconds, args.rounds) for n in args.processes]
    if args.json:
        for r in results:
            print(json.dumps(r))
    else:
        print(
            f"PostgreSQL at {where}: {args.seconds:g}s per run, {args.rounds} run(s) of each, "
            f"{os.cpu_count()} CPUs, synchronous_commit=on; fencepost's every call recorded "
            "and the history audited; baseline = the same 5 statements per cycle, psycopg, "
            "prepared, one connection per process"
        )
        print(
            f"{'procs':>5} {'publishes/s':>12} {'baseline/s':>11} {'ratio':>14} "
            f"{'attempt ms p50/p99':>19} {'CPU ms/publish cl+srv':>22} {'anomalies':>9}"
        )
        for r in results:
            server = r["server_cpu_ms_per_publish"]
            print(
                f"{r['processes']:>5} {r['publishes_per_s']:>12,.0f} "
                f"{r['baseline_cycles_per_s']:>11,.0f} "
                f"{r['ratio']:>5.2f} ({r['ratio_min']:.2f}-{r['ratio_max']:.2f}) "
                f"{r['attempt_ms_p50']:>9.2f} / {r['attempt_ms_p99']:<7.2f} "
                f"{r['client_cpu_ms_per_publish']:>10.2f} + "
                f"{'?' if server is None else f'{server:.2f}':<9} {r['anomalies']:>9}"
            )
        load = os.getloadavg()
        print(f"load average after the runs: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
        for r in results:
            for line in r["first_anomalies"]:
                print(f"anomaly ({r['processes']} processes): {line}")
    ok = all(r["anomalies"] == 0 for r in results)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
