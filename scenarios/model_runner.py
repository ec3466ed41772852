"""Run a scenario against the formal model: each step mapped onto model actions.

The model (:mod:`fencepost.model`) is a state machine over small abstract
worlds: partitions named A, B, ... with identical own events, integer
coordinates 0..15 (events may also sit half-way on a dense order), one order,
every partition a member of every epoch, a reshard moving one batch of events
into one partition. A scenario maps onto it when its world fits:

- **Coordinates** are compressed, order-preserving: on a dense order the
  distinct values become 0, 1, 2, ...; on an order with an exact successor
  consecutive values stay consecutive and a gap becomes one intermediate
  coordinate, so ``through x == before x+1`` keeps holding exactly where it did.
- **Partitions** keep their sorted order (the first is A); **publishers** and
  **readers** get one model process per incarnation (a crash retires one).
- **Ground truth**: in the publication part an honest certification settles the
  events of its downset, so every partition may carry the union of all
  partitions' own events; an ingest part needs them equal.

Then every step is one or more model actions chosen with
:func:`fencepost.model.machine.matching`: ``certify`` and ``misconfigure`` are
the environment's ``certify`` / ``bad_checkpoint``; a publication attempt is
driven call by call (record, membership, checkpoints, write, authoritative
reread), each answered as the scenario's faults say; an ingest pass fetches the
served pages that continue from the model reader's position. The model's
invariants are checked after every action and the expectations after every
step. A step that has no model counterpart raises
:class:`~fencepost.scenarios.outcome.Unsupported` naming the gap.

The model never sees the implementation; only this module sees both the
scenario and the model.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from fencepost.judge.values import NOTHING, Cut, Endpoint
from fencepost.model import machine
from fencepost.model.cuts import BEFORE, THROUGH, coordinate_text, rank
from fencepost.model.cuts import NOTHING as M_NOTHING
from fencepost.model.cuts import Cut as MCut
from fencepost.model.invariants import violations
from fencepost.model.state import (
    FETCHED,
    HAVE_MEMBERSHIP,
    HAVE_RECORD,
    IDLE,
    IN_DOUBT,
    PROPOSING,
    Action,
    State,
)
from fencepost.scenarios.model_plan import BAD_KIND, plan
from fencepost.scenarios.outcome import (
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

# ---------------------------------------------------------------------------
# The driver


@dataclass
class _Req:
    """A request in progress: the model process driving it and what the scenario scripts."""

    worker: str
    model: str  # model publisher (p1) or reader (A.r1)
    kind: str
    faults: dict[str, tuple[str, ...]]
    pause: Pause | None
    partition: str = ""
    counts: dict[str, int] = field(default_factory=dict)
    parked: str | None = None  # the op it is paused before (already counted)
    started: bool = False
    done: bool = False
    max_pages: int | None = None
    # ingest passes: where the pass is, the scenario token it fetches, the last page
    stage: str = "start"
    continuation: bool = False
    epoch: int = 0
    pages: int = 0
    token: str | None = None
    served: Serve | None = None
    end: int = 0


class ModelDriver:
    """Runs one scenario on the model (see the module docstring)."""

    def __init__(self, scenario: Scenario) -> None:
        self.sc = scenario
        self.plan = plan(scenario)
        self.state: State = machine.initial(self.plan.config)
        self._breach: Breach | None = None
        self._step: Step | None = None
        self.epoch_index = 0
        self.incarnation: dict[str, int] = {}
        self.active: dict[str, _Req] = {}
        self.pages: dict[tuple[int, str, str | None], Serve] = {}
        #: (scenario epoch, partition, model reader position) -> the scenario token to fetch there.
        self.token_at: dict[tuple[int, str, int], str | None] = {}
        self.writers: dict[str, str] = {}

    @property
    def breach(self) -> Breach | None:
        return self._breach

    @property
    def legend(self) -> str:
        """How the model's names and coordinates read in the scenario's terms."""
        plan = self.plan
        parts = ", ".join(f"{m}={p}" for p, m in plan.partition.items() if m != p)
        pubs = ", ".join(f"{m}={w}" for (w, n), m in plan.publishers.items() if m != w or n)
        reads = ", ".join(f"{m}={w}" for (w, _, n), m in plan.readers.items())
        coords = ", ".join(f"{m}={v!r}" for m, v in sorted(plan.coord_back.items()) if m != v)
        pieces = [
            f"partitions {parts}" if parts else "",
            f"publishers {pubs}" if pubs else "",
            f"readers {reads}" if reads else "",
            f"coordinates {coords}" if coords else "",
        ]
        shown = "; ".join(p for p in pieces if p)
        return f"model names: {shown}" if shown else ""

    @property
    def epoch(self) -> int:
        return self.sc.epochs[self.epoch_index].epoch

    def close(self) -> None:
        """Nothing to release: the model is pure data."""

    def begin(self) -> None:
        if self.plan.config.part == "publication":
            return
        # The source's initial finality: finalize, in position order, the events final at the start.
        first = self.sc.epochs[0].epoch
        for p in self.plan.partition:
            for ev in self.sc.events(first, p):
                if ev.final:
                    self._finalize_one(p, ev, "at the start")

    # -- model actions -----------------------------------------------------------------

    def _apply(self, action: Action) -> None:
        self.state = machine.step(self.state, action)
        if self._breach is None:
            found = violations(self.state)
            if found:
                inv, message = found[0]
                step = self._step
                legend = self.legend
                self._breach = Breach(
                    inv.name,  # the model's invariants carry the judge's property names
                    f"{message} (model, after: {action.describe()}"
                    + (f"; {legend})" if legend else ")"),
                    step.index if step else 0,
                    step.line if step else 0,
                )

    def _pick(self, what: str, kind: str, **fields: object) -> Action:
        found = machine.matching(self.state, kind, **fields)
        if not found:
            offered = [a.describe() for a in machine.actions(self.state) if a.kind == kind]
            raise Unsupported(
                f"the model has no action for {what}"
                + (f" (it offers: {'; '.join(offered[:4])})" if offered else "")
            )
        return found[0]

    def _mcut(self, cut: Cut) -> MCut:
        if cut.endpoint is Endpoint.NOTHING:
            return M_NOTHING
        assert cut.at is not None
        return MCut(
            2 * self.plan.coord[cut.at], BEFORE if cut.endpoint is Endpoint.BEFORE else THROUGH
        )

    def _cut(self, cut: MCut) -> Cut:
        if cut.half < 0:
            return NOTHING
        if cut.half % 2:
            raise ScenarioRuntimeError(f"the model produced a cut at a half position ({cut})")
        at = self.plan.coord_back.get(cut.half // 2)
        if at is None:
            raise ScenarioRuntimeError(f"the model's cut {cut} has no scenario coordinate")
        return Cut(Endpoint.BEFORE if cut.kind == BEFORE else Endpoint.THROUGH, at)

    # -- one step ----------------------------------------------------------------------

    def step(self, step: Step) -> Observed:
        self._step = step
        a = step.action
        ended: _Req | None = None
        me = self.plan.epoch[self.epoch]
        says: str
        if isinstance(a, Certify):
            act = self._pick(
                f"certify {a.partition} {format_cut(a.cut)}",
                "certify",
                partition=self.plan.partition[a.partition],
                epoch=me,
                cut=self._mcut(a.cut),
            )
            self._apply(act)
            says = act.describe()
        elif isinstance(a, Misconfigure):
            act = self._pick(
                f"a {a.kind} checkpoint {a.partition} {format_cut(a.cut)} (the model stores a "
                "bad checkpoint only as the first of its epoch, at the least cut that is not true)",
                "bad_checkpoint",
                partition=self.plan.partition[a.partition],
                epoch=me,
                cut=self._mcut(a.cut),
                detail=BAD_KIND[a.kind],
            )
            self._apply(act)
            says = act.describe()
        elif isinstance(a, Finalize):
            says = self._finalize(a)
        elif isinstance(a, Reshard):
            act = self._pick(
                f"the reshard to epoch {a.epoch}",
                "reshard",
                epoch=self.plan.epoch[a.epoch],
                partition=self.plan.reshard_target[a.epoch],
            )
            self._apply(act)
            self.epoch_index += 1
            says = act.describe()
            if self.plan.config.part != "publication":
                # Events the reshard moved in that the source has already finalized.
                previous = self.sc.epochs[self.epoch_index - 1].epoch
                for p in self.plan.partition:
                    old = {ev.id for ev in self.sc.events(previous, p)}
                    for ev in self.sc.events(a.epoch, p):
                        if ev.id not in old and ev.final:
                            self._finalize_one(p, ev, f"when epoch {a.epoch} begins")
        elif isinstance(a, Serve):
            self.pages[(self.epoch, a.partition, a.token)] = a
            says = f"the provider serves {a.partition} at {a.token or 'the start'}"
        elif isinstance(a, Publish):
            key = (a.publisher, self.incarnation.get(a.publisher, 0))
            req = _Req(a.publisher, self.plan.publishers[key], "publish", dict(a.faults), a.pause)
            self.active[a.publisher] = req
            says = self._run_publisher(req)
            ended = req if req.done else None
        elif isinstance(a, Ingest):
            rkey = (a.reader, a.partition, self.incarnation.get(a.reader, 0))
            req = _Req(
                a.reader,
                self.plan.readers[rkey],
                "ingest",
                dict(a.faults),
                a.pause,
                a.partition,
                max_pages=a.max_pages,
            )
            self.active[a.reader] = req
            says = self._run_reader(req)
            ended = req if req.done else None
        elif isinstance(a, Resume):
            req = self.active[a.worker]
            req.pause = a.pause
            says = f"{a.worker} resumes: " + (
                self._run_publisher(req) if req.kind == "publish" else self._run_reader(req)
            )
            ended = req if req.done else None
        else:
            assert isinstance(a, Crash)
            self.active.pop(a.worker)
            self.incarnation[a.worker] = self.incarnation.get(a.worker, 0) + 1
            says = f"{a.worker} stops for good (the model's process takes no further step)"
        if ended is not None:
            self.active.pop(ended.worker, None)
        return self._observe(step, ended, says)

    # -- environment ---------------------------------------------------------------------

    def _finalize(self, a: Finalize) -> str:
        if self.plan.config.part == "publication":
            return (
                f"the source finalizes {', '.join(a.events)} (the model's publication part "
                "settles events when certifying)"
            )
        for event_id in a.events:
            found = self.sc.event(self.epoch, event_id)
            assert found is not None
            self._finalize_one(found[0], found[1], "")
        return f"the source finalizes {', '.join(a.events)}"

    def _finalize_one(self, partition: str, ev: EventDef, when: str) -> None:
        half = 2 * self.plan.coord[ev.at]
        text = f" at {coordinate_text(half)}"
        for act in machine.matching(
            self.state, "finalize", partition=self.plan.partition[partition]
        ):
            if act.detail is not None and act.detail.endswith(text):
                self._apply(act)
                return
        raise Unsupported(
            f"the model's source finalizes each partition's events in position order; "
            f"{ev.id} at {ev.at!r} of {partition} is not next{(' ' + when) if when else ''}"
        )

    # -- publishers ------------------------------------------------------------------------

    def _next_call(self, req: _Req, op: str) -> bool:
        """Count the request's next call of ``op``; True when it must pause before it."""
        if req.parked == op:
            req.parked = None
            return False
        n = req.counts.get(op, 0) + 1
        req.counts[op] = n
        pause = req.pause
        if pause is not None and pause.op == op and pause.nth == n:
            req.pause = None
            req.parked = op
            return True
        return False

    def _mode(self, req: _Req, op: str) -> str:
        modes = req.faults.get(op, ())
        n = req.counts.get(op, 0)
        return modes[n - 1] if 0 < n <= len(modes) else "ok"

    def _virtual_reread(self, req: _Req) -> None:
        """The implementation rereads the record at the top of its retry loop; the model
        holds the record the conflict (or the authoritative read) returned."""
        n = req.counts.get("read_publication", 0) + 1
        req.counts["read_publication"] = n
        pause = req.pause
        if pause is not None and pause.op == "read_publication" and pause.nth == n:
            raise Unsupported(
                "a pause before the reread that starts a retry: the model folds that reread "
                "into the conflict reply (or the authoritative read)"
            )

    def _run_publisher(self, req: _Req) -> str:
        name = req.model
        k = int(name[1:]) - 1
        said: list[str] = []
        while True:
            pub = self.state.publishers[k]
            phase = pub.phase
            if phase == IDLE:
                if req.started:
                    req.done = True
                    reason = f" {pub.reason}" if pub.reason else ""
                    said.append(f"ends {pub.outcome}{reason}")
                    break
                if self._next_call(req, "read_publication"):
                    said.append("pauses before read_publication")
                    break
                act = self._pick(
                    f"{req.worker} reading the record", "read_publication", actor=name, outcome="ok"
                )
                req.started = True
            elif phase == HAVE_RECORD:
                if self._next_call(req, "read_membership"):
                    said.append("pauses before read_membership")
                    break
                act = self._pick(
                    f"{req.worker} reading the membership", "read_membership", actor=name
                )
            elif phase == HAVE_MEMBERSHIP:
                if self._next_call(req, "read_checkpoints"):
                    said.append("pauses before read_checkpoints")
                    break
                act = self._pick(
                    f"{req.worker} reading the checkpoints", "read_checkpoints", actor=name
                )
            elif phase == PROPOSING:
                if self._next_call(req, "write_publication"):
                    said.append("pauses before write_publication")
                    break
                act = self._write_publication(req, name)
            elif phase == IN_DOUBT:
                if self._next_call(req, "read_publication"):
                    said.append("pauses before the authoritative read")
                    break
                act = self._pick(
                    f"{req.worker}'s authoritative read",
                    "read_publication",
                    actor=name,
                    outcome="ok",
                )
            else:
                raise ScenarioRuntimeError(f"model publisher {name} is in an unknown phase {phase}")
            self._apply(act)
            said.append(act.describe())
            if act.kind == "write_publication":
                if act.outcome in ("ok", "lost-applied"):
                    self.writers[f"{name}-{self.state.publishers[k].attempt}"] = req.worker
                if act.outcome == "conflict" and act.detail == "retry":
                    self._virtual_reread(req)
            elif act.kind == "read_publication" and act.detail in (
                "authoritative:retry",
                "authoritative:cutover",
            ):
                self._virtual_reread(req)
        return "; ".join(said)

    def _write_publication(self, req: _Req, name: str) -> Action:
        mode = self._mode(req, "write_publication")
        options = machine.matching(self.state, "write_publication", actor=name)
        outcomes = {a.outcome: a for a in options}
        if mode == "ok":
            chosen = outcomes.get("ok") or outcomes.get("conflict")
        elif mode == "applied_lost":
            chosen = outcomes.get("lost-applied") or outcomes.get("lost-not-applied")
        else:
            chosen = outcomes.get("lost-not-applied")
        if chosen is None:
            raise Unsupported(
                f"{req.worker}'s write answered {mode!r}: the model offers "
                f"{', '.join(str(o) for o in outcomes) or 'nothing'}"
            )
        return chosen

    # -- readers ---------------------------------------------------------------------------

    def _reader_index(self, req: _Req) -> tuple[int, int]:
        i = ord(req.model[0]) - ord("A")
        j = int(req.model.split(".r")[1]) - 1
        return i, j

    def _run_reader(self, req: _Req) -> str:
        """Drive one ingest pass the way the implementation runs it, page by page.

        The implementation writes a checkpoint as soon as a page's final claim is
        ahead and goes on paging; a model pass ends with its write, so the model
        continues with a fresh pass from the checkpoint it just wrote (that pass's
        ``read_checkpoint`` is the model's, not a call of the implementation).
        """
        i, j = self._reader_index(req)
        name = req.model
        said: list[str] = []
        while True:
            reader = self.state.partitions[i].readers[j]
            if req.stage == "start":
                if not req.continuation and self._next_call(req, "read_checkpoint"):
                    said.append("pauses before read_checkpoint")
                    break
                act = self._pick(f"{req.worker} starting a pass", "read_checkpoint", actor=name)
                self._apply(act)
                said.append(act.describe())
                t = self.state.partitions[i].readers[j].token
                if not req.continuation:
                    req.epoch = self.epoch
                    key = (req.epoch, req.partition, t)
                    if t and key not in self.token_at:
                        raise Unsupported(
                            f"the model resumes {req.partition} at position {t}, where no "
                            "served page continues"
                        )
                    req.token = self.token_at.get(key)
                req.stage = "fetch"
            elif req.stage == "fetch":
                if req.max_pages is not None and req.pages >= req.max_pages:
                    req.stage = "end"
                    continue
                if self._next_call(req, "fetch_page"):
                    said.append("pauses before fetch_page")
                    break
                act = self._fetch(req, i, j, name)
                self._apply(act)
                said.append(act.describe())
                req.pages += 1
                fetched = self.state.partitions[i].readers[j].phase == FETCHED
                req.stage = "record" if fetched else "after"
            elif req.stage == "record":
                if self._next_call(req, "record_outcome"):
                    said.append("pauses before record_outcome")
                    break
                act = self._pick(f"{req.worker} recording outcomes", "record_outcomes", actor=name)
                self._apply(act)
                said.append(act.describe())
                # The implementation records one outcome per event: count the rest of the page.
                extra = len(act.detail.split(", ")) - 1 if act.detail else 0
                req.counts["record_outcome"] = req.counts.get("record_outcome", 0) + extra
                req.stage = "after"
            elif req.stage == "after":
                served = req.served
                nxt = None if served is None else served.next
                self.token_at[(req.epoch, req.partition, req.end)] = (
                    nxt if nxt is not None else req.token
                )
                succ = self.plan.config.successor
                if rank(reader.claim, succ) > rank(reader.base, succ):
                    req.stage = "write"
                elif nxt is None:
                    req.stage = "end"
                else:
                    req.token = nxt
                    req.stage = "fetch"
            elif req.stage == "write":
                if self._next_call(req, "write_checkpoint"):
                    said.append("pauses before write_checkpoint")
                    break
                self._write_checkpoint(req, name, said)
                if self.state.partitions[i].readers[j].phase != IDLE:
                    continue  # the reader writes again in this pass (a rewrite after a conflict)
                nxt = None if req.served is None else req.served.next
                over = req.max_pages is not None and req.pages >= req.max_pages
                if nxt is None or over:
                    req.done = True
                    break
                req.token = nxt
                req.continuation = True
                req.stage = "start"
            else:  # "end": the implementation stops paging; the model pass ends without a write
                if reader.phase != IDLE:
                    act = self._pick(f"{req.worker} ending its pass", "end_pass", actor=name)
                    self._apply(act)
                    said.append(act.describe())
                req.done = True
                break
        return "; ".join(said)

    def _fetch(self, req: _Req, i: int, j: int, name: str) -> Action:
        reader = self.state.partitions[i].readers[j]
        t = reader.token
        served = self.pages.get((req.epoch, req.partition, req.token))
        events: tuple[str, ...] = () if served is None else served.events
        truth = {ev.id: ev for ev in self.sc.events(req.epoch, req.partition)}
        halves = sorted(2 * self.plan.coord[truth[x].at] for x in events)
        claim = None if served is None else served.claim
        want_kind = (
            "" if served is None or claim is None else ("final" if served.final else "non-final")
        )
        want_cut = M_NOTHING if claim is None else self._mcut(claim)
        ctx = self.state.context
        view = ctx.view(self.state.partitions[i].truth.moved, self.plan.epoch[req.epoch])
        offered = machine.matching(self.state, "fetch_page", actor=name)
        # The model's provider offers only claims that change something: a final claim
        # ahead of the pass's best, one non-final claim. A final claim not ahead, or a
        # non-final claim the correct reader ignores, is the same step as no claim.
        succ = self.plan.config.successor
        kinds = [(want_kind, want_cut)]
        if want_kind == "final" and rank(want_cut, succ) <= rank(reader.claim, succ):
            kinds.append(("", M_NOTHING))
        if want_kind == "non-final" and self.plan.config.mutant != "provisional-ok":
            kinds.append(("", M_NOTHING))
        for kind, cut in kinds:
            for act in offered:
                page = act.page
                assert page is not None
                if page.claim_kind != kind or (kind and page.claim != cut):
                    continue
                got = sorted(ctx.half_of(idx) for idx in view[page.start : page.end])
                if got != halves:
                    continue
                req.served = served
                req.end = page.end
                return act
        shown = "no claim" if claim is None else f"{want_kind} claim {format_cut(claim)}"
        raise Unsupported(
            f"the page {req.worker} fetches at {req.token or 'the start'} "
            f"({', '.join(events) or 'no events'}; {shown}) is not one the model's provider "
            f"can serve from position {t}"
            + (f" (it offers e.g. '{offered[-1].describe()}')" if offered else "")
        )

    def _write_checkpoint(self, req: _Req, name: str, said: list[str]) -> None:
        mode = self._mode(req, "write_checkpoint")
        options = {
            a.outcome: a for a in machine.matching(self.state, "write_checkpoint", actor=name)
        }
        if mode == "ok":
            chosen = options.get("ok") or options.get("conflict")
        else:
            chosen = options.get("lost-applied")
        if chosen is None:
            raise Unsupported(
                f"{req.worker}'s checkpoint write answered {mode!r}: the model offers "
                f"{', '.join(str(o) for o in options) or 'nothing'}"
            )
        self._apply(chosen)
        said.append(chosen.describe())

    # -- observation -----------------------------------------------------------------------

    def _observe(self, step: Step, ended: _Req | None, says: str) -> Observed:
        s = self.state
        rec = s.record
        writer = None if rec.op_id is None else self.writers.get(rec.op_id)
        record = RecordSeen(
            self.plan.epoch_back[rec.epoch], self._cut(rec.cut), rec.revision, writer
        )
        me = self.plan.epoch[self.epoch]
        checkpoints: dict[str, Cut | None] = {}
        generations: dict[str, int | None] = {}
        for p, mp in self.plan.partition.items():
            i = ord(mp) - ord("A")
            cp = s.checkpoint(i, me)
            checkpoints[p] = None if cp is None else self._cut(cp.cut)
            generations[p] = s.generation(i, me) or None
        blind = {"attempt.cut", "attempt.epoch"}
        if self.plan.config.part != "publication":
            blind.add("generations")
        attempt: AttemptSeen | None = None
        ingest: Cut | None = None
        if ended is not None and ended.kind == "publish":
            pub = s.publishers[int(ended.model[1:]) - 1]
            cut: Cut | None = None
            epoch: int | None = None
            if pub.outcome == "published":
                cut = self._cut(pub.proposal)
                epoch = self.plan.epoch_back[pub.mem_epoch]
                blind -= {"attempt.cut", "attempt.epoch"}
            elif pub.outcome == "confirmed":
                epoch = self.plan.epoch_back[pub.mem_epoch]
                blind.discard("attempt.epoch")
            attempt = AttemptSeen(pub.outcome, pub.reason or None, epoch, cut)
        elif ended is not None:
            i = ord(self.plan.partition[ended.partition]) - ord("A")
            cp = s.checkpoint(i, self.plan.epoch[ended.epoch])
            ingest = NOTHING if cp is None else self._cut(cp.cut)
        worker = getattr(step.action, "publisher", None) or getattr(step.action, "reader", None)
        worker = worker or getattr(step.action, "worker", None)
        paused = worker is not None and worker in self.active and not self.active[worker].done
        return Observed(
            record=record,
            checkpoints=checkpoints,
            generations=generations,
            attempt=attempt,
            ingest=ingest,
            paused=paused,
            narrative=says,
            blind=frozenset(blind),
        )
