"""Every loader of a file a user names refuses a FIFO or a device at once, naming the path.

A FIFO with no writer used to block ``conform --replay-file``, ``review`` and ``audit`` in
``open`` for ever, and ``/dev/zero`` was read into memory (or up to a cap). Each command
here runs in its own process with a time limit that only fails the test: a loader that
blocks is a failure, never a hang of the suite. ``fencepost demo --record`` on a FIFO
nobody reads drops its lines instead of blocking.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from fencepost.inputs.files import NotRegularFile, open_regular

ROOT = Path(__file__).resolve().parents[2]
SUT = [sys.executable, "-m", "fencepost", "sut"]


def fencepost(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "fencepost", *args],
        capture_output=True,
        text=True,
        timeout=60,  # a guard: a loader that blocks fails here
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
    )


@pytest.fixture
def fifo(tmp_path: Path) -> Path:
    path = tmp_path / "input.toml"
    os.mkfifo(path)
    return path


FIFO_SAYS = "a FIFO (named pipe), not a regular file"
DEVICE_SAYS = "a character device, not a regular file"


@pytest.mark.parametrize(
    "command",
    [
        ["review", "{path}"],
        ["conform", "--replay-file", "{path}", "--", *SUT],
        ["audit", "{path}"],
    ],
    ids=["review", "conform-replay-file", "audit"],
)
def test_a_fifo_with_no_writer_is_refused_at_once(fifo: Path, command: list[str]) -> None:
    done = fencepost(*(part.format(path=fifo) for part in command))
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert f"{fifo}: {FIFO_SAYS}" in done.stdout + done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(
    "command",
    [
        ["review", "/dev/zero"],
        ["conform", "--replay-file", "/dev/zero", "--", *SUT],
        ["audit", "/dev/zero"],
        ["scenarios", "/dev/zero"],
    ],
    ids=["review", "conform-replay-file", "audit", "scenarios"],
)
def test_an_endless_device_is_refused_not_read(command: list[str]) -> None:
    done = fencepost(*command)
    assert done.returncode == 2, (done.stdout, done.stderr)
    said = done.stdout + done.stderr
    assert "/dev/zero" in said and (DEVICE_SAYS in said or "not a regular file" in said)


def test_scenarios_refuse_a_fifo(fifo: Path) -> None:
    done = fencepost("scenarios", str(fifo))
    assert done.returncode == 2 and "not a regular file" in done.stdout + done.stderr


def test_the_opener_never_waits_for_a_writer(fifo: Path) -> None:
    with pytest.raises(NotRegularFile, match=re.escape(FIFO_SAYS)):
        open_regular(fifo)
    with pytest.raises(NotRegularFile, match="is a directory"):
        open_regular(fifo.parent)
    regular = fifo.parent / "ok.toml"
    regular.write_bytes(b"x = 1\n")
    with open_regular(regular) as handle:
        assert handle.read() == b"x = 1\n"


def test_recording_into_a_fifo_nobody_reads_drops_lines_and_never_blocks(fifo: Path) -> None:
    from fencepost.impl.memory import MemoryStore
    from fencepost.impl.recording import LogWriter, RecordingStore
    from fencepost.impl.simulated import SimulatedSource

    log = LogWriter(fifo)
    store = RecordingStore(MemoryStore(), log, "w")
    store.create_stream("s", SimulatedSource(1, 1, 5).membership())  # returns: never blocks
    assert store.read_publication("s").revision == 0
    log.close()
    assert log.lines == 0 and log.dropped == {"s": 3}
