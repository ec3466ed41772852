"""``fencepost demo`` survives kill -9: restarted on the same file it resumes, never regresses."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from fencepost.impl.cuts import Cut, Endpoint, compare_cuts, minimum
from fencepost.impl.simulated import SIMULATED_ORDER, SimulatedSource
from fencepost.impl.sqlite import SQLiteStore

ARGS = ["--partitions", "4", "--events", "150", "--seed", "9", "--pages", "1", "--json"]


def demo(db: Path, *extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "fencepost", "demo", "--db", str(db), *ARGS, *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def cut_of(line: dict[str, object]) -> Cut:
    raw = line["cut"]
    if raw is None:
        return Cut.nothing()
    assert isinstance(raw, dict)
    return Cut(Endpoint(raw["kind"]), raw["at"])


def durable_state(db: Path) -> tuple[int, Cut, int]:
    store = SQLiteStore(db)
    try:
        record = store.read_publication("demo")
        ids = SimulatedSource(9, 4, 150).all_event_ids()
        return record.revision, record.cut, len(store.outcomes("demo", ids))
    finally:
        store.close()


def test_kill_9_and_restart_resumes_without_regression(tmp_path: Path) -> None:
    db = tmp_path / "demo.db"
    first = demo(db, "--interval", "0.02")
    assert first.stdout is not None
    seen = 0
    for raw in first.stdout:
        line = json.loads(raw)
        if line["event"] == "round" and line["revision"] >= 3:
            seen = line["revision"]
            break
    assert seen >= 3, first.stderr.read() if first.stderr else ""
    os.kill(first.pid, signal.SIGKILL)
    first.wait(timeout=30)
    assert first.returncode == -signal.SIGKILL
    revision, cut, outcomes = durable_state(db)
    assert revision >= seen and outcomes > 0

    second = demo(db, "--interval", "0")
    out, err = second.communicate(timeout=120)
    assert second.returncode == 0, err
    lines = [json.loads(x) for x in out.splitlines()]
    start = lines[0]
    assert start["event"] == "start"
    assert (start["revision"], start["outcomes"]) == (revision, outcomes)
    previous = cut
    rounds = [x for x in lines if x["event"] == "round"]
    assert rounds and all("problem" not in x for x in rounds)
    for line in rounds:
        current = cut_of(line)
        assert compare_cuts(SIMULATED_ORDER, current, previous) >= 0, (previous, current)
        assert line["revision"] >= revision
        previous = current
    assert lines[-1]["event"] == "done"
    source = SimulatedSource(9, 4, 150)
    final_revision, final_cut, final_outcomes = durable_state(db)
    assert final_outcomes == len(source.all_event_ids())
    assert final_cut == minimum(SIMULATED_ORDER, [source.final_cut(p) for p in source.partitions])
    assert final_revision >= revision


def test_another_source_on_the_same_file_is_a_usage_error(tmp_path: Path) -> None:
    db = tmp_path / "demo.db"
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "fencepost",
            "demo",
            "--db",
            str(db),
            "--events",
            "5",
            "--interval",
            "0",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 0, run.stderr
    other = subprocess.run(
        [
            sys.executable,
            "-m",
            "fencepost",
            "demo",
            "--db",
            str(db),
            "--events",
            "5",
            "--seed",
            "1",
            "--interval",
            "0",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert other.returncode == 2
    assert "another source" in other.stderr and "Traceback" not in other.stderr


def test_a_corrupt_db_is_a_usage_error_naming_the_file(tmp_path: Path) -> None:
    db = tmp_path / "junk.db"
    db.write_bytes(b"not a database" * 100)
    run = subprocess.run(
        [sys.executable, "-m", "fencepost", "demo", "--db", str(db)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 2
    assert str(db) in run.stderr and "Traceback" not in run.stderr


def test_the_demo_self_check_catches_regression_and_unsoundness() -> None:
    from fencepost.commands.demo import STREAM, _check
    from fencepost.impl.memory import MemoryStore
    from fencepost.impl.records import PublicationRecord

    source = SimulatedSource(9, 2, 10)
    store = MemoryStore()
    store.create_stream(STREAM, source.membership())
    first = source.events("p000")[0]
    ahead = PublicationRecord(1, Cut.through(first.at), 2, "a-1")
    behind = PublicationRecord(1, Cut.before(first.at), 3, "b-1")
    assert _check(store, source, ahead, behind).startswith("REGRESSION")
    assert _check(store, source, behind, ahead).startswith("UNSOUND")
    for event_id in source.covered_ids(ahead.cut):
        store.record_outcome(STREAM, event_id, "ok")
    assert _check(store, source, behind, ahead) == ""
