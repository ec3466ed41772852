"""The wrapping examples (docs/wrapping.md): existing code behind the protocol, conformant.

examples/wrap-library puts a Python library behind the protocol in-process;
examples/wrap-http puts an HTTP service (a child process on 127.0.0.1) behind
it, relaying the service's storage requests to the harness. Each claims the
levels ``algebra`` and ``publisher`` and must be CONFORMANT at them; a level it
does not declare is skipped when all are asked, and is a problem (exit 1) when
it is the only one asked. The HTTP adapter must not outlive itself: its service
exits when the adapter is killed.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from lengths import Length

ROOT = Path(__file__).resolve().parents[2]
LIBRARY = ROOT / "examples" / "wrap-library" / "adapter.py"
HTTP = ROOT / "examples" / "wrap-http" / "adapter.py"


def conform(*args: str, adapter: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "fencepost", "conform", *args, "--", sys.executable, str(adapter)],
        capture_output=True,
        text=True,
        timeout=1800,
        cwd=ROOT,
    )


@pytest.mark.slow
@pytest.mark.parametrize("adapter", [LIBRARY, HTTP], ids=["library", "http"])
def test_the_adapter_is_conformant_at_the_levels_it_claims(adapter: Path, length: Length) -> None:
    # bounded: every phase, each base without inserted steps; full: the default budget
    depth = length.pick(full=1, bounded=0)
    schedules = length.pick(full=20, bounded=5)
    done = conform(
        "--levels",
        "algebra,publisher",
        "--depth",
        str(depth),
        "--schedules",
        str(schedules),
        adapter=adapter,
    )
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-3000:]
    assert done.stdout.startswith("fencepost conform: CONFORMANT")
    assert "levels tested: algebra, publisher" in done.stdout
    assert "ok  random schedules" in done.stdout


def test_a_level_the_existing_code_cannot_expose_is_not_declared() -> None:
    asked_alone = conform("--levels", "checkpointer", adapter=LIBRARY)
    assert asked_alone.returncode == 1
    assert (
        "the SUT implements algebra, publisher; none of the requested levels (checkpointer)"
        in asked_alone.stdout
    )
    every_level = conform("--depth", "0", "--schedules", "0", adapter=LIBRARY)
    assert every_level.returncode == 0, every_level.stdout[-3000:]
    assert "levels tested: algebra, publisher" in every_level.stdout


def _children(pid: int) -> list[int]:
    text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    return [int(p) for p in text.split()]


def _gone(pid: int) -> bool:
    """Exited: no such process, or a zombie nobody has reaped yet."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


def _listening(pid: int) -> list[str]:
    """The local addresses (hex, as /proc/net/tcp writes them) ``pid`` listens on."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        target = os.readlink(fd)
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    found = []
    for table in ("tcp", "tcp6"):
        for line in Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]:
            cols = line.split()
            if cols[3] == "0A" and cols[9] in inodes:  # 0A: LISTEN
                found.append(cols[1])
    return found


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="reads /proc (Linux)")
def test_the_http_service_exits_when_its_adapter_is_killed() -> None:
    adapter = subprocess.Popen(
        [sys.executable, str(HTTP)], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    assert adapter.stdin is not None and adapter.stdout is not None
    try:
        adapter.stdin.write(b'{"type":"hello","protocol":1}\n')
        adapter.stdin.flush()
        hello = json.loads(adapter.stdout.readline())
        assert hello["type"] == "hello_ok" and hello["levels"] == ["algebra", "publisher"]
        assert hello["capabilities"] == ["reset"]
        (service,) = _children(adapter.pid)
        for pid in (adapter.pid, service):
            listening = _listening(pid)
            assert listening and all(a.startswith("0100007F:") for a in listening), listening
    finally:
        adapter.send_signal(signal.SIGKILL)
        adapter.wait()
    deadline = time.monotonic() + 60  # a wait for an event, bounded; not a timing assertion
    while not _gone(service) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _gone(service), "the service outlived its adapter"
