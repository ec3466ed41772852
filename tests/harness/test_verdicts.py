"""Verdicts that lead (issue 23, items 4 and 5).

One finding per distinct bug, not one per phase; a closing recap whose very last line
is the verdict; live progress that marks failed phases and stops finished phases'
clocks; HTML and Markdown with the failures first, linking to their timelines; and a
SUT that cannot be started or greeted is exit 2 with the cause on the first line,
never "NOT CONFORMANT" (exit 1).

Before: ``fencepost conform -- fencepost sut --mutant relabel`` printed the one bug five
times (once per failing phase, 202 lines, raw transcripts last, no recap), and
``fencepost conform -- ./nope-binary`` printed NOT CONFORMANT above 35 zero-coverage
rows and 35 warnings and exited 1.
"""

from __future__ import annotations

import dataclasses
import functools
import re
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest
from click.testing import CliRunner

from fencepost.cli import main
from fencepost.harness.conformance import ConformOptions, ConformReport, Phase, conform
from fencepost.harness.findings import group, signature
from fencepost.harness.report import render_summary, report_json
from fencepost.mutants import CATALOG
from fencepost.sut.adapter import InProcessSut
from fencepost.views.conform import conform_report

SUT = [sys.executable, "-m", "fencepost", "sut"]
QUICK = ["--schedules", "0", "--depth", "0"]


@functools.cache
def relabel(levels: str = "publisher") -> ConformReport:
    """The relabel mutant, found by several phases (one bug each time): a frozen value."""
    options = ConformOptions(levels=frozenset(levels.split(",")), schedules=0, depth=0)
    return conform(InProcessSut(CATALOG["relabel"]), options)


# --- one finding per bug ---------------------------------------------------------------


def test_one_bug_found_by_several_phases_is_one_finding_with_its_shortest_schedule() -> None:
    report = relabel()
    assert len(report.failures) >= 2  # several phases found it
    assert {f.violation.rule.value for f in report.failures} == {"soundness"}
    (finding,) = group(report.failures)
    shortest = min(len(f.actions) for f in report.failures)
    assert len(finding.failure.actions) == shortest
    assert finding.phases == tuple(f.phase for f in report.failures)
    assert finding.also_seen and finding.failure.phase not in finding.also_seen
    assert finding.signature == ("no_relabeling", "soundness") == signature(finding.failure)


def test_the_summary_shows_the_bug_once_and_ends_with_a_recap_and_the_verdict() -> None:
    report = relabel("algebra,publisher")
    text = render_summary(report, "my-sut")
    lines = text.splitlines()
    assert len(group(report.failures)) == 2  # algebra_merge and soundness: two bugs
    assert text.count("FINDING ") == 2 and "FAILURE:" not in text
    assert lines[0] == lines[-1]  # the verdict leads and closes
    assert lines[-1].startswith("fencepost conform: NOT CONFORMANT: 2 findings")
    recap = lines.index(next(line for line in lines if line.startswith("recap: 2 findings")))
    tail = lines[recap + 1 : -1]
    assert [line.split(":")[0].strip() for line in tail[::2]] == [
        "1. algebra_merge",
        "2. soundness",
    ]
    assert all(
        line.strip().startswith("replay: fencepost conform --replay ") for line in tail[1::2]
    )
    assert "also seen in" in tail[0] and "expected frontier before" in tail[0]  # never cut
    assert "WARNING" not in text  # a failing phase stops early: its coverage is no blind spot
    assert "situation coverage" not in text and "  coverage: partial" in text
    findings = report_json(report)["findings"]
    assert isinstance(findings, list) and len(findings) == 2


def test_the_command_prints_one_finding_and_the_verdict_last() -> None:
    result = CliRunner().invoke(
        main, ["conform", "--levels", "algebra", *QUICK, "--", *SUT, "--mutant", "relabel"]
    )
    assert result.exit_code == 1, result.output
    lines = result.output.rstrip("\n").splitlines()
    assert result.output.count("FINDING 1 of 1: algebra_merge") == 1
    assert "FINDING 2" not in result.output
    assert "also seen in phase(s): algebra random" in result.output
    assert lines[-1] == "fencepost conform: NOT CONFORMANT: 1 finding (seen in 2 of 3 phases)"
    assert lines[-2].strip().startswith("replay: fencepost conform --replay -1 -- ")


def test_a_pass_ends_with_the_verdict_and_warns_of_no_unreachable_situation() -> None:
    """An algebra-only SUT cannot restart a worker after a crash: no warning for it."""
    result = CliRunner().invoke(main, ["conform", "--levels", "algebra", *QUICK, "--", *SUT])
    assert result.exit_code == 0, result.output
    assert result.output.rstrip("\n").splitlines()[-1] == "fencepost conform: CONFORMANT"
    assert "WARNING" not in result.output


def test_a_passing_replay_prints_no_coverage_warning() -> None:
    """One case reaches a few situations by design; before, 20 WARNING lines followed."""
    result = CliRunner().invoke(main, ["conform", "--replay", "-4", "--", *SUT])
    assert result.exit_code == 0, result.output
    assert "WARNING" not in result.output and "situation coverage" not in result.output
    assert result.output.rstrip("\n").splitlines()[-1] == "fencepost conform: CONFORMANT"


# --- live progress ---------------------------------------------------------------------


def test_progress_marks_a_failed_phase_and_stops_every_finished_clock() -> None:
    from fencepost.commands.conform import _Progress

    progress = _Progress()
    progress.update("algebra exhaustive", 1, None)
    progress.ended(Phase("algebra exhaustive", 1, 10, 0.5, failed=True))
    progress.update("publisher-offsets exhaustive (depth 1)", 3, None)
    progress.update("late story", 1, None)  # a phase whose end is not announced
    tasks = {t.id: t for t in progress._progress.tasks}
    failed, second, third = (tasks[progress._tasks[name]] for name in progress._tasks)
    assert "\u2717" in failed.description and "FAILED" in failed.description
    assert failed.stop_time is not None and second.stop_time is not None  # clocks stopped
    assert third.stop_time is None  # still running
    progress.ended(Phase("late story", 1, 3, 0.1))
    assert "\u2713" in third.description and third.stop_time is not None


# --- HTML and Markdown: failures first ---------------------------------------------------


class _Order(HTMLParser):
    """The page's landmarks in document order: the index, each section, each table."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[str] = []
        self.links: list[str] = []
        self.ids: set[str] = set()
        self.in_figure = False

    def handle_endtag(self, tag: str) -> None:
        if tag == "figure":
            self.in_figure = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if a.get("id"):
            self.ids.add(str(a["id"]))
        if tag == "nav":
            self.seen.append("index")
        elif tag == "section" and "part" in (a.get("class") or ""):
            self.seen.append(f"section:{a.get('id', '')}")
        elif tag == "figure":
            self.seen.append(f"timeline:{a.get('id')}")
            self.in_figure = True
        elif tag == "table" and not self.in_figure:  # the inspector's tables are the step's
            self.seen.append("table")
        elif tag == "a" and a.get("href", "").startswith("#"):  # type: ignore[union-attr]
            self.links.append(str(a["href"])[1:])


def test_the_page_puts_the_failures_first_each_linked_to_its_timeline() -> None:
    from fencepost.reports import render_html

    page = _Order()
    page.feed(render_html(conform_report(relabel("algebra,publisher"), "my-sut")))
    order = page.seen
    assert order[0] == "index"
    assert order[1] == "section:failure-1" and "section:failure-2" in order
    first_table = order.index("table")
    assert order.index("section:failure-2") < order.index("timeline:t1") < first_table
    assert set(page.links) == {"failure-1", "failure-2", "t1"} and set(page.links) <= page.ids


def test_markdown_lists_failures_first_and_never_escapes_inside_code_spans() -> None:
    from fencepost.harness.rules import Rule, Violation
    from fencepost.reports import render_markdown

    report = relabel()
    v = report.failures[0].violation
    named = Violation(Rule.MONOTONE_PUBLICATION, v.message, v.step, v.worker)
    failure = dataclasses.replace(report.failures[0], violation=named)
    text = render_markdown(conform_report(dataclasses.replace(report, failures=(failure,)), "s"))
    assert "`monotone_publication`" in text  # the breach, in a code span, literally
    for span in re.findall(r"(`+)(.+?)\1", text):
        assert "\\" not in span[1], span  # a backslash in a code span is shown on GitHub
    index = text.index("**Failures**")
    assert index < text.index('<a name="failure-1"></a>') < text.index("**phases**")
    assert "1. [finding 1 of 1: monotone\\_publication" in text
    assert "](#failure-1)" in text


# --- a SUT that cannot be tested: exit 2, the cause first -------------------------------


def _script(tmp_path: Path, body: str, executable: bool = True) -> str:
    path = tmp_path / "sut.sh"
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755 if executable else 0o644)
    return str(path)


@pytest.mark.parametrize(
    ("case", "cause"),
    [
        ("missing", "cannot start '{path}': No such file or directory"),
        ("not executable", "cannot start '{path}': Permission denied"),
        ("exits at once", "the SUT closed its output (exited with status 0)"),
        ("garbage", "hello was answered with line: not JSON"),
        ("another protocol", "must be answered with hello_ok for protocol 1"),
    ],
)
def test_a_sut_that_cannot_be_tested_is_exit_2_with_the_cause_first(
    tmp_path: Path, case: str, cause: str
) -> None:
    if case == "missing":
        command = str(tmp_path / "nope-binary")
    else:
        body = {
            "not executable": "",
            "exits at once": "exit 0\n",
            "another protocol": 'read x\necho \'{"type": "hello_ok", "protocol": 2}\'\n',
        }.get(case, "read x\necho garbage\n")
        command = _script(tmp_path, body, executable=case != "not executable")
    result = CliRunner().invoke(main, ["conform", *QUICK, "--", command])
    assert result.exit_code == 2, result.output
    first = result.output.splitlines()[0]
    assert first.startswith("fencepost conform: cannot test the SUT: "), first
    assert cause.format(path=command) in first
    assert "NOT CONFORMANT" not in result.output and "situation coverage" not in result.output
    assert "WARNING" not in result.output and "Traceback" not in result.output
    assert "check: " in result.output  # what to try


def test_a_hello_ok_with_a_bad_field_is_judged_not_refused(tmp_path: Path) -> None:
    """A hello_ok of protocol 1 whose name is not valid text is the program's own bug
    (exit 1, reported), not a command that starts the wrong program."""
    hello = 'read x\necho \'{"type": "hello_ok", "protocol": 1, "name": "\\ud800"}\'\n'
    result = CliRunner().invoke(main, ["conform", *QUICK, "--", _script(tmp_path, hello)])
    assert result.exit_code == 1, result.output
    assert (
        result.output.rstrip("\n")
        .splitlines()[-1]
        .startswith("fencepost conform: NOT CONFORMANT: 1 finding")
    )


def test_the_late_world_refuses_a_missing_binary_the_same_way(tmp_path: Path) -> None:
    command = str(tmp_path / "nope-binary")
    result = CliRunner().invoke(main, ["conform", "--world", "late-commits", "--", command])
    assert result.exit_code == 2, result.output
    assert result.output.startswith("fencepost conform: cannot test the SUT: cannot start")
