"""``fencepost.testing.strategies``: valid judge values, their wire form, every merge outcome.

The strategies are for users testing their own code against the judge, so they
must draw values the judge accepts (never a BadValue), round-trip through the
wire form, and reach every outcome of the merge: each withheld reason of
docs/semantics.md section 4 and a published frontier.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import Phase, find, given, settings
from hypothesis import strategies as st

from fencepost.judge.merge import MERGE_REASONS, Withheld, WithheldReason, merge
from fencepost.judge.values import Checkpoint, Cut, Endpoint, Membership, Order, OrderKind
from fencepost.judge.wire import (
    checkpoint_from_json,
    cut_from_json,
    membership_from_json,
    record_from_json,
)
from fencepost.testing import strategies as fs

#: Reaching an outcome is the point, not its smallest example: no shrinking.
QUICK = settings(max_examples=5000, phases=(Phase.generate,), database=None, derandomize=True)


@given(fs.merge_cases(orders_per_membership=2))
def test_merge_cases_are_values_the_judge_reads(
    case: tuple[Membership, tuple[Checkpoint, ...]],
) -> None:
    membership, checkpoints = case
    verdict = merge(membership, checkpoints)  # never a BadValue
    assert isinstance(verdict, Cut | Withheld)
    assert membership_from_json(json.loads(json.dumps(fs.wire(membership)))) == membership
    wired = json.loads(json.dumps(fs.wire(checkpoints)))
    assert tuple(checkpoint_from_json(c) for c in wired) == checkpoints


@given(st.data())
def test_cuts_belong_to_their_order_and_round_trip(data: st.DataObject) -> None:
    order = data.draw(fs.orders())
    cut = data.draw(fs.cuts(order))
    assert cut.validated(order) is cut
    assert cut_from_json(json.loads(json.dumps(fs.wire(cut))), order=order) == cut
    assert data.draw(fs.cuts(order, nothing=False)).endpoint is not Endpoint.NOTHING
    record = data.draw(fs.records(order))
    assert record_from_json(json.loads(json.dumps(fs.wire(record)))) == record


@given(fs.orders())
def test_orders_are_the_three_kinds(order: Order) -> None:
    assert order.kind is OrderKind.INTEGER or not order.successor


@given(fs.memberships(min_members=2, max_members=3))
def test_membership_bounds_are_kept(membership: Membership) -> None:
    assert 2 <= len(membership.partitions) <= 3 and membership.epoch >= 1


@pytest.mark.parametrize("reason", MERGE_REASONS, ids=lambda r: r.value)
def test_every_withheld_reason_is_reachable(reason: WithheldReason) -> None:
    def withheld(case: tuple[Membership, tuple[Checkpoint, ...]]) -> bool:
        verdict = merge(*case)
        return isinstance(verdict, Withheld) and verdict.reason is reason

    found = find(fs.merge_cases(orders_per_membership=2), withheld, settings=QUICK)
    assert withheld(found)


def test_a_frontier_at_one_coordinate_of_both_kinds_is_reachable() -> None:
    """``before x`` beside ``through x``: the relabeling case the strategies must reach."""

    def both_kinds(case: tuple[Membership, tuple[Checkpoint, ...]]) -> bool:
        cuts = {(c.cut.endpoint, c.cut.at) for c in case[1]}
        meet = any(
            (Endpoint.BEFORE, at) in cuts and (Endpoint.THROUGH, at) in cuts for _, at in cuts
        )
        return meet and isinstance(merge(*case), Cut)

    membership, checkpoints = find(fs.merge_cases(faults=False), both_kinds, settings=QUICK)
    assert merge(membership, checkpoints).endpoint is Endpoint.BEFORE  # type: ignore[union-attr]


def test_bad_bounds_are_refused() -> None:
    with pytest.raises(ValueError):
        find(fs.memberships(min_members=3, max_members=2), lambda m: True)
