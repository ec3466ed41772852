"""Reading untrusted JSON lines: the one reader of every JSON-lines input, field by field.

Every JSON-lines input fencepost reads goes through :func:`decode_line`, so the
same text gets the same refusal everywhere: both ends of the conformance wire
(docs/conformance-protocol.md: the harness reading a SUT's messages,
:mod:`fencepost.harness.protocol`, and fencepost's own SUT reading the harness's,
:mod:`fencepost.sut.wire`), audit logs (:mod:`fencepost.audit.log`, integers
only) and regression files (:mod:`fencepost.harness.report`). Files are read
line by line with :func:`file_lines`, which never holds more than one bounded
line. Only the framing and the plain field checks are shared here; what the
values *mean* (cuts, records, checkpoints) each side reads with its own,
independent code: the judge's values on one side, the implementation's codec on
the other.

Every check refuses with a :class:`MessageError` naming the field: a line longer
than :data:`MAX_LINE_BYTES`, text that is not JSON, ``NaN`` or ``Infinity``,
duplicate keys (a second ``"result"`` must not silently replace the first),
nesting too deep to parse, a float where only integers may be, unknown or
missing fields, a bool posing as an integer, a string holding a lone surrogate
(not Unicode text).

Cost: linear in the length of the line; :func:`file_lines` holds at most
``limit + 1`` bytes of a line.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from typing import IO, Any, NamedTuple, Protocol

#: The longest line either end accepts (bytes, newline excluded). A longer line is a
#: failure of its sender: no honest message of this protocol comes near it.
MAX_LINE_BYTES = 1 << 20

#: A request id or call id as it travels on the wire (echoed back exactly).
WireId = int | str
JSONObject = dict[str, Any]


class LineIO(Protocol):
    """One end of a connection: read the other end's lines, write one's own."""

    def read_line(self) -> str | None:
        """The next line without its newline; None at end of input."""
        ...

    def write_line(self, line: str) -> None: ...


class MessageError(ValueError):
    """A line that is not a well-formed message of this protocol.

    ``field`` is the dotted path of the offending place (``call.expected_revision``)
    and ``problem`` says what is wrong and what was expected.
    """

    def __init__(self, field: str, problem: str) -> None:
        self.field = field
        self.problem = problem
        super().__init__(f"{field}: {problem}")


def _no_constants(name: str) -> object:
    raise MessageError("line", f"{name} is not a number JSON may carry; numbers must be finite")


def _no_duplicates(pairs: list[tuple[str, object]]) -> dict[str, object]:
    obj = dict(pairs)  # in C; only a line with a repeated key pays for the search below
    if len(obj) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise MessageError(f"line.{key}", "duplicate key; each field appears once")
            seen.add(key)
    return obj


def _no_float(literal: str) -> object:
    raise MessageError(
        "line", f"{literal} is not an integer; every number of this input is an integer"
    )


_DECODER = json.JSONDecoder(parse_constant=_no_constants, object_pairs_hook=_no_duplicates)
_INTEGER_DECODER = json.JSONDecoder(
    parse_constant=_no_constants, object_pairs_hook=_no_duplicates, parse_float=_no_float
)


def decode_line(line: str, *, integers_only: bool = False) -> JSONObject:
    """One line of JSON text as an object; NaN, Infinity and duplicate keys are refused,
    and with ``integers_only`` every number that is not an integer."""
    if len(line) > MAX_LINE_BYTES or len(line.encode("utf-8", "surrogatepass")) > MAX_LINE_BYTES:
        raise MessageError("line", f"longer than {MAX_LINE_BYTES} bytes")
    try:
        value = (_INTEGER_DECODER if integers_only else _DECODER).decode(line)
    except MessageError:
        raise
    except RecursionError:
        raise MessageError("line", "nested too deeply to parse (no valid line needs it)") from None
    except ValueError as exc:
        shown = line if len(line) <= 60 else line[:57] + "..."
        raise MessageError("line", f"not JSON ({exc}): {shown!r}") from None
    if not isinstance(value, dict):
        raise MessageError("line", f"each line is one JSON object, got {type(value).__name__}")
    return value


class FileLine(NamedTuple):
    """One line of a file: its 1-based ``number``, its bytes without the newline, and
    whether it ``ended`` with one (only a file's last line may not)."""

    number: int
    data: bytes
    ended: bool


class LineTooLong(MessageError):
    """A line of a file longer than the limit (``number`` is its 1-based line)."""

    def __init__(self, number: int, limit: int) -> None:
        self.number = number
        super().__init__("line", f"longer than {limit} bytes; no line of this input comes near it")


def file_lines(handle: IO[bytes], limit: int = MAX_LINE_BYTES) -> Iterator[FileLine]:
    """The lines of ``handle``, each read with a bound: a line longer than ``limit`` bytes
    (50 MB of garbage, an endless device) is refused with :class:`LineTooLong` after
    reading ``limit + 1`` bytes of it, never read whole."""
    number = 0
    while True:
        raw = handle.readline(limit + 1)
        if not raw:
            return
        number += 1
        ended = raw.endswith(b"\n")
        data = raw[:-1] if ended else raw
        if len(data) > limit:
            raise LineTooLong(number, limit)
        yield FileLine(number, data, ended)


def encode(message: Mapping[str, object]) -> str:
    """The message as one line of compact JSON text (no trailing newline)."""
    return json.dumps(message, separators=(",", ":"), ensure_ascii=False)


def fields(
    msg: Mapping[str, object], where: str, required: Sequence[str], optional: Sequence[str] = ()
) -> None:
    """Every required field present, no field unknown."""
    for key in msg:
        if key not in required and key not in optional:
            allowed = ", ".join(sorted({*required, *optional}))
            raise MessageError(f"{where}.{key}", f"unknown field; {where} has: {allowed}")
    for key in required:
        if key not in msg:
            raise MessageError(f"{where}.{key}", "missing required field")


def integer(value: object, field: str, *, minimum: int | None = None) -> int:
    """An integer (never a bool or a float) of at least ``minimum``."""
    if type(value) is not int:
        kind = "a bool" if isinstance(value, bool) else type(value).__name__
        raise MessageError(field, f"an integer is required, got {kind} {value!r}")
    if minimum is not None and value < minimum:
        raise MessageError(field, f"must be at least {minimum}, got {value}")
    return value


def opt_integer(value: object, field: str, *, minimum: int | None = None) -> int | None:
    return None if value is None else integer(value, field, minimum=minimum)


def unicode_text(value: str, field: str) -> str:
    """``value``, refused if it holds a lone surrogate (not Unicode text)."""
    for index, ch in enumerate(value):
        if 0xD800 <= ord(ch) <= 0xDFFF:
            raise MessageError(
                field, f"a lone surrogate (\\u{ord(ch):04x}) at index {index} is not Unicode text"
            )
    return value


def text(value: object, field: str, *, empty: bool = False) -> str:
    """A string of Unicode text (non-empty unless ``empty``)."""
    if type(value) is not str:
        raise MessageError(field, f"a string is required, got {type(value).__name__} {value!r}")
    if not empty and not value:
        raise MessageError(field, "a non-empty string is required")
    return unicode_text(value, field)


def opt_text(value: object, field: str) -> str | None:
    return None if value is None else text(value, field, empty=True)


def wire_id(value: object, field: str) -> WireId:
    """A request or call id: an integer or a string."""
    if type(value) is str:
        return unicode_text(value, field)
    if type(value) is int:
        return value
    raise MessageError(field, f"an id is an integer or a string, got {type(value).__name__}")


def choice(value: object, field: str, allowed: Sequence[str]) -> str:
    """One of ``allowed``."""
    if type(value) is not str or value not in allowed:
        raise MessageError(field, f"one of {', '.join(allowed)} is required, got {value!r}")
    return value
