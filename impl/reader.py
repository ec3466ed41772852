"""The partition reader: turns a provider's pages into durable outcomes and true checkpoints.

One :class:`PartitionReader` drives one partition of one membership epoch
(docs/semantics.md section 3). A pass reads the stored checkpoint, fetches pages
from the checkpoint's token, hands every event to the user's handler and
records the terminal outcome it returns, and writes a new checkpoint only when
the provider made a *final* claim ahead of the stored cut. By then every event
enumerated so far, in particular every event of the claim's downset, has a
durable outcome, because outcomes are recorded page by page before the page's
claim is looked at. So a stored checkpoint is always true.

What the reader never does:

- certify the largest event observed or the token as coverage;
- certify a non-final claim;
- build ``before succ(x)`` from ``through x`` (it stores the claim's cut as made);
- overwrite a newer checkpoint: every write is conditional on the generation
  it read, and a write that loses rereads and only writes again if its own
  claim is still strictly ahead of what is stored (checkpoint monotonicity).

Pages may be empty, may repeat earlier events, and may arrive after a retry:
outcomes are keyed by event id and the first durable one wins. Delivery to the
handler is at-least-once across passes (a crash between handling and recording
replays the event), so the handler must be idempotent.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Protocol, TypeVar

from fencepost.impl.cuts import NOTHING, Cut, compare_cuts
from fencepost.impl.orders import Order
from fencepost.impl.provider import Event, Page, Provider, ProviderTimeout
from fencepost.impl.records import Checkpoint, Finality
from fencepost.impl.stores import (
    CheckpointApplied,
    CheckpointStore,
    CheckpointWrite,
    IndefiniteStoreError,
    OutcomeStore,
)

T = TypeVar("T")

_LOG = logging.getLogger("fencepost.reader")


class IngestStore(CheckpointStore, OutcomeStore, Protocol):
    """The store calls a partition reader makes (the conformance checkpointer level)."""


def own_checkpoint(
    checkpoint: Checkpoint | None, partition: str, epoch: int, scope: str
) -> Checkpoint | None:
    """``checkpoint`` if it is a reader's own: final, of this partition, epoch and scope.

    Anything else stored under the key is a misconfiguration (docs/semantics.md
    section 8): it claims no coverage and gives no resume position.
    """
    if (
        checkpoint is None
        or checkpoint.partition != partition
        or checkpoint.epoch != epoch
        or checkpoint.scope != scope
        or checkpoint.finality is not Finality.FINAL
    ):
        return None
    return checkpoint


@dataclass(frozen=True, slots=True)
class Settled:
    """A checkpoint write is settled: ``checkpoint`` is what is stored now (it stays)."""

    checkpoint: Checkpoint
    decision: str

    @property
    def cut(self) -> Cut:
        return self.checkpoint.cut

    @property
    def generation(self) -> int:
        return self.checkpoint.generation


@dataclass(frozen=True, slots=True)
class Rewrite:
    """The claim is still strictly ahead of what is stored: write it again on ``expected``."""

    expected: int | None
    decision: str
    cut: Cut

    @property
    def generation(self) -> int | None:
        return self.expected


def settle_write(
    order: Order,
    candidate: Checkpoint,
    expected: int | None,
    result: CheckpointWrite | None,
    reread: Checkpoint | None,
) -> Settled | Rewrite:
    """What one conditional checkpoint write of ``candidate`` on ``expected`` came to.

    ``result`` is the store's answer, or None when the response was lost; then
    ``reread`` is the checkpoint an authoritative reread found. The rule,
    shared by :class:`PartitionReader` and the batching
    :class:`~fencepost.impl.multi_reader.MultiPartitionReader`:

    - applied (acknowledged, or the reread shows ``candidate`` itself): settled;
    - lost and the generation is still ``expected``: not applied, write again;
    - otherwise another writer moved the checkpoint: what is stored now stays
      if it is the writer's own kind (:func:`own_checkpoint`: a misconfigured
      one claims nothing) and claims at least the candidate's cut (never
      overwrite a claim at least as strong); else the candidate, still a true
      claim strictly ahead, is written again on the generation just read.

    Cost: O(1).
    """
    cut = candidate.cut
    current: Checkpoint | None
    if result is None:
        current = reread
        if current == candidate:
            return Settled(candidate, "written_after_lost_response")
        if (None if current is None else current.generation) == expected:
            return Rewrite(expected, "write_not_applied", cut)
    elif isinstance(result, CheckpointApplied):
        return Settled(result.checkpoint, "written")
    else:
        current = result.checkpoint
    kept = own_checkpoint(current, candidate.partition, candidate.epoch, candidate.scope)
    if kept is not None and compare_cuts(order, kept.cut, cut) >= 0:
        return Settled(kept, "kept_newer_checkpoint")
    return Rewrite(
        None if current is None else current.generation, "rewrite_on_newer_generation", cut
    )


class PartitionReader:
    """Ingest one partition of one epoch into ``store``, certifying only true cuts.

    ``handle`` maps each event to its terminal outcome (a non-empty string);
    it is called once per event id per pass and must be idempotent across
    passes. ``max_retries`` bounds how often one store call or fetch is
    retried after a lost response before the pass gives up by raising.
    """

    def __init__(
        self,
        store: IngestStore,
        provider: Provider,
        stream: str,
        partition: str,
        epoch: int,
        scope: str,
        order: Order,
        handle: Callable[[Event], str],
        *,
        max_retries: int = 3,
        save_progress: bool = True,
        log: logging.Logger | None = None,
    ) -> None:
        if type(max_retries) is not int or max_retries < 0:
            raise ValueError(f"max_retries must be a non-negative int, got {max_retries!r}")
        self.store = store
        self.provider = provider
        self.stream = stream
        self.partition = partition
        self.epoch = epoch
        self.scope = scope
        self.order = order
        self.handle = handle
        self.max_retries = max_retries
        self.log = log if log is not None else _LOG
        self.save_progress = save_progress
        self._position: tuple[int | None, str | None] | None = None
        #: Events handled and recorded by the last pass (distinct ids).
        self.last_pass_events = 0
        #: Pages fetched by the last pass.
        self.last_pass_pages = 0

    def run_pass(self, max_pages: int | None = None) -> Cut:
        """One ingest pass; returns the cut certified for this partition when it ends.

        Fetches until the provider has no next page or ``max_pages`` pages
        were read. A pass continues where this reader's previous pass stopped
        when nobody else wrote the checkpoint since, else from the stored
        token. With ``save_progress`` the token reached is stored at the end of
        the pass (same cut, new token), so a restart does not refetch pages
        whose events already have durable outcomes. Raises the store's or
        provider's error when a call keeps failing past the retry budget:
        everything certified before stays.
        """
        stored = self._retry(self._read_checkpoint)
        own = self._trusted(stored)
        certified = NOTHING if own is None else own.cut
        token = None if own is None else own.token
        if self._position is not None:
            generation_then, token_then = self._position
            if generation_then == (None if stored is None else stored.generation):
                token = token_then
        handled: set[str] = set()
        self.last_pass_events = 0
        self.last_pass_pages = 0
        while max_pages is None or self.last_pass_pages < max_pages:
            page = self._retry(partial(self._fetch, token))
            self.last_pass_pages += 1
            for i, event in enumerate(page.events):  # refuse a bad page before acting on it
                self.order.validate(event.at, f"page.events[{i}].at")
            for event in page.events:
                if event.id in handled:
                    continue
                outcome = self.handle(event)
                self._retry(partial(self._record, event, outcome))
                handled.add(event.id)
                self.last_pass_events += 1
            # Every event up to here has a durable outcome: resuming after this page
            # loses nothing. With no next page, refetch this page next time.
            resume = page.next_token if page.next_token is not None else token
            claim = page.claim
            if claim is not None and claim.final:
                cut = claim.cut.validated(self.order, "page.claim.cut")
                if compare_cuts(self.order, cut, certified) > 0:
                    stored = self._certify(cut, resume, stored)
                    certified = NOTHING if (own := self._trusted(stored)) is None else own.cut
            token = resume
            if page.next_token is None:
                break
        if self.save_progress and token is not None and (stored is None or stored.token != token):
            stored = self._certify(certified, token, stored)
            certified = NOTHING if (own := self._trusted(stored)) is None else own.cut
        self._position = (None if stored is None else stored.generation, token)
        return certified

    def _trusted(self, checkpoint: Checkpoint | None) -> Checkpoint | None:
        """``checkpoint`` if it is this pass's own: final, of this partition, epoch and scope.

        Anything else stored under this key is a misconfiguration (docs/semantics.md
        section 8): no coverage and no resume position. The pass starts from the
        beginning and its first write replaces it, conditional on its generation.
        """
        return own_checkpoint(checkpoint, self.partition, self.epoch, self.scope)

    # --- store and provider calls --------------------------------------------------

    def _read_checkpoint(self) -> Checkpoint | None:
        return self.store.read_checkpoint(self.stream, self.epoch, self.partition)

    def _fetch(self, token: str | None) -> Page:
        page = self.provider.fetch_page(self.partition, token)
        if not isinstance(page, Page):
            raise TypeError(f"provider.fetch_page returned {type(page).__name__}, not a Page")
        return page

    def _record(self, event: Event, outcome: str) -> str:
        return self.store.record_outcome(self.stream, event.id, outcome)

    def _retry(self, call: Callable[[], T]) -> T:
        """Retry a read or an idempotent write after a lost response, within budget."""
        for attempt in range(self.max_retries + 1):
            try:
                return call()
            except (IndefiniteStoreError, ProviderTimeout):
                if attempt == self.max_retries:
                    raise
                self._log("retry_after_lost_response", attempt=attempt + 1)
        raise AssertionError("unreachable")  # pragma: no cover

    def _certify(self, cut: Cut, token: str | None, stored: Checkpoint | None) -> Checkpoint | None:
        """Write ``cut`` and ``token`` on top of ``stored``; returns what is stored afterwards.

        The write is conditional on ``stored``'s generation. A conflict means
        another writer moved the checkpoint: if what is stored now claims at
        least ``cut`` it stays untouched; if ``cut`` is still strictly ahead it
        is written again on top of the generation just read (a true claim, and
        the stored cut still only grows). A lost response is settled by an
        authoritative reread, never assumed either way (:func:`settle_write`).
        """
        expected = None if stored is None else stored.generation
        for attempt in range(self.max_retries + 1):
            candidate = self._candidate(cut, token, expected)
            try:
                result = self.store.write_checkpoint(self.stream, expected, candidate)
            except IndefiniteStoreError:
                step = settle_write(
                    self.order, candidate, expected, None, self._retry(self._read_checkpoint)
                )
            else:
                step = settle_write(self.order, candidate, expected, result, None)
            self._log(step.decision, cut=step.cut, attempt=attempt + 1, generation=step.generation)
            if isinstance(step, Settled):
                return step.checkpoint
            expected = step.expected
        # Budget spent: report what is known to be stored, never our unwritten claim.
        self._log("gave_up_writing", cut=cut)
        return self._retry(self._read_checkpoint)

    def _candidate(self, cut: Cut, token: str | None, expected: int | None) -> Checkpoint:
        return fenced_checkpoint(self.partition, cut, token, expected, self.scope, self.epoch)

    def _log(self, decision: str, **fields: object) -> None:
        if self.log.isEnabledFor(logging.DEBUG):
            self.log.debug(decision_line(self.stream, self.partition, self.epoch, decision, fields))


def fenced_checkpoint(
    partition: str, cut: Cut, token: str | None, expected: int | None, scope: str, epoch: int
) -> Checkpoint:
    """The final checkpoint a reader writes over generation ``expected`` (None: the first)."""
    return Checkpoint(
        partition=partition,
        cut=cut,
        token=token,
        generation=1 if expected is None else expected + 1,
        scope=scope,
        epoch=epoch,
        finality=Finality.FINAL,
    )


def decision_line(
    stream: str, partition: str, epoch: int, decision: str, fields: Mapping[str, object]
) -> str:
    """One JSON line of a reader's decision log (cuts in their published form)."""
    line = {
        "stream": stream,
        "partition": partition,
        "epoch": epoch,
        "decision": decision,
        **{k: str(v) if isinstance(v, Cut) else v for k, v in fields.items()},
    }
    return json.dumps(line, sort_keys=True)
