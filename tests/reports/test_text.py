"""The one home of showing untrusted text: controls, lone surrogates and invisible or
direction-changing characters escaped the same way in every output; links neutralised in
Markdown; the one JUnit writer escaping every string it is given."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from fencepost.reports import Report, Section, Status, render_html, render_markdown
from fencepost.reports.junit import Case, Outcome, Suite, junit_xml
from fencepost.reports.markdown import code_span, escape_md
from fencepost.reports.text import is_invisible, printable, xml_text

#: Bidirectional overrides and isolates, marks, zero-width characters, separators.
INVISIBLE = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c"
INVISIBLE += "\u200b\u200c\u200d\u2060\ufeff\u00ad\u2028\u2029"


@pytest.mark.parametrize("ch", list(INVISIBLE))
def test_every_invisible_character_is_shown_as_its_code_point(ch: str) -> None:
    shown = f"U+{ord(ch):04X}"
    assert is_invisible(ch)
    assert printable(f"a{ch}b") == f"a{shown}b"
    assert xml_text(f"a{ch}b") == f"a{shown}b"
    assert escape_md(f"a{ch}b") == f"a{shown}b"
    assert ch not in code_span(f"a{ch}b") and shown in code_span(f"a{ch}b")


def test_visible_text_is_left_alone() -> None:
    text = "café 日本 \U0001f600 a\tb\nc \u00a0 through 10"
    assert printable(text) == text
    assert printable("\x07\x1b[2J\ud800") == "\\x07\\x1b[2J\\ud800"
    assert xml_text("x\x00\ud800\x85") == "x\\x00\\ud800\\x85"


def test_a_url_or_an_address_never_becomes_a_link_in_markdown() -> None:
    md = escape_md("see https://evil.example/x, WWW.evil.example and me@evil.example")
    assert "://" not in md and "www." not in md.lower() and "@" not in md
    assert md == ("see https&#58;//evil.example/x, WWW&#46;evil.example and me&#64;evil.example")
    assert escape_md("verdict: 10:30") == "verdict: 10:30"  # only a scheme's colon


def test_pages_never_carry_an_invisible_character_raw() -> None:
    hostile = "op\u202e1-etirw \u2066x"
    report = Report(
        "fencepost audit",
        Status.FAIL,
        "a violation",
        sections=(Section(hostile, Status.FAIL, hostile),),
    )
    for text in (render_html(report), render_markdown(report)):
        assert "\u202e" not in text and "\u2066" not in text
        assert "opU+202E1-etirw U+2066x" in text


def test_the_junit_writer_escapes_every_string() -> None:
    hostile = "n\u202e\x07\ud800"
    suite = Suite(
        hostile,
        (Case(hostile, hostile, 1.0, Outcome("failure", hostile, hostile, hostile), hostile),),
        properties=((hostile, hostile),),
        output=hostile,
    )
    text = junit_xml(suite)
    root = ET.fromstring(text.encode("utf-8"))
    shown = "nU+202E\\x07\\ud800"
    node = root.find("testsuite")
    assert node is not None and node.get("name") == shown and node.get("failures") == "1"
    case = node.find("testcase")
    assert case is not None and case.get("classname") == shown and case.get("name") == shown
    failure = case.find("failure")
    assert failure is not None and failure.get("message") == shown and failure.text == shown
    assert case.findtext("system-out") == shown and node.findtext("system-out") == shown
    prop = node.find("properties/property")
    assert prop is not None and (prop.get("name"), prop.get("value")) == (shown, shown)


def test_json_output_keeps_the_value_and_escapes_invisible_characters() -> None:
    import json

    from fencepost.reports.text import json_text

    raw = json.dumps({"detail": "op\u202e1 \u2028 café"}, ensure_ascii=False)
    shown = json_text(raw)
    assert "\u202e" not in shown and "\u2028" not in shown and "café" in shown
    assert json.loads(shown) == json.loads(raw)  # the same JSON value


@pytest.mark.parametrize(
    "ch",
    ["\uffee", "\uffe8", "\u0378", "\uffef", "\ue000", "\U000e0001", "\U0010fffd"],
    ids=["U+FFEE halfwidth", "U+FFE8 halfwidth", "Cn", "Cn U+FFEF", "Co", "Cf astral", "Co astral"],
)
def test_a_character_with_no_glyph_is_shown_as_its_code_point(ch: str) -> None:
    """Unassigned, private-use and the halfwidth forms few fonts draw: an empty box on a
    page before (the harness's own strings use U+FFEE); now its code point everywhere."""
    shown = f"U+{ord(ch):04X}"
    assert is_invisible(ch)
    for out in (printable, xml_text, escape_md):
        assert out(f"a{ch}b") == f"a{shown}b", out
    assert shown in code_span(f"a{ch}b")
    page = render_html(Report("t", Status.FAIL, f"through '{ch}'"))
    assert ch not in page and f"through &#x27;{shown}&#x27;" in page


def test_json_text_escapes_an_astral_invisible_character_as_a_surrogate_pair() -> None:
    import json

    from fencepost.reports.text import json_text

    text = json_text(json.dumps("x\U000e0001y", ensure_ascii=False))
    assert text == '"x\\udb40\\udc01y"' and json.loads(text) == "x\U000e0001y"
