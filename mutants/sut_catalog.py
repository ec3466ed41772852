"""The mutant catalog: fencepost's own SUT with one known bug each.

Every mutant is the real implementation (:class:`~fencepost.impl.publisher.Publisher`,
:class:`~fencepost.impl.reader.PartitionReader`, the cut algebra) with one piece
swapped through :class:`~fencepost.sut.adapter.Variant`: a subclass of a
wire store or provider adapter, a :class:`~fencepost.sut.adapter.Misreading`
of the checkpoint vector, a compare function, or an overridden policy. None
copies implementation code. Each models a bug from the field (docs/field-bugs.md)
or a misreading of the procedure.

:data:`CATALOG` maps each name to its :class:`Mutant`, which also says at
which level the harness must catch it and which rules count as catching it
(the test suite checks the harness catches 100% of them, each for the
expected reason, and raises nothing on the correct SUT).

Run one as a SUT: ``fencepost sut --mutant NAME`` or
``python -m fencepost.sut NAME``.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from fencepost.harness.rules import Rule
from fencepost.impl.cuts import Cut, Endpoint, compare_cuts
from fencepost.impl.merge import Withheld
from fencepost.impl.orders import Coordinate, Order
from fencepost.impl.provider import Claim, Page
from fencepost.impl.publisher import Policy
from fencepost.impl.records import Checkpoint, Finality, Membership
from fencepost.mutants.bugs import (
    BlindSuccessMixin,
    ConfirmRevisionMixin,
    FenceBlindMixin,
    OverwriteMixin,
    StaleCutRetryMixin,
    TrustingMixin,
)
from fencepost.sut.adapter import (
    Misreading,
    PublisherWireStore,
    ReaderWireStore,
    Variant,
    WireCaller,
    WireProvider,
)

# --- merge misreadings ------------------------------------------------------------------


class Relabel(Misreading):
    """``before x`` becomes ``through x`` when another member certified ``through x``
    (the coordinates match, so "it is the same boundary"; cockroach PR #41665)."""

    def frontier(
        self, membership: Membership, checkpoints: Sequence[Checkpoint], result: Cut | Withheld
    ) -> Cut | Withheld:
        if (
            isinstance(result, Cut)
            and result.at is not None
            and result.endpoint is Endpoint.BEFORE
            and any(
                c.cut.endpoint is Endpoint.THROUGH and c.cut.at == result.at for c in checkpoints
            )
        ):
            return Cut.through(result.at)
        return result


class SkipMissing(Misreading):
    """A member without a checkpoint is treated as idle and skipped: the minimum is
    taken over the members that have one (FLINK PR #27066)."""

    def checkpoints(
        self, membership: Membership, checkpoints: Sequence[Checkpoint]
    ) -> tuple[Checkpoint, ...]:
        present = {c.partition: c for c in checkpoints}
        filled = list(checkpoints)
        for name, order_name in membership.partitions.items():
            if name in present:
                continue
            order = membership.orders[order_name]
            peers = [
                c
                for c in checkpoints
                if c.partition in membership.partitions
                and membership.partitions[c.partition] == order_name
            ]
            if peers:
                strongest = max(peers, key=_by_cut(order))
                filled.append(dataclasses.replace(strongest, partition=name))
        return tuple(filled)


def _by_cut(order: Order) -> Callable[[Checkpoint], Any]:
    return functools.cmp_to_key(lambda x, y: compare_cuts(order, x.cut, y.cut))


class EpochBlind(Misreading):
    """Every checkpoint is read as the current epoch's: an old epoch's checkpoint
    pins the new epoch's frontier (Materialize #29432's family)."""

    def checkpoints(
        self, membership: Membership, checkpoints: Sequence[Checkpoint]
    ) -> tuple[Checkpoint, ...]:
        return tuple(dataclasses.replace(c, epoch=membership.epoch) for c in checkpoints)


class ProvisionalOk(Misreading):
    """A provisional checkpoint is trusted as final ("caught up at this moment")."""

    def checkpoints(
        self, membership: Membership, checkpoints: Sequence[Checkpoint]
    ) -> tuple[Checkpoint, ...]:
        return tuple(dataclasses.replace(c, finality=Finality.FINAL) for c in checkpoints)


class ScopeBlind(Misreading):
    """A checkpoint certified for another query scope is read as this membership's
    (docs/semantics.md section 4, ``scope_mismatch`` never raised)."""

    def checkpoints(
        self, membership: Membership, checkpoints: Sequence[Checkpoint]
    ) -> tuple[Checkpoint, ...]:
        return tuple(dataclasses.replace(c, scope=membership.scope) for c in checkpoints)


class ReasonOrder(Misreading):
    """Scope is checked before epoch: with both wrong, ``scope_mismatch`` is reported
    where the documented order says ``epoch_mismatch``."""

    def checkpoints(
        self, membership: Membership, checkpoints: Sequence[Checkpoint]
    ) -> tuple[Checkpoint, ...]:
        wrong_scope = any(
            c.partition in membership.partitions and c.scope != membership.scope
            for c in checkpoints
        )
        if not wrong_scope:
            return tuple(checkpoints)
        return tuple(dataclasses.replace(c, epoch=membership.epoch) for c in checkpoints)


# --- publisher store bugs (behaviour in fencepost.mutants.bugs) ------------------------


class BlindSuccessStore(BlindSuccessMixin, PublisherWireStore):
    """The wire publisher store with :class:`~fencepost.mutants.bugs.BlindSuccessMixin`."""


class ConfirmRevisionStore(ConfirmRevisionMixin, PublisherWireStore):
    """The wire publisher store with :class:`~fencepost.mutants.bugs.ConfirmRevisionMixin`."""


class FenceBlindStore(FenceBlindMixin, PublisherWireStore):
    """The wire publisher store with :class:`~fencepost.mutants.bugs.FenceBlindMixin`."""


class StaleCutRetryStore(StaleCutRetryMixin, PublisherWireStore):
    """The wire publisher store with :class:`~fencepost.mutants.bugs.StaleCutRetryMixin`."""


# --- reader bugs --------------------------------------------------------------------------


class OverwriteStore(OverwriteMixin, ReaderWireStore):
    """The wire reader store with :class:`~fencepost.mutants.bugs.OverwriteMixin`."""


class MaxObservedProvider(WireProvider):
    """The greatest event seen is taken as coverage: every page claims (final)
    ``through`` the highest position observed in the pass."""

    def __init__(self, caller: WireCaller, order: Order) -> None:
        super().__init__(caller, order)
        self._seen: Coordinate | None = None

    def fetch_page(self, partition: str, token: str | None) -> Page:
        page = super().fetch_page(partition, token)
        for event in page.events:
            if self._seen is None or self.order.compare(event.at, self._seen) > 0:
                self._seen = event.at
        if self._seen is None:
            return page
        return Page(page.events, page.next_token, Claim(Cut.through(self._seen), True))


class TrustingProvider(TrustingMixin, WireProvider):
    """The wire provider with :class:`~fencepost.mutants.bugs.TrustingMixin`."""


class EpsilonProvider(WireProvider):
    """An exclusive boundary is manufactured by adding one: a final ``through x`` is
    stored as ``before x+1`` even where the order has no exact successor."""

    def fetch_page(self, partition: str, token: str | None) -> Page:
        page = super().fetch_page(partition, token)
        claim = page.claim
        if (
            claim is not None
            and claim.cut.endpoint is Endpoint.THROUGH
            and isinstance(claim.cut.at, int)
        ):
            manufactured = Claim(Cut.before(claim.cut.at + 1), claim.final)
            return Page(page.events, page.next_token, manufactured)
        return page


# --- algebra ------------------------------------------------------------------------------


def _swapped(cut: Cut) -> Cut:
    if cut.endpoint is Endpoint.BEFORE:
        return Cut(Endpoint.THROUGH, cut.at)
    if cut.endpoint is Endpoint.THROUGH:
        return Cut(Endpoint.BEFORE, cut.at)
    return cut


def compare_swapped(order: Order, a: Cut, b: Cut) -> int:
    """compare with before and through read the wrong way round."""
    return compare_cuts(order, _swapped(a), _swapped(b))


# --- the catalog --------------------------------------------------------------------------


@dataclass(frozen=True)
class Mutant:
    """One known bug: the variant that has it and how the harness must catch it.

    ``caught_by`` maps a protocol level to the rules that count as catching the
    mutant when only that level is tested.
    """

    name: str
    bug: str
    variant: Variant
    caught_by: dict[str, frozenset[Rule]]


def _mutant(name: str, bug: str, caught_by: dict[str, set[Rule]], **pieces: object) -> Mutant:
    variant = Variant(name=f"fencepost-mutant-{name}", **pieces)  # type: ignore[arg-type]
    return Mutant(name, bug, variant, {k: frozenset(v) for k, v in caught_by.items()})


_SUPPORT = {Rule.SOUNDNESS, Rule.CERTIFIED_SUPPORT, Rule.NO_RELABELING}

CATALOG: dict[str, Mutant] = {
    m.name: m
    for m in (
        _mutant(
            "relabel",
            "publishes through x where the minimum is before x",
            {"algebra": {Rule.ALGEBRA_MERGE}, "publisher": {Rule.NO_RELABELING, Rule.SOUNDNESS}},
            misreading=Relabel(),
        ),
        _mutant(
            "skip-missing",
            "skips members without a checkpoint instead of withholding",
            {"algebra": {Rule.ALGEBRA_MERGE}, "publisher": _SUPPORT},
            misreading=SkipMissing(),
        ),
        _mutant(
            "max-observed",
            "certifies the greatest event observed as coverage",
            {"checkpointer": {Rule.CHECKPOINT_TRUTH}},
            provider=MaxObservedProvider,
        ),
        _mutant(
            "epsilon",
            "manufactures before x+1 from through x without an exact successor",
            {"checkpointer": {Rule.CHECKPOINT_TRUTH}},
            provider=EpsilonProvider,
        ),
        _mutant(
            "blind-success",
            "reports published when the write response was lost",
            {"publisher": {Rule.LOST_RESPONSE_HONESTY}},
            publisher_store=BlindSuccessStore,
        ),
        _mutant(
            "stale-cut-retry",
            "retries a conflicting write with the old cut without recomputing",
            {"publisher": {Rule.MONOTONE_PUBLICATION, Rule.EPOCH_FENCE}},
            publisher_store=StaleCutRetryStore,
        ),
        _mutant(
            "epoch-blind",
            "reads every checkpoint as the current epoch's",
            {"algebra": {Rule.ALGEBRA_MERGE}, "publisher": _SUPPORT},
            misreading=EpochBlind(),
        ),
        _mutant(
            "provisional-ok",
            "trusts provisional checkpoints and non-final claims as final",
            {
                "algebra": {Rule.ALGEBRA_MERGE},
                "publisher": _SUPPORT,
                "checkpointer": {Rule.CHECKPOINT_TRUTH},
            },
            # One bug seen at two places, as the model's mutant: the merge trusts a
            # provisional checkpoint, the ingest pass a non-final claim.
            misreading=ProvisionalOk(),
            provider=TrustingProvider,
        ),
        _mutant(
            "overwrite",
            "a losing checkpoint write overwrites the newer checkpoint",
            {"checkpointer": {Rule.CHECKPOINT_MONOTONICITY}},
            reader_store=OverwriteStore,
        ),
        _mutant(
            "cutover-regress",
            "moves to a new epoch with a lower cut under the monotone policy",
            {"publisher": {Rule.MONOTONE_PUBLICATION}},
            policy=Policy.RESET,
        ),
        _mutant(
            "confirm-revision",
            "confirms a lost write because the revision moved",
            {"publisher": {Rule.LOST_RESPONSE_HONESTY}},
            publisher_store=ConfirmRevisionStore,
        ),
        _mutant(
            "scope-blind",
            "accepts checkpoints certified for another query scope",
            {"algebra": {Rule.ALGEBRA_MERGE}, "publisher": _SUPPORT},
            misreading=ScopeBlind(),
        ),
        _mutant(
            "fence-blind",
            "after a lost write shows a newer epoch, retries in the epoch it held",
            # Its retry writes the old epoch over the new (epoch fence); when no other
            # publisher cut over first, it reports a decision the membership it was
            # told (the newer epoch) does not give (honest outcome).
            {"publisher": {Rule.EPOCH_FENCE, Rule.HONEST_OUTCOME}},
            publisher_store=FenceBlindStore,
        ),
        _mutant(
            "reason-order",
            "checks scope before epoch when withholding",
            {"algebra": {Rule.ALGEBRA_MERGE}},
            misreading=ReasonOrder(),
        ),
        _mutant(
            "compare-swap",
            "compare reads before as through and through as before",
            {"algebra": {Rule.ALGEBRA_COMPARE}},
            compare=compare_swapped,
        ),
    )
}


def variant_of(name: str) -> Variant:
    """The variant of mutant ``name``; :class:`KeyError` lists the known names."""
    mutant = CATALOG.get(name)
    if mutant is None:
        raise KeyError(f"unknown mutant {name!r}; known: {', '.join(sorted(CATALOG))}")
    return mutant.variant
