"""A SUT that writes its answer twice is blamed under the real rule, ``call_pairing``.

Before, the second answer was found by the shutdown's own check of stray output, whose
failure was swallowed with the shutdown it stopped: the shutdown was never sent, and the
SUT was blamed for "not exiting after shutdown" (``shutdown``); on processes kept for
reuse it became a ``reset`` breach, and a duplicate written late was not seen at all.

The SUT here is fencepost's own behind a relay that writes every answer twice, at once
or a moment later: whichever the harness sees first (while idle, where ``reset_ok`` was
due, or while the process ends), the verdict is ``call_pairing``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from fencepost.harness.algebra import CompareCase, run_algebra
from fencepost.harness.conformance import ConformOptions, conform
from fencepost.harness.rules import Rule
from fencepost.harness.runner import run_schedule
from fencepost.harness.transport import SubprocessSut
from fencepost.judge.values import NOTHING, Cut, Order

RELAY = """
import json, os, select, subprocess, sys, time
child = subprocess.Popen([sys.executable, "-m", "fencepost", "sut"], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, bufsize=0)
late = sys.argv[1] == "late"
fin, out = sys.stdin.fileno(), child.stdout.fileno()
pending, reading = b"", True
while True:
    ready, _, _ = select.select([out] + ([fin] if reading else []), [], [])
    if fin in ready:
        data = os.read(fin, 65536)
        if data:
            child.stdin.write(data)
        else:
            child.stdin.close()
            reading = False
    if out in ready:
        data = os.read(out, 65536)
        if not data:
            break
        pending += data
        while b"\\n" in pending:
            line, pending = pending.split(b"\\n", 1)
            os.write(1, line + b"\\n")
            kind = json.loads(line).get("type", "")
            if kind.endswith("_ok") and kind not in ("hello_ok", "reset_ok"):
                if late:
                    time.sleep(0.05)
                os.write(1, line + b"\\n")
sys.exit(child.wait())
"""


def relay(tmp_path: Path, when: str) -> SubprocessSut:
    script = tmp_path / "twice.py"
    script.write_text(RELAY)
    return SubprocessSut([sys.executable, str(script), when], prefetch=0)


@pytest.mark.parametrize("when", ["together", "late"])
def test_one_algebra_answer_written_twice(tmp_path: Path, when: str) -> None:
    factory = relay(tmp_path, when)
    case = CompareCase(Order.integer("offsets", True), NOTHING, Cut.before(1))
    result = run_algebra(factory, [case], timeout=10.0)
    factory.close()
    [violation] = result.violations
    assert violation.rule is Rule.CALL_PAIRING, violation
    assert "answers request 1 while no answer was due" in violation.message
    assert any(line.text == '{"type":"shutdown"}' for line in result.transcript) or (
        "unsolicited output while idle" in violation.message
    )


@pytest.mark.parametrize("when", ["together", "late"])
def test_a_publish_answer_written_twice(tmp_path: Path, when: str) -> None:
    from fencepost.harness.bases import BASES

    base = BASES["publisher-offsets"]
    factory = relay(tmp_path, when)
    result = run_schedule(factory, base.setup, base.schedule, timeout=10.0)
    factory.close()
    assert result.first is not None and result.first.rule is Rule.CALL_PAIRING, result.first


def test_on_processes_kept_for_reuse_it_is_call_pairing_not_reset(tmp_path: Path) -> None:
    """The duplicate arrives where reset_ok was due (before: a ``reset`` breach)."""
    factory = relay(tmp_path, "late")
    options = ConformOptions(
        levels=frozenset({"checkpointer"}),
        schedules=0,
        depth=0,
        only=frozenset({"checkpointer-millis exhaustive (depth 0)"}),
        shrink_runs=10,
    )
    report = conform(factory, options)
    factory.close()
    rules = {f.violation.rule for f in report.failures}
    assert rules == {Rule.CALL_PAIRING}, [str(f.violation) for f in report.failures]
    assert report.reused > 0  # the kept processes were used
