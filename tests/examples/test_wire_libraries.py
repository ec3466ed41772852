"""The wire libraries (examples/wire) hold to the protocol's framing rules.

Each skeleton (examples/skeleton) is fed a fixed conversation on stdin, as the
harness would send it, and its stdout is compared line by line: the handshake
declares the registered levels, a duplicate key, ``NaN``, a line that is not JSON
or not an object each get ``{"type": "error", "id": null}`` and the process keeps
running, an unknown field or message type gets an error carrying the request's id,
``reset`` is answered, and ``shutdown`` ends the process with status 0 before the
lines that follow it are read. The conformance verdicts on the skeletons are in
tests/examples/test_tutorial.py.

Node.js is on every CI machine (``node``); the test fails, never skips, without it.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
SKELETONS = {
    "python": [sys.executable, str(ROOT / "examples" / "skeleton" / "skeleton.py")],
    "node": ["node", str(ROOT / "examples" / "skeleton" / "skeleton.mjs")],
}
OFFSETS = {"name": "o", "kind": "integer", "successor": True}
CONVERSATION = [
    '{"type":"hello","protocol":1}',
    '{"type":"reset","x":{"a":1,"a":2}}',
    '{"x":NaN}',
    "not json",
    "[1]",
    json.dumps({"type": "compare", "id": 3, "order": OFFSETS, "a": None, "b": None, "x": 1}),
    '{"type":"nope","id":4}',
    json.dumps(
        {
            "type": "compare",
            "id": 5,
            "order": OFFSETS,
            "a": {"at": 1, "kind": "sideways"},
            "b": None,
        }
    ),
    json.dumps(
        {
            "type": "compare",
            "id": 6,
            "order": {"name": "s", "kind": "string"},
            "a": {"at": "\U0001f600", "kind": "before"},
            "b": {"at": "\uffff", "kind": "through"},
        }
    ),
    '{"type":"reset"}',
    '{"type":"shutdown"}',
    '{"type":"hello","protocol":1}',
]


def converse(language: str) -> tuple[int, list[dict[str, Any]]]:
    command = SKELETONS[language]
    if language == "node":
        assert shutil.which("node"), "Node.js is required for this test: apt-get install nodejs"
    done = subprocess.run(
        command,
        input="\n".join(CONVERSATION) + "\n",
        capture_output=True,
        text=True,
        timeout=60,
    )
    return done.returncode, [json.loads(line) for line in done.stdout.splitlines()]


@pytest.mark.parametrize("language", sorted(SKELETONS))
def test_the_wire_answers_as_the_protocol_requires(language: str) -> None:
    status, answers = converse(language)
    assert status == 0
    hello = answers[0]
    assert hello["type"] == "hello_ok" and hello["levels"] == ["algebra"]
    assert hello["capabilities"] == ["reset"]
    assert ("integers" in hello) == (language == "node")  # JS numbers: int53 declared
    kinds = [(a["type"], a.get("id")) for a in answers[1:]]
    assert kinds == [
        ("error", None),  # duplicate key
        ("error", None),  # NaN
        ("error", None),  # not JSON
        ("error", None),  # not an object
        ("error", 3),  # unknown field
        ("error", 4),  # unknown message type
        ("error", 5),  # a bad cut kind, refused by the skeleton
        ("compare_ok", 6),
        ("reset_ok", None),
    ]  # and nothing after shutdown
    assert "compare.x" in answers[5]["message"]
    assert "compare.a.kind" in answers[7]["message"]
    assert answers[8]["result"] == 1  # U+1F600 is above U+FFFF by code point
