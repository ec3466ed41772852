"""Reading untrusted JSON lines: the framing of the conformance protocol, field by field.

Both ends of the wire (docs/conformance-protocol.md) read it through this module:
the harness reading a SUT's messages (:mod:`fencepost.harness.protocol`) and
fencepost's own SUT reading the harness's (:mod:`fencepost.sut.wire`). Only the
framing and the plain field checks are shared here; what the values *mean* (cuts,
records, checkpoints) each side reads with its own, independent code: the judge's
values on one side, the implementation's codec on the other.

Every check refuses with a :class:`MessageError` naming the field: a line longer
than :data:`MAX_LINE_BYTES`, text that is not JSON, ``NaN`` or ``Infinity``,
duplicate keys, nesting too deep to parse, unknown or missing fields, a bool
posing as an integer, a string holding a lone surrogate (not Unicode text).

Cost: linear in the length of the line.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

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
    raise MessageError("line", f"{name} is not JSON; numbers must be finite")


def _no_duplicates(pairs: list[tuple[str, object]]) -> dict[str, object]:
    obj: dict[str, object] = {}
    for key, value in pairs:
        if key in obj:
            raise MessageError(f"line.{key}", "duplicate key; each field appears once")
        obj[key] = value
    return obj


def decode_line(line: str) -> JSONObject:
    """One line of JSON text as an object; NaN, Infinity and duplicate keys are refused."""
    if len(line.encode("utf-8", "surrogatepass")) > MAX_LINE_BYTES:
        raise MessageError("line", f"longer than {MAX_LINE_BYTES} bytes")
    try:
        value = json.loads(line, parse_constant=_no_constants, object_pairs_hook=_no_duplicates)
    except MessageError:
        raise
    except (ValueError, RecursionError) as exc:
        shown = line if len(line) <= 60 else line[:57] + "..."
        raise MessageError("line", f"not JSON ({exc}): {shown!r}") from None
    if not isinstance(value, dict):
        raise MessageError("line", f"a message is a JSON object, got {type(value).__name__}")
    return value


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
