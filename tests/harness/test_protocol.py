"""The wire schema: every SUT message parsed strictly, every error naming its field."""

from __future__ import annotations

import json

import pytest

from fencepost.harness.protocol import (
    Call,
    CompareOk,
    ErrorReply,
    HelloOk,
    IngestOk,
    MergeOk,
    PublishOk,
    WriteCheckpoint,
    WritePublication,
    parse_sut_message,
)
from fencepost.inputs.jsonlines import (
    MAX_LINE_BYTES,
    MessageError,
    decode_line,
)
from fencepost.judge.values import Cut, Order

OFFSETS = Order.integer("offsets", True)


def line(**fields: object) -> str:
    return json.dumps(fields)


def test_well_formed_messages_parse_to_their_values() -> None:
    assert parse_sut_message(
        line(type="hello_ok", protocol=1, name="x", levels=["algebra", "publisher"])
    ) == HelloOk(1, "x", ("algebra", "publisher"))
    call = parse_sut_message(
        line(
            type="call",
            call_id="c1",
            op="write_publication",
            stream="s",
            expected_revision=3,
            epoch=1,
            cut={"at": 5, "kind": "before"},
            op_id="w1-1",
        )
    )
    assert call == Call(
        "c1", "write_publication", WritePublication("s", 3, 1, Cut.before(5), "w1-1")
    )
    assert parse_sut_message(
        line(type="publish_ok", id=4, outcome="withheld", epoch=2, cut=None, reason="no_coverage")
    ) == PublishOk(4, "withheld", 2, Cut.nothing(), "no_coverage")
    assert parse_sut_message(line(type="ingest_ok", id=5, cut={"at": "k", "kind": "through"})) == (
        IngestOk(5, Cut.through("k"))
    )
    assert parse_sut_message(line(type="compare_ok", id=1, result=-1)) == CompareOk(1, -1)
    assert parse_sut_message(line(type="merge_ok", id=2, withheld="incomparable")) == MergeOk(
        2, None, "incomparable"
    )
    assert parse_sut_message(line(type="merge_ok", id=2, frontier=None)) == MergeOk(
        2, Cut.nothing(), None
    )
    assert parse_sut_message(line(type="error", id=None, message="bad")) == ErrorReply(None, "bad")


@pytest.mark.parametrize(
    ("text", "field"),
    [
        (line(type="compare_ok", id=1, result=1, extra=0), "compare_ok.extra"),
        (line(type="compare_ok", id=1), "compare_ok.result"),
        (line(type="compare_ok", id=1, result=True), "compare_ok.result"),
        (line(type="compare_ok", id=1, result=2), "compare_ok.result"),
        (line(type="compare_ok", id=1.5, result=0), "compare_ok.id"),
        (line(type="merge_ok", id=1, frontier=None, withheld="no_coverage"), "merge_ok"),
        (line(type="merge_ok", id=1, withheld="tired"), "merge_ok.withheld"),
        (
            line(type="publish_ok", id=1, outcome="won", epoch=1, cut=None, reason=None),
            "publish_ok.outcome",
        ),
        (
            line(
                type="publish_ok",
                id=1,
                outcome="published",
                epoch=1,
                cut=None,
                reason="no_coverage",
            ),
            "publish_ok.reason",
        ),
        (
            line(type="publish_ok", id=1, outcome="unchanged", epoch=None, cut=None, reason=None),
            "publish_ok.epoch",
        ),
        (
            line(
                type="publish_ok",
                id=1,
                outcome="unchanged",
                epoch=1,
                cut={"at": 1.5, "kind": "before"},
                reason=None,
            ),
            "publish_ok.cut.at",
        ),
        (line(type="ingest_ok", id=1, cut={"at": 1, "kind": "sideways"}), "ingest_ok.cut.kind"),
        (line(type="call", call_id="c", op="delete_everything"), "call.op"),
        (
            line(type="call", call_id="c", op="read_checkpoints", stream="s", epoch=True),
            "call(read_checkpoints).epoch",
        ),
        (
            line(type="call", call_id="c", op="read_checkpoints", stream="s"),
            "call(read_checkpoints).epoch",
        ),
        (
            line(type="call", call_id=None, op="read_membership", stream="s"),
            "call(read_membership).call_id",
        ),
        (
            line(
                type="call",
                call_id="c",
                op="write_checkpoint",
                partition="A",
                expected_generation=-1,
                checkpoint={},
            ),
            "call(write_checkpoint).expected_generation",
        ),
        (line(type="hello_ok", protocol=1, name="x", levels="algebra"), "hello_ok.levels"),
        (line(type="hello_ok", protocol=1, name="x", levels=["sideways"]), "hello_ok.levels[0]"),
        (line(type="greetings"), "type"),
        ('{"type": "compare_ok", "id": 1, "result": NaN}', "line"),
        ('{"type": "compare_ok", "id": 1, "id": 2, "result": 0}', "line.id"),
        ("[1, 2]", "line"),
        ("not json", "line"),
    ],
)
def test_malformed_messages_name_the_field(text: str, field: str) -> None:
    with pytest.raises(MessageError) as err:
        parse_sut_message(text)
    assert err.value.field == field


def test_checkpoint_in_a_write_is_parsed_with_the_codec() -> None:
    checkpoint = {
        "partition": "A",
        "cut": {"at": 3, "kind": "through"},
        "token": "t",
        "generation": 2,
        "scope": "q1",
        "epoch": 1,
        "finality": "provisional",
    }
    call = parse_sut_message(
        line(
            type="call",
            call_id=7,
            op="write_checkpoint",
            partition="A",
            expected_generation=None,
            checkpoint=checkpoint,
        )
    )
    assert isinstance(call, Call) and isinstance(call.payload, WriteCheckpoint)
    assert call.payload.checkpoint.finality.value == "provisional"
    bad = dict(checkpoint, finality="final-ish")
    with pytest.raises(MessageError) as err:
        parse_sut_message(
            line(
                type="call",
                call_id=7,
                op="write_checkpoint",
                partition="A",
                expected_generation=1,
                checkpoint=bad,
            )
        )
    assert err.value.field == "call(write_checkpoint).checkpoint.finality"


def test_overlong_line_is_refused_before_parsing() -> None:
    with pytest.raises(MessageError, match="longer than"):
        decode_line('"' + "x" * MAX_LINE_BYTES + '"')
