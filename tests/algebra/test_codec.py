"""The JSON wire form: exact round trips, and errors that name the field."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fencepost.impl.codec import (
    checkpoint_from_json,
    checkpoint_to_json,
    cut_from_json,
    cut_to_json,
    membership_from_json,
    membership_to_json,
    record_from_json,
    record_to_json,
)
from fencepost.impl.cuts import Cut
from fencepost.impl.errors import InvalidValue
from fencepost.impl.orders import IntegerOrder, order_from_json
from fencepost.impl.records import Checkpoint, Finality, PublicationRecord

coords = st.one_of(st.integers(-(10**130), 10**130), st.text(max_size=8))
cuts = st.one_of(st.just(Cut.nothing()), coords.map(Cut.before), coords.map(Cut.through))


@given(cut=cuts)
def test_cut_round_trip_through_json_text(cut: Cut) -> None:
    assert cut_from_json(json.loads(json.dumps(cut_to_json(cut)))) == cut


@given(
    cut=cuts,
    gen=st.integers(1, 2**70),
    epoch=st.integers(0, 2**70),
    final=st.sampled_from(Finality),
    token=st.one_of(st.none(), st.text(max_size=5)),
)
def test_checkpoint_round_trip(
    cut: Cut, gen: int, epoch: int, final: Finality, token: str | None
) -> None:
    c = Checkpoint("A", cut, token, gen, "q1", epoch, final)
    assert checkpoint_from_json(json.loads(json.dumps(checkpoint_to_json(c)))) == c


def test_record_and_membership_round_trip() -> None:
    r = PublicationRecord(3, Cut.before(100), 7, "w1-2")
    assert record_from_json(record_to_json(r)) == r
    m = {
        "epoch": 1,
        "scope": "q1",
        "partitions": {"A": "offsets", "B": "offsets"},
        "orders": {"offsets": {"name": "offsets", "kind": "integer", "successor": True}},
    }
    assert membership_to_json(membership_from_json(m)) == m


def base_checkpoint() -> dict[str, object]:
    return {
        "partition": "A",
        "cut": {"at": 5, "kind": "before"},
        "token": "t",
        "generation": 1,
        "scope": "q1",
        "epoch": 1,
        "finality": "final",
    }


@pytest.mark.parametrize(
    ("patch", "field", "problem"),
    [
        ({"generation": True}, "checkpoints[2].generation", "integer is required"),
        ({"generation": 0}, "checkpoints[2].generation", "at least 1"),
        ({"epoch": 1.0}, "checkpoints[2].epoch", "integer is required"),
        ({"cut": {"at": math.nan, "kind": "before"}}, "checkpoints[2].cut.at", "not a float"),
        ({"cut": {"at": 5, "kind": "after"}}, "checkpoints[2].cut.kind", '"before" or "through"'),
        ({"cut": {"at": 5}}, "checkpoints[2].cut.kind", "missing required field"),
        ({"cut": {"at": 5, "kind": "before", "x": 1}}, "checkpoints[2].cut.x", "unknown field"),
        ({"finality": "probably"}, "checkpoints[2].finality", "final"),
        ({"epcoh": 1}, "checkpoints[2].epcoh", "unknown field"),
        ({"partition": ""}, "checkpoints[2].partition", "non-empty string"),
    ],
)
def test_checkpoint_errors_name_the_field(
    patch: dict[str, object], field: str, problem: str
) -> None:
    data = base_checkpoint() | patch
    with pytest.raises(InvalidValue) as info:
        checkpoint_from_json(data, "checkpoints[2]")
    assert info.value.field == field
    assert problem in str(info.value)


def test_missing_field_and_order_errors() -> None:
    data = base_checkpoint()
    del data["scope"]
    with pytest.raises(InvalidValue, match=r"checkpoint\.scope: missing required field"):
        checkpoint_from_json(data)
    with pytest.raises(InvalidValue, match="unknown order kind"):
        order_from_json({"name": "x", "kind": "float"})
    with pytest.raises(InvalidValue, match="successor"):
        order_from_json({"name": "x", "kind": "integer"})
    with pytest.raises(InvalidValue, match=r"order\.successor"):
        order_from_json({"name": "x", "kind": "integer", "successor": 1})
    with pytest.raises(InvalidValue, match="an integer coordinate"):
        cut_from_json({"at": "5", "kind": "before"}, order=IntegerOrder("o", True))
