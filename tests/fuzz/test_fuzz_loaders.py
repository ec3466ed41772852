"""Fuzz targets for every loader of untrusted input: a clean error or a valid result, nothing else.

Four loaders read what fencepost does not control: scenario files
(:func:`~fencepost.scenarios.format.load_text`), provider contracts
(:func:`~fencepost.contracts.loader.parse_contract`), regression files replayed
with ``--replay-file`` (:func:`~fencepost.harness.report.load_regression`), and
the wire messages of the conformance protocol, both ways (a SUT's lines read by
the harness, :func:`~fencepost.harness.protocol.parse_sut_message`; the
harness's lines read by fencepost's own SUT,
:func:`~fencepost.sut.wire.parse_harness_message`).

Each target feeds Hypothesis-made input: real files mutated (bytes flipped,
lines dropped, duplicated or swapped, values replaced by hostile ones: deep
nesting, 5,000-digit integers, NaN, lone surrogates, control characters) and
documents built from scratch. The only acceptable outcomes are a valid result
or the loader's own error type with its message; any other exception (a
``RecursionError``, ``ValueError``, ``KeyError``, ``TypeError``...) is a bug.

Bounded runs: the Hypothesis profile decides the number of examples (the ``ci``
profile runs 200 per target); ``FENCEPOST_FUZZ_EXAMPLES=N`` runs N instead, for
a long local session. Every target counts its runs (``RUNS``), and the suite
prints them at the end.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from fencepost.contracts.facts import ContractError
from fencepost.contracts.loader import parse_contract
from fencepost.harness.protocol import parse_sut_message
from fencepost.harness.report import RegressionError, load_regression
from fencepost.inputs.jsonlines import MessageError, decode_line
from fencepost.scenarios.format import load_text
from fencepost.scenarios.spec import ScenarioError
from fencepost.sut.wire import parse_harness_message

REPO = Path(__file__).resolve().parents[2]
SCENARIOS = sorted((REPO / "scenarios").glob("*.toml"))
CONTRACTS = sorted((REPO / "contracts").glob("*.toml")) + sorted(
    (REPO / "tests" / "review" / "data").glob("*.toml")
)
REGRESSION = (REPO / "tests" / "fuzz" / "data" / "stale-cut-retry-bad.jsonl").read_text(
    encoding="utf-8"
)

#: Runs per target in this session, and how many of them loaded as valid (printed when
#: the module ends): a target whose inputs all fail at the first check is shallow.
RUNS: Counter[str] = Counter()
VALID: Counter[str] = Counter()


@pytest.fixture(scope="module", autouse=True)
def _print_counts(request: pytest.FixtureRequest) -> Iterator[None]:
    yield
    for folder in _REPLAY_DIR:
        shutil.rmtree(folder, ignore_errors=True)
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    capture = request.config.pluginmanager.get_plugin("capturemanager")
    if reporter is None or capture is None or not RUNS:
        return
    with capture.global_and_fixture_disabled():
        reporter.write_line("")
        reporter.write_line("fuzz targets: inputs run (valid ones among them)")
        for target, count in sorted(RUNS.items()):
            reporter.write_line(f"  {target:<24} {count:>8,}  ({VALID[target]:,} valid)")


def _examples() -> settings:
    wanted = int(os.environ.get("FENCEPOST_FUZZ_EXAMPLES", "0") or 0)
    base = settings(suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    return settings(base, max_examples=wanted) if wanted > 0 else base


#: Values an attacker would put anywhere a value goes.
HOSTILE_VALUES = st.sampled_from(
    [
        "[" * 5000 + "]" * 5000,
        "{a = " * 300 + "1" + "}" * 300,
        "9" * 5000,
        "-" + "9" * 4400,
        "nan",
        "inf",
        '"\\ud800"',
        '"\\u0000\\u0007\\u001b[2J"',
        '"' + "x" * 100_000 + '"',
        "1e999",
        "0x7fffffffffffffffffff",
        "true",
        "[]",
        "{}",
        '""',
        "-1",
        "18446744073709551616",
        '"before 1"',
        '"through -0"',
        '"nothing"',
    ]
)


@st.composite
def mutated_text(draw: st.DrawFn, seeds: list[str]) -> str:
    """A real file with a few hostile edits."""
    text = draw(st.sampled_from(seeds))
    lines = text.splitlines()
    for _ in range(draw(st.integers(1, 4))):
        if not lines:
            lines = [""]
        i = draw(st.integers(0, len(lines) - 1))
        edit = draw(st.integers(0, 6))
        if edit == 0:
            del lines[i]
        elif edit == 1:
            lines.insert(i, lines[i])
        elif edit == 2:
            j = draw(st.integers(0, len(lines) - 1))
            lines[i], lines[j] = lines[j], lines[i]
        elif edit == 3 and "=" in lines[i]:
            key = lines[i].split("=", 1)[0]
            lines[i] = f"{key}= {draw(HOSTILE_VALUES)}"
        elif edit == 4:
            pos = draw(st.integers(0, len(lines[i])))
            junk = draw(st.text(max_size=8))
            lines[i] = lines[i][:pos] + junk + lines[i][pos:]
        elif edit == 5:
            lines[i] = lines[i][: draw(st.integers(0, len(lines[i])))]
        else:
            lines.insert(
                i,
                f"{draw(st.from_regex(r'[a-z_]{1,12}', fullmatch=True))} = {draw(HOSTILE_VALUES)}",
            )
    return "\n".join(lines) + "\n"


_SCENARIO_TEXTS = [p.read_text(encoding="utf-8") for p in SCENARIOS]
_CONTRACT_TEXTS = [p.read_text(encoding="utf-8") for p in CONTRACTS]


@_examples()
@given(text=st.one_of(mutated_text(_SCENARIO_TEXTS), st.text(max_size=400)))
def test_fuzz_scenario_loader(text: str) -> None:
    RUNS["scenario"] += 1
    # The file is named after the scenario it claims to be, so validation goes deep.
    named = re.search(r'^name = "([^"\\]*)"', text, re.M)
    stem = named.group(1) if named else "x-ok"
    try:
        load_text(text, f"fuzz/{stem}.toml", stem)
        VALID["scenario"] += 1
    except ScenarioError as exc:
        assert str(exc).startswith(f"fuzz/{stem}.toml")


@_examples()
@given(text=st.one_of(mutated_text(_CONTRACT_TEXTS), st.text(max_size=400)))
def test_fuzz_contract_loader(text: str) -> None:
    RUNS["contract"] += 1
    try:
        parse_contract(text, "fuzz.toml")
        VALID["contract"] += 1
    except ContractError as exc:
        assert str(exc).startswith("fuzz.toml")


JSON_LEAVES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(min_value=10**4000, max_value=10**4400),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=20),
    st.sampled_from(["w1", "w9", "A", "Z", "advance", "publish", "answer", "\ud800", "\x00"]),
)
JSON_VALUES = st.recursive(
    JSON_LEAVES,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4)
    ),
    max_leaves=20,
)


def _dumps(value: object) -> str:
    try:
        return json.dumps(value)
    except ValueError:  # an integer past the conversion limit
        return '"unrepresentable"'


@st.composite
def mutated_regression(draw: st.DrawFn) -> str:
    """The saved regression file with fields replaced, lines dropped or made hostile."""
    objects: list[Any] = [json.loads(line) for line in REGRESSION.splitlines()]
    lines = [json.dumps(o) for o in objects]
    for _ in range(draw(st.integers(1, 3))):
        i = draw(st.integers(0, len(objects) - 1))
        edit = draw(st.integers(0, 4))
        if edit == 0 and isinstance(objects[i], dict) and objects[i]:
            key = draw(st.sampled_from(sorted(objects[i])))
            objects[i][key] = draw(JSON_VALUES)
            lines[i] = _dumps(objects[i])
        elif edit == 1:
            lines[i] = draw(HOSTILE_VALUES)
        elif edit == 2:
            del lines[i]
            del objects[i]
            if not objects:
                break
        elif edit == 3 and i > 0 and isinstance(objects[i], dict):
            action = objects[i].get("action")
            if isinstance(action, dict) and action:
                field = draw(st.sampled_from(sorted(action)))
                action[field] = draw(JSON_VALUES)
                lines[i] = _dumps(objects[i])
        else:
            lines.insert(i, draw(st.text(max_size=30)))
            objects.insert(i, None)
    return "\n".join(lines) + "\n"


#: The folder replay inputs are written to (made on first use, removed when the module ends).
_REPLAY_DIR: list[Path] = []


def _replay_path() -> Path:
    if not _REPLAY_DIR:
        _REPLAY_DIR.append(Path(tempfile.mkdtemp(prefix="fencepost-fuzz-")))
    return _REPLAY_DIR[0] / "fuzz-bad.jsonl"


@_examples()
@given(text=st.one_of(mutated_regression(), st.text(max_size=300)))
@example(  # found by the first run: a step whose "do" is a list raised TypeError
    text=REGRESSION.splitlines()[0] + '\n{"step": 1, "action": {"do": [], "partition": "A"}}\n'
)
def test_fuzz_replay_file_loader(text: str) -> None:
    RUNS["replay file"] += 1
    path = _replay_path()
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    try:
        load_regression(path)
        VALID["replay file"] += 1
    except RegressionError as exc:
        assert str(exc).startswith(str(path))


SUT_TYPES = [
    "hello_ok",
    "call",
    "publish_ok",
    "ingest_ok",
    "compare_ok",
    "merge_ok",
    "sync_ok",
    "error",
    "reset_ok",
]
HARNESS_TYPES = ["hello", "publish", "ingest", "compare", "merge", "reply", "reset", "shutdown"]
FIELDS = [
    "type",
    "id",
    "call_id",
    "op",
    "stream",
    "epoch",
    "cut",
    "outcome",
    "reason",
    "value",
    "protocol",
    "levels",
    "name",
    "result",
    "frontier",
    "withheld",
    "order",
    "a",
    "b",
    "membership",
    "checkpoints",
    "partition",
    "worker",
    "policy",
    "scope",
    "kind",
    "at",
    "capabilities",
    "integers",
    "message",
    "expected_revision",
    "op_id",
    "token",
    "records",
    "mode",
    "lower",
    "upper",
    "after",
    "coverage",
    "delivery",
]


DATA = REPO / "tests" / "fuzz" / "data"
#: Real lines of the protocol, both ways, from failing conformance runs of mutants.
FROM_SUT = (DATA / "wire-from-sut.txt").read_text(encoding="utf-8").splitlines()
TO_SUT = (DATA / "wire-to-sut.txt").read_text(encoding="utf-8").splitlines()


def _replace_somewhere(value: Any, draw: st.DrawFn) -> Any:
    """``value`` (parsed JSON) with one nested value replaced by a hostile one."""
    if isinstance(value, dict) and value and draw(st.booleans()):
        key = draw(st.sampled_from(sorted(value)))
        return {**value, key: _replace_somewhere(value[key], draw)}
    if isinstance(value, list) and value and draw(st.booleans()):
        i = draw(st.integers(0, len(value) - 1))
        return [*value[:i], _replace_somewhere(value[i], draw), *value[i + 1 :]]
    return draw(JSON_VALUES)


@st.composite
def wire_line(draw: st.DrawFn, types: list[str]) -> str:
    choice = draw(st.integers(0, 6))
    if choice >= 4:
        real = json.loads(draw(st.sampled_from(FROM_SUT if "call" in types else TO_SUT)))
        if choice == 6:
            return _dumps(real)
        mutated = _replace_somewhere(real, draw)
        if choice == 5 and isinstance(mutated, dict):
            mutated[draw(st.sampled_from(FIELDS))] = draw(JSON_VALUES)
        return _dumps(mutated)
    if choice == 0:
        return draw(st.text(max_size=200))
    if choice == 1:
        return draw(HOSTILE_VALUES)
    message: dict[str, object] = {"type": draw(st.sampled_from(types))}
    for field in draw(st.lists(st.sampled_from(FIELDS), max_size=8)):
        message[field] = draw(JSON_VALUES)
    return _dumps(message)


@_examples()
@given(line=wire_line(SUT_TYPES))
def test_fuzz_wire_messages_from_a_sut(line: str) -> None:
    RUNS["wire (SUT -> harness)"] += 1
    try:
        parse_sut_message(line)
        VALID["wire (SUT -> harness)"] += 1
    except MessageError as exc:
        assert exc.field and exc.problem


@_examples()
@given(line=wire_line(HARNESS_TYPES))
@example(  # found by a long run: a TypeError that ended fencepost's SUT
    line='{"type": "ingest", "id": 1, "worker": "r1", "partition": "A", "scope": "q1", '
    '"epoch": 1, "order": {"name": "keys", "kind": []}}'
)
def test_fuzz_wire_messages_to_fencepost_sut(line: str) -> None:
    RUNS["wire (harness -> SUT)"] += 1
    try:
        parse_harness_message(decode_line(line))
        VALID["wire (harness -> SUT)"] += 1
    except MessageError as exc:
        assert exc.field and exc.problem
