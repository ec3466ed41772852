"""One self-contained HTML page from a :class:`~fencepost.reports.model.Report`.

The page needs nothing but itself: the style and the script are inlined, there
is no network reference (no font, image, script or style by URL), and a
Content-Security-Policy pins the inline style and script by their SHA-256 and
forbids every other source, so even a string that escaped its escaping could
neither run nor fetch anything. Every string of the report is escaped
(:func:`html.escape`) after :func:`~fencepost.reports.text.printable` (controls,
lone surrogates and invisible or direction-changing characters shown as escapes):
what a SUT sent is shown, never interpreted, and never rendered reversed.

A :class:`~fencepost.reports.model.Timeline` is an inline SVG: one row per lane,
one column per step, each span a box from the step of its request to the step
of its reply; hovering a box or a column shows what it is (SVG ``<title>``), and
a click (or the arrow keys, or the list of steps) shows the state after that
step in the inspector beside it. The breaking step is shaded and labelled with
the property's name; its meaning and the message are printed above the drawing.

Cost: linear in the report's size (cells, spans, steps and their state tables).
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Iterable
from html import escape
from importlib.resources import files

from fencepost.reports.model import (
    Fact,
    Lane,
    Mark,
    Report,
    Section,
    Span,
    Step,
    Table,
    Timeline,
)
from fencepost.reports.text import printable

#: Timeline geometry, in SVG user units (pixels at zoom 100%).
LABEL_WIDTH = 120
LANE_HEIGHT = 48
HEADER = 40
#: A step's column: wide enough for a call's name on short timelines, at least
#: :data:`MIN_COLUMN` on long ones (the drawing then scrolls sideways).
MIN_COLUMN, MAX_COLUMN, DRAWING_WIDTH = 34, 120, 1040


def column_width(steps: int) -> int:
    """The width of one step's column for a timeline of ``steps`` columns."""
    return max(MIN_COLUMN, min(MAX_COLUMN, DRAWING_WIDTH // max(steps, 1)))


#: Characters that fit in one pixel of a box label (monospace 11px, roughly).
_CHARS_PER_PIXEL = 1 / 6.8

#: The widest a column grows so that its boxes' labels fit (wider drawings scroll).
MAX_LABEL_COLUMN = 260


def label_column(timeline: Timeline) -> int:
    """The column width at which every box label of ``timeline`` fits whole, at most
    :data:`MAX_LABEL_COLUMN` (a label is what a reader needs: ``read_publication``
    cut to ``read_pu…`` names nothing). Mirrors the box geometry of :func:`_span`."""
    last = timeline.last
    need = 0.0
    for span in timeline.spans:
        pixels = len(span.label + _MARK_GLYPH.get(span.mark, "")) / _CHARS_PER_PIXEL
        end = span.end if span.end is not None else last
        if span.depth == 0:  # the whole columns of its first and last steps, less padding
            need = max(need, (pixels + 10) / (end - span.start + 1))
        elif end == span.start:  # an instant: its column
            need = max(need, pixels + 12)
        else:  # middle to middle
            need = max(need, (pixels + 8) / (end - span.start))
    return min(MAX_LABEL_COLUMN, int(need) + 1)


def _asset(name: str) -> str:
    return files("fencepost.reports").joinpath(name).read_text(encoding="utf-8")


def _digest(text: str) -> str:
    return "sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode()


def _e(text: object) -> str:
    """Escaped for HTML text and attribute values alike (quotes included)."""
    return escape(printable(str(text)), quote=True)


def render_html(report: Report) -> str:
    """The whole page as one string (UTF-8 when written)."""
    style = _asset("page.css")
    script = _asset("page.js")
    policy = (
        f"default-src 'none'; style-src '{_digest(style)}'; script-src '{_digest(script)}'; "
        "img-src 'none'; base-uri 'none'; form-action 'none'"
    )
    body: list[str] = [
        f'<header class="report status-{report.status.value}">',
        f"<h1>{_e(report.title)}</h1>",
        f'<p class="verdict" data-status="{report.status.value}">{_e(report.verdict)}</p>',
        _facts(report.facts),
        "</header>",
        "<main>",
    ]
    counter = _Counter()
    failing = report.failing
    if failing:
        body.append(_index(failing))
    for n, section in enumerate(failing, 1):
        body.append(_section(section, counter, f"failure-{n}"))
    body.extend(_table(t) for t in report.tables)
    for section in report.others:
        body.append(_section(section, counter))
    body.append("</main>")
    body.append(
        "<footer>Drawn by fencepost. Hover a box or a step for what it is; click a step, "
        "or use the arrow keys on a timeline, to inspect the state after it.</footer>"
    )
    return "".join(
        [
            "<!DOCTYPE html>\n",
            '<html lang="en"><head><meta charset="utf-8">',
            f'<meta http-equiv="Content-Security-Policy" content="{_e(policy)}">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            '<meta name="referrer" content="no-referrer">',
            f"<title>{_e(report.title)}: {_e(report.verdict)}</title>",
            f"<style>{style}</style></head>\n<body>",
            "\n".join(body),
            f"\n<script>{script}</script>\n</body></html>\n",
        ]
    )


class _Counter:
    """Unique ids for the timelines of one page."""

    def __init__(self) -> None:
        self.n = 0

    def next(self) -> str:
        self.n += 1
        return f"t{self.n}"


def _facts(facts: Iterable[Fact]) -> str:
    items = []
    for fact in facts:
        value = f"<code>{_e(fact.value)}</code>" if fact.code else _e(fact.value)
        items.append(f"<dt>{_e(fact.label)}</dt><dd>{value}</dd>")
    return f'<dl class="facts">{"".join(items)}</dl>' if items else ""


def _table(table: Table) -> str:
    head = "".join(
        f"<th{' class=num' if i in table.numeric else ''}>{_e(c)}</th>"
        for i, c in enumerate(table.columns)
    )
    rows = []
    for n, row in enumerate(table.rows):
        status = table.status[n].value if table.status else ""
        cls = f' class="status-{status}"' if status else ""
        cells = "".join(
            f"<td{' class=num' if i in table.numeric else ''}>{_e(c)}</td>"
            for i, c in enumerate(row)
        )
        rows.append(f"<tr{cls}>{cells}</tr>")
    caption = f"<caption>{_e(table.title)}</caption>" if table.title else ""
    return (
        f'<div class="table"><table>{caption}<thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table></div>"
    )


def _index(failing: tuple[Section, ...]) -> str:
    """The failures first: one line each, linking to its section and to its timeline.

    The timelines' ids are given in page order (``t1``, ``t2``, ...), and the failing
    sections are drawn first, so the k-th timeline of the failures is ``t<k>``.
    """
    items = []
    drawn = 0
    for n, section in enumerate(failing, 1):
        links = f'<a href="#failure-{n}">{_e(section.title)}</a>'
        if section.timelines:
            links += f' (<a href="#t{drawn + 1}">timeline</a>)'
        drawn += len(section.timelines)
        summary = f": {_e(section.summary)}" if section.summary else ""
        items.append(f"<li>{links}{summary}</li>")
    return (
        '<nav class="failures" aria-label="failures"><h2>Failures</h2>'
        f"<ol>{''.join(items)}</ol></nav>"
    )


def _section(section: Section, counter: _Counter, anchor: str = "") -> str:
    ident = f' id="{anchor}"' if anchor else ""
    out = [
        f'<section class="part status-{section.status.value}"{ident}>',
        f'<h2><span class="badge">{_e(section.status.value)}</span> {_e(section.title)}</h2>',
    ]
    if section.summary:
        out.append(f'<p class="summary">{_e(section.summary)}</p>')
    out.append(_facts(section.facts))
    out.extend(_table(t) for t in section.tables)
    out.extend(_timeline(t, counter.next()) for t in section.timelines)
    if section.text:
        out.append(
            '<details class="words"><summary>In words</summary>'
            f"<pre>{_e(chr(10).join(section.text))}</pre></details>"
        )
    out.append("</section>")
    return "\n".join(out)


# --- timelines -------------------------------------------------------------------------


def _first(timeline: Timeline) -> int:
    starts = [s.index for s in timeline.steps] + [s.start for s in timeline.spans]
    return min(starts, default=0)


def _timeline(timeline: Timeline, ident: str) -> str:
    first = _first(timeline)
    last = max(timeline.last, first)
    col = max(column_width(last - first + 1), label_column(timeline))
    breach = timeline.breach
    selected = (
        breach.step
        if breach is not None
        else (timeline.steps[-1].index if timeline.steps else first)
    )
    out = [
        f'<figure class="timeline" id="{ident}" tabindex="0" data-first="{first}" '
        f'data-last="{last}" data-left="{LABEL_WIDTH}" data-col="{col}" '
        f'data-selected="{selected}"'
        + (f' data-breach="{breach.step}"' if breach is not None else "")
        + ">",
        f"<figcaption>{_e(timeline.title)}</figcaption>",
    ]
    if breach is not None:
        where = f"step {breach.step}" + (f", {breach.lane}" if breach.lane else "")
        out.append(
            f'<div class="breach" data-step="{breach.step}">'
            f'<p><span class="property">{_e(breach.name)}</span> broke at {_e(where)}</p>'
            f'<p class="meaning">{_e(breach.meaning)}</p>'
            f'<p class="message">{_e(breach.message)}</p></div>'
        )
    out.append(_facts(timeline.facts))
    out.append('<div class="scroll">')
    out.append(_svg(timeline, first, last, col))
    out.append("</div>")
    out.append(_legend(timeline.request_legend))
    out.append('<div class="steps-and-inspector">')
    out.append(_step_list(timeline))
    out.append(_inspector(timeline))
    out.append("</div>")
    out.extend(f'<p class="note">{_e(n)}</p>' for n in timeline.notes)
    out.append("</figure>")
    return "\n".join(out)


def _svg(timeline: Timeline, first: int, last: int, col: int) -> str:
    def _x(step: int, first: int) -> int:
        return LABEL_WIDTH + (step - first) * col

    lanes = timeline.lanes
    width = _x(last + 1, first) + 8
    height = HEADER + LANE_HEIGHT * len(lanes) + 4
    row = {lane.key: i for i, lane in enumerate(lanes)}
    texts = {s.index: s.text for s in timeline.steps}
    parts = [
        f'<svg class="lanes" role="img" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" aria-label="{_e(timeline.title)}">'
    ]
    # lane backgrounds and labels
    for i, lane in enumerate(lanes):
        y = HEADER + i * LANE_HEIGHT
        parts.append(
            f'<g class="lane lane-{lane.kind.value}" data-lane="{_e(lane.key)}">'
            f'<rect class="lane-bg" x="0" y="{y}" width="{width}" height="{LANE_HEIGHT}"/>'
            f'<text class="lane-label" x="8" y="{y + LANE_HEIGHT // 2 + 4}">'
            f"{_e(_fit(lane.label, LABEL_WIDTH - 12))}<title>{_e(lane.label)} "
            f"({lane.kind.value})</title></text></g>"
        )
    # step columns: hover text, click target, number
    for step in range(first, last + 1):
        x = _x(step, first)
        said = texts.get(step, "")
        tip = f"step {step}: {said}" if said else f"step {step}"
        breach = " breach-col" if timeline.breach and timeline.breach.step == step else ""
        parts.append(
            f'<g class="col{breach}" data-step="{step}">'
            f'<rect x="{x}" y="0" width="{col}" height="{height}"/>'
            f'<text class="step-no" x="{x + col // 2}" y="{HEADER - 8}">{step}</text>'
            f"<title>{_e(tip)}</title></g>"
        )
    if timeline.breach is not None:
        b = timeline.breach
        x = _x(b.step, first) + col // 2
        anchor = "end" if b.step - first > (last - first) / 2 else "start"
        parts.append(
            f'<text class="breach-label" x="{x}" y="14" text-anchor="{anchor}">'
            f"\u2717 {_e(b.name)}<title>{_e(b.meaning)}</title></text>"
        )
    parts.append(
        f'<rect class="cursor" x="{_x(first, first)}" y="0" width="{col}" height="{height}"/>'
    )
    kinds = {lane.key: lane.kind.value for lane in lanes}
    for span in sorted(timeline.spans, key=lambda s: s.depth):
        parts.append(_span(span, row[span.lane], kinds[span.lane], first, last, col))
    parts.append("</svg>")
    return "".join(parts)


def _span(span: Span, row: int, kind: str, first: int, last: int, col: int) -> str:
    top = HEADER + row * LANE_HEIGHT
    end = span.end if span.end is not None else last
    left = LABEL_WIDTH + (span.start - first) * col
    right = LABEL_WIDTH + (end - first) * col + col
    if span.depth == 0:  # a request: the whole columns of its first and last steps
        x0, x1 = left + 2, right - 2
    elif end == span.start:  # an instant: its whole column
        x0, x1 = left + 4, right - 4
    else:  # from the middle of the request's step to the middle of the reply's
        x0, x1 = left + col // 2 + 2, right - col // 2 - 2
    if span.depth == 0:
        y0, y1 = top + 4, top + LANE_HEIGHT - 4
    else:
        y0, y1 = top + 15, top + LANE_HEIGHT - 9
    width = max(x1 - x0, 6)
    classes = f"span depth-{min(span.depth, 1)} mark-{span.mark.value} on-{kind}"
    if span.end is None:
        classes += " unended"
    tip = span.label + (f"\n{span.detail}" if span.detail else "")
    if span.mark is not Mark.NONE:
        tip = f"{span.label} [{_MARK_WORDS[span.mark]}]" + (
            f"\n{span.detail}" if span.detail else ""
        )
    label = span.label + _MARK_GLYPH.get(span.mark, "")
    if span.depth == 0:
        text = (
            f'<text class="span-label" x="{x0 + 4}" y="{y0 + 10}">'
            f"{_e(_fit(label, width - 6))}</text>"
        )
    else:
        text = (
            f'<text class="span-label" x="{x0 + 3}" y="{y1 - 8}">'
            f"{_e(_fit(label, width - 4))}</text>"
        )
    return (
        f'<g class="{classes}" data-start="{span.start}" data-end="{end}">'
        f'<rect x="{x0}" y="{y0}" width="{width}" height="{y1 - y0}" rx="3"/>'
        f"{text}<title>{_e(tip)}</title></g>"
    )


_MARK_WORDS = {
    Mark.LOST: "response lost, not applied",
    Mark.LOST_APPLIED: "applied, then its response lost",
    Mark.CRASHED: "never answered: the process crashed",
    Mark.OPEN: "still pending when the run stopped",
    Mark.BREACH: "the property broke here",
    Mark.NONE: "",
}

_MARK_GLYPH = {
    Mark.LOST: " \u26a1",
    Mark.LOST_APPLIED: " \u26a1\u2713",
    Mark.CRASHED: " \u2620",
    Mark.BREACH: " \u2717",
}


def _fit(text: str, pixels: float) -> str:
    """``text`` cut to what fits in ``pixels`` (an ellipsis when cut; the title has it whole)."""
    room = int(pixels * _CHARS_PER_PIXEL)
    if room <= 0:
        return ""
    return text if len(text) <= room else text[: max(room - 1, 0)] + "\u2026"


def _legend(request: str) -> str:
    items = [
        ("request", request),
        ("call", "a call, from the request to its reply"),
        ("lost", "response lost, write not applied \u26a1"),
        ("lost-applied", "write applied, response lost \u26a1\u2713"),
        ("crashed", "never answered: the process crashed \u2620"),
        ("breach", "the step that breaks the property \u2717"),
    ]
    return (
        '<ul class="legend">'
        + "".join(f'<li><span class="key key-{k}"></span>{_e(v)}</li>' for k, v in items)
        + "</ul>"
    )


def _inspector(timeline: Timeline) -> str:
    out = [
        '<div class="inspector">',
        '<div class="stepnav"><button type="button" class="prev" aria-label="previous step">'
        "\u25c0</button><output>step</output>"
        '<button type="button" class="next" aria-label="next step">\u25b6</button></div>',
    ]
    for step in timeline.steps:
        out.append(_state(step, timeline))
    out.append("</div>")
    return "".join(out)


def _state(step: Step, timeline: Timeline) -> str:
    who = _lane_label(timeline.lanes, step.lane)
    breach = timeline.breach is not None and timeline.breach.step == step.index
    out = [
        f'<section class="state{" breach-state" if breach else ""}" data-step="{step.index}" '
        "hidden>",
        f"<h3>Step {step.index}" + (f" \u00b7 {_e(who)}" if who else "") + "</h3>",
        f'<p class="said">{_e(step.text)}</p>',
    ]
    if breach and timeline.breach is not None:
        out.append(
            f'<p class="breach-here"><span class="property">{_e(timeline.breach.name)}</span> '
            f"breaks here: {_e(timeline.breach.message)}</p>"
        )
    out.extend(_table(t) for t in step.state)
    if not step.state:
        out.append('<p class="none">No state recorded for this step.</p>')
    if step.messages:
        out.append(
            f"<details><summary>{len(step.messages)} message(s) of this step</summary>"
            f"<pre>{_e(chr(10).join(step.messages))}</pre></details>"
        )
    out.append("</section>")
    return "".join(out)


def _lane_label(lanes: tuple[Lane, ...], key: str | None) -> str:
    for lane in lanes:
        if lane.key == key:
            return lane.label
    return ""


def _step_list(timeline: Timeline) -> str:
    items = []
    breach = timeline.breach.step if timeline.breach is not None else None
    for step in timeline.steps:
        who = _lane_label(timeline.lanes, step.lane)
        cls = ' class="breach-step"' if step.index == breach else ""
        items.append(
            f'<li data-step="{step.index}"{cls}><span class="n">{step.index}</span>'
            + f'<span class="who">{_e(who)}</span>'
            + f'<span class="said">{_e(step.text)}</span></li>'
        )
    return f'<ol class="steps">{"".join(items)}</ol>'


__all__ = ["render_html"]
