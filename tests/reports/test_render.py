"""The renderers on hand-made data: escaping, self-containment, and the timeline's parts.

No producer is involved: what the page and the summary show comes from
:mod:`fencepost.reports` alone (the browser test opens a real one).
"""

from __future__ import annotations

import base64
import hashlib
import re
from html.parser import HTMLParser

import pytest
from report_data import HOSTILE, report, timeline

from fencepost.reports import (
    Lane,
    LaneKind,
    Report,
    Section,
    Span,
    Status,
    Step,
    Table,
    Timeline,
    escape_md,
    render_html,
    render_markdown,
)
from fencepost.reports.page import column_width


class _Tags(HTMLParser):
    """Every start tag with its attributes, and the text of script and style elements."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.inline: dict[str, list[str]] = {"script": [], "style": []}
        self._in: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        self._in = tag if tag in self.inline else None

    def handle_endtag(self, tag: str) -> None:
        self._in = None

    def handle_data(self, data: str) -> None:
        if self._in is not None:
            self.inline[self._in].append(data)


def _parse(page: str) -> _Tags:
    tags = _Tags()
    tags.feed(page)
    return tags


def test_hostile_strings_are_text_never_markup() -> None:
    page = render_html(report())
    tags = _parse(page)
    # exactly our one script and one style: the SUT's <script> and <img> stayed text
    assert [t for t, _ in tags.tags].count("script") == 1
    assert [t for t, _ in tags.tags].count("img") == 0
    assert not any(k.startswith("on") for _, attrs in tags.tags for k in attrs)
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "\x1b" not in page and "\\x1b[31m" in page
    assert "\ud800" not in page and "\\ud800" in page
    page.encode("utf-8")  # writable as UTF-8 (no lone surrogate left)


def test_the_page_fetches_nothing_and_pins_its_own_script_and_style() -> None:
    page = render_html(report())
    tags = _parse(page)
    assert not re.search(r"https?://", page), "no network reference at all"
    for tag, attrs in tags.tags:
        assert "src" not in attrs, tag
        href = attrs.get("href")
        assert href is None or href.startswith("#"), (tag, href)
    style = "".join(tags.inline["style"])
    script = "".join(tags.inline["script"])
    assert "url(" not in style and "@import" not in style
    assert "fetch(" not in script and "XMLHttpRequest" not in script and "import(" not in script
    policy = next(a["content"] for t, a in tags.tags if t == "meta" and a.get("http-equiv"))
    assert policy is not None and "default-src 'none'" in policy

    def digest(text: str) -> str:
        return base64.b64encode(hashlib.sha256(text.encode()).digest()).decode()

    assert f"script-src 'sha256-{digest(script)}'" in policy
    assert f"style-src 'sha256-{digest(style)}'" in policy


def test_the_timeline_has_lanes_spans_steps_marks_and_the_breach() -> None:
    page = render_html(report())
    tags = _parse(page)
    lanes = [a["data-lane"] for t, a in tags.tags if t == "g" and "data-lane" in a]
    assert lanes == ["w1", "w2", "r1", "env"]
    classes = [a.get("class") or "" for t, a in tags.tags if t == "g"]
    assert any("mark-lost " in c for c in classes)
    assert any("mark-lost-applied" in c for c in classes)
    assert any("mark-open" in c and "unended" in c for c in classes)
    assert any("mark-breach" in c for c in classes)
    assert sum("breach-col" in c for c in classes) == 1
    figure = next(a for t, a in tags.tags if t == "figure")
    assert figure["data-breach"] == "5" and figure["data-selected"] == "5"
    states = [a["data-step"] for t, a in tags.tags if t == "section" and "data-step" in a]
    assert states == ["1", "2", "3", "4", "5"]
    assert '<span class="property">soundness</span>' in page
    assert "the record claims an event that is not final" in page


def test_a_passing_report_shows_its_tables_and_no_timeline() -> None:
    page = render_html(
        Report(
            "fencepost conform",
            Status.PASS,
            "CONFORMANT",
            tables=report().tables,
        )
    )
    assert "situation coverage" in page and 'class="status-warn"' in page
    assert "<figure" not in page


def test_columns_are_wide_on_short_timelines_and_scroll_on_long_ones() -> None:
    assert column_width(5) == 120
    assert column_width(200) == 34
    assert 34 < column_width(20) < 120


def test_markdown_escapes_everything_a_sut_sent() -> None:
    text = render_markdown(report())
    # a command is a code span, shown literally: fenced longer than any backtick run in it
    (sut,) = [line for line in text.splitlines() if line.startswith("- **SUT**: ")]
    assert sut.startswith("- **SUT**: ``<script>") and sut.endswith("end``")
    outside = text.replace(sut, "")
    assert "<script>" not in outside and "<img" not in outside
    # the only links are the report's own, from the failures' index to their anchors
    own = re.findall(r"(?<!\\)\]\(([^)]*)\)", outside)
    assert own and all(re.fullmatch(r"#failure-\d+", target) for target in own), own
    assert "javascript:" not in "".join(own)
    assert "\\[link\\]" in text and "\\*bold\\*" in text
    assert "\x1b" not in text and "\ud800" not in text
    for line in text.splitlines():
        if line.startswith("|"):
            # a hostile cell keeps its pipe escaped: every row has as many cells as the header
            assert len(re.findall(r"(?<!\\)\|", line)) == 3, line
    assert "```" not in text
    assert "- **replay**: `fencepost conform --replay -2 -- my-sut`" in text
    assert "5. w1 ends: published (epoch 1, through 3) \u2190 **breaks here**" in text
    assert "1. environment: an honest reader certifies A before 3" in text


def test_escape_md_keeps_plain_words_readable() -> None:
    assert escape_md("published (epoch 1, through 3)") == "published (epoch 1, through 3)"
    assert escape_md("a_b*c|d") == "a\\_b\\*c\\|d"
    assert escape_md("x<y>&z") == "x&lt;y&gt;&amp;z"


def test_long_counterexamples_are_cut_in_markdown_not_in_html() -> None:
    lanes = (Lane("env", "environment", LaneKind.ENVIRONMENT),)
    steps = tuple(Step(i, "env", f"step number {i}") for i in range(1, 101))
    long = Timeline("long", lanes, (), steps)
    rep = Report("r", Status.FAIL, "bad", sections=(_section(long),))
    assert "40 more step(s)" in render_markdown(rep)
    assert "step number 100" in render_html(rep)


def _section(t: Timeline) -> Section:
    return Section("s", Status.FAIL, timelines=(t,))


@pytest.mark.parametrize(
    "build",
    [
        lambda: Table("t", ("a", "b"), (("1",),)),
        lambda: Table("t", ("a",), (("1",),), (Status.PASS, Status.FAIL)),
        lambda: Timeline("t", (), (Span("nobody", 1, 1, "x"),), ()),
        lambda: Timeline(
            "t", (Lane("a", "a", LaneKind.WORKER),), (Span("a", 3, 2, "backwards"),), ()
        ),
        lambda: Timeline("t", (), (), (Step(1, "nobody", "x"),)),
    ],
)
def test_malformed_report_data_is_refused_where_it_is_built(build: object) -> None:
    with pytest.raises(ValueError):
        build()  # type: ignore[operator]


def test_the_timeline_data_is_what_the_page_draws() -> None:
    t = timeline(label="a_label_of_its_own")
    assert t.last == 5
    page = render_html(Report("r", Status.FAIL, "bad", sections=(_section(t),)))
    assert "a_label_of_its_own" in page
    assert HOSTILE not in page


def test_box_labels_are_drawn_whole() -> None:
    """A short call (one column) named read_publication was drawn ``read_publicati…``;
    columns now widen (up to MAX_LABEL_COLUMN, the drawing scrolls) until labels fit."""
    from fencepost.reports.page import MAX_LABEL_COLUMN, label_column

    drawn = timeline("read_checkpoints_of_epoch")
    page = render_html(
        Report("t", Status.FAIL, "v", sections=(Section("s", Status.FAIL, timelines=(drawn,)),))
    )
    labels = re.findall(r'class="span-label"[^>]*>([^<]*)<', page)
    assert labels and not [label for label in labels if "\u2026" in label], labels
    assert "read_checkpoints_of_epoch \u26a1" in labels
    assert column_width(5) < label_column(drawn) <= MAX_LABEL_COLUMN
