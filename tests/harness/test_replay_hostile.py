"""Hostile replay files and many processes: refused with file:line, or run without ``select()``.

The issue's probes: a regression file naming an unknown worker used to be
skipped silently (a known-buggy SUT then replayed CONFORMANT); one with 2,000
publishers started 2,000 processes and died in ``select()`` (descriptors past
1023). Each is fed here as a user would, through ``fencepost conform``.
"""

from __future__ import annotations

import json
import os
import resource
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from fencepost.cli import main
from fencepost.harness.conformance import ConformOptions, conform, handshake
from fencepost.harness.report import RegressionError, load_regression, save_regression
from fencepost.harness.transport import SubprocessSut
from fencepost.harness.world import MAX_WORKERS_PER_ROLE
from fencepost.mutants import CATALOG
from fencepost.sut.adapter import InProcessSut

SUT = [sys.executable, "-m", "fencepost", "sut"]


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A regression file of a known-buggy SUT (stale-cut-retry), as ``--save`` writes it."""
    report = conform(
        InProcessSut(CATALOG["stale-cut-retry"]),
        ConformOptions(levels=frozenset({"publisher"}), schedules=0),
    )
    return save_regression(tmp_path_factory.mktemp("reg") / "r-bad.jsonl", report.failures[0], "x")


def _edited(saved: Path, folder: Path, edit: str) -> tuple[Path, int]:
    """A copy of ``saved`` with one hostile edit; the line the edit is on."""
    lines = saved.read_text(encoding="utf-8").splitlines()
    header = json.loads(lines[0])
    if edit == "2000 publishers":
        header["world"]["publishers"] = [f"w{i}" for i in range(2000)]
        lines[0] = json.dumps(header)
        line = 1
    else:
        line = next(i for i, text in enumerate(lines, 1) if '"worker"' in text and i > 1)
        step = json.loads(lines[line - 1])
        step["action"]["worker"] = "w9"
        lines[line - 1] = json.dumps(step)
    path = folder / f"edited-{edit.replace(' ', '-')}-bad.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path, line


@pytest.mark.parametrize(
    ("edit", "says"),
    [
        ("unknown worker", "'w9' is not a worker of the file's world"),
        ("2000 publishers", f"at most {MAX_WORKERS_PER_ROLE} workers per role"),
    ],
)
def test_an_edited_replay_file_exits_2_with_file_and_line(
    saved: Path, tmp_path: Path, edit: str, says: str
) -> None:
    path, line = _edited(saved, tmp_path, edit)
    with pytest.raises(RegressionError, match=f"{path.name}:{line}:"):
        load_regression(path)
    result = CliRunner().invoke(main, ["conform", "--replay-file", str(path), "--", *SUT])
    assert result.exit_code == 2, result.output
    assert f"{path}:{line}:" in result.output and says in result.output
    assert "Traceback" not in result.output


@pytest.fixture
def high_descriptors() -> Iterator[int]:
    """Hold open enough descriptors that the next ones are numbered past 1023."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = 1200
    if soft < wanted + 100:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, wanted + 200), hard))
    held = [os.open(os.devnull, os.O_RDONLY) for _ in range(wanted)]
    try:
        probe = os.open(os.devnull, os.O_RDONLY)
        os.close(probe)
        assert probe > 1023, "the next descriptor must be past select()'s limit"
        yield probe
    finally:
        for fd in held:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_a_sut_talked_to_on_descriptors_past_1023(high_descriptors: int) -> None:
    """What 2,000 processes did: pipes numbered past FD_SETSIZE. poll() has no such limit."""
    factory = SubprocessSut(SUT, prefetch=0)
    name, levels, failure = handshake(factory, 10.0)
    factory.close()
    assert failure is None, failure
    assert name == "fencepost" and "publisher" in levels
