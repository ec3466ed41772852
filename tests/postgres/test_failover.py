"""Failover to a streaming standby under load: what a published frontier does, and what
``fencepost audit`` and the publisher's guard say about it.

Each run builds a primary and a standby of its own on loopback
(``tests/postgres/replication.py``: ``initdb``, ``pg_basebackup -R``), runs
publisher and reader processes with every store call recorded
(``tests/postgres/failover_workers.py``), kills the primary with SIGKILL while a
publication write is in flight, promotes the standby (``pg_ctl promote``) and
points the workers at it (a new URL). Every phase waits on a condition: a number
of publications acknowledged in the workers' logs, the standby's replay LSN, the
WAL receiver gone, promotion finished.

- **Asynchronous** replication, made to lose deterministically: once the standby
  has replayed the first publications its WAL receiver is stopped, the primary
  goes on acknowledging at least ``K`` more, then dies. The promoted standby's record
  is exactly the one it had replayed: every publication acknowledged after it is
  gone (counted), the published frontier goes back, the workers' next
  publications reuse the lost revisions (a fork), the guarded publisher refuses
  the store (``StoreRegressed``, naming what it saw and what the store says), and
  ``fencepost audit`` of the recorded logs exits 1 with a linearizability finding.
- **Synchronous** replication (``synchronous_standby_names`` + ``synchronous_commit
  = on``), same kill at the same point: nothing acknowledged is lost (record,
  checkpoints, outcomes), nobody refuses, and the audit is clean (exit 0).
- **Synchronous, waits cancelled** (``slow``): replication cut as in the asynchronous
  run and every commit waiting for the standby cancelled (``pg_cancel_backend``):
  PostgreSQL acknowledges them, and they are lost exactly as asynchronously.

The fast forms run 3 + 4 + 3 publications; ``test_failover_under_more_load``
(``--run-slow``) runs the three with 40 (``--full-length``: 200), more workers.

One publisher of each run is guarded (``FrontierGuard``), one is not: the guard
refuses exactly where the store went back, and never otherwise.
"""

from __future__ import annotations

import json
import multiprocessing
import re
import time
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any

import psycopg
import pytest
from click.testing import CliRunner
from failover_workers import Run, open_at, publish_url, publisher_worker, reader_worker
from lengths import Length
from replication import ReplicatedPostgres, wait_for

from fencepost.cli import main
from fencepost.impl.codec import cut_from_json, record_to_json
from fencepost.impl.cuts import compare_cuts
from fencepost.impl.postgres_schema import quote_ident
from fencepost.impl.recording import LogWriter, RecordingStore
from fencepost.properties.workload import ORDER, Workload

SCHEMA = "failover"
GUARDED = "pub-guarded"
PLAIN = "pub-plain"


@dataclass(frozen=True)
class Size:
    """How much runs before and after the failover (publications acknowledged)."""

    before: int  # replicated to the standby before anything else happens
    after_cut: int  # acknowledged by the primary alone (asynchronous) / more (synchronous)
    after_failover: int  # acknowledged by the new primary
    readers: int = 2
    plain: int = 1  # unguarded publishers besides the one guarded


FAST = Size(before=3, after_cut=4, after_failover=3)


# --- what the workers' logs say so far ------------------------------------------------------


@dataclass
class Ack:
    """One acknowledged write, as its worker logged it."""

    worker: str
    t0: int
    result: dict[str, Any]


@dataclass
class History:
    """The workers' audit logs, read incrementally (complete lines only)."""

    folder: Path
    offsets: dict[Path, int] = field(default_factory=dict)
    publications: list[Ack] = field(default_factory=list)
    outcomes: list[Ack] = field(default_factory=list)
    #: (completion time, partition, generation) of every checkpoint a call returned.
    checkpoints: list[tuple[int, str, int]] = field(default_factory=list)
    seen: dict[str, int] = field(default_factory=dict)  # worker -> highest revision answered

    def refresh(self) -> History:
        for path in sorted(self.folder.glob("*.jsonl")):
            start = self.offsets.get(path, 0)
            with path.open("rb") as f:
                f.seek(start)
                data = f.read()
            end = data.rfind(b"\n") + 1
            self.offsets[path] = start + end
            for raw in data[:end].splitlines():
                self._line(json.loads(raw))
        return self

    def _line(self, x: dict[str, Any]) -> None:
        op, status = x["op"], x["status"]
        if status not in ("ok", "conflict"):
            return
        result = x["result"]
        if op in ("read_publication", "write_publication"):
            worker = x["worker"]
            self.seen[worker] = max(self.seen.get(worker, -1), result["revision"])
        elif op in ("read_checkpoint", "read_checkpoints", "write_checkpoint"):
            shown = result if isinstance(result, list) else [] if result is None else [result]
            for c in shown:
                self.checkpoints.append((x["t1"], c["partition"], c["generation"]))
        if status != "ok":
            return
        if op == "write_publication":
            self.publications.append(Ack(x["worker"], x["t0"], result))
        elif op == "record_outcome":
            self.outcomes.append(Ack(x["worker"], x["t0"], {"event_id": x["args"]["event_id"]}))

    def revisions(self, before_ns: int | None = None, after_ns: int | None = None) -> list[int]:
        """Acknowledged publication revisions (invoked before/after a time), sorted."""
        return sorted(
            a.result["revision"]
            for a in self.publications
            if (before_ns is None or a.t0 < before_ns) and (after_ns is None or a.t0 > after_ns)
        )

    def writers(self, revision: int) -> list[str]:
        """The op_ids of every write acknowledged as ``revision``, in log order."""
        return [a.result["op_id"] for a in self.publications if a.result["revision"] == revision]

    def generations(self, before_ns: int) -> dict[str, int]:
        """Per partition, the highest checkpoint generation any call returned before a time."""
        out: dict[str, int] = {}
        for t1, partition, generation in self.checkpoints:
            if t1 < before_ns:
                out[partition] = max(out.get(partition, 0), generation)
        return out


# --- one run ----------------------------------------------------------------------------------


@dataclass
class Outcome:
    """What one failover run showed (printed, and asserted by the tests)."""

    mode: Mode
    replicated: int  # revision the standby had replayed before the cut (async) / the kill
    at_most: int | None  # the most the standby can hold once replication was cut
    primary: dict[str, Any]  # the last record the primary acknowledged (revision R_p)
    promoted: dict[str, Any]  # the promoted standby's record
    acked_before: list[int]  # publication revisions acknowledged before the failover
    lost: list[int]  # of those, the revisions the promoted standby does not hold
    lost_checkpoints: dict[str, tuple[int, int]]  # partition -> (seen, promoted) generation
    lost_outcomes: int
    acked_after: list[int]
    reused: dict[int, list[str]]  # revision -> the op_ids acknowledged as it, when several
    writers: dict[int, list[str]]  # revision -> the op_ids acknowledged as it
    after_by: set[str]  # the workers whose writes the new primary acknowledged
    refusals: dict[str, dict[str, Any]]
    blocked_write_pid: int
    audit: dict[str, Any]
    audit_text: str
    seconds: dict[str, float]

    def summary(self) -> str:
        mode = self.mode.value
        verdict = sorted({v["property"] for v in self.audit["violations"]})
        return (
            f"{mode}: {len(self.acked_before)} publications acknowledged before the failover "
            f"(primary at revision {self.primary['revision']}), promoted standby at revision "
            f"{self.promoted['revision']}: {len(self.lost)} acknowledged publication(s) lost "
            f"{self.lost}; checkpoints whose seen generation is lost (seen, promoted): "
            f"{self.lost_checkpoints}; {self.lost_outcomes} acknowledged outcome(s) lost; "
            f"{len(self.acked_after)} acknowledged "
            f"after; revisions acknowledged twice: {self.reused}; refusals: "
            f"{ {w: r['problem'] for w, r in self.refusals.items()} }; audit exit "
            f"{self.audit['exit']} {verdict}; seconds {self.seconds}"
        )


def _lock_publications(conn: psycopg.Connection[Any]) -> int:
    """Hold every publication write on the primary (reads pass); the revision then stored."""
    conn.execute(f"LOCK TABLE {quote_ident(SCHEMA)}.publications IN EXCLUSIVE MODE")
    row = conn.execute(f"SELECT revision FROM {quote_ident(SCHEMA)}.publications").fetchone()
    assert row is not None
    return int(row[0])


def _blocked_writer(conn: psycopg.Connection[Any]) -> int | None:
    rows = conn.execute(
        "SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
        "AND datname = current_database() AND pid <> pg_backend_pid()"
    ).fetchall()
    return int(rows[0][0]) if rows else None


class Mode(Enum):
    """How the primary replicates, and whether its waits for the standby are cancelled."""

    ASYNCHRONOUS = "asynchronous"
    SYNCHRONOUS = "synchronous"
    #: Synchronous, but every commit waiting for the (cut) standby is cancelled
    #: (``pg_cancel_backend``): PostgreSQL then commits locally and acknowledges.
    CANCELLED = "synchronous, waits cancelled"


_PUBLICATION_WRITE = f"%UPDATE {quote_ident(SCHEMA)}.publications p%"


def _cancel_sync_waits(conn: psycopg.Connection[Any], *, publications: bool = True) -> None:
    """Cancel every commit waiting for the standby (but publication writes, if told)."""
    conn.execute(
        "SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE wait_event = 'SyncRep' "
        "AND (%s OR query NOT LIKE %s)",
        (publications, _PUBLICATION_WRITE),
    )


def _publication_waiting_for_standby(conn: psycopg.Connection[Any]) -> int | None:
    rows = conn.execute(
        "SELECT pid FROM pg_stat_activity WHERE wait_event = 'SyncRep' AND query LIKE %s",
        (_PUBLICATION_WRITE,),
    ).fetchall()
    return int(rows[0][0]) if rows else None


def failover_run(tmp_path: Path, *, mode: Mode, size: Size) -> Outcome:
    clock: dict[str, float] = {"start": time.monotonic()}
    synchronous = mode is not Mode.ASYNCHRONOUS
    cluster = ReplicatedPostgres(synchronous=synchronous)
    procs: list[multiprocessing.process.BaseProcess] = []
    control = tmp_path / "control"
    history_dir = tmp_path / "history"
    control.mkdir()
    history_dir.mkdir()
    try:
        # The workers start first (importing takes seconds on a busy machine) and wait
        # for the URL, published once the servers run and the stream exists.
        workload = Workload(cluster.primary.url(SCHEMA), coordinates=3000, seed=21)
        run = Run(workload, str(history_dir), str(control))
        ctx = multiprocessing.get_context("forkserver")
        publishers = [(GUARDED, True)] + [(f"{PLAIN}-{i}", False) for i in range(size.plain)]
        for n, (name, guarded) in enumerate(publishers):
            procs.append(ctx.Process(target=publisher_worker, args=(run, name, guarded, n)))
        for i in range(size.readers):
            procs.append(ctx.Process(target=reader_worker, args=(run, f"reader-{i}", 100 + i)))
        for proc in procs:
            proc.start()
        cluster.start()
        clock["cluster up"] = time.monotonic()
        primary, standby = cluster.primary, cluster.standby
        # The stream's creation is recorded too, so the audit starts from a known state.
        setup_log = LogWriter(history_dir / "setup.jsonl")
        setup = RecordingStore(open_at(primary.url(SCHEMA)), setup_log, "setup")
        setup.create_stream(workload.stream, workload.membership())
        setup.close()
        setup_log.close()
        publish_url(control, primary.url(SCHEMA))
        history = History(history_dir)

        # 1. The first publications, replayed by the standby.
        wait_for(
            f"{size.before} publications acknowledged by the primary",
            lambda: len(history.refresh().publications) >= size.before,
        )
        cluster.wait_replayed()
        replicated = standby.record(SCHEMA, workload.stream)[0]
        assert replicated >= size.before
        clock["replicated"] = time.monotonic()

        # 2. Asynchronous: cut replication; the primary goes on alone. Cancelled: cut it
        #    too, and cancel every commit that waits for the standby, as it waits.
        at_most: int | None = None
        if mode is not Mode.SYNCHRONOUS:
            cluster.cut_replication()
            # The most the standby can hold: what the primary showed once nothing flowed,
            # and (cancelled) one more: a publication that waited for the standby then,
            # shown by nobody yet, may have reached it.
            at_most = primary.record(SCHEMA, workload.stream)[0]
            at_most += 1 if mode is Mode.CANCELLED else 0
        base = at_most if at_most is not None else replicated
        canceller = primary.connect()

        def enough() -> bool:
            if mode is Mode.CANCELLED:
                _cancel_sync_waits(canceller)
            return (
                sum(1 for r in history.refresh().revisions() if r > base) >= size.after_cut
                and history.seen.get(GUARDED, -1) > base
            )

        wait_for(
            f"{size.after_cut} publications acknowledged past revision {base}, and the "
            "guarded publisher shown one of them",
            enough,
        )

        # 3. Hold publication writes, let every applied one be acknowledged, and kill the
        #    primary while a publisher's write waits inside it: on a lock held here, or
        #    (cancelled) for the standby, once the cancelling stopped.
        blocked: list[int] = []
        holder = primary.connect(autocommit=False)

        def waiting() -> bool:
            if mode is Mode.CANCELLED:
                # The readers' commits are still cancelled, so that checkpoints advance
                # and a publisher comes to write; its write is left waiting.
                _cancel_sync_waits(canceller, publications=False)
                pid = _publication_waiting_for_standby(canceller)
            else:
                pid = _blocked_writer(canceller)
            blocked.extend([] if pid is None else [pid])
            return pid is not None

        if mode is Mode.CANCELLED:
            wait_for("a publication write waiting for the standby", waiting)
            last = primary.record(SCHEMA, workload.stream)[0]
        else:
            last = _lock_publications(holder)
        wait_for(
            f"every publication up to revision {last} acknowledged in the logs",
            lambda: set(range(1, last + 1)) <= set(history.refresh().revisions()),
        )
        if mode is not Mode.CANCELLED:
            wait_for("a publication write waiting on the held lock", waiting)
        canceller.close()
        [primary_record] = [a.result for a in history.publications if a.result["revision"] == last]
        clock["before kill"] = time.monotonic()
        primary.kill()
        holder.close()
        kill_ns = time.monotonic_ns()

        # 4. Promote the standby; read what it holds before any worker reaches it.
        standby.promote()
        clock["promoted"] = time.monotonic()
        promoted_store = open_at(standby.url(SCHEMA))
        try:
            promoted = promoted_store.read_publication(workload.stream)
            stored_generation = {}
            for p in workload.names:
                checkpoint = promoted_store.read_checkpoint(workload.stream, workload.epoch, p)
                stored_generation[p] = 0 if checkpoint is None else checkpoint.generation
            acked_events = [a.result["event_id"] for a in history.refresh().outcomes]
            stored_outcomes = promoted_store.outcomes(workload.stream, acked_events)
        finally:
            promoted_store.close()
        seen_generation = history.generations(before_ns=kill_ns)
        lost_checkpoints = {
            p: (g, stored_generation[p])
            for p, g in sorted(seen_generation.items())
            if g > stored_generation[p]
        }
        lost_outcomes = sum(1 for e in acked_events if e not in stored_outcomes)

        # 5. The workers follow the new URL and go on.
        switch_ns = time.monotonic_ns()
        publish_url(control, standby.url(SCHEMA))
        lost_expected = mode is not Mode.SYNCHRONOUS
        going_on = {name for name, guarded in publishers if not (lost_expected and guarded)}
        wait_for(
            f"{size.after_failover} publications acknowledged by the new primary, "
            f"at least one to each of {sorted(going_on)}",
            lambda: (
                len(history.refresh().revisions(after_ns=switch_ns)) >= size.after_failover
                and going_on <= {a.worker for a in history.publications if a.t0 > switch_ns}
            ),
        )
        if lost_expected:
            wait_for(
                "the guarded publisher's refusal",
                lambda: (control / f"{GUARDED}.refused").exists(),
            )
        (control / "stop").touch()
        for proc in procs:
            proc.join(WAIT_JOIN)
        assert [p.exitcode for p in procs] == [0] * len(procs)
        clock["workers done"] = time.monotonic()
        history.refresh()

        # `fencepost audit` itself (in this process: the same command, without a start-up).
        runner = CliRunner()
        audited = runner.invoke(main, ["audit", "--json", str(history_dir)])
        text = runner.invoke(main, ["audit", str(history_dir)])
        clock["audited"] = time.monotonic()
        report = json.loads(audited.stdout)
        assert report["exit"] == audited.exit_code == text.exit_code, audited.output
        before = history.revisions(before_ns=kill_ns)
        after = history.revisions(after_ns=switch_ns)
        refusals = {path.stem: json.loads(path.read_text()) for path in control.glob("*.refused")}
        start = clock["start"]
        return Outcome(
            mode=mode,
            replicated=replicated,
            at_most=at_most,
            primary=primary_record,
            promoted=record_to_json(promoted),
            acked_before=before,
            lost=[r for r in before if r > promoted.revision],
            lost_checkpoints=lost_checkpoints,
            lost_outcomes=lost_outcomes,
            acked_after=after,
            reused={r: history.writers(r) for r in sorted(set(before) & set(after))},
            writers={r: history.writers(r) for r in sorted(set(before) | set(after))},
            after_by={a.worker for a in history.publications if a.t0 > switch_ns},
            refusals=refusals,
            blocked_write_pid=blocked[-1],
            audit=report,
            audit_text=text.stdout,
            seconds={
                **cluster.timings,
                **{k: round(v - start, 1) for k, v in clock.items() if k != "start"},
            },
        )
    finally:
        (control / "stop").touch()
        for proc in procs:
            if proc.is_alive():
                proc.join(WAIT_JOIN)
            if proc.is_alive():
                proc.kill()
        cluster.destroy()


WAIT_JOIN = 60.0


def _cut(record: dict[str, Any]) -> Any:
    return cut_from_json(record["cut"], order=ORDER)


def check_lost(out: Outcome, size: Size) -> None:
    """The exact outcome of a run that loses (asynchronous, or waits cancelled)."""
    assert out.at_most is not None
    last = out.primary["revision"]
    promoted = out.promoted["revision"]
    # The promoted standby holds exactly a prefix: what it had received before the cut.
    assert size.before <= out.replicated <= promoted <= out.at_most
    assert out.acked_before == list(range(1, last + 1))  # every revision acknowledged once
    # Every publication acknowledged past that prefix is gone, at least the K awaited.
    assert out.lost == list(range(promoted + 1, last + 1))
    assert len(out.lost) >= size.after_cut
    # The published frontier went back: the promoted record is below the last acknowledged.
    assert compare_cuts(ORDER, _cut(out.promoted), _cut(out.primary)) < 0
    # The workers went on from the old prefix: the lost revisions were acknowledged again,
    # to other writes (a forked history).
    assert out.acked_after[0] == promoted + 1
    assert out.reused and min(out.reused) == promoted + 1
    assert all(len(set(ops)) == 2 for ops in out.reused.values()), out.reused
    # The guarded publisher refused, naming a lost publication it had seen and what the
    # store says now; it wrote nothing to the new primary.
    assert set(out.refusals) == {GUARDED}
    refusal = out.refusals[GUARDED]
    seen = refusal["seen"]["revision"]
    assert promoted < seen <= last
    assert refusal["seen"]["op_id"] in out.writers[seen]
    assert refusal["now"]["revision"] <= seen
    assert f"saw revision {seen} " in refusal["message"]
    assert f"now says revision {refusal['now']['revision']} " in refusal["message"]
    assert GUARDED not in out.after_by and out.after_by
    # The audit catches it, exit 1: linearizability of the publication record (a read of
    # the promoted standby's revision after later revisions were acknowledged), and of the
    # checkpoint of each partition whose acknowledged checkpoint writes were lost. When the
    # run after the failover is long enough for the new generations (revisions) to pass
    # the lost ones, the cuts going back between them are section 7 findings too.
    violations = out.audit["violations"]
    assert out.audit["exit"] == 1
    assert {v["property"] for v in violations} <= {
        "linearizability",
        "checkpoint_monotonicity",
        "monotone_publication",
    }
    linear = [v for v in violations if v["property"] == "linearizability"]
    [record] = [v for v in linear if "the publication record" in v["message"]]
    marked = [b["label"] for lane in record["lanes"] for b in lane["boxes"] if b["marked"]]
    assert any(f"read record -> revision {promoted} " in label for label in marked), marked
    checkpoints = {
        m.group(1)
        for v in linear
        for m in [re.search(r"the checkpoint of (\S+) in epoch", v["message"])]
        if m is not None
    }
    assert len(linear) == 1 + len(checkpoints)
    assert checkpoints == set(out.lost_checkpoints)
    assert "verdict:" in out.audit_text and "linearizability" in out.audit_text


def check_nothing_lost(out: Outcome) -> None:
    """Nothing acknowledged is lost, nobody refuses, and the audit is clean."""
    last = out.primary["revision"]
    assert out.acked_before == list(range(1, last + 1))
    assert out.promoted["revision"] == last and out.promoted["op_id"] == out.primary["op_id"]
    assert out.lost == [] and out.lost_checkpoints == {} and out.lost_outcomes == 0
    assert out.acked_after[0] == last + 1 and out.reused == {}
    assert out.refusals == {}
    assert GUARDED in out.after_by  # the guard let its publisher go on: nothing went back
    assert out.audit["exit"] == 0, out.audit_text
    assert out.audit["violations"] == []


@pytest.mark.postgres
def test_asynchronous_failover_loses_acknowledged_publications_and_the_audit_and_guard_catch_it(
    tmp_path: Path,
) -> None:
    out = failover_run(tmp_path, mode=Mode.ASYNCHRONOUS, size=FAST)
    print("\n" + out.summary() + "\n" + out.audit_text)
    check_lost(out, FAST)


@pytest.mark.postgres
def test_synchronous_failover_loses_nothing_acknowledged_and_the_audit_is_clean(
    tmp_path: Path,
) -> None:
    out = failover_run(tmp_path, mode=Mode.SYNCHRONOUS, size=FAST)
    print("\n" + out.summary())
    check_nothing_lost(out)


@pytest.mark.postgres
@pytest.mark.slow
def test_synchronous_replication_whose_waits_are_cancelled_loses_like_asynchronous(
    tmp_path: Path,
) -> None:
    """``pg_cancel_backend`` of a commit waiting for the standby: PostgreSQL commits it
    locally and acknowledges it (with a WARNING), so synchronous replication then loses
    acknowledged publications at a failover exactly as asynchronous replication does."""
    out = failover_run(tmp_path, mode=Mode.CANCELLED, size=FAST)
    print("\n" + out.summary())
    check_lost(out, FAST)


def _long(length: Length) -> Size:
    n = length.pick(full=200, bounded=40, env="FENCEPOST_FAILOVER_PUBLICATIONS")
    return Size(before=n // 4, after_cut=n // 2, after_failover=n // 4, readers=3, plain=2)


@pytest.mark.postgres
@pytest.mark.slow
@pytest.mark.parametrize("mode", list(Mode), ids=[m.name.lower() for m in Mode])
def test_failover_under_more_load(tmp_path: Path, length: Length, mode: Mode) -> None:
    size = _long(length)
    out = failover_run(tmp_path, mode=mode, size=size)
    print("\n" + out.summary() + "\n" + out.audit_text)
    if mode is Mode.SYNCHRONOUS:
        check_nothing_lost(out)
    else:
        check_lost(out, size)
