"""`fencepost conform` against the clean-room Python example (examples/python-sut).

The example was written from the documentation alone. The correct program must be
conformant (exit 0) under every legitimate choice it can make; each deliberate bug
that the default budget catches must be reported (exit 1) with the rule named here.
The bugs the default budget misses are listed in KNOWN_MISSES with the situation a
schedule must contain to expose them (see examples/python-sut/README.md).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "python-sut" / "fencepost_example.py"

# bug -> a rule the default budget (all three levels, seed 0) reports for it
CAUGHT: dict[str, str] = {
    "kind-blind": "algebra_compare",
    "succ-everywhere": "algebra_compare",
    "utf16": "algebra_compare",
    "float-coords": "algebra_compare",
    "falsy-zero": "algebra_merge",  # a merge case holding 0 fails before a compare does
    "string-casefold": "algebra_compare",
    "string-nfkc": "algebra_compare",
    "compare-succ-ignored": "algebra_compare",
    "nothing-as-zero": "algebra_compare",
    "int-as-text": "algebra_merge",  # a random merge case fails before a compare does
    "sentinel-min": "algebra_merge",
    "reason-order": "algebra_merge",
    "skip-missing": "algebra_merge",
    "provisional-ok": "algebra_merge",
    "scope-blind": "algebra_merge",
    "epoch-blind": "algebra_merge",
    "nonmember-pins": "algebra_merge",
    "relabel": "algebra_merge",
    "incomparable-scalar": "algebra_merge",
    "exclusive-normalize": "algebra_merge",
    "stale-cut-retry": "monotone_publication",
    "blind-success": "lost_response_honesty",
    "confirm-revision": "lost_response_honesty",
    "confirm-other-epoch": "lost_response_honesty",
    "monotone-as-reset": "monotone_publication",
    "reset-as-monotone": "honest_outcome",
    "op-id-reuse": "op_id_reuse",
    "fence-blind": "honest_outcome",  # publisher-fence: another cutover past the proposal
    "gave-up-dishonest": "honest_outcome",
    "no-retry-budget": "runaway",
    "giveup-on-withheld": "honest_outcome",
    "stale-unchanged": "honest_outcome",
    "lost-read-empty": "honest_outcome",
    "cached-membership": "honest_outcome",
    "reset-keeps-cache": "reset",
    "max-observed": "checkpoint_truth",
    "nonfinal-claim": "checkpoint_truth",
    "epsilon": "checkpoint_truth",
    "checkpoint-before-outcomes": "checkpoint_truth",
    "ckpt-overwrite": "checkpoint_monotonicity",
    "ckpt-lost-success": "ingest_report",
    "dup-coordinate": "checkpoint_truth",
    "restart-from-scratch": "checkpoint_monotonicity",
    "skip-unclaimed": "checkpoint_truth",
    "ingest-report-unstored": "ingest_report",
    "resume-any-token": "opaque_token",
    # issue 21: missed by the default budget until the harness learnt each
    "merge-dup-last-wins": "error_handling",  # the duplicate-member merge probe
    "pub-write-equal": "honest_outcome",  # a same-epoch write restating the record's claim
    "ckpt-provisional-counted": "checkpoint_truth",  # a reader's own provisional progress
    # a second clean-room implementation's misses (publisher-string-edges; the judge's
    # rule that an attempt decides from its membership epoch's checkpoints)
    "string-prefix-equal": "algebra_compare",
    "string-kinds-swapped": "algebra_compare",
    "empty-membership-nothing": "algebra_merge",
    "checkpoints-epoch-plus-one": "honest_outcome",
}

# Bugs that live where only the algebra level can show them: the harness never hands a
# publisher or a reader a vector with two checkpoints for one member (its stores hold
# one per key), so without the algebra level there is nothing to catch.
ALGEBRA_ONLY = {"merge-dup-last-wins"}

# Missed by the default budget. The first run of this example missed five bugs and
# three more without the algebra level; each gap became a scripted base or a harness
# step (docs/conformance.md, "How the search works"), and the list is now empty.
KNOWN_MISSES: dict[str, str] = {}

FAST = {"relabel", "blind-success", "ckpt-lost-success", "merge-dup-last-wins"}


def conform(
    *sut_args: str, levels: str | None = None, fail_fast: bool = False
) -> tuple[int, dict[str, Any]]:
    """Run `fencepost conform --json` on the example; (exit status, summary)."""
    command = [sys.executable, "-m", "fencepost", "conform", "--json"]
    if fail_fast:
        command.append("--fail-fast")
    if levels is not None:
        command += ["--levels", levels]
    command += ["--", sys.executable, str(EXAMPLE), *sut_args]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=900)
    summary: dict[str, Any] = json.loads(done.stdout)
    return done.returncode, summary


def rules(summary: dict[str, Any]) -> set[str]:
    return {failure["violation"]["rule"] for failure in summary["failures"]}


def test_every_bug_is_classified() -> None:
    listing = subprocess.run(
        [sys.executable, str(EXAMPLE), "--list-bugs"],
        capture_output=True,
        text=True,
        check=True,
    )
    names = {line.split()[0] for line in listing.stdout.splitlines() if line.strip()}
    assert names == CAUGHT.keys() | KNOWN_MISSES.keys()
    assert not CAUGHT.keys() & KNOWN_MISSES.keys()


def test_correct_example_is_conformant() -> None:
    status, summary = conform()
    assert status == 0, rules(summary)
    assert summary["conformant"] is True
    assert summary["warnings"] == []


CHOICES = [
    ["--on-conflict", "reread"],
    ["--on-conflict", "shortcut"],
    ["--lost-write", "rewrite"],
    ["--confirm-cut", "record"],
    ["--confirm-cut", "unchanged"],
    ["--gave-up-report", "first"],
    ["--gave-up-report", "null"],
    ["--retries", "0"],
    ["--retries", "10"],
    ["--integers", "int53"],
    ["--integers", "int64"],
    ["--ckpt-conflict", "continue"],
    ["--ckpt-lost", "rewrite"],
    ["--max-pages", "1"],
]


@pytest.mark.slow
@pytest.mark.parametrize("choice", CHOICES, ids=lambda c: "=".join(c))
def test_every_legitimate_choice_is_conformant(choice: list[str]) -> None:
    status, summary = conform(*choice)
    assert status == 0, rules(summary)


@pytest.mark.slow
@pytest.mark.parametrize("levels", ["checkpointer,publisher", "publisher", "checkpointer"])
def test_fewer_levels_are_conformant(levels: str) -> None:
    status, summary = conform(levels=levels)
    assert status == 0, rules(summary)
    assert summary["tested"] == levels.split(",")


@pytest.mark.parametrize(
    ("bug", "rule"),
    [
        pytest.param(bug, rule, marks=() if bug in FAST else (pytest.mark.slow,), id=bug)
        for bug, rule in CAUGHT.items()
    ],
)
def test_bug_is_caught(bug: str, rule: str) -> None:
    status, summary = conform("--bug", bug, fail_fast=True)
    assert status == 1
    assert summary["conformant"] is False
    assert rule in rules(summary)


@pytest.mark.slow
@pytest.mark.parametrize("bug", sorted(set(CAUGHT) - ALGEBRA_ONLY))
def test_every_bug_is_caught_without_the_algebra_level(bug: str) -> None:
    """An implementation that declares no algebra level (as many will) still has every bug
    caught: a wrong comparison or merge shows in what its publisher publishes or its
    reader certifies."""
    status, summary = conform("--bug", bug, levels="checkpointer,publisher", fail_fast=True)
    assert status == 1, f"{bug} escaped without the algebra level"
    assert summary["conformant"] is False
