"""The JSON wire form of the domain values (docs/conformance-protocol.md, "Values").

One parser per value, each naming the exact field path in its error
(``checkpoints[1].cut.kind``) and refusing unknown fields, bools posing as
integers, floats (NaN included) posing as coordinates, and unknown endpoint
kinds. The same functions serve the conformance adapters, the harness and the
CLI, so every component reads the wire the same way.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fencepost.impl.cuts import NOTHING, Cut, Endpoint
from fencepost.impl.errors import InvalidValue, reject_unknown_fields
from fencepost.impl.orders import Order, order_from_json
from fencepost.impl.records import Checkpoint, Finality, Membership, PublicationRecord

JSON = Any


def _object(data: object, field: str, what: str) -> Mapping[str, object]:
    if not isinstance(data, dict):
        raise InvalidValue(field, data, f"{what} must be a JSON object")
    return data


def _required(data: Mapping[str, object], key: str, field: str) -> object:
    if key not in data:
        raise InvalidValue(f"{field}.{key}", None, "missing required field")
    return data[key]


def coordinate_from_json(value: object, field: str, order: Order | None = None) -> int | str:
    """A coordinate: an integer or a string; checked against ``order`` when given."""
    if order is not None:
        return order.validate(value, field)
    if type(value) is int or type(value) is str:
        return value
    if isinstance(value, bool):
        raise InvalidValue(field, value, "a coordinate is an integer or a string, not a bool")
    if isinstance(value, float):
        raise InvalidValue(field, value, "a coordinate is an integer or a string, not a float")
    raise InvalidValue(field, value, "a coordinate is an integer or a string")


def cut_to_json(cut: Cut) -> JSON:
    """``null`` for nothing, else ``{"at": x, "kind": "before"|"through"}``."""
    if cut.is_nothing:
        return None
    return {"at": cut.at, "kind": cut.endpoint.value}


def cut_from_json(data: object, field: str = "cut", order: Order | None = None) -> Cut:
    """Parse a cut; ``null`` is the nothing cut."""
    if data is None:
        return NOTHING
    obj = _object(data, field, "a cut")
    reject_unknown_fields(obj, {"at", "kind"}, field)
    kind = _required(obj, "kind", field)
    if kind not in ("before", "through"):
        raise InvalidValue(
            f"{field}.kind",
            kind,
            'the endpoint kind is "before" or "through" (use null for nothing)',
        )
    at = coordinate_from_json(_required(obj, "at", field), f"{field}.at", order)
    return Cut(Endpoint(kind), at)


def membership_to_json(membership: Membership) -> JSON:
    return {
        "epoch": membership.epoch,
        "scope": membership.scope,
        "partitions": dict(membership.partitions),
        "orders": {name: order.to_json() for name, order in membership.orders.items()},
    }


def membership_from_json(data: object, field: str = "membership") -> Membership:
    obj = _object(data, field, "a membership")
    reject_unknown_fields(obj, {"epoch", "scope", "partitions", "orders"}, field)
    orders_raw = _object(_required(obj, "orders", field), f"{field}.orders", "orders")
    orders = {
        str(name): order_from_json(raw, f"{field}.orders.{name}")
        for name, raw in orders_raw.items()
    }
    partitions_raw = _object(
        _required(obj, "partitions", field), f"{field}.partitions", "partitions"
    )
    partitions: dict[str, str] = {}
    for name, order_name in partitions_raw.items():
        if type(order_name) is not str:
            raise InvalidValue(
                f"{field}.partitions.{name}", order_name, "an order name is required"
            )
        partitions[name] = order_name
    return Membership(
        epoch=_required(obj, "epoch", field),  # type: ignore[arg-type]  # validated by Membership
        scope=_required(obj, "scope", field),  # type: ignore[arg-type]
        partitions=partitions,
        orders=orders,
    )


def checkpoint_to_json(checkpoint: Checkpoint) -> JSON:
    return {
        "partition": checkpoint.partition,
        "cut": cut_to_json(checkpoint.cut),
        "token": checkpoint.token,
        "generation": checkpoint.generation,
        "scope": checkpoint.scope,
        "epoch": checkpoint.epoch,
        "finality": checkpoint.finality.value,
    }


def checkpoint_from_json(
    data: object, field: str = "checkpoint", order: Order | None = None
) -> Checkpoint:
    obj = _object(data, field, "a checkpoint")
    keys = {"partition", "cut", "token", "generation", "scope", "epoch", "finality"}
    reject_unknown_fields(obj, keys, field)
    finality = _required(obj, "finality", field)
    if finality not in ("final", "provisional"):
        raise InvalidValue(f"{field}.finality", finality, 'finality is "final" or "provisional"')
    try:
        return Checkpoint(
            partition=_required(obj, "partition", field),  # type: ignore[arg-type]
            cut=cut_from_json(_required(obj, "cut", field), f"{field}.cut", order),
            token=obj.get("token"),  # type: ignore[arg-type]
            generation=_required(obj, "generation", field),  # type: ignore[arg-type]
            scope=_required(obj, "scope", field),  # type: ignore[arg-type]
            epoch=_required(obj, "epoch", field),  # type: ignore[arg-type]
            finality=Finality(finality),
        )
    except InvalidValue as exc:
        raise _rebased(exc, field, "checkpoint") from None


def record_to_json(record: PublicationRecord) -> JSON:
    return {
        "epoch": record.epoch,
        "cut": cut_to_json(record.cut),
        "revision": record.revision,
        "op_id": record.op_id,
    }


def record_from_json(data: object, field: str = "record") -> PublicationRecord:
    obj = _object(data, field, "a publication record")
    reject_unknown_fields(obj, {"epoch", "cut", "revision", "op_id"}, field)
    try:
        return PublicationRecord(
            epoch=_required(obj, "epoch", field),  # type: ignore[arg-type]
            cut=cut_from_json(_required(obj, "cut", field), f"{field}.cut"),
            revision=_required(obj, "revision", field),  # type: ignore[arg-type]
            op_id=obj.get("op_id"),  # type: ignore[arg-type]
        )
    except InvalidValue as exc:
        raise _rebased(exc, field, "record") from None


def _rebased(exc: InvalidValue, field: str, own_prefix: str) -> InvalidValue:
    """Re-anchor a record's own field path (``checkpoint.epoch``) under ``field``."""
    path = exc.field
    if path.startswith(own_prefix + ".") and field != own_prefix:
        path = field + path[len(own_prefix) :]
    return InvalidValue(path, exc.value, exc.problem)
