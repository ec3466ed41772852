"""What fencepost.impl.recording writes, fencepost.audit reads: round trips on memory and
SQLite stores with lost responses and crashes, the JSON Schema, rotation, and a full disk
that never fails the caller (lines dropped, counted, and reported to the audit)."""

from __future__ import annotations

import contextlib
import errno
import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from schema_check import errors

from fencepost.audit.run import audit
from fencepost.impl.faults import Crash, FaultyStore
from fencepost.impl.memory import MemoryStore
from fencepost.impl.provider import ProviderTimeout
from fencepost.impl.publisher import Publisher
from fencepost.impl.reader import PartitionReader
from fencepost.impl.recording import LogWriter, RecordingStore
from fencepost.impl.simulated import SimulatedSource
from fencepost.impl.sqlite import SQLiteStore
from fencepost.impl.stores import IndefiniteStoreError, Store

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = json.loads((ROOT / "docs" / "audit-log.schema.json").read_text())
STREAM = "s"


def workload(
    make: Callable[[], Store],
    log: LogWriter,
    *,
    lost: float,
    crashes: float = 0.0,
    rounds: int = 30,
) -> None:
    """Two processes' worth of readers and publishers, restarted after every crash."""
    source = SimulatedSource(3, 2, 40)
    setup = make()
    RecordingStore(setup, log, "setup").create_stream(STREAM, source.membership())
    incarnation = 0
    for worker in ("a", "b"):
        for _ in range(rounds):
            incarnation += 1
            name = f"{worker}{incarnation}"
            inner: Store = FaultyStore(
                make(),
                incarnation,
                lose_after=lost / 2,
                lose_before=lost / 2,
                crash_before=crashes / 2,
                crash_after=crashes / 2,
                ops=[
                    "read_publication",
                    "write_publication",
                    "read_checkpoints",
                    "write_checkpoint",
                    "record_outcome",
                ],
            )
            store = RecordingStore(inner, log, name)
            m = source.membership()
            try:
                for p in source.partitions:
                    reader = PartitionReader(
                        store, source, STREAM, p, m.epoch, m.scope, source.order, lambda e: "ok"
                    )
                    with contextlib.suppress(IndefiniteStoreError, ProviderTimeout):
                        reader.run_pass(max_pages=1)
                store.attempt(Publisher(store, STREAM, name))
            except Crash:
                continue  # the process died: a new incarnation takes over


def shared() -> Callable[[], Store]:
    memory = MemoryStore()
    return lambda: memory


def lines_of(log: LogWriter) -> list[dict[str, object]]:
    out = []
    for path in log.segments():
        out += [json.loads(x) for x in path.read_text().splitlines()]
    return out


@pytest.mark.parametrize("backend", ["memory", "sqlite"])
def test_what_the_recorder_writes_the_audit_reads(tmp_path: Path, backend: str) -> None:
    memory = MemoryStore()
    make: Callable[[], Store] = (
        (lambda: memory) if backend == "memory" else (lambda: SQLiteStore(tmp_path / "s.db"))
    )
    log = LogWriter(tmp_path / "audit.log")
    workload(make, log, lost=0.2, crashes=0.05)
    log.close()
    lines = lines_of(log)
    statuses = {str(x["status"]) for x in lines}
    assert {"ok", "pending", "indefinite"} <= statuses  # lost responses and kills happened
    assert any(x["op"] == "attempt" for x in lines)
    for x in lines:
        assert errors(SCHEMA, x) == [], x
    report = audit([tmp_path / "audit.log"])
    assert report.operations > 200
    assert report.unfinished > 0  # processes died inside mutating calls
    assert report.exit_code == 0, [v.message for v in report.violations]
    spilled = audit([tmp_path / "audit.log"], memory_ops=100)  # sorted on disk: same verdict
    assert spilled.spilled_runs > 1
    assert (spilled.operations, spilled.exit_code) == (report.operations, 0)


def test_the_schema_has_teeth(tmp_path: Path) -> None:
    log = LogWriter(tmp_path / "audit.log")
    workload(shared(), log, lost=0.0, rounds=1)
    log.close()
    line = lines_of(log)[-1]
    assert errors(SCHEMA, line) == []
    assert errors(SCHEMA, {**line, "extra": 1})
    assert errors(SCHEMA, {**line, "t0": -1})
    assert errors(SCHEMA, {**line, "status": "pending"})  # a pending line has no t1/result
    assert errors(SCHEMA, {**line, "op": "read_publication", "args": {"x": 1}})


def test_rotation_by_size_keeps_every_line_readable(tmp_path: Path) -> None:
    log = LogWriter(tmp_path / "audit.log", max_bytes=4096)
    workload(shared(), log, lost=0.2)
    log.close()
    segments = log.segments()
    assert len(segments) > 5
    assert all(p.stat().st_size < 4096 + 4096 for p in segments)
    report = audit(segments)
    assert report.exit_code == 0 and report.files == len(segments)
    # a restarted process continues after the last segment
    again = LogWriter(tmp_path / "audit.log", max_bytes=4096)
    assert again.segment_path(again._segment) == segments[-1]


def test_keeping_only_the_newest_segments_audits_the_rest(tmp_path: Path) -> None:
    log = LogWriter(tmp_path / "audit.log", max_bytes=4096, keep=3)
    workload(shared(), log, lost=0.1)
    log.close()
    segments = sorted(tmp_path.glob("audit.log*"))
    assert len(segments) == 3
    report = audit(segments)  # the log begins mid-history: no creation, no verdict against it
    assert report.exit_code == 0, [v.message for v in report.violations]


class Disk:
    """A disk that fills when told to (``full``): every write then fails with ENOSPC."""

    def __init__(self) -> None:
        self.full = False

    def write(self, fd: int, data: bytes) -> int:
        if self.full:
            raise OSError(errno.ENOSPC, "No space left on device")
        return os.write(fd, data)


def test_a_full_disk_drops_lines_and_never_fails_the_caller(tmp_path: Path) -> None:
    disk = Disk()
    log = LogWriter(tmp_path / "audit.log", write=disk.write)
    store = RecordingStore(MemoryStore(), log, "w")
    source = SimulatedSource(1, 1, 5)
    store.create_stream(STREAM, source.membership())
    disk.full = True
    store.read_publication(STREAM)
    store.read_publication(STREAM)
    assert log.dropped == {STREAM: 2}
    disk.full = False
    store.read_publication(STREAM)
    log.close()
    lines = lines_of(log)
    assert [x["op"] for x in lines] == [
        "segment",
        "create_stream",
        "create_stream",
        "dropped",
        "read_publication",
    ]
    assert lines[3]["result"] == {"lines": 2}
    report = audit([tmp_path / "audit.log"])
    assert report.exit_code == 4 and [s.stream for s in report.incomplete] == [STREAM]


def test_a_disk_full_to_the_end_still_says_so_in_the_segment_line(tmp_path: Path) -> None:
    """No line can be appended after the disk filled: the drops are written into the
    segment line in place (it is padded for them), and the audit is undecided (exit 4)."""
    disk = Disk()
    log = LogWriter(tmp_path / "audit.log", write=disk.write)
    store = RecordingStore(MemoryStore(), log, "w")
    store.create_stream(STREAM, SimulatedSource(1, 1, 5).membership())
    store.create_stream("other", SimulatedSource(2, 1, 5).membership())
    size = (tmp_path / "audit.log").stat().st_size
    disk.full = True
    for _ in range(3):
        store.read_publication(STREAM)
    store.read_publication("other")
    log.close()  # the dropped lines cannot be appended: the disk is still full
    assert (tmp_path / "audit.log").stat().st_size == size  # not one byte more
    head = lines_of(log)[0]
    assert head["op"] == "segment" and head["result"] == {
        "dropped": {STREAM: 3, "other": 1},
        "unnamed": 0,
    }
    report = audit([tmp_path / "audit.log"])
    assert report.exit_code == 4
    assert {s.stream: s.dropped for s in report.incomplete} == {STREAM: 3, "other": 1}
    # Teeth: without the segment line's counts the same log audits clean.
    cleared = (
        (tmp_path / "audit.log").read_text().replace('"dropped":{"s":3,"other":1}', '"dropped":{}')
    )
    (tmp_path / "cleared.log").write_text(cleared)
    assert audit([tmp_path / "cleared.log"]).exit_code == 0


def test_more_streams_than_the_segment_line_can_name_make_every_stream_incomplete(
    tmp_path: Path,
) -> None:
    disk = Disk()
    log = LogWriter(tmp_path / "audit.log", write=disk.write)
    store = RecordingStore(MemoryStore(), log, "w")
    store.create_stream(STREAM, SimulatedSource(1, 1, 5).membership())
    disk.full = True
    for i in range(100):
        with contextlib.suppress(Exception):
            store.read_publication(f"a-stream-with-a-long-name-{i}")
    log.close()
    head = lines_of(log)[0]
    assert head["result"] == {"dropped": {}, "unnamed": 100}
    report = audit([tmp_path / "audit.log"])
    assert report.exit_code == 4 and report.unnamed_drops == 100
    assert any("could not name" in d for d in report.doubts)


def test_dev_full(tmp_path: Path) -> None:
    log = LogWriter("/dev/full")
    store = RecordingStore(MemoryStore(), log, "w")
    store.create_stream(STREAM, SimulatedSource(1, 1, 5).membership())
    assert store.read_publication(STREAM).revision == 0
    assert log.dropped[STREAM] == 3 and log.lines == 0
    log.close()


def test_a_line_torn_by_a_full_disk_then_nothing_more_still_says_so(tmp_path: Path) -> None:
    """The disk fills mid-line: the segment ends torn, the next one cannot even begin, and
    the drops go into the last segment line there is (the field report's probe: 2,921
    lines dropped, the audit clean)."""
    disk = Disk()

    def write(fd: int, data: bytes) -> int:
        if not disk.full and b"read_publication" in data:  # it fills in the middle of this line
            disk.full = True
            return os.write(fd, data[: len(data) // 2])
        return disk.write(fd, data)

    log = LogWriter(tmp_path / "audit.log", write=write)
    store = RecordingStore(MemoryStore(), log, "w")
    store.create_stream(STREAM, SimulatedSource(1, 1, 5).membership())
    for _ in range(5):
        store.read_publication(STREAM)
    log.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["audit.log"]  # no empty segment
    report = audit([tmp_path / "audit.log"])
    assert report.torn == [f"{tmp_path / 'audit.log'}:4"]  # segment line, create (2 lines), read
    assert report.exit_code == 4 and {s.stream: s.dropped for s in report.incomplete} == {STREAM: 5}
