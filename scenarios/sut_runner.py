"""Run a scenario against any SUT through the conformance harness.

The harness (:mod:`fencepost.harness.runner`) plays the stores, the provider
and the network around SUT processes speaking the JSON-lines protocol, and
checks every change. This driver turns a scenario into the harness's world and
schedule, one scenario step at a time, through the harness's public API only:

- the world: a :class:`~fencepost.harness.world.WorldSetup` with the scenario's
  order, epochs, ground truth (each partition's source starts with the longest
  final prefix of its events) and workers;
- the steps: ``certify`` is the harness's explicit :class:`~fencepost.harness.schedule.Certify`
  (an honest reader certifies exactly the scenario's cut), ``misconfigure`` an
  :class:`~fencepost.harness.schedule.Inject` at the scenario's cut, ``serve`` a
  scripted page (:class:`~fencepost.harness.schedule.Serve`), ``crash`` a
  :class:`~fencepost.harness.schedule.Crash` of the worker's process; requests
  start with ``publish``/``ingest`` and each call is answered as the scenario's
  faults say, pausing where it pauses (:meth:`Run.pending_call
  <fencepost.harness.runner.Run.pending_call>` names the call waiting);
- the verdict: the harness's own violations (its oracle, after every step), and
  the expectations compared with :meth:`Run.snapshot
  <fencepost.harness.runner.Run.snapshot>` and the request's end as data
  (:meth:`Run.last_end <fencepost.harness.runner.Run.last_end>`).

What the harness cannot express is reported as unsupported with the reason
(see :data:`HARNESS_GAPS`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from fencepost.harness import schedule as sched
from fencepost.harness.results import RequestEnd
from fencepost.harness.rules import Violation, first
from fencepost.harness.runner import Run
from fencepost.harness.transport import SutFactory
from fencepost.harness.world import (
    EpochSetup,
    EventSpec,
    PartitionSetup,
    PartitionTruth,
    SetupError,
    WorldSetup,
)
from fencepost.judge.values import Cut, Order
from fencepost.scenarios.outcome import (
    STOPPED,
    AttemptSeen,
    Breach,
    Observed,
    RecordSeen,
    ScenarioRuntimeError,
    Unsupported,
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

#: What the scenario format can say that the harness (protocol 1) cannot.
HARNESS_GAPS: dict[str, str] = {
    "orders": "a harness world has one order for every partition",
    "max_pages": "the protocol's ingest request has no page limit (max_pages)",
    "finalize": (
        "the harness's source finalizes each partition's events in position order; "
        "a scenario that finalizes a later event first cannot be replayed"
    ),
}


# ---------------------------------------------------------------------------
# The world


def layout(scenario: Scenario) -> WorldSetup:
    """The harness world of ``scenario``: its order, epochs, ground truth and workers."""
    order: Order | None = scenario.single_order
    if order is None:
        raise Unsupported(HARNESS_GAPS["orders"])
    for step in scenario.steps:
        if isinstance(step.action, Ingest) and step.action.max_pages is not None:
            raise Unsupported(HARNESS_GAPS["max_pages"])
    epochs = []
    for e in scenario.epochs:
        parts = []
        for partition in sorted(e.members):
            events = scenario.events(e.epoch, partition)
            final = {ev.id for ev in events if ev.final}
            log = tuple(EventSpec(ev.id, ev.at) for ev in events)
            # The harness's source finalizes a prefix of each log (in its own position
            # order): start with the longest final prefix; later ``finalize`` steps
            # (and certifications) extend it.
            ordered = PartitionTruth(e.epoch, PartitionSetup(partition, log), order).log
            n_final = 0
            while n_final < len(ordered) and ordered[n_final].id in final:
                n_final += 1
            parts.append(PartitionSetup(partition, log, n_final))
        epochs.append(EpochSetup(e.epoch, tuple(parts)))
    needs_env = any(isinstance(s.action, Certify | Misconfigure) for s in scenario.steps)
    return WorldSetup(
        order=order,
        epochs=tuple(epochs),
        publishers=scenario.publishers,
        readers=scenario.readers,
        policy=scenario.policy,
        stream=scenario.stream,
        scope=scenario.scope,
        env_checkpoints=needs_env,
    )


# ---------------------------------------------------------------------------
# The driver


@dataclass
class _Req:
    worker: str
    faults: Mapping[str, tuple[str, ...]]
    pause_op: str | None
    pause_nth: int
    counts: dict[str, int]
    before: RequestEnd | None = None
    parked: bool = False


class SutDriver:
    """Runs one scenario against the SUT ``factory`` starts, through the harness."""

    def __init__(self, scenario: Scenario, factory: SutFactory, *, timeout: float = 10.0) -> None:
        self.sc = scenario
        self.setup = layout(scenario)
        self.factory = factory
        self.timeout = timeout
        self.run: Run | None = None
        self.step_of: dict[int, Step] = {}
        self.requests: dict[str, _Req] = {}
        #: (epoch, partition) whose provider the scenario scripted.
        self.served: set[tuple[int, str]] = set()
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
        self.run = Run(self.factory, self.setup, timeout=self.timeout)
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
        try:
            done = run.execute(action)
        except SetupError as exc:
            raise ScenarioRuntimeError(str(exc)) from None
        if not done:
            raise ScenarioRuntimeError(f"the harness could not {sched.describe(action)} now")

    # -- one step ----------------------------------------------------------------------

    def step(self, step: Step) -> Observed:
        run = self.run
        assert run is not None
        self._step = step
        self.step_of[run.step + 1] = step
        a = step.action
        ended: RequestEnd | None = None
        worker: str | None = None
        if isinstance(a, Certify):
            self._certify(a)
            says = f"an honest reader certifies {a.partition} up to {format_cut(a.cut)}"
        elif isinstance(a, Misconfigure):
            self._execute(sched.Inject(a.partition, a.kind, a.cut))
            says = (
                f"the harness stores a {a.kind} checkpoint for {a.partition} at {format_cut(a.cut)}"
            )
        elif isinstance(a, Finalize):
            for event_id in a.events:
                self._finalize(event_id)
            says = f"the source finalizes {', '.join(a.events)}"
        elif isinstance(a, Reshard):
            self._execute(sched.Reshard())
            says = f"the membership of epoch {a.epoch} becomes durable"
        elif isinstance(a, Serve):
            self.served.add((run.snapshot().epoch, a.partition))
            self._execute(
                sched.Serve(a.partition, a.token, a.events, a.next, a.claim, a.final, a.lost)
            )
            says = f"the provider serves {a.partition} at " + (
                "the start" if a.token is None else repr(a.token)
            )
        elif isinstance(a, Publish | Ingest):
            worker = a.publisher if isinstance(a, Publish) else a.reader
            req = self._request(worker, a.faults, a.pause)
            start: sched.Action
            if isinstance(a, Publish):
                start = sched.Publish(worker)
            else:
                start = sched.Ingest(worker, a.partition)
                key = (run.snapshot().epoch, a.partition)
                if key not in self.served:
                    # The scenario serves no page here: its provider has nothing (an
                    # empty page), not the harness's pages cut from the ground truth.
                    self.served.add(key)
                    self._execute(sched.Serve(a.partition, None, ()))
            req.before = run.last_end(worker)
            self._execute(start)
            ended = self._answer(req)
            says = f"{worker} " + ("ends" if ended else f"pauses {a.pause}")
        elif isinstance(a, Resume):
            worker = a.worker
            paused = self.requests.get(worker)
            if paused is None or not run.busy(worker):
                raise ScenarioRuntimeError(f"{worker} has no paused request to resume")
            paused.pause_op = None if a.pause is None else a.pause.op
            paused.pause_nth = 0 if a.pause is None else a.pause.nth
            ended = self._answer(paused)
            says = f"{worker} resumes: " + ("it ends" if ended else "pauses again")
        else:
            assert isinstance(a, Crash)
            if a.worker not in self.requests or not run.busy(a.worker):
                raise ScenarioRuntimeError(f"{a.worker} has no paused request to crash")
            self._execute(sched.Crash(a.worker))
            del self.requests[a.worker]
            says = f"{a.worker} crashes at its pause point; a fresh process starts"
        return self._observe(worker, ended, says)

    def _request(
        self, worker: str, faults: Mapping[str, tuple[str, ...]], pause: Pause | None
    ) -> _Req:
        op, nth = (None, 0) if pause is None else (pause.op, pause.nth)
        req = _Req(worker, faults, op, nth, {})
        self.requests[worker] = req
        return req

    def _answer(self, req: _Req) -> RequestEnd | None:
        """Answer the worker's calls until its request ends (its end) or it must pause."""
        run = self.run
        assert run is not None
        while True:
            end = run.last_end(req.worker)
            if not run.busy(req.worker) and end is not None and end is not req.before:
                self.requests.pop(req.worker, None)
                return end
            pending = run.pending_call(req.worker)
            if pending is None or run.stopped:
                return None
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

    def _certify(self, a: Certify) -> None:
        run = self.run
        assert run is not None
        action = sched.Certify(a.partition, a.cut)
        if not run.possible(action) and not run.stopped:
            held = run.snapshot().checkpoints.get(a.partition)
            raise ScenarioRuntimeError(
                f"certify {a.partition} {format_cut(a.cut)}: the stored checkpoint is already "
                f"{'none' if held is None else format_cut(held.cut)}; an honest reader only "
                "certifies a cut ahead of it"
            )
        self._execute(action)

    def _finalize(self, event_id: str) -> None:
        run = self.run
        assert run is not None
        found = self.sc.event(run.snapshot().epoch, event_id)
        assert found is not None
        partition = found[0]
        unfinal = run.snapshot().unfinal.get(partition, ())
        if event_id not in unfinal:
            return  # already final (a certification covered it): nothing changes
        if unfinal[0] != event_id:
            raise Unsupported(f"{HARNESS_GAPS['finalize']} ({partition}: {event_id} is not next)")
        self._execute(sched.Finalize(partition))

    # -- observation -------------------------------------------------------------------

    def _observe(self, worker: str | None, ended: RequestEnd | None, says: str) -> Observed:
        run = self.run
        assert run is not None
        snap = run.snapshot()
        rec = snap.record
        record = RecordSeen(rec.epoch, rec.cut, rec.revision, snap.writer)
        checkpoints: dict[str, Cut | None] = {}
        generations: dict[str, int | None] = {}
        for partition, stored in snap.checkpoints.items():
            checkpoints[partition] = None if stored is None else stored.cut
            generations[partition] = None if stored is None else stored.generation
        attempt: AttemptSeen | None = None
        ingest: Cut | None = None
        if ended is not None and ended.kind == "publish":
            attempt = AttemptSeen(ended.outcome, ended.reason, ended.epoch, ended.cut)
            reason = f" {ended.reason}" if ended.reason else ""
            says = (
                f"{ended.worker}: {ended.outcome}{reason} (epoch {ended.epoch}, "
                f"{format_cut(ended.cut)})"
            )
        elif ended is not None:
            ingest = ended.cut
            says = f"{ended.worker}'s pass ends certifying {format_cut(ended.cut)}"
        paused = ended is None and worker is not None and not run.stopped and run.busy(worker)
        return Observed(
            record=record,
            checkpoints=checkpoints,
            generations=generations,
            attempt=attempt,
            ingest=ingest,
            paused=paused,
            narrative=says,
            blind=frozenset({STOPPED}) if run.stopped else frozenset(),
        )


def in_process_factory(variant: str | None) -> SutFactory:
    """fencepost's own SUT in-process; for a ``-bad`` scenario, the harness's mutant of it."""
    from fencepost.mutants import CATALOG
    from fencepost.sut.adapter import InProcessSut

    if variant is None:
        return InProcessSut()
    if variant not in CATALOG:
        raise Unsupported(f"the harness's mutant catalog has no {variant!r}")
    return InProcessSut(CATALOG[variant])
