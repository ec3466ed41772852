"""The late-commit world's HTML report in a real headless browser (Debian's chromium).

The page ``fencepost conform --world late-commits --html out.html`` writes for the
reference tool that keeps one cursor for every partition (it loses the rows a late
partition holds) is loaded from its file with every other request refused and recorded.
The test checks that no script or console error happens, that the tool's lane, one
writers' lane per partition and the clock's lane are drawn, that the violating step
carries the property's name and meaning, that the lost row's story reads in time order,
that clicking and the arrow keys move the inspector through the source, the destination
and the tool's state, and writes screenshots to the report folder
(``$FENCEPOST_TEST_REPORTS``, default ``build/test-reports/``). Chromium missing: the
test fails (tests/reports/test_browser.py says how to install it), never skips in CI.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from click.testing import CliRunner
from test_browser import Opened, browser, reports_dir

from fencepost.cli import main

if TYPE_CHECKING:
    from playwright.sync_api import Browser

__all__ = ["browser", "reports_dir"]  # the fixtures, shared with the frontier world's test

TOOLS = Path(__file__).resolve().parents[1] / "harness" / "late" / "late_tools.py"


def _late_page(tmp: Path, variant: str, *world: str) -> Path:
    out = tmp / "late.html"
    result = CliRunner().invoke(
        main,
        [
            "conform",
            "--world",
            "late-commits",
            *world,
            "--html",
            str(out),
            "--",
            sys.executable,
            str(TOOLS),
            variant,
        ],
    )
    assert result.exit_code in (0, 1), result.output
    return out


@pytest.fixture(scope="module")
def lost_page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A late partition's old row lost by the reference tool with one global cursor."""
    return _late_page(
        tmp_path_factory.mktemp("late"),
        "global-cursor",
        "--stories",
        "partition-appears",
        "--schedules",
        "0",
    )


def test_the_lost_row_timeline_renders_in_a_browser(
    browser: Browser, lost_page: Path, reports_dir: Path
) -> None:
    opened = Opened(browser, lost_page)
    page = opened.page
    assert page.locator(".verdict").inner_text() == "NOT CONFORMANT"
    body = page.locator("body").inner_text()
    assert "1 lost (e02)" in body
    story = body[body.index("e02 (12:00:02.500) in eu commits at 12:00:03") :]
    assert story.index("partition eu appears at 12:00:28") < story.index("reads eu [12:00:05")
    assert "from the other partitions' bookmark" in story
    figure = page.locator("figure.timeline").first
    lanes = figure.locator("g[data-lane]")
    assert [lanes.nth(i).get_attribute("data-lane") for i in range(lanes.count())] == [
        "t1",
        "main",
        "eu",
        "clock",
    ]
    assert "writers: eu" in (figure.locator("g[data-lane='eu']").text_content() or "")
    # e02's commit is drawn in the eu writers' lane (a span within the lane's band)
    band = figure.locator("g[data-lane='eu'] rect.lane-bg")
    top = float(band.get_attribute("y") or "nan")
    bottom = top + float(band.get_attribute("height") or "nan")
    mark = figure.locator("g.span.on-writer", has_text="e02 commits").locator("rect")
    assert mark.count() == 1
    assert top <= float(mark.get_attribute("y") or "nan") < bottom
    legend = page.locator("ul.legend").first.inner_text()
    assert "a sync: one run of the tool" in legend and "publication" not in legend
    breach = figure.get_attribute("data-breach")
    assert breach is not None
    assert figure.locator(f"g.col.breach-col[data-step='{breach}']").count() == 1
    label = figure.locator(".breach-label").text_content() or ""
    assert label.startswith("\u2717 no_lost_rows")
    assert figure.locator(".breach .property").inner_text() == "no_lost_rows"
    assert "the pipeline lost it for good" in figure.locator(".breach").inner_text()
    shown = figure.locator(".state:not([hidden])")
    assert shown.count() == 1 and shown.get_attribute("data-step") == breach
    assert "completion sync" in shown.inner_text()
    page.screenshot(path=str(reports_dir / "late-commits-page.png"), full_page=True)
    figure.screenshot(path=str(reports_dir / "late-commits-timeline.png"))
    assert opened.errors == []
    assert opened.requests == []


def test_each_step_shows_the_source_the_destination_and_the_state(
    browser: Browser, lost_page: Path
) -> None:
    opened = Opened(browser, lost_page)
    figure = opened.page.locator("figure.timeline").first
    first = figure.locator("ol.steps li").first
    first.click()
    step = first.get_attribute("data-step")
    assert figure.get_attribute("data-selected") == step
    state = figure.locator(".state:not([hidden])")
    assert state.get_attribute("data-step") == step
    text = state.inner_text()
    for part in ("visible rows", "not yet committed", "copies per row", "the tool's state"):
        assert part in text, part
    assert "e02" in text  # not visible yet: its partition has not appeared
    figure.focus()
    opened.page.keyboard.press("ArrowRight")
    after = figure.get_attribute("data-selected")
    assert after is not None and step is not None and int(after) == int(step) + 1
    column = figure.locator(f"g.col[data-step='{figure.get_attribute('data-breach')}'] rect")
    column.click(position={"x": 3, "y": 3}, force=True)
    assert figure.get_attribute("data-selected") == figure.get_attribute("data-breach")
    assert opened.errors == []


def test_a_conformant_tool_shows_the_summary_and_no_timeline(
    browser: Browser, tmp_path: Path, reports_dir: Path
) -> None:
    path = _late_page(tmp_path, "correct", "--stories", "between-seconds", "--schedules", "0")
    opened = Opened(browser, path)
    page = opened.page
    assert page.locator(".verdict").inner_text() == "CONFORMANT"
    assert "live reads, partitions appearing" in page.locator("body").inner_text()
    assert page.locator("figure.timeline").count() == 0
    page.screenshot(path=str(reports_dir / "late-commits-pass-page.png"), full_page=True)
    assert opened.errors == []
    assert opened.requests == []
