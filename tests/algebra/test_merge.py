"""Merge: the minimum over every member, or withheld with the first documented reason."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fencepost.impl.cuts import Cut
from fencepost.impl.errors import InvalidValue
from fencepost.impl.merge import MERGE_REASON_ORDER, Withheld, WithheldReason, merge
from fencepost.impl.orders import IntegerOrder, StringOrder
from fencepost.impl.records import Checkpoint, Finality, Membership

OFFSETS = IntegerOrder("offsets", True)
KEYS = StringOrder("keys")


def membership(*names: str, epoch: int = 1, orders: dict[str, str] | None = None) -> Membership:
    orders = orders or {}
    return Membership(
        epoch=epoch,
        scope="q1",
        partitions={n: orders.get(n, "offsets") for n in names},
        orders={"offsets": OFFSETS, "keys": KEYS},
    )


def cp(
    partition: str,
    cut: Cut,
    *,
    epoch: int = 1,
    scope: str = "q1",
    finality: Finality = Finality.FINAL,
) -> Checkpoint:
    return Checkpoint(partition, cut, "tok", 1, scope, epoch, finality)


def test_reasoned_example() -> None:
    m = membership("A", "B")
    assert merge(m, [cp("A", Cut.before(100)), cp("B", Cut.through(100))]) == Cut.before(100)
    # A later certified through 100: progress to through 100, published as certified.
    assert merge(m, [cp("A", Cut.through(100)), cp("B", Cut.through(100))]) == Cut.through(100)


def test_idle_partition_is_never_skipped() -> None:
    m = membership("A", "B")
    assert merge(m, [cp("A", Cut.through(50)), cp("B", Cut.nothing())]) == Withheld(
        WithheldReason.NO_COVERAGE,
        (("A", cp("A", Cut.through(50))), ("B", cp("B", Cut.nothing()))),
    )


def test_removed_partition_does_not_pin_the_frontier() -> None:
    m = membership("A")
    assert merge(m, [cp("A", Cut.through(9)), cp("GONE", Cut.before(1))]) == Cut.through(9)


def test_empty_membership_has_no_coverage() -> None:
    result = merge(membership(), [])
    assert isinstance(result, Withheld)
    assert result.reason is WithheldReason.NO_COVERAGE


# Each fault makes exactly one reason true; combining faults must report the earliest.
FAULTS: dict[WithheldReason, tuple[str, dict[str, object]]] = {
    WithheldReason.MISSING_CHECKPOINT: ("A", {"missing": True}),
    WithheldReason.EPOCH_MISMATCH: ("B", {"epoch": 0}),
    WithheldReason.SCOPE_MISMATCH: ("C", {"scope": "q2"}),
    WithheldReason.UNSUPPORTED_FINALITY: ("D", {"finality": Finality.PROVISIONAL}),
    WithheldReason.INCOMPARABLE: ("E", {"order": "keys"}),
    WithheldReason.NO_COVERAGE: ("F", {"cut": Cut.nothing()}),
}


@given(st.sets(st.sampled_from(list(FAULTS)), min_size=1))
def test_reasons_are_checked_in_the_documented_order(faults: set[WithheldReason]) -> None:
    names = ["A", "B", "C", "D", "E", "F"]
    orders = {"E": "keys"} if WithheldReason.INCOMPARABLE in faults else {}
    m = membership(*names, orders=orders)
    checkpoints = []
    for name in names:
        fault = next((FAULTS[r][1] for r in faults if FAULTS[r][0] == name), {})
        if fault.get("missing"):
            continue
        default_cut = Cut.through("k") if orders.get(name) == "keys" else Cut.through(5)
        checkpoints.append(
            cp(
                name,
                fault.get("cut", default_cut),  # type: ignore[arg-type]
                epoch=fault.get("epoch", 1),  # type: ignore[arg-type]
                scope=fault.get("scope", "q1"),  # type: ignore[arg-type]
                finality=fault.get("finality", Finality.FINAL),  # type: ignore[arg-type]
            )
        )
    result = merge(m, checkpoints)
    assert isinstance(result, Withheld)
    expected = next(r for r in MERGE_REASON_ORDER if r in faults)
    assert result.reason is expected
    assert [p for p, _ in result.vector] == names


@given(
    st.lists(
        st.tuples(st.sampled_from(["before", "through"]), st.integers(0, 4)), min_size=1, max_size=5
    )
)
def test_frontier_is_at_most_every_member(raw: list[tuple[str, int]]) -> None:
    names = [f"P{i}" for i in range(len(raw))]
    cuts = [Cut.before(x) if k == "before" else Cut.through(x) for k, x in raw]
    result = merge(membership(*names), [cp(n, c) for n, c in zip(names, cuts, strict=True)])
    assert isinstance(result, Cut)
    from fencepost.impl.cuts import compare_cuts

    assert all(compare_cuts(OFFSETS, result, c) <= 0 for c in cuts)
    assert any(compare_cuts(OFFSETS, result, c) == 0 for c in cuts)
    # Permuting the vector never changes the published representation.
    for perm in itertools.islice(itertools.permutations(range(len(raw))), 6):
        again = merge(membership(*names), [cp(names[i], cuts[i]) for i in perm])
        assert again == result


def test_bad_values_are_refused_not_withheld() -> None:
    m = membership("A", "B", orders={"B": "keys"})
    with pytest.raises(InvalidValue, match=r"checkpoint\[B\]\.cut\.at"):
        merge(m, [cp("A", Cut.through(1)), cp("B", Cut.through(3))])
    with pytest.raises(InvalidValue, match="two checkpoints for one partition"):
        merge(membership("A"), [cp("A", Cut.through(1)), cp("A", Cut.through(2))])
    with pytest.raises(InvalidValue, match="names an order not in"):
        Membership(1, "q", {"A": "nope"}, {"offsets": OFFSETS})
    with pytest.raises(InvalidValue, match=r"checkpoint\.generation"):
        Checkpoint("A", Cut.through(1), None, True, "q", 1)
