"""The harness's world: exact coverage of log prefixes, truthful provider pages, lenient stores."""

from __future__ import annotations

import json

import pytest

from fencepost.harness.world import (
    ClaimStyle,
    EpochSetup,
    EventSpec,
    PartitionSetup,
    PartitionTruth,
    SetupError,
    World,
    WorldSetup,
)
from fencepost.judge.cuts import covers
from fencepost.judge.values import Cut, Finality, Order

MILLIS = Order.integer("millis", False)


def truth(
    *positions: int,
    style: ClaimStyle = ClaimStyle.THROUGH,
    end: int | None = None,
    final: int | None = None,
) -> PartitionTruth:
    events = tuple(EventSpec(f"e{i}", at) for i, at in enumerate(positions))
    return PartitionTruth(1, PartitionSetup("A", events, final, style, end), MILLIS)


def test_coverage_of_a_prefix_never_splits_a_coordinate() -> None:
    t = truth(1, 2, 2, 3)
    assert t.cover(0) == Cut.nothing()
    assert t.cover(1) == Cut.through(1)
    # Two events at 2, only one enumerated: the claim must stop short of 2.
    assert t.cover(2) == Cut.before(2)
    assert t.cover(3) == Cut.through(2)
    assert t.cover(4) == Cut.through(3)


def test_before_style_sources_claim_up_to_the_next_position() -> None:
    t = truth(1, 2, 2, 3, style=ClaimStyle.BEFORE, end=9)
    assert [t.cover(j) for j in range(5)] == [
        Cut.before(1),
        Cut.before(2),
        Cut.before(2),
        Cut.before(3),
        Cut.before(9),
    ]


def test_every_covered_downset_holds_exactly_the_prefix() -> None:
    for style in ClaimStyle:
        t = truth(1, 1, 2, 4, 4, 4, 7, style=style, end=8)
        for j in range(len(t.log) + 1):
            cut = t.cover(j)
            inside = [ev.id for ev in t.log if covers(MILLIS, cut, ev.at)]
            assert inside == [ev.id for ev in t.log[:j]] or (
                # a split group stops short: fewer events, never more
                set(inside) < {ev.id for ev in t.log[:j]}
            )
            assert t.covered(cut) == len(inside)


def _world(final: int | None = 2, page_size: int = 2) -> World:
    setup = WorldSetup(
        order=MILLIS,
        epochs=(
            EpochSetup(
                1,
                (
                    PartitionSetup(
                        "A",
                        tuple(EventSpec(f"a{i}", at) for i, at in enumerate((1, 2, 2, 3))),
                        final,
                    ),
                ),
            ),
        ),
        readers=("r1",),
        page_size=page_size,
    )
    return World.create(setup)


def test_pages_claim_final_only_within_the_finalized_horizon() -> None:
    world = _world(final=2)
    first = world.page(1, "A", 0, "ok")
    assert [e.id for e in first.events] == ["a0", "a1"]
    assert first.claim is not None and first.claim.final and first.claim.cut == Cut.before(2)
    assert first.next_token is not None and world.tokens[first.next_token] == (1, "A", 2)
    second = world.page(1, "A", 2, "ok")
    assert second.next_token is None
    assert second.claim is not None and not second.claim.final
    assert world.final_claims[(1, "A")] == Cut.before(2)
    horizon = world.page(1, "A", 2, "horizon")
    assert horizon.claim is not None and horizon.claim.final and horizon.claim.cut == Cut.before(2)


def test_page_shapes() -> None:
    world = _world()
    empty = world.page(1, "A", 2, "empty")
    assert empty.events == () and empty.claim is None
    assert empty.next_token is not None and world.tokens[empty.next_token] == (1, "A", 2)
    overlap = world.page(1, "A", 2, "overlap")
    assert [e.id for e in overlap.events] == ["a1", "a2", "a3"]
    assert world.page(1, "A", 0, "noclaim").claim is None


def test_store_keeps_generations_and_certified_support() -> None:
    setup = _world().setup
    world = World.create(
        WorldSetup(setup.order, setup.epochs, publishers=("w",), env_checkpoints=True)
    )
    a = world.advance("A")
    b = world.advance("A")
    assert (a.generation, b.generation) == (1, 2)
    assert world.certified[(1, "A")] == b.cut
    injected = world.inject("A", "provisional")
    assert injected is not None and injected.finality is Finality.PROVISIONAL
    assert world.certified[(1, "A")] == b.cut, "a misconfiguration is no certified support"
    assert injected.generation == 3
    world.inject("A", "missing")
    assert world.stored(1, "A") is None


def test_reshard_makes_the_next_epoch_durable() -> None:
    setup = WorldSetup(
        order=MILLIS,
        epochs=(
            EpochSetup(1, (PartitionSetup("A", (EventSpec("a", 5),)), PartitionSetup("B"))),
            EpochSetup(3, (PartitionSetup("A", (EventSpec("a", 5), EventSpec("m", 1))),)),
        ),
        publishers=("w",),
        env_checkpoints=True,
    )
    world = World.create(setup)
    world.advance("A")
    assert world.epoch == 1 and world.can_reshard()
    assert world.reshard().epoch == 3
    assert world.members() == ["A"]
    wrong = world.inject("A", "wrong_epoch")
    assert wrong is not None and wrong.epoch == 1, "the old epoch's checkpoint, copied"
    assert world.truth[(3, "A")].log[0].id == "m", "the moved event sits below the old checkpoint"


def one(partition: PartitionSetup) -> tuple[EpochSetup, ...]:
    return (EpochSetup(1, (partition,)),)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"epochs": ()}, "at least one epoch"),
        ({"publishers": (), "readers": ()}, "at least one publisher or reader"),
        ({"publishers": ("w", "w")}, "unique"),
        ({"policy": "sometimes"}, "world.policy"),
        ({"page_size": 0}, "world.page_size"),
        ({"epochs": one(PartitionSetup("A", (EventSpec("x", 1), EventSpec("x", 2))))}, "twice"),
        (
            {
                "epochs": (
                    EpochSetup(1, (PartitionSetup("A", (EventSpec("x", 1),)),)),
                    EpochSetup(2, (PartitionSetup("A", (EventSpec("x", 2),)),)),
                )
            },
            "keeps its position",
        ),
        ({"epochs": one(PartitionSetup("A", (EventSpec("x", 4),), end=4))}, "above every"),
        ({"epochs": one(PartitionSetup("A", (EventSpec("x", "4"),)))}, "integer"),
        ({"epochs": one(PartitionSetup("A", (), final=1))}, "final"),
    ],
)
def test_bad_setups_are_refused_with_the_place(change: dict[str, object], message: str) -> None:
    fields: dict[str, object] = {
        "order": MILLIS,
        "epochs": (EpochSetup(1, (PartitionSetup("A"),)),),
        "publishers": ("w",),
    }
    fields.update(change)
    with pytest.raises(SetupError, match=message):
        WorldSetup(**fields)  # type: ignore[arg-type]


def test_setup_json_round_trip_and_errors() -> None:
    setup = WorldSetup(
        order=Order.string("keys"),
        epochs=(
            EpochSetup(
                1, (PartitionSetup("A", (EventSpec("a", "m"),), 0, ClaimStyle.BEFORE, "z"),)
            ),
            EpochSetup(2, (PartitionSetup("A", (EventSpec("a", "m"), EventSpec("b", "c"))),)),
        ),
        publishers=("w1",),
        readers=("r1",),
        policy="reset",
        page_size=3,
        env_checkpoints=False,
    )
    assert WorldSetup.from_json(json.loads(json.dumps(setup.to_json()))) == setup
    data = setup.to_json()
    data["epochs"][0]["partitions"][0]["claims"] = "sideways"  # type: ignore[index]
    with pytest.raises(SetupError, match=r"world.epochs\[0\].partitions\[0\].claims"):
        WorldSetup.from_json(data)
    with pytest.raises(SetupError, match=r"world\.colour: unknown field"):
        WorldSetup.from_json({**setup.to_json(), "colour": "red"})
