"""Every command of the installed ``fencepost`` script runs: the entry point, the lazy
command table and the data files each command reads.

.ci/run's wheel stage installs the built wheel, not the source tree, in a fresh
virtualenv and runs tests/packaging: what a wheel can get wrong (a module or data
file left out, a broken entry point, a command module that fails to import) shows
here, once per command of :data:`fencepost.cli.COMMANDS` (the one table), each on
a small input that reads what the wheel must ship: scenarios and contracts (package
data), the HTML report's script and style, the SUT started through the script
itself. The behaviour of each command is tested at length elsewhere; a few seconds
here in all.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from importlib.metadata import version
from pathlib import Path

import pytest

from fencepost.adapters import ADAPTERS
from fencepost.cli import COMMANDS

#: The console script ``pip install`` put beside this interpreter.
SCRIPT = Path(sys.executable).parent / "fencepost"


def fencepost(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    assert SCRIPT.exists(), f"the console script is missing: {SCRIPT}"
    env = {**os.environ, "COLUMNS": "200", "NO_COLOR": "1"}
    env.pop("GITHUB_STEP_SUMMARY", None)
    return subprocess.run(
        [str(SCRIPT), *args], capture_output=True, text=True, timeout=120, cwd=cwd, env=env
    )


def ok(run: subprocess.CompletedProcess[str]) -> str:
    assert run.returncode == 0, run.stdout + run.stderr
    assert "Traceback" not in run.stderr, run.stderr
    return run.stdout


def _explore(tmp: Path) -> None:
    page = tmp / "explore.html"
    report = json.loads(
        ok(fencepost("explore", "--part", "composed", "--json", "--html", str(page)))
    )
    assert report["verdict"] == "holds" and report["states"] > 1000
    # the report's script and style are package data, inlined into the page
    assert "<script" in page.read_text() and "figure.timeline" in page.read_text()


def _prove(tmp: Path) -> None:
    report = json.loads(ok(fencepost("prove", "--only", "spec_order_exact", "--json")))
    assert report["ok"] is True and report["theorems"]


def _demo(tmp: Path) -> None:
    log = tmp / "calls.jsonl"
    args = ["--db", str(tmp / "demo.db"), "--partitions", "2", "--events", "20"]
    out = ok(fencepost("demo", *args, "--interval", "0", "--json", "--record", str(log)))
    assert json.loads(out.splitlines()[-1])["event"] == "done"
    assert log.stat().st_size > 0


def _audit(tmp: Path) -> None:
    _demo(tmp)
    report = json.loads(ok(fencepost("audit", str(tmp / "calls.jsonl"), "--json")))
    assert report["violations"] == [] and report["operations"] > 0


def _conform(tmp: Path) -> None:
    """``conform`` judging ``sut``, both through the installed script."""
    out = ok(
        fencepost(
            "conform", "--levels", "algebra", "--schedules", "0", "--json", "--", str(SCRIPT), "sut"
        )
    )
    assert json.loads(out)["conformant"] is True


def _scenarios(tmp: Path) -> None:
    """The shipped library (package data), every scenario on the implementation."""
    listed = [line.split()[0] for line in ok(fencepost("scenarios", "--list")).splitlines()]
    assert "beam-36470-ok" in listed and "beam-36470-bad" in listed
    report = json.loads(ok(fencepost("scenarios", "--target", "impl", "--json")))
    assert report["ok"] is True and report["counts"]["pass"] > len(listed) // 2


def _check(tmp: Path) -> None:
    parts = ok(fencepost("check", "--list"))
    assert "proofs" in parts and "conformance" in parts


def _review(tmp: Path) -> None:
    run = fencepost("review", "--all", "--json")
    assert run.returncode in (0, 1), run.stderr  # 1: a shipped contract has findings
    assert json.loads(run.stdout)["contracts"], "the shipped contracts are package data"


def _contracts(tmp: Path) -> None:
    assert "name" in ok(fencepost("contracts", "list"))


def _adapter(tmp: Path) -> None:
    """The command lists every adapter; a tool that is not installed is named with its extra."""
    usage = ok(fencepost("adapter", "--help"))
    assert all(name in usage for name in ADAPTERS)
    name, info = sorted(ADAPTERS.items())[0]
    hidden = (
        f"import sys; sys.modules[{info.library!r}] = None; from fencepost.cli import main; main()"
    )
    run = subprocess.run(
        [sys.executable, "-c", hidden, "adapter", name],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert run.returncode == 2, run.stderr
    assert f"pip install 'fencepost[{info.extra}]'" in run.stderr


def _sut(tmp: Path) -> None:
    assert "relabel" in ok(fencepost("sut", "--list-mutants"))


SMOKE: dict[str, Callable[[Path], None]] = {
    "adapter": _adapter,
    "audit": _audit,
    "check": _check,
    "conform": _conform,
    "contracts": _contracts,
    "demo": _demo,
    "explore": _explore,
    "prove": _prove,
    "review": _review,
    "scenarios": _scenarios,
    "sut": _sut,
}


def test_every_command_has_its_smoke_run() -> None:
    assert set(SMOKE) == set(COMMANDS), "a new command needs its smoke run here"


@pytest.mark.parametrize("command", sorted(SMOKE))
def test_the_installed_script_runs_the_command(command: str, tmp_path: Path) -> None:
    SMOKE[command](tmp_path)


def test_the_script_reports_the_installed_version() -> None:
    assert ok(fencepost("--version")).split()[-1] == version("fencepost")
