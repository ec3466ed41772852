"""A Markdown summary from a :class:`~fencepost.reports.model.Report`, for CI job pages.

GitHub renders the file named by ``GITHUB_STEP_SUMMARY`` on the run's page; any
Markdown viewer shows the same. The summary is short on purpose: the verdict,
the facts, the failures first (an index linking to each), per counterexample the
broken property with its meaning, the replay command and the steps in words (the
HTML page draws them), then the tables (phases, coverage).

Code spans are literal on GitHub (a backslash inside one is shown), so text in a code
span is never backslash-escaped (:func:`code_span`): ``monotone_publication`` stays
``monotone_publication``, not ``monotone\\_publication``.

Every string is untrusted: HTML is escaped (``<`` becomes ``&lt;``), Markdown's
own syntax is backslash-escaped, and table cells lose their line breaks and
pipes, so a SUT's message can neither add a link or an image nor break a table.
Bare URLs and addresses never become links either: GitHub turns ``https://...``,
``www....`` and ``name@host`` in plain text into links, so the characters that
start them (the ``:`` of ``://``, ``@``, the dot of ``www.``) are written as character
references (``&#58;``), which render the same and start nothing. Invisible and
direction-changing characters (U+202E, U+2066, ...) are shown as ``U+XXXX``
(:mod:`fencepost.reports.text`).

Cost: linear in the report's size, capped at :data:`MAX_STEPS` steps per timeline.
"""

from __future__ import annotations

from collections.abc import Iterable

from fencepost.reports.model import Fact, Report, Section, Status, Table, Timeline
from fencepost.reports.text import is_invisible

#: Steps listed per counterexample; longer ones end with a line saying how many were left out.
MAX_STEPS = 60

_ICON = {
    Status.PASS: "\u2705",
    Status.FAIL: "\u274c",
    Status.ERROR: "\u274c",
    Status.WARN: "\u26a0\ufe0f",
    Status.SKIP: "\u23ed\ufe0f",
    Status.INFO: "\u2139\ufe0f",
}

#: What could start markup inside a line: emphasis, code, links and images (via the
#: brackets), table cells, strikethrough. Untrusted text never starts a line here, so
#: list and heading markers need no escape.
_SPECIAL = set("\\`*_[]|~")

#: What makes GitHub turn plain text into a link (the ``:`` of ``https://``, the ``@`` of
#: ``a@b.c``, ``mailto:a@b.c``): written as character references, which render the same
#: and link nothing. (The dot of ``www.`` is written ``&#46;`` for the same reason.)
_LINK_STARTS = {":": "&#58;", "@": "&#64;"}


def escape_md(text: str) -> str:
    """``text`` as literal Markdown text on one line: no markup, link, image or HTML survives."""
    out = []
    for i, ch in enumerate(text):
        code = ord(ch)
        if ch == "&":
            out.append("&amp;")
        elif ch == "<":
            out.append("&lt;")
        elif ch == ">":
            out.append("&gt;")
        elif ch in "\r\n\t":
            out.append(" ")
        elif code < 0x20 or code == 0x7F or 0xD800 <= code <= 0xDFFF:
            out.append(f"\\\\x{code:02x}" if code < 0x100 else f"\\\\u{code:04x}")
        elif ch in _SPECIAL:
            out.append("\\" + ch)
        elif ch == "@" or (ch == ":" and text.startswith("//", i + 1)):
            out.append(_LINK_STARTS[ch])
        elif ch == "." and "".join(out[-3:]).lower() == "www":
            out.append("&#46;")
        elif code >= 0x80 and is_invisible(ch):
            out.append(f"U+{code:04X}")
        else:
            out.append(ch)
    return "".join(out)


def code_span(text: str) -> str:
    """``text`` as an inline code span (commands), safe whatever backticks it holds."""
    clean = "".join(
        " "
        if ch in "\r\n\t" or ord(ch) < 0x20 or 0xD800 <= ord(ch) <= 0xDFFF
        else (f"U+{ord(ch):04X}" if ord(ch) >= 0x80 and is_invisible(ch) else ch)
        for ch in text
    )
    longest = run = 0
    for ch in clean:
        run = run + 1 if ch == "`" else 0
        longest = max(longest, run)
    fence = "`" * (longest + 1)
    pad = " " if clean.startswith("`") or clean.endswith("`") else ""
    return f"{fence}{pad}{clean}{pad}{fence}"


def render_markdown(report: Report) -> str:
    """The summary as Markdown text (ends with a newline)."""
    out = [
        f"## {_ICON[report.status]} {escape_md(report.title)}: {escape_md(report.verdict)}",
        "",
    ]
    out.extend(_facts(report.facts))
    failing = report.failing
    if failing:
        out += ["**Failures** (each links to its counterexample below)", ""]
        for n, section in enumerate(failing, 1):
            summary = f": {escape_md(section.summary)}" if section.summary else ""
            out.append(f"{n}. [{escape_md(section.title)}](#failure-{n}){summary}")
        out.append("")
    for n, section in enumerate(failing, 1):
        out.extend(_section(section, f"failure-{n}"))
    for table in report.tables:
        out.extend(_table(table))
    for section in report.others:
        out.extend(_section(section))
    return "\n".join(out).rstrip("\n") + "\n"


def _facts(facts: Iterable[Fact]) -> list[str]:
    lines = []
    for fact in facts:
        value = code_span(fact.value) if fact.code else escape_md(fact.value)
        lines.append(f"- **{escape_md(fact.label)}**: {value}")
    return [*lines, ""] if lines else []


def _table(table: Table) -> list[str]:
    if not table.rows:
        return []
    out = [f"**{escape_md(table.title)}**", ""] if table.title else []
    out.append("| " + " | ".join(escape_md(c) for c in table.columns) + " |")
    out.append(
        "|"
        + "|".join("---:" if i in table.numeric else "---" for i in range(len(table.columns)))
        + "|"
    )
    for n, row in enumerate(table.rows):
        cells = [escape_md(c) for c in row]
        if table.status:
            icon = _ICON.get(table.status[n], "")
            cells[0] = f"{icon} {cells[0]}".strip()
        out.append("| " + " | ".join(cells) + " |")
    out.append("")
    return out


def _section(section: Section, anchor: str = "") -> list[str]:
    # GitHub keeps a named anchor (as user-content-NAME) and follows #NAME links to it.
    out = [f'<a name="{anchor}"></a>', ""] if anchor else []
    out += [f"### {_ICON[section.status]} {escape_md(section.title)}", ""]
    if section.summary:
        out += [escape_md(section.summary), ""]
    out.extend(_facts(section.facts))
    for table in section.tables:
        out.extend(_table(table))
    for timeline in section.timelines:
        out.extend(_timeline(timeline))
    return out


def _timeline(timeline: Timeline) -> list[str]:
    out = [f"**{escape_md(timeline.title)}**", ""]
    breach = timeline.breach
    if breach is not None:
        out.append(
            f"- **broke**: {code_span(breach.name)} at step {breach.step}: "
            f"{escape_md(breach.meaning)}"
        )
        out.append(f"- **what happened**: {escape_md(breach.message)}")
    out.extend(_facts(timeline.facts))
    if out[-1] != "":
        out.append("")
    names = {lane.key: lane.label for lane in timeline.lanes}
    shown = timeline.steps[:MAX_STEPS]
    for step in shown:
        who = names.get(step.lane or "", "")
        mark = " \u2190 **breaks here**" if breach is not None and step.index == breach.step else ""
        text = step.text.removeprefix("(drain) ")
        said = text.startswith(f"{who}:") or text.startswith(f"{who} ")
        prefix = f"{escape_md(who)}: " if who and not said else ""
        out.append(f"{step.index}. {prefix}{escape_md(step.text)}{mark}")
    if len(timeline.steps) > len(shown):
        out.append(f"\n_{len(timeline.steps) - len(shown)} more step(s) in the HTML report._")
    out.append("")
    return out
