"""``--html``, ``--summary-md`` and ``$GITHUB_STEP_SUMMARY`` on the commands, and how
``fencepost check`` prints: each part once, plain in logs, no colour under ``NO_COLOR``."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from fencepost import gate
from fencepost.cli import main
from fencepost.gate import GateOptions, Part, PartResult

ROOT = Path(__file__).resolve().parents[2]
ANSI = re.compile(r"\x1b\[[0-9;]*m")
#: An SGR sequence that sets a colour (foreground, background, bright, 256/true colour).
COLOUR = re.compile(r"\x1b\[(?:[0-9;]*;)?(?:3[0-9]|4[0-9]|9[0-7]|10[0-7])[;m]")


@pytest.fixture(autouse=True)
def _no_ci_summary(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.delenv("FORCE_COLOR", raising=False)


def _parts(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two quick parts, one failing with a summary longer than 80 columns."""

    def good(options: GateOptions) -> PartResult:
        return PartResult("good", True, "fine " * 30)

    def bad(options: GateOptions) -> PartResult:
        return PartResult("bad", False, "1 invariant violated", ("the <counterexample> | *x*",))

    monkeypatch.setitem(gate.PARTS, "good", Part("good", "passes", good))
    monkeypatch.setitem(gate.PARTS, "bad", Part("bad", "fails", bad))


def test_check_in_a_log_prints_each_part_once_unwrapped_and_plain(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _parts(monkeypatch)
    result = CliRunner().invoke(main, ["check", "--only", "good,bad"])
    assert result.exit_code == 1
    out = result.output
    assert not ANSI.search(out), "no colour in a log"
    rows = [line for line in out.splitlines() if line.startswith(("good ", "bad "))]
    assert len(rows) == 2, out  # each part once: no progress line, no second table
    assert rows[0].rstrip().endswith(("fine " * 30).strip())  # one line, whatever its length
    assert "the <counterexample> | *x*" in out
    # the verdict, then the next step: the failing part to rerun alone
    assert out.rstrip().splitlines()[-2:] == [
        "the gate FAILED",
        "next: each failing part's details are above; run it alone with fencepost check --only bad",
    ]


def test_check_on_a_terminal_draws_one_table_and_honours_no_color(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _parts(monkeypatch)
    monkeypatch.setenv("FORCE_COLOR", "1")
    coloured = CliRunner().invoke(main, ["check", "--only", "good"]).output
    assert COLOUR.search(coloured)
    monkeypatch.setenv("NO_COLOR", "1")
    plain = CliRunner().invoke(main, ["check", "--only", "good"]).output
    assert not COLOUR.search(plain)
    assert "fencepost check (backend sqlite)" in plain and "\u2503" in plain
    # no separate progress lines: only the live table's frames (a terminal redraws them)
    assert "good (" not in plain and "pass good" not in plain


def test_summary_md_is_written_and_appended_to_the_step_summary(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _parts(monkeypatch)
    step = tmp_path / "step-summary.md"
    step.write_text("earlier step\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(step))
    md, html = tmp_path / "s.md", tmp_path / "s.html"
    args = ["check", "--only", "good,bad", "--summary-md", str(md), "--html", str(html)]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 1
    text = md.read_text()
    assert text.startswith("## \u274c fencepost check: the gate FAILED")
    assert "| \u2705 good | pass |" in text and "| \u274c bad | FAIL |" in text
    assert step.read_text() == "earlier step\n" + text + "\n"
    assert "the &lt;counterexample&gt;" in html.read_text()


def test_an_unwritable_step_summary_is_a_warning_not_a_failure(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _parts(monkeypatch)
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(tmp_path / "missing" / "summary.md"))
    result = CliRunner().invoke(main, ["check", "--only", "good"])
    assert result.exit_code == 0
    assert "could not append the summary to $GITHUB_STEP_SUMMARY" in result.output


@pytest.mark.parametrize("command", ["check", "explore", "scenarios"])
@pytest.mark.parametrize("option", ["--html", "--summary-md"])
def test_output_paths_are_checked_before_anything_runs(
    command: str, option: str, tmp_path: Path
) -> None:
    result = CliRunner().invoke(main, [command, option, str(tmp_path / "no" / "x")])
    assert result.exit_code == 2
    assert "does not exist" in result.output
    result = CliRunner().invoke(main, [command, option, str(tmp_path)])
    assert result.exit_code == 2 and "is a directory" in result.output


def test_conform_output_paths_are_checked_before_the_sut_starts(tmp_path: Path) -> None:
    args = ["conform", "--html", str(tmp_path / "no" / "x.html"), "--", "/nonexistent/sut"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2 and "does not exist" in result.output


def test_explore_draws_the_counterexample(tmp_path: Path) -> None:
    html, md = tmp_path / "e.html", tmp_path / "e.md"
    args = ["explore", "--part", "publication", "--mutant", "relabel"]
    result = CliRunner().invoke(main, [*args, "--html", str(html), "--summary-md", str(md)])
    assert result.exit_code == 1
    page = html.read_text()
    assert 'data-lane="p1"' in page and 'data-lane="environment"' in page
    assert '<span class="property">soundness</span>' in page
    assert "mark-breach" in page
    text = md.read_text()
    assert "- **command**: `fencepost explore --part publication --mutant relabel`" in text
    assert "\u2190 **breaks here**" in text


def test_explore_passing_has_its_table_and_no_timeline(tmp_path: Path) -> None:
    html = tmp_path / "e.html"
    result = CliRunner().invoke(main, ["explore", "--part", "ingest", "--html", str(html)])
    assert result.exit_code == 0
    page = html.read_text()
    assert "every invariant holds" in page and "<figure" not in page


def test_scenarios_draw_a_failing_scenario(tmp_path: Path) -> None:
    source = ROOT / "scenarios" / "materialize-12797-blind-success-bad.toml"
    text = source.read_text().replace("blind-success-bad", "blind-success-wrongly-ok")
    text = text.split("[broken]")[0].replace('variant = "blind-success"\n', "")
    wrong = tmp_path / "materialize-12797-blind-success-wrongly-ok.toml"
    wrong.write_text(text)
    shutil.copy(source, tmp_path / source.name)
    html, md = tmp_path / "s.html", tmp_path / "s.md"
    result = CliRunner().invoke(
        main, ["scenarios", str(tmp_path), "--html", str(html), "--summary-md", str(md)]
    )
    assert result.exit_code == 1, result.output
    page = html.read_text()
    assert page.count("<figure") == 2  # the wrong -ok file, on model and implementation
    assert 'data-lane="p1"' in page and "expectation record.cut" in page
    assert "mark-lost" in page  # its write_publication response is lost
    assert "| \u274c FAIL | model | materialize-12797-blind-success-wrongly-ok |" in md.read_text()


def test_a_passing_gate_page_shows_the_figures_and_the_situation_coverage(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import sys

    from fencepost.explorer.search import explore
    from fencepost.harness.conformance import ConformOptions, conform
    from fencepost.harness.transport import SubprocessSut
    from fencepost.model.config import default_config

    def conformance(options: GateOptions) -> PartResult:
        factory = SubprocessSut([sys.executable, "-m", "fencepost", "sut"], prefetch=2)
        try:
            report = conform(
                factory, ConformOptions(levels=frozenset({"publisher"}), schedules=0, depth=0)
            )
        finally:
            factory.close()
        return PartResult("conformance", report.ok, "conformant", evidence=(report,))

    def exploring(options: GateOptions) -> PartResult:
        result = explore(default_config("ingest"), keep_graph=False)
        return PartResult("explore", True, "holds", evidence=(result,))

    monkeypatch.setitem(gate.PARTS, "conformance", Part("conformance", "c", conformance))
    monkeypatch.setitem(gate.PARTS, "explore", Part("explore", "e", exploring))
    _parts(monkeypatch)
    html, md = tmp_path / "c.html", tmp_path / "c.md"
    args = ["check", "--only", "good,explore,conformance", "--html", str(html)]
    result = CliRunner().invoke(main, [*args, "--summary-md", str(md)])
    assert result.exit_code == 0, result.output
    page = html.read_text()
    assert "situation coverage" in page and "phases" in page and "parts explored" in page
    assert "<figure" not in page
    assert page.count("<h2>") == 2  # explore and conformance; good's row says it all
    text = md.read_text()
    typed = "fencepost check --backend sqlite --only good,explore,conformance"
    assert f"- **command**: `{typed}`" in text
    assert "**situation coverage" in text
