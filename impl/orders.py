"""Coordinate orders: the total orders that positions and cut coordinates live in.

Every partition declares an order by name (docs/semantics.md section 1). Two cuts or
two partitions are only comparable when they use the same order. An order says
whether it has an exact successor: only then is ``through x`` the same claim as
``before succ(x)``. Without one (timestamps truncated to a precision, strings)
events may sit strictly between any two coordinates, so the order is treated as
dense and no successor may ever be manufactured.

New order kinds join by implementing :class:`Order` and registering a parser in
:data:`ORDER_KINDS`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from fencepost.impl.errors import InvalidValue, reject_unknown_fields

#: A coordinate value. Each order accepts exactly one of these Python types.
Coordinate = int | str


@runtime_checkable
class Order(Protocol):
    """A named total order on coordinates."""

    @property
    def name(self) -> str:
        """The order's name; partitions with different order names are incomparable."""
        ...

    @property
    def kind(self) -> str:
        """The order's kind as written on the wire (``integer``, ``string``)."""
        ...

    @property
    def has_successor(self) -> bool:
        """True when ``succ(x)`` is exact: no event can sit between ``x`` and ``succ(x)``."""
        ...

    def validate(self, value: object, field: str) -> Coordinate:
        """Return ``value`` as a coordinate of this order, or raise :class:`InvalidValue`."""
        ...

    def compare(self, a: Coordinate, b: Coordinate) -> int:
        """-1, 0 or 1 as ``a`` is below, equal to or above ``b`` (both already validated)."""
        ...

    def successor(self, x: Coordinate) -> Coordinate:
        """The exact successor of ``x``; raises :class:`InvalidValue` when there is none."""
        ...

    def to_json(self) -> dict[str, object]:
        """The wire form of docs/conformance-protocol.md ("order")."""
        ...


def _sign(a: Coordinate, b: Coordinate) -> int:
    # Both values were validated to the same Python type by the order.
    return (a > b) - (a < b)  # type: ignore[operator]


@dataclass(frozen=True, slots=True)
class IntegerOrder:
    """Integer coordinates (offsets, sequence numbers, truncated timestamps).

    With ``successor=True`` the coordinates are the only positions events can
    have, so ``succ(x) = x + 1`` is exact and ``through x == before x+1``. With
    ``successor=False`` the integers are only labels on a dense axis (a timestamp
    truncated to milliseconds): events may sit between ``x`` and ``x + 1``, and
    adding one manufactures a claim nobody certified.

    Integers are unbounded (Kinesis sequence numbers have up to 129 digits);
    booleans and floats are refused, because ``True == 1`` and ``1.5`` on an
    integer order are mistakes, not coordinates.
    """

    name: str
    successor_exact: bool

    @property
    def kind(self) -> str:
        return "integer"

    @property
    def has_successor(self) -> bool:
        return self.successor_exact

    def validate(self, value: object, field: str) -> Coordinate:
        if type(value) is int:
            return value
        if isinstance(value, bool):
            raise InvalidValue(field, value, f"order {self.name!r} needs an integer, not a bool")
        if isinstance(value, float):
            raise InvalidValue(
                field, value, f"order {self.name!r} is an integer order; floats are not coordinates"
            )
        raise InvalidValue(field, value, f"order {self.name!r} needs an integer coordinate")

    def compare(self, a: Coordinate, b: Coordinate) -> int:
        return _sign(a, b)

    def successor(self, x: Coordinate) -> Coordinate:
        if not self.successor_exact:
            raise InvalidValue(
                "order.successor",
                x,
                f"order {self.name!r} has no exact successor; never manufacture one "
                "(keep the cut's endpoint kind instead)",
            )
        assert isinstance(x, int)
        return x + 1

    def to_json(self) -> dict[str, object]:
        return {"name": self.name, "kind": "integer", "successor": self.successor_exact}


@dataclass(frozen=True, slots=True)
class StringOrder:
    """Unicode string coordinates compared by code point; no successor.

    Between any two distinct strings another may sit only sometimes, but a
    provider never promises which, so the order is treated as dense. Strings
    that cannot be encoded as UTF-8 (lone surrogates) are refused: they could
    not be stored or sent on the wire.
    """

    name: str

    @property
    def kind(self) -> str:
        return "string"

    @property
    def has_successor(self) -> bool:
        return False

    def validate(self, value: object, field: str) -> Coordinate:
        if type(value) is not str:
            raise InvalidValue(field, value, f"order {self.name!r} needs a string coordinate")
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise InvalidValue(
                field, value, f"not encodable as UTF-8 ({exc.reason} at index {exc.start})"
            ) from None
        return value

    def compare(self, a: Coordinate, b: Coordinate) -> int:
        return _sign(a, b)

    def successor(self, x: Coordinate) -> Coordinate:
        raise InvalidValue(
            "order.successor",
            x,
            f"order {self.name!r} is a string order and has no exact successor",
        )

    def to_json(self) -> dict[str, object]:
        return {"name": self.name, "kind": "string"}


def _require_name(data: Mapping[str, object], field: str) -> str:
    name = data.get("name")
    if type(name) is not str or not name:
        raise InvalidValue(f"{field}.name", name, "an order needs a non-empty string name")
    return name


def _integer_from_json(data: Mapping[str, object], field: str) -> Order:
    reject_unknown_fields(data, {"name", "kind", "successor"}, field)
    successor = data.get("successor")
    if type(successor) is not bool:
        raise InvalidValue(
            f"{field}.successor", successor, "integer orders need successor: true or false"
        )
    return IntegerOrder(_require_name(data, field), successor)


def _string_from_json(data: Mapping[str, object], field: str) -> Order:
    reject_unknown_fields(data, {"name", "kind", "successor"}, field)
    if data.get("successor", False) is not False:
        raise InvalidValue(
            f"{field}.successor", data.get("successor"), "string orders have no successor"
        )
    return StringOrder(_require_name(data, field))


#: order kind -> parser of its wire form. More orders join here.
ORDER_KINDS: dict[str, Callable[[Mapping[str, object], str], Order]] = {
    "integer": _integer_from_json,
    "string": _string_from_json,
}


def order_from_json(data: object, field: str = "order") -> Order:
    """Parse an order's wire form, naming ``field`` in any error."""
    if not isinstance(data, Mapping):
        raise InvalidValue(field, data, "an order is an object with name and kind")
    kind = data.get("kind")
    if not isinstance(kind, str) or kind not in ORDER_KINDS:
        raise InvalidValue(
            f"{field}.kind", kind, f"unknown order kind; known kinds: {', '.join(ORDER_KINDS)}"
        )
    assert isinstance(kind, str)
    return ORDER_KINDS[kind](data, field)
