"""Serving a request in progress: the harness answering a SUT worker's calls as the stores.

:class:`Conversation` is the half of a run that talks to busy workers: it reads
each worker's next message (a call, which becomes pending, or the request's
end), admits the call (right level, stream, partition, not a runaway), answers
it in the mode the schedule chose (normally, with its response lost, as a
conflict, with a page of a given shape) against the world's lenient stores,
and hands every change and every outcome to the judge
(:mod:`fencepost.harness.checks`). :class:`fencepost.harness.runner.Run` adds
the schedule, the environment steps and the workers' life cycle on top.

Cost per answered call: O(1) plus the judgement of the change it makes
(see :mod:`fencepost.harness.checks`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from fencepost.harness.checks import (
    Finding,
    judge_checkpoint_write,
    judge_ingest_ok,
    judge_publication_write,
    judge_publish_ok,
    judge_state,
)
from fencepost.harness.coverage import Seen, Situation
from fencepost.harness.power import (
    Caught,
    View,
    WriteJudge,
    outcome_caught,
    view_caught,
)
from fencepost.harness.protocol import (
    CHECKPOINTER_OPS,
    PUBLISHER_OPS,
    Call,
    ErrorReply,
    FetchPage,
    IngestOk,
    PublishOk,
    ReadCheckpoint,
    ReadCheckpoints,
    ReadMembership,
    ReadPublication,
    RecordOutcome,
    WriteCheckpoint,
    WritePublication,
    checkpoint_json,
    membership_json,
    page_to_json,
    parse_sut_message,
    record_json,
    reply_conflict,
    reply_ok,
    reply_timeout,
)
from fencepost.harness.results import RequestEnd, TranscriptLine
from fencepost.harness.rules import Rule, SutFailure, Violation
from fencepost.harness.schedule import (
    LOSSES,
    mode_words,
)
from fencepost.harness.session import BLANK_LINE
from fencepost.harness.transport import Channel, stray_words
from fencepost.harness.world import Stored, World, WorldSetup
from fencepost.inputs.jsonlines import (
    JSONObject,
    MessageError,
    encode,
)
from fencepost.judge.cuts import compare
from fencepost.judge.decide import AttemptLog, Reported, WriteAnswer
from fencepost.judge.properties import judge_ingest_report, show
from fencepost.judge.values import (
    BadValue,
    Checkpoint,
    Coordinate,
    Cut,
    Finality,
    Page,
    Record,
)

#: Calls one request may make before the harness calls it a runaway.
MAX_CALLS_PER_REQUEST = 500


@dataclass
class _Request:
    kind: str  # "publish" or "ingest"
    id: int
    epoch: int = 0
    partition: str = ""
    attempt: AttemptLog | None = None
    losses: int = 0
    calls: int = 0
    #: Faults (conflicts and lost responses) this request was given.
    faults: int = 0
    #: Event ids the provider handed this request (an event served again is an overlap).
    served: set[str] = field(default_factory=set)
    #: After a lost publication write: (applied, the revision it left, the epoch then).
    lost_write: tuple[bool, int, int] | None = None
    lost_checkpoint_write: bool = False
    #: The attempt's number within its worker's process (1 for its first).
    number: int = 0
    #: An ingest pass's greatest event position served, latest non-final claim, and the
    #: cut of its latest checkpoint write (what its wrong answers are made of).
    greatest: Coordinate | None = None
    nonfinal: Cut | None = None
    attempted: Cut | None = None
    #: The cut of a provisional checkpoint the pass was shown in its own key.
    provisional: Cut | None = None
    #: The greatest valid cut this pass was shown stored in its key (read, or its own
    #: write acknowledged): true when shown, even if another reader has since replaced it
    #: (docs/semantics.md section 8).
    acknowledged: Cut | None = None


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
    #: Restarted after a crash and not yet asked to do anything since.
    restarted: bool = False
    #: This process's last acknowledged publication write (epoch, cut) and its attempts.
    own: tuple[int, Cut] | None = None
    attempts: int = 0
    #: The op_id each (incarnation, attempt number) of this worker wrote with first.
    op_ids: dict[tuple[int, int], str] = field(default_factory=dict)

    @property
    def wire_name(self) -> str:
        """The name the SUT is told: ``<worker>.<n>`` after its ``n - 1``-th restart."""
        return self.name if self.incarnation == 1 else f"{self.name}.{self.incarnation}"


class Conversation:
    """The talking half of a run (see the module docstring); :class:`Run` is the other."""

    world: World
    setup: WorldSetup
    timeout: float
    max_calls: int
    keep_transcript: bool
    workers: dict[str, _Worker]
    step: int
    stopped: bool
    messages: int
    _violations: list[Violation]
    _lines: list[TranscriptLine]
    _next_id: int
    _stderr: dict[str, str]
    seen: Seen
    caught: Caught

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

    def _next_request_id(self) -> int:
        self._next_id += 1
        return self._next_id

    def _check_idle(self, worker: _Worker) -> None:
        assert worker.channel is not None
        extra = worker.channel.unsolicited()
        if extra is not None:
            self._note(worker.name, "<-", extra)
            raise SutFailure(
                Rule.CALL_PAIRING,
                f"unsolicited output while idle: {extra[:200]!r} {stray_words(extra)}",
                worker.name,
            )

    def _await(self, worker: _Worker) -> str:
        """Read the worker's next message: a call (now pending) or the request's end."""
        request = worker.request
        assert request is not None
        line = self._receive(worker)
        if not line.strip():
            what = f"{request.kind} request #{request.id}"
            raise SutFailure(Rule.CALL_PAIRING, BLANK_LINE.format(what=what), worker.name)
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
            self._fault(request)
        if isinstance(payload, WritePublication):
            return self._answer_write_publication(worker, request, log, call, payload, mode)
        if mode == "lost":
            self._reply(worker, reply_timeout(call.call_id))
            return f"{call.op} {mode_words(mode)}"
        if isinstance(payload, ReadPublication):
            self._reread_after_lost_write(request)
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
        self._weigh_write(worker, request, log, payload.op_id, current)
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
            request.lost_write = (applied, world.record.revision, world.epoch)
        if answer is not WriteAnswer.APPLIED:
            self._fault(request)
        if answer is WriteAnswer.CONFLICT:
            self.seen.add(Situation.CONFLICT)
            # Had the attempt written its old cut again on the revision the conflict shows.
            if "stale_cut_after_conflict" not in self.caught.names:
                self.caught.add(
                    "stale_cut_after_conflict", self._write_judge(current)(payload.epoch, cut)
                )
        if answer is WriteAnswer.APPLIED:
            worker.own = (payload.epoch, cut)
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

    def _write_judge(self, old: Record) -> WriteJudge:
        """Would the judge reject a write of (epoch, cut) over ``old``, on the world now?"""

        def judge(epoch: int, cut: Cut) -> bool:
            new = Record(epoch, cut, old.revision + 1, "counterfactual")
            try:
                found = judge_publication_write(self.world, old, new, self.setup.policy)
                return bool(found or judge_state(self.world, new))
            except (BadValue, ValueError):
                return False

        return judge

    def _view(self, worker: _Worker, log: AttemptLog) -> View:
        return View(log, self.world.order, self.setup.policy, worker.own)

    def _weigh_write(
        self, worker: _Worker, request: _Request, log: AttemptLog, op_id: str, current: Record
    ) -> None:
        """The wrong answers this write's decision and op_id would have been caught on."""
        if log.shown:
            self.caught.names |= view_caught(
                self._view(worker, log),
                self._write_judge(log.shown[-1].record),
                self.caught.names,
            )
        key = (worker.incarnation, request.number)
        worker.op_ids.setdefault(key, op_id)
        earlier = [
            used
            for (incarnation, number), used in worker.op_ids.items()
            if incarnation < worker.incarnation and number == request.number
        ]
        self.caught.add("restart_reuses_op_ids", any(used != op_id for used in earlier))
        mine = [
            used
            for (incarnation, number), used in worker.op_ids.items()
            if incarnation == worker.incarnation and number < request.number
        ]
        self.caught.add("op_id_per_process", any(used != op_id for used in mine))

    def _fault(self, request: _Request) -> None:
        request.faults += 1
        if request.faults > 2:
            self.seen.add(Situation.RETRY_BUDGET_SPENT)

    def _reread_after_lost_write(self, request: _Request) -> None:
        """The attempt rereads the record after a lost write: which of the four cases is it?"""
        if request.lost_write is None:
            return
        applied, revision, epoch = request.lost_write
        request.lost_write = None
        log = request.attempt
        if (
            log is not None
            and log.writes
            and self.world.record.epoch > log.writes[-1].epoch
            and "old_epoch_after_fence" not in self.caught.names
        ):
            lost = log.writes[-1]
            # Had the attempt kept its old membership and retried in the old epoch.
            self.caught.add(
                "old_epoch_after_fence",
                self._write_judge(self.world.record)(lost.epoch, lost.cut),
            )
        advanced = self.world.record.revision != revision
        self.seen.add(
            {
                (True, True): Situation.LOST_WRITE_APPLIED_ADVANCED,
                (True, False): Situation.LOST_WRITE_APPLIED_ALONE,
                (False, True): Situation.LOST_WRITE_NOT_APPLIED_ADVANCED,
                (False, False): Situation.LOST_WRITE_NOT_APPLIED_ALONE,
            }[(applied, advanced)]
        )
        if self.world.epoch != epoch:
            self.seen.add(Situation.EPOCH_CHANGE_AFTER_LOST_WRITE)

    def _answer_checkpointer(
        self, worker: _Worker, request: _Request, call: Call, mode: str
    ) -> str:
        world = self.world
        payload = call.payload
        key = (request.epoch, request.partition)
        if mode in LOSSES and not isinstance(payload, WriteCheckpoint):
            self._fault(request)
        if isinstance(payload, ReadCheckpoint):
            if request.lost_checkpoint_write and mode != "lost":
                self.seen.add(Situation.LOST_CHECKPOINT_WRITE_REREAD)
            if mode == "lost":
                self._reply(worker, reply_timeout(call.call_id))
                return f"read_checkpoint {mode_words(mode)}"
            stored = world.stored(*key)
            if stored is not None and stored.finality is Finality.PROVISIONAL:
                request.provisional = stored.cut
            if stored is not None:
                self._acknowledge(request, key, stored)
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
            self._saw_page(request, page)
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

    def _saw_page(self, request: _Request, page: Page) -> None:
        order = self.world.order
        for ev in page.events:
            if request.greatest is None or order.compare(ev.at, request.greatest) > 0:
                request.greatest = ev.at
        if page.claim is not None and not page.claim.final:
            request.nonfinal = page.claim.cut
        if not page.events:
            self.seen.add(Situation.EMPTY_PAGE)
            if page.claim is not None and page.claim.final:
                self.seen.add(Situation.EMPTY_PAGE_FINAL_CLAIM)
        ids = {ev.id for ev in page.events}
        if ids & request.served:
            self.seen.add(Situation.OVERLAPPING_PAGE)
        request.served |= ids

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
        request = worker.request
        if request is not None:
            if mode in LOSSES:
                request.lost_checkpoint_write = True
                self._fault(request)
            elif not applied:
                self._fault(request)
        if mode == "ok" and not applied:
            self.seen.add(Situation.STALE_CHECKPOINT_RETRY)
        if request is not None:
            request.attempted = checkpoint.cut
            self._weigh_certify(request, key, checkpoint, current, entry, applied, mode)
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
            if request is not None:
                self._acknowledge(request, key, now)
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

    def _acknowledge(self, request: _Request, key: tuple[int, str], shown: Checkpoint) -> None:
        """Note a valid checkpoint the pass was shown stored in its key (a read, or the
        reply to its own applied write): ``ingest_ok`` may report it even after another
        reader replaced it (:func:`~fencepost.harness.checks.judge_ingest_ok`). O(1)."""
        if not self.world.is_valid(key, shown):
            return
        try:
            ahead = request.acknowledged is None or (
                compare(self.world.order, shown.cut, request.acknowledged) > 0
            )
        except BadValue:
            return
        if ahead:
            request.acknowledged = shown.cut

    def _weigh_certify(
        self,
        request: _Request,
        key: tuple[int, str],
        checkpoint: Checkpoint,
        current: Checkpoint | None,
        entry: Stored | None,
        applied: bool,
        mode: str,
    ) -> None:
        """The certify mistakes the judge would have caught on this checkpoint write."""
        world = self.world
        injected = entry is not None and entry.injected
        known = self.caught.names
        if {"certify_greatest_seen", "certify_nonfinal_claim", "certify_successor"} | {
            "overwrite_after_conflict"
        } <= known:
            return

        def rejected(cut: Cut) -> bool:
            if cut == checkpoint.cut:
                return False
            generation = 1 if current is None else current.generation + 1
            wrong = Checkpoint(
                checkpoint.partition,
                cut,
                checkpoint.token,
                generation,
                checkpoint.scope,
                checkpoint.epoch,
                checkpoint.finality,
            )
            try:
                return bool(judge_checkpoint_write(world, key, current, injected, wrong))
            except (BadValue, ValueError):
                return False

        if request.greatest is not None and "certify_greatest_seen" not in known:
            self.caught.add("certify_greatest_seen", rejected(Cut.through(request.greatest)))
        if request.nonfinal is not None and "certify_nonfinal_claim" not in known:
            self.caught.add("certify_nonfinal_claim", rejected(request.nonfinal))
        at = checkpoint.cut.at
        if (
            checkpoint.cut.endpoint.value == "through"
            and not world.order.successor
            and "certify_successor" not in known
        ):
            assert at is not None
            bumped = at + 1 if isinstance(at, int) else at + "\x00"
            self.caught.add("certify_successor", rejected(Cut.before(bumped)))
        if (
            not applied
            and mode == "ok"
            and current is not None
            and current.generation > 0
            and "overwrite_after_conflict" not in known
        ):
            # Had the pass written its cut on top of the checkpoint that beat it.
            previous = current
            wrong = Checkpoint(
                checkpoint.partition,
                checkpoint.cut,
                checkpoint.token,
                previous.generation + 1,
                checkpoint.scope,
                checkpoint.epoch,
                checkpoint.finality,
            )
            try:
                found = judge_checkpoint_write(world, key, previous, injected, wrong)
            except (BadValue, ValueError):
                found = []
            self.caught.add("overwrite_after_conflict", bool(found))

    def _weigh_pass_end(self, request: _Request, key: tuple[int, str]) -> None:
        """The certify mistakes of a whole pass, judged at its end whatever the SUT wrote
        and when: had it certified the greatest event seen, or the latest non-final claim,
        on top of what the store holds now."""
        world = self.world
        entry = world.checkpoints.get(key)
        stored = None if entry is None else entry.checkpoint
        wrongs = []
        if request.greatest is not None:
            wrongs.append(("certify_greatest_seen", Cut.through(request.greatest)))
        if request.nonfinal is not None:
            wrongs.append(("certify_nonfinal_claim", request.nonfinal))
        if request.provisional is not None:
            wrongs.append(("certify_provisional", request.provisional))
        for name, cut in wrongs:
            if name in self.caught.names:
                continue
            # Writing the stored cut again is no change, unless what is stored is not
            # coverage (a provisional checkpoint counted: certified as final).
            if stored is not None and stored.cut == cut and stored.finality is Finality.FINAL:
                continue
            wrong = Checkpoint(
                key[1],
                cut,
                None,
                1 if stored is None else stored.generation + 1,
                self.setup.scope,
                key[0],
                Finality.FINAL,
            )
            injected = bool(entry is not None and entry.injected)
            try:
                found = judge_checkpoint_write(world, key, stored, injected, wrong)
            except (BadValue, ValueError):
                found = []
            self.caught.add(name, bool(found))

    # --- ends of requests ----------------------------------------------------------------

    def _finish_publish(self, worker: _Worker, request: _Request, reply: PublishOk) -> str:
        try:
            reply.cut.validated(self.world.order, "publish_ok.cut")
        except ValueError as exc:
            raise SutFailure(Rule.MESSAGE_SCHEMA, str(exc), worker.name) from None
        assert request.attempt is not None
        self._violate(judge_publish_ok(self.world.order, request.attempt, reply), worker.name)
        log = request.attempt
        reported = Reported(reply.outcome, reply.epoch, reply.cut, reply.reason)
        self.caught.names |= outcome_caught(self.world.order, log, reported, self.caught.names)
        if reply.outcome in ("unchanged", "withheld") and log.shown:
            self.caught.names |= view_caught(
                self._view(worker, log),
                self._write_judge(log.shown[-1].record),
                self.caught.names,
            )
        self.seen.add(Situation(f"outcome_{reply.outcome}"))
        if reply.reason is not None:
            self.seen.add(Situation(f"withheld_{reply.reason}"))
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
            judge_ingest_ok(
                self.world, (request.epoch, request.partition), reply, request.acknowledged
            ),
            worker.name,
        )
        key = (request.epoch, request.partition)
        self._weigh_pass_end(request, key)
        if request.attempted is not None and "report_unstored" not in self.caught.names:
            stored = self.world.stored(*key)
            holds = stored.cut if stored is not None else Cut.nothing()
            try:
                wrong = judge_ingest_report(
                    self.world.order, key[0], key[1], request.attempted, holds
                )
            except BadValue:
                wrong = []
            self.caught.add("report_unstored", bool(wrong))
        worker.ended = RequestEnd(
            worker.name, "ingest", request.id, "ingest_ok", None, None, reply.cut
        )
        return f"it ends: ingest_ok {reply.cut}"

    # --- teardown -----------------------------------------------------------------------
