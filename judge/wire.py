"""The wire forms of the judge's values (docs/conformance-protocol.md, "Values").

Each ``*_from_json`` reads a decoded JSON value strictly: every field is
required (``token`` and ``op_id`` may be ``null``, never absent), unknown fields
are refused, bools never pass for integers and floats never for coordinates, and
the error is a :class:`~fencepost.judge.values.BadValue` naming the exact path
(``checkpoints[1].cut.kind``). Each ``*_to_json`` gives the form a SUT receives.

Cost: linear in the size of the value.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fencepost.judge.values import (
    NOTHING,
    BadValue,
    Checkpoint,
    Claim,
    Cut,
    Endpoint,
    Event,
    Finality,
    Membership,
    Order,
    OrderKind,
    Page,
    Record,
)

JSON = Any


def _fields(data: object, field: str, what: str, names: tuple[str, ...]) -> Mapping[str, object]:
    if not isinstance(data, dict):
        raise BadValue(field, data, f"{what} is a JSON object")
    for key in data:
        if key not in names:
            raise BadValue(
                f"{field}.{key}", data[key], f"unknown field; allowed: {', '.join(names)}"
            )
    for key in names:
        if key not in data:
            raise BadValue(f"{field}.{key}", None, "missing required field")
    return data


def _rebase(exc: BadValue, own: str, field: str) -> BadValue:
    """Move a value's own path (``checkpoint.epoch``) under ``field``."""
    path = exc.field
    if path == own or path.startswith(own + "."):
        path = field + path[len(own) :]
    return BadValue(path, exc.value, exc.problem)


def order_from_json(data: object, field: str = "order") -> Order:
    if not isinstance(data, dict):
        raise BadValue(field, data, "an order is a JSON object with name and kind")
    kind = data.get("kind")
    if kind == "integer":
        obj = _fields(data, field, "an integer order", ("name", "kind", "successor"))
        successor = obj["successor"]
        if type(successor) is not bool:
            raise BadValue(f"{field}.successor", successor, "true or false")
        try:
            return Order(obj["name"], OrderKind.INTEGER, successor)  # type: ignore[arg-type]
        except BadValue as exc:
            raise _rebase(exc, "order", field) from None
    if kind == "string":
        names: tuple[str, ...] = ("name", "kind")
        if "successor" in data:
            if data["successor"] is not False:
                raise BadValue(f"{field}.successor", data["successor"], "strings have none")
            names = ("name", "kind", "successor")
        obj = _fields(data, field, "a string order", names)
        try:
            return Order(obj["name"], OrderKind.STRING, False)  # type: ignore[arg-type]
        except BadValue as exc:
            raise _rebase(exc, "order", field) from None
    raise BadValue(f"{field}.kind", kind, "an order's kind is integer or string")


def cut_to_json(cut: Cut) -> JSON:
    if cut.endpoint is Endpoint.NOTHING:
        return None
    return {"at": cut.at, "kind": cut.endpoint.value}


def cut_from_json(data: object, field: str = "cut", order: Order | None = None) -> Cut:
    """``null`` is nothing; otherwise ``{"at", "kind"}``, checked against ``order`` if given."""
    if data is None:
        return NOTHING
    obj = _fields(data, field, "a cut (or null for nothing)", ("at", "kind"))
    kind = obj["kind"]
    if kind not in ("before", "through"):
        raise BadValue(f"{field}.kind", kind, "before or through (null is the nothing cut)")
    try:
        cut = Cut(Endpoint(kind), obj["at"])  # type: ignore[arg-type]
    except BadValue as exc:
        raise _rebase(exc, "cut", field) from None
    if order is not None:
        order.validate(cut.at, f"{field}.at")
    return cut


def membership_to_json(membership: Membership) -> JSON:
    return {
        "epoch": membership.epoch,
        "scope": membership.scope,
        "partitions": dict(membership.partitions),
        "orders": {name: order.to_json() for name, order in membership.orders.items()},
    }


def membership_from_json(data: object, field: str = "membership") -> Membership:
    obj = _fields(data, field, "a membership", ("epoch", "scope", "partitions", "orders"))
    raw_orders = obj["orders"]
    if not isinstance(raw_orders, dict):
        raise BadValue(f"{field}.orders", raw_orders, "a JSON object of name to order")
    orders = {
        name: order_from_json(raw, f"{field}.orders.{name}") for name, raw in raw_orders.items()
    }
    raw_partitions = obj["partitions"]
    if not isinstance(raw_partitions, dict):
        raise BadValue(f"{field}.partitions", raw_partitions, "a JSON object of name to order")
    try:
        return Membership(obj["epoch"], obj["scope"], raw_partitions, orders)  # type: ignore[arg-type]
    except BadValue as exc:
        raise _rebase(exc, "membership", field) from None


_CHECKPOINT = ("partition", "cut", "token", "generation", "scope", "epoch", "finality")


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
    obj = _fields(data, field, "a checkpoint", _CHECKPOINT)
    finality = obj["finality"]
    if finality not in ("final", "provisional"):
        raise BadValue(f"{field}.finality", finality, "final or provisional")
    cut = cut_from_json(obj["cut"], f"{field}.cut", order)
    try:
        return Checkpoint(
            obj["partition"],  # type: ignore[arg-type]
            cut,
            obj["token"],  # type: ignore[arg-type]
            obj["generation"],  # type: ignore[arg-type]
            obj["scope"],  # type: ignore[arg-type]
            obj["epoch"],  # type: ignore[arg-type]
            Finality(finality),
        )
    except BadValue as exc:
        raise _rebase(exc, "checkpoint", field) from None


def record_to_json(record: Record) -> JSON:
    return {
        "epoch": record.epoch,
        "cut": cut_to_json(record.cut),
        "revision": record.revision,
        "op_id": record.op_id,
    }


def record_from_json(data: object, field: str = "record") -> Record:
    obj = _fields(data, field, "a publication record", ("epoch", "cut", "revision", "op_id"))
    cut = cut_from_json(obj["cut"], f"{field}.cut")
    try:
        return Record(obj["epoch"], cut, obj["revision"], obj["op_id"])  # type: ignore[arg-type]
    except BadValue as exc:
        raise _rebase(exc, "record", field) from None


def page_to_json(page: Page) -> JSON:
    claim = page.claim
    return {
        "events": [{"id": ev.id, "at": ev.at} for ev in page.events],
        "next_token": page.next_token,
        "claim": None if claim is None else {"cut": cut_to_json(claim.cut), "final": claim.final},
    }


def page_from_json(data: object, field: str = "page") -> Page:
    obj = _fields(data, field, "a page", ("events", "next_token", "claim"))
    raw_events = obj["events"]
    if not isinstance(raw_events, list):
        raise BadValue(f"{field}.events", raw_events, "a list of events")
    events = []
    for i, raw in enumerate(raw_events):
        ev = _fields(raw, f"{field}.events[{i}]", "an event", ("id", "at"))
        try:
            events.append(Event(ev["id"], ev["at"]))  # type: ignore[arg-type]
        except BadValue as exc:
            raise _rebase(exc, "event", f"{field}.events[{i}]") from None
    token = obj["next_token"]
    if token is not None and type(token) is not str:
        raise BadValue(f"{field}.next_token", token, "a string or null")
    claim = None
    if obj["claim"] is not None:
        raw_claim = _fields(obj["claim"], f"{field}.claim", "a claim", ("cut", "final"))
        final = raw_claim["final"]
        if type(final) is not bool:
            raise BadValue(f"{field}.claim.final", final, "true or false")
        claim = Claim(cut_from_json(raw_claim["cut"], f"{field}.claim.cut"), final)
    return Page(tuple(events), token, claim)
