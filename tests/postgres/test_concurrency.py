"""Real concurrency on PostgreSQL: 8 publisher and 4 reader processes on one stream.

Every store call of every process is recorded with invocation and completion
times on the shared monotonic clock; the history is then checked for
linearizability of the publication record and of every checkpoint (as
version-conditional registers, indefinite operations as may-have-applied) and
for the docs/semantics.md section 7 properties by the audit (fencepost.audit), with
the workload's ground truth for soundness. Zero violations are expected; the
teeth: one read of the same history made stale must be reported (the audit's own
teeth are in tests/audit).
"""

from __future__ import annotations

import multiprocessing
from dataclasses import replace
from pathlib import Path

import pytest
from lengths import Length
from pg_server import drop_schema, fresh_schema

from fencepost.audit.log import read_ops
from fencepost.audit.ops import Op, Status
from fencepost.audit.run import audit_ops
from fencepost.audit.verdict import Violation
from fencepost.impl.open import open_store
from fencepost.impl.records import PublicationRecord
from fencepost.properties.workload import (
    Workload,
    count_attempts,
    publisher_process,
    reader_process,
)

pytestmark = pytest.mark.postgres

PUBLISHERS = 8
READERS = 4
#: Each publisher keeps attempting until the final cut is out and it made this many.
MIN_ATTEMPTS = 400


def pg_location(dsn: str, schema: str) -> str:
    sep = "&" if "?" in dsn else "?"
    return f"{dsn}{sep}fencepost_schema={schema}"


def run_workload(workload: Workload, folder: Path, seconds: float, lost: float) -> list[Op]:
    """Create the stream, run the processes to completion, return the loaded history."""
    setup = open_store(workload.location)
    setup.create_stream(workload.stream, workload.membership())
    setup.close()
    ctx = multiprocessing.get_context("forkserver")
    procs = [
        ctx.Process(
            target=publisher_process,
            args=(workload, f"pub{i}", str(folder), seconds, lost, i, "monotone", MIN_ATTEMPTS),
        )
        for i in range(PUBLISHERS)
    ] + [
        ctx.Process(
            target=reader_process, args=(workload, f"read{i}", str(folder), seconds, lost, 100 + i)
        )
        for i in range(READERS)
    ]
    for p in procs:
        p.start()
    for p in procs:
        p.join(seconds + 60)
    assert all(p.exitcode == 0 for p in procs), [p.exitcode for p in procs]
    return list(read_ops(sorted(folder.glob("*.jsonl"))))


def check_history(ops: list[Op], workload: Workload) -> list[Violation]:
    """Every violation the audit finds, soundness judged against the workload's truth."""
    return audit_ops(list(ops), truth=lambda _stream: workload.truth()).violations


def stale_read_mutant(ops: list[Op]) -> list[Op] | None:
    """The history with one read made stale: it returns the record before the last write
    that had completed before the read began. None if the run has no such read."""
    written = [o for o in ops if o.kind == "write_publication" and o.status is Status.OK]
    for read in ops:
        if read.kind != "read_publication" or read.status is not Status.OK:
            continue
        revision = read.result.revision
        done = [w for w in written if w.result.revision == revision and w.t1 < read.t0]
        before = [w for w in written if w.result.revision == revision - 1]
        if done and before:
            stale = replace(read, result=before[0].result)
            return [stale if o is read else o for o in ops]
    return None


def check_run(pg_dsn: str, tmp_path: Path, coordinates: int, seconds: float, lost: float) -> None:
    schema = fresh_schema(pg_dsn, "conc")
    try:
        workload = Workload(pg_location(pg_dsn, schema), coordinates=coordinates, seed=7)
        ops = run_workload(workload, tmp_path, seconds, lost)
        anomalies = check_history(ops, workload)
        counts = count_attempts(ops)
        attempts = sum(counts.values())
        store_ops = sum(1 for op in ops if op.kind != "attempt")
        indefinite = sum(1 for op in ops if op.status is Status.INDEFINITE)
        print(
            f"\n{PUBLISHERS} publishers + {READERS} readers, lost responses {lost:.0%}: "
            f"{attempts} attempts {dict(sorted(counts.items()))}, {store_ops} store operations "
            f"({indefinite} indefinite), anomalies: {len(anomalies)}"
        )
        for anomaly in anomalies[:20]:
            print("  ", anomaly.property, anomaly.message)
        assert anomalies == []
        assert attempts >= PUBLISHERS * MIN_ATTEMPTS, (
            "the run must be concurrent enough to mean something"
        )
        assert counts.get("published", 0) >= 5
        final = open_store(workload.location)
        try:
            record = final.read_publication(workload.stream)
        finally:
            final.close()
        # Progress: everything was ingested and the final frontier published.
        assert record.epoch == 1 and record.cut == workload.final_cut
        assert isinstance(record, PublicationRecord)
        if lost:
            assert indefinite > 0 and counts.get("confirmed", 0) + counts.get("published", 0) > 0
        # Teeth on this very history: one read made stale must be caught.
        mutant = stale_read_mutant(ops)
        assert mutant is not None
        kinds = {a.property for a in check_history(mutant, workload)}
        assert "linearizability" in kinds, kinds
    finally:
        drop_schema(pg_dsn, schema)


def test_eight_publishers_four_readers_zero_anomalies(pg_dsn: str, tmp_path: Path) -> None:
    check_run(pg_dsn, tmp_path, coordinates=60, seconds=90, lost=0.0)


def test_with_lost_responses_zero_anomalies(pg_dsn: str, tmp_path: Path) -> None:
    """5% of responses lost (half after the write applied): indefinite ops may-have-applied."""
    check_run(pg_dsn, tmp_path, coordinates=60, seconds=90, lost=0.05)


@pytest.mark.slow
def test_eight_publishers_four_readers_long_run(
    pg_dsn: str, tmp_path: Path, length: Length
) -> None:
    coordinates = length.pick(full=300, bounded=150)
    check_run(pg_dsn, tmp_path, coordinates=coordinates, seconds=300, lost=0.02)
