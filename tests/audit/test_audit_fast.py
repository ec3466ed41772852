"""The audit's fast line reader accepts only what the strict reader reads, and reads it the same.

``fencepost.audit.log._fast`` reads publication lines with the C JSON scanner and no
per-object hook; it may only *accept* a line (any doubt goes to the strict reader, which
words every refusal). Checked on generated lines and on thousands of mutations of them
(keys repeated, values replaced by floats, NaN, bools, surrogates, nulls, deep objects,
fields added or removed): whenever the fast path accepts, the strict reader accepts the
same line and yields the same operation, field by field.
"""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from fencepost.audit import synth
from fencepost.audit.log import LogError, _fast, op_to_json, parse_line

ODD_VALUES: list[Any] = [
    None,
    True,
    False,
    0,
    -1,
    1.5,
    1e400,
    2**63,
    2**64,
    "",
    "x",
    "a:b",
    "\ud800",
    "\u00e9",
    [],
    {},
    {"at": 1, "kind": "before"},
    {"at": 1.0, "kind": "through"},
    {"at": True, "kind": "through"},
    {"at": "k", "kind": "through"},
    {"epoch": 1, "cut": None, "revision": 0, "op_id": None},
    "pending",
    "ok",
    "conflict",
    "indefinite",
    "error",
    "read_publication",
    "write_publication",
]


def _lines(seed: int) -> list[str]:
    rng = random.Random(seed)
    history = synth.simulate(rng, clients=4, ops=60, lost=0.3, failed=0.1)
    out = []
    for i, op in enumerate(history):
        data = op_to_json(op)
        if i % 5 == 0:
            data["attempt"] = f"{op.worker}/{i}" if i % 10 else None
        if i % 7 == 0 and op.status.value == "error":
            data["error"] = "boom: refused"
        out.append(json.dumps(data, separators=(",", ":")))
    return out


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every place in a decoded JSON value (keys of objects, recursively)."""
    found = [prefix] if prefix else []
    if isinstance(value, dict):
        for key, inner in value.items():
            found += _paths(inner, (*prefix, key))
    return found


def _mutate(text: str, rng: random.Random) -> str:
    try:
        data = json.loads(text)
    except ValueError:
        return text + rng.choice(["", " ", "}", "x"])
    if not isinstance(data, dict):
        return text
    paths = _paths(data)
    path = rng.choice(paths)
    parent = data
    for key in path[:-1]:
        parent = parent[key]
    move = rng.randrange(6)
    if move == 0:
        parent[path[-1]] = rng.choice(ODD_VALUES)
        return json.dumps(data, separators=(",", ":"))
    if move == 1:
        del parent[path[-1]]
        return json.dumps(data, separators=(",", ":"))
    if move == 2:
        parent["extra" if rng.random() < 0.5 else "t1"] = rng.choice(ODD_VALUES)
        return json.dumps(data, separators=(",", ":"))
    if move == 3:  # a key given twice: the first value must not be silently replaced
        key = json.dumps(path[-1])
        at = text.find(key + ":")
        if at < 0:
            return text
        return text[:at] + key + ":" + json.dumps(rng.choice(ODD_VALUES)) + "," + text[at:]
    if move == 4:  # a raw edit of the text
        at = rng.randrange(len(text))
        return text[:at] + rng.choice(['"', ":", ",", "}", "1", "\\u0041", "NaN", " "]) + text[at:]
    return text.replace(":", ": ", rng.randrange(1, 4))


def _same(text: str) -> bool:
    """Whether the fast reader accepted ``text``; if it did, the strict reader agrees."""
    fast = _fast(text, "f:1")
    if fast is None:
        return False
    strict = parse_line(text, "f:1")
    assert fast.pending == strict.pending, text
    for name in type(strict.op).__slots__:
        assert getattr(fast.op, name) == getattr(strict.op, name), (name, text)
    return True


@pytest.mark.parametrize("seed", range(4))
def test_the_fast_reader_reads_valid_publication_lines_as_the_strict_reader(seed: int) -> None:
    lines = _lines(seed)
    accepted = sum(_same(text) for text in lines)
    publication = sum('"_publication"' in t or "_publication" in t for t in lines)
    assert accepted == publication  # every valid publication line takes the fast path


@pytest.mark.parametrize("seed", range(4))
def test_the_fast_reader_accepts_no_mutation_the_strict_reader_refuses(seed: int) -> None:
    rng = random.Random(seed)
    lines = [t for t in _lines(seed) if "_publication" in t]
    accepted = refused = 0
    for _ in range(1500):
        text = _mutate(rng.choice(lines), rng)
        if rng.random() < 0.3:
            text = _mutate(text, rng)
        if _same(text):
            accepted += 1
            continue
        try:
            parse_line(text, "f:1")
        except LogError:
            refused += 1
    assert accepted and refused  # both sides were exercised


def test_a_key_given_twice_never_takes_the_fast_path() -> None:
    good = _lines(0)[1]
    assert _fast(good, "f:1") is not None
    for key in ('"status"', '"result"', '"t1"', '"revision"', '"expected_revision"', '"at"'):
        if key + ":" not in good:
            continue
        at = good.find(key + ":")
        doubled = good[:at] + key + ':"x",' + good[at:]
        assert _fast(doubled, "f:1") is None
        with pytest.raises(LogError, match="duplicate key"):
            parse_line(doubled, "f:1")


def test_colons_inside_strings_still_take_the_fast_path() -> None:
    data = json.loads(_lines(0)[1])
    data["worker"] = "host:8080/w"
    data["stream"] = "db:orders"
    text = json.dumps(data, separators=(",", ":"))
    assert _same(text)
