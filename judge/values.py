"""The judge's own values: orders, cuts, memberships, checkpoints, records, pages.

Plain frozen data, validated on construction, written from docs/semantics.md
sections 1 to 5 and the wire forms of docs/conformance-protocol.md ("Values"),
never from the implementation's classes: the judge must be able to tell a wrong
implementation from a right one even when the wrong one is fencepost's own.

A value that cannot mean anything (a bool posing as an integer, a float or NaN as
a coordinate, an unknown endpoint kind, a string that is not valid Unicode) is a
:class:`BadValue` naming the field, never a verdict: a verdict is about true
statements over well-formed data.

Cost: every constructor is O(size of the value); a membership of P partitions
costs O(P) to build and O(1) per :meth:`Membership.order_of`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import Enum, StrEnum
from types import MappingProxyType

#: A position or cut coordinate: an integer of any size, or a Unicode string.
Coordinate = int | str


class BadValue(ValueError):
    """A value the judge cannot read; ``field`` is its dotted path (``checkpoints[1].cut.at``)."""

    def __init__(self, field: str, value: object, problem: str) -> None:
        self.field = field
        self.value = value
        self.problem = problem
        shown = repr(value)
        if len(shown) > 80:
            shown = shown[:77] + "..."
        super().__init__(f"{field}: {problem} (got {shown} of type {type(value).__name__})")


def coordinate(value: object, field: str) -> Coordinate:
    """``value`` as a coordinate of *some* order, or :class:`BadValue`.

    ``True`` is not 1 and ``1.0`` is not 1: JSON and Python both let them pass
    for integers, and on an order of offsets each is a mistake.
    """
    if type(value) is int:
        return value
    if type(value) is str:
        return text(value, field, allow_empty=True)
    if isinstance(value, bool):
        raise BadValue(field, value, "a coordinate is an integer or a string, never a bool")
    if isinstance(value, float):
        raise BadValue(field, value, "a coordinate is an integer or a string, never a float")
    raise BadValue(field, value, "a coordinate is an integer or a string")


def text(value: object, field: str, *, allow_empty: bool = False) -> str:
    """``value`` as a string that UTF-8 can carry (no lone surrogates), or :class:`BadValue`."""
    if type(value) is not str:
        raise BadValue(field, value, "a string is required")
    if not value and not allow_empty:
        raise BadValue(field, value, "a non-empty string is required")
    if not value.isascii() and any(0xD800 <= ord(ch) <= 0xDFFF for ch in value):
        raise BadValue(field, value, "a lone surrogate is not a Unicode character")
    return value


def whole(value: object, field: str, *, minimum: int) -> int:
    """``value`` as an integer (not a bool) of at least ``minimum``, or :class:`BadValue`."""
    if type(value) is not int:
        raise BadValue(field, value, "an integer is required")
    if value < minimum:
        raise BadValue(field, value, f"must be at least {minimum}")
    return value


class OrderKind(StrEnum):
    """The kinds of coordinate order of docs/semantics.md section 1 (equal to their wire names)."""

    INTEGER = "integer"
    STRING = "string"


@dataclass(frozen=True, slots=True)
class Order:
    """A named total order on coordinates.

    ``successor`` is true only for an integer order whose ``x + 1`` is exact (no
    event can sit between ``x`` and ``x + 1``: offsets, sequence numbers). An
    integer order without it labels a dense axis (timestamps truncated to a
    precision); a string order compares by code point and is dense
    (docs/semantics.md section 8). Partitions with different order names are
    incomparable.
    """

    name: str
    kind: OrderKind
    successor: bool = False

    def __post_init__(self) -> None:
        text(self.name, "order.name")
        if not isinstance(self.kind, OrderKind):
            raise BadValue("order.kind", self.kind, "integer or string")
        if type(self.successor) is not bool:
            raise BadValue("order.successor", self.successor, "true or false")
        if self.kind is OrderKind.STRING and self.successor:
            raise BadValue("order.successor", True, "a string order has no exact successor")

    @staticmethod
    def integer(name: str, successor: bool) -> Order:
        return Order(name, OrderKind.INTEGER, successor)

    @staticmethod
    def string(name: str) -> Order:
        return Order(name, OrderKind.STRING, False)

    @property
    def has_successor(self) -> bool:
        return self.successor

    def validate(self, value: object, field: str) -> Coordinate:
        """``value`` as a coordinate of this order, or :class:`BadValue`."""
        at = coordinate(value, field)
        wanted = int if self.kind is OrderKind.INTEGER else str
        if type(at) is not wanted:
            raise BadValue(field, value, f"order {self.name!r} has {self.kind.value} coordinates")
        return at

    def compare(self, a: Coordinate, b: Coordinate) -> int:
        """-1, 0 or 1 as coordinate ``a`` is below, at or above ``b``.

        Python compares ``str`` by code point, which is the order of
        docs/semantics.md section 1 (and not the UTF-16 order of JavaScript or
        Java above U+FFFF).
        """
        self.validate(a, "a")
        self.validate(b, "b")
        return -1 if a < b else (1 if a > b else 0)  # type: ignore[operator]

    def to_json(self) -> dict[str, object]:
        if self.kind is OrderKind.INTEGER:
            return {"name": self.name, "kind": "integer", "successor": self.successor}
        return {"name": self.name, "kind": "string"}

    def __str__(self) -> str:
        if self.kind is OrderKind.STRING:
            return f"{self.name} (strings)"
        return f"{self.name} (integers, {'exact' if self.successor else 'no'} successor)"


class Endpoint(Enum):
    """What a cut certifies about the events exactly at its coordinate."""

    NOTHING = "nothing"
    BEFORE = "before"
    THROUGH = "through"


@dataclass(frozen=True, slots=True)
class Cut:
    """``nothing``, ``before at`` or ``through at`` (docs/semantics.md section 2).

    Equality is of representation; claim equality is
    :func:`fencepost.judge.cuts.same_claim` (``through 4`` and ``before 5`` are
    one claim on offsets).
    """

    endpoint: Endpoint
    at: Coordinate | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.endpoint, Endpoint):
            raise BadValue("cut.kind", self.endpoint, "before or through")
        if self.endpoint is Endpoint.NOTHING:
            if self.at is not None:
                raise BadValue("cut.at", self.at, "the nothing cut has no coordinate")
        else:
            coordinate(self.at, "cut.at")

    @staticmethod
    def nothing() -> Cut:
        return NOTHING

    @staticmethod
    def before(at: Coordinate) -> Cut:
        return Cut(Endpoint.BEFORE, at)

    @staticmethod
    def through(at: Coordinate) -> Cut:
        return Cut(Endpoint.THROUGH, at)

    @property
    def is_nothing(self) -> bool:
        return self.endpoint is Endpoint.NOTHING

    def validated(self, order: Order, field: str = "cut") -> Cut:
        """This cut, once its coordinate is known to belong to ``order``."""
        if self.at is not None:
            order.validate(self.at, f"{field}.at")
        return self

    def __str__(self) -> str:
        if self.endpoint is Endpoint.NOTHING:
            return "nothing"
        return f"{self.endpoint.value} {self.at!r}"


NOTHING = Cut(Endpoint.NOTHING)


class Finality(Enum):
    """Whether a checkpoint's claim came from a final provider claim."""

    FINAL = "final"
    PROVISIONAL = "provisional"


@dataclass(frozen=True, slots=True, eq=False)
class Membership:
    """The members of one epoch, their query scope, and each member's order.

    ``partitions`` maps a member to the name of its order, ``orders`` an order
    name to the order. Read-only once built.
    """

    epoch: int
    scope: str
    partitions: Mapping[str, str]
    orders: Mapping[str, Order]

    def __post_init__(self) -> None:
        whole(self.epoch, "membership.epoch", minimum=0)
        text(self.scope, "membership.scope")
        if not isinstance(self.orders, Mapping):
            raise BadValue("membership.orders", self.orders, "a mapping of name to order")
        if not isinstance(self.partitions, Mapping):
            raise BadValue("membership.partitions", self.partitions, "a mapping of name to order")
        for name, order in self.orders.items():
            if not isinstance(order, Order) or order.name != name:
                raise BadValue(f"membership.orders.{name}", order, "an order named by its key")
        for partition, order_name in self.partitions.items():
            text(partition, "membership.partitions")
            if order_name not in self.orders:
                raise BadValue(
                    f"membership.partitions.{partition}", order_name, "names no declared order"
                )
        object.__setattr__(self, "partitions", MappingProxyType(dict(self.partitions)))
        object.__setattr__(self, "orders", MappingProxyType(dict(self.orders)))

    @staticmethod
    def of(epoch: int, scope: str, order: Order, partitions: Iterable[str]) -> Membership:
        """Every partition on one order."""
        return Membership(epoch, scope, {p: order.name for p in partitions}, {order.name: order})

    def order_of(self, partition: str) -> Order:
        return self.orders[self.partitions[partition]]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Membership):
            return NotImplemented
        return (self.epoch, self.scope, dict(self.partitions), dict(self.orders)) == (
            other.epoch,
            other.scope,
            dict(other.partitions),
            dict(other.orders),
        )

    def __hash__(self) -> int:
        return hash((self.epoch, self.scope, frozenset(self.partitions.items())))


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """One partition's stored coverage in one epoch (docs/semantics.md section 3).

    The token is opaque and never coverage; the generation fences late retries.
    """

    partition: str
    cut: Cut
    token: str | None
    generation: int
    scope: str
    epoch: int
    finality: Finality = Finality.FINAL

    def __post_init__(self) -> None:
        text(self.partition, "checkpoint.partition")
        if not isinstance(self.cut, Cut):
            raise BadValue("checkpoint.cut", self.cut, "a cut is required")
        if self.token is not None:
            text(self.token, "checkpoint.token", allow_empty=True)
        whole(self.generation, "checkpoint.generation", minimum=1)
        text(self.scope, "checkpoint.scope")
        whole(self.epoch, "checkpoint.epoch", minimum=0)
        if not isinstance(self.finality, Finality):
            raise BadValue("checkpoint.finality", self.finality, "final or provisional")


@dataclass(frozen=True, slots=True)
class Record:
    """A stream's publication record ``(epoch, cut, revision, op_id)`` (section 5)."""

    epoch: int
    cut: Cut = field(default=NOTHING)
    revision: int = 0
    op_id: str | None = None

    def __post_init__(self) -> None:
        whole(self.epoch, "record.epoch", minimum=0)
        if not isinstance(self.cut, Cut):
            raise BadValue("record.cut", self.cut, "a cut is required")
        whole(self.revision, "record.revision", minimum=0)
        if self.op_id is not None:
            text(self.op_id, "record.op_id", allow_empty=True)

    def __str__(self) -> str:
        return f"(epoch {self.epoch}, {self.cut})"


@dataclass(frozen=True, slots=True)
class Event:
    """One event a provider enumerated: a stable id and its position."""

    id: str
    at: Coordinate

    def __post_init__(self) -> None:
        text(self.id, "event.id")
        coordinate(self.at, "event.at")


@dataclass(frozen=True, slots=True)
class Claim:
    """A provider's coverage statement on a page; only a ``final`` one may certify."""

    cut: Cut
    final: bool

    def __post_init__(self) -> None:
        if not isinstance(self.cut, Cut):
            raise BadValue("claim.cut", self.cut, "a cut is required")
        if type(self.final) is not bool:
            raise BadValue("claim.final", self.final, "true or false")


@dataclass(frozen=True, slots=True)
class Page:
    """One page of a partition: its events, the next token (None: no more for now), a claim."""

    events: tuple[Event, ...] = ()
    next_token: str | None = None
    claim: Claim | None = None
