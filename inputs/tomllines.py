"""Where each key of a TOML document is written, so errors can name a line.

:mod:`tomllib` parses values but forgets where they came from. A contract error
must say ``kafka.toml:14: boundaries.committed.cut: ...`` so the author can go
straight to the mistake; this module scans the source once and maps every
table header, array-of-tables entry and ``key = value`` line to its line number.

The scan understands what contract files use: comments, bare and quoted keys,
dotted keys, ``[table]`` and ``[[array]]`` headers, and values that span lines
(multi-line strings and arrays). It never interprets values; :mod:`tomllib`
remains the parser of record, and a path the scan did not see falls back to the
closest enclosing table, never to a wrong place.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

#: One step of a path: a key, or the index of an array-of-tables entry.
PathPart = str | int
Path = tuple[PathPart, ...]

_BARE = re.compile(r"[A-Za-z0-9_-]+")
_HEX = frozenset("0123456789abcdefABCDEF")
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f", '"': '"', "\\": "\\"}


class KeySyntaxError(ValueError):
    """A dotted key that is not valid TOML key syntax."""


def parse_key(text: str) -> tuple[tuple[str, ...], int]:
    """Parse a (dotted) TOML key at the start of ``text``.

    Returns the key parts and the index just after the key. Bare keys, basic
    ``"..."`` keys (with the common escapes) and literal ``'...'`` keys are
    accepted, separated by dots with optional blanks.
    """
    parts: list[str] = []
    i = 0
    n = len(text)
    while True:
        while i < n and text[i] in " \t":
            i += 1
        if i >= n:
            raise KeySyntaxError(f"a key is missing in {text!r}")
        ch = text[i]
        if ch == '"':
            j = i + 1
            out: list[str] = []
            while j < n and text[j] != '"':
                if text[j] == "\\" and j + 1 < n:
                    esc = text[j + 1]
                    if esc in "uU":
                        width = 4 if esc == "u" else 8
                        digits = text[j + 2 : j + 2 + width]
                        if len(digits) != width or not all(c in _HEX for c in digits):
                            raise KeySyntaxError(f"bad \\{esc} escape in {text!r}")
                        out.append(chr(int(digits, 16)))
                        j += 2 + width
                        continue
                    out.append(_ESCAPES.get(esc, esc))
                    j += 2
                    continue
                out.append(text[j])
                j += 1
            if j >= n:
                raise KeySyntaxError(f"unterminated quoted key in {text!r}")
            parts.append("".join(out))
            i = j + 1
        elif ch == "'":
            j = text.find("'", i + 1)
            if j < 0:
                raise KeySyntaxError(f"unterminated quoted key in {text!r}")
            parts.append(text[i + 1 : j])
            i = j + 1
        else:
            m = _BARE.match(text, i)
            if m is None:
                raise KeySyntaxError(f"not a key: {text[i:]!r}")
            parts.append(m.group(0))
            i = m.end()
        while i < n and text[i] in " \t":
            i += 1
        if i < n and text[i] == ".":
            i += 1
            continue
        return tuple(parts), i


def format_path(path: Path) -> str:
    """A path as an author would write it: ``boundaries."Heartbeat.ts".cut``, ``caveats[1]``."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
            continue
        piece = part if _BARE.fullmatch(part) else _quote(part)
        out += ("." if out else "") + piece
    return out


def _quote(key: str) -> str:
    """A TOML basic-string key: backslashes, quotes and control characters escaped."""
    out = []
    for ch in key:
        if ch in ('"', "\\"):
            out.append("\\" + ch)
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\u{ord(ch):04X}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def parse_path(text: str) -> Path:
    """The inverse of :func:`format_path` (array indexes included)."""
    parts: list[PathPart] = []
    rest = text.strip()
    while rest:
        if rest.startswith("["):
            m = re.match(r"\[(\d+)\]", rest)
            if m is None:
                raise KeySyntaxError(f"bad index in {text!r}")
            parts.append(int(m.group(1)))
            rest = rest[m.end() :]
            if rest.startswith("."):
                rest = rest[1:]
            continue
        keys, end = _parse_key_until_index(rest)
        parts.extend(keys)
        rest = rest[end:]
        if rest.startswith("."):
            rest = rest[1:]
    if not parts:
        raise KeySyntaxError("an empty path")
    return tuple(parts)


def _parse_key_until_index(text: str) -> tuple[tuple[str, ...], int]:
    cut = len(text)
    in_quote: str | None = None
    escaped = False
    for i, ch in enumerate(text):
        if in_quote:
            if escaped:
                escaped = False
            elif ch == "\\" and in_quote == '"':
                escaped = True
            elif ch == in_quote:
                in_quote = None
        elif ch in "\"'":
            in_quote = ch
        elif ch == "[":
            cut = i
            break
    keys, end = parse_key(text[:cut])
    if text[:cut][end:].strip():
        raise KeySyntaxError(f"unexpected text after key in {text!r}")
    return keys, cut


@dataclass(frozen=True)
class LineIndex:
    """Line numbers (1-based) of the headers and keys of one TOML document."""

    lines: Mapping[Path, int] = field(default_factory=dict)

    def line_of(self, path: Path) -> int:
        """The line of ``path``; else of its first written descendant; else of its parent.

        A missing required key is reported on its table's header; a table that
        was only written through its sub-tables on the first of them.
        """
        probe = tuple(path)
        while probe:
            if probe in self.lines:
                return self.lines[probe]
            below = [line for p, line in self.lines.items() if p[: len(probe)] == probe]
            if below:
                return min(below)
            probe = probe[:-1]
        return 1


def index_lines(source: str) -> LineIndex:
    """Scan ``source`` and return where each table and key is written.

    The scan is tolerant: lines it cannot read are skipped (tomllib reports real
    syntax errors with their own line numbers).
    """
    lines: dict[Path, int] = {}
    table: Path = ()
    array_counts: dict[Path, int] = {}
    pending: str | None = None  # the delimiter that closes a multi-line value
    depth = 0  # open brackets of a multi-line array
    for number, raw in enumerate(source.splitlines(), start=1):
        line = raw
        if pending is not None:
            end = line.find(pending)
            if end < 0:
                continue
            line = line[end + len(pending) :]
            pending = None
            depth, pending = _scan_value(line, depth)
            continue
        if depth > 0:
            depth, pending = _scan_value(line, depth)
            continue
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        try:
            if stripped.startswith("[["):
                keys, end = parse_key(stripped[2:])
                base: Path = keys
                index = array_counts.get(base, 0)
                array_counts[base] = index + 1
                table = (*base, index)
                lines.setdefault(table, number)
                lines.setdefault(base, number)
                continue
            if stripped.startswith("["):
                keys, end = parse_key(stripped[1:])
                table = _resolve(keys, array_counts)
                lines.setdefault(table, number)
                continue
            keys, end = parse_key(stripped)
        except KeySyntaxError:
            continue
        rest = stripped[end:]
        if not rest.startswith("="):
            continue
        path = (*table, *keys)
        lines.setdefault(path, number)
        depth, pending = _scan_value(rest[1:], 0)
    return LineIndex(lines)


def _resolve(keys: tuple[str, ...], array_counts: Mapping[Path, int]) -> Path:
    """A ``[a.b]`` header inside ``[[a]]`` refers to the latest ``a`` entry."""
    out: list[PathPart] = []
    for key in keys:
        out.append(key)
        count = array_counts.get(tuple(out))
        if count:
            out.append(count - 1)
    return tuple(out)


def _scan_value(text: str, depth: int) -> tuple[int, str | None]:
    """Track brackets and multi-line strings through one line of a value."""
    i = 0
    n = len(text)
    while i < n:
        ch = text[i]
        if ch == "#":
            break
        if text.startswith('"""', i) or text.startswith("'''", i):
            delim = text[i : i + 3]
            end = text.find(delim, i + 3)
            if end < 0:
                return depth, delim
            i = end + 3
            continue
        if ch in "\"'":
            j = i + 1
            while j < n and text[j] != ch:
                j += 2 if ch == '"' and text[j] == "\\" else 1
            i = j + 1
            continue
        if ch in "[{":
            depth += 1
        elif ch in "]}":
            depth = max(0, depth - 1)
        i += 1
    return depth, None
