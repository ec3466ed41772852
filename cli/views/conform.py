"""A conformance report (:class:`~fencepost.harness.conformance.ConformReport`) as a report.

The summary, the phases, the situation coverage and, per failure, its shortest
schedule drawn as a timeline: one lane per publisher and reader worker and one
for the environment, each request (publication attempt, ingest pass) and each
call a box from the step that sent it to the step that answered it, read from
the run's transcript; lost responses marked applied or not from the schedule's
answer steps; per step the publication record, every stored checkpoint and the
source's unfinalized events (the harness's :class:`~fencepost.harness.results.Snapshot`).

Cost: linear in the transcript and the steps of each failure (each line parsed once).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from fencepost.harness.conformance import ConformReport, Failure, describe_seed
from fencepost.harness.coverage import Situation
from fencepost.harness.findings import group
from fencepost.harness.report import render_failure, replay_hint
from fencepost.harness.results import Snapshot, StepRecord, TranscriptLine
from fencepost.harness.schedule import (
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
)
from fencepost.reports import (
    Breach,
    Fact,
    Lane,
    LaneKind,
    Mark,
    Report,
    Section,
    Span,
    Status,
    Step,
    Table,
    Timeline,
)

#: The environment's lane key (the harness's transcript names it so too).
ENV = "env"


def conform_report(report: ConformReport, command: str) -> Report:
    """The whole conformance run: verdict, facts, phases, coverage, failures."""
    rate = report.messages / report.seconds if report.seconds > 0 else 0.0
    facts = [
        Fact("SUT", report.sut, code=True),
        Fact("says it is", report.sut_name or "?"),
        Fact("levels declared", ", ".join(report.declared) or "none"),
        Fact("levels tested", ", ".join(report.tested) or "none"),
        Fact("integers", report.integers),
        Fact(
            "total",
            f"{report.runs} run(s), {report.messages:,} messages in {report.seconds:.1f}s "
            f"({rate:,.0f} messages/s)",
        ),
    ]
    if report.reused:
        facts.append(
            Fact("processes", f"{report.processes} started, reused {report.reused} time(s)")
        )
    if report.problem:
        facts.append(Fact("problem", report.problem))
    facts += [Fact("note", n) for n in report.notes]
    facts += [Fact("warning", w) for w in report.warnings()]
    findings = group(report.failures)
    sections = [
        failure_section(f.failure, command, f.also_seen, (n, len(findings)))
        for n, f in enumerate(findings, 1)
    ]
    return Report(
        title="fencepost conform",
        status=Status.PASS
        if report.ok
        else (Status.ERROR if report.interrupted is not None else Status.FAIL),
        verdict="CONFORMANT"
        if report.ok
        else (
            f"INTERRUPTED (Ctrl-C) in {report.interrupted}: no verdict"
            if report.interrupted is not None
            else "NOT CONFORMANT"
        ),
        facts=tuple(facts),
        tables=(phase_table(report), coverage_table(report)),
        sections=tuple(sections),
    )


def phase_table(report: ConformReport) -> Table:
    return Table(
        "phases",
        ("phase", "runs", "messages", "seconds", "verdict"),
        tuple(
            (
                p.name,
                str(p.runs),
                f"{p.messages:,}",
                f"{p.seconds:.1f}",
                "FAIL" if p.failed else "ok",
            )
            for p in report.phases
        ),
        tuple(Status.FAIL if p.failed else Status.PASS for p in report.phases),
        numeric=frozenset({1, 2, 3}),
    )


def coverage_table(report: ConformReport) -> Table:
    """Runs that exercised each situation of docs/procedure.md; unexercised ones warned."""
    missing = set(report.coverage.missing(report.tested))
    rows, status = [], []
    for situation in Situation:
        runs = report.coverage.runs.get(situation, 0)
        rows.append((situation.says, str(runs)))
        status.append(Status.WARN if situation in missing else Status.INFO)
    return Table(
        "situation coverage (runs that exercised each situation of docs/procedure.md)",
        ("situation", "runs"),
        tuple(rows),
        tuple(status),
        numeric=frozenset({1}),
    )


def failure_section(
    failure: Failure,
    command: str,
    also_seen: tuple[str, ...] = (),
    number: tuple[int, int] | None = None,
) -> Section:
    """One failure (a finding's shortest counterexample): its rule, replay and timeline.

    ``also_seen``: the other phases that found the same bug; ``number``: (n, count) of
    the findings, for the title.
    """
    v = failure.violation
    kind = "docs/semantics.md section 7 property" if v.rule.is_property else "protocol rule"
    facts = [Fact("rule", f"{v.rule.value} ({kind})"), Fact("meaning", v.rule.meaning)]
    if failure.phase:
        facts.append(Fact("found in phase", failure.phase))
    if also_seen:
        facts.append(Fact("also seen in phases", "; ".join(also_seen)))
    if failure.seed is not None:
        facts.append(Fact("seed", f"{failure.seed} ({describe_seed(failure.seed)})"))
        facts.append(Fact("replay", replay_hint(failure, command), code=True))
    timelines = (failure_timeline(failure, command),) if failure.steps else ()
    title = v.rule.value + (f" in phase {failure.phase}" if failure.phase else "")
    if number is not None:
        title = f"finding {number[0]} of {number[1]}: {title}"
    return Section(
        title=title,
        status=Status.FAIL,
        summary=str(v),
        facts=tuple(facts),
        timelines=timelines,
        text=tuple(render_failure(failure, command, also_seen=also_seen).splitlines()),
    )


# --- the timeline -------------------------------------------------------------------------


@dataclass
class _Open:
    start: int
    label: str
    detail: list[str] = field(default_factory=list)


@dataclass
class _Spans:
    """Spans read from the transcript, worker by worker."""

    marks: dict[int, str]
    spans: list[Span] = field(default_factory=list)
    requests: dict[str, _Open] = field(default_factory=dict)
    calls: dict[tuple[str, str], _Open] = field(default_factory=dict)

    def read(self, line: TranscriptLine) -> None:
        if line.direction == "**":
            if line.text.startswith("crash:"):
                self._crash(line)
            return
        try:
            msg = json.loads(line.text)
        except ValueError:
            return
        if not isinstance(msg, dict):
            return
        kind = msg.get("type")
        worker = line.worker
        if line.direction == "->":
            if kind == "publish":
                self._close_request(worker, line.step, Mark.OPEN, "")
                self.requests[worker] = _Open(
                    line.step, f"publication attempt #{msg.get('id')}", [line.text]
                )
            elif kind == "ingest":
                self._close_request(worker, line.step, Mark.OPEN, "")
                self.requests[worker] = _Open(
                    line.step,
                    f"ingest pass #{msg.get('id')} of {msg.get('partition')}",
                    [line.text],
                )
            elif kind == "reply":
                key = (worker, str(msg.get("call_id")))
                call = self.calls.pop(key, None)
                if call is None:
                    return
                mode = self.marks.get(line.step, "ok")
                mark = {"lost": Mark.LOST, "applied_lost": Mark.LOST_APPLIED}.get(mode, Mark.NONE)
                self.spans.append(
                    Span(
                        worker,
                        call.start,
                        line.step,
                        call.label,
                        _detail([*call.detail, line.text]),
                        1,
                        mark,
                    )
                )
        elif line.direction == "<-":
            if kind == "call":
                key = (worker, str(msg.get("call_id")))
                self.calls[key] = _Open(line.step, str(msg.get("op", "call")), [line.text])
            elif kind in ("publish_ok", "ingest_ok"):
                ended = msg.get("outcome") if kind == "publish_ok" else "ingested"
                self._close_request(worker, line.step, Mark.NONE, f" \u2192 {ended}", line.text)

    def _close_request(
        self, worker: str, step: int, mark: Mark, suffix: str, text: str | None = None
    ) -> None:
        request = self.requests.pop(worker, None)
        if request is None:
            return
        lines = [*request.detail, *([text] if text else [])]
        end = None if mark is Mark.OPEN else step
        self.spans.append(
            Span(worker, request.start, end, request.label + suffix, _detail(lines), 0, mark)
        )

    def _crash(self, line: TranscriptLine) -> None:
        worker = line.worker
        for key in [k for k in self.calls if k[0] == worker]:
            call = self.calls.pop(key)
            self.spans.append(
                Span(
                    worker, call.start, line.step, call.label, _detail(call.detail), 1, Mark.CRASHED
                )
            )
        request = self.requests.pop(worker, None)
        if request is not None:
            self.spans.append(
                Span(
                    worker,
                    request.start,
                    line.step,
                    request.label + " (crashed)",
                    _detail(request.detail),
                    0,
                    Mark.CRASHED,
                )
            )

    def finish(self) -> list[Span]:
        for (worker, _), call in self.calls.items():
            self.spans.append(
                Span(worker, call.start, None, call.label, _detail(call.detail), 1, Mark.OPEN)
            )
        for worker, request in self.requests.items():
            self.spans.append(
                Span(
                    worker,
                    request.start,
                    None,
                    request.label,
                    _detail(request.detail),
                    0,
                    Mark.OPEN,
                )
            )
        self.calls.clear()
        self.requests.clear()
        return self.spans


def _detail(lines: list[str]) -> str:
    """The messages of a span, each cut to a readable length (the step shows them whole)."""
    return "\n".join(line if len(line) <= 300 else line[:297] + "..." for line in lines)


def _env_label(action: object) -> str:
    if isinstance(action, Advance):
        return f"certify {action.partition}"
    if isinstance(action, Certify):
        return f"certify {action.partition} {action.cut}"
    if isinstance(action, Finalize):
        return f"finalize {action.partition}"
    if isinstance(action, Reshard):
        return "reshard"
    if isinstance(action, Inject):
        return f"misconfigure {action.partition}: {action.kind}"
    if isinstance(action, Serve):
        return f"serve {action.partition}"
    return "environment"


def _lane_of(step: StepRecord) -> str:
    action = step.action
    if isinstance(action, Publish | Ingest | Answer | Crash):
        return action.worker
    return ENV


def failure_timeline(failure: Failure, command: str) -> Timeline:
    """The failure's shortest schedule as a timeline (see the module docstring)."""
    setup = failure.setup
    lanes: list[Lane] = []
    if setup is not None:
        lanes += [Lane(w, w, LaneKind.PUBLISHER) for w in setup.publishers]
        lanes += [Lane(w, w, LaneKind.READER) for w in setup.readers]
    known = {lane.key for lane in lanes}
    for step in failure.steps:  # workers a setup did not list (never expected; kept visible)
        lane = _lane_of(step)
        if lane != ENV and lane not in known:
            lanes.append(Lane(lane, lane, LaneKind.WORKER))
            known.add(lane)
    lanes.append(Lane(ENV, "environment", LaneKind.ENVIRONMENT))
    known.add(ENV)
    marks = {s.index: s.action.mode for s in failure.steps if isinstance(s.action, Answer)}
    reader = _Spans(marks)
    by_step: dict[int, list[str]] = {}
    for line in failure.transcript:
        if line.worker in known:
            reader.read(line)
        by_step.setdefault(line.step, []).append(str(line))
    spans = reader.finish()
    for step in failure.steps:
        if _lane_of(step) == ENV:
            spans.append(Span(ENV, step.index, step.index, _env_label(step.action), step.says, 1))
        elif isinstance(step.action, Crash):
            spans.append(
                Span(
                    step.action.worker, step.index, step.index, "crash", step.says, 1, Mark.CRASHED
                )
            )
    v = failure.violation
    at = v.step if v.step is not None else (failure.steps[-1].index if failure.steps else 0)
    breach = Breach(
        at, v.rule.value, v.rule.meaning, v.message, v.worker if v.worker in known else None
    )
    spans = [_mark_breach(s, breach) for s in spans]
    steps = tuple(
        Step(
            s.index,
            _lane_of(s),
            ("(drain) " if s.drain else "") + s.says,
            state_tables(s.state) if s.state is not None else (),
            tuple(by_step.get(s.index, ())),
        )
        for s in failure.steps
    )
    facts = []
    if failure.seed is not None:
        facts.append(Fact("replay", replay_hint(failure, command), code=True))
    facts.append(
        Fact(
            "shortest schedule",
            f"{len(failure.actions)} step(s) (from {failure.original_steps}; "
            f"{failure.shrink_runs} shrink run(s)), then the harness answered the remaining "
            "calls normally",
        )
    )
    return Timeline(
        title=f"{v.rule.value}: the shortest schedule found",
        lanes=tuple(lanes),
        spans=tuple(spans),
        steps=steps,
        breach=breach,
        facts=tuple(facts),
    )


def _mark_breach(span: Span, breach: Breach) -> Span:
    """The call (or request) of the breaking worker that was under way at the breaking step."""
    if span.lane != breach.lane or span.mark is not Mark.NONE or span.depth != 1:
        return span
    end = span.end if span.end is not None else breach.step
    if span.start <= breach.step <= end:
        return Span(
            span.lane, span.start, span.end, span.label, span.detail, span.depth, Mark.BREACH
        )
    return span


def state_tables(state: Snapshot) -> tuple[Table, ...]:
    """The publication record, every stored checkpoint, and what the source has not finalized."""
    record = state.record
    tables = [
        Table(
            "publication record",
            ("epoch", "cut", "revision", "op_id", "written by"),
            (
                (
                    str(record.epoch),
                    str(record.cut),
                    str(record.revision),
                    "none" if record.op_id is None else record.op_id,
                    state.writer or "nobody",
                ),
            ),
        )
    ]
    rows: list[tuple[str, ...]] = []
    status: list[Status] = []
    stored_now = set()
    for entry in state.stored:
        cp = entry.checkpoint
        if entry.epoch == state.epoch:
            stored_now.add(cp.partition)
        notes = []
        if entry.injected:
            notes.append("misconfigured (injected)")
        if cp.epoch != entry.epoch:
            notes.append(f"stamped epoch {cp.epoch}")
        rows.append(
            (
                cp.partition,
                str(entry.epoch),
                str(cp.cut),
                str(cp.generation),
                cp.scope,
                cp.finality.value,
                "none" if cp.token is None else cp.token,
                "; ".join(notes),
            )
        )
        status.append(Status.WARN if notes else Status.INFO)
    for partition in sorted(state.checkpoints):
        if partition not in stored_now:
            rows.append((partition, str(state.epoch), "none stored", "", "", "", "", ""))
            status.append(Status.SKIP)
    tables.append(
        Table(
            f"checkpoints (membership epoch {state.epoch} is current)",
            ("partition", "epoch", "cut", "generation", "scope", "finality", "token", "note"),
            tuple(rows),
            tuple(status),
        )
    )
    if state.unfinal:
        tables.append(
            Table(
                "the source: events not final yet",
                ("partition", "not final"),
                tuple((p, ", ".join(ids) or "none") for p, ids in sorted(state.unfinal.items())),
            )
        )
    return tuple(tables)
