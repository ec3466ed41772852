"""Bounds on untrusted input files: size, nesting and integer length, checked before parsing.

A scenario, contract or regression file may come from anyone. Python's own
parsers fail on hostile input with exceptions that are not syntax errors: a
file read from ``/dev/zero`` never ends, ``tomllib`` recurses once per nesting
level (``RecursionError`` past about a thousand), and an integer of more than
4,300 digits raises ``ValueError: Exceeds the limit``. The loaders call
:func:`read_capped` and :func:`parse_toml` instead, which turn each of these
into an :class:`InputProblem` naming the line, so the user gets
``file:line: reason`` and exit 2, never a traceback.

Cost: :func:`read_capped` reads at most ``limit + 1`` bytes. :func:`parse_toml`
adds one regular-expression pass over the text (strings and comments skipped in
C) and a Python step per bracket, linear in the file's size.
"""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path
from typing import Any

#: The largest input file read (a scenario with 100,000 events per partition is ~3 MiB).
MAX_INPUT_BYTES = 32 << 20

#: The deepest nesting of arrays and inline tables accepted: no real file needs more
#: than a handful, and the parsers (and anything walking the values) recurse per level.
MAX_NESTING = 64

#: The most digits of an integer Python converts from text (its own default limit).
MAX_INTEGER_DIGITS = 4300


class InputProblem(ValueError):
    """Why an input cannot be read: ``line`` (1-based, or None for the whole file) and a reason."""

    def __init__(self, line: int | None, reason: str) -> None:
        super().__init__(reason)
        self.line = line
        self.reason = reason


class InputTooLarge(InputProblem):
    """The input is larger than the limit (or endless, like ``/dev/zero``)."""


def read_capped(path: str | Path, limit: int = MAX_INPUT_BYTES) -> bytes:
    """The bytes of ``path``, refusing more than ``limit`` (a huge file) with
    :class:`InputTooLarge` and anything but a regular file (a FIFO with no writer, a
    device that never ends) with :class:`~fencepost.inputs.files.NotRegularFile`, at
    once; OS errors propagate as :class:`OSError`."""
    from fencepost.inputs.files import open_regular

    with open_regular(path) as handle:
        raw = handle.read(limit + 1)
    if len(raw) > limit:
        raise InputTooLarge(
            None,
            f"larger than {limit >> 20} MiB (or endless, like a device); "
            "an input file is a few kilobytes to megabytes of text",
        )
    return raw


_TOKENS = re.compile(
    r'#[^\n]*|"""[\s\S]*?"""|\'\'\'[\s\S]*?\'\'\'|"(?:[^"\\\n]|\\.)*"|\'[^\'\n]*\'|[\[\]{}]'
)
_LONG_INTEGER = re.compile(r"(?<![\w.\"'])[+-]?\d(?:_?\d){" + str(MAX_INTEGER_DIGITS) + ",}")


def line_at(text: str, position: int) -> int:
    """The 1-based line of character ``position`` of ``text``."""
    return text.count("\n", 0, position) + 1


def check_nesting(text: str, limit: int = MAX_NESTING) -> None:
    """Refuse TOML (or JSON) text whose arrays and tables nest deeper than ``limit``.

    Brackets inside strings and comments do not count; a ``[table]`` header opens
    and closes on its line. Raises :class:`InputProblem` on the first line too deep.
    """
    depth = 0
    for match in _TOKENS.finditer(text):
        token = match.group()
        if token in "[{":
            depth += 1
            if depth > limit:
                raise InputProblem(
                    line_at(text, match.start()),
                    f"arrays and tables nested more than {limit} levels deep; "
                    "no valid file needs that many",
                )
        elif token in "]}":
            depth = max(0, depth - 1)


def parse_toml(text: str) -> dict[str, Any]:
    """Parse TOML ``text`` with :mod:`tomllib` within the bounds above.

    Every failure is an :class:`InputProblem` with the line when it is known:
    syntax errors (tomllib's own line), nesting past :data:`MAX_NESTING`, integers
    of more than :data:`MAX_INTEGER_DIGITS` digits.
    """
    check_nesting(text)
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        m = re.search(r"\(at line (\d+), column (\d+)\)", str(exc))
        line = int(m.group(1)) if m else None
        message = re.sub(r"\s*\(at line \d+, column \d+\)", "", str(exc))
        raise InputProblem(line, f"TOML syntax: {message}") from None
    except ValueError:
        # tomllib lets int()'s digit limit through as a plain ValueError.
        long = _LONG_INTEGER.search(text)
        raise InputProblem(
            None if long is None else line_at(text, long.start()),
            f"an integer of more than {sys.get_int_max_str_digits() or MAX_INTEGER_DIGITS} "
            "digits; no coordinate or counter needs that many (write a string if it is a name)",
        ) from None
    except RecursionError:  # pragma: no cover - check_nesting refuses this first
        raise InputProblem(None, "nested too deeply to parse") from None
