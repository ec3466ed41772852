"""An output that cannot be written exits 2 naming the option and the path, on every command
that writes outputs: never 1 (the violation code), never a traceback.

``/dev/full`` accepts the open and fails the write with ENOSPC: a full disk, whoever
runs the test (root included). ``--report`` fails on a file it must write that is a
folder. Before, ``conform --junit /dev/full -- fencepost sut`` printed CONFORMANT and
exited 1, and ``audit --html /dev/full`` on a passing log exited 1 too.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from fencepost.audit.log import op_to_json
from fencepost.audit.ops import Op, Status
from fencepost.cli import main
from fencepost.gate import PartResult
from fencepost.judge.values import NOTHING, Membership, Order, Record

ROOT = Path(__file__).resolve().parents[2]
SUT = [sys.executable, "-m", "fencepost", "sut"]
QUICK = ["--levels", "algebra", "--schedules", "0", "--depth", "0"]


def fencepost(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "fencepost", *args],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )


def refused(done: subprocess.CompletedProcess[str], option: str, path: object) -> None:
    assert done.returncode == 2, (done.stdout[-400:], done.stderr[-400:])
    assert f"Error: {option}: cannot write {path}: No space left on device" in done.stderr or (
        f"Error: {option}: cannot write {path}: Is a directory" in done.stderr
    ), done.stderr
    assert "Traceback" not in done.stderr


def passing_log(tmp_path: Path) -> Path:
    """A creation and a read of the initial record: every property holds."""
    m = Membership.of(1, "q", Order.integer("offsets", True), ["A"])
    initial = Record(1, NOTHING, 0, None)
    ops = [
        Op("x", "w", 0, "s", "create_stream", 1, 2, Status.OK, {"membership": m}, initial),
        Op("x", "w", 1, "s", "read_publication", 3, 4, Status.OK, {}, initial),
    ]
    log = tmp_path / "ok.log"
    log.write_text("".join(json.dumps(op_to_json(op)) + "\n" for op in ops))
    return log


@pytest.mark.parametrize("option", ["--junit", "--html", "--summary-md"])
def test_conform_outputs(option: str) -> None:
    done = fencepost("conform", *QUICK, option, "/dev/full", "--", *SUT)
    assert "fencepost conform: CONFORMANT" in done.stdout  # the verdict is printed first
    refused(done, option, "/dev/full")


def test_conform_save_and_report(tmp_path: Path) -> None:
    done = fencepost("conform", *QUICK, "--save", "/dev/full", "--", *SUT, "--mutant", "relabel")
    assert "NOT CONFORMANT" in done.stdout
    refused(done, "--save", "/dev/full")
    report = tmp_path / "report"
    (report / "summary.txt").mkdir(parents=True)  # a folder where a file must go
    done = fencepost("conform", *QUICK, "--report", str(report), "--", *SUT)
    refused(done, "--report", report / "summary.txt")


@pytest.mark.parametrize("option", ["--html", "--summary-md"])
def test_audit_outputs(tmp_path: Path, option: str) -> None:
    log = passing_log(tmp_path)
    assert fencepost("audit", str(log)).returncode == 0
    refused(fencepost("audit", option, "/dev/full", str(log)), option, "/dev/full")


@pytest.mark.parametrize("option", ["--junit", "--html", "--summary-md"])
def test_scenarios_outputs(option: str) -> None:
    refused(fencepost("scenarios", "--target", "model", option, "/dev/full"), option, "/dev/full")


@pytest.mark.parametrize("option", ["--html", "--summary-md"])
def test_explore_outputs(option: str) -> None:
    done = fencepost("explore", "--part", "ingest", option, "/dev/full")
    refused(done, option, "/dev/full")


@pytest.mark.parametrize("option", ["--junit", "--html", "--summary-md"])
def test_check_outputs(option: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The gate's real seam: with ``--jobs 1`` the Scheduler runs each part through
    ``fencepost.gate.run_part`` in this process (no fork), so the stub is what runs."""
    import fencepost.gate as gate

    ran: list[str] = []

    def passing(part: gate.Part, options: gate.GateOptions) -> PartResult:
        ran.append(part.name)
        return PartResult(part.name, True, "ok")

    monkeypatch.setattr(gate, "run_part", passing)
    args = ["check", "--jobs", "1", "--only", "proofs", option, "/dev/full"]
    result = CliRunner().invoke(main, args)
    assert ran == ["proofs"], "the stubbed part did not run: the seam moved"
    assert result.exit_code == 2, result.output  # never 1: nothing failed but the write
    assert f"Error: {option}: cannot write /dev/full: No space left on device" in result.output
