"""Untrusted text made safe to show: the one home of ``printable`` and ``xml_text``.

Every string a SUT sends, a log holds or a file names is untrusted, and every
output shows it through one of these (terminal and text files, HTML, Markdown
through :func:`~fencepost.reports.markdown.escape_md`, JUnit XML):

- control characters (an escape sequence, a carriage return) would rewrite the
  reader's terminal: shown as ``\\xNN`` (newlines and tabs stay where text keeps them);
- lone surrogates (``"\\ud800"`` from a JSON escape) cannot be written as UTF-8:
  shown as ``\\udNNN``;
- **invisible and direction-changing characters** (Unicode format characters,
  category Cf: the bidirectional overrides and isolates U+202A-U+202E and
  U+2066-U+2069, the marks U+200E/U+200F/U+061C, zero-width spaces and joiners, the
  soft hyphen, U+FEFF; and the line and paragraph separators U+2028/U+2029) would
  make the text after them render reversed or hidden, so an op_id or a message
  could be spoofed (Trojan Source, CVE-2021-42574): shown as ``U+XXXX``;
- **characters with no glyph**: unassigned code points (category Cn, the noncharacters
  U+FFFE/U+FFFF included), private-use ones (Co), and the halfwidth symbol forms
  U+FFE8-U+FFEE, which few fonts draw (the harness's own strings use U+FFEE: it sorts
  below U+1F600 by code point and above it in UTF-16): a page would show an empty box
  where the reader needs to know which character it is, so they are shown as ``U+XXXX``.

Cost: linear in the length of the text (one ``str.isprintable`` pass when there is
nothing to escape, the common case).
"""

from __future__ import annotations

import unicodedata

#: Categories shown as ``U+XXXX``: format characters (bidi controls, zero-width), the
#: line and paragraph separators, unassigned and private-use code points. (Controls, Cc,
#: and surrogates, Cs, are escaped as ``\\xNN`` and ``\\udNNN`` before this is asked.)
INVISIBLE_CATEGORIES = frozenset({"Cf", "Zl", "Zp", "Cn", "Co"})

#: Assigned symbols that fonts rarely draw (an empty box on most pages): the halfwidth
#: forms U+FFE8-U+FFEE.
NO_GLYPH = range(0xFFE8, 0xFFEF)


def is_invisible(ch: str) -> bool:
    """Whether ``ch`` would not show as itself: it changes how the text around it is shown
    without showing itself, or it has no glyph a reader could tell apart (see the module
    docstring)."""
    return ord(ch) in NO_GLYPH or unicodedata.category(ch) in INVISIBLE_CATEGORIES


def _escape(ch: str) -> str:
    code = ord(ch)
    if code < 0x20 or 0x7F <= code < 0xA0:
        return f"\\x{code:02x}"
    if 0xD800 <= code <= 0xDFFF:
        return f"\\u{code:04x}"
    return f"U+{code:04X}"


def printable(text: str, keep: str = "\n\t") -> str:
    """``text`` safe for a terminal or a text file: controls, lone surrogates and
    invisible characters escaped (see the module doc); the characters of ``keep``
    stay."""
    if text.isprintable() and not any(ord(ch) in NO_GLYPH for ch in text):
        return text  # no control, surrogate, invisible or glyphless character: as is
    out = []
    for ch in text:
        code = ord(ch)
        if ch in keep or 0x20 <= code < 0x7F:
            out.append(ch)
        elif code < 0xA0 or 0xD800 <= code <= 0xDFFF or is_invisible(ch):
            out.append(_escape(ch))
        else:
            out.append(ch)
    return "".join(out)


def json_text(text: str) -> str:
    """JSON text (as ``json.dumps(..., ensure_ascii=False)`` writes it) with every invisible
    character written as its ``\\uXXXX`` escape: the same JSON value, shown safely on a
    terminal (JSON escapes control characters itself, but not U+202E or U+2028)."""
    if text.isascii():
        return text
    return "".join(_json_escape(ch) if is_invisible(ch) else ch for ch in text)


def _json_escape(ch: str) -> str:
    """``ch`` as JSON's ``\\uXXXX`` escape (a surrogate pair above U+FFFF)."""
    code = ord(ch)
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    code -= 0x10000
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def xml_text(text: str) -> str:
    """``text`` with every character XML 1.0 cannot carry, and every invisible one, shown as
    an escape (``\\x07`` becomes ``\\\\x07``, U+202E becomes ``U+202E``)."""
    out = []
    for ch in text:
        code = ord(ch)
        if ch in "\t\n\r" or 0x20 <= code < 0x7F:
            out.append(ch)
        elif code < 0x20 or 0xD800 <= code <= 0xDFFF or code in (0xFFFE, 0xFFFF):
            out.append(f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")
        elif 0x7F <= code < 0xA0 or is_invisible(ch):
            out.append(_escape(ch))
        else:
            out.append(ch)
    return "".join(out)
