"""Hostile logs and environments for ``fencepost audit``: each probe of issue 22 with its
exact verdict, exit code and message.

FIFOs and devices refused at once; an endless line or 50 MB of garbage refused after
1 MiB, never read whole; a key given twice refused (a stale read must not pass by
repeating ``"result"``); an empty log or folder undecided (4), never clean; a worker's
clock going back undecided; the external sort merging at most ``FAN_IN`` runs at once
(it works under ``ulimit -n 16``) with memory bounded by ``--memory-ops``.
"""

from __future__ import annotations

import json
import os
import random
import resource
import subprocess
import sys
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

import pytest
from audit_histories import INITIAL, H, rec, through

from fencepost.audit import run as audit_run
from fencepost.audit.log import Entry, op_to_json
from fencepost.audit.ops import Op, Status
from fencepost.audit.run import FAN_IN, AuditReport, audit, merge_chunk, sorted_ops

ROOT = Path(__file__).resolve().parents[2]


def fencepost(*args: str, limit_files: int | None = None) -> subprocess.CompletedProcess[str]:
    def limit() -> None:
        if limit_files is not None:
            resource.setrlimit(resource.RLIMIT_NOFILE, (limit_files, limit_files))

    return subprocess.run(
        [sys.executable, "-m", "fencepost", "audit", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        preexec_fn=limit,
    )


def write_log(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(line + "\n" for line in lines))
    return path


def stale() -> list[Op]:
    h = H()
    h.write("w", 1, 2, 0, through(1), "w-1")
    h.read("r", 3, 4, INITIAL)  # invoked after the write completed: stale
    return h.ops


# --- devices, FIFOs, endless lines, garbage -------------------------------------------------


def test_a_fifo_with_no_writer_is_refused_at_once(tmp_path: Path) -> None:
    fifo = tmp_path / "audit.log"
    os.mkfifo(fifo)
    done = fencepost(str(fifo))  # before: blocked forever in open()
    assert done.returncode == 2
    assert done.stderr == (
        f"error: {fifo}: a FIFO (named pipe), not a regular file; an input is read from a "
        "file (a pipe or a device could block or never end)\n"
    )


def test_dev_zero_is_refused_not_read_into_memory() -> None:
    done = fencepost("--budget", "10", "--memory-ops", "1000", "/dev/zero")
    assert done.returncode == 2  # before: one endless line read, MemoryError, exit 3
    assert done.stderr.startswith("error: /dev/zero: a character device, not a regular file")


def test_a_fifo_in_a_log_folder_is_refused_not_skipped(tmp_path: Path) -> None:
    write_log(tmp_path / "a.log", [json.dumps(op_to_json(op)) for op in stale()])
    os.mkfifo(tmp_path / "b.log")
    done = fencepost(str(tmp_path))
    assert done.returncode == 2 and f"{tmp_path / 'b.log'}: a FIFO" in done.stderr


def test_fifty_megabytes_of_garbage_without_a_newline_is_refused(tmp_path: Path) -> None:
    garbage = tmp_path / "garbage.log"
    rng = random.Random(1)
    with garbage.open("wb") as out:
        for _ in range(50):
            out.write(rng.randbytes(1 << 20).replace(b"\n", b"\x0b"))
    done = fencepost(str(garbage))
    assert done.returncode == 2  # before: taken as one torn last line, exit 0
    assert done.stderr == (
        f"error: {garbage}:1: longer than 1048576 bytes: not an audit log (no line of one "
        "comes near it)\n"
    )


def test_a_short_garbage_tail_is_refused_but_a_torn_line_is_skipped(tmp_path: Path) -> None:
    good = [json.dumps(op_to_json(op)) for op in H().ops]
    garbage = tmp_path / "garbage.log"
    garbage.write_bytes(("".join(x + "\n" for x in good)).encode() + b"\x8f\x00\xffjunk")
    done = fencepost(str(garbage))
    assert done.returncode == 2 and f"{garbage}:2: the last line has no newline" in done.stderr
    torn = tmp_path / "torn.log"
    torn.write_text("".join(x + "\n" for x in good) + good[0][:25])
    report = audit([torn])
    assert report.torn == [f"{torn}:2"] and report.exit_code == 0


# --- duplicate keys ---------------------------------------------------------------------


def test_a_key_given_twice_is_refused_so_a_stale_read_cannot_pass(tmp_path: Path) -> None:
    lines = [json.dumps(op_to_json(op)) for op in stale()]
    assert fencepost(str(write_log(tmp_path / "stale.log", lines))).returncode == 1
    legal = json.dumps(
        {"epoch": 1, "cut": {"kind": "through", "at": 1}, "revision": 1, "op_id": "w-1"}
    )
    lines[-1] = lines[-1][:-1] + f', "result": {legal}}}'
    done = fencepost(str(write_log(tmp_path / "twice.log", lines)))
    assert done.returncode == 2  # before: the last "result" won, exit 0
    assert done.stderr == (
        f"error: {tmp_path / 'twice.log'}:3: result: duplicate key; each field appears once\n"
    )


# --- empty logs, clocks --------------------------------------------------------------------


def test_an_empty_log_or_folder_is_undecided_not_clean(tmp_path: Path) -> None:
    empty = tmp_path / "empty.log"
    empty.write_text("")
    folder = tmp_path / "folder"
    folder.mkdir()
    for given in (empty, folder):
        done = fencepost(str(given))
        assert done.returncode == 4, done.stdout  # before: "every property ... holds", 0
        assert "undecided: the log holds no operation: nothing was checked" in done.stdout
        assert done.stdout.rstrip().endswith(
            "verdict: undecided (no violation found, but the log could not be decided)"
        )


def test_a_worker_whose_clock_went_back_is_reported_and_undecided(tmp_path: Path) -> None:
    h = H()
    h.read("w", 100, 101, INITIAL)
    h.read("w", 50, 51, INITIAL)  # w's next call, invoked 50 before its previous one
    log = write_log(tmp_path / "clock.log", [json.dumps(op_to_json(op)) for op in h.ops])
    report = audit([log])
    assert report.exit_code == 4 and report.violations == []
    [c] = report.clock
    assert (c.where, c.worker, c.earlier, c.back_by) == (f"{log}:3", "w", f"{log}:2", 50)
    done = fencepost(str(log))
    assert done.returncode == 4
    assert f"{log}:3: worker w's clock went back by 50" in done.stdout
    # Teeth: the same calls in order are clean.
    h2 = H()
    h2.read("w", 50, 51, INITIAL)
    h2.read("w", 100, 101, INITIAL)
    ordered = write_log(tmp_path / "ok.log", [json.dumps(op_to_json(op)) for op in h2.ops])
    assert audit([ordered]).exit_code == 0


# --- the external sort: bounded fan-in, bounded memory ------------------------------------------


def many_reads(count: int) -> Iterator[Op]:
    """A correct history of ``count`` reads of the initial record on 4 streams, invoked in a
    shuffled order (each by a worker of its own)."""
    for i in range(count):
        op = Op(
            "gen",
            f"w{i}",
            0,
            f"s{i % 4}",
            "read_publication",
            (i * 7919) % count,
            (i * 7919) % count + 1,
            Status.OK,
            {},
            rec(1, None, 0, None),
        )
        yield op


def test_the_sort_merges_at_most_fan_in_runs_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    opened: list[int] = []
    live = [0]
    real = audit_run._run

    def counted(path: str) -> Iterator[Entry]:
        live[0] += 1
        opened.append(live[0])
        try:
            yield from real(path)
        finally:
            live[0] -= 1

    monkeypatch.setattr(audit_run, "_run", counted)
    report = AuditReport()
    keys = [(o.stream, o.t0, o.worker, o.seq) for o in sorted_ops(many_reads(40_000), 1000, report)]
    assert keys == sorted(keys) and len(keys) == 40_000
    assert report.spilled_runs == 40 and report.merge_passes >= 4
    assert max(opened) <= FAN_IN
    assert merge_chunk(1000) * (FAN_IN + 1) <= 1000


def _peak(count: int, memory_ops: int) -> int:
    tracemalloc.start()
    try:
        for _ in sorted_ops(many_reads(count), memory_ops, AuditReport()):
            pass
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_memory_is_bounded_by_memory_ops_not_by_the_number_of_runs() -> None:
    few, many = _peak(3_000, 1000), _peak(12_000, 1000)
    assert many < few * 2, (few, many)  # before: every run's chunk at once, 12 of them


def test_the_audit_runs_under_ulimit_n_16(tmp_path: Path) -> None:
    """20 runs on disk, 16 descriptors: merged 8 at a time it passes; all at once it
    cannot open them (the teeth: the old single merge)."""
    log = tmp_path / "big.log"
    with log.open("w") as out:
        for op in many_reads(20_000):
            out.write(json.dumps(op_to_json(op)) + "\n")
    done = fencepost("--memory-ops", "1000", str(log), limit_files=16)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("audited 20,000 operations on 4 stream(s)")
    code = (
        "import sys, fencepost.audit.run as r; r.FAN_IN = 10**6; from fencepost.cli import main; "
        "main(sys.argv[1:])"
    )

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (16, 16))

    old = subprocess.run(
        [sys.executable, "-c", code, "audit", "--memory-ops", "1000", str(log)],
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=limit,
    )
    assert old.returncode == 2 and "Too many open files" in old.stderr


def test_invisible_characters_in_a_log_are_escaped_on_the_terminal(tmp_path: Path) -> None:
    """An op_id carrying U+202E (Trojan Source) is shown as U+202E, never raw."""
    h = H()
    h.write("w\u2066", 1, 2, 0, through(1), "w-\u202e1-etirw")
    h.read("r", 3, 4, INITIAL)  # stale: the violation's timeline names the write
    log = write_log(tmp_path / "bidi.log", [json.dumps(op_to_json(op)) for op in h.ops])
    done = fencepost(str(log))
    assert done.returncode == 1
    assert "\u202e" not in done.stdout and "\u2066" not in done.stdout
    assert "w-U+202E1-etirw" in done.stdout and "wU+2066" in done.stdout
    bad = tmp_path / "field.log"
    bad.write_text('{"v": 1, "\u202ex": 1}\n')
    refused = fencepost(str(bad))
    assert refused.returncode == 2 and "\u202e" not in refused.stderr
    assert "U+202Ex: unknown field" in refused.stderr
