"""A whole conformance run: every phase reported, coverage, declared limits, process reuse.

The SUTs here are fencepost's own implementation behind a line filter that changes
one thing a real implementation could do differently (declare a range, refuse a
reset, keep state across a reset), so each test shows one harness behaviour.
"""

from __future__ import annotations

import json
import re
import sys

import pytest
from click.testing import CliRunner
from filtered_sut import Filter, FilteredSut

from fencepost.cli import main
from fencepost.harness.conformance import ConformOptions, conform
from fencepost.harness.coverage import Situation
from fencepost.harness.report import render_summary, report_json
from fencepost.harness.rules import Rule
from fencepost.mutants import CATALOG


def hello_with(**fields: object) -> Filter:
    def rewrite(line: str) -> str:
        msg = json.loads(line)
        if msg.get("type") == "hello_ok":
            msg.update(fields)
            return json.dumps(msg)
        return line

    return rewrite


QUICK = ConformOptions(schedules=2, algebra_batches=2)


def test_a_correct_sut_reaches_every_situation_and_reports_its_coverage() -> None:
    report = conform(FilteredSut(lambda line: line), QUICK)
    assert report.ok, report.failures
    assert report.warnings() == ()
    assert all(report.coverage.runs[s] > 0 for s in Situation)
    text = render_summary(report, "sut")
    assert "situation coverage" in text and "a stale checkpoint retry" in text
    data = report_json(report)
    assert data["coverage"]["conflict"] > 0 and data["warnings"] == []  # type: ignore[index]


def test_a_situation_never_reached_is_a_warning() -> None:
    # The scripted bases alone (no insertions, no random schedules) miss some situations.
    report = conform(
        FilteredSut(lambda line: line),
        ConformOptions(levels=frozenset({"publisher"}), schedules=0, depth=0),
    )
    assert report.ok
    missing = report.coverage.missing(report.tested)
    situations = tuple(f"no run exercised: {s.says}" for s in missing)
    assert missing and report.warnings()[: len(missing)] == situations
    # Then the wrong answers no run would have caught (harness/power.py).
    assert all(w.startswith("no run would have caught") for w in report.warnings()[len(missing) :])
    # Situations of a level that was not tested are not expected of it.
    assert Situation.EMPTY_PAGE not in missing and report.coverage.runs[Situation.EMPTY_PAGE] == 0
    text = render_summary(report, "sut")
    assert all(f"WARNING: {w}" in text for w in report.warnings())


@pytest.mark.parametrize("declared", ["int64", "int53"])
def test_a_declared_integer_range_is_never_exceeded(declared: str) -> None:
    sut = FilteredSut(hello_with(integers=declared))
    report = conform(sut, ConformOptions(levels=frozenset({"algebra"}), algebra_batches=4))
    assert report.ok, report.failures
    assert report.integers == declared
    top = 2**63 - 1 if declared == "int64" else 2**53 - 1
    numbers = [int(n) for line in sut.inbound for n in re.findall(r"-?\d{10,}", line)]
    assert numbers and max(abs(n) for n in numbers) <= top
    assert max(numbers) >= top - 1  # tested at the edge of the range
    assert declared in render_summary(report, "sut")


def test_without_a_declared_range_integers_of_any_size_are_sent() -> None:
    sut = FilteredSut(lambda line: line)
    conform(sut, ConformOptions(levels=frozenset({"algebra"}), algebra_batches=4))
    assert any("10000000000000000000000000000000000000000" in line for line in sut.inbound)


def test_processes_are_reused_after_reset_and_failures_replayed_fresh() -> None:
    sut = FilteredSut(lambda line: line, CATALOG["stale-cut-retry"])
    report = conform(sut, ConformOptions(levels=frozenset({"publisher"}), schedules=0))
    assert report.reused > 0 and report.processes < report.runs
    assert report.failures and all(f.violation.rule is not Rule.RESET for f in report.failures)
    # The reported transcript is the fresh replay's: it starts with a hello.
    assert "hello" in report.failures[0].transcript[0].text


def test_without_reset_every_run_starts_fresh_processes() -> None:
    sut = FilteredSut(lambda line: line.replace(',"capabilities":["reset"]', ""))
    report = conform(sut, ConformOptions(levels=frozenset({"publisher"}), schedules=0, depth=0))
    assert report.ok and report.reused == 0 and sut.started > report.runs


def test_a_sut_that_refuses_reset_is_reported() -> None:
    def refuse(line: str) -> str:
        if json.loads(line).get("type") == "reset_ok":
            return json.dumps({"type": "error", "id": None, "message": "no"})
        return line

    report = conform(FilteredSut(refuse), ConformOptions(levels=frozenset({"algebra"})))
    assert not report.ok
    assert any(f.violation.rule is Rule.RESET for f in report.failures)


def test_every_phase_runs_after_a_failure_and_fail_fast_stops() -> None:
    sut = FilteredSut(lambda line: line, CATALOG["compare-swap"])
    every = conform(sut, ConformOptions(schedules=2))
    failed = [p.name for p in every.phases if p.failed]
    assert "algebra exhaustive" in failed
    assert any("exhaustive (depth 1)" in p.name for p in every.phases)  # later phases ran
    assert len(every.failures) == len(failed)
    assert {f.phase for f in every.failures} == set(failed)
    fast = conform(sut, ConformOptions(schedules=2, fail_fast=True))
    assert len(fast.failures) == 1 and len(fast.phases) < len(every.phases)


def test_error_handling_is_a_phase_of_its_own() -> None:
    def wrong_id(line: str) -> str:
        msg = json.loads(line)
        if msg.get("type") == "error":
            msg["id"] = 999_999
        return json.dumps(msg)

    report = conform(FilteredSut(wrong_id), ConformOptions(schedules=0, depth=0))
    by_name = {p.name: p for p in report.phases}
    assert by_name["error handling"].failed
    # The semantic phases still ran and passed.
    assert not by_name["algebra exhaustive"].failed
    assert [f.violation.rule for f in report.failures] == [Rule.ERROR_HANDLING]


def test_a_harness_bug_is_an_internal_error_not_a_verdict(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import fencepost.harness.conformance as conformance

    def broken(*args: object, **kwargs: object) -> object:
        raise IndexError("list index out of range")

    monkeypatch.setattr(conformance, "run_case", broken)
    result = CliRunner().invoke(
        main, ["conform", "--levels", "algebra", "--", sys.executable, "-m", "fencepost", "sut"]
    )
    assert result.exit_code == 3, result.output
    assert "INTERNAL ERROR" in result.output and "not a verdict" in result.output
    assert "--replay" in result.output
