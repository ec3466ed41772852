"""The shipped scenario library: every scenario passes where it claims to run.

Each scenario runs on the model, on the implementation (memory and SQLite) and
on fencepost's own SUT through the conformance harness. A skip is allowed only
where the scenario's ``not_on`` declares it (and each declaration is shown to be
still needed), or, on the SUT, where the harness API reports the gap. The index
(scenarios/README.md) must list every scenario with the targets it really runs
on, and every docs/field-bugs.md entry has a scenario named after it.
"""

from __future__ import annotations

import re
from importlib import resources
from pathlib import Path

import pytest

from fencepost.scenarios.format import (
    load_shipped,
    shipped_names,
)
from fencepost.scenarios.impl_runner import BACKENDS
from fencepost.scenarios.library import RunOptions, run_one

NAMES = shipped_names()
ROOT = Path(__file__).resolve().parents[2]


def test_the_library_is_shipped_and_nonempty() -> None:
    assert len(NAMES) >= 40
    assert all(n.endswith(("-ok", "-bad")) for n in NAMES)
    files = {p.stem for p in (ROOT / "scenarios").glob("*.toml")}
    assert set(NAMES) == files


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("backend", BACKENDS)  # every backend the runner drives
def test_passes_on_the_implementation(name: str, backend: str) -> None:
    result = run_one(load_shipped(name), "impl", RunOptions(backend=backend))
    assert result.status == "pass", (result.detail, result.mismatches, result.narrative)


@pytest.mark.parametrize("name", NAMES)
def test_passes_on_the_model_or_declares_why_not(name: str) -> None:
    scenario = load_shipped(name)
    result = run_one(scenario, "model")
    if "model" in scenario.not_on:
        assert result.status == "skip"
        forced = run_one(scenario, "model", RunOptions(force=True))
        # The declaration is still needed: forced, the model cannot express it.
        assert forced.status == "skip", f"{name}: not_on.model is stale: {forced.detail}"
        assert "not expressible on model" in forced.detail
    else:
        assert result.status == "pass", (result.detail, result.mismatches, result.narrative)


@pytest.mark.parametrize("name", NAMES)
def test_sut_in_process_passes_or_names_the_harness_gap(name: str) -> None:
    scenario = load_shipped(name)
    result = run_one(scenario, "sut")
    assert result.status in ("pass", "skip"), (result.detail, result.narrative)
    if result.status == "skip" and "sut" not in scenario.not_on:
        assert result.detail.startswith("not expressible on sut: ")


def test_sut_runs_most_publisher_level_scenarios() -> None:
    passed = [n for n in NAMES if run_one(load_shipped(n), "sut").status == "pass"]
    assert len(passed) >= 20, passed


def test_every_bad_scenario_names_a_variant_and_is_caught_for_its_property() -> None:
    for name in NAMES:
        scenario = load_shipped(name)
        if scenario.verdict != "bad":
            continue
        assert scenario.variant is not None
        result = run_one(scenario, "impl")
        assert result.breach is not None and scenario.broken is not None
        assert scenario.broken.accepts(result.breach.property), (name, result.breach)


_ROW = re.compile(r"^\| `([a-z0-9-]+)` \|(.*)$")


def _index() -> dict[str, tuple[str, str, str]]:
    text = (resources.files("fencepost.scenarios") / "README.md").read_text(encoding="utf-8")
    rows: dict[str, tuple[str, str, str]] = {}
    for line in text.splitlines():
        m = _ROW.match(line)
        if m:
            cells = [c.strip() for c in m.group(2).split("|")]
            marks = cells[-4:-1]
            rows[m.group(1)] = (marks[0], marks[1], marks[2])
    return rows


def test_the_index_lists_every_scenario_with_the_targets_it_runs_on() -> None:
    rows = _index()
    assert set(rows) == set(NAMES)
    for name, (model, impl, sut) in rows.items():
        scenario = load_shipped(name)
        statuses = {t: run_one(scenario, t).status for t in ("model", "impl", "sut")}
        claimed = {"model": model, "impl": impl, "sut": sut}
        for target, mark in claimed.items():
            assert mark in ("✓", "-"), (name, target, mark)
            assert (mark == "✓") == (statuses[target] == "pass"), (name, target, statuses)


_FIELD_BUGS = {
    "materialize-12797-": ("applied-alone-ok", "not-applied-alone-ok"),
    "materialize-14003-": ("ok",),
    "kcl-108-": ("ok",),
    "kcl-537-": ("ok",),
    "kafka-20357-": ("ok",),
    "materialize-29432-": ("ok",),
    "spring-kafka-1408-": ("ok",),
    "cockroach-82488-": ("ok",),
    "cockroach-41665-": ("ok",),
    "cockroach-144004-": ("ok",),
    "debezium-dbz-5915-": ("ok",),
    "cockroach-37009-": ("ok",),
    "beam-36470-": ("ok",),
    "tiflow-12598-": ("ok",),
    "flink-27066-": ("ok",),
    "flink-22926-": ("ok",),
    "flink-40094-": ("ok",),
    "beam-37326-": ("ok",),
    "kcl-261-": ("ok",),
}


def test_every_field_bug_entry_has_its_scenarios() -> None:
    for prefix, suffixes in _FIELD_BUGS.items():
        for suffix in suffixes:
            assert prefix + suffix in NAMES, prefix + suffix
    lost = [n for n in NAMES if n.startswith("materialize-12797-") and n.endswith("-ok")]
    assert len(lost) == 4  # applied or not x another publisher advanced or not
