"""One run: SUT workers, a world, a schedule, and the checks after every step.

The harness is the scheduler. Each worker is one SUT process (or in-process
session); after the harness writes a request or a reply to a worker it reads
exactly one message back (the SUT handles one request at a time and waits for
each reply), so at any moment every busy worker has exactly one call pending
and the schedule alone decides whose call is answered next and how. Runs are
therefore deterministic for a deterministic SUT: the same schedule gives the
same transcript.

:func:`run_schedule` is the entry point other tools use (the scenario library
runs scripted schedules through it); the searches
(:mod:`fencepost.harness.randomized`, :mod:`fencepost.harness.exhaustive`) drive
:class:`Run` step by step.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Mapping

from fencepost.harness.checks import (
    judge_checkpoint_write,
    judge_state,
)
from fencepost.harness.classes import world_classes
from fencepost.harness.coverage import Seen, Situation, order_situation
from fencepost.harness.pool import SutPool
from fencepost.harness.power import Caught
from fencepost.harness.protocol import (
    PROTOCOL_VERSION,
    HelloOk,
    hello_message,
    ingest_message,
    parse_sut_message,
    publish_message,
    shutdown_message,
)
from fencepost.harness.results import (
    PendingCall,
    RequestEnd,
    RunResult,
    Snapshot,
    StepRecord,
    StoredCheckpoint,
    TranscriptLine,
)
from fencepost.harness.rules import Rule, SutFailure, Violation
from fencepost.harness.schedule import (
    CONFLICT_UNTIL_END,
    LOSSES,
    LOST_UNTIL_END,
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
)
from fencepost.harness.serving import MAX_CALLS_PER_REQUEST, Conversation, _Request, _Worker
from fencepost.harness.transport import SHUTDOWN_GRACE, SutFactory, ending_problem
from fencepost.harness.world import INJECT_KINDS, World, WorldSetup
from fencepost.inputs.jsonlines import (
    MessageError,
)
from fencepost.judge.cuts import covers
from fencepost.judge.decide import AttemptLog
from fencepost.judge.values import Checkpoint, Claim, Coordinate, Record


class Run(Conversation):
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
        self.seen = Seen()
        self.caught = Caught()
        self._cuts: set[tuple[str, Coordinate]] = set()
        self.seen.add(order_situation(setup.order))
        if any(
            isinstance(ev.at, str) and any(ord(ch) > 0xFFFF for ch in ev.at)
            for epoch in setup.epochs
            for part in epoch.partitions
            for ev in part.events
        ):
            self.seen.add(Situation.ASTRAL_STRINGS)
        self.injections = 0
        self.crashes = 0

    # --- bookkeeping --------------------------------------------------------------------

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
        stored = tuple(
            StoredCheckpoint(key[0], s.checkpoint, s.injected)
            for key, s in sorted(world.checkpoints.items())
        )
        return Snapshot(
            world.epoch, record, None if owner is None else owner[0], checkpoints, unfinal, stored
        )

    # --- talking ------------------------------------------------------------------------

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
        """Start the worker's SUT process (or session) and shake hands.

        From a :class:`~fencepost.harness.pool.SutPool`, a kept process that was
        reset at the end of an earlier run is used instead: it is greeted already.
        """
        pool = self.factory if isinstance(self.factory, SutPool) else None
        kept = None if pool is None or pool.hello is None else pool.acquire(worker.name)
        if kept is not None and pool is not None and pool.hello is not None:
            worker.channel = kept
            self._note(worker.name, "**", "a process kept from an earlier run (reset)")
            msg = pool.hello
        else:
            worker.channel = self.factory.start(worker.name)
            self._send(worker, hello_message())
            line = self._receive(worker)
            try:
                parsed = parse_sut_message(line)
            except MessageError as exc:
                raise SutFailure(
                    Rule.HANDSHAKE, f"hello answered with {exc}", worker.name
                ) from None
            if not isinstance(parsed, HelloOk) or parsed.protocol != PROTOCOL_VERSION:
                raise SutFailure(
                    Rule.HANDSHAKE,
                    f"hello (protocol {PROTOCOL_VERSION}) answered with {line[:200]!r}",
                    worker.name,
                )
            msg = parsed
            if pool is not None and pool.hello is None:
                pool.hello = msg
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
        self,
        fault_budget: int | None = None,
        inject_budget: int | None = None,
        crash_budget: int = 0,
    ) -> list[Action]:
        """Every step possible now, in a fixed order (answers, starts, environment).

        ``fault_budget`` leaves out lost responses for a request that already had
        that many; ``inject_budget`` caps misconfigurations per run;
        ``crash_budget`` is how many crashes of a busy worker a run may still have
        (none by default).
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
        if self.crashes < crash_budget:
            actions.extend(Crash(w.name) for w in self.workers.values() if w.pending is not None)
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
            if worker is None or worker.pending is None or worker.request is None:
                return False
            if action.mode == LOST_UNTIL_END:
                return True
            if action.mode == CONFLICT_UNTIL_END:
                return worker.role == "publisher"
            if action.mode not in MODES[worker.pending.op]:
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
        state = self.snapshot() if self.keep_transcript else None
        self._steps.append(StepRecord(self.step, action, says, drain, state))
        self._violate(judge_state(self.world), getattr(action, "worker", None))
        self._saw_cuts()
        return True

    def _saw_cuts(self) -> None:
        """Both endpoint kinds at one coordinate, and successor edges, among the stored cuts."""
        world = self.world
        cuts = [world.record.cut] + [
            s.checkpoint.cut for key, s in world.checkpoints.items() if key[0] == world.epoch
        ]
        for cut in cuts:
            if cut.at is None:
                continue
            mark = (cut.endpoint.value, cut.at)
            if mark in self._cuts:
                continue
            self._cuts.add(mark)
            other = "through" if cut.endpoint.value == "before" else "before"
            if (other, cut.at) in self._cuts:
                self.seen.add(Situation.BOTH_KINDS_ONE_COORDINATE)
            if world.order.successor and isinstance(cut.at, int):
                edge = (
                    ("before", cut.at + 1)
                    if cut.endpoint.value == "through"
                    else ("through", cut.at - 1)
                )
                if edge in self._cuts:
                    self.seen.add(Situation.SUCCESSOR_EDGE)

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
        if isinstance(action, Answer) and action.mode == LOST_UNTIL_END:
            return self._lose_until_end(self.workers[action.worker])
        if isinstance(action, Answer) and action.mode == CONFLICT_UNTIL_END:
            return self._conflict_until_end(self.workers[action.worker])
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
            before = {k: s.checkpoint for k, s in world.checkpoints.items() if k[0] == world.epoch}
            membership = world.reshard()
            self.seen.add(
                Situation.CUTOVER_MONOTONE
                if self.setup.policy == "monotone"
                else Situation.CUTOVER_RESET
            )
            if reshard_moves_below(world, before, membership.epoch):
                self.seen.add(Situation.RESHARD_BELOW_CHECKPOINT)
            text = (
                f"reshard: epoch {membership.epoch} is durable with members "
                f"{', '.join(sorted(membership.partitions)) or 'none'}"
            )
        else:
            self.injections += 1
            stored_cp = world.inject(action.partition, action.kind, action.cut)
            if stored_cp is None:
                text = f"operator deletes {action.partition}'s checkpoint of epoch {world.epoch}"
            elif action.kind == "non_member":
                text = (
                    f"a checkpoint of {stored_cp.partition}, no member of epoch {world.epoch}, "
                    f"is stored: {stored_cp.cut} (epoch field {stored_cp.epoch})"
                )
            else:
                text = (
                    f"operator stores a {action.kind} checkpoint for {action.partition}: "
                    f"{stored_cp.cut} (epoch field {stored_cp.epoch}, scope {stored_cp.scope}, "
                    f"{stored_cp.finality.value})"
                )
        self._note("env", "**", text)
        return text

    def _lose_until_end(self, worker: _Worker) -> str:
        """Lose every call of the worker's request until it ends (or runs away)."""
        request = worker.request
        lost = 0
        said = ""
        while worker.pending is not None and worker.request is request and not self.stopped:
            said = self._answer(worker, "lost")
            lost += 1
        return f"{worker.name}: {lost} call(s) in a row lost, not applied; {said}"

    def _conflict_until_end(self, worker: _Worker) -> str:
        """Make every write of the worker's attempt conflict until the attempt ends: before
        each write is answered, another writer rewrites the record's own claim at the next
        revision (a true, sound, monotone write), so the write's expected revision is stale."""
        request = worker.request
        beaten = 0
        said = ""
        while worker.pending is not None and worker.request is request and not self.stopped:
            if worker.pending.op == "write_publication":
                record = self.world.record
                beaten += 1
                self.world.record = Record(
                    record.epoch, record.cut, record.revision + 1, f"other-{beaten}"
                )
            said = self._answer(worker, "ok")
        return f"{worker.name}: {beaten} write(s) in a row beaten by another writer; {said}"

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
        self.crashes += 1
        self._note(worker.name, "**", f"crash: the process dies {doing}")
        worker.channel.close(0.0)
        worker.channel = None
        worker.request = None
        worker.pending = None
        worker.incarnation += 1
        worker.restarted = True
        worker.own = None
        worker.attempts = 0
        self._greet(worker)
        return f"{worker.name} crashes {doing}; restarted as {worker.wire_name}"

    def _starting(self, worker: _Worker) -> None:
        if worker.restarted:
            worker.restarted = False
            self.seen.add(Situation.RESTART_THEN_ATTEMPT)

    def _start_publish(self, worker: _Worker) -> str:
        self._check_idle(worker)
        self._starting(worker)
        if any(
            w.role == "publisher" and w.request is not None and w is not worker
            for w in self.workers.values()
        ):
            self.seen.add(Situation.PUBLISHERS_RACING)
        worker.attempts += 1
        request = _Request(
            "publish",
            self._next_request_id(),
            attempt=AttemptLog(self.setup.policy),
            number=worker.attempts,
        )
        worker.request = request
        self._send(
            worker,
            publish_message(request.id, worker.wire_name, self.setup.stream, self.setup.policy),
        )
        return f"{worker.name} starts publication attempt #{request.id}; {self._await(worker)}"

    def _start_ingest(self, worker: _Worker, partition: str) -> str:
        self._check_idle(worker)
        self._starting(worker)
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
                self.world.order_of(request.epoch, partition),
            ),
        )
        return (
            f"{worker.name} starts ingest pass #{request.id} of {partition} in epoch "
            f"{request.epoch}; {self._await(worker)}"
        )

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
        pool = self.factory if isinstance(self.factory, SutPool) else None
        for worker in self.workers.values():
            channel = worker.channel
            if channel is None:
                continue
            if pool is not None:
                if worker.failed or worker.request is not None:
                    pool.discard(channel)
                else:
                    problem = pool.release(channel)
                    if problem is not None:
                        self._violate([problem], worker.name)
                        self._stderr[worker.name] = channel.stderr_tail()
                continue
            if not worker.failed:
                with contextlib.suppress(SutFailure, OSError):
                    self._send(worker, shutdown_message())
            grace = SHUTDOWN_GRACE if clean else 0.3
            status = channel.close(grace)
            problem = ending_problem(channel, status, grace) if clean else None
            if problem is not None:
                self._violate([problem], worker.name)
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
            situations=frozenset(self.seen.situations),
            caught=frozenset(self.caught.names),
            classes=world_classes(self.setup),
        )
        return self._finished

    def __enter__(self) -> Run:
        return self

    def __exit__(self, *exc: object) -> None:
        self.finish()


def reshard_moves_below(
    world: World, old: Mapping[tuple[int, str], Checkpoint], epoch: int
) -> bool:
    """The new epoch puts an event of a partition inside the downset of its old checkpoint
    that the old epoch did not have there: the old checkpoint is untrue in the new epoch."""
    for (old_epoch, partition), checkpoint in old.items():
        truth = world.truth.get((epoch, partition))
        before = world.truth.get((old_epoch, partition))
        if truth is None or before is None:
            continue
        known = {ev.id for ev in before.log}
        if any(
            ev.id not in known and covers(world.order, checkpoint.cut, ev.at) for ev in truth.log
        ):
            return True
    return False


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
