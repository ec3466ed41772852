"""fencepost's SUT reads the harness's messages with its own parser, into impl values."""

from __future__ import annotations

import pytest

from fencepost.harness.protocol import (
    publish_message,
)
from fencepost.impl.orders import IntegerOrder
from fencepost.impl.records import PublicationRecord
from fencepost.inputs.jsonlines import (
    MessageError,
    decode_line,
    encode,
)
from fencepost.sut.wire import (
    ReplyConflict,
    ReplyOk,
    ReplyTimeout,
    parse_harness_message,
    parse_reply,
)

OFFSETS = IntegerOrder("offsets", True)


def test_harness_requests_round_trip_through_the_sut_side_parser() -> None:
    request = parse_harness_message(decode_line(encode(publish_message(3, "w1", "s", "reset"))))
    assert (request.id, request.worker, request.policy) == (3, "w1", "reset")  # type: ignore[union-attr]
    with pytest.raises(MessageError) as err:
        parse_harness_message(
            {"type": "publish", "id": 1, "worker": "w", "stream": "s", "policy": "sometimes"}
        )
    assert err.value.field == "publish.policy"


def test_replies_parse_per_op() -> None:
    record = {"epoch": 1, "cut": None, "revision": 0, "op_id": None}
    ok = parse_reply(
        {"type": "reply", "call_id": "c1", "ok": True, "record": record}, "c1", "read_publication"
    )
    assert ok == ReplyOk(PublicationRecord(1))
    lost = parse_reply(
        {"type": "reply", "call_id": "c1", "ok": False, "error": "timeout"}, "c1", "fetch_page"
    )
    assert lost == ReplyTimeout()
    conflict = parse_reply(
        {"type": "reply", "call_id": "c2", "ok": False, "error": "conflict", "record": record},
        "c2",
        "write_publication",
    )
    assert conflict == ReplyConflict(PublicationRecord(1))
    with pytest.raises(MessageError, match="cannot conflict"):
        parse_reply(
            {"type": "reply", "call_id": "c3", "ok": False, "error": "conflict", "record": record},
            "c3",
            "read_publication",
        )
    with pytest.raises(MessageError, match="expected 'c4'"):
        parse_reply({"type": "reply", "call_id": "c5", "ok": True}, "c4", "record_outcome")
    page = {"events": [{"id": "e1", "at": 1.0}], "next_token": None, "claim": None}
    with pytest.raises(MessageError) as err:
        parse_reply(
            {"type": "reply", "call_id": "c6", "ok": True, "page": page},
            "c6",
            "fetch_page",
            OFFSETS,
        )
    assert err.value.field == "reply(fetch_page).page.events[0].at"
