"""The foundation issue's known bugs, applied to the production implementation.

Each :class:`ImplMutant` is the same bug as the model's mutant of the same
name (:data:`fencepost.model.mutants.MUTANTS`), planted into
:class:`~fencepost.impl.publisher.Publisher` or
:class:`~fencepost.impl.reader.PartitionReader` by *subclassing* here, never
by editing ``fencepost.impl``: production code paths stay untouched and the
refinement check (:mod:`fencepost.properties.refinement`) runs these
subclasses in place of the originals to show it catches each one.

The seams used are the classes' own overridable steps:
``Publisher._decide`` (what to do given fresh reads), the publisher's
``store`` attribute (the calls it makes), ``PartitionReader._fetch`` (what a
page says) and ``PartitionReader._certify`` (how a checkpoint is written).

``shows_as`` names the findings of the refinement check that expose the bug:
a section-7 invariant broken on the implementation's durable state, or the
mismatch category where the implementation first leaves the model's
behaviour (see :mod:`fencepost.properties.refinement`).
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Sequence
from dataclasses import dataclass

from fencepost.impl.cuts import Cut, Endpoint
from fencepost.impl.orders import Coordinate, Order
from fencepost.impl.provider import Claim, Page
from fencepost.impl.publisher import Policy, Publisher, PublisherStore, _Propose, _Stop, decide
from fencepost.impl.reader import PartitionReader
from fencepost.impl.records import Checkpoint, Finality, Membership, PublicationRecord
from fencepost.impl.stores import (
    CheckpointApplied,
    IndefiniteStoreError,
    PublicationWrite,
)
from fencepost.model.mutants import MUTANTS
from fencepost.mutants.bugs import BlindSuccessMixin, StaleCutRetryMixin

# --- merge-side bugs: the publisher's decision sees a bent vector ----------------------


def _order_of(membership: Membership) -> Order | None:
    names = sorted(membership.partitions)
    return membership.order_of(names[0]) if names else None


def _with_cuts(checkpoints: Sequence[Checkpoint], cuts: Sequence[Cut]) -> list[Checkpoint]:
    return [dataclasses.replace(c, cut=cut) for c, cut in zip(checkpoints, cuts, strict=True)]


class RelabelPublisher(Publisher):
    """relabel: the smallest coordinate, labelled ``through`` when any partition certified it so."""

    def _decide(
        self, record: PublicationRecord, membership: Membership, checkpoints: Sequence[Checkpoint]
    ) -> _Propose | _Stop:
        order = _order_of(membership)
        cuts = [c.cut for c in checkpoints]
        coordinates = [c.at for c in cuts if c.at is not None]
        if order is not None and cuts and len(coordinates) == len(cuts):
            low = coordinates[0]
            for at in coordinates[1:]:
                if order.compare(at, low) < 0:
                    low = at
            kind = (
                Endpoint.THROUGH
                if any(c.endpoint is Endpoint.THROUGH and c.at == low for c in cuts)
                else Endpoint.BEFORE
            )
            checkpoints = _with_cuts(checkpoints, [Cut(kind, low)] * len(cuts))
        return decide(record, membership, checkpoints, self.policy)


class SkipMissingPublisher(Publisher):
    """skip-missing: members without a checkpoint are left out of the minimum."""

    def _decide(
        self, record: PublicationRecord, membership: Membership, checkpoints: Sequence[Checkpoint]
    ) -> _Propose | _Stop:
        present = {c.partition for c in checkpoints}
        reporting = Membership(
            membership.epoch,
            membership.scope,
            {p: o for p, o in membership.partitions.items() if p in present},
            membership.orders,
        )
        return decide(record, reporting, checkpoints, self.policy)


def _bump(at: Coordinate) -> Coordinate:
    """A manufactured 'next' coordinate: +1, or the last character incremented."""
    if isinstance(at, int):
        return at + 1
    return at[:-1] + chr(ord(at[-1]) + 1) if at else "\x00"


class EpsilonPublisher(Publisher):
    """epsilon: ``through x`` normalised to ``before x+1`` on an order without a successor."""

    def _decide(
        self, record: PublicationRecord, membership: Membership, checkpoints: Sequence[Checkpoint]
    ) -> _Propose | _Stop:
        order = _order_of(membership)
        if order is not None and not order.has_successor:
            cuts = [
                Cut.before(_bump(c.cut.at))
                if c.cut.endpoint is Endpoint.THROUGH and c.cut.at is not None
                else c.cut
                for c in checkpoints
            ]
            checkpoints = _with_cuts(checkpoints, cuts)
        return decide(record, membership, checkpoints, self.policy)


class EpochBlindPublisher(Publisher):
    """epoch-blind: a member without a checkpoint in this epoch keeps its newest one seen.

    The publisher remembers every checkpoint it ever read, keyed by partition
    only, and stamps a remembered older-epoch checkpoint with the current
    epoch, so the merge's epoch check cannot see it.
    """

    def __init__(
        self,
        store: PublisherStore,
        stream: str,
        worker: str,
        policy: Policy = Policy.MONOTONE,
        max_retries: int = 3,
        log: logging.Logger | None = None,
    ) -> None:
        super().__init__(store, stream, worker, policy, max_retries, log)
        self._seen: dict[str, Checkpoint] = {}

    def _decide(
        self, record: PublicationRecord, membership: Membership, checkpoints: Sequence[Checkpoint]
    ) -> _Propose | _Stop:
        for c in checkpoints:
            self._seen[c.partition] = c
        vector = [
            dataclasses.replace(self._seen[p], epoch=membership.epoch)
            for p in sorted(membership.partitions)
            if p in self._seen
        ]
        return decide(record, membership, vector, self.policy)


class ProvisionalOkPublisher(Publisher):
    """provisional-ok (merge half): provisional checkpoints are merged as if final."""

    def _decide(
        self, record: PublicationRecord, membership: Membership, checkpoints: Sequence[Checkpoint]
    ) -> _Propose | _Stop:
        final = [dataclasses.replace(c, finality=Finality.FINAL) for c in checkpoints]
        return decide(record, membership, final, self.policy)


class CutoverRegressPublisher(Publisher):
    """cutover-regress: under ``monotone`` the record cuts over to a lower new-epoch cut."""

    def _decide(
        self, record: PublicationRecord, membership: Membership, checkpoints: Sequence[Checkpoint]
    ) -> _Propose | _Stop:
        return decide(record, membership, checkpoints, Policy.RESET)


# --- write-side bugs: the publisher's view of its own writes ------------------------------


class _StoreProxy:
    """Passes the publisher's calls through to its store, except ``write_publication``."""

    def __init__(self, inner: PublisherStore) -> None:
        self.inner = inner

    def read_publication(self, stream: str) -> PublicationRecord:
        return self.inner.read_publication(stream)

    def read_membership(self, stream: str, epoch: int | None = None) -> Membership:
        return self.inner.read_membership(stream, epoch)

    def read_checkpoints(self, stream: str, epoch: int) -> Sequence[Checkpoint]:
        return self.inner.read_checkpoints(stream, epoch)

    def write_publication(
        self, stream: str, expected_revision: int, epoch: int, cut: Cut, op_id: str
    ) -> PublicationWrite:
        return self.inner.write_publication(stream, expected_revision, epoch, cut, op_id)


class _BlindStore(BlindSuccessMixin, _StoreProxy):
    """The pass-through store with :class:`~fencepost.mutants.bugs.BlindSuccessMixin`."""


class _StaleRetryStore(StaleCutRetryMixin, _StoreProxy):
    """The pass-through store with :class:`~fencepost.mutants.bugs.StaleCutRetryMixin`."""


class BlindSuccessPublisher(Publisher):
    """blind-success: a lost write response is taken as success (``published``)."""

    def __init__(
        self,
        store: PublisherStore,
        stream: str,
        worker: str,
        policy: Policy = Policy.MONOTONE,
        max_retries: int = 3,
        log: logging.Logger | None = None,
    ) -> None:
        super().__init__(_BlindStore(store), stream, worker, policy, max_retries, log)


class StaleCutRetryPublisher(Publisher):
    """stale-cut-retry: after a conflict the old cut is written again on the new revision."""

    def __init__(
        self,
        store: PublisherStore,
        stream: str,
        worker: str,
        policy: Policy = Policy.MONOTONE,
        max_retries: int = 3,
        log: logging.Logger | None = None,
    ) -> None:
        super().__init__(_StaleRetryStore(store), stream, worker, policy, max_retries, log)


# --- ingest-side bugs ------------------------------------------------------------------


class MaxObservedReader(PartitionReader):
    """max-observed: certifies ``through`` the largest event observed, ignoring the claim."""

    def _fetch(self, token: str | None) -> Page:
        page = super()._fetch(token)
        if not page.events:
            return dataclasses.replace(page, claim=None)
        top = page.events[0].at
        for event in page.events[1:]:
            if self.order.compare(event.at, top) > 0:
                top = event.at
        return dataclasses.replace(page, claim=Claim(Cut.through(top), True))


class ProvisionalOkReader(PartitionReader):
    """provisional-ok (ingest half): a provider's non-final claim is certified as final."""

    def _fetch(self, token: str | None) -> Page:
        page = super()._fetch(token)
        if page.claim is not None and not page.claim.final:
            return dataclasses.replace(page, claim=Claim(page.claim.cut, True))
        return page


class OverwriteReader(PartitionReader):
    """overwrite: a write that lost its generation race retries on the stored generation.

    It writes its old cut again on top of whatever won, even a stronger
    checkpoint, so a late retry overwrites a newer checkpoint.
    """

    def _certify(self, cut: Cut, token: str | None, stored: Checkpoint | None) -> Checkpoint | None:
        expected = None if stored is None else stored.generation
        kept = super()._certify(cut, token, stored)
        if kept is None or kept.generation == expected or (kept.cut, kept.token) == (cut, token):
            return kept
        again = Checkpoint(
            self.partition, cut, token, kept.generation + 1, self.scope, self.epoch, Finality.FINAL
        )
        try:
            written = self.store.write_checkpoint(self.stream, kept.generation, again)
        except IndefiniteStoreError:
            return self.store.read_checkpoint(self.stream, self.epoch, self.partition)
        return written.checkpoint if isinstance(written, CheckpointApplied) else kept


@dataclass(frozen=True, slots=True)
class ImplMutant:
    """A known bug planted into the implementation by subclassing.

    ``publisher`` / ``reader`` replace the production classes for the run
    (the unchanged originals where the bug lives elsewhere); ``shows_as`` are
    the names of refinement findings that expose it.
    """

    name: str
    publisher: type[Publisher]
    reader: type[PartitionReader]
    shows_as: frozenset[str]

    @property
    def description(self) -> str:
        """The bug in domain words (the model mutant's description)."""
        return MUTANTS[self.name].description


def _mutant(
    name: str,
    shows_as: set[str],
    publisher: type[Publisher] = Publisher,
    reader: type[PartitionReader] = PartitionReader,
) -> ImplMutant:
    if name not in MUTANTS:
        raise ValueError(f"{name!r} is not a model mutant; implementation mutants mirror them")
    return ImplMutant(name, publisher, reader, frozenset(shows_as))


#: name -> mutant, for the foundation issue's list of known bugs.
IMPL_MUTANTS: dict[str, ImplMutant] = {
    m.name: m
    for m in (
        _mutant(
            "relabel",
            {"publisher-decision", "no_relabeling", "soundness"},
            publisher=RelabelPublisher,
        ),
        _mutant(
            "skip-missing",
            {"publisher-decision", "soundness", "no_relabeling"},
            publisher=SkipMissingPublisher,
        ),
        _mutant(
            "max-observed",
            {"reader-certify", "ingest_truth"},
            reader=MaxObservedReader,
        ),
        _mutant(
            "epsilon",
            {"publisher-decision", "soundness"},
            publisher=EpsilonPublisher,
        ),
        _mutant(
            "blind-success",
            {"publisher-settlement", "lost_response_honesty"},
            publisher=BlindSuccessPublisher,
        ),
        _mutant(
            "stale-cut-retry",
            {"publisher-settlement", "monotone_publication"},
            publisher=StaleCutRetryPublisher,
        ),
        _mutant(
            "epoch-blind",
            {"publisher-decision", "soundness"},
            publisher=EpochBlindPublisher,
        ),
        _mutant(
            "provisional-ok",
            {"reader-certify", "ingest_truth"},
            publisher=ProvisionalOkPublisher,
            reader=ProvisionalOkReader,
        ),
        _mutant(
            "overwrite",
            {"reader-certify", "checkpoint_monotonicity"},
            reader=OverwriteReader,
        ),
        _mutant(
            "cutover-regress",
            {"publisher-decision", "monotone_publication"},
            publisher=CutoverRegressPublisher,
        ),
    )
}
