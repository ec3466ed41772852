"""Runner details that the library does not show on its own."""

from __future__ import annotations

from fencepost.scenarios.format import (
    load_text,
)
from fencepost.scenarios.library import RunOptions, run_one
from fencepost.scenarios.spec import (
    Scenario,
)

BASE = """\
name = "{name}"
description = "runner behaviour"
source = "tests"

[orders.ts]
kind = "integer"
successor = false

[[epochs]]
epoch = 1
members = {{ A = "ts" }}

[[truth]]
partition = "A"
events = [{{ id = "a1", at = 10 }}, {{ id = "a2", at = 20 }}]

[[steps]]
do = "certify"
partition = "A"
cut = "through 10"
"""


def scenario(name: str, steps: str) -> Scenario:
    return load_text(BASE.format(name=name) + steps, f"tmp/{name}.toml")


RESTART = """
[[steps]]
# p1's write is lost (not applied); p1 dies before its authoritative read.
do = "publish"
publisher = "p1"
faults = { write_publication = ["lost"] }
pause_before = "read_publication"
pause_nth = 2

[[steps]]
do = "crash"
worker = "p1"

[[steps]]
# The restarted p1 has no memory; its op_ids stay fresh.
do = "publish"
publisher = "p1"
expect = { outcome = "published", cut = "through 10" }
record = { revision = 1, writer = "p1" }
"""


def test_a_restarted_publisher_publishes_with_a_fresh_op_id() -> None:
    sc = scenario("restart-ok", RESTART)
    for target in ("model", "impl"):
        result = run_one(sc, target)
        assert result.status == "pass", (target, result.detail, result.narrative)
    sqlite = run_one(sc, "impl", RunOptions(backend="sqlite"))
    assert sqlite.status == "pass", sqlite.detail


def test_a_pause_never_reached_is_reported_at_its_step() -> None:
    steps = """
[[steps]]
do = "publish"
publisher = "p1"
pause_before = "write_publication"
pause_nth = 2

[[steps]]
do = "resume"
worker = "p1"
"""
    sc = scenario("unreached-ok", steps)
    for target in ("model", "impl", "sut"):
        result = run_one(sc, target)
        assert result.status == "fail", (target, result.detail)
        [miss] = result.mismatches
        assert miss.step == 2 and miss.field == "pause_before"
        assert miss.expected == "the request paused before write_publication #2"
        assert "never got there (published)" in miss.actual


def test_results_serialise_to_json() -> None:
    result = run_one(scenario("json-ok", RESTART), "impl")
    data = result.to_json()
    assert data["status"] == "pass" and data["target"] == "impl:memory"
    assert data["verdict"] == "ok" and data["breach"] is None
    assert isinstance(data["narrative"], list) and len(data["narrative"]) == 4
