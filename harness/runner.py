"""One run: SUT workers, a world, a schedule, and the checks after every step.

The harness is the scheduler. Each worker is one SUT process (or in-process
session); after the harness writes a request or a reply to a worker it reads
exactly one message back (the SUT handles one request at a time and waits for
each reply), so at any moment every busy worker has exactly one call pending
and the schedule alone decides whose call is answered next and how. Runs are
therefore deterministic for a deterministic SUT: the same schedule gives the
same transcript.

:func:`run_schedule` is the entry point other tools use (the scenario library
runs scripted schedules through it); the search (:mod:`fencepost.harness.search`)
drives :class:`Run` step by step with a chooser.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from fencepost.harness.checks import (
    Finding,
    judge_checkpoint_write,
    judge_ingest_ok,
    judge_publication_write,
    judge_publish_ok,
    judge_state,
)
from fencepost.harness.protocol import (
    CHECKPOINTER_OPS,
    PROTOCOL_VERSION,
    PUBLISHER_OPS,
    Call,
    ErrorReply,
    FetchPage,
    HelloOk,
    IngestOk,
    JSONObject,
    MessageError,
    PublishOk,
    ReadCheckpoint,
    ReadCheckpoints,
    ReadMembership,
    ReadPublication,
    RecordOutcome,
    WriteCheckpoint,
    WritePublication,
    checkpoint_json,
    encode,
    hello_message,
    ingest_message,
    membership_json,
    page_to_json,
    parse_sut_message,
    publish_message,
    record_json,
    reply_conflict,
    reply_ok,
    reply_timeout,
    shutdown_message,
)
from fencepost.harness.rules import Rule, SutFailure, Violation, first
from fencepost.harness.schedule import (
    LOSSES,
    MODES,
    Action,
    Advance,
    Answer,
    Certify,
    Crash,
    Finalize,
    Ingest,
    Inject,
    Publish,
    Reshard,
    Serve,
    describe,
    mode_words,
)
from fencepost.harness.transport import Channel, SutFactory
from fencepost.harness.world import INJECT_KINDS, World, WorldSetup
from fencepost.judge.decide import AttemptLog, WriteAnswer
from fencepost.judge.properties import show
from fencepost.judge.values import Checkpoint, Claim, Cut, Record

#: Calls one request may make before the harness calls it a runaway.
MAX_CALLS_PER_REQUEST = 500
#: Seconds a SUT gets to exit after shutdown before it is killed.
SHUTDOWN_GRACE = 3.0


@dataclass(frozen=True, slots=True)
class TranscriptLine:
    """One line of the conversation: ``->`` harness to SUT, ``<-`` SUT to harness,
    ``**`` a harness note (environment steps, verdicts)."""

    step: int
    worker: str
    direction: str
    text: str

    def to_json(self) -> JSONObject:
        return {"step": self.step, "worker": self.worker, "dir": self.direction, "line": self.text}

    def __str__(self) -> str:
        return f"{self.step:>4} {self.worker:>6} {self.direction} {self.text}"


@dataclass(frozen=True, slots=True)
class StepRecord:
    """One executed step and what happened, in domain words (``drain``: the harness
    answering the remaining calls after the schedule ended)."""

    index: int
    action: Action
    says: str
    drain: bool = False


@dataclass(frozen=True)
class RunResult:
    """Everything one run produced; ``ok`` when no rule was broken."""

    setup: WorldSetup
    violations: tuple[Violation, ...]
    steps: tuple[StepRecord, ...]
    transcript: tuple[TranscriptLine, ...]
    messages: int
    record: Record
    checkpoints: tuple[Checkpoint, ...]
    stderr: dict[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.violations

    @property
    def first(self) -> Violation | None:
        """The violation to report (earliest step, most serious rule)."""
        return first(self.violations)

    @property
    def executed(self) -> tuple[Action, ...]:
        """The schedule's actions that actually ran (drain steps excluded)."""
        return tuple(s.action for s in self.steps if not s.drain)


@dataclass(frozen=True, slots=True)
class PendingCall:
    """The call a busy worker is waiting on, as data: which request made it and what
    it asks (``op`` is the protocol's call name; ``fields`` its own fields)."""

    worker: str
    request_kind: str  # "publish" or "ingest"
    request_id: int
    call_id: int | str
    op: str


@dataclass(frozen=True, slots=True)
class RequestEnd:
    """How a worker's request ended, as the SUT reported it (after the harness's checks).

    For a publication attempt ``outcome``, ``reason``, ``epoch`` and ``cut`` are
    its ``publish_ok``; for an ingest pass ``outcome`` is ``"ingest_ok"`` and
    ``cut`` the cut it reports (``reason`` and ``epoch`` None).
    """

    worker: str
    kind: str  # "publish" or "ingest"
    request_id: int
    outcome: str
    reason: str | None
    epoch: int | None
    cut: Cut


@dataclass(frozen=True)
class Snapshot:
    """The harness's durable state now, as data (what a scenario's expectations read).

    ``writer``: the worker whose attempt wrote the record's op_id (None before any
    write); ``checkpoints``: the stored checkpoint of every member of the current
    epoch (None: none stored); ``unfinal``: per member, the events its source has
    not finalized yet, in the order it finalizes them (position order: a
    ``finalize`` step finalizes the first).
    """

    epoch: int
    record: Record
    writer: str | None
    checkpoints: Mapping[str, Checkpoint | None]
    unfinal: Mapping[str, tuple[str, ...]]


@dataclass
class _Request:
    kind: str  # "publish" or "ingest"
    id: int
    epoch: int = 0
    partition: str = ""
    attempt: AttemptLog | None = None
    losses: int = 0
    calls: int = 0


@dataclass
class _Worker:
    name: str
    role: str  # "publisher" or "reader"
    channel: Channel | None = None
    request: _Request | None = None
    pending: Call | None = None
    failed: bool = False
    incarnation: int = 1
    ended: RequestEnd | None = None

    @property
    def wire_name(self) -> str:
        """The name the SUT is told: ``<worker>.<n>`` after its ``n - 1``-th restart."""
        return self.name if self.incarnation == 1 else f"{self.name}.{self.incarnation}"


class Run:
    """One run in progress (see the module docstring). Use as a context manager or
    call :meth:`finish`; SUT processes are always torn down."""

    def __init__(
        self,
        factory: SutFactory,
        setup: WorldSetup,
        *,
        timeout: float = 10.0,
        max_calls: int = MAX_CALLS_PER_REQUEST,
        transcript: bool = True,
    ) -> None:
        self.factory = factory
        self.setup = setup
        self.world = World.create(setup)
        self.timeout = timeout
        self.max_calls = max_calls
        self.keep_transcript = transcript
        self.workers: dict[str, _Worker] = {}
        for name in setup.publishers:
            self.workers[name] = _Worker(name, "publisher")
        for name in setup.readers:
            self.workers[name] = _Worker(name, "reader")
        self.step = 0
        self.stopped = False
        self.messages = 0
        self.sut_name = ""
        self.sut_levels: tuple[str, ...] = ()
        self._violations: list[Violation] = []
        self._steps: list[StepRecord] = []
        self._lines: list[TranscriptLine] = []
        self._next_id = 0
        self._stderr: dict[str, str] = {}
        self._finished: RunResult | None = None
        self.injections = 0

    # --- bookkeeping --------------------------------------------------------------------

    def _note(self, worker: str, direction: str, text: str) -> None:
        if direction != "**":
            self.messages += 1
        if self.keep_transcript:
            self._lines.append(TranscriptLine(self.step, worker, direction, text))

    def _violate(self, findings: Iterable[Finding], worker: str | None = None) -> None:
        for rule, message in findings:
            self._violations.append(Violation(rule, message, self.step, worker))
            self._note(worker or "harness", "**", f"VIOLATION {rule.value}: {message}")
            self.stopped = True

    def _fail(self, failure: SutFailure) -> None:
        worker = failure.worker
        self._violate([(failure.rule, failure.message)], worker)
        if worker is not None and worker in self.workers:
            self.workers[worker].failed = True

    @property
    def violations(self) -> tuple[Violation, ...]:
        return tuple(self._violations)

    # --- the step-by-step API (public, stable) -------------------------------------------

    def busy(self, worker: str) -> bool:
        """Whether ``worker`` has a request in progress (started, not yet ended)."""
        return self.workers[worker].request is not None

    def pending_call(self, worker: str) -> PendingCall | None:
        """The call ``worker`` waits on (None: idle, or its request just ended)."""
        w = self.workers[worker]
        if w.pending is None or w.request is None:
            return None
        return PendingCall(worker, w.request.kind, w.request.id, w.pending.call_id, w.pending.op)

    def last_end(self, worker: str) -> RequestEnd | None:
        """How ``worker``'s most recent request ended (None: none ended yet).

        Compare its ``request_id`` with the one of :meth:`pending_call` to tell
        whether the request a step drove has ended.
        """
        return self.workers[worker].ended

    def snapshot(self) -> Snapshot:
        """The stores and the source now (see :class:`Snapshot`)."""
        world = self.world
        record = world.record
        owner = None if record.op_id is None else world.op_ids.get(record.op_id)
        checkpoints: dict[str, Checkpoint | None] = {}
        unfinal: dict[str, tuple[str, ...]] = {}
        for partition in world.members():
            checkpoints[partition] = world.stored(world.epoch, partition)
            truth = world.truth[(world.epoch, partition)]
            unfinal[partition] = tuple(ev.id for ev in truth.log[truth.final :])
        return Snapshot(
            world.epoch, record, None if owner is None else owner[0], checkpoints, unfinal
        )

    # --- talking ------------------------------------------------------------------------

    def _send(self, worker: _Worker, message: JSONObject) -> None:
        assert worker.channel is not None
        text = encode(message)
        self._note(worker.name, "->", text)
        worker.channel.send(text, self.timeout)

    def _receive(self, worker: _Worker) -> str:
        assert worker.channel is not None
        line = worker.channel.receive(self.timeout)
        self._note(worker.name, "<-", line)
        return line

    def start(self) -> None:
        """Start every worker and shake hands; a failure stops the run."""
        try:
            for worker in self.workers.values():
                self._greet(worker)
        except SutFailure as failure:
            if failure.worker is None:
                failure = SutFailure(failure.rule, failure.message, "harness")
            self._fail(failure)

    def _greet(self, worker: _Worker) -> None:
        """Start the worker's SUT process (or session) and shake hands."""
        worker.channel = self.factory.start(worker.name)
        self._send(worker, hello_message())
        line = self._receive(worker)
        try:
            msg = parse_sut_message(line)
        except MessageError as exc:
            raise SutFailure(Rule.HANDSHAKE, f"hello answered with {exc}", worker.name) from None
        if not isinstance(msg, HelloOk) or msg.protocol != PROTOCOL_VERSION:
            raise SutFailure(
                Rule.HANDSHAKE,
                f"hello (protocol {PROTOCOL_VERSION}) answered with {line[:200]!r}",
                worker.name,
            )
        level = "publisher" if worker.role == "publisher" else "checkpointer"
        if level not in msg.levels:
            raise SutFailure(
                Rule.HANDSHAKE,
                f"this world needs level {level!r} but the SUT implements "
                f"{', '.join(msg.levels) or 'none'}",
                worker.name,
            )
        self.sut_name, self.sut_levels = msg.name, msg.levels

    # --- what may happen next -----------------------------------------------------------

    def enabled(
        self, fault_budget: int | None = None, inject_budget: int | None = None
    ) -> list[Action]:
        """Every step possible now, in a fixed order (answers, starts, environment).

        ``fault_budget`` leaves out lost responses for a request that already had
        that many; ``inject_budget`` caps misconfigurations per run.
        """
        if self.stopped:
            return []
        actions: list[Action] = []
        for worker in self.workers.values():
            if worker.pending is None:
                continue
            assert worker.request is not None
            for mode in MODES[worker.pending.op]:
                if (
                    mode in LOSSES
                    and fault_budget is not None
                    and worker.request.losses >= fault_budget
                ):
                    continue
                actions.append(Answer(worker.name, mode))
        members = self.world.members()
        for worker in self.workers.values():
            if worker.request is not None:
                continue
            if worker.role == "publisher":
                actions.append(Publish(worker.name))
            else:
                actions.extend(Ingest(worker.name, p) for p in members)
        for p in members:
            if self.world.can_advance(p):
                actions.append(Advance(p))
        for p in members:
            if self.world.can_finalize(p):
                actions.append(Finalize(p))
        if self.world.can_reshard():
            actions.append(Reshard())
        if inject_budget is None or self.injections < inject_budget:
            for p in members:
                for kind in INJECT_KINDS:
                    if self.world.can_inject(p, kind):
                        actions.append(Inject(p, kind))
        return actions

    def possible(self, action: Action) -> bool:
        if self.stopped:
            return False
        if isinstance(action, Publish | Ingest):
            worker = self.workers.get(action.worker)
            if worker is None or worker.request is not None or worker.failed:
                return False
            if isinstance(action, Publish):
                return worker.role == "publisher"
            return worker.role == "reader" and action.partition in self.world.membership.partitions
        if isinstance(action, Answer):
            worker = self.workers.get(action.worker)
            if (
                worker is None
                or worker.pending is None
                or worker.request is None
                or action.mode not in MODES[worker.pending.op]
            ):
                return False
            # A scripted provider answers with its script: the page shapes do not apply.
            return not (
                worker.pending.op == "fetch_page"
                and action.mode not in ("ok", "lost")
                and self.world.scripted(worker.request.epoch, worker.request.partition)
            )
        if isinstance(action, Advance):
            return self.world.can_advance(action.partition)
        if isinstance(action, Finalize):
            return self.world.can_finalize(action.partition)
        if isinstance(action, Reshard):
            return self.world.can_reshard()
        if isinstance(action, Certify):
            return self.world.can_certify(action.partition, action.cut)
        if isinstance(action, Serve):
            return action.partition in self.world.membership.partitions
        if isinstance(action, Crash):
            worker = self.workers.get(action.worker)
            return worker is not None and worker.channel is not None and not worker.failed
        if action.cut is not None and action.kind != "missing":
            try:
                action.cut.validated(self.world.order, "inject.cut")
            except ValueError:
                return False
        return self.world.can_inject(action.partition, action.kind)

    # --- steps --------------------------------------------------------------------------

    def execute(self, action: Action, *, drain: bool = False) -> bool:
        """Run ``action`` if it is possible now; False if it was skipped.

        Every step is followed by the soundness check; the step's own
        judgements (writes, outcomes, explicit certifications) run inside it.
        A ``serve`` step whose events are not the partition's raises
        :class:`~fencepost.harness.world.SetupError` (the caller's mistake).
        """
        if not self.possible(action):
            return False
        self.step += 1
        try:
            says = self._do(action)
        except SutFailure as failure:
            if failure.worker is None and isinstance(action, Publish | Ingest | Answer | Crash):
                failure = SutFailure(failure.rule, failure.message, action.worker)
            self._fail(failure)
            says = f"{describe(action)}: {failure.rule.value}: {failure.message}"
        self._steps.append(StepRecord(self.step, action, says, drain))
        self._violate(judge_state(self.world), getattr(action, "worker", None))
        return True

    def drain(self) -> None:
        """Answer every pending call normally until all workers are idle."""
        while not self.stopped:
            busy = [w for w in self.workers.values() if w.pending is not None]
            if not busy:
                return
            self.execute(Answer(busy[0].name, "ok"), drain=True)

    def _do(self, action: Action) -> str:
        world = self.world
        if isinstance(action, Publish):
            return self._start_publish(self.workers[action.worker])
        if isinstance(action, Ingest):
            return self._start_ingest(self.workers[action.worker], action.partition)
        if isinstance(action, Answer):
            return self._answer(self.workers[action.worker], action.mode)
        if isinstance(action, Crash):
            return self._crash(self.workers[action.worker])
        if isinstance(action, Certify):
            text = self._certify(action)
        elif isinstance(action, Serve):
            claim = None if action.claim is None else Claim(action.claim, action.final)
            # A page that contradicts the ground truth is the caller's mistake: its
            # SetupError propagates out of execute().
            world.serve(
                action.partition, action.token, action.events, action.next_token, claim, action.lost
            )
            text = describe(action) + (
                f"; next token {action.next_token!r}" if action.next_token else "; last page"
            )
        elif isinstance(action, Advance):
            stored = world.advance(action.partition)
            text = (
                f"an honest reader certifies {action.partition} {stored.cut} "
                f"(epoch {stored.epoch}, generation {stored.generation})"
            )
        elif isinstance(action, Finalize):
            event = world.finalize(action.partition)
            truth = world.truth[(world.epoch, action.partition)]
            text = (
                f"the source finalizes {event.id} at {event.at!r} of {action.partition}; "
                f"its final horizon is now {truth.horizon()}"
            )
        elif isinstance(action, Reshard):
            membership = world.reshard()
            text = (
                f"reshard: epoch {membership.epoch} is durable with members "
                f"{', '.join(sorted(membership.partitions)) or 'none'}"
            )
        else:
            self.injections += 1
            stored_cp = world.inject(action.partition, action.kind, action.cut)
            if stored_cp is None:
                text = f"operator deletes {action.partition}'s checkpoint of epoch {world.epoch}"
            else:
                text = (
                    f"operator stores a {action.kind} checkpoint for {action.partition}: "
                    f"{stored_cp.cut} (epoch field {stored_cp.epoch}, scope {stored_cp.scope}, "
                    f"{stored_cp.finality.value})"
                )
        self._note("env", "**", text)
        return text

    def _certify(self, action: Certify) -> str:
        world = self.world
        key = (world.epoch, action.partition)
        before, stored = world.certify(action.partition, action.cut)
        self._violate(
            judge_checkpoint_write(
                world,
                key,
                None if before is None else before.checkpoint,
                before.injected if before is not None else False,
                stored,
            ),
            "env",
        )
        return (
            f"an honest reader certifies {action.partition} {stored.cut} "
            f"(epoch {stored.epoch}, generation {stored.generation})"
        )

    def _crash(self, worker: _Worker) -> str:
        """Kill the worker's process mid-request and start a fresh, greeted one."""
        assert worker.channel is not None
        pending = worker.pending
        doing = (
            "idle"
            if worker.request is None
            else f"in {worker.request.kind} request #{worker.request.id}"
            + ("" if pending is None else f" before its {pending.op} was answered")
        )
        self._note(worker.name, "**", f"crash: the process dies {doing}")
        worker.channel.close(0.0)
        worker.channel = None
        worker.request = None
        worker.pending = None
        worker.incarnation += 1
        self._greet(worker)
        return f"{worker.name} crashes {doing}; restarted as {worker.wire_name}"

    def _next_request_id(self) -> int:
        self._next_id += 1
        return self._next_id

    def _check_idle(self, worker: _Worker) -> None:
        assert worker.channel is not None
        extra = worker.channel.unsolicited()
        if extra is not None:
            self._note(worker.name, "<-", extra)
            raise SutFailure(
                Rule.CALL_PAIRING, f"unsolicited output while idle: {extra[:200]!r}", worker.name
            )

    def _start_publish(self, worker: _Worker) -> str:
        self._check_idle(worker)
        request = _Request(
            "publish", self._next_request_id(), attempt=AttemptLog(self.setup.policy)
        )
        worker.request = request
        self._send(
            worker,
            publish_message(request.id, worker.wire_name, self.setup.stream, self.setup.policy),
        )
        return f"{worker.name} starts publication attempt #{request.id}; {self._await(worker)}"

    def _start_ingest(self, worker: _Worker, partition: str) -> str:
        self._check_idle(worker)
        request = _Request(
            "ingest", self._next_request_id(), epoch=self.world.epoch, partition=partition
        )
        worker.request = request
        self._send(
            worker,
            ingest_message(
                request.id,
                worker.wire_name,
                partition,
                self.setup.scope,
                request.epoch,
                self.world.order,
            ),
        )
        return (
            f"{worker.name} starts ingest pass #{request.id} of {partition} in epoch "
            f"{request.epoch}; {self._await(worker)}"
        )

    def _await(self, worker: _Worker) -> str:
        """Read the worker's next message: a call (now pending) or the request's end."""
        request = worker.request
        assert request is not None
        line = self._receive(worker)
        try:
            msg = parse_sut_message(line)
        except MessageError as exc:
            raise SutFailure(Rule.MESSAGE_SCHEMA, str(exc), worker.name) from None
        if isinstance(msg, ErrorReply):
            raise SutFailure(
                Rule.SUT_ERROR,
                f"the SUT answered {request.kind} request #{request.id} with an error: "
                f"{msg.message[:300]}",
                worker.name,
            )
        if isinstance(msg, Call):
            self._admit_call(worker, request, msg)
            worker.pending = msg
            return f"it calls {msg.op}"
        if request.kind == "publish" and isinstance(msg, PublishOk):
            self._echo(worker, request, msg.id, "publish_ok")
            worker.request = None
            return self._finish_publish(worker, request, msg)
        if request.kind == "ingest" and isinstance(msg, IngestOk):
            self._echo(worker, request, msg.id, "ingest_ok")
            worker.request = None
            return self._finish_ingest(worker, request, msg)
        raise SutFailure(
            Rule.CALL_PAIRING,
            f"{type(msg).__name__} in the middle of {request.kind} request #{request.id}: "
            f"{line[:200]!r}",
            worker.name,
        )

    def _echo(self, worker: _Worker, request: _Request, got: object, what: str) -> None:
        if type(got) is not int or got != request.id:
            raise SutFailure(
                Rule.CALL_PAIRING,
                f"{what} carries id {got!r}; the request's id is {request.id}",
                worker.name,
            )

    def _admit_call(self, worker: _Worker, request: _Request, call: Call) -> None:
        ops = PUBLISHER_OPS if request.kind == "publish" else CHECKPOINTER_OPS
        if call.op not in ops:
            level = "publisher" if request.kind == "publish" else "checkpointer"
            raise SutFailure(
                Rule.CALL_PAIRING,
                f"call {call.op} during a {request.kind} request; the {level} level calls "
                f"only {', '.join(ops)}",
                worker.name,
            )
        payload = call.payload
        if (
            isinstance(
                payload, ReadPublication | ReadMembership | ReadCheckpoints | WritePublication
            )
            and payload.stream != self.setup.stream
        ):
            raise SutFailure(
                Rule.CALL_PAIRING,
                f"{call.op} names stream {payload.stream!r}; the attempt is about "
                f"{self.setup.stream!r}",
                worker.name,
            )
        if (
            isinstance(payload, ReadCheckpoint | FetchPage | WriteCheckpoint)
            and payload.partition != request.partition
        ):
            raise SutFailure(
                Rule.CALL_PAIRING,
                f"{call.op} names partition {payload.partition!r}; the ingest pass is about "
                f"{request.partition!r}",
                worker.name,
            )
        request.calls += 1
        if request.calls > self.max_calls:
            raise SutFailure(
                Rule.RUNAWAY,
                f"{request.kind} request #{request.id} made more than {self.max_calls} calls",
                worker.name,
            )

    # --- answering calls ----------------------------------------------------------------

    def _reply(self, worker: _Worker, message: JSONObject) -> None:
        self._send(worker, message)

    def _answer(self, worker: _Worker, mode: str) -> str:
        call = worker.pending
        request = worker.request
        assert call is not None and request is not None
        worker.pending = None
        if mode in LOSSES:
            request.losses += 1
        payload = call.payload
        if isinstance(
            payload, ReadPublication | ReadMembership | ReadCheckpoints | WritePublication
        ):
            said = self._answer_publisher(worker, request, call, mode)
        else:
            said = self._answer_checkpointer(worker, request, call, mode)
        return f"{worker.name}: {said}; {self._await(worker)}"

    def _answer_publisher(self, worker: _Worker, request: _Request, call: Call, mode: str) -> str:
        log = request.attempt
        assert log is not None
        world = self.world
        payload = call.payload
        if mode in LOSSES and not isinstance(payload, WritePublication):
            log.trouble()
        if isinstance(payload, WritePublication):
            return self._answer_write_publication(worker, request, log, call, payload, mode)
        if mode == "lost":
            self._reply(worker, reply_timeout(call.call_id))
            return f"{call.op} {mode_words(mode)}"
        if isinstance(payload, ReadPublication):
            log.show_record(world.record, "read")
            self._reply(worker, reply_ok(call.call_id, record=record_json(world.record)))
            record = world.record
            return (
                f"read_publication answered {show(record.epoch, record.cut)} rev {record.revision}"
            )
        if isinstance(payload, ReadMembership):
            log.read_membership(world.membership)
            self._reply(
                worker, reply_ok(call.call_id, membership=membership_json(world.membership))
            )
            return f"read_membership answered epoch {world.epoch}"
        assert isinstance(payload, ReadCheckpoints)
        found = tuple(world.checkpoints_of(payload.epoch))
        log.read_checkpoints(payload.epoch, found)
        self._reply(
            worker,
            reply_ok(call.call_id, checkpoints=[checkpoint_json(c) for c in found]),
        )
        listed = ", ".join(f"{c.partition} {c.cut}" for c in found) or "none"
        return f"read_checkpoints(epoch {payload.epoch}) answered [{listed}]"

    def _answer_write_publication(
        self,
        worker: _Worker,
        request: _Request,
        log: AttemptLog,
        call: Call,
        payload: WritePublication,
        mode: str,
    ) -> str:
        world = self.world
        try:
            cut = payload.cut.validated(world.order, "write_publication.cut")
        except ValueError as exc:
            raise SutFailure(Rule.MESSAGE_SCHEMA, str(exc), worker.name) from None
        owner = world.op_ids.get(payload.op_id)
        if owner is not None and owner != (worker.name, request.id):
            raise SutFailure(
                Rule.OP_ID_REUSE,
                f"op_id {payload.op_id!r} was already used by {owner[0]}'s attempt #{owner[1]}",
                worker.name,
            )
        world.op_ids[payload.op_id] = (worker.name, request.id)
        current = world.record
        matches = payload.expected_revision == current.revision
        applied = matches and mode != "lost"
        proposal = show(payload.epoch, cut)
        if applied:
            new = Record(payload.epoch, cut, current.revision + 1, payload.op_id)
            world.record = new
            self._violate(
                judge_publication_write(world, current, new, self.setup.policy), worker.name
            )
        if mode == "ok":
            answer = WriteAnswer.APPLIED if applied else WriteAnswer.CONFLICT
        else:
            answer = WriteAnswer.APPLIED_LOST if applied else WriteAnswer.LOST
        log.wrote(payload.op_id, payload.epoch, cut, answer)
        if mode != "ok":
            self._reply(worker, reply_timeout(call.call_id))
            done = "applied" if applied else "not applied"
            return (
                f"write_publication {proposal} at rev {payload.expected_revision}: "
                f"{done}, response lost"
            )
        if applied:
            log.show_record(world.record, "ack")
            self._reply(worker, reply_ok(call.call_id, record=record_json(world.record)))
            return f"write_publication {proposal} at rev {payload.expected_revision} applied"
        log.show_record(current, "conflict")
        self._reply(worker, reply_conflict(call.call_id, record=record_json(current)))
        return (
            f"write_publication {proposal} at rev {payload.expected_revision} conflicts "
            f"(record is rev {current.revision} {show(current.epoch, current.cut)})"
        )

    def _answer_checkpointer(
        self, worker: _Worker, request: _Request, call: Call, mode: str
    ) -> str:
        world = self.world
        payload = call.payload
        key = (request.epoch, request.partition)
        if isinstance(payload, ReadCheckpoint):
            if mode == "lost":
                self._reply(worker, reply_timeout(call.call_id))
                return f"read_checkpoint {mode_words(mode)}"
            stored = world.stored(*key)
            self._reply(worker, reply_ok(call.call_id, checkpoint=checkpoint_json(stored)))
            held = "none" if stored is None else f"{stored.cut} gen {stored.generation}"
            return f"read_checkpoint answered {held}"
        if isinstance(payload, FetchPage):
            index = self._token_index(worker, key, payload.token)
            if mode == "lost":
                self._reply(worker, reply_timeout(call.call_id))
                return f"fetch_page {mode_words(mode)}"
            if world.scripted(*key):
                scripted = world.scripted_page(key[0], key[1], payload.token)
                if scripted is None:
                    self._reply(worker, reply_timeout(call.call_id))
                    return f"fetch_page of {payload.token!r} times out (scripted)"
                page = scripted
                index = -1
            else:
                page = world.page(key[0], key[1], index, mode)
            self._reply(worker, reply_ok(call.call_id, page=page_to_json(page)))
            ids = ", ".join(e.id for e in page.events) or "no events"
            claim = (
                "no claim"
                if page.claim is None
                else f"{'final' if page.claim.final else 'non-final'} claim {page.claim.cut}"
            )
            at = repr(payload.token) if index < 0 else str(index)
            return f"fetch_page at {at} {mode_words(mode)}: {ids}; {claim}"
        if isinstance(payload, RecordOutcome):
            known = {ev.id for ev in world.truth[key].log}
            if payload.event_id not in known:
                raise SutFailure(
                    Rule.CALL_PAIRING,
                    f"record_outcome names event {payload.event_id!r}, which the provider never "
                    f"handed out for {key[1]} in epoch {key[0]}",
                    worker.name,
                )
            if mode != "lost":
                world.outcomes.setdefault(payload.event_id, payload.outcome)
            if mode == "ok":
                self._reply(worker, reply_ok(call.call_id))
            else:
                self._reply(worker, reply_timeout(call.call_id))
            return f"record_outcome {payload.event_id} {mode_words(mode)}"
        assert isinstance(payload, WriteCheckpoint)
        return self._answer_write_checkpoint(worker, call, payload, key, mode)

    def _token_index(self, worker: _Worker, key: tuple[int, str], token: str | None) -> int:
        if token is None:
            return 0
        issued = self.world.tokens.get(token)
        if issued is None or issued[:2] != key:
            raise SutFailure(
                Rule.OPAQUE_TOKEN,
                f"fetch_page token {token!r} was never issued for {key[1]} in epoch {key[0]}",
                worker.name,
            )
        return issued[2]

    def _answer_write_checkpoint(
        self,
        worker: _Worker,
        call: Call,
        payload: WriteCheckpoint,
        key: tuple[int, str],
        mode: str,
    ) -> str:
        world = self.world
        checkpoint = payload.checkpoint
        try:
            checkpoint.cut.validated(world.order, "write_checkpoint.checkpoint.cut")
        except ValueError as exc:
            raise SutFailure(Rule.MESSAGE_SCHEMA, str(exc), worker.name) from None
        entry = world.checkpoints.get(key)
        current = None if entry is None else entry.checkpoint
        stored_generation = None if current is None else current.generation
        applied = stored_generation == payload.expected_generation and mode != "lost"
        if applied:
            stored = world.store_checkpoint(key, checkpoint)
            self._violate(
                judge_checkpoint_write(
                    world, key, current, entry.injected if entry else False, stored
                ),
                worker.name,
            )
        expected = payload.expected_generation
        if mode != "ok":
            self._reply(worker, reply_timeout(call.call_id))
            done = "applied" if applied else "not applied"
            return f"write_checkpoint {checkpoint.cut} (expected gen {expected}): {done}, lost"
        if applied:
            now = world.stored(*key)
            self._reply(worker, reply_ok(call.call_id, checkpoint=checkpoint_json(now)))
            assert now is not None
            return (
                f"write_checkpoint {checkpoint.cut} (expected gen {expected}) applied "
                f"as gen {now.generation}"
            )
        self._reply(worker, reply_conflict(call.call_id, checkpoint=checkpoint_json(current)))
        held = "none" if current is None else f"{current.cut} gen {current.generation}"
        return (
            f"write_checkpoint {checkpoint.cut} (expected gen {expected}) conflicts "
            f"(stored: {held})"
        )

    # --- ends of requests ----------------------------------------------------------------

    def _finish_publish(self, worker: _Worker, request: _Request, reply: PublishOk) -> str:
        try:
            reply.cut.validated(self.world.order, "publish_ok.cut")
        except ValueError as exc:
            raise SutFailure(Rule.MESSAGE_SCHEMA, str(exc), worker.name) from None
        assert request.attempt is not None
        self._violate(judge_publish_ok(self.world.order, request.attempt, reply), worker.name)
        worker.ended = RequestEnd(
            worker.name,
            "publish",
            request.id,
            reply.outcome,
            reply.reason,
            reply.epoch,
            reply.cut,
        )
        reason = f" {reply.reason}" if reply.reason else ""
        return f"it ends: {reply.outcome}{reason} {show(reply.epoch, reply.cut)}"

    def _finish_ingest(self, worker: _Worker, request: _Request, reply: IngestOk) -> str:
        try:
            reply.cut.validated(self.world.order, "ingest_ok.cut")
        except ValueError as exc:
            raise SutFailure(Rule.MESSAGE_SCHEMA, str(exc), worker.name) from None
        self._violate(
            judge_ingest_ok(self.world, (request.epoch, request.partition), reply), worker.name
        )
        worker.ended = RequestEnd(
            worker.name, "ingest", request.id, "ingest_ok", None, None, reply.cut
        )
        return f"it ends: ingest_ok {reply.cut}"

    # --- teardown -----------------------------------------------------------------------

    def finish(self) -> RunResult:
        """Check for stray output, shut every worker down, reap it, and report."""
        if self._finished is not None:
            return self._finished
        if not self.stopped:
            for worker in self.workers.values():
                if worker.channel is None:
                    continue
                try:
                    self._check_idle(worker)
                except SutFailure as failure:
                    self._fail(failure)
                    break
        clean = not self.stopped
        for worker in self.workers.values():
            channel = worker.channel
            if channel is None:
                continue
            if not worker.failed:
                with contextlib.suppress(SutFailure, OSError):
                    self._send(worker, shutdown_message())
            grace = SHUTDOWN_GRACE if clean else 0.3
            status = channel.close(grace)
            if clean and status != 0:
                how = (
                    f"did not exit within {grace:g}s of shutdown (killed)"
                    if status is None
                    else f"exited with status {status} after shutdown"
                )
                self._violate([(Rule.SHUTDOWN, how)], worker.name)
            if self._violations and any(v.worker == worker.name for v in self._violations):
                self._stderr[worker.name] = channel.stderr_tail()
        self._finished = RunResult(
            setup=self.setup,
            violations=tuple(self._violations),
            steps=tuple(self._steps),
            transcript=tuple(self._lines),
            messages=self.messages,
            record=self.world.record,
            checkpoints=tuple(s.checkpoint for _, s in sorted(self.world.checkpoints.items())),
            stderr=dict(self._stderr),
        )
        return self._finished

    def __enter__(self) -> Run:
        return self

    def __exit__(self, *exc: object) -> None:
        self.finish()


def run_schedule(
    factory: SutFactory,
    setup: WorldSetup,
    schedule: Iterable[Action],
    *,
    timeout: float = 10.0,
    drain: bool = True,
    transcript: bool = True,
) -> RunResult:
    """Run ``schedule`` against fresh SUT workers in a world built from ``setup``.

    Every step is checked (see :mod:`fencepost.harness.checks`); the run stops
    at the first step that breaks a rule. Steps that are not possible when
    their turn comes are skipped. With ``drain`` the remaining pending calls
    are answered normally afterwards, so every started request ends and its
    outcome is judged. The SUT processes are always shut down and reaped.
    """
    with Run(factory, setup, timeout=timeout, transcript=transcript) as run:
        run.start()
        for action in schedule:
            if run.stopped:
                break
            run.execute(action)
        if drain:
            run.drain()
    return run.finish()
