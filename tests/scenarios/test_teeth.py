"""The runners have teeth: broken implementations, mutants and wrong expectations fail.

Every check here runs a shipped ``-ok`` scenario against something deliberately
wrong and asserts the scenario fails for the right reason (the property, the
step, expected against actual), or runs a ``-bad`` scenario against the correct
code and asserts the bug, not the schedule, is what its verdict depends on.
"""

from __future__ import annotations

import dataclasses

import pytest

from fencepost.mutants import CATALOG, CORRECT
from fencepost.scenarios.format import (
    load_shipped,
    load_text,
)
from fencepost.scenarios.impl_runner import ImplDriver
from fencepost.scenarios.library import RunOptions, run_one
from fencepost.scenarios.model_runner import ModelDriver
from fencepost.scenarios.outcome import drive
from fencepost.scenarios.sut_runner import SutDriver, in_process_factory


def test_a_relabeling_publisher_fails_the_reasoned_example_for_no_relabeling() -> None:
    scenario = load_shipped("procedure-reasoned-example-ok")
    driver = ImplDriver(scenario, variant=CATALOG["relabel"])
    result = drive(scenario, "impl", driver)
    assert result.status == "fail"
    assert result.breach is not None
    assert result.breach.property == "no_relabeling"
    assert result.breach.step == 4  # p1's first publication: before 100 relabeled
    assert "A certified at most before 100" in result.breach.message


def test_a_publisher_taking_a_lost_response_as_success_fails_for_honesty() -> None:
    scenario = load_shipped("materialize-12797-not-applied-alone-ok")
    driver = ImplDriver(scenario, variant=CATALOG["blind-success"])
    result = drive(scenario, "impl", driver)
    assert result.status == "fail"
    assert result.breach is not None and result.breach.property == "lost_response_honesty"
    assert result.breach.step == 3


def test_a_reader_certifying_the_largest_event_seen_fails_for_checkpoint_truth() -> None:
    scenario = load_shipped("debezium-dbz-5915-ok")
    result = drive(scenario, "impl", ImplDriver(scenario, variant=CATALOG["max-observed"]))
    assert result.status == "fail"
    assert result.breach is not None and result.breach.property == "checkpoint_truth"
    assert "A certified through 500" in result.breach.message
    assert "final claims only up to before 500" in result.breach.message


@pytest.mark.parametrize("name", ["procedure-reasoned-example-ok", "cockroach-41665-ok"])
def test_the_model_with_the_relabel_mutant_fails_ok_scenarios(name: str) -> None:
    scenario = dataclasses.replace(load_shipped(name), variant="relabel")
    result = drive(scenario, "model", ModelDriver(scenario))
    assert result.status == "fail"
    assert result.breach is not None
    assert result.breach.property in ("soundness", "no_relabeling")


def test_the_harness_mutant_sut_fails_an_ok_scenario() -> None:
    scenario = load_shipped("cockroach-41665-ok")
    result = drive(scenario, "sut", SutDriver(scenario, in_process_factory("relabel")))
    assert result.status == "fail" and result.breach is not None
    assert result.breach.property in ("soundness", "no_relabeling")


def _bad_names() -> list[str]:
    from fencepost.scenarios.format import (
        shipped_names,
    )

    return [n for n in shipped_names() if n.endswith("-bad")]


@pytest.mark.parametrize("name", _bad_names())
def test_bad_scenarios_are_not_caught_on_the_correct_implementation(name: str) -> None:
    """The property breaks because of the variant, not because of the schedule."""
    scenario = load_shipped(name)
    result = drive(scenario, "impl", ImplDriver(scenario, variant=CORRECT))
    assert result.breach is None, result.breach
    assert result.status == "fail"


@pytest.mark.parametrize("variant", sorted(n for n, v in CATALOG.items() if v.changes_workers))
def test_every_impl_variant_breaks_a_property_in_some_shipped_schedule(variant: str) -> None:
    """Every known bug of the catalog is caught by the oracle on some schedule of the library."""
    from fencepost.scenarios.format import (
        shipped_names,
    )

    caught = []
    for name in shipped_names():
        scenario = load_shipped(name)
        result = drive(scenario, "impl", ImplDriver(scenario, variant=CATALOG[variant]))
        if result.breach is not None:
            caught.append(name)
    assert caught, f"no shipped schedule breaks a property under {variant}"


def _step_line(text: str, index: int) -> int:
    lines = [n for n, line in enumerate(text.splitlines(), start=1) if line == "[[steps]]"]
    return lines[index - 1]


WRONG = """\
name = "wrong-ok"
description = "an expectation that does not hold"
source = "tests"

[orders.ts]
kind = "integer"
successor = false

[[epochs]]
epoch = 1
members = { A = "ts", B = "ts" }

[[truth]]
partition = "A"
events = [{ id = "a1", at = 90 }, { id = "a2", at = 100 }]

[[truth]]
partition = "B"
events = [{ id = "b1", at = 100 }]

[[steps]]
do = "certify"
partition = "A"
cut = "before 100"

[[steps]]
do = "certify"
partition = "B"
cut = "through 100"

[[steps]]
do = "publish"
publisher = "p1"
expect = { outcome = "published", cut = "through 100" }
"""


@pytest.mark.parametrize("target", ["model", "impl", "sut"])
def test_a_wrong_expectation_fails_with_expected_and_actual(target: str) -> None:
    scenario = load_text(WRONG, "tmp/wrong-ok.toml")
    result = run_one(scenario, target)
    assert result.status == "fail", result.detail
    assert result.breach is None
    [mismatch] = result.mismatches
    assert (mismatch.step, mismatch.field) == (3, "expect.cut")
    assert mismatch.line == _step_line(WRONG, 3)
    assert (mismatch.expected, mismatch.actual) == ("through 100", "before 100")
    assert str(mismatch) in result.detail


@pytest.mark.parametrize("target", ["impl", "sut"])
def test_an_inconsistent_world_is_an_error_naming_the_line(target: str) -> None:
    extra = '[[steps]]\ndo = "certify"\npartition = "B"\ncut = "before 100"\n\n'
    text = WRONG.replace('[[steps]]\ndo = "publish"', extra + '[[steps]]\ndo = "publish"')
    scenario = load_text(text, "tmp/wrong-ok.toml")
    result = run_one(scenario, target)
    assert result.status == "error"
    assert result.detail.startswith(f"tmp/wrong-ok.toml:{_step_line(text, 3)}: step 3: ")
    assert "only certifies a cut ahead" in result.detail


def test_a_dishonest_provider_page_is_an_error_not_a_verdict() -> None:
    text = """\
name = "liar-ok"
description = "the provider claims an event it never delivered"
source = "tests"

[orders.ts]
kind = "integer"
successor = false

[[epochs]]
epoch = 1
members = { A = "ts" }

[[truth]]
partition = "A"
events = [{ id = "a1", at = 10 }, { id = "a2", at = 20 }]

[[steps]]
do = "serve"
partition = "A"
events = ["a1"]
claim = "through 20"

[[steps]]
do = "ingest"
reader = "r1"
partition = "A"
"""
    result = run_one(load_text(text, "tmp/liar-ok.toml"), "impl")
    assert result.status == "error"
    assert "covers a2, which no page has delivered" in result.detail
    # Through the harness the scripted claim is not refused but judged: the correct
    # SUT trusts the provider's final claim, and its checkpoint covers a2, which
    # has no recorded outcome: checkpoint truth, against the ground truth.
    sut = run_one(load_text(text, "tmp/liar-ok.toml"), "sut")
    assert sut.status == "fail"
    assert "checkpoint_truth" in sut.detail and "a2" in sut.detail


def test_targets_that_cannot_express_a_step_skip_with_the_reason() -> None:
    scenario = load_shipped("flink-40094-ok")
    forced = run_one(scenario, "model", RunOptions(force=True))
    assert forced.status == "skip"
    assert "keeps every partition a member of every epoch" in forced.detail
    orders = run_one(load_shipped("incomparable-orders-ok"), "sut", RunOptions(force=True))
    assert orders.status == "skip" and "one order for every partition" in orders.detail


UNSERVED = """\
name = "unserved-ok"
description = "an ingest pass over a partition whose provider the scenario never scripted"
source = "tests"

[orders.ts]
kind = "integer"
successor = false

[[epochs]]
epoch = 1
members = { A = "ts" }

[[truth]]
partition = "A"
events = [{ id = "a1", at = 10 }]

[[steps]]
do = "ingest"
reader = "r1"
partition = "A"
expect = { cut = "nothing" }
checkpoints = { A = "none" }
"""


@pytest.mark.parametrize("target", ["impl", "sut"])
def test_a_partition_never_served_has_nothing_to_fetch_on_every_target(target: str) -> None:
    # Through the harness too: the scenario's provider, not pages cut from the truth.
    result = run_one(load_text(UNSERVED, "tmp/unserved-ok.toml"), target)
    assert result.status == "pass", result.detail
    wrong = UNSERVED.replace('expect = { cut = "nothing" }', 'expect = { cut = "through 10" }')
    assert run_one(load_text(wrong, "tmp/unserved-ok.toml"), target).status == "fail"
