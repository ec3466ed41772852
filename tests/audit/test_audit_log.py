"""Reading audit logs: every unreadable line is exit 2 naming file:line, never a traceback;
what kill -9 leaves behind (a torn last line, a call never completed) is read as such."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from fencepost.audit.log import LogError, LogStats, log_files, read_ops
from fencepost.audit.ops import INF, Status
from fencepost.audit.run import audit
from fencepost.impl.memory import MemoryStore
from fencepost.impl.publisher import Publisher
from fencepost.impl.reader import PartitionReader
from fencepost.impl.recording import LogWriter, RecordingStore
from fencepost.impl.simulated import SimulatedSource

GOOD: dict[str, Any] = {
    "v": 1,
    "worker": "w",
    "seq": 0,
    "stream": "s",
    "op": "read_publication",
    "args": {},
    "t0": 1,
    "t1": 2,
    "status": "ok",
    "result": {"epoch": 1, "cut": None, "revision": 0, "op_id": None},
}
WRITE: dict[str, Any] = {
    "v": 1,
    "worker": "w",
    "seq": 1,
    "stream": "s",
    "op": "write_publication",
    "args": {
        "expected_revision": 0,
        "epoch": 1,
        "cut": {"at": 3, "kind": "through"},
        "op_id": "w-1",
    },
    "t0": 3,
}


def write_log(path: Path, *lines: str) -> Path:
    path.write_text("".join(line + "\n" for line in lines))
    return path


def line(**changes: Any) -> str:
    data = {**GOOD, **changes}
    return json.dumps({k: v for k, v in data.items() if v is not DROP})


DROP = object()


def read_all(*paths: Path) -> list[Any]:
    return list(read_ops(list(paths)))


BAD = [
    ("not json", "{not json", "not JSON"),
    ("an array", "[1, 2]", "each line is one JSON object"),
    ("NaN", line().replace('"t0": 1', '"t0": NaN'), "NaN is not a number"),
    ("a float", line().replace('"t0": 1', '"t0": 1.5'), "not an integer"),
    ("1e400", line().replace('"t0": 1', '"t0": 1e400'), "not an integer"),
    ("a huge integer", line().replace('"t0": 1', '"t0": ' + "9" * 30), "t0: must be between"),
    ("a 5000-digit integer", line().replace('"t0": 1', '"t0": ' + "9" * 5000), "not JSON"),
    (
        "deep nesting",
        line().replace('"args": {}', '"args": ' + "[" * 100000 + "]" * 100000),
        "nested",
    ),
    ("a lone surrogate", line(worker="w\ud800"), "lone surrogate"),
    ("an unknown field", line(extra=1), "extra: unknown field"),
    ("a missing field", line(stream=DROP), "stream: missing required field"),
    ("an unknown op", line(op="drop_table"), "unknown operation"),
    ("an unknown status", line(status="maybe"), "status:"),
    ("a bool for an integer", line(seq=True), "seq: an integer is required, got a bool"),
    ("t1 before t0", line(t0=5, t1=4), "completed (4) before it was invoked (5)"),
    ("a result on an error", line(status="error"), "has no result"),
    ("no result on ok", line(result=DROP), "result: required"),
    ("a conflicting read", line(status="conflict"), "only a conditional write can conflict"),
    (
        "a bad record",
        line(result={"epoch": 1, "cut": None, "revision": -1, "op_id": None}),
        "revision",
    ),
    ("an unknown result field", line(result={**GOOD["result"], "x": 1}), "result.x: unknown field"),
    (
        "a bad cut kind",
        json.dumps(
            {
                **WRITE,
                "status": "pending",
                "args": {**WRITE["args"], "cut": {"at": 1, "kind": "after"}},
            }
        ),
        "args.cut.kind",
    ),
    ("another version", line(v=2), "format version 1"),
    (
        "a pending line with t1",
        json.dumps({**WRITE, "status": "pending", "t1": 4}),
        "pending line has neither",
    ),
]


@pytest.mark.parametrize(("name", "text", "says"), BAD, ids=[b[0] for b in BAD])
def test_an_unreadable_line_names_file_and_line(
    tmp_path: Path, name: str, text: str, says: str
) -> None:
    log = write_log(tmp_path / "a.log", line(), text)
    with pytest.raises(LogError) as caught:
        read_all(log)
    assert caught.value.where == f"{log}:2"
    assert says in caught.value.problem, caught.value.problem


def test_invalid_utf8_and_long_lines(tmp_path: Path) -> None:
    log = tmp_path / "b.log"
    log.write_bytes(line().encode() + b"\n" + b'{"v": "\xff"}\n')
    with pytest.raises(LogError, match=r"b.log:2: not UTF-8"):
        read_all(log)
    log.write_bytes(b" " * (1 << 21) + b"\n")
    with pytest.raises(LogError, match=r"b.log:1: longer than"):
        read_all(log)


def test_a_torn_last_line_is_skipped_and_counted(tmp_path: Path) -> None:
    log = tmp_path / "c.log"
    log.write_text(line() + "\n" + line(seq=1)[:30])
    stats = LogStats()
    ops = list(read_ops([log], stats))
    assert len(ops) == 1 and stats.torn == [f"{log}:2"]


def test_a_pending_call_never_completed_is_indefinite(tmp_path: Path) -> None:
    pending = json.dumps({**WRITE, "status": "pending"})
    log = write_log(tmp_path / "d.log", line(), pending)
    stats = LogStats()
    [_, write] = list(read_ops([log], stats))
    assert write.status is Status.INDEFINITE and write.t1 == INF and stats.unfinished == 1
    done = json.dumps(
        {
            **WRITE,
            "t1": 9,
            "status": "ok",
            "result": {
                "epoch": 1,
                "cut": {"at": 3, "kind": "through"},
                "revision": 1,
                "op_id": "w-1",
            },
        }
    )
    write_log(log, line(), pending, done)
    [_, write] = read_all(log)
    assert write.status is Status.OK and write.t1 == 9


def test_a_completion_in_a_segment_read_before_its_pending_line(tmp_path: Path) -> None:
    pending = json.dumps({**WRITE, "status": "pending"})
    done = json.dumps({**WRITE, "t1": 9, "status": "indefinite", "error": "timeout"})
    first = write_log(tmp_path / "x.log", line(), pending)
    second = write_log(tmp_path / "x.log.1", done)
    for order in ([first, second], [second, first]):
        ops = read_all(*order)
        assert len(ops) == 2 and {o.kind for o in ops} == {"read_publication", "write_publication"}


def test_a_line_logged_twice_is_refused(tmp_path: Path) -> None:
    log = write_log(tmp_path / "e.log", line(), line(t0=5, t1=6))
    with pytest.raises(LogError, match=r"e.log:2: worker w seq 0 appears twice"):
        read_all(log)


def test_a_folder_stands_for_its_files(tmp_path: Path) -> None:
    write_log(tmp_path / "1.log", line())
    write_log(tmp_path / "2.log", line(worker="v"))
    assert [p.name for p in log_files([tmp_path])] == ["1.log", "2.log"]
    assert len(read_all(*log_files([tmp_path]))) == 2


@pytest.mark.parametrize(("name", "text", "says"), BAD[:12], ids=[b[0] for b in BAD[:12]])
def test_the_command_exits_2_without_a_traceback(
    tmp_path: Path, name: str, text: str, says: str
) -> None:
    log = write_log(tmp_path / "f.log", line(), text)
    run = subprocess.run(
        [sys.executable, "-m", "fencepost", "audit", str(log)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 2, run.stdout + run.stderr
    assert f"{log}:2:" in run.stderr and says in run.stderr
    assert "Traceback" not in run.stderr + run.stdout


def test_a_missing_file_exits_2(tmp_path: Path) -> None:
    run = subprocess.run(
        [sys.executable, "-m", "fencepost", "audit", str(tmp_path / "nope.log")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 2 and "nope.log" in run.stderr and "Traceback" not in run.stderr


def _mutate(value: Any, rng: random.Random) -> Any:
    if isinstance(value, dict) and value:
        key = rng.choice(list(value))
        if rng.random() < 0.7:
            value[key] = _mutate(value[key], rng)
        else:
            value[key] = rng.choice(
                [None, 0, 7, -1, "x", "", True, {"at": 3, "kind": "before"}, []]
            )
        return value
    if isinstance(value, list) and value:
        i = rng.randrange(len(value))
        value[i] = _mutate(value[i], rng)
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return rng.choice([value + 1, value - 1, 0, 2 * value, 2**70])
    if isinstance(value, str):
        return rng.choice([value + "x", "", "before", "through", "ok", "conflict", "pending"])
    return rng.choice([None, 0, "x"])


def test_every_corrupted_log_gets_a_verdict_or_a_located_error(tmp_path: Path) -> None:
    """Random edits of a recorded log: a verdict (0, 1, 4) or a LogError, never a crash."""
    source = SimulatedSource(2, 2, 20)
    log = LogWriter(tmp_path / "good.log")
    store = RecordingStore(MemoryStore(), log, "w")
    store.create_stream("s", source.membership())
    m = source.membership()
    publisher = Publisher(store, "s", "w")  # one per worker: a second would reuse its op_ids
    for _ in range(4):
        for p in source.partitions:
            PartitionReader(store, source, "s", p, m.epoch, m.scope, source.order, str).run_pass(
                max_pages=2
            )
        store.attempt(publisher)
    log.close()
    assert audit([tmp_path / "good.log"]).exit_code == 0
    lines = [json.loads(x) for x in (tmp_path / "good.log").read_text().splitlines()]
    rng = random.Random(11)
    verdicts: set[object] = set()
    for _ in range(150):
        edited = json.loads(json.dumps(lines))
        for _ in range(rng.randrange(1, 4)):
            i = rng.randrange(len(edited))
            edited[i] = _mutate(edited[i], rng)
        path = tmp_path / "edited.log"
        path.write_text("".join(json.dumps(x) + "\n" for x in edited))
        try:
            verdicts.add(audit([path]).exit_code)
        except LogError as exc:
            assert exc.where.startswith(f"{path}:")
            verdicts.add("located")
    assert {0, "located"} <= verdicts <= {0, 1, 4, "located"}
