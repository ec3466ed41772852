"""The mutant catalog: every mutant is caught for the expected reason; the correct SUT never is.

In-process for speed; one mutant and the correct SUT also through real
subprocesses (the full catalog through subprocesses is the slow test).
"""

from __future__ import annotations

import sys

import pytest

from fencepost.harness.conformance import ConformOptions, conform
from fencepost.harness.rules import Rule
from fencepost.harness.transport import SubprocessSut
from fencepost.impl.publisher import Publisher
from fencepost.impl.reader import PartitionReader
from fencepost.mutants import CATALOG, CORRECT
from fencepost.sut.adapter import InProcessSut
from fencepost.vocabulary import MUTANTS

NAMES = sorted(CATALOG)
#: Every known bug has its implementation (the vocabulary names them once).
REQUIRED = set(MUTANTS)


def test_the_catalog_has_every_required_mutant() -> None:
    assert set(NAMES) == REQUIRED


@pytest.mark.parametrize("name", NAMES)
def test_mutants_change_real_pieces_only(name: str) -> None:
    """A mutant is the production publisher and reader (subclassed at most) and the
    production algebra, with one bug: it never replaces them with copies."""
    variant = CATALOG[name]
    assert issubclass(variant.publisher, Publisher)
    assert issubclass(variant.reader, PartitionReader)
    changed = [
        variant.compare is not CORRECT.compare,
        variant.merge is not CORRECT.merge,
        variant.publisher is not Publisher,
        variant.reader is not PartitionReader,
    ]
    assert any(changed), "a mutant changes something"
    assert variant.bug and variant.source, "a mutant says what is wrong and where it was seen"
    # A bug of the algebra's answers is the same bug in the publisher that uses them.
    if variant.merge is not CORRECT.merge or variant.compare is not CORRECT.compare:
        assert variant.publisher is not Publisher, f"{name}: the publisher must use its algebra"


@pytest.mark.parametrize("name", NAMES)
def test_the_rules_that_catch_a_mutant_are_rules_of_the_harness(name: str) -> None:
    for level, rules in CATALOG[name].caught_by.items():
        assert level in ("algebra", "checkpointer", "publisher")
        assert rules and rules <= {r.value for r in Rule}


def _at_level(name: str, level: str) -> None:
    options = ConformOptions(levels=frozenset({level}), schedules=0)
    report = conform(InProcessSut(CATALOG[name]), options)
    assert not report.ok, f"{name} escaped the {level} level"
    caught = report.failures[0].violation.rule
    assert caught.value in CATALOG[name].caught_by[level], f"{name} at {level}: caught by {caught}"
    failure = report.failures[0]
    if failure.family != "algebra":
        assert 0 < len(failure.actions) <= failure.original_steps, "a shrunk schedule is reported"


def _own_level(name: str) -> str:
    """The one protocol level the bug lives in beyond the algebra's answers."""
    return "publisher" if CATALOG[name].publisher is not Publisher else "checkpointer"


@pytest.mark.parametrize("name", NAMES)
def test_every_mutant_is_caught_by_the_exhaustive_bases_of_its_own_level_alone(name: str) -> None:
    """An implementation that declares only ``publisher`` (or only ``checkpointer``) still
    has every bug of the catalog caught, algebra bugs included: the scripted bases
    cover every order kind, both endpoint kinds at one coordinate, the successor edge,
    two withheld reasons at once and integers beyond 64 bits (docs/conformance.md,
    "How the search works"). No random schedule is needed.

    The run that shows it is ``test_every_mutant_is_caught_at_each_of_its_levels`` at
    this level (the same ``conform`` run, one level, no schedules): made there once,
    not twice. Here: the mutant's own level is one of the levels that run covers."""
    assert _own_level(name) in CATALOG[name].caught_by, (
        f"{name}: its own level {_own_level(name)} must catch it with no other level declared"
    )


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
    assert caught.failures[0].violation.rule.value in CATALOG["compare-swap"].caught_by["algebra"]
    clean = conform(SubprocessSut(_python_module("fencepost", "sut")), options)
    assert clean.ok, clean.failures and str(clean.failures[0].violation)


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_every_mutant_through_fencepost_sut_processes(name: str) -> None:
    command = _python_module("fencepost", "sut", "--mutant", name)
    report = conform(SubprocessSut(command), ConformOptions(schedules=0))
    assert not report.ok
    expected = set().union(*CATALOG[name].caught_by.values())
    assert report.failures[0].violation.rule.value in expected


@pytest.mark.slow
def test_the_default_budget_through_fencepost_sut_processes() -> None:
    report = conform(SubprocessSut(_python_module("fencepost", "sut")), ConformOptions())
    assert report.ok, report.failures and str(report.failures[0].violation)
