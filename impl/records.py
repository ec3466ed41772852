"""The durable records: memberships, partition checkpoints, the publication record.

They are plain frozen values. Each validates its own fields on construction, so
a record that exists is well formed: a bool is never a generation, a checkpoint
never names an order its cut does not fit. What they *mean* (which cut a vector
of checkpoints supports) is :mod:`fencepost.impl.merge`'s business.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from types import MappingProxyType

from fencepost.impl.cuts import NOTHING, Cut
from fencepost.impl.errors import InvalidValue
from fencepost.impl.orders import Order


class Finality(Enum):
    """Whether the provider's claim behind a checkpoint was final."""

    FINAL = "final"
    PROVISIONAL = "provisional"


def _int(value: object, field: str, *, minimum: int) -> int:
    if type(value) is not int:
        raise InvalidValue(field, value, "an integer is required")
    if value < minimum:
        raise InvalidValue(field, value, f"must be at least {minimum}")
    return value


def _text(value: object, field: str) -> str:
    if type(value) is not str or not value:
        raise InvalidValue(field, value, "a non-empty string is required")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidValue(field, value, "not encodable as UTF-8") from None
    return value


@dataclass(frozen=True, slots=True)
class Membership:
    """The partitions of one membership epoch, their scope and their orders.

    ``partitions`` maps each member to the name of its order; ``orders`` maps
    order names to orders. Epochs are increasing integers; a membership is
    durable before any checkpoint of its epoch is written (docs/semantics.md
    section 6), so a checkpoint of epoch ``e`` always has a membership to be
    judged against.
    """

    epoch: int
    scope: str
    partitions: Mapping[str, str]
    orders: Mapping[str, Order]
    #: The distinct order names the members use, sorted; computed once at construction.
    order_names: tuple[str, ...] = field(init=False, repr=False, compare=False, hash=False)

    def __post_init__(self) -> None:
        _int(self.epoch, "membership.epoch", minimum=0)
        _text(self.scope, "membership.scope")
        if not isinstance(self.partitions, Mapping):
            raise InvalidValue("membership.partitions", self.partitions, "a mapping is required")
        if not isinstance(self.orders, Mapping):
            raise InvalidValue("membership.orders", self.orders, "a mapping is required")
        for name, order in self.orders.items():
            _text(name, "membership.orders")
            if not isinstance(order, Order) or order.name != name:
                raise InvalidValue(
                    f"membership.orders.{name}", order, "must be an order whose name is its key"
                )
        for partition, order_name in self.partitions.items():
            _text(partition, "membership.partitions")
            if order_name not in self.orders:
                raise InvalidValue(
                    f"membership.partitions.{partition}",
                    order_name,
                    f"names an order not in membership.orders ({', '.join(self.orders) or 'none'})",
                )
        # Freeze the mappings: a membership is a value.
        object.__setattr__(self, "partitions", MappingProxyType(dict(self.partitions)))
        object.__setattr__(self, "orders", MappingProxyType(dict(self.orders)))
        # Kept so that a publication attempt learns "one order or several" in O(1),
        # not O(partitions): the membership is immutable, so this never goes stale.
        object.__setattr__(self, "order_names", tuple(sorted(set(self.partitions.values()))))

    def order_of(self, partition: str) -> Order:
        """The order of ``partition``'s coordinates."""
        return self.orders[self.partitions[partition]]

    @property
    def order(self) -> Order | None:
        """The one order every member uses; None when there are no members or several orders.

        O(1): read from :attr:`order_names`, computed when the membership was built.
        """
        names = self.order_names
        return self.orders[names[0]] if len(names) == 1 else None

    def __hash__(self) -> int:
        return hash((self.epoch, self.scope, tuple(sorted(self.partitions.items()))))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Membership):
            return NotImplemented
        return (
            self.epoch == other.epoch
            and self.scope == other.scope
            and dict(self.partitions) == dict(other.partitions)
            and dict(self.orders) == dict(other.orders)
        )


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """One partition's certified coverage in one membership epoch.

    ``cut`` is the coverage claim; ``token`` is the provider's opaque
    continuation token (never compared, never coverage); ``generation`` goes up
    by one per accepted write and fences late retries; ``scope`` and ``epoch``
    say which query and which membership the claim is about; ``finality`` says
    whether the provider's claim was final.
    """

    partition: str
    cut: Cut
    token: str | None
    generation: int
    scope: str
    epoch: int
    finality: Finality = Finality.FINAL

    def __post_init__(self) -> None:
        _text(self.partition, "checkpoint.partition")
        if not isinstance(self.cut, Cut):
            raise InvalidValue("checkpoint.cut", self.cut, "a Cut is required")
        if self.token is not None and type(self.token) is not str:
            raise InvalidValue("checkpoint.token", self.token, "the token is an opaque string")
        _int(self.generation, "checkpoint.generation", minimum=1)
        _text(self.scope, "checkpoint.scope")
        _int(self.epoch, "checkpoint.epoch", minimum=0)
        if not isinstance(self.finality, Finality):
            raise InvalidValue("checkpoint.finality", self.finality, "final or provisional")


@dataclass(frozen=True, slots=True)
class PublicationRecord:
    """The published frontier of a stream: ``(epoch, cut, revision, op_id)``.

    It starts as ``(initial epoch, nothing, 0, None)``. Every accepted write
    names the revision it read and leaves ``revision + 1``; ``op_id`` identifies
    the attempt that wrote it (writer attribution, not progress).
    """

    epoch: int
    cut: Cut = field(default=NOTHING)
    revision: int = 0
    op_id: str | None = None

    def __post_init__(self) -> None:
        _int(self.epoch, "record.epoch", minimum=0)
        if not isinstance(self.cut, Cut):
            raise InvalidValue("record.cut", self.cut, "a Cut is required")
        _int(self.revision, "record.revision", minimum=0)
        if self.op_id is not None and type(self.op_id) is not str:
            raise InvalidValue("record.op_id", self.op_id, "op_id is a string or null")
