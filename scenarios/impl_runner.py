"""Run a scenario against the implementation: real Publisher and PartitionReader, step by step.

The world of the scenario is built on a real store (:class:`MemoryStore` or
:class:`SQLiteStore`): the first epoch's membership, then every step. Workers
are the implementation's own objects (:class:`~fencepost.impl.publisher.Publisher`,
:class:`~fencepost.impl.reader.PartitionReader`), each talking to the store
through a per-worker view that lets the scenario script the network:

- **faults** answer a worker's n-th call of an operation ``ok``, ``lost`` (not
  applied, the response lost: :class:`IndefiniteStoreError`, or
  :class:`ProviderTimeout` for a fetch) or ``applied_lost`` (applied, then the
  response lost);
- **pauses** stop a request just before its n-th call of an operation, so other
  workers can act in between (a late retry, a concurrent publisher), and a
  crash can end it there. Each request runs on its own thread, but only one
  thread ever runs at a time: the schedule alone decides the interleaving, so a
  run is deterministic.

The provider is scripted by ``serve`` steps; the environment steps (certify,
misconfigure, finalize, reshard) write straight to the store.

The oracle (:class:`_Oracle`) judges every accepted write and every step
against the ground truth, with its own few-line reading of cuts and downsets
(not the implementation's algebra): soundness, monotone publication, no
relabeling, the epoch fence, checkpoint monotonicity and truth, and honesty
about lost responses (judged from what the store actually answered each
attempt).

A ``-bad`` scenario's ``variant`` swaps one piece for a known bug: a
misreading of the checkpoint vector (the conformance harness's own catalog), a
store view that trusts a lost response or overwrites a newer checkpoint, a
provider adapter that reports the greatest event seen as coverage.
"""

from __future__ import annotations

import dataclasses
import tempfile
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, TypeVar

from fencepost.impl import faults
from fencepost.impl.cuts import Cut, Endpoint
from fencepost.impl.memory import MemoryStore
from fencepost.impl.orders import Coordinate, Order
from fencepost.impl.provider import Claim, Event, Page, Provider, ProviderTimeout
from fencepost.impl.publisher import Policy, Publisher, PublishResult
from fencepost.impl.reader import IngestStore, PartitionReader
from fencepost.impl.records import Checkpoint, Finality, Membership, PublicationRecord
from fencepost.impl.stores import (
    Applied,
    CheckpointApplied,
    CheckpointWrite,
    Conflict,
    IndefiniteStoreError,
    PublicationWrite,
    Store,
)
from fencepost.judge.values import Cut as JudgeCut
from fencepost.mutants.bugs import (
    BlindSuccessMixin,
    ConfirmRevisionMixin,
    FenceBlindMixin,
    OverwriteMixin,
    StaleCutRetryMixin,
    TrustingMixin,
)
from fencepost.mutants.sut_catalog import (
    EpochBlind,
    ProvisionalOk,
    Relabel,
    ScopeBlind,
    SkipMissing,
)
from fencepost.scenarios.convert import (
    to_impl_cut,
    to_impl_membership,
    to_impl_order,
    to_judge_cut,
)
from fencepost.scenarios.format import (
    Certify,
    Crash,
    EventDef,
    Finalize,
    Ingest,
    Misconfigure,
    Pause,
    Publish,
    Reshard,
    Resume,
    Scenario,
    Serve,
    Step,
    format_cut,
)
from fencepost.scenarios.outcome import (
    AttemptSeen,
    Breach,
    Observed,
    RecordSeen,
    ScenarioRuntimeError,
)
from fencepost.sut.adapter import Misreading

T = TypeVar("T")

BACKENDS: tuple[str, ...] = ("memory", "sqlite")

#: Seconds a request may run before it must pause or end (a hang is reported, never waited out).
REQUEST_TIMEOUT = 30.0

OUTCOME_TEXT = "processed"

# ---------------------------------------------------------------------------
# The oracle's own reading of cuts (independent of fencepost.impl.cuts)


def _key(order: Order, cut: Cut) -> tuple[int, Coordinate | None, int]:
    """Orders cuts by downset inclusion: on an exact-successor order through x is before x+1."""
    if cut.endpoint is Endpoint.NOTHING:
        return (0, None, 0)
    assert cut.at is not None
    through = cut.endpoint is Endpoint.THROUGH
    if order.has_successor and isinstance(cut.at, int):
        return (1, cut.at + 1 if through else cut.at, 0)
    return (1, cut.at, 1 if through else 0)


def cmp_cuts(order: Order, a: Cut, b: Cut) -> int | None:
    """-1, 0, 1 by downset inclusion; None when the coordinates are not of one kind."""
    ka, kb = _key(order, a), _key(order, b)
    if ka[0] != kb[0]:
        return -1 if ka[0] < kb[0] else 1
    if ka[0] == 0:
        return 0
    if type(ka[1]) is not type(kb[1]):
        return None
    ta, tb = (ka[1], ka[2]), (kb[1], kb[2])
    return (ta > tb) - (ta < tb)


def in_downset(cut: Cut, at: Coordinate) -> bool:
    """``at`` is in ``D(cut)``: strictly below ``before x``, at or below ``through x``."""
    if cut.endpoint is Endpoint.NOTHING or type(cut.at) is not type(at):
        return False
    if cut.endpoint is Endpoint.BEFORE:
        return at < cut.at  # type: ignore[operator]
    return at <= cut.at  # type: ignore[operator]


# ---------------------------------------------------------------------------
# Requests and the scheduler


RUNNING = "running"
PAUSED = "paused"
DONE = "done"


@dataclass
class CallSeen:
    """One store or provider call of a request and how it was answered."""

    op: str
    nth: int
    mode: str
    response: object
    args: tuple[object, ...] = ()


@dataclass
class _Request:
    worker: str
    kind: str  # "publish" or "ingest"
    faults: Mapping[str, tuple[str, ...]]
    pause: Pause | None
    partition: str = ""
    epoch: int = 0
    state: str = RUNNING
    counts: dict[str, int] = field(default_factory=dict)
    log: list[CallSeen] = field(default_factory=list)
    crash: bool = False
    crashed: bool = False
    parked_at: str = ""
    result: object = None
    error: BaseException | None = None


class _Scheduler:
    """Runs each request on its own thread, one thread at a time, handing control back
    to the schedule at pause points and when the request ends."""

    def __init__(self, timeout: float) -> None:
        self.cv = threading.Condition()
        self.timeout = timeout
        self.active: dict[str, _Request] = {}
        self.threads: list[threading.Thread] = []

    def start(self, request: _Request, body: Callable[[], object]) -> None:
        self.active[request.worker] = request
        thread = threading.Thread(
            target=self._run, args=(request, body), name=f"scenario-{request.worker}", daemon=True
        )
        self.threads.append(thread)
        thread.start()
        self._await(request)

    def _run(self, request: _Request, body: Callable[[], object]) -> None:
        try:
            request.result = body()
        except faults.Crash:
            request.crashed = True
        except BaseException as exc:  # reported to the schedule, never lost in a thread
            request.error = exc
        finally:
            with self.cv:
                request.state = DONE
                self.cv.notify_all()

    def _await(self, request: _Request) -> None:
        with self.cv:
            settled = self.cv.wait_for(lambda: request.state != RUNNING, self.timeout)
        if not settled:
            raise ScenarioRuntimeError(
                f"{request.worker}'s request neither paused nor ended within {self.timeout:g}s"
            )
        if request.state == DONE:
            self.active.pop(request.worker, None)

    def park(self, request: _Request) -> None:
        """Called on the request's thread: hand control back until resumed (or crashed)."""
        with self.cv:
            request.state = PAUSED
            self.cv.notify_all()
            self.cv.wait_for(lambda: request.state == RUNNING)
        if request.crash:
            raise faults.Crash(f"{request.worker} crashed at its pause point")

    def resume(self, worker: str, pause: Pause | None, *, crash: bool = False) -> _Request:
        request = self.active[worker]
        request.pause = pause
        request.crash = crash
        with self.cv:
            request.state = RUNNING
            self.cv.notify_all()
        self._await(request)
        return request

    def close(self) -> None:
        for worker, request in list(self.active.items()):
            if request.state == PAUSED:
                self.resume(worker, None, crash=True)
        for thread in self.threads:
            thread.join(timeout=self.timeout)


# ---------------------------------------------------------------------------
# The oracle


class _Oracle:
    """docs/semantics.md section 7, judged against the ground truth after every change."""

    def __init__(self, scenario: Scenario, store: Store, final: set[str]) -> None:
        self.sc = scenario
        self.store = store
        self.final = final
        self.breach: Breach | None = None
        self.step: Step | None = None
        self.durable_epoch = scenario.epochs[0].epoch

    def fail(self, prop: str, message: str) -> None:
        if self.breach is None:
            step = self.step
            self.breach = Breach(prop, message, step.index if step else 0, step.line if step else 0)

    def _order(self, epoch: int) -> Order | None:
        try:
            members = self.sc.epoch_def(epoch).members
        except KeyError:
            return None
        names = set(members.values())
        return self.sc.orders[names.pop()] if len(names) == 1 else None

    def _unsettled(self, events: Sequence[EventDef], cut: Cut) -> list[str]:
        within = [ev for ev in events if in_downset(cut, ev.at)]
        durable = self.store.outcomes(self.sc.stream, [ev.id for ev in within]) if within else {}
        bad = []
        for ev in within:
            flags = []
            if ev.id not in self.final:
                flags.append("not final")
            if ev.id not in durable:
                flags.append("no durable outcome")
            if flags:
                bad.append(f"{ev.id} at {ev.at!r} ({', '.join(flags)})")
        return bad

    def soundness(self) -> None:
        rec = self.store.read_publication(self.sc.stream)
        if rec.cut.is_nothing:
            return
        if rec.epoch > self.durable_epoch or rec.epoch not in {e.epoch for e in self.sc.epochs}:
            self.fail(
                "soundness",
                f"the record claims (epoch {rec.epoch}, {rec.cut}) but epoch {rec.epoch} has "
                "no durable membership",
            )
            return
        for partition in sorted(self.sc.epoch_def(rec.epoch).members):
            bad = self._unsettled(self.sc.events(rec.epoch, partition), rec.cut)
            if bad:
                self.fail(
                    "soundness",
                    f"the record claims (epoch {rec.epoch}, {rec.cut}) but {partition}'s "
                    f"{', '.join(bad)} lies in its downset",
                )
                return

    def publication_written(self, old: PublicationRecord, new: PublicationRecord) -> None:
        if new.epoch < old.epoch:
            self.fail(
                "epoch_fence",
                f"{new.op_id} wrote epoch {new.epoch} over the record's epoch {old.epoch} "
                f"({old.cut} -> {new.cut})",
            )
            return
        order = self._order(new.epoch)
        if order is not None:
            c = cmp_cuts(order, new.cut, old.cut)
            if c is not None and c < 0:
                if new.epoch == old.epoch:
                    self.fail(
                        "monotone_publication",
                        f"{new.op_id} moved the record back within epoch {new.epoch}: "
                        f"{old.cut} -> {new.cut}",
                    )
                    return
                if self.sc.policy == "monotone":
                    self.fail(
                        "monotone_publication",
                        f"{new.op_id} moved the record back at a cutover under the monotone "
                        f"policy: (epoch {old.epoch}, {old.cut}) -> (epoch {new.epoch}, {new.cut})",
                    )
                    return
        if new.cut.endpoint is Endpoint.THROUGH and order is not None:
            for partition in sorted(self.sc.epoch_def(new.epoch).members):
                stored = self.store.read_checkpoint(self.sc.stream, new.epoch, partition)
                valid = (
                    stored is not None
                    and stored.finality is Finality.FINAL
                    and stored.scope == self.sc.scope
                    and stored.epoch == new.epoch
                )
                if not valid:
                    self.fail(
                        "no_relabeling",
                        f"{new.op_id} published (epoch {new.epoch}, {new.cut}) but {partition} "
                        f"has no valid final checkpoint in epoch {new.epoch}",
                    )
                    return
                assert stored is not None
                c = cmp_cuts(order, stored.cut, new.cut)
                if c is None or c < 0:
                    self.fail(
                        "no_relabeling",
                        f"{new.op_id} published (epoch {new.epoch}, {new.cut}) but {partition} "
                        f"certified only {stored.cut}",
                    )
                    return

    def checkpoint_written(
        self,
        key: tuple[int, str],
        old: Checkpoint | None,
        old_injected: bool,
        new: Checkpoint,
        labels: tuple[str, int] | None,
        injected: bool,
    ) -> None:
        epoch, partition = key
        order = self.sc.order_of(epoch, partition)
        if labels is not None and (
            new.partition != labels[0] or new.epoch != labels[1] or new.scope != self.sc.scope
        ):
            self.fail(
                "checkpoint_truth",
                f"the checkpoint written by the pass over {labels[0]} in epoch {labels[1]} says "
                f"partition {new.partition}, epoch {new.epoch}, scope {new.scope!r}",
            )
            return
        if old is not None:
            if new.generation <= old.generation:
                self.fail(
                    "checkpoint_monotonicity",
                    f"{partition}'s generation in epoch {epoch} went from {old.generation} to "
                    f"{new.generation}",
                )
                return
            c = cmp_cuts(order, new.cut, old.cut)
            if not old_injected and c is not None and c < 0:
                self.fail(
                    "checkpoint_monotonicity",
                    f"{partition}'s checkpoint in epoch {epoch} went back from {old.cut} "
                    f"(generation {old.generation}) to {new.cut} (generation {new.generation})",
                )
                return
        if injected or new.finality is not Finality.FINAL or new.scope != self.sc.scope:
            return
        bad = self._unsettled(self.sc.events(epoch, partition), new.cut)
        if bad:
            self.fail(
                "checkpoint_truth",
                f"{partition} certified {new.cut} in epoch {epoch} (generation "
                f"{new.generation}) but {', '.join(bad)} lies in its downset",
            )

    def attempt_ended(self, request: _Request, result: PublishResult) -> None:
        """``published`` only on an acknowledged write; ``confirmed`` only after an
        authoritative read, following a lost write, showed the claim present."""
        outcome = result.outcome.value
        writes = [c for c in request.log if c.op == "write_publication"]
        if outcome == "published":
            last = writes[-1] if writes else None
            applied = last is not None and last.mode == "ok" and isinstance(last.response, Applied)
            if not applied or last is None or not isinstance(last.response, Applied):
                said = "no write" if last is None else f"its last write was {_answer(last)}"
                self.fail(
                    "lost_response_honesty",
                    f"{request.worker} reported published (epoch {result.epoch}, {result.cut}) "
                    f"but {said}",
                )
                return
            rec = last.response.record
            if (rec.epoch, rec.cut) != (result.epoch, result.cut):
                self.fail(
                    "lost_response_honesty",
                    f"{request.worker} reported published (epoch {result.epoch}, {result.cut}) "
                    f"but its acknowledged write stored (epoch {rec.epoch}, {rec.cut})",
                )
        elif outcome == "confirmed" and not self._confirmed_by_read(request, result):
            self.fail(
                "lost_response_honesty",
                f"{request.worker} reported confirmed (epoch {result.epoch}, {result.cut}) "
                "but no read after a lost write showed that claim at or past the proposal",
            )

    def _confirmed_by_read(self, request: _Request, result: PublishResult) -> bool:
        lost: list[CallSeen] = []
        for call in request.log:
            if call.op == "write_publication" and call.mode != "ok":
                lost.append(call)
            elif call.op == "read_publication" and call.mode == "ok" and lost:
                rec = call.response
                if not isinstance(rec, PublicationRecord):
                    continue
                if (rec.epoch, rec.cut) != (result.epoch, result.cut):
                    continue
                order = self._order(rec.epoch)
                for write in lost:
                    epoch, cut = write.args[0], write.args[1]
                    if order is None or not isinstance(cut, Cut) or epoch != rec.epoch:
                        continue
                    c = cmp_cuts(order, rec.cut, cut)
                    if c is not None and c >= 0:
                        return True
        return False


def _answer(call: CallSeen) -> str:
    if call.mode == "lost":
        return "lost (not applied, no response)"
    if call.mode == "applied_lost":
        return "applied but its response was lost"
    if isinstance(call.response, Conflict):
        return "a conflict"
    return "acknowledged"


# ---------------------------------------------------------------------------
# The world: store, truth, provider pages, the controller of every call


@dataclass(frozen=True, slots=True)
class _PageDef:
    events: tuple[str, ...]
    next: str | None
    claim: Claim | None


class ImplWorld:
    """One run's durable state (a real store), its ground truth and scripted provider,
    and the one door every worker call passes through (faults, pauses, the oracle)."""

    def __init__(self, scenario: Scenario, store: Store, scheduler: _Scheduler) -> None:
        self.sc = scenario
        self.store = store
        self.scheduler = scheduler
        self.final: set[str] = {
            ev.id for events in scenario.truth.values() for ev in events if ev.final
        }
        self.oracle = _Oracle(scenario, store, self.final)
        self.epoch_index = 0
        self.injected: set[tuple[int, str]] = set()
        #: Misfiled checkpoints (stamped with the previous epoch) read in place of a key's row.
        self.misfiled: dict[tuple[int, str], Checkpoint] = {}
        self.pages: dict[tuple[int, str, str | None], _PageDef] = {}
        self.page_losses: dict[tuple[int, str, str | None], int] = {}
        self.delivered: dict[tuple[int, str], set[str]] = {}
        self.writers: dict[str, str] = {}

    @property
    def epoch(self) -> int:
        return self.sc.epochs[self.epoch_index].epoch

    # -- the door --------------------------------------------------------------------

    def call(
        self,
        worker: str,
        op: str,
        perform: Callable[[], T],
        args: tuple[object, ...] = (),
        lost: type[Exception] = IndefiniteStoreError,
    ) -> T:
        request = self.scheduler.active[worker]
        nth = request.counts.get(op, 0) + 1
        request.counts[op] = nth
        pause = request.pause
        if pause is not None and pause.op == op and pause.nth == nth:
            request.pause = None
            request.parked_at = str(pause)
            self.scheduler.park(request)
        modes = request.faults.get(op, ())
        mode = modes[nth - 1] if nth <= len(modes) else "ok"
        if mode == "lost":
            request.log.append(CallSeen(op, nth, mode, None, args))
            raise lost(f"scripted: {worker}'s {op} #{nth}: response lost, not applied")
        response = perform()
        request.log.append(CallSeen(op, nth, mode, response, args))
        if mode == "applied_lost":
            raise lost(f"scripted: {worker}'s {op} #{nth}: applied, then the response lost")
        return response

    # -- judged writes -----------------------------------------------------------------

    def write_publication(
        self, expected: int, epoch: int, cut: Cut, op_id: str
    ) -> PublicationWrite:
        old = self.store.read_publication(self.sc.stream)
        result = self.store.write_publication(self.sc.stream, expected, epoch, cut, op_id)
        if isinstance(result, Applied):
            self.oracle.publication_written(old, result.record)
        return result

    def write_checkpoint(
        self,
        expected: int | None,
        checkpoint: Checkpoint,
        labels: tuple[str, int] | None,
        injected: bool = False,
    ) -> CheckpointWrite:
        key = (checkpoint.epoch, checkpoint.partition)
        old = self.store.read_checkpoint(self.sc.stream, *key)
        result = self.store.write_checkpoint(self.sc.stream, expected, checkpoint)
        if isinstance(result, CheckpointApplied):
            was_injected = key in self.injected
            self.misfiled.pop(key, None)
            if injected:
                self.injected.add(key)
            else:
                self.injected.discard(key)
            self.oracle.checkpoint_written(
                key, old, was_injected, result.checkpoint, labels, injected
            )
        return result

    def read_checkpoint(self, epoch: int, partition: str) -> Checkpoint | None:
        misfiled = self.misfiled.get((epoch, partition))
        if misfiled is not None:
            return misfiled
        return self.store.read_checkpoint(self.sc.stream, epoch, partition)

    def read_checkpoints(self, epoch: int) -> list[Checkpoint]:
        rows = {c.partition: c for c in self.store.read_checkpoints(self.sc.stream, epoch)}
        for (e, partition), misfiled in self.misfiled.items():
            if e == epoch:
                rows[partition] = misfiled
        return [rows[p] for p in sorted(rows)]

    # -- the provider --------------------------------------------------------------------

    def page(self, epoch: int, partition: str, token: str | None) -> Page:
        key = (epoch, partition, token)
        losses = self.page_losses.get(key, 0)
        if losses:
            self.page_losses[key] = losses - 1
            raise ProviderTimeout(
                f"scripted: the source timed out serving {partition} at {token!r}"
            )
        definition = self.pages.get(key)
        if definition is None:
            return Page((), None, None)
        truth = {ev.id: ev for ev in self.sc.events(epoch, partition)}
        events = tuple(Event(i, truth[i].at) for i in definition.events)
        seen = self.delivered.setdefault((epoch, partition), set())
        seen.update(definition.events)
        claim = definition.claim
        if claim is not None and claim.final:
            for ev in truth.values():
                if not in_downset(claim.cut, ev.at):
                    continue
                if ev.id not in self.final:
                    raise ScenarioRuntimeError(
                        f"the provider's final claim {format_cut(claim.cut)} for {partition} "
                        f"covers {ev.id}, which the source has not finalized; finalize it first "
                        "or make the claim non-final (final = false)"
                    )
                if ev.id not in seen:
                    raise ScenarioRuntimeError(
                        f"the provider's final claim {format_cut(claim.cut)} for {partition} "
                        f"covers {ev.id}, which no page has delivered; serve it on a page first"
                    )
        return Page(events, definition.next, claim)


# ---------------------------------------------------------------------------
# Worker views (one per worker; the variants subclass them)


class PublisherView:
    """The publisher's store: every call through the scheduler's door, reads through
    the variant's :class:`Misreading` of the checkpoint vector."""

    def __init__(self, world: ImplWorld, worker: str, misreading: Misreading) -> None:
        self.world = world
        self.worker = worker
        self.misreading = misreading
        self._membership: Membership | None = None
        self._seen: tuple[Checkpoint, ...] = ()

    def read_publication(self, stream: str) -> PublicationRecord:
        w = self.world
        return w.call(self.worker, "read_publication", lambda: w.store.read_publication(stream))

    def read_membership(self, stream: str, epoch: int | None = None) -> Membership:
        w = self.world
        self._membership = w.call(
            self.worker, "read_membership", lambda: w.store.read_membership(stream, epoch)
        )
        return self._membership

    def read_checkpoints(self, stream: str, epoch: int) -> Sequence[Checkpoint]:
        w = self.world
        raw = w.call(self.worker, "read_checkpoints", lambda: w.read_checkpoints(epoch), (epoch,))
        if self._membership is None:
            return raw
        self._seen = self.misreading.checkpoints(self._membership, raw)
        return self._seen

    def write_publication(
        self, stream: str, expected_revision: int, epoch: int, cut: Cut, op_id: str
    ) -> PublicationWrite:
        if self._membership is not None and self._membership.epoch == epoch:
            said = self.misreading.frontier(self._membership, self._seen, cut)
            if isinstance(said, Cut):
                cut = said
        w = self.world
        w.writers.setdefault(op_id, self.worker)  # spent even if the write is never applied
        return w.call(
            self.worker,
            "write_publication",
            lambda: w.write_publication(expected_revision, epoch, cut, op_id),
            (epoch, cut, expected_revision, op_id),
        )


class ReaderView:
    """The partition reader's store: checkpoints (judged) and outcomes, through the door."""

    def __init__(self, world: ImplWorld, worker: str, partition: str, epoch: int) -> None:
        self.world = world
        self.worker = worker
        self.labels = (partition, epoch)

    def read_checkpoint(self, stream: str, epoch: int, partition: str) -> Checkpoint | None:
        w = self.world
        return w.call(self.worker, "read_checkpoint", lambda: w.read_checkpoint(epoch, partition))

    def read_checkpoints(self, stream: str, epoch: int) -> Sequence[Checkpoint]:
        return self.world.read_checkpoints(epoch)

    def write_checkpoint(
        self, stream: str, expected_generation: int | None, checkpoint: Checkpoint
    ) -> CheckpointWrite:
        w = self.world
        return w.call(
            self.worker,
            "write_checkpoint",
            lambda: w.write_checkpoint(expected_generation, checkpoint, self.labels),
            (expected_generation, checkpoint),
        )

    def record_outcome(self, stream: str, event_id: str, outcome: str) -> str:
        w = self.world
        return w.call(
            self.worker,
            "record_outcome",
            lambda: w.store.record_outcome(w.sc.stream, event_id, outcome),
        )

    def outcomes(self, stream: str, event_ids: Sequence[str]) -> dict[str, str]:
        return self.world.store.outcomes(self.world.sc.stream, event_ids)


class ScriptedProvider:
    """The provider a pass talks to: the scenario's served pages of the pass's epoch."""

    def __init__(self, world: ImplWorld, worker: str, epoch: int) -> None:
        self.world = world
        self.worker = worker
        self.epoch = epoch

    def fetch_page(self, partition: str, token: str | None) -> Page:
        w = self.world
        return w.call(
            self.worker,
            "fetch_page",
            lambda: w.page(self.epoch, partition, token),
            (token,),
            lost=ProviderTimeout,
        )


# -- variants (known bugs, each written once in fencepost.mutants.bugs) ---------------------


class BlindSuccessView(BlindSuccessMixin, PublisherView):
    """The worker's publisher view with :class:`~fencepost.mutants.bugs.BlindSuccessMixin`."""


class ConfirmRevisionView(ConfirmRevisionMixin, PublisherView):
    """The worker's publisher view with :class:`~fencepost.mutants.bugs.ConfirmRevisionMixin`."""


class StaleCutRetryView(StaleCutRetryMixin, PublisherView):
    """The worker's publisher view with :class:`~fencepost.mutants.bugs.StaleCutRetryMixin`."""


class FenceBlindView(FenceBlindMixin, PublisherView):
    """The worker's publisher view with :class:`~fencepost.mutants.bugs.FenceBlindMixin`."""


class OverwriteView(OverwriteMixin, ReaderView):
    """The worker's reader view with :class:`~fencepost.mutants.bugs.OverwriteMixin`."""


class MaxObservedProvider(ScriptedProvider):
    """Every page claims, final, through the greatest position observed in the pass."""

    def __init__(self, world: ImplWorld, worker: str, epoch: int) -> None:
        super().__init__(world, worker, epoch)
        self._seen: Coordinate | None = None

    def fetch_page(self, partition: str, token: str | None) -> Page:
        page = super().fetch_page(partition, token)
        for event in page.events:
            if self._seen is None or event.at > self._seen:  # type: ignore[operator]
                self._seen = event.at
        if self._seen is None:
            return page
        return Page(page.events, page.next_token, Claim(Cut.through(self._seen), True))


class TrustingProvider(TrustingMixin, ScriptedProvider):
    """The scripted provider with :class:`~fencepost.mutants.bugs.TrustingMixin`."""


@dataclass(frozen=True)
class ImplVariant:
    """The pieces a run is made of; :data:`CORRECT` is the implementation as shipped."""

    name: str = "fencepost"
    misreading: Callable[[], Misreading] = Misreading
    publisher_view: type[PublisherView] = PublisherView
    reader_view: type[ReaderView] = ReaderView
    provider: type[ScriptedProvider] = ScriptedProvider
    policy: Policy | None = None


CORRECT = ImplVariant()

#: The implementation's variant of each known bug a ``-bad`` scenario may name.
IMPL_VARIANTS: dict[str, ImplVariant] = {
    "relabel": ImplVariant("relabel", misreading=Relabel),
    "skip-missing": ImplVariant("skip-missing", misreading=SkipMissing),
    "epoch-blind": ImplVariant("epoch-blind", misreading=EpochBlind),
    "provisional-ok": ImplVariant(
        "provisional-ok", misreading=ProvisionalOk, provider=TrustingProvider
    ),
    "scope-blind": ImplVariant("scope-blind", misreading=ScopeBlind),
    "blind-success": ImplVariant("blind-success", publisher_view=BlindSuccessView),
    "stale-cut-retry": ImplVariant("stale-cut-retry", publisher_view=StaleCutRetryView),
    "confirm-revision": ImplVariant("confirm-revision", publisher_view=ConfirmRevisionView),
    "fence-blind": ImplVariant("fence-blind", publisher_view=FenceBlindView),
    "cutover-regress": ImplVariant("cutover-regress", policy=Policy.RESET),
    "overwrite": ImplVariant("overwrite", reader_view=OverwriteView),
    "max-observed": ImplVariant("max-observed", provider=MaxObservedProvider),
}


class PublisherFactory(Protocol):
    """Builds one publisher process (tests pass deliberately broken subclasses)."""

    def __call__(
        self,
        store: PublisherView,
        stream: str,
        worker: str,
        policy: Policy,
        max_retries: int,
        first_op: int,
    ) -> Publisher: ...


class ReaderFactory(Protocol):
    """Builds one partition reader (tests pass deliberately broken subclasses)."""

    def __call__(
        self,
        store: IngestStore,
        provider: Provider,
        stream: str,
        partition: str,
        epoch: int,
        scope: str,
        order: Order,
        handle: Callable[[Event], str],
        max_retries: int,
    ) -> PartitionReader: ...


def default_publisher(
    store: PublisherView, stream: str, worker: str, policy: Policy, max_retries: int, first_op: int
) -> Publisher:
    return Publisher(store, stream, worker, policy, max_retries, first_op=first_op)


def default_reader(
    store: IngestStore,
    provider: Provider,
    stream: str,
    partition: str,
    epoch: int,
    scope: str,
    order: Order,
    handle: Callable[[Event], str],
    max_retries: int,
) -> PartitionReader:
    return PartitionReader(
        store, provider, stream, partition, epoch, scope, order, handle, max_retries=max_retries
    )


def _handled(event: Event) -> str:
    return OUTCOME_TEXT


# ---------------------------------------------------------------------------
# The driver


class ImplDriver:
    """Runs one scenario on the implementation (see the module docstring)."""

    def __init__(
        self,
        scenario: Scenario,
        backend: str = "memory",
        *,
        variant: ImplVariant | None = None,
        publisher_factory: PublisherFactory = default_publisher,
        reader_factory: ReaderFactory = default_reader,
        timeout: float = REQUEST_TIMEOUT,
    ) -> None:
        if backend not in BACKENDS:
            raise ValueError(f"backend must be one of {', '.join(BACKENDS)}, got {backend!r}")
        self.sc = scenario
        self.backend = backend
        if variant is None:
            variant = CORRECT if scenario.variant is None else IMPL_VARIANTS[scenario.variant]
        self.variant = variant
        self.publisher_factory = publisher_factory
        self.reader_factory = reader_factory
        self.scheduler = _Scheduler(timeout)
        self._tmp: tempfile.TemporaryDirectory[str] | None = None
        self._store: Store | None = None
        self._world: ImplWorld | None = None
        self._publishers: dict[str, Publisher] = {}
        self._readers: dict[tuple[str, str, int], PartitionReader] = {}

    @property
    def world(self) -> ImplWorld:
        assert self._world is not None, "begin() first"
        return self._world

    @property
    def breach(self) -> Breach | None:
        return None if self._world is None else self._world.oracle.breach

    def begin(self) -> None:
        store: Store
        if self.backend == "memory":
            store = MemoryStore()
        else:
            from fencepost.impl.sqlite import SQLiteStore

            self._tmp = tempfile.TemporaryDirectory(prefix="fencepost-scenario-")
            store = SQLiteStore(Path(self._tmp.name) / "scenario.db")
        self._store = store
        first = self.sc.epochs[0].epoch
        store.create_stream(self.sc.stream, to_impl_membership(self.sc.membership(first)))
        self._world = ImplWorld(self.sc, store, self.scheduler)

    def close(self) -> None:
        self.scheduler.close()
        if self._store is not None:
            self._store.close()
        if self._tmp is not None:
            self._tmp.cleanup()

    # -- one step ----------------------------------------------------------------------

    def step(self, step: Step) -> Observed:
        world = self.world
        world.oracle.step = step
        action = step.action
        ended: _Request | None = None
        says: str
        if isinstance(action, Certify):
            says = self._certify(action)
        elif isinstance(action, Misconfigure):
            says = self._misconfigure(action)
        elif isinstance(action, Finalize):
            world.final.update(action.events)
            says = f"the source finalizes {', '.join(action.events)}"
        elif isinstance(action, Reshard):
            world.store.write_membership(
                self.sc.stream, to_impl_membership(self.sc.membership(action.epoch))
            )
            world.epoch_index += 1
            world.oracle.durable_epoch = action.epoch
            says = f"the membership of epoch {action.epoch} becomes durable"
        elif isinstance(action, Serve):
            says = self._serve(action)
        elif isinstance(action, Publish):
            request = self._publish(action)
            ended = request if request.state == DONE else None
            says = self._said(request)
        elif isinstance(action, Ingest):
            request = self._ingest(action)
            ended = request if request.state == DONE else None
            says = self._said(request)
        elif isinstance(action, Resume):
            if action.worker not in self.scheduler.active:
                raise ScenarioRuntimeError(f"{action.worker} has no paused request to resume")
            request = self.scheduler.resume(action.worker, action.pause)
            ended = request if request.state == DONE else None
            says = f"{action.worker} resumes: {self._said(request)}"
        else:
            assert isinstance(action, Crash)
            if action.worker not in self.scheduler.active:
                raise ScenarioRuntimeError(f"{action.worker} has no paused request to crash")
            self.scheduler.resume(action.worker, None, crash=True)
            self._forget(action.worker)
            says = f"{action.worker} crashes at its pause point and will restart with no memory"
        if ended is not None:
            self._ended(ended)
        if world.oracle.breach is None:
            world.oracle.soundness()
        return self._observe(step, ended, says)

    def _ended(self, request: _Request) -> None:
        error = request.error
        if isinstance(error, ScenarioRuntimeError):
            raise error
        if request.kind == "publish" and isinstance(request.result, PublishResult):
            self.world.oracle.attempt_ended(request, request.result)

    def _said(self, request: _Request) -> str:
        who = request.worker
        if request.state == PAUSED:
            return f"{who} pauses {request.parked_at}"
        if request.crashed:
            return f"{who} crashed"
        if request.error is not None:
            return f"{who}'s request raised {type(request.error).__name__}: {request.error}"
        result = request.result
        if isinstance(result, PublishResult):
            reason = f" {result.reason.value}" if result.reason else ""
            return (
                f"{who}: {result.outcome.value}{reason} (epoch {result.epoch}, "
                f"{format_cut(result.cut)}) after {result.attempts} write(s)"
            )
        if isinstance(result, Cut):
            return f"{who}'s pass ends certifying {format_cut(result)}"
        return f"{who} ended"

    # -- environment -------------------------------------------------------------------

    def _stored(self, partition: str) -> Checkpoint | None:
        return self.world.read_checkpoint(self.world.epoch, partition)

    def _certify(self, action: Certify) -> str:
        action = dataclasses.replace(action, cut=to_impl_cut(action.cut))  # type: ignore[arg-type]
        world = self.world
        epoch = world.epoch
        order = self.sc.order_of(epoch, action.partition)
        stored = self._stored(action.partition)
        if stored is not None:
            c = cmp_cuts(order, action.cut, stored.cut)
            if c is None or c <= 0:
                raise ScenarioRuntimeError(
                    f"certify {action.partition} {format_cut(action.cut)}: the stored checkpoint "
                    f"is already {format_cut(stored.cut)}; an honest reader only certifies a cut "
                    "ahead of it"
                )
        covered = [
            ev for ev in self.sc.events(epoch, action.partition) if in_downset(action.cut, ev.at)
        ]
        for ev in covered:
            world.final.add(ev.id)
            world.store.record_outcome(self.sc.stream, ev.id, OUTCOME_TEXT)
        raw = world.store.read_checkpoint(self.sc.stream, epoch, action.partition)
        checkpoint = Checkpoint(
            action.partition,
            action.cut,
            None if raw is None else raw.token,
            1 if raw is None else raw.generation + 1,
            self.sc.scope,
            epoch,
            Finality.FINAL,
        )
        result = world.write_checkpoint(None if raw is None else raw.generation, checkpoint, None)
        assert isinstance(result, CheckpointApplied)
        return (
            f"an honest reader certifies {action.partition} {format_cut(action.cut)} in epoch "
            f"{epoch} (generation {result.checkpoint.generation})"
        )

    def _misconfigure(self, action: Misconfigure) -> str:
        action = dataclasses.replace(action, cut=to_impl_cut(action.cut))  # type: ignore[arg-type]
        world = self.world
        epoch = world.epoch
        raw = world.store.read_checkpoint(self.sc.stream, epoch, action.partition)
        generation = 1 if raw is None else raw.generation + 1
        base = Checkpoint(
            action.partition,
            action.cut,
            "misconfigured",
            generation,
            self.sc.scope,
            epoch,
            Finality.FINAL,
        )
        if action.kind == "wrong_epoch":
            previous = self.sc.epochs[world.epoch_index - 1].epoch
            world.misfiled[(epoch, action.partition)] = dataclasses.replace(
                base, epoch=previous, generation=1 if raw is None else raw.generation
            )
            return (
                f"an operator misfiles {action.partition}'s checkpoint of epoch {previous} "
                f"({format_cut(action.cut)}) as its checkpoint of epoch {epoch}"
            )
        if action.kind == "provisional":
            bad = dataclasses.replace(base, finality=Finality.PROVISIONAL)
        else:
            bad = dataclasses.replace(base, scope=f"not-{self.sc.scope}")
        world.write_checkpoint(None if raw is None else raw.generation, bad, None, injected=True)
        return (
            f"an operator stores a {action.kind.replace('_', ' ')} checkpoint "
            f"{action.partition} {format_cut(action.cut)} in epoch {epoch}"
        )

    def _serve(self, action: Serve) -> str:
        world = self.world
        key = (world.epoch, action.partition, action.token)
        claim = None if action.claim is None else Claim(to_impl_cut(action.claim), action.final)
        world.pages[key] = _PageDef(action.events, action.next, claim)
        if action.lost:
            world.page_losses[key] = action.lost
        at = "the start" if action.token is None else repr(action.token)
        shown = (
            "no claim"
            if claim is None
            else f"a {'final' if claim.final else 'non-final'} claim {format_cut(claim.cut)}"
        )
        return (
            f"the provider serves {action.partition} at {at}: "
            f"{', '.join(action.events) or 'no events'}; {shown}; next "
            f"{'none' if action.next is None else repr(action.next)}"
        )

    # -- workers -----------------------------------------------------------------------

    def _publisher(self, worker: str) -> Publisher:
        publisher = self._publishers.get(worker)
        if publisher is None:
            view = self.variant.publisher_view(self.world, worker, self.variant.misreading())
            policy = self.variant.policy or Policy(self.sc.policy)
            # A restarted process must not reuse an op_id its previous incarnation wrote with.
            first = sum(1 for w in self.world.writers.values() if w == worker) + 1
            publisher = self.publisher_factory(
                view, self.sc.stream, worker, policy, self.sc.max_retries, first
            )
            self._publishers[worker] = publisher
        return publisher

    def _publish(self, action: Publish) -> _Request:
        publisher = self._publisher(action.publisher)
        request = _Request(action.publisher, "publish", action.faults, action.pause)

        self.scheduler.start(request, publisher.attempt)
        return request

    def _ingest(self, action: Ingest) -> _Request:
        world = self.world
        epoch = world.epoch
        key = (action.reader, action.partition, epoch)
        reader = self._readers.get(key)
        if reader is None:
            view = self.variant.reader_view(world, action.reader, action.partition, epoch)
            provider = self.variant.provider(world, action.reader, epoch)
            reader = self.reader_factory(
                view,
                provider,
                self.sc.stream,
                action.partition,
                epoch,
                self.sc.scope,
                to_impl_order(self.sc.order_of(epoch, action.partition)),
                _handled,
                self.sc.max_retries,
            )
            self._readers[key] = reader
        request = _Request(
            action.reader, "ingest", action.faults, action.pause, action.partition, epoch
        )
        self.scheduler.start(request, lambda: reader.run_pass(action.max_pages))
        return request

    def _forget(self, worker: str) -> None:
        """A restarted process has no memory: its publisher or readers are built anew."""
        self._publishers.pop(worker, None)
        for key in [k for k in self._readers if k[0] == worker]:
            del self._readers[key]

    # -- observation -------------------------------------------------------------------

    def _observe(self, step: Step, ended: _Request | None, says: str) -> Observed:
        world = self.world
        rec = world.store.read_publication(self.sc.stream)
        record = RecordSeen(
            rec.epoch,
            to_judge_cut(rec.cut),
            rec.revision,
            None if rec.op_id is None else world.writers.get(rec.op_id),
        )
        checkpoints: dict[str, JudgeCut | None] = {}
        generations: dict[str, int | None] = {}
        for partition in self.sc.epoch_def(world.epoch).members:
            cp = world.read_checkpoint(world.epoch, partition)
            checkpoints[partition] = None if cp is None else to_judge_cut(cp.cut)
            generations[partition] = None if cp is None else cp.generation
        attempt: AttemptSeen | None = None
        ingest: JudgeCut | None = None
        failure: str | None = None
        paused = False
        worker = getattr(step.action, "publisher", None) or getattr(step.action, "reader", None)
        worker = worker or getattr(step.action, "worker", None)
        if worker is not None and worker in self.scheduler.active:
            paused = self.scheduler.active[worker].state == PAUSED
        if ended is not None:
            if ended.crashed:
                failure = "the process crashed"
            elif ended.error is not None:
                failure = f"{type(ended.error).__name__}: {ended.error}"
            elif isinstance(ended.result, PublishResult):
                r = ended.result
                attempt = AttemptSeen(
                    r.outcome.value,
                    None if r.reason is None else r.reason.value,
                    r.epoch,
                    to_judge_cut(r.cut),
                )
            elif isinstance(ended.result, Cut):
                ingest = to_judge_cut(ended.result)
        return Observed(
            record=record,
            checkpoints=checkpoints,
            generations=generations,
            attempt=attempt,
            ingest=ingest,
            failure=failure,
            paused=paused,
            narrative=says,
        )
