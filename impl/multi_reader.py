"""One reader for many partitions, committing their checkpoints in batches.

A consumer that serves thousands of Kafka partitions or Kinesis shards should not
pay one fsynced transaction per checkpoint. :class:`MultiPartitionReader` ingests
many partitions of one membership epoch in *rounds*: each round fetches one page
of every partition still reading, records the outcome of every event (exactly
as :class:`~fencepost.impl.reader.PartitionReader` does, page by page, before the
page's claim is looked at), and then commits the round's checkpoint writes, one
per partition whose final claim moved ahead, with
:meth:`~fencepost.impl.stores.BatchCheckpointStore.write_checkpoints`: one
transaction, one fsync, each write still conditional on its own generation.

What holds, per partition, is what holds for :class:`PartitionReader`:

- a stored checkpoint that is not the reader's kind (another scope, epoch or
  partition, or provisional: a misconfiguration, docs/semantics.md section 8)
  claims nothing and gives no resume position;
- only a *final* claim is certified, as made (never the largest event seen,
  never the token, never ``before succ(x)`` built from ``through x``), and only
  once every event enumerated so far has a durable outcome;
- a write that loses its generation race loses alone; the rule of
  :func:`~fencepost.impl.reader.settle_write` decides what happens next (what is
  stored stays if it claims at least as much; else the true claim is written
  again on the newer generation in the next batch);
- a lost batch response is settled by one authoritative reread of the epoch's
  checkpoints, never assumed: the batch committed as a whole or not at all;
- a crash between or during batches leaves only checkpoints that were true when
  written; the next pass (any process) starts again from the stored tokens.

Costs: a round makes one fetch per reading partition, one outcome write per new
event, and ``ceil(W / batch_size)`` batched writes for its W certified claims;
a pass starts with one ``read_checkpoints`` of the epoch (O(N) for N members).
Memory: O(partitions served).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Protocol, TypeVar

from fencepost.impl.cuts import NOTHING, Cut, compare_cuts
from fencepost.impl.orders import Order
from fencepost.impl.provider import Event, Page, Provider, ProviderTimeout
from fencepost.impl.reader import (
    Rewrite,
    Settled,
    decision_line,
    fenced_checkpoint,
    own_checkpoint,
    settle_write,
)
from fencepost.impl.records import Checkpoint, Membership
from fencepost.impl.stores import (
    BatchCheckpointStore,
    BatchWrite,
    CheckpointStore,
    CheckpointWrite,
    IndefiniteStoreError,
    OutcomeStore,
)

T = TypeVar("T")

_LOG = logging.getLogger("fencepost.reader")


class BatchIngestStore(CheckpointStore, BatchCheckpointStore, OutcomeStore, Protocol):
    """The store calls a :class:`MultiPartitionReader` makes."""


@dataclass
class _Partition:
    """What the reader knows of one partition during a pass."""

    name: str
    order: Order
    epoch: int
    scope: str
    stored: Checkpoint | None
    token: str | None
    reading: bool = True
    handled: set[str] = field(default_factory=set)
    #: The claim waiting for this round's batch: (cut, token to store with it).
    claim: tuple[Cut, str | None] | None = None

    @property
    def own(self) -> Checkpoint | None:
        """What is stored, if it is this reader's kind (a misconfigured one claims nothing)."""
        return own_checkpoint(self.stored, self.name, self.epoch, self.scope)

    @property
    def certified(self) -> Cut:
        own = self.own
        return NOTHING if own is None else own.cut

    @property
    def generation(self) -> int | None:
        return None if self.stored is None else self.stored.generation


class MultiPartitionReader:
    """Ingest ``partitions`` (default: every member) of ``membership``'s epoch into ``store``.

    ``handle`` maps each event to its terminal outcome, as for
    :class:`~fencepost.impl.reader.PartitionReader`: called once per event id
    per pass, idempotent across passes. ``batch_size`` bounds the writes per
    transaction; ``max_retries`` bounds the retries of one call after a lost
    response, and the rewrites of one claim after lost generation races.
    """

    def __init__(
        self,
        store: BatchIngestStore,
        provider: Provider,
        stream: str,
        membership: Membership,
        handle: Callable[[Event], str],
        *,
        partitions: Iterable[str] | None = None,
        batch_size: int = 1000,
        max_retries: int = 3,
        save_progress: bool = True,
        log: logging.Logger | None = None,
    ) -> None:
        if type(max_retries) is not int or max_retries < 0:
            raise ValueError(f"max_retries must be a non-negative int, got {max_retries!r}")
        if type(batch_size) is not int or batch_size < 1:
            raise ValueError(f"batch_size must be a positive int, got {batch_size!r}")
        served = sorted(membership.partitions if partitions is None else set(partitions))
        strangers = [p for p in served if p not in membership.partitions]
        if strangers:
            raise ValueError(
                f"partitions {strangers} are not members of epoch {membership.epoch}; "
                "a reader serves members of its membership only"
            )
        self.store = store
        self.provider = provider
        self.stream = stream
        self.membership = membership
        self.partitions = tuple(served)
        self.handle = handle
        self.batch_size = batch_size
        self.max_retries = max_retries
        self.save_progress = save_progress
        self.log = log if log is not None else _LOG
        # partition -> (generation, token) where this reader's last pass stopped
        self._position: dict[str, tuple[int | None, str | None]] = {}
        #: Events handled and recorded by the last pass (distinct ids, all partitions).
        self.last_pass_events = 0
        #: Pages fetched by the last pass.
        self.last_pass_pages = 0
        #: Checkpoint writes committed by the last pass, and the batches they took.
        self.last_pass_writes = 0
        self.last_pass_batches = 0

    @property
    def epoch(self) -> int:
        return self.membership.epoch

    def run_pass(self, max_pages: int | None = None) -> dict[str, Cut]:
        """One pass over every served partition; the cut certified for each when it ends.

        Rounds continue until no partition has a next page, or each has read
        ``max_pages`` pages. A partition continues where this reader's last
        pass stopped if nobody wrote its checkpoint since, else from its
        stored token. With ``save_progress`` the tokens reached are stored at
        the end (same cut, new token), batched too. Raises the store's or
        provider's error when a call keeps failing past the retry budget:
        everything certified before stays.
        """
        self.last_pass_events = self.last_pass_pages = 0
        self.last_pass_writes = self.last_pass_batches = 0
        stored = {
            c.partition: c
            for c in self._retry(partial(self.store.read_checkpoints, self.stream, self.epoch))
        }
        states = []
        scope = self.membership.scope
        for name in self.partitions:
            checkpoint = stored.get(name)
            own = own_checkpoint(checkpoint, name, self.epoch, scope)
            token = None if own is None else own.token
            position = self._position.get(name)
            generation = None if checkpoint is None else checkpoint.generation
            if position is not None and position[0] == generation:
                token = position[1]
            order = self.membership.order_of(name)
            states.append(_Partition(name, order, self.epoch, scope, checkpoint, token))
        rounds = 0
        while any(s.reading for s in states) and (max_pages is None or rounds < max_pages):
            rounds += 1
            for state in states:
                if state.reading:
                    self._read_page(state)
            self._commit([s for s in states if s.claim is not None])
        if self.save_progress:
            moved = [
                s
                for s in states
                if s.token is not None and (s.stored is None or s.stored.token != s.token)
            ]
            for s in moved:
                s.claim = (s.certified, s.token)
            self._commit(moved)
        for s in states:
            self._position[s.name] = (s.generation, s.token)
        return {s.name: s.certified for s in states}

    # --- one page of one partition ---------------------------------------------------

    def _read_page(self, state: _Partition) -> None:
        page = self._retry(partial(self._fetch, state.name, state.token))
        self.last_pass_pages += 1
        for i, event in enumerate(page.events):  # refuse a bad page before acting on it
            state.order.validate(event.at, f"page.events[{i}].at")
        for event in page.events:
            if event.id in state.handled:
                continue
            outcome = self.handle(event)
            self._retry(partial(self.store.record_outcome, self.stream, event.id, outcome))
            state.handled.add(event.id)
            self.last_pass_events += 1
        # Every event up to here has a durable outcome: resuming after this page loses
        # nothing. With no next page, refetch this page next time.
        resume = page.next_token if page.next_token is not None else state.token
        claim = page.claim
        if claim is not None and claim.final:
            cut = claim.cut.validated(state.order, "page.claim.cut")
            if compare_cuts(state.order, cut, state.certified) > 0:
                state.claim = (cut, resume)  # written with this round's batch
        state.token = resume
        if page.next_token is None:
            state.reading = False

    def _fetch(self, partition: str, token: str | None) -> Page:
        page = self.provider.fetch_page(partition, token)
        if not isinstance(page, Page):
            raise TypeError(f"provider.fetch_page returned {type(page).__name__}, not a Page")
        return page

    # --- batched, fenced checkpoint writes ---------------------------------------------

    def _commit(self, pending: Sequence[_Partition]) -> None:
        """Write every pending claim, in batches, until each is settled or the budget is spent."""
        for start in range(0, len(pending), self.batch_size):
            self._commit_batch(pending[start : start + self.batch_size])

    def _commit_batch(self, group: Sequence[_Partition]) -> None:
        expected = {s.name: s.generation for s in group}
        todo = list(group)
        for attempt in range(self.max_retries + 1):
            if not todo:
                return
            writes: list[BatchWrite] = []
            for s in todo:
                assert s.claim is not None
                writes.append((expected[s.name], self._candidate(s, expected[s.name])))
            results: Sequence[CheckpointWrite | None]
            reread: dict[str, Checkpoint] = {}
            try:
                results = self.store.write_checkpoints(self.stream, writes)
                self.last_pass_batches += 1
            except IndefiniteStoreError:
                # The batch committed as a whole or not at all: one reread settles each.
                results = [None] * len(writes)
                found = self._retry(partial(self.store.read_checkpoints, self.stream, self.epoch))
                reread = {c.partition: c for c in found}
            if len(results) != len(writes):
                raise IndefiniteStoreError(
                    f"the store answered {len(results)} results for a batch of {len(writes)} "
                    "checkpoint writes; reread before deciding"
                )
            again = []
            for s, (_, candidate), result in zip(todo, writes, results, strict=True):
                step = settle_write(
                    s.order, candidate, expected[s.name], result, reread.get(s.name)
                )
                self._log(s, step.decision, cut=step.cut, attempt=attempt + 1)
                if isinstance(step, Settled):
                    if step.checkpoint == candidate:
                        self.last_pass_writes += 1
                    s.stored, s.claim = step.checkpoint, None
                else:
                    assert isinstance(step, Rewrite)
                    expected[s.name] = step.expected
                    again.append(s)
            todo = again
        # Budget spent: keep what is known to be stored, never an unwritten claim.
        found = self._retry(partial(self.store.read_checkpoints, self.stream, self.epoch))
        latest = {c.partition: c for c in found}
        for s in todo:
            self._log(s, "gave_up_writing", cut=s.claim[0] if s.claim else None)
            s.stored, s.claim = latest.get(s.name), None

    def _candidate(self, state: _Partition, expected: int | None) -> Checkpoint:
        assert state.claim is not None
        cut, token = state.claim
        return fenced_checkpoint(
            state.name, cut, token, expected, self.membership.scope, self.epoch
        )

    def _retry(self, call: Callable[[], T]) -> T:
        """Retry a read or an idempotent write after a lost response, within budget."""
        for attempt in range(self.max_retries + 1):
            try:
                return call()
            except (IndefiniteStoreError, ProviderTimeout):
                if attempt == self.max_retries:
                    raise
        raise AssertionError("unreachable")  # pragma: no cover

    def _log(self, state: _Partition, decision: str, **fields: object) -> None:
        if self.log.isEnabledFor(logging.DEBUG):
            self.log.debug(decision_line(self.stream, state.name, self.epoch, decision, fields))
