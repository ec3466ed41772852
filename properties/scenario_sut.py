"""Run a scenario against any SUT through the conformance harness.

The harness (:mod:`fencepost.harness.runner`) plays the stores, the provider
and the network around SUT processes speaking the JSON-lines protocol, and
checks every change. This driver turns a scenario into the harness's world and
schedule, one scenario step at a time, using only the harness's public API:

- the world: :class:`~fencepost.harness.world.WorldSetup` with the scenario's
  order, epochs, ground truth and workers; honest certifications are the
  harness's ``advance`` steps (an honest reader certifies the next true cut),
  so each partition's claim style (``before``/``through``, and its end) is
  chosen so that the scenario's certified cuts are exactly cuts the harness's
  honest reader certifies;
- the schedule: ``publish``/``answer`` actions, each call of a request answered
  as the scenario's faults say, pausing where it pauses;
- the verdict: the harness's own violations (its oracle), and the expectations
  compared with the harness's world after each step. The attempt's outcome is
  read from the SUT's ``publish_ok`` line (tapped off the channel).

What the harness API cannot express is reported as unsupported with the
reason (see :data:`HARNESS_GAPS`): scripted provider pages (the harness cuts
pages from the ground truth itself), crashing one worker mid-request, lost
reads of a publisher when the scenario also runs on the model, and worlds
whose members use several orders.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from fencepost.harness import schedule as sched
from fencepost.harness.protocol import PublishOk, parse_sut_message
from fencepost.harness.rules import Violation, first
from fencepost.harness.runner import Run
from fencepost.harness.transport import Channel, SutFactory
from fencepost.harness.world import (
    ClaimStyle,
    EpochSetup,
    EventSpec,
    PartitionSetup,
    PartitionTruth,
    WorldSetup,
)
from fencepost.impl.cuts import Cut
from fencepost.impl.orders import Coordinate, Order
from fencepost.properties.scenario_format import (
    Certify,
    Crash,
    Finalize,
    Ingest,
    Misconfigure,
    Publish,
    Reshard,
    Resume,
    Scenario,
    Serve,
    Step,
    format_cut,
)
from fencepost.properties.scenario_outcome import (
    AttemptSeen,
    Breach,
    Observed,
    RecordSeen,
    ScenarioRuntimeError,
    Unsupported,
)

#: What the scenario format can say that the harness's API (as of protocol 1) cannot.
HARNESS_GAPS: dict[str, str] = {
    "pages": (
        "the harness cuts provider pages from the ground truth itself (page_size slices in "
        "modes ok/empty/overlap/noclaim/horizon); it has no way to answer fetch_page with a "
        "scripted page, so ingest steps with served pages cannot be replayed"
    ),
    "crash": "the harness cannot stop one SUT worker in the middle of a request and restart it",
    "orders": "a harness world has one order for every partition",
    "certify": (
        "the harness's honest reader certifies only the next true cut of a partition (advance); "
        "a certified cut must be one it would reach"
    ),
}

_INJECT = {"provisional": "provisional", "wrong_scope": "wrong_scope", "wrong_epoch": "wrong_epoch"}


class _TapChannel:
    """A channel that remembers every line the SUT sent (for its publish_ok)."""

    def __init__(self, inner: Channel, lines: list[tuple[str, str]]) -> None:
        self.inner = inner
        self.lines = lines

    @property
    def worker(self) -> str:
        return self.inner.worker

    @property
    def pid(self) -> int | None:
        return self.inner.pid

    def send(self, line: str, timeout: float) -> None:
        self.inner.send(line, timeout)

    def receive(self, timeout: float) -> str:
        line = self.inner.receive(timeout)
        self.lines.append((self.inner.worker, line))
        return line

    def unsolicited(self) -> str | None:
        return self.inner.unsolicited()

    def close(self, grace: float) -> int | None:
        return self.inner.close(grace)

    def stderr_tail(self) -> str:
        return self.inner.stderr_tail()


class _TapFactory:
    def __init__(self, inner: SutFactory) -> None:
        self.inner = inner
        self.lines: list[tuple[str, str]] = []

    @property
    def description(self) -> str:
        return self.inner.description

    def start(self, worker: str) -> Channel:
        return _TapChannel(self.inner.start(worker), self.lines)

    def close(self) -> None:
        """The wrapped factory belongs to the caller, who closes it."""


# ---------------------------------------------------------------------------
# The world


def _claims_plan(
    truth: PartitionTruth, cuts: list[Cut], injected: Cut | None
) -> tuple[ClaimStyle, Coordinate | None, list[int]] | None:
    """A claim style and end under which the harness's honest reader certifies ``cuts``
    in order (the positions j of ``cover(j)``), or None when none does."""
    ends: list[Coordinate | None] = [None]
    for cut in [*cuts, *([injected] if injected else [])]:
        if cut.at is not None and cut.endpoint.value == "before" and cut.at not in ends:
            ends.append(cut.at)
    top = max(len(truth.log), 1)
    for style in (ClaimStyle.THROUGH, ClaimStyle.BEFORE):
        for end in ends:
            if end is not None and any(truth.order.compare(ev.at, end) >= 0 for ev in truth.log):
                continue
            candidate = PartitionTruth(
                truth.epoch, PartitionSetup(truth.name, truth.log, None, style, end), truth.order
            )
            if injected is not None and candidate.complete() != injected:
                continue
            js: list[int] = []
            j = 0
            for cut in cuts:
                j += 1
                while j <= top and candidate.cover(j) != cut:
                    j += 1
                if j > top:
                    break
                js.append(j)
            if len(js) == len(cuts):
                return style, end, js
    return None


@dataclass
class _Layout:
    setup: WorldSetup
    advances: dict[int, list[int]]  # step index -> how many advance steps certify it


def layout(scenario: Scenario) -> _Layout:
    """The harness world of ``scenario`` and the advance counts of its certify steps."""
    order: Order | None = scenario.single_order
    if order is None:
        raise Unsupported(HARNESS_GAPS["orders"])
    for step in scenario.steps:
        if isinstance(step.action, Ingest | Serve):
            raise Unsupported(HARNESS_GAPS["pages"])
        if isinstance(step.action, Crash):
            raise Unsupported(HARNESS_GAPS["crash"])
    certified: dict[tuple[int, str], list[tuple[int, Cut]]] = {}
    injected: dict[tuple[int, str], Cut] = {}
    for step in scenario.steps:
        a = step.action
        if isinstance(a, Certify):
            certified.setdefault((step.epoch, a.partition), []).append((step.index, a.cut))
        elif isinstance(a, Misconfigure):
            if a.kind == "wrong_epoch":
                continue
            key = (step.epoch, a.partition)
            if key in injected and injected[key] != a.cut:
                raise Unsupported(
                    "the harness injects a misconfigured checkpoint claiming the partition's whole "
                    "log; two different misconfigured cuts cannot both be that"
                )
            injected[key] = a.cut
    epochs = []
    advances: dict[int, list[int]] = {}
    for e in scenario.epochs:
        parts = []
        for partition in sorted(e.members):
            events = scenario.events(e.epoch, partition)
            log = tuple(EventSpec(ev.id, ev.at) for ev in events)
            # The harness's source finalizes a prefix of each log. Its world starts with the
            # longest final prefix: an event final in the scenario but not here is settled by
            # the certification that covers it before any claim can cover it, so no verdict
            # changes (no scenario step publishes an uncertified event as true).
            n_final = 0
            while n_final < len(events) and events[n_final].final:
                n_final += 1
            base = PartitionTruth(e.epoch, PartitionSetup(partition, log, n_final), order)
            wanted = certified.get((e.epoch, partition), [])
            chosen = _claims_plan(base, [c for _, c in wanted], injected.get((e.epoch, partition)))
            if chosen is None:
                raise Unsupported(
                    f"{HARNESS_GAPS['certify']}; {partition}'s certified cuts in epoch {e.epoch} "
                    f"({', '.join(format_cut(c) for _, c in wanted) or 'none'}) are not all "
                    "reachable under one claim style"
                )
            style, end, js = chosen
            previous = 0
            for (index, _), j in zip(wanted, js, strict=True):
                advances[index] = [j - previous]
                previous = j
            parts.append(PartitionSetup(partition, log, n_final, style, end))
        epochs.append(EpochSetup(e.epoch, tuple(parts)))
    needs_env = any(isinstance(s.action, Certify | Misconfigure) for s in scenario.steps)
    setup = WorldSetup(
        order=order,
        epochs=tuple(epochs),
        publishers=scenario.publishers,
        readers=scenario.readers,
        policy=scenario.policy,
        stream=scenario.stream,
        scope=scenario.scope,
        env_checkpoints=needs_env,
    )
    return _Layout(setup, advances)


# ---------------------------------------------------------------------------
# The driver


@dataclass
class _Req:
    worker: str
    faults: Mapping[str, tuple[str, ...]]
    pause_op: str | None
    pause_nth: int
    counts: dict[str, int]
    parked: bool = False


class SutDriver:
    """Runs one scenario against the SUT ``factory`` starts, through the harness."""

    def __init__(self, scenario: Scenario, factory: SutFactory, *, timeout: float = 10.0) -> None:
        self.sc = scenario
        self.layout = layout(scenario)
        self.tap = _TapFactory(factory)
        self.timeout = timeout
        self.run: Run | None = None
        self.step_of: dict[int, Step] = {}
        self.requests: dict[str, _Req] = {}
        self._step: Step | None = None
        self._breach: Breach | None = None
        self._finished = False

    @property
    def breach(self) -> Breach | None:
        if self._breach is None and self.run is not None:
            found: Violation | None = first(self.run.violations)
            if found is not None:
                step = self._step_for(found.step)
                self._breach = Breach(
                    found.rule.value,
                    f"{found.message} (harness{', ' + found.worker if found.worker else ''})",
                    step.index if step else 0,
                    step.line if step else 0,
                )
        return self._breach

    def _step_for(self, harness_step: int | None) -> Step | None:
        if harness_step is None:
            return self._step
        candidates = [k for k in self.step_of if k <= harness_step]
        return self.step_of[max(candidates)] if candidates else self._step

    def begin(self) -> None:
        self.run = Run(self.tap, self.layout.setup, timeout=self.timeout)
        self.step_of[0] = self.sc.steps[0]
        self.run.start()

    def close(self) -> None:
        if self.run is not None and not self._finished:
            self._finished = True
            self.run.finish()

    def _execute(self, action: sched.Action) -> None:
        run = self.run
        assert run is not None
        if run.stopped:
            return
        if not run.execute(action):
            raise ScenarioRuntimeError(f"the harness could not {sched.describe(action)} now")

    # -- one step ----------------------------------------------------------------------

    def step(self, step: Step) -> Observed:
        run = self.run
        assert run is not None
        self._step = step
        self.step_of[run.step + 1] = step
        a = step.action
        lines_before = len(self.tap.lines)
        ended: str | None = None
        if isinstance(a, Certify):
            for count in self.layout.advances.get(step.index, [1]):
                for _ in range(count):
                    self._execute(sched.Advance(a.partition))
            says = f"the harness's honest reader certifies {a.partition} up to {format_cut(a.cut)}"
        elif isinstance(a, Misconfigure):
            self._misconfigure(a)
            says = f"the harness injects a {a.kind} checkpoint for {a.partition}"
        elif isinstance(a, Finalize):
            for event_id in a.events:
                self._finalize(event_id)
            says = f"the source finalizes {', '.join(a.events)}"
        elif isinstance(a, Reshard):
            self._execute(sched.Reshard())
            says = f"the membership of epoch {a.epoch} becomes durable"
        elif isinstance(a, Publish):
            pause = a.pause
            req = _Req(
                a.publisher,
                a.faults,
                None if pause is None else pause.op,
                0 if pause is None else pause.nth,
                {},
            )
            self.requests[a.publisher] = req
            self._execute(sched.Publish(a.publisher))
            ended = self._answer(req)
            says = f"{a.publisher} {ended or 'pauses ' + str(a.pause)}"
        elif isinstance(a, Resume):
            req = self.requests[a.worker]
            req.pause_op = None if a.pause is None else a.pause.op
            req.pause_nth = 0 if a.pause is None else a.pause.nth
            ended = self._answer(req)
            says = f"{a.worker} resumes: {ended or 'pauses again'}"
        else:
            raise Unsupported(
                HARNESS_GAPS["pages"] if isinstance(a, Ingest | Serve) else HARNESS_GAPS["crash"]
            )
        return self._observe(step, a, ended, lines_before, says)

    def _answer(self, req: _Req) -> str | None:
        """Answer the worker's calls until its request ends (its end) or it must pause."""
        run = self.run
        assert run is not None
        worker = run.workers[req.worker]
        while True:
            if worker.request is None:
                return "ended"
            pending = worker.pending
            if pending is None or run.stopped:
                return None if not run.stopped else "stopped by a violation"
            op = pending.op
            if not req.parked:
                n = req.counts.get(op, 0) + 1
                req.counts[op] = n
                if req.pause_op == op and req.pause_nth == n:
                    req.parked = True
                    req.pause_op = None
                    return None
            req.parked = False
            n = req.counts[op]
            modes = req.faults.get(op, ())
            mode = modes[n - 1] if n <= len(modes) else "ok"
            self._execute(sched.Answer(req.worker, mode))

    def _misconfigure(self, a: Misconfigure) -> None:
        run = self.run
        assert run is not None
        world = run.world
        if a.kind == "wrong_epoch":
            older = world.stored(world.setup.epochs[world.epoch_index - 1].epoch, a.partition)
            if older is None or older.cut != a.cut:
                raise Unsupported(
                    "the harness misfiles the partition's checkpoint of the previous epoch; "
                    f"its cut ({'none' if older is None else format_cut(older.cut)}) is not "
                    f"the scenario's {format_cut(a.cut)}"
                )
        self._execute(sched.Inject(a.partition, _INJECT[a.kind]))

    def _finalize(self, event_id: str) -> None:
        run = self.run
        assert run is not None
        world = run.world
        found = self.sc.event(world.epoch, event_id)
        assert found is not None
        partition = found[0]
        truth = world.truth[(world.epoch, partition)]
        if truth.final >= len(truth.log) or truth.log[truth.final].id != event_id:
            raise Unsupported(
                f"the harness's source finalizes {partition}'s events in position order; "
                f"{event_id} is not next"
            )
        self._execute(sched.Finalize(partition))

    # -- observation -------------------------------------------------------------------

    def _observe(
        self, step: Step, a: object, ended: str | None, lines_before: int, says: str
    ) -> Observed:
        run = self.run
        assert run is not None
        world = run.world
        rec = world.record
        owner = None if rec.op_id is None else world.op_ids.get(rec.op_id)
        record = RecordSeen(rec.epoch, rec.cut, rec.revision, None if owner is None else owner[0])
        checkpoints: dict[str, Cut | None] = {}
        for partition in sorted(world.membership.partitions):
            stored = world.stored(world.epoch, partition)
            checkpoints[partition] = None if stored is None else stored.cut
        attempt: AttemptSeen | None = None
        worker = getattr(a, "publisher", None) or getattr(a, "worker", None)
        if ended == "ended" and worker is not None:
            for who, line in reversed(self.tap.lines[lines_before:]):
                if who != worker:
                    continue
                try:
                    msg = parse_sut_message(line)
                except ValueError:
                    continue
                if isinstance(msg, PublishOk):
                    attempt = AttemptSeen(msg.outcome, msg.reason, msg.epoch, msg.cut)
                    break
        if attempt is not None:
            reason = f" {attempt.reason}" if attempt.reason else ""
            says = (
                f"{worker}: {attempt.outcome}{reason} (epoch {attempt.epoch}, "
                f"{format_cut(attempt.cut)})"
            )
        paused = ended is None and worker is not None and not run.stopped
        return Observed(
            record=record,
            checkpoints=checkpoints,
            generations={},
            attempt=attempt,
            paused=paused,
            narrative=says,
            blind=frozenset({"generations"}),
        )


def in_process_factory(variant: str | None) -> SutFactory:
    """fencepost's own SUT in-process; for a ``-bad`` scenario, the harness's mutant of it."""
    from fencepost.harness.adapter import InProcessSut
    from fencepost.harness.mutants import CATALOG, variant_of

    if variant is None:
        return InProcessSut()
    if variant not in CATALOG:
        raise Unsupported(f"the harness's mutant catalog has no {variant!r}")
    return InProcessSut(variant_of(variant))
