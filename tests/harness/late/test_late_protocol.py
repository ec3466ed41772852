"""The sync level's messages on the harness side: parsed strictly, the old ones unchanged."""

from __future__ import annotations

import json

import pytest

from fencepost.harness.protocol import (
    SOURCE_FIELDS,
    Call,
    Commit,
    HelloOk,
    ListPartitions,
    Query,
    QueryBound,
    ReadState,
    SyncCoverage,
    SyncOk,
    parse_sut_message,
    sync_message,
)
from fencepost.inputs.jsonlines import MessageError


def line(**fields: object) -> str:
    return json.dumps(fields)


def test_hello_ok_declares_sync_and_delivery_and_the_old_one_is_unchanged() -> None:
    old = parse_sut_message(line(type="hello_ok", protocol=1, name="x", levels=["publisher"]))
    assert old == HelloOk(1, "x", ("publisher",))
    assert isinstance(old, HelloOk) and old.delivery == "at-least-once"
    new = parse_sut_message(
        line(
            type="hello_ok",
            protocol=1,
            name="dlt",
            levels=["sync"],
            capabilities=["reset"],
            delivery="exactly-once",
        )
    )
    assert new == HelloOk(1, "dlt", ("sync",), "arbitrary", ("reset",), "exactly-once")
    with pytest.raises(MessageError, match=r"hello_ok\.delivery"):
        parse_sut_message(
            line(type="hello_ok", protocol=1, name="x", levels=["sync"], delivery="once")
        )
    with pytest.raises(MessageError, match=r"hello_ok\.levels\[0\]"):
        parse_sut_message(line(type="hello_ok", protocol=1, name="x", levels=["syncs"]))
    with pytest.raises(MessageError, match=r"hello_ok\.deliver"):
        parse_sut_message(
            line(type="hello_ok", protocol=1, name="x", levels=["sync"], deliver="exactly-once")
        )


def test_the_four_sync_calls_parse_to_their_values() -> None:
    assert parse_sut_message(line(type="call", call_id="c1", op="read_state")) == Call(
        "c1", "read_state", ReadState()
    )
    assert parse_sut_message(line(type="call", call_id=2, op="list_partitions")) == Call(
        2, "list_partitions", ListPartitions()
    )
    query = parse_sut_message(
        line(
            type="call",
            call_id="c3",
            op="query",
            partition="main",
            lower={"at": 1000, "inclusive": True},
            upper=None,
            after="k1",
        )
    )
    assert query == Call("c3", "query", Query("main", QueryBound(1000, True), None, "k1"))
    keep = parse_sut_message(
        line(type="call", call_id="c4", op="commit", records=["r1"], mode="merge")
    )
    assert keep == Call("c4", "commit", Commit(("r1",), "merge", False, None))
    clear = parse_sut_message(
        line(type="call", call_id="c5", op="commit", records=[], mode="append", state=None)
    )
    assert clear == Call("c5", "commit", Commit((), "append", True, None))


@pytest.mark.parametrize(
    ("fields", "where"),
    [
        ({"op": "read_state", "extra": 1}, r"call\(read_state\)\.extra"),
        ({"op": "query", "partition": "m", "lower": None, "upper": None}, r"\.after"),
        (
            {
                "op": "query",
                "partition": "m",
                "lower": {"at": 1.5, "inclusive": True},
                "upper": None,
                "after": None,
            },
            r"lower\.at",
        ),
        (
            {
                "op": "query",
                "partition": "m",
                "lower": {"at": 1, "inclusive": "yes"},
                "upper": None,
                "after": None,
            },
            r"lower\.inclusive",
        ),
        (
            {
                "op": "query",
                "partition": "m",
                "lower": {"at": 1, "inclusive": True, "step": 1},
                "upper": None,
                "after": None,
            },
            r"lower\.step",
        ),
        ({"op": "commit", "records": "r1", "mode": "merge"}, r"records"),
        ({"op": "commit", "records": [1], "mode": "merge"}, r"records\[0\]"),
        ({"op": "commit", "records": [], "mode": "upsert"}, r"\.mode"),
        ({"op": "commit", "records": [], "mode": "merge", "states": {}}, r"\.states"),
    ],
)
def test_sync_calls_are_strict(fields: dict[str, object], where: str) -> None:
    with pytest.raises(MessageError, match=where):
        parse_sut_message(line(type="call", call_id="c1", **fields))


def test_sync_ok_parses_coverage_claims_strictly() -> None:
    ok = parse_sut_message(
        line(
            type="sync_ok",
            id=40,
            outcome="completed",
            coverage={
                "main": {"cut": {"at": 12000, "kind": "before"}, "plus": ["r9"]},
                "eu": {"cut": None, "plus": []},
            },
        )
    )
    assert ok == SyncOk(
        40,
        "completed",
        {"main": SyncCoverage(12000, "before", ("r9",)), "eu": SyncCoverage(None, "before", ())},
    )
    assert parse_sut_message(line(type="sync_ok", id=1, outcome="failed", coverage=None)) == (
        SyncOk(1, "failed", None)
    )
    bad: list[tuple[dict[str, object], str]] = [
        ({"outcome": "done", "coverage": None}, r"sync_ok\.outcome"),
        ({"outcome": "completed"}, r"sync_ok\.coverage"),
        ({"outcome": "completed", "coverage": None, "state": 1}, r"sync_ok\.state"),
        (
            {
                "outcome": "completed",
                "coverage": {"m": {"cut": {"at": 1, "kind": "through"}, "plus": ["r"]}},
            },
            r"sync_ok\.coverage\.m\.plus",
        ),
        (
            {
                "outcome": "completed",
                "coverage": {"m": {"cut": {"at": "x", "kind": "before"}, "plus": []}},
            },
            r"sync_ok\.coverage\.m\.cut\.at",
        ),
        (
            {"outcome": "completed", "coverage": {"m": {"cut": None}}},
            r"sync_ok\.coverage\.m\.plus",
        ),
    ]
    for fields, where in bad:
        with pytest.raises(MessageError, match=where):
            parse_sut_message(line(type="sync_ok", id=1, **fields))


def test_the_sync_request_carries_the_clock_and_the_declared_source() -> None:
    source = {"stream": "orders", "granularity": 1000}
    assert sync_message(7, "t1", 1_704_110_400_000, source) == {
        "type": "sync",
        "id": 7,
        "worker": "t1",
        "now": 1_704_110_400_000,
        "source": source,
    }


def test_the_source_declaration_has_every_field_and_the_sut_side_parses_it_strictly() -> None:
    """The harness sends every field of SOURCE_FIELDS; the adapters' runtime refuses a
    declaration with one missing, one unknown, or a value of the wrong kind."""
    from fencepost.adapters.runtime import parse_source
    from fencepost.harness.late_stories import STORIES, LateOptions

    setup, _ = STORIES[0].build(LateOptions(reads="snapshot"))
    declared = setup.source_json()
    assert tuple(declared) == SOURCE_FIELDS
    assert declared["reads"] == "snapshot" and declared["earliest"] == setup.origin
    parsed = parse_source(declared, "sync.source")
    assert parsed.reads == "snapshot" and parsed.earliest == 1_704_110_400_000
    for name in ("reads", "earliest"):
        missing = {k: v for k, v in declared.items() if k != name}
        with pytest.raises(MessageError, match=name):
            parse_source(missing, "sync.source")
    with pytest.raises(MessageError, match="unknown"):
        parse_source({**declared, "reads_from": "replica"}, "sync.source")
    with pytest.raises(MessageError, match=r"sync\.source\.reads"):
        parse_source({**declared, "reads": "eventually"}, "sync.source")
    with pytest.raises(MessageError, match=r"sync\.source\.earliest"):
        parse_source({**declared, "earliest": "2024-01-01T12:00:00Z"}, "sync.source")
