"""Seeds name cases exactly; exhaustive enumeration is complete; shrinking keeps the failure."""

from __future__ import annotations

import random

import pytest

from fencepost.harness.bases import BASES
from fencepost.harness.conformance import ConformOptions, conform, replay
from fencepost.harness.exhaustive import exhaustive, exhaustive_schedule
from fencepost.harness.randomized import random_setup, run_random
from fencepost.harness.rules import Rule
from fencepost.harness.runner import run_schedule
from fencepost.harness.schedule import Action
from fencepost.harness.seeds import FAMILIES, ExhaustiveCase, family_of, seed_for
from fencepost.harness.shrink import shrink
from fencepost.harness.world import WorldSetup
from fencepost.mutants import CATALOG
from fencepost.sut.adapter import InProcessSut


@pytest.mark.parametrize(
    "case",
    [
        ExhaustiveCase("algebra"),
        ExhaustiveCase("publisher-offsets", ((3, 0),)),
        ExhaustiveCase("checkpointer-millis", ((0, 5), (22, 1022))),
        ExhaustiveCase("composed-offsets", ((1023, 0), (1023, 1), (5, 7))),
    ],
)
def test_exhaustive_seeds_round_trip(case: ExhaustiveCase) -> None:
    assert case.seed < 0
    assert ExhaustiveCase.from_seed(case.seed) == case
    assert family_of(case.seed) == case.family


def _publisher_base() -> tuple[WorldSetup, tuple[Action, ...]]:
    base = BASES["publisher-offsets"]
    return base.setup, base.schedule


def test_random_seeds_carry_their_family_and_world() -> None:
    rng = random.Random(1)
    for family in FAMILIES:
        seed = seed_for(rng, family)
        assert seed >= 0 and family_of(seed) == family
        if family != "algebra":
            setup = random_setup(seed)
            assert isinstance(setup, WorldSetup)
            assert random_setup(seed) == setup
            assert setup.env_checkpoints == (family == "publisher")


def test_random_runs_replay_exactly() -> None:
    seed = seed_for(random.Random(3), "composed")
    first = run_random(InProcessSut(), seed, workers=2, timeout=5)
    second = run_random(InProcessSut(), seed, workers=2, timeout=5)
    assert first.ok
    assert [str(t) for t in first.transcript] == [str(t) for t in second.transcript]


def test_the_exhaustive_search_covers_every_single_insertion() -> None:
    runs = list(exhaustive(InProcessSut(), "composed-offsets", 1, timeout=5))
    assert all(result.ok for _, result in runs)
    assert runs[0][0] == ExhaustiveCase("composed-offsets")
    cases = [case for case, _ in runs[1:]]
    assert len(cases) == len(set(cases)) > 20
    # Every case's seed rebuilds the very schedule that ran.
    for case, result in runs[1:6]:
        setup, schedule = exhaustive_schedule(InProcessSut(), case, timeout=5)
        again = run_schedule(InProcessSut(), setup, schedule)
        assert [str(t) for t in again.transcript] == [str(t) for t in result.transcript]
    assert len(list(exhaustive(InProcessSut(), "composed-offsets", 0, timeout=5))) == 1


def test_shrinking_keeps_the_rule_and_cuts_the_schedule() -> None:
    factory = InProcessSut(CATALOG["stale-cut-retry"])
    result = run_schedule(factory, *_publisher_base())
    assert result.first is not None and result.first.rule is Rule.MONOTONE_PUBLICATION
    shrunk = shrink(
        factory, result.setup, result.executed, Rule.MONOTONE_PUBLICATION, result, timeout=5
    )
    assert len(shrunk.actions) < len(result.executed)
    assert shrunk.result.first is not None
    assert shrunk.result.first.rule is Rule.MONOTONE_PUBLICATION
    # 1-minimal: removing any single remaining step loses the failure.
    for i in range(len(shrunk.actions)):
        fewer = shrunk.actions[:i] + shrunk.actions[i + 1 :]
        attempt = run_schedule(factory, result.setup, fewer)
        assert attempt.first is None or attempt.first.rule is not Rule.MONOTONE_PUBLICATION


def test_a_reported_seed_replays_the_same_failure() -> None:
    factory = InProcessSut(CATALOG["blind-success"])
    report = conform(factory, ConformOptions(levels=frozenset({"publisher"}), schedules=0))
    failure = report.failures[0]
    assert failure.seed is not None
    again = replay(factory, failure.seed).failures[0]
    assert again.violation == failure.violation
    assert again.actions == failure.actions
    assert [str(t) for t in again.transcript] == [str(t) for t in failure.transcript]
