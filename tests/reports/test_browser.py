"""The HTML report opened in a real headless browser: Debian's chromium, driven by Playwright.

The page ``fencepost conform --html out.html -- fencepost sut --mutant relabel``
writes is loaded from its file with every other request refused and recorded;
the test checks that no script error or console error happens (a broken
Content-Security-Policy hash would be one), that the lanes, the violating step
and the property's name and meaning are drawn, that clicking and the arrow keys
move the inspector, and writes screenshots to the report folder
(``$FENCEPOST_TEST_REPORTS``, default ``build/test-reports/``).

Chromium missing: the test *fails* with how to install it (``apt-get install
chromium``; ``.ci/run`` installs it). A developer without it may set
``FENCEPOST_NO_BROWSER=1`` to skip it visibly; CI (``CI`` set) never skips.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from click.testing import CliRunner

from fencepost.cli import main

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

ROOT = Path(__file__).resolve().parents[2]

#: Flags for a quiet, offline, throwaway chromium (Playwright gives it a fresh profile).
FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def chromium() -> str:
    found = os.environ.get("FENCEPOST_CHROMIUM") or shutil.which("chromium")
    if found:
        return found
    if os.environ.get("FENCEPOST_NO_BROWSER") and not os.environ.get("CI"):
        pytest.skip("FENCEPOST_NO_BROWSER is set and chromium is not installed")
    pytest.fail(
        "the browser test needs Debian's chromium: apt-get install -y chromium "
        "(.ci/run installs it); set FENCEPOST_NO_BROWSER=1 to skip it on a machine without it",
        pytrace=False,
    )


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    executable = chromium()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=executable, args=FLAGS)
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture(scope="module")
def reports_dir() -> Path:
    folder = Path(os.environ.get("FENCEPOST_TEST_REPORTS") or ROOT / "build" / "test-reports")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


class Opened:
    """A page loaded from a file, with every script error, console error and request seen."""

    def __init__(self, browser: Browser, path: Path) -> None:
        self.page: Page = browser.new_page(viewport={"width": 1400, "height": 1000})
        self.errors: list[str] = []
        self.requests: list[str] = []
        self.page.on("pageerror", lambda exc: self.errors.append(f"script error: {exc}"))
        self.page.on(
            "console",
            lambda msg: (
                self.errors.append(f"console {msg.type}: {msg.text}")
                if msg.type in ("error", "warning")
                else None
            ),
        )

        def route(r: object) -> None:
            from playwright.sync_api import Route

            assert isinstance(r, Route)
            url = r.request.url
            if url.startswith("file://"):
                r.continue_()
            else:
                self.requests.append(url)
                r.abort()

        self.page.route("**/*", route)
        self.page.goto(path.as_uri())
        self.page.wait_for_load_state("load")


def _conform_page(tmp: Path, *sut: str, extra: tuple[str, ...] = ()) -> Path:
    out = tmp / "out.html"
    command = [sys.executable, "-m", "fencepost", "sut", *sut]
    result = CliRunner().invoke(main, ["conform", *extra, "--html", str(out), "--", *command])
    assert result.exit_code in (0, 1), result.output
    return out


@pytest.fixture(scope="module")
def relabel_page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The page of ``fencepost conform --html out.html -- fencepost sut --mutant relabel``."""
    return _conform_page(tmp_path_factory.mktemp("relabel"), "--mutant", "relabel")


def test_the_counterexample_timeline_renders_in_a_browser(
    browser: Browser, relabel_page: Path, reports_dir: Path
) -> None:
    opened = Opened(browser, relabel_page)
    page = opened.page
    figure = page.locator("figure.timeline").first
    # the lanes: one per worker and the environment
    lanes = figure.locator("g[data-lane]")
    assert [lanes.nth(i).get_attribute("data-lane") for i in range(lanes.count())] == [
        "w1",
        "w2",
        "env",
    ]
    # the violating step: shaded, labelled with the property's name, and its meaning shown
    breach = figure.get_attribute("data-breach")
    assert breach is not None
    assert figure.locator(f"g.col.breach-col[data-step='{breach}']").count() == 1
    label = figure.locator(".breach-label").text_content() or ""  # SVG: text, with its title
    assert label.startswith("\u2717 soundness")
    assert figure.locator(".breach .property").inner_text() == "soundness"
    assert "not final or has no durable terminal outcome" in figure.locator(".breach").inner_text()
    assert figure.locator("g.span.mark-breach").count() == 1
    # the script ran: the breaking step's state is shown, the others hidden
    shown = figure.locator(".state:not([hidden])")
    assert shown.count() == 1 and shown.get_attribute("data-step") == breach
    assert "publication record" in shown.inner_text()
    assert "checkpoints" in shown.inner_text()
    page.screenshot(path=str(reports_dir / "conform-relabel-page.png"), full_page=True)
    figure.screenshot(path=str(reports_dir / "conform-relabel-timeline.png"))
    assert opened.errors == []
    assert opened.requests == []


def test_each_step_can_be_inspected_by_click_and_keys(browser: Browser, relabel_page: Path) -> None:
    opened = Opened(browser, relabel_page)
    figure = opened.page.locator("figure.timeline").first
    first = figure.locator("ol.steps li").first
    first.click()
    step = first.get_attribute("data-step")
    assert figure.get_attribute("data-selected") == step
    assert figure.locator(".state:not([hidden])").get_attribute("data-step") == step
    figure.focus()
    opened.page.keyboard.press("ArrowRight")
    after = figure.get_attribute("data-selected")
    assert after is not None and step is not None and int(after) > int(step)
    # a click on the drawing selects the step under the pointer
    column = figure.locator(f"g.col[data-step='{figure.get_attribute('data-breach')}'] rect")
    column.click(position={"x": 3, "y": 3}, force=True)
    assert figure.get_attribute("data-selected") == figure.get_attribute("data-breach")
    # hovering a call shows what was said (its SVG title carries the messages)
    call = figure.locator("g.span.depth-1").first
    assert '"type":"call"' in (call.locator("title").text_content() or "")
    assert opened.errors == []


def test_a_passing_run_shows_the_summary_and_the_coverage(
    browser: Browser, tmp_path: Path, reports_dir: Path
) -> None:
    path = _conform_page(
        tmp_path, extra=("--levels", "publisher", "--schedules", "0", "--depth", "0")
    )
    opened = Opened(browser, path)
    page = opened.page
    assert page.locator(".verdict").inner_text() == "CONFORMANT"
    assert "situation coverage" in page.locator("table").nth(1).inner_text()
    assert page.locator("figure.timeline").count() == 0
    page.screenshot(path=str(reports_dir / "conform-pass-page.png"), full_page=True)
    assert opened.errors == []
    assert opened.requests == []
