"""The algebra level: answers judged against the project's algebra, claims not spellings."""

from __future__ import annotations

from collections.abc import Sequence

from fencepost.harness.algebra import (
    MILLIS,
    OFFSETS,
    CompareCase,
    MergeCase,
    exhaustive_cases,
    judge,
    random_cases,
    run_algebra,
    shrink_case,
)
from fencepost.harness.protocol import CompareOk, MergeOk
from fencepost.harness.rules import Rule
from fencepost.impl.cuts import Cut as ImplCut
from fencepost.impl.merge import Withheld
from fencepost.impl.merge import merge as impl_merge
from fencepost.impl.records import Checkpoint as ImplCheckpoint
from fencepost.impl.records import Membership as ImplMembership
from fencepost.judge.values import Checkpoint, Cut, Finality, Membership
from fencepost.mutants import CORRECT, Variant
from fencepost.mutants.decisions import epoch_blind
from fencepost.sut.adapter import InProcessSut


def merge_case(order_name: str, *cuts: Cut) -> MergeCase:
    order = OFFSETS if order_name == "offsets" else MILLIS
    names = [chr(ord("A") + i) for i in range(len(cuts))]
    membership = Membership(1, "q1", {n: order.name for n in names}, {order.name: order})
    return MergeCase(
        membership,
        tuple(Checkpoint(n, c, None, 1, "q1", 1) for n, c in zip(names, cuts, strict=True)),
    )


def test_an_equivalent_representation_is_accepted_as_the_same_claim() -> None:
    case = merge_case("offsets", Cut.through(4), Cut.through(9))
    assert judge(case, MergeOk(1, Cut.through(4), None)) is None
    assert judge(case, MergeOk(1, Cut.before(5), None)) == "equivalent"


def test_a_different_claim_is_reported_with_both_cuts() -> None:
    # Without an exact successor, before 5 claims more than through 4.
    case = merge_case("millis", Cut.through(4), Cut.through(9))
    verdict = judge(case, MergeOk(1, Cut.before(5), None))
    assert isinstance(verdict, tuple) and verdict[0] is Rule.ALGEBRA_MERGE
    assert "expected frontier through 4, got before 5" in verdict[1]


def test_withheld_reasons_must_match_and_compare_results_too() -> None:
    case = MergeCase(merge_case("offsets", Cut.through(1)).membership, ())
    verdict = judge(case, MergeOk(1, None, "no_coverage"))
    assert isinstance(verdict, tuple) and "expected withheld missing_checkpoint" in verdict[1]
    compare = CompareCase(OFFSETS, Cut.through(4), Cut.before(5))
    assert judge(compare, CompareOk(1, 0)) is None
    assert isinstance(judge(compare, CompareOk(1, -1)), tuple)
    assert isinstance(
        judge(CompareCase(MILLIS, Cut.through(4), Cut.before(5)), CompareOk(1, 0)), tuple
    )


def test_the_correct_sut_answers_every_small_case() -> None:
    cases = exhaustive_cases()
    assert len(cases) > 200
    result = run_algebra(InProcessSut(CORRECT), cases)
    assert result.ok, result.violations
    assert result.cases_run == len(cases)
    assert result.messages == 2 * len(cases) + 2 + 1  # cases, hello, shutdown


def test_random_batches_are_reproducible() -> None:
    assert random_cases(5) == random_cases(5)
    assert random_cases(5) != random_cases(6)


def scope_first(
    membership: ImplMembership, checkpoints: Sequence[ImplCheckpoint]
) -> ImplCut | Withheld:
    """A merge that ignores epochs when some scope is also wrong (for the test below)."""
    if any(c.scope != membership.scope for c in checkpoints):
        return epoch_blind(membership, checkpoints)
    return impl_merge(membership, checkpoints)


def test_a_failing_merge_case_shrinks_to_the_members_that_matter() -> None:
    order = OFFSETS
    membership = Membership(2, "q1", {p: "offsets" for p in "ABCD"}, {"offsets": order})
    case = MergeCase(
        membership,
        (
            Checkpoint("A", Cut.through(1), None, 1, "q1", 1),  # wrong epoch
            Checkpoint("B", Cut.through(1), None, 1, "q0", 2),  # wrong scope
            Checkpoint("C", Cut.through(5), None, 1, "q1", 2),
            Checkpoint("D", Cut.through(5), None, 1, "q1", 2, Finality.FINAL),
        ),
    )
    factory = InProcessSut(Variant(merge=scope_first))
    first = run_algebra(factory, [case])
    assert first.violations and first.violations[0].rule is Rule.ALGEBRA_MERGE
    smaller, result, runs = shrink_case(factory, case, Rule.ALGEBRA_MERGE)
    assert isinstance(smaller, MergeCase)
    assert sorted(smaller.membership.partitions) == ["A", "B"]
    assert not result.ok and runs > 1
