"""One run in the world of late commits: the tool, the source's clock, a schedule, the verdict.

The harness is the scheduler, as in the frontier world (:mod:`fencepost.harness.runner`):
the tool (one worker, ``t1``) makes one call at a time and waits for the
answer, so the schedule alone decides what the source holds when each call
is answered. A run:

1. starts the tool (a fresh process, or one kept and reset by a
   :class:`~fencepost.harness.pool.SutPool`) and shakes hands
   (:class:`~fencepost.harness.session.LineSession`);
2. executes the schedule's steps (:mod:`fencepost.harness.late_world`): start a
   sync, answer the pending call normally or with its response lost (a lost
   commit applied or not), move the clock (rows commit, partitions appear),
   crash the tool mid-sync (it is restarted with no memory). A step that is
   not possible when its turn comes is skipped, so any sub-sequence of a
   schedule is a schedule;
3. answers the remaining calls of a sync in progress normally (drain);
4. lets the world **quiesce** (every row committed, every partition appeared)
   and runs the tool **to completion**: syncs without faults, each
   ``max_commit_delay + granularity`` later than the one before, until a
   completed sync copies no row that was not copied before (at most
   :data:`COMPLETION_SYNCS`);
5. hands the ground truth, the destination's applied commits and every claim
   the tool's syncs made to the judge (:mod:`fencepost.judge.rows`).

Protocol rules (a bound the source cannot express, a token of another query, a
commit of a row never shown, malformed messages, ...) stop the run at the step
that broke them. Row properties are the verdict of the whole run.

Cost: per call O(rows) for a query, O(1) otherwise, plus a snapshot per step
(O(rows + commits)) when the transcript is kept.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable

from fencepost.harness.late_results import (
    COMPLETION_SYNCS,
    WORKER,
    CommitRecord,
    LateResult,
    LateSnapshot,
    LateStep,
    QueryRecord,
    SyncRecord,
)
from fencepost.harness.late_world import (
    MODES,
    Answer,
    Finish,
    LateAction,
    LateSetup,
    LateWorld,
    RowSpec,
    Sync,
    Tick,
    TickTo,
    Upto,
    bound_text,
    clock_text,
    span_text,
)
from fencepost.harness.pool import SutPool
from fencepost.harness.protocol import (
    SYNC_LEVEL,
    SYNC_OPS,
    Call,
    Commit,
    ErrorReply,
    HelloOk,
    ListPartitions,
    Query,
    ReadState,
    SyncOk,
    parse_sut_message,
    reply_ok,
    reply_timeout,
    sync_message,
)
from fencepost.harness.results import TranscriptLine
from fencepost.harness.rules import Rule, SutFailure, Violation
from fencepost.harness.serving import MAX_CALLS_PER_REQUEST
from fencepost.harness.session import BLANK_LINE, LineSession
from fencepost.harness.transport import Channel, SutFactory
from fencepost.inputs.jsonlines import JSONObject, MessageError, encode
from fencepost.judge.rows import (
    Claim,
    Delivery,
    RowProperty,
    broken_properties,
    delivery,
    dishonest_claims,
    replay_commits,
)

#: The most calls a crashed process may make while it is drained for reuse
#: (:meth:`LateRun._recycle`).
RECYCLE_CALLS = 100


def _row_words(setup: LateSetup, row: RowSpec) -> str:
    return f"{row.id} ({clock_text(setup, row.at)})"


class LateRun:
    """One run in progress (see the module docstring). Use as a context manager or call
    :meth:`finish`; the tool's process is always torn down."""

    def __init__(
        self,
        factory: SutFactory,
        setup: LateSetup,
        *,
        timeout: float = 10.0,
        max_calls: int = MAX_CALLS_PER_REQUEST,
        transcript: bool = True,
    ) -> None:
        self.factory = factory
        self.setup = setup
        self.world = LateWorld.create(setup)
        self.timeout = timeout
        self.max_calls = max_calls
        self.keep = transcript
        self.step = 0
        self.stopped = False
        self.session: LineSession | None = None
        self.hello: HelloOk | None = None
        self.incarnation = 1
        self.pending: Call | None = None
        self.current: SyncRecord | None = None
        self.crashes = 0
        self._next_id = 0
        self._lines: list[TranscriptLine] = []
        self._messages = 0
        self._violations: list[Violation] = []
        self._steps: list[LateStep] = []
        self._syncs: list[SyncRecord] = []
        self._queries: list[QueryRecord] = []
        self._commits: list[CommitRecord] = []
        self._stderr: dict[str, str] = {}
        self._delivery: Delivery | None = None
        self._finished: LateResult | None = None
        #: Called with j before the j-th answer (j >= 1) of a multi-answer step
        #: (:class:`Finish`, :class:`Upto`): the exhaustive search lists its points there.
        self.before_answer: Callable[[int], None] | None = None

    # --- bookkeeping --------------------------------------------------------------------

    @property
    def busy(self) -> bool:
        return self.current is not None

    @property
    def pending_op(self) -> str | None:
        return None if self.pending is None else self.pending.op

    @property
    def wire_name(self) -> str:
        return WORKER if self.incarnation == 1 else f"{WORKER}.{self.incarnation}"

    def _note(self, text: str) -> None:
        if self.keep:
            self._lines.append(TranscriptLine(self.step, WORKER, "**", text))

    def _violate(self, rule: Rule, message: str) -> None:
        self._violations.append(Violation(rule, message, self.step, WORKER))
        self._note(f"VIOLATION {rule.value}: {message}")
        self.stopped = True

    def _fail(self, failure: SutFailure) -> None:
        self._violate(failure.rule, failure.message)

    def _snapshot(self) -> LateSnapshot | None:
        if not self.keep:
            return None
        world = self.world
        visible = tuple(
            (
                p,
                tuple(
                    r.id
                    for r in sorted(world.setup.rows, key=lambda r: (r.at, r.id))
                    if r.partition == p and world.visible(r)
                ),
            )
            for p in world.listed()
        )
        pending = tuple(r.id for r in world.setup.rows if not world.visible(r))
        copies = replay_commits(world.applied).copies
        return LateSnapshot(
            world.clock,
            visible,
            pending,
            tuple(sorted(copies.items())),
            json.dumps(world.state),
        )

    def _record(self, action: LateAction | None, says: str, phase: str) -> None:
        self._steps.append(LateStep(self.step, action, says, phase, self._snapshot()))

    # --- talking ------------------------------------------------------------------------

    def start(self) -> None:
        """Start the tool and shake hands; a failure stops the run."""
        try:
            self._open()
        except SutFailure as failure:
            self._fail(failure)

    def _open(self) -> None:
        session = LineSession(self.factory, self.timeout, WORKER, require=SYNC_LEVEL)
        session.lines = self._lines
        session.case_no = self.step
        self.session = session
        session.open()
        self.hello = session.hello

    def _send(self, message: JSONObject) -> None:
        assert self.session is not None
        self.session.case_no = self.step
        self.session.send(encode(message))

    def _receive(self) -> str:
        assert self.session is not None
        self.session.case_no = self.step
        return self.session.receive()

    # --- what may happen ----------------------------------------------------------------

    def possible(self, action: LateAction) -> bool:
        if self.stopped or self.session is None:
            return False
        if isinstance(action, Sync):
            return self.current is None
        if isinstance(action, Answer):
            return self.pending is not None and action.mode in MODES[self.pending.op]
        if isinstance(action, Finish | Upto):
            return self.pending is not None
        if isinstance(action, Tick):
            return self.world.next_event() is not None
        if isinstance(action, TickTo):
            return action.time > self.world.clock
        return self.pending is not None

    def execute(self, action: LateAction, *, phase: str = "schedule") -> bool:
        """Run ``action`` if it is possible now; False if it was skipped."""
        if not self.possible(action):
            return False
        if isinstance(action, Finish | Upto):
            self._answer_many(action, phase)
            return True
        self.step += 1
        try:
            says = self._do(action)
        except SutFailure as failure:
            self._fail(failure)
            says = f"{failure.rule.value}: {failure.message}"
        self._record(action, says, phase)
        return True

    def _answer_many(self, action: Finish | Upto, phase: str) -> None:
        """Answer normally, one recorded step per call (the first carries ``action``), until
        the sync ends or (:class:`Upto`) its ``nth`` call of ``op`` is pending."""
        answered = 0
        while self.pending is not None and not self.stopped:
            current = self.current
            assert current is not None
            if (
                isinstance(action, Upto)
                and self.pending.op == action.op
                and current.per_op.get(action.op, 0) >= action.nth
            ):
                return
            if answered and self.before_answer is not None:
                self.before_answer(answered)
            self.step += 1
            try:
                says = self._answer("ok")
            except SutFailure as failure:
                self._fail(failure)
                says = f"{failure.rule.value}: {failure.message}"
            self._record(action if answered == 0 else None, says, phase)
            answered += 1

    def _do(self, action: LateAction) -> str:
        if isinstance(action, Sync):
            return self._start_sync(completion=False)
        if isinstance(action, Answer):
            return self._answer(action.mode)
        if isinstance(action, Tick):
            event = self.world.next_event()
            assert event is not None
            return self._move(event)
        if isinstance(action, TickTo):
            return self._move(action.time)
        return self._crash()

    # --- the clock ----------------------------------------------------------------------

    def _move(self, time: int) -> str:
        setup = self.setup
        rows, parts = self.world.move_to(time)
        said = [f"the clock moves to {clock_text(setup, self.world.clock)}"]
        for p in parts:
            held = [r for r in setup.rows if r.partition == p and r.commit < setup.appears(p)]
            said.append(
                f"partition {p} appears holding {len(held)} row(s) committed before"
                + (f" (oldest {clock_text(setup, min(r.at for r in held))})" if held else "")
            )
        for r in rows:
            if r.commit < setup.appears(r.partition):
                continue
            late = r.commit - r.at
            said.append(
                f"{_row_words(setup, r)} commits in {r.partition}"
                + (f", {span_text(setup, late)} after its cursor value" if late else "")
            )
        text = "; ".join(said)
        self._note(text)
        return text

    # --- syncs --------------------------------------------------------------------------

    def _start_sync(self, *, completion: bool) -> str:
        self._next_id += 1
        record = SyncRecord(
            number=len(self._syncs) + 1,
            request_id=self._next_id,
            now=self.world.clock,
            start_step=self.step,
            worker=self.wire_name,
            completion=completion,
            held_at_start=replay_commits(self.world.applied).held(),
        )
        self._syncs.append(record)
        self.current = record
        self._send(
            sync_message(record.request_id, self.wire_name, record.now, self.setup.source_json())
        )
        kind = "completion sync" if completion else "sync"
        return (
            f"{kind} {record.number} starts (now {clock_text(self.setup, record.now)}); "
            + self._await()
        )

    def _finish_sync(self) -> str:
        said: list[str] = []
        while self.pending is not None and not self.stopped:
            said.append(self._answer("ok"))
        return " / ".join(said)

    def _await(self) -> str:
        """Read the tool's next message: a call (now pending) or the sync's end."""
        current = self.current
        assert current is not None
        line = self._receive()
        if not line.strip():
            what = f"sync request #{current.request_id}"
            raise SutFailure(Rule.CALL_PAIRING, BLANK_LINE.format(what=what), WORKER)
        try:
            msg = parse_sut_message(line)
        except MessageError as exc:
            raise SutFailure(Rule.MESSAGE_SCHEMA, str(exc), WORKER) from None
        if isinstance(msg, ErrorReply):
            raise SutFailure(
                Rule.SUT_ERROR,
                f"the tool answered sync request #{current.request_id} with an error: "
                f"{msg.message[:300]}",
                WORKER,
            )
        if isinstance(msg, Call):
            self._admit(current, msg)
            self.pending = msg
            return f"it calls {msg.op}"
        if isinstance(msg, SyncOk):
            if type(msg.id) is not int or msg.id != current.request_id:
                raise SutFailure(
                    Rule.CALL_PAIRING,
                    f"sync_ok carries id {msg.id!r}; the request's id is {current.request_id}",
                    WORKER,
                )
            return self._end_sync(current, msg)
        raise SutFailure(
            Rule.CALL_PAIRING,
            f"{type(msg).__name__} in the middle of sync request #{current.request_id}: "
            f"{line[:200]!r}",
            WORKER,
        )

    def _admit(self, current: SyncRecord, call: Call) -> None:
        if call.op not in SYNC_OPS:
            raise SutFailure(
                Rule.CALL_PAIRING,
                f"call {call.op} during a sync; the sync level calls only {', '.join(SYNC_OPS)}",
                WORKER,
            )
        current.calls += 1
        current.per_op[call.op] = current.per_op.get(call.op, 0) + 1
        if current.calls > self.max_calls:
            raise SutFailure(
                Rule.RUNAWAY,
                f"sync request #{current.request_id} made more than {self.max_calls} calls",
                WORKER,
            )
        payload = call.payload
        setup = self.setup
        if isinstance(payload, Query):
            listed = self.world.listed()
            if payload.partition not in listed:
                raise SutFailure(
                    Rule.CALL_PAIRING,
                    f"query names partition {payload.partition!r}, which the source does not "
                    f"have now (it has {', '.join(listed) or 'none'})",
                    WORKER,
                )
            for name, bound in (("lower", payload.lower), ("upper", payload.upper)):
                if bound is not None and bound.at % setup.granularity:
                    raise SutFailure(
                        Rule.QUERY_GRANULARITY,
                        f"query {name} bound {bound.at} ({clock_text(setup, bound.at)}) is not a "
                        f"multiple of the source's granularity {setup.granularity}: the source "
                        "cannot express it (format the bound as the source takes it)",
                        WORKER,
                    )
            if payload.after is not None:
                issued = self.world.tokens.get(payload.after)
                if issued is None:
                    raise SutFailure(
                        Rule.QUERY_TOKEN,
                        f"query continues after token {payload.after!r}, which the source never "
                        "issued",
                        WORKER,
                    )
                if (issued.partition, issued.lower, issued.upper) != (
                    payload.partition,
                    payload.lower,
                    payload.upper,
                ):
                    raise SutFailure(
                        Rule.QUERY_TOKEN,
                        f"token {payload.after!r} was issued for the query {issued.partition} "
                        f"{bound_text(setup, issued.lower, issued.upper)}, not for "
                        f"{payload.partition} {bound_text(setup, payload.lower, payload.upper)}",
                        WORKER,
                    )
        if isinstance(payload, Commit):
            unknown = [r for r in payload.records if r not in self.world.shown]
            if unknown:
                raise SutFailure(
                    Rule.INVENTED_ROW,
                    f"commit names {', '.join(repr(r) for r in unknown[:5])}, which the source "
                    "never returned to any query",
                    WORKER,
                )

    def _answer(self, mode: str) -> str:
        call = self.pending
        current = self.current
        assert call is not None and current is not None and self.session is not None
        self.pending = None
        payload = call.payload
        setup = self.setup
        world = self.world
        if isinstance(payload, ReadState | ListPartitions) or (
            isinstance(payload, Query) and mode == "lost"
        ):
            if mode == "lost":
                self._send(reply_timeout(call.call_id))
                said = f"{call.op}: response lost"
            elif isinstance(payload, ReadState):
                self._send(reply_ok(call.call_id, state=world.state_json()))
                said = f"read_state answered {json.dumps(world.state)[:120]}"
            else:
                listed = world.listed()
                self._send(reply_ok(call.call_id, partitions=listed))
                said = f"list_partitions answered {', '.join(listed)}"
        elif isinstance(payload, Query):
            position = None
            number = 0
            issued = None
            if payload.after is not None:
                issued = world.tokens[payload.after]
                position, number = issued.position, issued.query
            else:
                world.queries += 1
                number = world.queries
            shows = world.shows(issued)
            page = world.page(
                payload.partition, payload.lower, payload.upper, position, number, shows
            )
            current.read.update(r.id for r in page.rows)
            self._queries.append(
                QueryRecord(
                    current.number,
                    self.step,
                    world.clock,
                    payload.partition,
                    payload.lower,
                    payload.upper,
                    position,
                    number,
                    tuple((r.id, r.at) for r in page.rows),
                    page.next is not None,
                    page.horizon,
                    shows,
                )
            )
            horizon = None if page.horizon is None else {"at": page.horizon, "kind": "before"}
            self._send(
                reply_ok(
                    call.call_id,
                    rows=[{"id": r.id, "at": r.at} for r in page.rows],
                    next=page.next,
                    horizon=horizon,
                )
            )
            rows = ", ".join(_row_words(setup, r) for r in page.rows) or "no rows"
            where = "first page" if position is None else "next page"
            if shows != world.clock:
                where += f" (its snapshot of {clock_text(setup, shows)})"
            said = (
                f"query {payload.partition} {bound_text(setup, payload.lower, payload.upper)} "
                f"{where} at {clock_text(setup, world.clock)}: {rows}"
                + ("; more to come" if page.next else "")
            )
        else:
            assert isinstance(payload, Commit)
            applied = mode in ("ok", "applied_lost")
            if applied:
                world.commit(payload.records, payload.mode, payload.sets_state, payload.state)
            self._commits.append(
                CommitRecord(
                    current.number,
                    self.step,
                    world.clock,
                    payload.records,
                    payload.mode,
                    payload.sets_state,
                    json.dumps(payload.state) if payload.sets_state else "",
                    mode,
                )
            )
            self._send(reply_ok(call.call_id) if mode == "ok" else reply_timeout(call.call_id))
            what = f"commit ({payload.mode}) of {len(payload.records)} row(s)"
            if payload.records:
                what += (
                    " "
                    + ", ".join(payload.records[:8])
                    + (", ..." if len(payload.records) > 8 else "")
                )
            if payload.sets_state:
                what += f" with state {json.dumps(payload.state)[:100]}"
            said = {
                "ok": f"{what}: applied",
                "lost": f"{what}: not applied, response lost",
                "applied_lost": f"{what}: applied, response lost",
            }[mode]
        return f"{said}; {self._await()}"

    def _end_sync(self, current: SyncRecord, msg: SyncOk) -> str:
        setup = self.setup
        self.current = None
        self.pending = None
        current.end_step = self.step
        current.end_time = self.world.clock
        current.outcome = msg.outcome
        holding = replay_commits(self.world.applied)
        held = holding.held()
        current.new_rows = len(held - current.held_at_start)
        claimed = "no claim"
        if msg.coverage is not None:
            current.claims = tuple(
                Claim(p, c.at, c.kind, c.plus) for p, c in sorted(msg.coverage.items())
            )
            current.overclaims = dishonest_claims(
                current.claims, setup.truth(), held, {p.name for p in setup.partitions}
            )
            claimed = "; ".join(self.claim_text(c) for c in current.claims) or "no partition"
        return f"it ends: {msg.outcome}; its state claims {claimed}"

    def claim_text(self, claim: Claim) -> str:
        """A claim in words: ``main before 12:00:20 plus r9``."""
        at = claim.at
        cut = "nothing" if at is None else f"{claim.kind} {clock_text(self.setup, at)}"
        plus = f" plus {', '.join(claim.plus)}" if claim.plus else ""
        return f"{claim.partition} {cut}{plus}"

    def _crash(self) -> str:
        session = self.session
        current = self.current
        assert session is not None and session.channel is not None and current is not None
        pending = self.pending
        doing = f"in sync {current.number}" + (
            "" if pending is None else f" before its {pending.op} was answered"
        )
        self._note(f"crash: the process dies {doing}")
        if pending is not None and isinstance(pending.payload, Commit):
            p = pending.payload
            self._commits.append(
                CommitRecord(
                    current.number,
                    self.step,
                    self.world.clock,
                    p.records,
                    p.mode,
                    p.sets_state,
                    json.dumps(p.state) if p.sets_state else "",
                    "crash",
                )
            )
        recycled = self._recycle(session.channel, pending)
        session.channel = None
        current.crashed = True
        current.end_time = self.world.clock
        self.current = None
        self.pending = None
        self.crashes += 1
        self.incarnation += 1
        if recycled:
            self._note(
                "the dead process's place is taken by a kept process (the crashed one, drained "
                "with every answer lost and nothing applied, then reset)"
            )
        self._open()
        return f"the tool crashes {doing}; restarted as {self.wire_name}"

    def _recycle(self, channel: Channel, pending: Call | None) -> bool:
        """End a crashed process's part in the run; keep the process for reuse if it can reset.

        A crash means: nothing the process does from now on reaches the source or the
        destination, and nothing it holds in memory survives. Killing it does both; so
        does this, cheaper for a tool that is slow to start (seconds of imports per
        process): with a pool and a SUT that declared ``reset``, the process's pending
        call and every later call of the dead sync are answered ``timeout`` (not
        applied, nothing shown), its ``sync_ok`` is ignored, and ``reset`` (the
        protocol's "act as a fresh process") makes it the next incarnation. Anything
        unexpected (a hang, a malformed line, more than :data:`RECYCLE_CALLS` calls, a
        failed reset) kills it instead, as without a pool: the verdict never depends on
        which way the process ended. Findings made on reused processes are replayed on
        fresh ones before they are reported (``late_search._confirm_fresh``).
        """
        pool = self.factory if isinstance(self.factory, SutPool) else None
        hello = pool.hello if pool is not None else None
        if pool is None or hello is None or "reset" not in hello.capabilities or not pool.recycle:
            channel.close(0.0)  # killed at once
            return False
        try:
            if pending is not None:
                channel.send(encode(reply_timeout(pending.call_id)), self.timeout)
            for _ in range(RECYCLE_CALLS):
                msg = parse_sut_message(channel.receive(self.timeout))
                if isinstance(msg, Call):
                    channel.send(encode(reply_timeout(msg.call_id)), self.timeout)
                    continue
                if isinstance(msg, SyncOk | ErrorReply):
                    break
                raise MessageError("line", "neither a call nor the end of the sync")
            else:
                raise MessageError("line", "too many calls")
            if channel.unsolicited() is not None:
                raise MessageError("line", "output after the sync ended")
        except (SutFailure, MessageError, OSError):
            channel.close(0.0)
            return False
        return pool.release(channel) is None

    # --- the end of a run ---------------------------------------------------------------

    def halted(self) -> bool:
        """Whether a rule was broken (read afresh: any call may have set it)."""
        return self.stopped

    def drain(self) -> None:
        """Answer the sync in progress normally until it ends."""
        if self.pending is not None and not self.stopped:
            self.execute(Finish(), phase="drain")

    def complete(self) -> None:
        """Quiesce, then run the tool to completion (see the module docstring)."""
        if self.stopped:
            return
        self.drain()
        if self.halted():
            return
        world = self.world
        last = world.events()
        if last:
            self.step += 1
            said = self._move(last[-1])
            self._record(
                None,
                "the world quiesces: every row committed, every partition appeared; " + said,
                "quiesce",
            )
        step = self.setup.max_commit_delay + self.setup.granularity
        previous = max([s.now for s in self._syncs], default=world.clock)
        for _ in range(COMPLETION_SYNCS):
            if self.halted():
                return
            now = max(world.clock, previous) + step
            world.move_to(now)
            self.step += 1
            try:
                said = self._start_sync(completion=True)
                if self.pending is not None:
                    said += " / " + self._finish_sync()
            except SutFailure as failure:
                self._fail(failure)
                said = f"{failure.rule.value}: {failure.message}"
            self._record(None, said, "completion")
            done = self._syncs[-1]
            if self.stopped or (done.outcome == "completed" and done.new_rows == 0):
                break
            previous = now
        if not self.stopped:
            self._verdict()

    def _verdict(self) -> None:
        setup = self.setup
        truth = setup.truth()
        holding = replay_commits(self.world.applied)
        result = delivery(truth, holding)
        self._delivery = result
        overclaims = [(s, o) for s in self._syncs for o in s.overclaims]
        exactly_once = self.hello is not None and self.hello.delivery == "exactly-once"
        broken = broken_properties(result, [o for _, o in overclaims], exactly_once)
        last = self.step
        for prop in broken:
            if prop is RowProperty.NO_LOST_ROWS:
                rows = [setup.row(r.id) for r in result.lost]
                listed = ", ".join(f"{_row_words(setup, r)} in {r.partition}" for r in rows[:6])
                more = f" and {len(rows) - 6} more" if len(rows) > 6 else ""
                message = (
                    f"{len(rows)} row(s) lost: {listed}{more}; after the world quiesced and "
                    f"{sum(1 for s in self._syncs if s.completion)} completion sync(s), the "
                    "destination holds no copy"
                )
                self._violations.append(Violation(Rule.NO_LOST_ROWS, message, last, WORKER))
            elif prop is RowProperty.HONEST_COVERAGE:
                sync, over = overclaims[0]
                claim = next((c for c in sync.claims or () if c.partition == over.partition), None)
                said = "" if claim is None else self.claim_text(claim)
                if over.row is not None:
                    row = setup.row(over.row.id)
                    what = f"{_row_words(setup, row)} was not held" + (
                        f" (it commits at {clock_text(setup, row.commit)})"
                        if row.commit > (sync.end_time or 0)
                        else ""
                    )
                else:
                    what = over.problem
                message = (
                    f"sync {sync.number}'s state claimed {said} while {what} "
                    f"({len(overclaims)} overclaim(s) in this run)"
                )
                step = sync.end_step if sync.end_step is not None else last
                self._violations.append(Violation(Rule.HONEST_COVERAGE, message, step, WORKER))
            else:
                dups = ", ".join(f"{r} x{n}" for r, n in list(result.duplicated.items())[:6])
                message = (
                    f"the tool declared exactly-once delivery; {len(result.duplicated)} row(s) "
                    f"held more than once ({dups})"
                )
                self._violations.append(Violation(Rule.EXACTLY_ONCE, message, last, WORKER))

    def finish(self) -> LateResult:
        """Shut the tool down (or reset it into the pool), and report."""
        if self._finished is not None:
            return self._finished
        session = self.session
        if session is not None and session.channel is not None:
            clean = not self.stopped and self.current is None
            if clean:
                try:
                    session.check_idle()
                except SutFailure as failure:
                    self._fail(failure)
                    clean = False
            problem = session.close(clean)
            if problem is not None:
                self._violations.append(Violation(problem.rule, problem.message, self.step, WORKER))
            if self._violations and session.channel is not None:
                self._stderr[WORKER] = session.channel.stderr_tail()
        self._finished = LateResult(
            setup=self.setup,
            violations=tuple(self._violations),
            steps=tuple(self._steps),
            transcript=tuple(self._lines),
            messages=sum(1 for line in self._lines if line.direction != "**"),
            syncs=tuple(self._syncs),
            queries=tuple(self._queries),
            commits=tuple(self._commits),
            delivery=self._delivery,
            exactly_once=self.hello is not None and self.hello.delivery == "exactly-once",
            stderr=dict(self._stderr),
            sut_name=self.hello.name if self.hello is not None else "",
            crashes=self.crashes,
        )
        return self._finished

    def __enter__(self) -> LateRun:
        return self

    def __exit__(self, *exc: object) -> None:
        self.finish()


def run_late(
    factory: SutFactory,
    setup: LateSetup,
    schedule: Iterable[LateAction],
    *,
    timeout: float = 10.0,
    transcript: bool = True,
) -> LateResult:
    """Run ``schedule`` against a fresh (or reset) tool in the world ``setup``, to its verdict."""
    with LateRun(factory, setup, timeout=timeout, transcript=transcript) as run:
        run.start()
        for action in schedule:
            if run.stopped:
                break
            run.execute(action)
        run.complete()
    return run.finish()


__all__ = [
    "COMPLETION_SYNCS",
    "WORKER",
    "CommitRecord",
    "LateResult",
    "LateRun",
    "LateSnapshot",
    "LateStep",
    "QueryRecord",
    "SyncRecord",
    "run_late",
]
