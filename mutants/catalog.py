"""The catalog of known bugs: fencepost's implementation with one bug each, by one name.

The names, bug texts and sources are the vocabulary's
(:data:`fencepost.vocabulary.MUTANTS`), shared with the model
(:mod:`fencepost.model.mutants`) wherever the model has the same bug, so that a
bug means one thing in the explorer, the refinement check, the scenario library
and the conformance harness; the vocabulary marks ``confirm-revision``,
``reason-order`` and ``compare-swap`` as the implementation side's alone.
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
from fencepost.vocabulary.mutants import MUTANTS

_SUPPORT = frozenset({"soundness", "certified_support", "no_relabeling"})


def _entry(name: str, caught_by: dict[str, set[str]], **pieces: Any) -> Variant:
    """The implementation with the bug ``name`` (a key of the vocabulary's MUTANTS, which
    gives its bug text and source; a name it lacks is a KeyError at import)."""
    known = MUTANTS[name]
    return Variant(
        name=name,
        bug=known.bug,
        source=known.source,
        caught_by=MappingProxyType({k: frozenset(v) for k, v in caught_by.items()}),
        **pieces,
    )


_ALL: tuple[Variant, ...] = (
    _entry(
        "relabel",
        {"algebra": {"algebra_merge"}, "publisher": {"no_relabeling", "soundness"}},
        publisher=decisions.publisher_with(decisions.relabel),
        merge=decisions.relabel,
        shows_as=frozenset({"publisher-decision", "no_relabeling", "soundness"}),
    ),
    _entry(
        "skip-missing",
        {"algebra": {"algebra_merge"}, "publisher": set(_SUPPORT)},
        publisher=decisions.publisher_with(decisions.skip_missing),
        merge=decisions.skip_missing,
        shows_as=frozenset({"publisher-decision", "soundness", "no_relabeling"}),
    ),
    _entry(
        "max-observed",
        {"checkpointer": {"checkpoint_truth"}},
        reader=readers.MaxObservedReader,
        shows_as=frozenset({"reader-certify", "checkpoint_truth"}),
    ),
    _entry(
        "epsilon",
        {"algebra": {"algebra_merge"}, "publisher": set(_SUPPORT)},
        publisher=decisions.publisher_with(decisions.epsilon),
        merge=decisions.epsilon,
        shows_as=frozenset({"publisher-decision", "soundness"}),
    ),
    _entry(
        "blind-success",
        {"publisher": {"lost_response_honesty"}},
        publisher=stores.publisher_over(stores.BlindSuccessMixin),
        shows_as=frozenset({"publisher-settlement", "lost_response_honesty"}),
    ),
    _entry(
        "stale-cut-retry",
        {"publisher": {"monotone_publication", "epoch_fence"}},
        publisher=stores.publisher_over(stores.StaleCutRetryMixin),
        shows_as=frozenset({"publisher-settlement", "monotone_publication"}),
    ),
    _entry(
        "epoch-blind",
        {"algebra": {"algebra_merge"}, "publisher": set(_SUPPORT)},
        publisher=decisions.EpochBlindPublisher,
        merge=decisions.epoch_blind,
        shows_as=frozenset({"publisher-decision", "soundness"}),
    ),
    _entry(
        "provisional-ok",
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
        {"algebra": {"algebra_merge"}, "publisher": set(_SUPPORT)},
        publisher=decisions.publisher_with(decisions.scope_blind),
        merge=decisions.scope_blind,
        # No shows_as: the refinement check's environment plants no checkpoint of
        # another scope, so it cannot see this bug (the harness and the scenarios do).
    ),
    _entry(
        "overwrite",
        {"checkpointer": {"checkpoint_monotonicity"}},
        reader=stores.reader_over(stores.OverwriteMixin),
        shows_as=frozenset({"reader-certify", "checkpoint_monotonicity"}),
    ),
    _entry(
        "cutover-regress",
        {"publisher": {"monotone_publication"}},
        publisher=decisions.CutoverRegressPublisher,
        shows_as=frozenset({"publisher-decision", "monotone_publication"}),
    ),
    _entry(
        "fence-blind",
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
        {"publisher": {"lost_response_honesty"}},
        publisher=stores.publisher_over(stores.ConfirmRevisionMixin),
        shows_as=frozenset({"publisher-settlement", "lost_response_honesty"}),
    ),
    _entry(
        "reason-order",
        {"algebra": {"algebra_merge"}, "publisher": {"honest_outcome"}},
        publisher=decisions.publisher_with(decisions.reason_order),
        merge=decisions.reason_order,
        # No shows_as: the refinement check's environment plants no checkpoint of
        # another scope, so it cannot see this bug (the harness and the scenarios do).
    ),
    _entry(
        "compare-swap",
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
