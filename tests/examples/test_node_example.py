"""The Node.js example implementation (examples/node-sut), judged by ``fencepost conform``.

It was written from docs/conformance.md alone, not from fencepost's Python code:
the harness's verdicts on it are verdicts on code fencepost did not write.

- the correct implementation conforms at the default budget, with every level
  and with each choice a correct implementation may make (docs/conformance.md,
  "Choices a correct implementation may make"): deciding from the record a
  ``conflict`` reply carries or reading it again, reporting ``confirmed`` with
  the proposal or with the record's cut, a small retry budget, a declared
  integer range, process reuse or fresh processes;
- each of its deliberate bugs is caught, at every level setting where the bug
  can show: with the algebra level, and without it (``checkpointer,publisher``)
  as many implementations declare, so an algebra bug must show in the
  publisher or the checkpointer that uses it.

Node.js is on every CI machine (``node``); the test fails, never skips, without it.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from fencepost.harness.conformance import ConformOptions, ConformReport, conform
from fencepost.harness.transport import SubprocessSut

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "node-sut" / "fencepost-example.js"
NODE = shutil.which("node")

ALL_LEVELS = frozenset({"algebra", "checkpointer", "publisher"})
WITHOUT_ALGEBRA = frozenset({"checkpointer", "publisher"})


def _node() -> str:
    assert NODE is not None, "Node.js is required for this test: apt-get install nodejs"
    return NODE


def run(*flags: str, levels: frozenset[str] = ALL_LEVELS, fail_fast: bool = False) -> ConformReport:
    factory = SubprocessSut([_node(), str(EXAMPLE), "--reset", *flags])
    return conform(factory, ConformOptions(levels=levels, fail_fast=fail_fast))


def bugs() -> list[str]:
    listed = subprocess.run(
        [_node(), str(EXAMPLE), "--list-bugs"], capture_output=True, text=True, check=True
    )
    return [line.split()[0] for line in listed.stdout.splitlines() if line.strip()]


def test_the_example_lists_its_bugs() -> None:
    assert len(bugs()) >= 20
    assert {"kind-blind", "relabel", "reason-order", "number", "ingest-report-computed"} <= set(
        bugs()
    )


def test_the_correct_example_conforms_with_full_coverage() -> None:
    report = run()
    assert report.ok, report.failures and str(report.failures[0].violation)
    assert report.tested == ("algebra", "checkpointer", "publisher")
    assert report.reused > 0, "the example declares reset: processes are reused"
    assert report.warnings() == (), report.warnings()


CHOICES = [
    ("--confirm-report", "record"),  # confirmed carries the record's cut
    ("--max-writes", "1"),  # the smallest retry budget: one write per attempt
    ("--max-timeouts", "1"),  # gives up at the second lost response of a request
    ("--integers", "int53"),  # JavaScript's exact integers, declared
    ("--integers", "int64"),
]


def test_reading_the_record_again_after_a_conflict_also_conforms() -> None:
    """The default decides from the record a conflict reply carries; this one rereads."""
    report = run("--conflict-reread", levels=WITHOUT_ALGEBRA)
    assert report.ok, report.failures and str(report.failures[0].violation)


@pytest.mark.slow
@pytest.mark.parametrize("choice", CHOICES, ids=lambda flags: " ".join(flags))
def test_each_choice_of_a_correct_implementation_conforms(choice: tuple[str, ...]) -> None:
    report = run(*choice, levels=WITHOUT_ALGEBRA)
    assert report.ok, report.failures and str(report.failures[0].violation)


def test_without_reset_every_run_starts_fresh_processes() -> None:
    factory = SubprocessSut([_node(), str(EXAMPLE)])
    report = conform(factory, ConformOptions(levels=frozenset({"checkpointer"}), schedules=2))
    assert report.ok, report.failures and str(report.failures[0].violation)
    assert report.reused == 0
    # Every process is counted, kept or not (each run's workers, and the handshake's).
    assert report.processes > report.runs


#: Bugs that must be caught without the algebra level too (every bug of the example:
#: an algebra bug is also a bug of the publisher or checkpointer that uses it).
FAST = ["kind-blind", "reason-order", "ingest-report-computed"]


@pytest.mark.parametrize("bug", FAST)
def test_representative_bugs_are_caught_without_the_algebra_level(bug: str) -> None:
    report = run("--bug", bug, levels=WITHOUT_ALGEBRA, fail_fast=True)
    assert not report.ok, f"{bug} escaped the default budget without the algebra level"


@pytest.mark.slow
@pytest.mark.parametrize("levels", [ALL_LEVELS, WITHOUT_ALGEBRA], ids=["all", "no-algebra"])
@pytest.mark.parametrize("bug", bugs() if NODE else ["node-missing"])
def test_every_bug_is_caught_at_the_default_budget(bug: str, levels: frozenset[str]) -> None:
    report = run("--bug", bug, levels=levels, fail_fast=True)
    assert not report.ok, f"{bug} escaped the default budget at levels {sorted(levels)}"
