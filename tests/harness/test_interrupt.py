"""Ctrl-C (SIGINT) during ``fencepost conform``: every SUT process ended, what ran printed.

Before, the run printed ``Aborted!`` with no summary, exited 1 (the verdict code) and
left the SUT processes of the kept pool running. Now the summary says it was
interrupted, in which phase, and lists the phases done; the exit status is 130
(128 + SIGINT, as shells report it); no process the run started survives it.

Every wait is on a condition (processes seen in ``/proc``, the run's exit), each with a
deadline that only fails the test; no sleep decides anything.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

from fencepost.harness.transport import ISOLATION_VARIABLE

ROOT = Path(__file__).resolve().parents[2]
MARK = "FENCEPOST_TEST_INTERRUPT"


def marked(mark: str, command: bytes = b"") -> set[int]:
    """Live processes carrying ``MARK=mark`` in their environment (every descendant of
    the run inherits it; a reaped or zombie process shows none) whose command line holds
    ``command``."""
    needle = f"{MARK}={mark}".encode()
    found = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as handle:
                if needle not in handle.read().split(b"\0"):
                    continue
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                if command in handle.read():
                    found.add(int(entry))
        except OSError:
            continue
    return found


def describe(pid: int) -> str:
    """A leftover process in words (for the failure message)."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return f"{cmdline.strip()} (state {stat[0]}, parent {stat[1]}, group {stat[2]})"
    except OSError:
        return "gone"


def wait_for(condition: Callable[[], bool], what: str, deadline: float = 120.0) -> None:
    end = time.monotonic() + deadline
    while not condition():
        if time.monotonic() > end:
            raise AssertionError(f"still waiting after {deadline:g}s for {what}")
        time.sleep(0.02)


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="finds processes through /proc (Linux)")
@pytest.mark.parametrize("isolation", ["none", "namespace"])
def test_ctrl_c_ends_every_sut_process_and_prints_what_ran(isolation: str) -> None:
    """With ``FENCEPOST_SUT_ISOLATION=none`` nothing but the harness ends a SUT's child (no
    PID namespace takes it down with the SUT): the stricter case."""
    mark = uuid.uuid4().hex
    # Each SUT process leaves a child that ignores the end of its input: only ending the
    # SUT's process group (or namespace) ends it, as a process the harness forgot would not.
    sut = f"sleep 1000 & exec {shlex.quote(sys.executable)} -m fencepost sut"
    command = [sys.executable, "-m", "fencepost", "conform", "--schedules", "100000"]
    run = subprocess.Popen(
        [*command, "--", "sh", "-c", sut],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env={**os.environ, MARK: mark, ISOLATION_VARIABLE: isolation},
    )
    seen: set[int] = set()

    def many_suts_started() -> bool:  # the handshake is over and phases are running
        seen.update(marked(mark, b"fencepost\0sut") - {run.pid})
        return len(seen) >= 6 or run.poll() is not None

    try:
        wait_for(many_suts_started, "the run to start its SUT processes")
        assert run.poll() is None, run.communicate()
        assert marked(mark) - {run.pid}, "SUT processes are running when Ctrl-C comes"
        run.send_signal(signal.SIGINT)
        out, err = run.communicate(timeout=120)
    finally:
        if run.poll() is None:
            run.kill()
            run.communicate()
        left = marked(mark)
        described = {pid: describe(pid) for pid in left}
        for pid in left:  # only what this test started (it carries the test's own mark)
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    assert run.returncode == 130, (out[-2000:], err[-2000:])
    first = out.splitlines()[0]
    assert first.startswith("fencepost conform: INTERRUPTED (Ctrl-C) in "), first
    assert "no verdict; every SUT process was ended" in first and "phase(s) done" in first
    assert "  total: " in out and "situation coverage" in out
    assert "Aborted!" not in out + err and "Traceback" not in err
    assert left == set(), described  # nothing the run started outlives it
