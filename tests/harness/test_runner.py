"""Runs: the harness schedules deterministically, skips impossible steps, drains, reports."""

from __future__ import annotations

from fencepost.harness import (
    Advance,
    Answer,
    EpochSetup,
    EventSpec,
    Finalize,
    Ingest,
    Inject,
    PartitionSetup,
    Publish,
    Reshard,
    Rule,
    WorldSetup,
    run_schedule,
)
from fencepost.harness.bases import BASES
from fencepost.harness.schedule import Action
from fencepost.judge.values import Cut, Order
from fencepost.mutants import Variant
from fencepost.sut.adapter import InProcessSut

OFFSETS = Order.integer("offsets", True)

#: The reasoned example of docs/procedure.md: A before 100, B through 100, then A through 100.
EXAMPLE = WorldSetup(
    order=OFFSETS,
    epochs=(
        EpochSetup(
            1,
            (
                PartitionSetup(
                    "A",
                    (EventSpec("a99", 99), EventSpec("a100", 100), EventSpec("a100b", 100)),
                ),
                PartitionSetup("B", (EventSpec("b100", 100),)),
            ),
        ),
    ),
    publishers=("w1", "w2"),
    env_checkpoints=True,
)


def answers(worker: str, count: int) -> list[Answer]:
    return [Answer(worker)] * count


def _publisher_base() -> tuple[WorldSetup, tuple[Action, ...]]:
    base = BASES["publisher-offsets"]
    return base.setup, base.schedule


def test_the_reasoned_example_publishes_before_100_then_through_100() -> None:
    schedule: list[Action] = [
        Advance("A"),  # A through 99
        Advance("A"),  # A before 100: one of the two events at 100 enumerated
        Advance("B"),  # B through 100
        Publish("w1"),
        *answers("w1", 4),
        Advance("A"),  # A through 100
        Publish("w2"),
        *answers("w2", 4),
    ]
    result = run_schedule(InProcessSut(), EXAMPLE, schedule)
    assert result.ok, result.violations
    outcomes = [s.says for s in result.steps if "it ends" in s.says]
    assert "published (epoch 1, before 100)" in outcomes[0]  # exactly as A certified it
    assert "published (epoch 1, through 100)" in outcomes[1]
    assert result.record.cut == Cut.through(100)


def test_runs_are_deterministic() -> None:
    first = run_schedule(InProcessSut(), *_publisher_base())
    second = run_schedule(InProcessSut(), *_publisher_base())
    assert first.ok
    assert [str(line) for line in first.transcript] == [str(line) for line in second.transcript]
    assert first.messages == second.messages


def test_impossible_steps_are_skipped_and_calls_are_drained() -> None:
    schedule: list[Action] = [
        Answer("w1"),  # nothing pending: skipped
        Finalize("A"),  # everything is final already: skipped
        Publish("nobody"),  # no such worker: skipped
        Advance("A"),
        Publish("w1"),
        Publish("w1"),  # busy: skipped
        Answer("w1", "horizon"),  # a page mode for a store read: skipped
    ]
    result = run_schedule(InProcessSut(), EXAMPLE, schedule)
    assert result.ok
    assert result.executed == (Advance("A"), Publish("w1"))
    drained = [s for s in result.steps if s.drain]
    assert len(drained) == 3  # read_publication, read_membership, read_checkpoints
    assert "withheld missing_checkpoint" in drained[-1].says


def test_lost_response_applied_is_confirmed_by_a_read() -> None:
    schedule: list[Action] = [Advance("A"), Advance("B"), Publish("w1")]
    schedule += [Answer("w1")] * 3 + [Answer("w1", "applied_lost")]
    result = run_schedule(InProcessSut(), EXAMPLE, schedule)
    assert result.ok, result.violations
    assert "confirmed (epoch 1, through 99)" in result.steps[-1].says


def test_misconfigured_checkpoints_are_withheld_in_the_documented_order() -> None:
    schedule: list[Action] = [
        Advance("A"),
        Advance("B"),
        Inject("A", "provisional"),
        Inject("B", "wrong_scope"),
    ]
    schedule += [Publish("w1")]
    result = run_schedule(InProcessSut(), EXAMPLE, schedule)
    assert result.ok
    # Both are wrong; scope is checked before finality.
    assert "withheld scope_mismatch" in result.steps[-1].says


def test_a_composed_world_with_readers_and_a_reshard() -> None:
    setup = WorldSetup(
        order=OFFSETS,
        epochs=(
            EpochSetup(1, (PartitionSetup("A", (EventSpec("a1", 2),)),)),
            EpochSetup(2, (PartitionSetup("A", (EventSpec("a1", 2), EventSpec("m", 1))),)),
        ),
        publishers=("w1",),
        readers=("r1",),
    )
    schedule: list[Action] = [
        Ingest("r1", "A"),
        *answers("r1", 5),
    ]  # read, fetch, record, write: through 2
    schedule += [Publish("w1"), *answers("w1", 4)]  # published (1, through 2)
    schedule += [Reshard(), Publish("w1"), *answers("w1", 3)]  # epoch 2: A has no checkpoint
    schedule += [Ingest("r1", "A"), *answers("r1", 6)]  # m at 1 and a1 at 2: through 2
    schedule += [Publish("w1")]  # drained: epoch 2 at through 2, not below: published
    result = run_schedule(InProcessSut(), setup, schedule)
    assert result.ok, result.violations
    ends = [s.says for s in result.steps if "it ends" in s.says]
    assert "published (epoch 1, through 2)" in ends[1]
    assert "withheld missing_checkpoint" in ends[2]
    assert "published (epoch 2, through 2)" in ends[-1]


def test_a_sut_that_does_not_implement_a_needed_level_is_refused() -> None:
    algebra_only = InProcessSut(Variant(levels=("algebra",)))
    result = run_schedule(algebra_only, EXAMPLE, [Publish("w1")])
    assert result.first is not None and result.first.rule is Rule.HANDSHAKE
    assert "needs level 'publisher'" in result.first.message
