"""docs/tutorial.md's commands, run as written, with the exit status the tutorial states.

Every ```sh block of the tutorial is a list of commands (a heredoc is part of its
command); a trailing ``# exit N`` states the command's exit status, 0 otherwise.
They run in order, in a scratch copy of ``examples/`` (the tutorial's commands run
from the repository's root), with ``fencepost`` and ``python3`` on PATH meaning this
interpreter. Each ```console block shows output the reader gets: its verdict,
``FINDING``, ``found in phase``, ``also seen``, ``what happened``, ``problem`` and
recap lines must appear verbatim in the
output of the command just before it, so the counterexample the tutorial explains
is the one the harness really prints.

Node.js is on every CI machine (``node``); the test fails, never skips, without it
(tests/examples/test_node_example.py does the same). About 30 s on one core: slow.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TUTORIAL = ROOT / "docs" / "tutorial.md"
FENCE = re.compile(r"^```(\w*)\n(.*?)^```$", re.MULTILINE | re.DOTALL)
HEREDOC = re.compile(r"<<'(\w+)'")
EXIT = re.compile(r"\s+# exit (\d+)$")
#: Lines of a shown output that must be printed exactly (no timings in them).
CHECKED = re.compile(
    r"^(fencepost conform: |FINDING |  found in phase: |  also seen in phase|  what happened: "
    r"|  problem: |  \d+\. |     replay: )"
)


@dataclass(frozen=True)
class Command:
    text: str
    exit: int
    shown: tuple[str, ...] = ()  # lines of the ```console block that follows, checked


def commands(markdown: str) -> list[Command]:
    """The runnable commands of the tutorial, in order, each with its expected exit
    status and the checked lines of the output shown after it."""
    out: list[Command] = []
    for match in FENCE.finditer(markdown):
        lang, body = match.group(1), match.group(2)
        if lang == "console" and out:
            shown = tuple(line for line in body.splitlines() if CHECKED.match(line))
            last = out[-1]
            out[-1] = Command(last.text, last.exit, last.shown + shown)
        if lang != "sh":
            continue
        lines = body.splitlines()
        i = 0
        while i < len(lines):
            line = lines[i]
            i += 1
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            expected = EXIT.search(line)
            text = line[: expected.start()] if expected else line
            heredoc = HEREDOC.search(line)
            if heredoc:  # the command runs through the terminator line
                end = lines.index(heredoc.group(1), i)
                text = "\n".join([text, *lines[i : end + 1]])
                i = end + 1
            out.append(Command(text, int(expected.group(1)) if expected else 0))
    return out


def test_the_tutorial_states_a_finding_and_its_output() -> None:
    listed = commands(TUTORIAL.read_text(encoding="utf-8"))
    assert len(listed) >= 8
    bug = [c for c in listed if c.exit == 1 and "my-impl/impl.py" in c.text and "sed" not in c.text]
    assert bug, "the deliberate bug's run (exit 1) is missing"
    assert any(line.startswith("FINDING 1 of 1: algebra_compare") for line in bug[0].shown)
    assert any("node " in c.text for c in listed), "the Node.js skeleton is not run"


def _shims(folder: Path) -> None:
    """`fencepost` and `python3` as this interpreter (the reader's installed ones)."""
    folder.mkdir()
    for name, target in (
        ("fencepost", f'"{sys.executable}" -m fencepost'),
        ("python3", f'"{sys.executable}"'),
    ):
        shim = folder / name
        shim.write_text(f'#!/bin/sh\nexec {target} "$@"\n', encoding="utf-8")
        shim.chmod(0o755)


@pytest.mark.slow
def test_the_tutorial_runs_as_written(tmp_path: Path) -> None:
    assert shutil.which("node"), "Node.js is required for this test: apt-get install nodejs"
    work = tmp_path / "repo"
    shutil.copytree(
        ROOT / "examples", work / "examples", ignore=shutil.ignore_patterns("__pycache__")
    )
    _shims(tmp_path / "bin")
    env = {**os.environ, "PATH": f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}"}
    for command in commands(TUTORIAL.read_text(encoding="utf-8")):
        done = subprocess.run(
            ["bash", "-c", command.text],
            cwd=work,
            env=env,
            capture_output=True,
            text=True,
            timeout=180,
        )
        where = f"docs/tutorial.md: {command.text!r}\n{done.stdout[-3000:]}\n{done.stderr[-2000:]}"
        assert done.returncode == command.exit, where
        printed = done.stdout.splitlines()
        for line in command.shown:
            assert line in printed, f"shown but not printed: {line!r}\n{where}"
