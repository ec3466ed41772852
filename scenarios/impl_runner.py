"""Run a scenario against the implementation: real Publisher and PartitionReader, step by step.

The world of the scenario (:class:`~fencepost.scenarios.impl_world.ImplWorld`) is
built on a real store (:class:`MemoryStore` or :class:`SQLiteStore`): the first
epoch's membership, then every step. Workers are the implementation's own
objects, or those of the catalog's variant a ``-bad`` scenario names
(:data:`fencepost.mutants.CATALOG`), each request running as a
:class:`~fencepost.properties.lockstep.Worker`: the production code runs on its
own thread, and every store or provider call it makes waits here until this
driver answers it. That is the one scheduler that drives the implementation
call by call (the refinement check uses it too), so the schedule alone decides
the interleaving and a run is deterministic. The driver answers each call as
the scenario scripts the network:

- **faults** answer a worker's n-th call of an operation ``ok``, ``lost`` (not
  applied, the response lost: :class:`IndefiniteStoreError`, or
  :class:`ProviderTimeout` for a fetch) or ``applied_lost`` (applied, then the
  response lost);
- **pauses** leave a request waiting just before its n-th call of an operation,
  so other workers can act in between (a late retry, a concurrent publisher),
  and a crash can end it there.

The verdicts are the judge's (:mod:`fencepost.judge`), handed the facts by the
world after every change and, at the end of an attempt, everything the attempt
was told.
"""

from __future__ import annotations

import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from fencepost.impl.cuts import Cut
from fencepost.impl.faults import Crash as ProcessCrash
from fencepost.impl.memory import MemoryStore
from fencepost.impl.provider import Claim, Event, ProviderTimeout
from fencepost.impl.publisher import Policy, Publisher, PublishResult
from fencepost.impl.reader import PartitionReader
from fencepost.impl.records import Checkpoint, Membership, PublicationRecord
from fencepost.impl.stores import Applied, Conflict, IndefiniteStoreError, Store
from fencepost.judge import values as jv
from fencepost.judge.decide import AttemptLog, Reported, WriteAnswer
from fencepost.mutants import CATALOG, CORRECT, Variant
from fencepost.properties.lockstep import (
    GATED_PROVIDER,
    GATED_STORE,
    Call,
    LockstepError,
    Reply,
    Worker,
)
from fencepost.scenarios.convert import (
    to_impl_cut,
    to_impl_membership,
    to_impl_order,
    to_judge_checkpoint,
    to_judge_cut,
    to_judge_membership,
    to_judge_record,
)
from fencepost.scenarios.impl_world import OUTCOME_TEXT, ImplWorld, PageDef
from fencepost.scenarios.outcome import (
    AttemptSeen,
    Breach,
    Observed,
    RecordSeen,
    ScenarioRuntimeError,
)
from fencepost.scenarios.spec import (
    Certify,
    Crash,
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
from fencepost.vocabulary.backends import STORE_BACKENDS

#: The store backends the scenario runner drives (the vocabulary's ``in_scenarios``).
BACKENDS: tuple[str, ...] = tuple(b.name for b in STORE_BACKENDS.values() if b.in_scenarios)


@dataclass(frozen=True, slots=True)
class CallSeen:
    """One store or provider call of a request, how the scenario answered it, and what
    the store said (None when the call was lost before it was applied)."""

    op: str
    nth: int
    mode: str
    response: object
    args: tuple[object, ...] = ()


@dataclass
class Request:
    """One publication attempt or ingest pass in progress, on its own lockstep worker."""

    worker: str
    kind: str  # "publish" or "ingest"
    faults: Mapping[str, tuple[str, ...]]
    pause: Pause | None
    partition: str = ""
    epoch: int = 0
    counts: dict[str, int] = field(default_factory=dict)
    log: list[CallSeen] = field(default_factory=list)
    parked_at: str = ""
    thread: Worker | None = None

    @property
    def paused(self) -> bool:
        return self.thread is not None and self.thread.pending is not None

    @property
    def crashed(self) -> bool:
        done = self.thread.finished if self.thread is not None else None
        return done is not None and isinstance(done.error, ProcessCrash)


def _handled(event: Event) -> str:
    return OUTCOME_TEXT


class ImplDriver:
    """Runs one scenario on the implementation (see the module docstring).

    ``variant`` is the implementation to run (default: the catalog entry the
    scenario names, or the correct implementation).
    """

    def __init__(
        self, scenario: Scenario, backend: str = "memory", *, variant: Variant | None = None
    ) -> None:
        if backend not in BACKENDS:
            raise ValueError(f"backend must be one of {', '.join(BACKENDS)}, got {backend!r}")
        self.sc = scenario
        self.backend = backend
        if variant is None:
            variant = CORRECT if scenario.variant is None else CATALOG[scenario.variant]
        self.variant = variant
        self._tmp: tempfile.TemporaryDirectory[str] | None = None
        self._store: Store | None = None
        self._world: ImplWorld | None = None
        self._publishers: dict[str, Publisher] = {}
        self._readers: dict[tuple[str, str, int], PartitionReader] = {}
        self._active: dict[str, Request] = {}

    @property
    def world(self) -> ImplWorld:
        assert self._world is not None, "begin() first"
        return self._world

    @property
    def breach(self) -> Breach | None:
        return None if self._world is None else self._world.breach

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
        self._world = ImplWorld(self.sc, store)

    def close(self) -> None:
        for request in list(self._active.values()):
            if request.thread is not None and request.thread.pending is not None:
                request.thread.reply(Reply(error=ProcessCrash("the scenario ended")))
        self._active.clear()
        if self._store is not None:
            self._store.close()
        if self._tmp is not None:
            self._tmp.cleanup()

    # -- one step ----------------------------------------------------------------------

    def step(self, step: Step) -> Observed:
        world = self.world
        world.step = step
        action = step.action
        ended: Request | None = None
        if isinstance(action, Certify):
            says = world.certify(action.partition, action.cut)
        elif isinstance(action, Misconfigure):
            says = world.misconfigure(action.partition, action.kind, action.cut)
        elif isinstance(action, Finalize):
            world.final.update(action.events)
            says = f"the source finalizes {', '.join(action.events)}"
        elif isinstance(action, Reshard):
            says = world.reshard(action.epoch)
        elif isinstance(action, Serve):
            says = self._serve(action)
        elif isinstance(action, Publish | Ingest):
            request = self._start(action)
            ended = self._run(request)
            says = self._said(request)
        elif isinstance(action, Resume):
            request = self._paused(action.worker, "resume")
            request.pause = action.pause
            ended = self._run(request)
            says = f"{action.worker} resumes: {self._said(request)}"
        else:
            assert isinstance(action, Crash)
            request = self._paused(action.worker, "crash")
            self._crash(request)
            says = f"{action.worker} crashes at its pause point and will restart with no memory"
        if ended is not None:
            self._ended(ended)
        if world.breach is None:
            world.judge_soundness()
        return self._observe(step, ended, says)

    def _paused(self, worker: str, what: str) -> Request:
        request = self._active.get(worker)
        if request is None or not request.paused:
            raise ScenarioRuntimeError(f"{worker} has no paused request to {what}")
        return request

    # -- requests ----------------------------------------------------------------------

    def _start(self, action: Publish | Ingest) -> Request:
        try:
            return self._started(action)
        except LockstepError as exc:
            raise ScenarioRuntimeError(str(exc)) from None

    def _started(self, action: Publish | Ingest) -> Request:
        if isinstance(action, Publish):
            publisher = self._publisher(action.publisher)
            request = Request(action.publisher, "publish", action.faults, action.pause)
            request.thread = Worker(action.publisher, self.world.store, publisher.attempt)
        else:
            epoch = self.world.epoch
            reader = self._reader(action.reader, action.partition, epoch)
            request = Request(
                action.reader, "ingest", action.faults, action.pause, action.partition, epoch
            )
            pages = action.max_pages
            request.thread = Worker(action.reader, self.world.store, lambda: reader.run_pass(pages))
        self._active[request.worker] = request
        return request

    def _run(self, request: Request) -> Request | None:
        """Answer the request's calls until it ends (returned) or reaches its pause (None)."""
        thread = request.thread
        assert thread is not None
        while thread.pending is not None:
            call = thread.pending
            nth = request.counts.get(call.op, 0) + 1
            pause = request.pause
            if pause is not None and pause.op == call.op and pause.nth == nth:
                request.pause = None
                request.parked_at = str(pause)
                return None
            request.counts[call.op] = nth
            try:
                thread.reply(self._answer(request, call, nth))
            except LockstepError as exc:
                raise ScenarioRuntimeError(str(exc)) from None
        self._active.pop(request.worker, None)
        return request

    def _answer(self, request: Request, call: Call, nth: int) -> Reply:
        modes = request.faults.get(call.op, ())
        mode = modes[nth - 1] if nth <= len(modes) else "ok"
        lost = ProviderTimeout if call.op == "fetch_page" else IndefiniteStoreError
        if mode == "lost":
            request.log.append(CallSeen(call.op, nth, mode, None, call.args))
            return Reply(error=lost(f"scripted: {request.worker}'s {call.op} #{nth}: lost"))
        try:
            response = self._perform(request, call)
        except (ProviderTimeout, IndefiniteStoreError) as exc:
            request.log.append(CallSeen(call.op, nth, "lost", None, call.args))
            return Reply(error=exc)
        except ScenarioRuntimeError:
            raise
        except Exception as exc:  # the store refused: the production code gets the error
            request.log.append(CallSeen(call.op, nth, mode, exc, call.args))
            return Reply(error=exc)
        request.log.append(CallSeen(call.op, nth, mode, response, call.args))
        if mode == "applied_lost":
            return Reply(
                error=lost(f"scripted: {request.worker}'s {call.op} #{nth}: applied, response lost")
            )
        return Reply(value=response)

    def _perform(self, request: Request, call: Call) -> object:
        """Carry out one call on the world (in the driver's thread)."""
        world = self.world
        args = call.args
        stream = self.sc.stream
        if call.op == "read_publication":
            return world.store.read_publication(stream)
        if call.op == "read_membership":
            epoch = args[1] if len(args) > 1 else None
            assert epoch is None or isinstance(epoch, int)
            return world.store.read_membership(stream, epoch)
        if call.op == "read_checkpoints":
            assert isinstance(args[1], int)
            return world.read_checkpoints(args[1])
        if call.op == "write_publication":
            expected, epoch, cut, op_id = args[1], args[2], args[3], args[4]
            assert isinstance(expected, int) and isinstance(epoch, int)
            assert isinstance(cut, Cut) and isinstance(op_id, str)
            world.record_publication_writer(op_id, request.worker)
            return world.write_publication(expected, epoch, cut, op_id)
        if call.op == "read_checkpoint":
            epoch, partition = args[1], args[2]
            assert isinstance(epoch, int) and isinstance(partition, str)
            return world.read_checkpoint(epoch, partition)
        if call.op == "write_checkpoint":
            expected_generation, checkpoint = args[1], args[2]
            assert expected_generation is None or isinstance(expected_generation, int)
            assert isinstance(checkpoint, Checkpoint)
            labels = (request.partition, request.epoch)
            return world.write_checkpoint(expected_generation, checkpoint, labels)
        if call.op == "record_outcome":
            event_id, outcome = args[1], args[2]
            assert isinstance(event_id, str) and isinstance(outcome, str)
            return world.store.record_outcome(stream, event_id, outcome)
        if call.op == "outcomes":
            ids = args[1]
            assert isinstance(ids, tuple)
            return world.store.outcomes(stream, [str(i) for i in ids])
        if call.op == "fetch_page":
            partition, token = args[0], args[1]
            assert isinstance(partition, str) and (token is None or isinstance(token, str))
            return world.page(request.epoch, partition, token)
        raise ScenarioRuntimeError(
            f"{request.worker} made a call the scenario runner lacks: {call}"
        )

    def _crash(self, request: Request) -> None:
        thread = request.thread
        assert thread is not None and thread.pending is not None
        thread.reply(Reply(error=ProcessCrash(f"{request.worker} crashed at its pause point")))
        self._active.pop(request.worker, None)
        self._publishers.pop(request.worker, None)
        for key in [k for k in self._readers if k[0] == request.worker]:
            del self._readers[key]

    def _ended(self, request: Request) -> None:
        thread = request.thread
        assert thread is not None and thread.finished is not None
        result = thread.finished.value
        if request.kind == "publish" and isinstance(result, PublishResult):
            reported = Reported(
                result.outcome.value,
                result.epoch,
                jv.NOTHING if result.cut is None else to_judge_cut(result.cut),
                None if result.reason is None else result.reason.value,
            )
            self.world.judge_attempt(self._told(request), reported)
        elif request.kind == "ingest" and isinstance(result, Cut):
            self.world.judge_ingest(request.epoch, request.partition, result)

    def _told(self, request: Request) -> AttemptLog:
        """Everything the attempt was told, in order, as the judge reads it."""
        log = AttemptLog(self.sc.policy)
        for call in request.log:
            answer = call.response
            if call.mode == "lost" or (
                call.mode == "applied_lost" and call.op != "write_publication"
            ):
                if call.op == "write_publication":
                    log.wrote(
                        str(call.args[4]), _int(call.args[2]), _cut(call.args[3]), WriteAnswer.LOST
                    )
                else:
                    log.trouble()
                continue
            if call.op == "read_publication" and isinstance(answer, PublicationRecord):
                log.show_record(to_judge_record(answer))
            elif call.op == "read_membership" and isinstance(answer, Membership):
                log.read_membership(to_judge_membership(answer))
            elif call.op == "read_checkpoints" and isinstance(answer, Sequence):
                log.read_checkpoints(
                    _int(call.args[1]), tuple(to_judge_checkpoint(c) for c in answer)
                )
            elif call.op == "write_publication":
                op_id, epoch, cut = str(call.args[4]), _int(call.args[2]), _cut(call.args[3])
                if call.mode == "applied_lost":
                    log.wrote(op_id, epoch, cut, WriteAnswer.APPLIED_LOST)
                elif isinstance(answer, Applied):
                    log.wrote(op_id, epoch, cut, WriteAnswer.APPLIED)
                    log.show_record(to_judge_record(answer.record), "ack")
                elif isinstance(answer, Conflict):
                    log.wrote(op_id, epoch, cut, WriteAnswer.CONFLICT)
                    log.show_record(to_judge_record(answer.record), "conflict")
        return log

    def _said(self, request: Request) -> str:
        who = request.worker
        if request.paused:
            return f"{who} pauses {request.parked_at}"
        thread = request.thread
        assert thread is not None and thread.finished is not None
        if request.crashed:
            return f"{who} crashed"
        if thread.finished.error is not None:
            error = thread.finished.error
            return f"{who}'s request raised {type(error).__name__}: {error}"
        result = thread.finished.value
        if isinstance(result, PublishResult):
            reason = f" {result.reason.value}" if result.reason else ""
            cut = None if result.cut is None else to_judge_cut(result.cut)
            return (
                f"{who}: {result.outcome.value}{reason} (epoch {result.epoch}, "
                f"{format_cut(cut)}) after {result.attempts} write(s)"
            )
        if isinstance(result, Cut):
            return f"{who}'s pass ends certifying {format_cut(to_judge_cut(result))}"
        return f"{who} ended"

    # -- workers -----------------------------------------------------------------------

    def _publisher(self, worker: str) -> Publisher:
        publisher = self._publishers.get(worker)
        if publisher is None:
            # A restarted process must not reuse an op_id its previous incarnation wrote with.
            first = sum(1 for w in self.world.writers.values() if w == worker) + 1
            publisher = self.variant.publisher(
                GATED_STORE,
                self.sc.stream,
                worker,
                Policy(self.sc.policy),
                self.sc.max_retries,
                first_op=first,
            )
            self._publishers[worker] = publisher
        return publisher

    def _reader(self, worker: str, partition: str, epoch: int) -> PartitionReader:
        key = (worker, partition, epoch)
        reader = self._readers.get(key)
        if reader is None:
            reader = self.variant.reader(
                GATED_STORE,
                GATED_PROVIDER,
                self.sc.stream,
                partition,
                epoch,
                self.sc.scope,
                to_impl_order(self.sc.order_of(epoch, partition)),
                _handled,
                max_retries=self.sc.max_retries,
            )
            self._readers[key] = reader
        return reader

    # -- environment -------------------------------------------------------------------

    def _serve(self, action: Serve) -> str:
        world = self.world
        key = (world.epoch, action.partition, action.token)
        claim = None if action.claim is None else Claim(to_impl_cut(action.claim), action.final)
        world.pages[key] = PageDef(action.events, action.next, claim)
        if action.lost:
            world.page_losses[key] = action.lost
        at = "the start" if action.token is None else repr(action.token)
        shown = (
            "no claim"
            if action.claim is None
            else f"a {'final' if action.final else 'non-final'} claim {format_cut(action.claim)}"
        )
        return (
            f"the provider serves {action.partition} at {at}: "
            f"{', '.join(action.events) or 'no events'}; {shown}; next "
            f"{'none' if action.next is None else repr(action.next)}"
        )

    # -- observation -------------------------------------------------------------------

    def _observe(self, step: Step, ended: Request | None, says: str) -> Observed:
        world = self.world
        rec = world.publication()
        record = RecordSeen(
            rec.epoch,
            to_judge_cut(rec.cut),
            rec.revision,
            None if rec.op_id is None else world.writers.get(rec.op_id),
        )
        checkpoints: dict[str, jv.Cut | None] = {}
        generations: dict[str, int | None] = {}
        for partition in self.sc.epoch_def(world.epoch).members:
            cp = world.read_checkpoint(world.epoch, partition)
            checkpoints[partition] = None if cp is None else to_judge_cut(cp.cut)
            generations[partition] = None if cp is None else cp.generation
        attempt: AttemptSeen | None = None
        ingest: jv.Cut | None = None
        failure: str | None = None
        action = step.action
        worker = getattr(action, "publisher", None) or getattr(action, "reader", None)
        worker = worker or getattr(action, "worker", None)
        paused = worker is not None and worker in self._active and self._active[worker].paused
        if ended is not None and ended.thread is not None and ended.thread.finished is not None:
            done = ended.thread.finished
            if ended.crashed:
                failure = "the process crashed"
            elif done.error is not None:
                failure = f"{type(done.error).__name__}: {done.error}"
            elif isinstance(done.value, PublishResult):
                r = done.value
                attempt = AttemptSeen(
                    r.outcome.value,
                    None if r.reason is None else r.reason.value,
                    r.epoch,
                    None if r.cut is None else to_judge_cut(r.cut),
                )
            elif isinstance(done.value, Cut):
                ingest = to_judge_cut(done.value)
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


def _int(value: object) -> int:
    assert isinstance(value, int)
    return value


def _cut(value: object) -> jv.Cut:
    assert isinstance(value, Cut)
    return to_judge_cut(value)
