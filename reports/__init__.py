"""fencepost.reports: reports for people, as one HTML page or a Markdown summary.

Pure: neutral data in (:mod:`fencepost.reports.model`: a :class:`Report` of
sections, tables and counterexample :class:`Timeline` values), text out
(:func:`render_html`, :func:`render_markdown`). It imports nothing else of
fencepost, so any producer (the conformance harness, the explorer, the scenario
library, the gate, an audit) can use it by building the neutral data, and the
renderers can be tested on data no producer made.
"""

from __future__ import annotations

from fencepost.reports.markdown import escape_md, render_markdown
from fencepost.reports.model import (
    Breach,
    Fact,
    Lane,
    LaneKind,
    Mark,
    Report,
    Section,
    Span,
    Status,
    Step,
    Table,
    Timeline,
)
from fencepost.reports.page import render_html

__all__ = [
    "Breach",
    "Fact",
    "Lane",
    "LaneKind",
    "Mark",
    "Report",
    "Section",
    "Span",
    "Status",
    "Step",
    "Table",
    "Timeline",
    "escape_md",
    "render_html",
    "render_markdown",
]
