"""Every name of the vocabulary has its homes, and the checks have teeth.

For each closed set of :mod:`fencepost.vocabulary` the check of
:mod:`totality` (one function per set) reports nothing at HEAD, and reports a
planted new name that has no home, and a planted home whose name the
vocabulary lacks. docs/changing.md says which test tells you a change is done:
these.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from types import MappingProxyType
from typing import TypeVar

import pytest
import totality as T

from fencepost import vocabulary as V
from fencepost.vocabulary.backends import BackendName
from fencepost.vocabulary.conformance import WorldName
from fencepost.vocabulary.mutants import MutantName

T_ = TypeVar("T_")


def _plus(mapping: Mapping[str, T_], name: str, value: T_) -> Mapping[str, T_]:
    """``mapping`` with one planted name more (the vocabulary itself stays untouched)."""
    return MappingProxyType({**mapping, name: value})


# --- rules ------------------------------------------------------------------------------------


def test_every_rule_has_its_homes() -> None:
    assert T.missing_rule_homes() == []


def test_a_new_property_without_homes_is_reported() -> None:
    found = T.missing_rule_homes(properties=_plus(V.PROPERTIES, "made_up", "x"))
    assert "property made_up: no model invariant (fencepost.model.invariants)" in found
    assert "property made_up: no judge check (fencepost.judge)" in found
    assert "property made_up: harness rule is no rule (fencepost.harness.rules)" in found
    assert "property made_up: docs/conformance.md's failure table has no row" in found


def test_a_property_whose_judge_check_is_gone_is_reported() -> None:
    checks = {*V.PROPERTIES, *V.ROW_PROPERTIES} - {"epoch_fence"}
    found = T.missing_rule_homes(judge_checks=checks)
    assert found == ["property epoch_fence: no judge check (fencepost.judge)"]


def test_a_rule_filed_under_another_kind_is_reported() -> None:
    """honest_outcome is a protocol rule: a harness or a doc calling it a property disagrees."""
    from fencepost.harness.rules import Rule

    harness = {r.value: "protocol" for r in Rule} | {n: "property" for n in V.PROPERTIES}
    harness |= {n: "sync property" for n in V.ROW_PROPERTIES}
    assert T.missing_rule_homes(harness_rules=harness) == []
    found = T.missing_rule_homes(harness_rules={**harness, "honest_outcome": "property"})
    assert found == ["protocol honest_outcome: harness rule is property (fencepost.harness.rules)"]
    docs = T._docs_rule_kinds()
    found = T.missing_rule_homes(docs_kinds={**docs, "honest_outcome": "property"})
    assert found == ["protocol honest_outcome: docs/conformance.md's failure table has property"]


def test_a_home_naming_a_rule_the_vocabulary_lacks_is_reported() -> None:
    from fencepost.model.invariants import INVARIANTS_BY_NAME

    found = T.missing_rule_homes(invariants={*INVARIANTS_BY_NAME, "stray"})
    assert found == ["model invariant stray: not a property of the vocabulary"]


def test_the_harness_reports_rules_in_the_vocabularys_order() -> None:
    from fencepost.harness.rules import MEANINGS, PRIORITY

    assert [r.value for r in PRIORITY] == list(V.RULES)
    assert {r.value: text for r, text in MEANINGS.items()} == dict(V.RULES)


# --- mutants ----------------------------------------------------------------------------------


def test_every_mutant_has_its_homes() -> None:
    assert T.missing_mutant_homes() == []


def test_a_new_mutant_without_homes_is_reported() -> None:
    bug = MutantName("made-up", "a bug", "nowhere")
    found = T.missing_mutant_homes(_plus(V.MUTANTS, "made-up", bug))
    assert "mutant made-up: no catalog entry (fencepost.mutants.catalog)" in found
    assert "mutant made-up: no model mutant (fencepost.model.mutants)" in found
    assert any(f.startswith("mutant made-up: no branch in the model's") for f in found)
    assert any(f.startswith("mutant made-up: no branch in the Z3 relation") for f in found)
    assert "mutant made-up: not listed in docs/conformance.md's mutant catalog" in found
    assert "mutant made-up: no row in docs/proofs.md's table of refutations" in found
    assert len(found) == 6, found


def test_a_model_only_branch_of_an_implementation_only_mutant_is_reported() -> None:
    relation = {m.name for m in V.MUTANTS.values() if m.in_model} | {"compare-swap"}
    found = T.missing_mutant_homes(relation_branches=relation)
    assert len(found) == 1 and found[0].startswith(
        "mutant compare-swap: has a branch in the Z3 relation"
    )


def test_a_misspelled_branch_and_an_unknown_rule_are_reported() -> None:
    model = {m.name for m in V.MUTANTS.values() if m.in_model}
    found = T.missing_mutant_homes(model_branches=(model - {"relabel"}) | {"relable"})
    assert "model branch relable: not a mutant of the vocabulary" in found
    assert any(f.startswith("mutant relabel: no branch in the model's") for f in found)
    found = T.missing_mutant_homes(claimed_rules={"catalog relabel": {"no_relabelling"}})
    assert found == ["catalog relabel is caught by no_relabelling: not a rule of the vocabulary"]


def test_the_model_and_the_catalog_tell_one_bug_text() -> None:
    from fencepost.model.mutants import MUTANTS as MODEL
    from fencepost.mutants import CATALOG

    for name, m in MODEL.items():
        assert (m.description, m.field_bug) == (CATALOG[name].bug, CATALOG[name].source)


# --- store backends ---------------------------------------------------------------------------


def test_every_backend_has_its_homes() -> None:
    assert T.missing_backend_homes() == []


def test_a_new_backend_without_homes_is_reported() -> None:
    new = BackendName("fdb", ("fdb",), True, False, "a planted backend")
    found = T.missing_backend_homes(_plus(V.STORE_BACKENDS, "fdb", new))
    assert found == [
        "backend fdb: no opener (fencepost.impl.open.OPENERS_BY_BACKEND)",
        "backend fdb: fdb: URLs open nothing (impl/open.py)",
        "backend fdb: no contract-suite entry (tests/store_backends.py)",
        "backend fdb: no refinement backend (properties/backends.py)",
    ]


def test_a_backend_missing_from_the_scenario_runner_or_a_stray_entry_is_reported() -> None:
    found = T.missing_backend_homes(scenario_runner={"memory"})
    assert found == ["backend sqlite: the scenario runner does not drive it"]
    found = T.missing_backend_homes(contract_suite={*V.STORE_BACKENDS, "redis"})
    assert found == ["contract-suite entry redis: not a backend of the vocabulary"]


# --- families, phases, worlds -----------------------------------------------------------------


def test_every_family_phase_and_world_has_its_homes() -> None:
    assert T.missing_conformance_homes() == []


def test_seeds_pick_families_by_the_vocabularys_count() -> None:
    from fencepost.harness.seeds import family_of

    assert [family_of(s) for s in range(2 * len(V.FAMILIES))] == list(V.FAMILIES) * 2


def test_a_new_family_phase_or_world_without_homes_is_reported() -> None:
    found = T.missing_conformance_homes(
        families=_plus(V.FAMILY_LEVELS, "sharded", frozenset({"sharding"}))
    )
    assert found == [
        "family sharded: levels ['sharding'] are unknown",
        "family sharded: no scripted base (fencepost.harness.bases)",
    ]
    found = T.missing_conformance_homes(phases=_plus(V.PHASES, "soak", "a planted phase"))
    assert found == ["phase soak: not in the harness's plan (phase_plan)"]
    world = WorldName("sharded", ("publisher",), "a planted world")
    found = T.missing_conformance_homes(worlds=_plus(V.WORLDS, "sharded", world))
    assert found == [
        "world sharded: no constant in fencepost.harness.worlds",
        "world sharded: docs/conformance.md never shows --world sharded",
    ]


def test_a_harness_phase_or_gate_timing_the_vocabulary_lacks_is_reported() -> None:
    from fencepost.harness.conformance import phase_plan

    plan = (*phase_plan(V.LEVELS), "soak")
    assert T.missing_conformance_homes(plan=plan) == [
        "harness phase soak: not a phase of the vocabulary"
    ]
    assert T.missing_conformance_homes(gate_phases={"random schedule"}) == [
        "gate phase timing random schedule: not a phase of the plan (cli/gate.py)"
    ]


# --- tools ------------------------------------------------------------------------------------


def test_every_tool_has_its_homes() -> None:
    assert T.missing_tool_homes() == []


def test_a_new_tool_without_homes_is_reported() -> None:
    found = T.missing_tool_homes(_plus(V.TOOL_ADAPTERS, "meltano", "a planted tool"))
    assert found == [
        "tool meltano: no adapter (fencepost.adapters.ADAPTERS)",
        "tool meltano: no review model (fencepost.review.tools)",
        "tool meltano: no pip extra (pyproject.toml)",
        "tool meltano: no page docs/" + "real-tools-meltano.md",  # (not a reference)
    ]
    found = T.missing_tool_homes(adapters={"dlt": "dlt_adapter", "singer": "singer_adapter"})
    assert found == ["tool airbyte: no adapter (fencepost.adapters.ADAPTERS)"]


# --- endpoint and order kinds -----------------------------------------------------------------


def test_every_endpoint_and_order_kind_has_its_homes() -> None:
    assert T.missing_kind_homes() == []


def test_a_new_kind_without_homes_is_reported() -> None:
    found = T.missing_kind_homes(endpoints=(*V.ENDPOINT_KINDS, "after"))
    assert "endpoint kind after: not in fencepost.impl.cuts.Endpoint" in found
    assert "endpoint kind after: not in fencepost.judge.values.Endpoint" in found
    assert "endpoint kind after: not in fencepost.properties.cut_encoding.CutKind" in found
    assert len(found) == 4, found
    found = T.missing_kind_homes(orders=(*V.ORDER_KINDS, "decimal"))
    assert found == [
        "order kind decimal: not in fencepost.impl.orders.ORDER_KINDS",
        "order kind decimal: not in fencepost.judge.values.OrderKind",
    ]
    found = T.missing_kind_homes(order_homes={"judge": ["integer", "string", "float"]})
    assert found == ["judge has order kind float: not in the vocabulary"]


def test_the_vocabulary_is_plain_data() -> None:
    """Frozen: a consumer cannot change a shared name under another's feet."""
    with pytest.raises(TypeError):
        V.PROPERTIES["x"] = "y"  # type: ignore[index]
    with pytest.raises(dataclasses.FrozenInstanceError):
        V.MUTANTS["relabel"].bug = "x"  # type: ignore[misc]


# --- outcomes and withheld reasons ------------------------------------------------------------


def test_every_outcome_and_withheld_reason_has_its_homes() -> None:
    assert T.missing_outcome_homes() == []


def test_a_new_outcome_or_reason_without_homes_is_reported() -> None:
    found = T.missing_outcome_homes(outcomes=(*V.OUTCOMES, "abandoned"))
    assert found == [
        "outcome abandoned: not in fencepost.impl.publisher.Outcome",
        "outcome abandoned: not in fencepost.model.state",
        "outcome abandoned: not in fencepost.properties.protocol_state.OUTCOMES",
        "outcome abandoned: not in fencepost.harness.protocol.OUTCOMES",
    ]
    found = T.missing_outcome_homes(reasons=(*V.WITHHELD_REASONS, "stale_membership"))
    assert len(found) == 5 and all("withheld reason stale_membership" in f for f in found)
    assert "withheld reason stale_membership: not in fencepost.harness.coverage.Situation" in found


def test_reasons_checked_in_another_order_are_reported() -> None:
    swapped = ["missing_checkpoint", "scope_mismatch", "epoch_mismatch"]
    found = T.missing_outcome_homes(
        reasons=swapped, reason_homes={"judge": list(V.WITHHELD_REASONS)}
    )
    assert "judge checks the withheld reasons in another order" in found
