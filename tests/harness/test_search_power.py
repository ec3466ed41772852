"""The search's power: discriminating coverage, value classes, swarm testing, faults that
outlast any retry budget, and the world with incomparable orders.

Each new check is shown catching a deliberately broken variant: a publisher that
publishes a scalar frontier across incomparable orders, a SUT that reports
``published`` after giving up; and each count of the discriminating-coverage
table is shown to mean what it says: a run that counts a wrong answer as caught
does catch a SUT that gives it.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from filtered_sut import FilteredSut

from fencepost.harness.algebra import MergeCase, random_cases
from fencepost.harness.bases import BASES
from fencepost.harness.classes import CLASSES, coordinate_classes, world_classes
from fencepost.harness.conformance import ConformOptions, conform, exhaustive_phase
from fencepost.harness.power import (
    MERGE_ANSWERS,
    WRONG_ANSWERS,
    _merges,
    algebra_merge_caught,
    wrong_merge,
)
from fencepost.harness.randomized import FEATURES, Swarm, random_setup
from fencepost.harness.report import render_summary, report_json
from fencepost.harness.rules import Rule
from fencepost.harness.runner import run_schedule
from fencepost.harness.schedule import CONFLICT_UNTIL_END, Action, Advance, Answer, Publish
from fencepost.harness.seeds import seed_for
from fencepost.harness.transport import SubprocessSut
from fencepost.harness.world import EpochSetup, EventSpec, PartitionSetup, WorldSetup
from fencepost.judge.decide import Decision, decide_merged
from fencepost.judge.merge import Withheld
from fencepost.judge.values import BadValue, Checkpoint, Cut, Membership, Order, Record
from fencepost.mutants import Variant
from fencepost.mutants.decisions import IncomparableScalarPublisher, incomparable_scalar
from fencepost.sut.adapter import InProcessSut

INCOMPARABLE_SCALAR = Variant(
    name="incomparable-scalar",
    bug="a scalar frontier across incomparable orders",
    publisher=IncomparableScalarPublisher,
    merge=incomparable_scalar,
)
OFFSETS = Order.integer("offsets", True)


def _gave_up_as_published(line: str) -> str:
    """A SUT that reports ``published`` whenever it gave up (with its last record)."""
    msg = json.loads(line)
    if msg.get("type") == "publish_ok" and msg.get("outcome") == "gave_up":
        msg["outcome"] = "published"
        return json.dumps(msg)
    return line


def test_a_scalar_frontier_across_incomparable_orders_is_caught_at_the_publisher_level() -> None:
    base = BASES["publisher-incomparable"]
    right = run_schedule(InProcessSut(), base.setup, base.schedule)
    assert right.ok, right.violations
    assert "scalar_across_incomparable" in right.caught
    assert "incomparable_orders" in right.classes
    wrong = run_schedule(InProcessSut(INCOMPARABLE_SCALAR), base.setup, base.schedule)
    assert wrong.first is not None and wrong.first.rule is Rule.CERTIFIED_SUPPORT
    assert "incomparable orders" in wrong.first.message
    report = conform(
        InProcessSut(INCOMPARABLE_SCALAR),
        ConformOptions(
            levels=frozenset({"publisher"}),
            schedules=0,
            only=frozenset({exhaustive_phase("publisher-incomparable", 1)}),
        ),
    )
    assert not report.ok and report.failures[0].violation.rule is Rule.CERTIFIED_SUPPORT


@pytest.mark.slow
@pytest.mark.parametrize("bug", [(), ("--bug", "incomparable-scalar")], ids=["correct", "bug"])
def test_the_python_example_withholds_incomparable_and_its_bug_is_caught(
    bug: tuple[str, ...],
) -> None:
    example = (
        Path(__file__).resolve().parents[2] / "examples" / "python-sut" / "fencepost_example.py"
    )
    factory = SubprocessSut([sys.executable, str(example), *bug])
    try:
        report = conform(
            factory,
            ConformOptions(
                levels=frozenset({"publisher"}),
                schedules=0,
                only=frozenset({exhaustive_phase("publisher-incomparable", 1)}),
            ),
        )
    finally:
        factory.close()
    if not bug:
        assert report.ok, report.failures
    else:
        assert not report.ok and report.failures[0].violation.rule is Rule.CERTIFIED_SUPPORT


def test_an_attempt_beaten_until_it_ends_must_give_up_and_published_then_is_caught() -> None:
    setup = WorldSetup(
        order=OFFSETS,
        epochs=(EpochSetup(1, (PartitionSetup("A", (EventSpec("a1", 1),)),)),),
        publishers=("w1",),
        env_checkpoints=True,
    )
    schedule: list[Action] = [Advance("A"), Publish("w1"), Answer("w1", CONFLICT_UNTIL_END)]
    right = run_schedule(InProcessSut(), setup, schedule)
    assert right.ok, right.violations
    assert "it ends: gave_up" in right.steps[-1].says
    assert "published_after_giving_up" in right.caught
    wrong = run_schedule(FilteredSut(_gave_up_as_published), setup, schedule)
    assert wrong.first is not None and wrong.first.rule is Rule.LOST_RESPONSE_HONESTY


def test_published_after_giving_up_is_counted_where_it_is_caught() -> None:
    # The count says the fence base would catch it; the broken SUT is caught there.
    base = BASES["publisher-fence"]
    right = run_schedule(InProcessSut(), base.setup, base.schedule)
    assert right.ok and "published_after_giving_up" in right.caught
    wrong = run_schedule(FilteredSut(_gave_up_as_published), base.setup, base.schedule)
    assert wrong.first is not None and wrong.first.rule is Rule.LOST_RESPONSE_HONESTY


def test_a_wrong_answer_equal_to_the_right_one_is_not_counted() -> None:
    two = Membership.of(1, "q1", OFFSETS, ("A", "B"))
    cps = tuple(
        Checkpoint(p, Cut.through(3), None, 1, "q1", 1) for p in ("A", "B")
    )  # all equal: no mistake about members, ties or sentinels shows
    caught = algebra_merge_caught(two, cps)
    assert "first_two_members" not in caught and "first_kind_on_tie" not in caught
    three = Membership.of(1, "q1", OFFSETS, ("A", "B", "C"))
    low_third = (*cps, Checkpoint("C", Cut.through(1), None, 1, "q1", 1))
    assert "first_two_members" in algebra_merge_caught(three, low_third)


def _decided(
    record: Record, membership: Membership, merged: Cut | Withheld, policy: str
) -> Decision | str:
    try:
        return decide_merged(record, membership, merged, policy)
    except (BadValue, TypeError) as exc:
        return type(exc).__name__


def test_a_wrong_merge_left_unweighed_decides_as_the_right_one_on_every_record() -> None:
    # view_caught decides and judges only the wrong merges _merges keeps; one it leaves
    # out must decide as the right merge on any record, or a count could move.
    left_out = 0
    for case in random_cases(5, 400):
        if not isinstance(case, MergeCase):
            continue
        membership, checkpoints = case.membership, tuple(case.checkpoints)
        merges = _merges(membership, checkpoints)
        if merges is None:
            continue
        assert _merges(membership, checkpoints) is merges  # a second view reuses it
        kept = dict(merges.wrong)
        cuts = {Cut.nothing(), *(c.cut for c in checkpoints)}
        epochs = {max(0, membership.epoch - 1), membership.epoch, membership.epoch + 1}
        for name in MERGE_ANSWERS:
            try:
                wrong = wrong_merge(name, membership, checkpoints)
            except (BadValue, TypeError):
                continue
            if wrong is None:
                continue
            if name in kept:
                assert kept[name] == wrong
                continue
            left_out += 1
            for record in (Record(e, cut, 1) for e in epochs for cut in cuts):
                for policy in ("monotone", "reset"):
                    assert _decided(record, membership, wrong, policy) == _decided(
                        record, membership, merges.right, policy
                    ), (name, record, policy)
    assert left_out > 100


def test_value_classes_are_recognised() -> None:
    assert coordinate_classes([-3, 0, 9, 10]) >= {"negative", "zero", "digit_counts"}
    assert coordinate_classes([2**31 - 1, 2**53 + 1, 2**63 + 1, 10**40]) >= {
        "two_pow_31",
        "two_pow_53",
        "two_pow_63",
        "beyond_64_bits",
    }
    assert coordinate_classes(["", "a", "ab", "B", "b", "e\u0301", "\U0001f600"]) == {
        "empty_string",
        "prefix",
        "case_variants",
        "combining_marks",
        "astral",
    }
    names = BASES["publisher-names"].setup
    assert {"names_case_only", "names_normalisation", "three_members"} <= world_classes(names)
    assert "successor_edge" in coordinate_classes([9, 10], successor=True)
    assert "successor_edge" not in coordinate_classes([9, 10])  # dense: no edge
    assert "successor_edge" not in coordinate_classes([8, 10], successor=True)


def test_the_publisher_alone_meets_every_coordinate_class_and_its_wrong_answers() -> None:
    """An implementation that declares no algebra level still has its string, nothing and
    successor comparisons weighed: the bases publisher-classes and publisher-strings hold
    the classes, and a run of them would catch each of those mistakes (issue 21)."""
    report = conform(
        InProcessSut(),
        ConformOptions(
            levels=frozenset({"publisher"}),
            schedules=0,
            only=frozenset(
                {
                    exhaustive_phase("publisher-classes", 1),
                    exhaustive_phase("publisher-strings", 1),
                }
            ),
        ),
    )
    assert report.ok, report.failures
    data = report_json(report)
    power = data["power"]
    assert isinstance(power, dict)
    for name in ("min_casefold", "min_normalised", "nothing_as_zero", "successor_ignored"):
        assert power[name]["runs"] > 0, name
    classes = data["classes"]
    assert isinstance(classes, dict)
    held = {name for name, runs in classes["publisher"].items() if runs > 0}
    assert {
        "negative",
        "zero",
        "digit_counts",
        "successor_edge",
        "empty_string",
        "prefix",
        "case_variants",
        "combining_marks",
        "astral",
        "three_members",
    } <= held


def test_random_worlds_keep_to_a_declared_range_and_draw_classes_at_every_level() -> None:
    import random

    rng = random.Random(3)
    limits = (-(2**53 - 1), 2**53 - 1)
    for family in ("publisher", "checkpointer", "composed"):
        seen: set[str] = set()
        for _ in range(40):
            setup = random_setup(seed_for(rng, family), limits=limits)
            for epoch in setup.epochs:
                for part in epoch.partitions:
                    for at in (*(ev.at for ev in part.events), part.end):
                        assert not isinstance(at, int) or limits[0] <= at <= limits[1]
            seen |= world_classes(setup)
        assert {"negative", "zero", "digit_counts", "two_pow_31", "astral"} <= seen, family


def test_swarm_switches_kinds_off_and_no_swarm_keeps_them_all() -> None:
    assert Swarm.draw(7, False).on == frozenset(FEATURES)
    drawn = [Swarm.draw(seed, True).on for seed in range(40)]
    assert any(on != frozenset(FEATURES) for on in drawn)
    assert all(on == Swarm.draw(seed, True).on for seed, on in enumerate(drawn))  # replayable
    off = Swarm(frozenset())
    assert not off.allows(Answer("w1", "lost")) and off.allows(Answer("w1", "ok"))


def test_the_summary_carries_the_power_table_and_the_value_classes() -> None:
    report = conform(
        InProcessSut(),
        ConformOptions(
            levels=frozenset({"publisher"}),
            schedules=0,
            only=frozenset({exhaustive_phase("publisher-names", 1)}),
        ),
    )
    text = render_summary(report, "sut")
    assert "discriminating coverage" in text and "names_case_insensitive" in text
    assert "value classes" in text and "names_normalisation" in text
    data = report_json(report)
    power = data["power"]
    assert isinstance(power, dict) and set(power) == {w.name for w in WRONG_ANSWERS}
    assert power["names_case_insensitive"]["runs"] > 0
    classes = data["classes"]
    assert isinstance(classes, dict) and set(classes["publisher"]) == set(CLASSES)
    # A wrong answer of the tested levels that no run would catch is a warning.
    assert any("no run would have caught the merge mistake" in w for w in report.warnings())


@pytest.mark.slow
def test_the_default_budget_would_catch_every_wrong_answer() -> None:
    report = conform(InProcessSut(), ConformOptions())
    assert report.ok, report.failures
    assert report.power.missing(report.tested) == ()
    assert report.warnings() == ()


def test_an_algebra_only_sut_has_every_merge_mistake_caught_by_the_default_budget() -> None:
    """The algebra level alone must give every merge mistake a catching case: many SUTs
    expose nothing else. Before the confusable pairs, the UTF-16 minimum was caught in
    about 1 run of 800 merge cases and warned about (and the float64 one in some seeds)."""
    from fencepost.harness.algebra import MergeCase, random_cases

    caught: set[str] = set()
    for seed in range(3):
        for case in random_cases(seed, 100):
            if isinstance(case, MergeCase):
                caught |= algebra_merge_caught(case.membership, case.checkpoints)
    assert {"min_utf16", "min_float64", "min_as_text", "sentinel_minimum"} <= caught
