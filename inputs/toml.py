"""Reading an untrusted TOML file: typed fields, and every mistake named with file:line.

One reader for every TOML file fencepost accepts (provider contracts, scenarios):
:class:`Document` parses the text (:mod:`tomllib` is the parser of record) and
knows where each key is written (:mod:`fencepost.inputs.tomllines`);
:class:`Table` gives typed access to one table and turns any mistake into the
caller's error type, ``origin:line: field.path: what is wrong``, with a
did-you-mean hint for a misspelt key or choice. An unknown key is an error, never
ignored: a typo must not silently change what a file means.

Hostile input is refused before it can hurt (:mod:`fencepost.inputs.limits`): a
file larger than :data:`MAX_BYTES` (or endless, like ``/dev/zero``), tables or
arrays nested deeper than :data:`MAX_DEPTH`, or an integer of more than
:data:`MAX_DIGITS` digits is a clean error naming the place, never a
``RecursionError``, a ``MemoryError`` or Python's own limit on integer conversion.

Cost: parsing and indexing are linear in the size of the text; each field read
is O(1) plus the size of its value.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Callable, Iterable, Mapping
from enum import Enum
from typing import Self, TypeVar

from fencepost.inputs.limits import (
    MAX_INPUT_BYTES,
    MAX_INTEGER_DIGITS,
    MAX_NESTING,
    InputProblem,
    parse_toml,
    read_capped,
)
from fencepost.inputs.tomllines import LineIndex, Path, format_path, index_lines

#: The bounds on hostile input (:mod:`fencepost.inputs.limits`), checked before parsing.
MAX_BYTES = MAX_INPUT_BYTES
MAX_DEPTH = MAX_NESTING
MAX_DIGITS = MAX_INTEGER_DIGITS

E = TypeVar("E", bound=Enum)


class InputError(ValueError):
    """A mistake in an input file: ``origin:line: field: problem``.

    ``line`` is None when no line can be named (the file could not be read at all);
    ``field`` is the dotted path of the value (empty for the whole file).
    """

    def __init__(self, origin: str, line: int | None, field: str, problem: str) -> None:
        self.origin = origin
        self.file = origin
        self.line = line
        self.field = field
        self.problem = problem
        # Not super(): a subclass may also derive from another ValueError with its own
        # constructor (ContractError is an InvalidValue too).
        ValueError.__init__(self, str(self))

    def __str__(self) -> str:
        where = f"{self.origin}:{self.line}" if self.line is not None else self.origin
        return (
            f"{where}: {self.field}: {self.problem}" if self.field else f"{where}: {self.problem}"
        )


#: Builds the caller's error: (origin, line, field, problem, offending value).
ErrorFactory = Callable[[str, int | None, str, str, object], InputError]


def _plain_error(
    origin: str, line: int | None, field: str, problem: str, value: object
) -> InputError:
    return InputError(origin, line, field, problem)


def shown(value: object) -> str:
    """A value as an error message quotes it: short, and never the whole of a huge one."""
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if isinstance(value, float):
        if math.isnan(value):
            return "nan (not a number)"
        if math.isinf(value):
            return f"{value} (infinity)"
        return f"the float {value!r}"
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, int):
        text = str(value)
        return text if len(text) <= 24 else f"{text[:20]}... ({len(text)} digits)"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def hint(value: object, options: Iterable[str]) -> str:
    """``; did you mean 'x'?`` when ``value`` is a near miss of one of ``options``."""
    if type(value) is not str:
        return ""
    close = difflib.get_close_matches(value, list(options), n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""


class Document:
    """One TOML text, parsed once, with the line of every key (see the module doc)."""

    def __init__(self, text: str, origin: str, make_error: ErrorFactory = _plain_error) -> None:
        self.text = text
        self.origin = origin
        self.make_error = make_error
        self.lines: LineIndex = index_lines(text)

    @classmethod
    def from_file(cls, path: str, make_error: ErrorFactory = _plain_error) -> Document:
        """Read ``path`` (at most :data:`MAX_BYTES` of it: ``/dev/zero`` is refused, not read
        forever) and decode it; an unreadable file is a clean error naming it."""
        try:
            raw = read_capped(path)
        except InputProblem as exc:
            raise make_error(path, None, "", exc.reason, None) from None
        except FileNotFoundError:
            raise make_error(path, None, "", "no such file", None) from None
        except IsADirectoryError:
            raise make_error(path, None, "", "is a directory, not a file", None) from None
        except OSError as exc:
            raise make_error(
                path, None, "", f"cannot read the file: {exc.strerror or exc}", None
            ) from None
        return cls.from_bytes(raw, path, make_error)

    @classmethod
    def from_bytes(
        cls, raw: bytes, origin: str, make_error: ErrorFactory = _plain_error
    ) -> Document:
        """Decode ``raw`` as UTF-8 (refusing oversized or undecodable input with a clean error)."""
        if len(raw) > MAX_BYTES:
            raise make_error(
                origin,
                None,
                "",
                f"the file is larger than {MAX_BYTES} bytes; is it the right file?",
                None,
            )
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            line = raw[: exc.start].count(b"\n") + 1
            raise make_error(origin, line, "", f"not UTF-8 text ({exc.reason})", None) from None
        return cls(text, origin, make_error)

    def error(self, path: Path, problem: str, value: object = None) -> InputError:
        return self.make_error(
            self.origin,
            self.lines.line_of(path) if path else None,
            format_path(path),
            problem,
            value,
        )

    def line(self, path: Path) -> int:
        return self.lines.line_of(path)

    def parse(self) -> dict[str, object]:
        """The parsed document; syntax errors and hostile shapes as clean errors with a line."""
        if len(self.text) > MAX_BYTES:
            raise self.make_error(
                self.origin, None, "", f"the file is larger than {MAX_BYTES} bytes", None
            )
        try:
            return parse_toml(self.text)
        except InputProblem as exc:
            raise self.make_error(self.origin, exc.line, "", exc.reason, None) from None

    def root(self, allowed: Iterable[str]) -> Table:
        """The top-level table, with its allowed keys checked."""
        return Table(self, (), self.parse(), allowed)


class Table:
    """Typed access to one table of a :class:`Document`; every mistake names its place.

    ``allowed`` lists the keys the table may have (None: the caller checks them,
    for tables with free keys such as partition names).
    """

    def __init__(
        self, doc: Document, path: Path, data: object, allowed: Iterable[str] | None
    ) -> None:
        self.doc = doc
        self.path = path
        if not isinstance(data, dict):
            raise doc.error(path, f"a table is required, got {shown(data)}", data)
        self.data: dict[str, object] = data
        if allowed is None:
            return
        self.allowed = tuple(allowed)
        for key in data:
            if key not in self.allowed:
                allowed_here = ", ".join(self.allowed)
                raise doc.error(
                    (*path, key),
                    f"unknown field (allowed here: {allowed_here}){hint(key, self.allowed)}",
                    data[key],
                )

    def error(self, key: str | int | None, problem: str, value: object = None) -> InputError:
        return self.doc.error(self.path if key is None else (*self.path, key), problem, value)

    def here(self, key: str | int | None = None) -> Path:
        return self.path if key is None else (*self.path, key)

    def line(self, key: str | int | None = None) -> int:
        return self.doc.line(self.here(key))

    def has(self, key: str) -> bool:
        return key in self.data

    def get(self, key: str) -> object:
        """The raw value, or None when absent."""
        return self.data.get(key)

    def raw(self, key: str) -> object:
        """The raw value of a required key."""
        if key not in self.data:
            raise self.error(key, "missing required field")
        return self.data[key]

    def text(self, key: str, default: str | None = None) -> str:
        if key not in self.data and default is not None:
            return default
        value = self.raw(key)
        if type(value) is not str or not value.strip():
            raise self.error(key, f"a non-empty string is required, got {shown(value)}", value)
        return value

    def opt_text(self, key: str) -> str | None:
        return self.text(key) if key in self.data else None

    def boolean(self, key: str, default: bool | None = None) -> bool:
        if key not in self.data and default is not None:
            return default
        value = self.raw(key)
        if type(value) is not bool:
            raise self.error(key, f"true or false is required, got {shown(value)}", value)
        return value

    def integer(self, key: str, low: int, high: int, default: int | None = None) -> int:
        if key not in self.data and default is not None:
            return default
        return self.bounded(self.here(key), self.raw(key), low, high)

    def opt_integer(self, key: str, low: int, high: int) -> int | None:
        return self.integer(key, low, high) if key in self.data else None

    def bounded(self, path: Path, value: object, low: int, high: int) -> int:
        """``value`` (found at ``path``) as an integer between ``low`` and ``high``."""
        if type(value) is not int:
            raise self.doc.error(path, f"an integer is required, got {shown(value)}", value)
        if not low <= value <= high:
            raise self.doc.error(
                path, f"{shown(value)} is out of range: it must be between {low} and {high}", value
            )
        return value

    def choice(self, key: str, enum: type[E], default: E | None = None) -> E:
        if key not in self.data and default is not None:
            return default
        value = self.raw(key)
        options = [str(member.value) for member in enum]
        if type(value) is not str or value not in options:
            raise self.error(
                key, f"must be one of: {', '.join(options)}{hint(value, options)}", value
            )
        return enum(value)

    def texts(self, key: str, *, required: bool = False) -> tuple[str, ...]:
        if key not in self.data:
            if required:
                raise self.error(key, "missing required field")
            return ()
        value = self.data[key]
        if not isinstance(value, list):
            raise self.error(key, f"an array of strings is required, got {shown(value)}", value)
        for i, item in enumerate(value):
            if type(item) is not str or not item:
                raise self.error(
                    key, f"item {i + 1}: a non-empty string is required, got {shown(item)}", item
                )
        return tuple(value)

    def table(self, key: str, allowed: Iterable[str] | None) -> Self:
        """The required sub-table ``key``."""
        return type(self)(self.doc, self.here(key), self.raw(key), allowed)

    def opt_table(self, key: str, allowed: Iterable[str] | None) -> Self | None:
        """The sub-table ``key``, or None when absent."""
        return self.table(key, allowed) if key in self.data else None

    def tables(self, key: str, allowed: Iterable[str] | None) -> list[Self]:
        """The entries of the array of tables ``[[key]]`` (empty when absent)."""
        if key not in self.data:
            return []
        value = self.data[key]
        if not isinstance(value, list):
            raise self.error(
                key, f"an array of tables ([[{key}]]) is required, got {shown(value)}", value
            )
        out = []
        for i, item in enumerate(value):
            if not isinstance(item, dict):
                raise self.error(key, f"entry {i + 1} must be a table, got {shown(item)}", item)
            out.append(type(self)(self.doc, (*self.path, key, i), item, allowed))
        return out

    def mapping(self, key: str) -> dict[str, object]:
        """A table with free keys (partition names, op names); empty when absent."""
        if key not in self.data:
            return {}
        value = self.data[key]
        if not isinstance(value, dict):
            raise self.error(key, f"a table is required, got {shown(value)}", value)
        return dict(value)


def choices_hint(value: object, options: Mapping[str, object] | Iterable[str]) -> str:
    """:func:`hint` over the keys of a mapping or any iterable of names."""
    return hint(value, list(options))
