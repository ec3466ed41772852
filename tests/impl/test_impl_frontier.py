"""IncrementalFrontier gives exactly merge's answer after every checkpoint change."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from fencepost.impl.cuts import NOTHING, Cut, Endpoint
from fencepost.impl.frontier import IncrementalFrontier
from fencepost.impl.merge import Withheld, merge
from fencepost.impl.orders import IntegerOrder, Order, StringOrder
from fencepost.impl.records import Checkpoint, Finality, Membership

ORDERS: list[Order] = [
    IntegerOrder("offsets", successor_exact=True),
    IntegerOrder("ts", successor_exact=False),
    StringOrder("names"),
]


def cuts_for(order: Order) -> st.SearchStrategy[Cut]:
    coordinate: st.SearchStrategy[int | str] = (
        st.integers(-3, 6)
        if order.kind == "integer"
        else st.sampled_from(["", "a", "ab", "b", "é"])
    )
    return st.one_of(
        st.just(NOTHING),
        st.builds(Cut, st.sampled_from([Endpoint.BEFORE, Endpoint.THROUGH]), coordinate),
    )


@st.composite
def scenarios(draw: st.DrawFn) -> tuple[Membership, list[Checkpoint]]:
    names = draw(st.lists(st.sampled_from("ABCDEFG"), max_size=6, unique=True))
    mixed = draw(st.integers(0, 9)) == 0
    main = draw(st.sampled_from(ORDERS))
    assignment = {p: (draw(st.sampled_from(ORDERS)) if mixed else main) for p in names}
    orders = {o.name: o for o in assignment.values()}
    membership = Membership(3, "q", {p: o.name for p, o in assignment.items()}, orders)
    updates = []
    for _ in range(draw(st.integers(0, 30))):
        partition = draw(st.sampled_from([*names, "Z"]))  # Z is not a member
        order = assignment.get(partition, main)
        cut = draw(cuts_for(order))
        unusual = draw(st.integers(0, 9))
        updates.append(
            Checkpoint(
                partition,
                cut,
                None,
                1,
                "other" if unusual == 1 else "q",
                2 if unusual == 2 else 3,
                Finality.PROVISIONAL if unusual == 3 else Finality.FINAL,
            )
        )
    return membership, updates


def same_answer(
    frontier: IncrementalFrontier, membership: Membership, latest: dict[str, Checkpoint]
) -> None:
    expected = merge(membership, latest.values())
    got = frontier.frontier()
    if isinstance(expected, Withheld):
        assert isinstance(got, Withheld), (got, expected)
        assert (got.reason, got.detail, got.vector) == (
            expected.reason,
            expected.detail,
            expected.vector,
        )
    else:
        assert got == expected, (got, expected)


def replay(
    cls: type[IncrementalFrontier], membership: Membership, updates: list[Checkpoint]
) -> None:
    frontier = cls(membership)
    latest: dict[str, Checkpoint] = {}
    same_answer(frontier, membership, latest)
    for checkpoint in updates:
        frontier.update(checkpoint)
        latest[checkpoint.partition] = checkpoint
        same_answer(frontier, membership, latest)


@settings(max_examples=150)
@given(scenarios())
def test_incremental_frontier_equals_merge_after_every_update(
    scenario: tuple[Membership, list[Checkpoint]],
) -> None:
    replay(IncrementalFrontier, *scenario)


@st.composite
def steady_scenarios(draw: st.DrawFn) -> tuple[Membership, list[Checkpoint]]:
    """Every member certified, then a long run of final, same-epoch updates: the fast path.

    Coordinates go up, stay, or go down (a frontier must cope with a store that
    is not fenced), and the endpoint kind flips on equal coordinates, where
    ``through x`` to ``before x`` is a step down; now and then a ``nothing``
    or a wrong epoch flags a member and a later update clears it.
    """
    names = draw(st.lists(st.sampled_from("ABCDEFG"), min_size=1, max_size=6, unique=True))
    order = draw(st.sampled_from(ORDERS))
    membership = Membership(3, "q", dict.fromkeys(names, order.name), {order.name: order})
    coordinates: list[int | str] = (
        list(range(-2, 5)) if order.kind == "integer" else ["", "a", "ab", "b", "é"]
    )
    kinds = st.sampled_from([Endpoint.BEFORE, Endpoint.THROUGH])
    at = st.sampled_from(coordinates)
    updates = [Checkpoint(p, Cut(draw(kinds), draw(at)), None, 1, "q", 3) for p in names]
    for _ in range(draw(st.integers(0, 40))):
        partition = draw(st.sampled_from(names))
        rare = draw(st.integers(0, 19))
        cut = NOTHING if rare == 0 else Cut(draw(kinds), draw(at))
        updates.append(Checkpoint(partition, cut, None, 1, "q", 2 if rare == 1 else 3))
    return membership, updates


@settings(max_examples=200)
@given(steady_scenarios())
def test_incremental_frontier_equals_merge_on_the_fast_path(
    scenario: tuple[Membership, list[Checkpoint]],
) -> None:
    replay(IncrementalFrontier, *scenario)


def test_tie_break_prefers_the_smaller_coordinate() -> None:
    offsets = ORDERS[0]
    membership = Membership(1, "q", {"A": "offsets", "B": "offsets"}, {"offsets": offsets})
    frontier = IncrementalFrontier(
        membership,
        [
            Checkpoint("A", Cut.before(5), None, 1, "q", 1),
            Checkpoint("B", Cut.through(4), None, 1, "q", 1),
        ],
    )
    assert frontier.frontier() == Cut.through(4)


def test_compaction_keeps_the_heap_bounded() -> None:
    offsets = ORDERS[0]
    membership = Membership(1, "q", {"A": "offsets", "B": "offsets"}, {"offsets": offsets})
    frontier = IncrementalFrontier(membership)
    for i in range(1000):
        frontier.update(Checkpoint("A", Cut.through(i), None, 1, "q", 1))
        frontier.update(Checkpoint("B", Cut.through(i + 1), None, 1, "q", 1))
    assert frontier.frontier() == Cut.through(999)
    assert len(frontier._heap) <= 2 * 2 + 64 + 1


class NoLazyDeletion(IncrementalFrontier):
    """Broken: trusts the heap top even when its partition has moved on."""

    def frontier(self) -> Cut | Withheld:
        if not self._ok:
            return super().frontier()
        top = self._heap[0]
        i = top % self._through if isinstance(top, int) else top[2]
        latest = self._numbered[i].checkpoint
        assert latest is not None
        return latest.cut


class EndpointBlind(IncrementalFrontier):
    """Broken: on an equal coordinate, misses that ``through x`` to ``before x`` goes down."""

    def update(self, checkpoint: Checkpoint) -> None:
        member = self._members.get(checkpoint.partition)
        before = None if member is None else member.checkpoint
        lowered = (
            before is not None
            and before.cut.endpoint is Endpoint.THROUGH
            and checkpoint.cut.endpoint is Endpoint.BEFORE
            and before.cut.at == checkpoint.cut.at
            and self._ok
        )
        if not lowered:
            super().update(checkpoint)
            return
        assert member is not None
        member.checkpoint = checkpoint  # no push: the heap keeps only the higher key
        if member is self._top:
            self._answer = None


def test_the_cross_check_catches_a_frontier_blind_to_the_endpoint() -> None:
    offsets = ORDERS[0]
    membership = Membership(1, "q", {"A": "offsets", "B": "offsets"}, {"offsets": offsets})
    updates = [
        Checkpoint("A", Cut.through(5), None, 1, "q", 1),
        Checkpoint("B", Cut.through(5), None, 1, "q", 1),  # A answers (the tie goes to A)
        Checkpoint("B", Cut.before(5), None, 1, "q", 1),  # B steps down below A
    ]
    replay(IncrementalFrontier, membership, updates)
    try:
        replay(EndpointBlind, membership, updates)
    except AssertionError:
        return
    raise AssertionError("the cross-check missed a step down from through x to before x")


def test_the_cross_check_catches_a_frontier_without_lazy_deletion() -> None:
    offsets = ORDERS[0]
    membership = Membership(1, "q", {"A": "offsets", "B": "offsets"}, {"offsets": offsets})
    updates = [
        Checkpoint("A", Cut.through(1), None, 1, "q", 1),
        Checkpoint("B", Cut.through(5), None, 1, "q", 1),
        Checkpoint("A", Cut.through(9), None, 1, "q", 1),
    ]
    replay(IncrementalFrontier, membership, updates)
    try:
        replay(NoLazyDeletion, membership, updates)
    except AssertionError:
        return
    raise AssertionError("the cross-check missed a stale heap entry")
