"""The tool models: the adapters' keys, refused unknown keys, and what each setting means."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from fencepost.adapters import ADAPTERS
from fencepost.contracts import load_contract
from fencepost.review.tools import KEYS, REFUSED, SECOND, TOOLS, ToolConfigError, plan

ROOT = Path(__file__).parents[2]
REST = load_contract("rest-updated-at")
KAFKA = load_contract("kafka")


def test_every_adapter_has_a_review_model() -> None:
    assert set(TOOLS) == set(ADAPTERS) == set(KEYS)


def _literal_keys(tree: ast.Module, name: str) -> set[str] | None:
    """The keys of a module-level dict or tuple ``name`` (following ``A + B`` of tuples)."""
    values: dict[str, ast.expr] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            target, value = node.target, node.value
        else:
            continue
        if isinstance(target, ast.Name):
            values[target.id] = value

    def keys(expr: ast.expr) -> set[str]:
        if isinstance(expr, ast.Dict):
            return {str(k.value) for k in expr.keys if isinstance(k, ast.Constant)}
        if isinstance(expr, ast.Tuple | ast.List):
            return {str(e.value) for e in expr.elts if isinstance(e, ast.Constant)}
        if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Add):
            return keys(expr.left) | keys(expr.right)
        if isinstance(expr, ast.Name):
            return keys(values[expr.id])
        raise AssertionError(ast.dump(expr))

    return keys(values[name]) if name in values else None


@pytest.mark.parametrize("tool", sorted(ADAPTERS))
def test_the_review_takes_exactly_the_adapters_keys(tool: str) -> None:
    """Read from the adapter's source (its key set is its one home), never by importing the
    library. The adapters are written on their own branches: until one is merged, its
    module is not in this checkout and there is nothing to compare with."""
    source = ROOT / "adapters" / f"{ADAPTERS[tool].module}.py"
    if not source.exists():
        pytest.skip(f"adapters/{source.name} is not in this checkout yet")
    tree = ast.parse(source.read_text(encoding="utf-8"))
    known = _literal_keys(tree, "KNOWN_KEYS") or _literal_keys(tree, "KEYS")
    assert known == set(KEYS[tool])
    refused = _literal_keys(tree, "_REFUSED") or set()
    assert refused == set(REFUSED.get(tool, {}))


@pytest.mark.parametrize(
    ("tool", "config", "key", "words"),
    [
        ("dlt", {"lagg": 10}, "lagg", "did you mean 'lag'?"),
        ("dlt", {"end_value": 5}, "end_value", "stateless"),
        ("dlt", {"lag": -1}, "lag", "a number >= 0"),
        ("dlt", {"write_disposition": "replace"}, "write_disposition", '"append", "merge"'),
        ("dlt", {"primary_key": "pk"}, "primary_key", "null or []"),
        ("singer", {"replication_method": "LOG_BASED"}, "replication_method", "FULL_TABLE"),
        ("singer", {"load_method": "overwrite"}, "load_method", "upsert"),
        ("singer", {"batch_size_rows": 0}, "batch_size_rows", ">= 1"),
        ("airbyte", {"lookback": "PT10S"}, "lookback", "did you mean 'lookback_window'?"),
        ("airbyte", {"lookback_window": "10s"}, "lookback_window", "ISO 8601"),
        ("airbyte", {"step": "PT10S"}, "step", "cursor_granularity"),
        ("airbyte", {"start_datetime": "{{ now_utc() }}"}, "start_datetime", "Jinja"),
    ],
)
def test_a_bad_key_or_value_is_refused_naming_the_key(
    tool: str, config: dict[str, object], key: str, words: str
) -> None:
    with pytest.raises(ToolConfigError) as info:
        plan(tool, config, REST)
    assert info.value.key == key and words in str(info.value)
    assert str(info.value).startswith(f"--config for {tool}: {key}: ")


def test_airbyte_reads_timestamp_cursors_only() -> None:
    with pytest.raises(ToolConfigError, match="timestamp cursors only"):
        plan("airbyte", {}, KAFKA)


def test_dlt_settings() -> None:
    default = plan("dlt", {}, REST)
    assert (default.lag, default.lower_inclusive, default.exact_lower) == (0, True, True)
    assert default.boundary_dedupe and default.atomic and default.mode == "append"
    assert default.cap == "none" and default.new_partition_start == "beginning"
    safe = plan("dlt", {"lag": 10, "write_disposition": "merge", "upper_bound": "now"}, REST)
    assert safe.lag == 10 * SECOND and safe.mode == "merge" and safe.cap == "start"
    assert not safe.boundary_dedupe  # dlt switches its dedupe off with a lag
    assert plan("dlt", {"lag": 2.5}, REST).lag == 2_500_000_000
    assert plan("dlt", {"lag": 10}, KAFKA).lag == 10  # cursor units on an integer order
    assert plan("dlt", {"write_disposition": "merge", "primary_key": None}, REST).mode == "append"
    assert plan("dlt", {"write_disposition": "merge", "primary_key": ["id"]}, REST).mode == "merge"
    single = plan("dlt", {"resources": "single"}, REST)
    assert single.state == "global" and single.new_partition_start == "global"
    assert not plan("dlt", {"range_start": "open"}, REST).lower_inclusive


def test_singer_settings() -> None:
    default = plan("singer", {}, REST)
    assert not default.full_table and default.lag == 0 and not default.exact_lower
    assert not default.atomic and default.new_partition_start == "beginning"
    assert plan("singer", {"replication_method": "FULL_TABLE"}, REST).full_table
    signpost = plan("singer", {"signpost_lag": 10}, REST)
    assert signpost.cap == "start-minus-lag" and signpost.cap_lag == 10 * SECOND
    assert plan("singer", {"partitions": False}, REST).new_partition_start == "global"
    assert plan("singer", {"state_partitioning_keys": []}, REST).state == "global"
    assert plan("singer", {"load_method": "upsert"}, REST).mode == "merge"


def test_airbyte_settings() -> None:
    default = plan("airbyte", {}, REST)
    # the last slice ends at the run's start, inclusive; bounds written in seconds on an API
    # that takes seconds
    assert default.cap == "start" and default.cap_inclusive and default.request_step == SECOND
    assert default.new_partition_start == "global" and default.slices is None
    sliced = plan("airbyte", {"cursor_granularity": "PT1S"}, REST)
    assert sliced.slices is not None
    assert (sliced.slices.step, sliced.slices.granularity) == (10 * SECOND, SECOND)
    assert not sliced.one_query
    ms = plan("airbyte", {"datetime_format": "%ms", "lookback_window": "PT1M"}, REST)
    assert ms.request_step == 10**6 and ms.lag == 60 * SECOND
    assert not plan("airbyte", {"start_time_option": "cursor[gt]"}, REST).lower_inclusive
    assert plan("airbyte", {"destination_sync_mode": "append_dedup"}, REST).mode == "merge"
