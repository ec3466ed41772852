"""The catalog of known bugs: fencepost's implementation with one bug each, by one name.

The names are the model's (:mod:`fencepost.model.mutants`) wherever the model has
the same bug, so that a bug means one thing in the explorer, the refinement
check, the scenario library and the conformance harness; ``confirm-revision``,
``reason-order`` and ``compare-swap`` exist only on the implementation side.
tests/harness/test_mutants.py shows the harness catches every entry at every
level it names, tests/properties/test_refinement.py that the refinement check
catches every entry that changes a worker, and tests/scenarios that each
``-bad`` scenario catches the entry it names.

Run one as a SUT: ``fencepost sut --mutant NAME``.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Any

from fencepost.mutants import decisions, readers, stores
from fencepost.mutants.variant import Variant

_SUPPORT = frozenset({"soundness", "certified_support", "no_relabeling"})


def _entry(
    name: str, bug: str, source: str, caught_by: dict[str, set[str]], **pieces: Any
) -> Variant:
    return Variant(
        name=name,
        bug=bug,
        source=source,
        caught_by=MappingProxyType({k: frozenset(v) for k, v in caught_by.items()}),
        **pieces,
    )


_ALL: tuple[Variant, ...] = (
    _entry(
        "relabel",
        "the merge labels the minimum 'through x' when some member certified 'through x' "
        "and another only 'before x' (the coordinates matched)",
        "cockroach PR #41665",
        {"algebra": {"algebra_merge"}, "publisher": {"no_relabeling", "soundness"}},
        publisher=decisions.publisher_with(decisions.relabel),
        merge=decisions.relabel,
        shows_as=frozenset({"publisher-decision", "no_relabeling", "soundness"}),
    ),
    _entry(
        "skip-missing",
        "the merge leaves members without a checkpoint out of the minimum instead of "
        "withholding missing_checkpoint",
        "FLINK-40094 / pingcap/tiflow #12598",
        {"algebra": {"algebra_merge"}, "publisher": set(_SUPPORT)},
        publisher=decisions.publisher_with(decisions.skip_missing),
        merge=decisions.skip_missing,
        shows_as=frozenset({"publisher-decision", "soundness", "no_relabeling"}),
    ),
    _entry(
        "max-observed",
        "the ingest pass certifies 'through' the greatest event it observed instead of the "
        "provider's final claim",
        "docs/procedure.md: the greatest event observed is not a coverage boundary",
        {"checkpointer": {"checkpoint_truth"}},
        reader=readers.MaxObservedReader,
        shows_as=frozenset({"reader-certify", "checkpoint_truth"}),
    ),
    _entry(
        "epsilon",
        "the merge normalizes 'through x' to 'before x+1' on an order without an exact "
        "successor (a manufactured successor)",
        "cockroach #82488 / Debezium DBZ-5915",
        {"algebra": {"algebra_merge"}, "publisher": set(_SUPPORT)},
        publisher=decisions.publisher_with(decisions.epsilon),
        merge=decisions.epsilon,
        shows_as=frozenset({"publisher-decision", "soundness"}),
    ),
    _entry(
        "blind-success",
        "a lost write response is taken as success: the attempt reports 'published'",
        "amazon-kinesis-client #108 (inverted)",
        {"publisher": {"lost_response_honesty"}},
        publisher=stores.publisher_over(stores.BlindSuccessMixin),
        shows_as=frozenset({"publisher-settlement", "lost_response_honesty"}),
    ),
    _entry(
        "stale-cut-retry",
        "after a conflict the attempt writes its old cut on the new revision without "
        "rereading the checkpoints or recomputing",
        "apache/beam #36470",
        {"publisher": {"monotone_publication", "epoch_fence"}},
        publisher=stores.publisher_over(stores.StaleCutRetryMixin),
        shows_as=frozenset({"publisher-settlement", "monotone_publication"}),
    ),
    _entry(
        "epoch-blind",
        "the epoch of a checkpoint is never checked: a member keeps the newest checkpoint "
        "read in any epoch",
        "pingcap/tiflow #12598 / Materialize #29432",
        {"algebra": {"algebra_merge"}, "publisher": set(_SUPPORT)},
        publisher=decisions.EpochBlindPublisher,
        merge=decisions.epoch_blind,
        shows_as=frozenset({"publisher-decision", "soundness"}),
    ),
    _entry(
        "provisional-ok",
        "non-final claims are trusted: the ingest pass certifies a provider's non-final "
        "claim and the merge accepts provisional checkpoints",
        "apache/beam #37326",
        {
            "algebra": {"algebra_merge"},
            "publisher": set(_SUPPORT),
            "checkpointer": {"checkpoint_truth"},
        },
        publisher=decisions.publisher_with(decisions.provisional_ok),
        reader=readers.TrustingReader,
        merge=decisions.provisional_ok,
        shows_as=frozenset({"publisher-decision", "reader-certify", "checkpoint_truth"}),
    ),
    _entry(
        "scope-blind",
        "the merge accepts checkpoints certified for another query scope",
        "docs/semantics.md section 4 (scope_mismatch)",
        {"algebra": {"algebra_merge"}, "publisher": set(_SUPPORT)},
        publisher=decisions.publisher_with(decisions.scope_blind),
        merge=decisions.scope_blind,
        # No shows_as: the refinement check's environment plants no checkpoint of
        # another scope, so it cannot see this bug (the harness and the scenarios do).
    ),
    _entry(
        "overwrite",
        "a checkpoint write that lost its generation race is written again on top of the "
        "newer checkpoint: last writer wins",
        "amazon-kinesis-client #537 / cockroach PR #37009",
        {"checkpointer": {"checkpoint_monotonicity"}},
        reader=stores.reader_over(stores.OverwriteMixin),
        shows_as=frozenset({"reader-certify", "checkpoint_monotonicity"}),
    ),
    _entry(
        "cutover-regress",
        "under the monotone policy the record cuts over to a new epoch whose merged cut is "
        "below the current one",
        "pingcap/tiflow #12598",
        {"publisher": {"monotone_publication"}},
        publisher=decisions.CutoverRegressPublisher,
        shows_as=frozenset({"publisher-decision", "monotone_publication"}),
    ),
    _entry(
        "fence-blind",
        "when the reread after a lost write shows a newer epoch, the attempt keeps the "
        "membership it held and retries in the old epoch",
        "KAFKA-20357 / Materialize #29432",
        # Its retry writes the old epoch over the new (epoch fence); when no other
        # publisher cut over first, it reports a decision the membership it was told
        # (the newer epoch) does not give (honest outcome).
        {"publisher": {"epoch_fence", "honest_outcome"}},
        publisher=stores.publisher_over(stores.FenceBlindMixin),
        shows_as=frozenset(
            {"publisher-settlement", "publisher-decision", "publisher-protocol", "epoch_fence"}
        ),
    ),
    _entry(
        "confirm-revision",
        "after a lost write, a moved revision alone is taken as proof that the claim is present",
        "Materialize PR #14003",
        {"publisher": {"lost_response_honesty"}},
        publisher=stores.publisher_over(stores.ConfirmRevisionMixin),
        shows_as=frozenset({"publisher-settlement", "lost_response_honesty"}),
    ),
    _entry(
        "reason-order",
        "the merge checks scope before epoch: with both wrong it reports scope_mismatch",
        "docs/semantics.md section 4 (the order of the reasons)",
        {"algebra": {"algebra_merge"}, "publisher": {"honest_outcome"}},
        publisher=decisions.publisher_with(decisions.reason_order),
        merge=decisions.reason_order,
        # No shows_as: the refinement check's environment plants no checkpoint of
        # another scope, so it cannot see this bug (the harness and the scenarios do).
    ),
    _entry(
        "compare-swap",
        "every comparison of cuts reads 'before' as 'through' and 'through' as 'before'",
        "docs/semantics.md section 2",
        {"algebra": {"algebra_compare"}, "publisher": set(_SUPPORT) | {"monotone_publication"}},
        publisher=decisions.CompareSwapPublisher,
        compare=decisions.compare_swapped,
        shows_as=frozenset({"publisher-decision"}),
    ),
)

#: name -> the implementation with that one bug.
CATALOG: MappingProxyType[str, Variant] = MappingProxyType({v.name: v for v in _ALL})


def variant_named(name: str) -> Variant:
    """The catalog entry ``name``; :class:`KeyError` names the known ones."""
    variant = CATALOG.get(name)
    if variant is None:
        raise KeyError(f"unknown mutant {name!r}; known: {', '.join(sorted(CATALOG))}")
    return variant
