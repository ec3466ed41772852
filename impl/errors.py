"""The one error type for bad values handed to the implementation."""

from __future__ import annotations


class InvalidValue(ValueError):
    """A value that cannot mean anything in the cut algebra or its records.

    Raised for a bool where an integer is expected, NaN or a float on an integer
    order, mixed coordinate types, an unknown endpoint kind, a missing or unknown
    field, an unencodable string. ``field`` is the dotted path of the offending
    field (``checkpoints[2].cut.at``) so the message names the place; ``value``
    is what was found there.
    """

    def __init__(self, field: str, value: object, problem: str) -> None:
        self.field = field
        self.value = value
        self.problem = problem
        super().__init__(f"{field}: {problem} (got {_show(value)})")


def _show(value: object) -> str:
    text = repr(value)
    if len(text) > 80:
        text = text[:77] + "..."
    return f"{text} of type {type(value).__name__}"


def reject_unknown_fields(data: object, allowed: set[str], field: str) -> None:
    """Refuse fields nobody reads: a typo (``epcoh``) must not pass silently."""
    if not isinstance(data, dict):
        return
    for key in data:
        if key not in allowed:
            raise InvalidValue(
                f"{field}.{key}", data[key], f"unknown field; allowed: {', '.join(sorted(allowed))}"
            )
