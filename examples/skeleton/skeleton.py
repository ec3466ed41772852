#!/usr/bin/env python3
"""The smallest conformant implementation: level ``algebra``, on the wire library.

docs/tutorial.md walks through it part by part. The wire (framing, handshake,
calls, errors, shutdown) is examples/wire/fencepost_wire.py; this file holds only
the decisions of docs/semantics.md sections 1, 2 and 4. Check it with::

    fencepost conform --levels algebra -- python3 examples/skeleton/skeleton.py
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "wire"))
from fencepost_wire import Calls, Refuse, Sut, check_fields, is_int

Cut = dict[str, Any]  # {"at": 5, "kind": "before"}; None is the cut `nothing`

sut = Sut("skeleton-python", on_reset=lambda: None)  # it keeps nothing between requests


# --- Part 1: values. Refuse bad input with the field's path (docs/semantics.md section 8).


def check_order(value: Any, path: str) -> dict[str, Any]:
    if isinstance(value, dict) and value.get("kind") == "string":
        return check_fields(value, path, {"name", "kind"})
    order = check_fields(value, path, {"name", "kind", "successor"})
    if order["kind"] != "integer" or not isinstance(order["successor"], bool):
        raise Refuse(f"{path}.kind", "must be integer (with a boolean successor) or string")
    return order


def check_cut(value: Any, path: str, order: dict[str, Any]) -> Cut | None:
    if value is None:
        return None
    cut = check_fields(value, path, {"at", "kind"})
    if cut["kind"] not in ("before", "through"):
        raise Refuse(f"{path}.kind", f"must be before or through, not {cut['kind']!r}")
    if not (is_int(cut["at"]) if order["kind"] == "integer" else isinstance(cut["at"], str)):
        raise Refuse(f"{path}.at", f"must be a coordinate of a {order['kind']} order")
    return cut


# --- Part 2: compare cuts by their downsets (docs/semantics.md section 2).


def rank(cut: Cut, order: dict[str, Any]) -> tuple[Any, int]:
    """A sort key: with an exact successor `through x` is `before x+1`."""
    if order.get("successor") and cut["kind"] == "through":
        return (cut["at"] + 1, 0)
    return (cut["at"], 0 if cut["kind"] == "before" else 1)


def compare_cuts(a: Cut | None, b: Cut | None, order: dict[str, Any]) -> int:
    if a is None or b is None:  # `nothing` is below every cut
        return (a is not None) - (b is not None)
    ka, kb = rank(a, order), rank(b, order)
    return (ka > kb) - (ka < kb)


@sut.handler("compare")
def compare(msg: dict[str, Any], calls: Calls) -> dict[str, Any]:
    order = check_order(msg["order"], "compare.order")
    a = check_cut(msg["a"], "compare.a", order)
    b = check_cut(msg["b"], "compare.b", order)
    return {"result": compare_cuts(a, b, order)}


# --- Part 3: merge checkpoints into one frontier, or withhold (docs/semantics.md section 4).

CHECKPOINT = {"partition", "cut", "token", "generation", "scope", "epoch", "finality"}


@sut.handler("merge")
def merge(msg: dict[str, Any], calls: Calls) -> dict[str, Any]:
    path = "merge.membership"
    members = check_fields(msg["membership"], path, {"epoch", "scope", "partitions", "orders"})
    orders = {
        name: check_order(o, f"{path}.orders.{name}") for name, o in members["orders"].items()
    }
    vector: dict[str, dict[str, Any]] = {}
    for i, cp in enumerate(msg["checkpoints"]):
        check_fields(cp, f"merge.checkpoints[{i}]", CHECKPOINT)
        if cp["partition"] in members["partitions"]:  # non-members are ignored
            if cp["partition"] in vector:
                raise Refuse(f"merge.checkpoints[{i}]", "a second checkpoint for one member")
            order = orders[members["partitions"][cp["partition"]]]
            check_cut(cp["cut"], f"merge.checkpoints[{i}].cut", order)
            vector[cp["partition"]] = cp
    # The reasons, in the order of section 4, each across the whole vector.
    if len(vector) < len(members["partitions"]):
        return {"withheld": "missing_checkpoint"}
    for field, reason in (("epoch", "epoch_mismatch"), ("scope", "scope_mismatch")):
        if any(cp[field] != members[field] for cp in vector.values()):
            return {"withheld": reason}
    if any(cp["finality"] != "final" for cp in vector.values()):
        return {"withheld": "unsupported_finality"}
    if len(set(members["partitions"].values())) > 1:
        return {"withheld": "incomparable"}
    cuts = [cp["cut"] for cp in vector.values()]
    if not cuts or None in cuts:  # the minimum is `nothing`
        return {"withheld": "no_coverage"}
    order = orders[next(iter(members["partitions"].values()))]
    lowest = cuts[0]
    for cut in cuts[1:]:  # the minimum; ties go to the smaller coordinate (section 8)
        c = compare_cuts(cut, lowest, order)
        if c < 0 or (c == 0 and cut["at"] < lowest["at"]):
            lowest = cut
    return {"frontier": lowest}


if __name__ == "__main__":
    sut.run()
