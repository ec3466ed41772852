"""fencepost's own SUT session: it answers the protocol, refuses bad input, never dies of it."""

from __future__ import annotations

import json

from fencepost.sut.adapter import SutSession


class Script:
    """A LineIO that feeds fixed lines and records what the session writes."""

    def __init__(self, *lines: object) -> None:
        self.inbox = [line if isinstance(line, str) else json.dumps(line) for line in lines]
        self.outbox: list[dict[str, object]] = []

    def read_line(self) -> str | None:
        return self.inbox.pop(0) if self.inbox else None

    def write_line(self, line: str) -> None:
        self.outbox.append(json.loads(line))


OFFSETS = {"name": "offsets", "kind": "integer", "successor": True}


def test_hello_compare_and_shutdown() -> None:
    io = Script(
        {"type": "hello", "protocol": 1},
        {
            "type": "compare",
            "id": 1,
            "order": OFFSETS,
            "a": {"at": 4, "kind": "through"},
            "b": {"at": 5, "kind": "before"},
        },
        {"type": "shutdown"},
        {"type": "compare", "id": 2, "order": OFFSETS, "a": None, "b": None},
    )
    assert SutSession(io).serve() == 0
    assert [m["type"] for m in io.outbox] == ["hello_ok", "compare_ok"]
    assert io.outbox[1] == {"type": "compare_ok", "id": 1, "result": 0}
    assert io.inbox, "nothing after shutdown is read"


def test_unparsable_input_gets_an_error_and_the_session_goes_on() -> None:
    io = Script(
        "{not json",
        {
            "type": "compare",
            "id": 7,
            "order": OFFSETS,
            "a": {"at": 1.5, "kind": "before"},
            "b": None,
        },
        {"type": "teleport", "id": 8},
        {"type": "hello", "protocol": 2},
        {"type": "compare", "id": 9, "order": OFFSETS, "a": None, "b": None},
    )
    assert SutSession(io).serve() == 0
    kinds = [(m["type"], m.get("id")) for m in io.outbox]
    assert kinds == [
        ("error", None),
        ("error", 7),
        ("error", 8),
        ("error", None),
        ("compare_ok", 9),
    ]
    assert "compare.a.at" in str(io.outbox[1]["message"])


def test_a_bad_reply_ends_the_request_with_an_error() -> None:
    io = Script(
        {"type": "publish", "id": 3, "worker": "w1", "stream": "s", "policy": "monotone"},
        {
            "type": "reply",
            "call_id": "c1",
            "ok": True,
            "record": {"epoch": True, "cut": None, "revision": 0, "op_id": None},
        },
    )
    assert SutSession(io).serve() == 0
    assert io.outbox[0]["op"] == "read_publication"
    assert io.outbox[1]["type"] == "error" and io.outbox[1]["id"] == 3
    assert "record.epoch" in str(io.outbox[1]["message"])


def test_shutdown_in_the_middle_of_a_call_exits_cleanly() -> None:
    io = Script(
        {
            "type": "ingest",
            "id": 4,
            "worker": "r1",
            "partition": "A",
            "scope": "q1",
            "epoch": 1,
            "order": OFFSETS,
        },
        {"type": "shutdown"},
    )
    assert SutSession(io).serve() == 0
    assert [m.get("op") for m in io.outbox] == ["read_checkpoint"]


def test_an_ingest_pass_out_of_retries_reports_only_what_the_store_held() -> None:
    timeout = {"ok": False, "error": "timeout"}
    stored = {
        "partition": "A",
        "cut": {"at": 3, "kind": "through"},
        "token": None,
        "generation": 2,
        "scope": "q1",
        "epoch": 1,
        "finality": "final",
    }
    io = Script(
        {
            "type": "ingest",
            "id": 5,
            "worker": "r1",
            "partition": "A",
            "scope": "q1",
            "epoch": 1,
            "order": OFFSETS,
        },
        {"type": "reply", "call_id": "c1", "ok": True, "checkpoint": stored},
        *({"type": "reply", "call_id": f"c{i}", **timeout} for i in range(2, 6)),
    )
    assert SutSession(io).serve() == 0
    assert [m.get("op") for m in io.outbox[:-1]] == ["read_checkpoint"] + ["fetch_page"] * 4
    assert io.outbox[-1] == {"type": "ingest_ok", "id": 5, "cut": {"at": 3, "kind": "through"}}
