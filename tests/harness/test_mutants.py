"""The mutant catalog: every mutant is caught for the expected reason; the correct SUT never is.

In-process for speed; one mutant and the correct SUT also through real
subprocesses (the full catalog through subprocesses is the slow test).
"""

from __future__ import annotations

import sys

import pytest

from fencepost.harness.conformance import ConformOptions, conform
from fencepost.harness.transport import SubprocessSut
from fencepost.mutants.sut_catalog import CATALOG
from fencepost.sut.adapter import (
    CORRECT,
    InProcessSut,
    Misreading,
    PublisherWireStore,
    ReaderWireStore,
    WireProvider,
)

NAMES = sorted(CATALOG)
REQUIRED = {
    "relabel",
    "skip-missing",
    "max-observed",
    "epsilon",
    "blind-success",
    "stale-cut-retry",
    "epoch-blind",
    "provisional-ok",
    "overwrite",
    "cutover-regress",
    "confirm-revision",
    "reason-order",
    "compare-swap",
    "scope-blind",
    "fence-blind",
}


def test_the_catalog_has_every_required_mutant() -> None:
    assert set(NAMES) == REQUIRED


@pytest.mark.parametrize("name", NAMES)
def test_mutants_change_one_real_piece(name: str) -> None:
    variant = CATALOG[name].variant
    changed = [
        variant.compare is not CORRECT.compare,
        type(variant.misreading) is not Misreading,
        variant.publisher_store is not PublisherWireStore,
        variant.reader_store is not ReaderWireStore,
        variant.provider is not WireProvider,
        variant.policy is not None,
    ]
    # provisional-ok is one misreading (non-final taken as final) met at two places,
    # the merge and the ingest pass, like the model's mutant of the same name.
    pieces = 2 if name == "provisional-ok" else 1
    assert sum(changed) == pieces, "a mutant swaps one piece of the real implementation"
    assert issubclass(variant.publisher_store, PublisherWireStore)
    assert issubclass(variant.reader_store, ReaderWireStore)
    assert issubclass(variant.provider, WireProvider)


def _at_level(name: str, level: str) -> None:
    options = ConformOptions(levels=frozenset({level}), schedules=0)
    report = conform(InProcessSut(CATALOG[name].variant), options)
    assert not report.ok, f"{name} escaped the {level} level"
    caught = report.failures[0].violation.rule
    assert caught in CATALOG[name].caught_by[level], f"{name} at {level}: caught by {caught}"
    failure = report.failures[0]
    if failure.family != "algebra":
        assert 0 < len(failure.actions) <= failure.original_steps, "a shrunk schedule is reported"


@pytest.mark.parametrize(
    ("name", "level"), [(n, lvl) for n in NAMES for lvl in sorted(CATALOG[n].caught_by)]
)
def test_every_mutant_is_caught_at_each_of_its_levels(name: str, level: str) -> None:
    _at_level(name, level)


def test_the_correct_sut_raises_no_alarm_in_process() -> None:
    report = conform(InProcessSut(), ConformOptions(schedules=30))
    assert report.ok, report.failures and str(report.failures[0].violation)
    assert report.tested == ("algebra", "checkpointer", "publisher")
    assert report.runs > 300


def _python_module(*args: str) -> list[str]:
    return [sys.executable, "-m", *args]


def test_through_real_subprocesses() -> None:
    options = ConformOptions(levels=frozenset({"algebra"}), schedules=0, algebra_batches=2)
    caught = conform(SubprocessSut(_python_module("fencepost.sut", "compare-swap")), options)
    assert caught.failures[0].violation.rule in CATALOG["compare-swap"].caught_by["algebra"]
    clean = conform(SubprocessSut(_python_module("fencepost", "sut")), options)
    assert clean.ok, clean.failures and str(clean.failures[0].violation)


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_every_mutant_through_fencepost_sut_processes(name: str) -> None:
    command = _python_module("fencepost", "sut", "--mutant", name)
    report = conform(SubprocessSut(command), ConformOptions(schedules=0))
    assert not report.ok
    expected = set().union(*CATALOG[name].caught_by.values())
    assert report.failures[0].violation.rule in expected


@pytest.mark.slow
def test_the_default_budget_through_fencepost_sut_processes() -> None:
    report = conform(SubprocessSut(_python_module("fencepost", "sut")), ConformOptions())
    assert report.ok, report.failures and str(report.failures[0].violation)
