"""Reading a scenario's ``[[steps]]``: each step's fields, checked against what is static.

:class:`StepReader` reads the steps in order while simulating what a file alone
decides: the current epoch (only reshard steps change it), which worker is
paused, which role each worker plays. So a step naming a partition that is not a
member then, resuming a worker that is not paused, or leaving one paused at the
end is an error with file:line before anything runs.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING

from fencepost.inputs.toml import Table, hint
from fencepost.inputs.toml import shown as _shown
from fencepost.judge.values import NOTHING, Cut, Order
from fencepost.scenarios.spec import (
    _MAX_COUNT,
    _MAX_EPOCH,
    _MAX_NTH,
    _MAX_STEPS,
    MISCONFIGURATIONS,
    MODES,
    OUTCOMES,
    PUBLISHER_OPS,
    READER_OPS,
    REASONS,
    WRITE_OPS,
    AttemptExpect,
    Certify,
    Crash,
    Expectations,
    Finalize,
    Ingest,
    Misconfigure,
    Pause,
    Publish,
    RecordExpect,
    Reshard,
    Resume,
    Scenario,
    Serve,
    Step,
    parse_cut,
)

if TYPE_CHECKING:
    from fencepost.scenarios.format import (
        _Loader,
    )

_STEP_COMMON = ("do", "expect", "record", "checkpoints", "generations")
_STEP_FIELDS: dict[str, tuple[str, ...]] = {
    "certify": ("partition", "cut"),
    "misconfigure": ("partition", "kind", "cut"),
    "finalize": ("events",),
    "reshard": ("epoch",),
    "serve": ("partition", "token", "events", "next", "claim", "final", "lost"),
    "publish": ("publisher", "faults", "pause_before", "pause_nth"),
    "ingest": ("reader", "partition", "faults", "pause_before", "pause_nth", "max_pages"),
    "resume": ("worker", "pause_before", "pause_nth"),
    "crash": ("worker",),
}


class StepReader:
    """Reads ``[[steps]]`` while simulating what is static: the epoch, who is paused."""

    def __init__(self, loader: _Loader, top: Table, scenario: Scenario) -> None:
        self.loader = loader
        self.top = top
        self.sc = scenario
        self.epoch_index = 0
        self.paused: dict[str, tuple[str, int]] = {}  # worker -> (kind, step index)
        self.roles: dict[str, str] = {}
        self.ingesting: dict[str, tuple[str, int]] = {}  # reader -> (partition, epoch) of its pass

    @property
    def epoch(self) -> int:
        return self.sc.epochs[self.epoch_index].epoch

    def read(self) -> tuple[tuple[Step, ...], tuple[str, ...], tuple[str, ...]]:
        nodes = self.top.tables("steps", None)  # each step's keys are checked for its kind
        if not nodes:
            raise self.top.error(None, "a scenario needs [[steps]]")
        if len(nodes) > _MAX_STEPS:
            raise self.top.error("steps", f"at most {_MAX_STEPS} steps")
        steps = []
        for i, node in enumerate(nodes, start=1):
            steps.append(self._step(i, node))
        for worker, (kind, index) in self.paused.items():
            raise self.loader.error(
                ("steps", index - 1),
                f"{kind} {worker!r} is left paused at the end; add a resume or crash step",
            )
        publishers = tuple(w for w, r in self.roles.items() if r == "publisher")
        readers = tuple(w for w, r in self.roles.items() if r == "reader")
        return tuple(steps), publishers, readers

    def _step(self, index: int, node: Table) -> Step:
        do = node.text("do")
        if do not in _STEP_FIELDS:
            raise node.error(
                "do",
                f"unknown step {do!r} (steps: {', '.join(_STEP_FIELDS)}){hint(do, _STEP_FIELDS)}",
            )
        own = _STEP_FIELDS[do]
        for key in node.data:
            if key not in _STEP_COMMON and key not in own:
                raise node.error(
                    key,
                    f"a {do!r} step has no field {key!r} (its fields: "
                    f"{', '.join((*own, *_STEP_COMMON[1:]))}){hint(key, (*own, *_STEP_COMMON))}",
                )
        epoch_before = self.epoch
        action = getattr(self, f"_{do}")(node)
        ends: str | None = None  # "publisher"/"reader" when this step ends a request
        if isinstance(action, Publish | Ingest | Resume):
            worker = (
                action.publisher
                if isinstance(action, Publish)
                else action.reader
                if isinstance(action, Ingest)
                else action.worker
            )
            role = self.roles[worker]
            if action.pause is not None:
                self.paused[worker] = (role, index)
            else:
                ends = role
        expect = self._expect(node, ends)
        return Step(index, self.loader.line(node.path), action, expect, epoch_before)

    # -- helpers -------------------------------------------------------------------------

    def _member(self, node: Table, key: str = "partition") -> str:
        partition = node.text(key)
        members = self.sc.epoch_def(self.epoch).members
        if partition not in members:
            raise node.error(
                key,
                f"{partition!r} is not a member of epoch {self.epoch} (members: "
                f"{', '.join(sorted(members)) or 'none'})",
            )
        return partition

    def _cut(self, node: Table, key: str, order: Order) -> Cut:
        try:
            return parse_cut(node.raw(key), order)
        except ValueError as exc:
            raise node.error(key, str(exc)) from None

    def _role(self, node: Table, key: str, role: str) -> str:
        worker = node.text(key)
        known = self.roles.setdefault(worker, role)
        if known != role:
            raise node.error(
                key, f"{worker!r} is a {known}; a worker is a publisher or a reader, not both"
            )
        return worker

    def _idle(self, node: Table, key: str, worker: str) -> None:
        if worker in self.paused:
            kind, at = self.paused[worker]
            raise node.error(
                key,
                f"{kind} {worker!r} is paused since step {at}; resume or crash it first",
            )

    def _faults(self, node: Table, ops: tuple[str, ...]) -> Mapping[str, tuple[str, ...]]:
        out: dict[str, tuple[str, ...]] = {}
        for op, modes in node.mapping("faults").items():
            if op not in ops:
                raise node.error(
                    "faults", f"{op!r} is not a call of this worker (calls: {', '.join(ops)})"
                )
            if not isinstance(modes, list) or not modes:
                raise node.error(
                    "faults",
                    f"faults.{op}: an array of modes, one per successive {op} call "
                    f"({', '.join(MODES)}), is required",
                )
            seq = []
            for mode in modes:
                if mode not in MODES:
                    raise node.error(
                        "faults", f"faults.{op}: {_shown(mode)} is not one of {', '.join(MODES)}"
                    )
                if mode == "applied_lost" and op not in WRITE_OPS:
                    raise node.error(
                        "faults",
                        f"faults.{op}: a read is never applied; use 'lost' for a lost read",
                    )
                seq.append(mode)
            out[op] = tuple(seq)
        return MappingProxyType(out)

    def _pause(self, node: Table, ops: tuple[str, ...]) -> Pause | None:
        if not node.has("pause_before"):
            if node.has("pause_nth"):
                raise node.error("pause_nth", "pause_nth needs pause_before")
            return None
        op = node.text("pause_before")
        if op not in ops:
            raise node.error(
                "pause_before", f"{op!r} is not a call of this worker (calls: {', '.join(ops)})"
            )
        return Pause(op, node.integer("pause_nth", 1, _MAX_NTH, 1))

    # -- step kinds ----------------------------------------------------------------------

    def _certify(self, node: Table) -> Certify:
        partition = self._member(node)
        return Certify(partition, self._cut(node, "cut", self.sc.order_of(self.epoch, partition)))

    def _misconfigure(self, node: Table) -> Misconfigure:
        partition = self._member(node)
        kind = node.text("kind")
        if kind not in MISCONFIGURATIONS:
            raise node.error("kind", f"one of {', '.join(MISCONFIGURATIONS)}, got {kind!r}")
        if kind == "wrong_epoch" and self.epoch_index == 0:
            raise node.error("kind", "a checkpoint of the previous epoch needs a previous epoch")
        cut = self._cut(node, "cut", self.sc.order_of(self.epoch, partition))
        if cut.is_nothing:
            raise node.error("cut", "a misconfigured checkpoint claims some coverage; give a cut")
        return Misconfigure(partition, kind, cut)

    def _finalize(self, node: Table) -> Finalize:
        ids = node.texts("events", required=True)
        for event_id in ids:
            if self.sc.event(self.epoch, event_id) is None:
                raise node.error(
                    "events", f"{event_id!r} is not an event of any member in epoch {self.epoch}"
                )
        return Finalize(ids)

    def _reshard(self, node: Table) -> Reshard:
        epoch = node.integer("epoch", 1, _MAX_EPOCH)
        if self.epoch_index + 1 >= len(self.sc.epochs):
            raise node.error("epoch", f"no epoch is declared after epoch {self.epoch}")
        nxt = self.sc.epochs[self.epoch_index + 1].epoch
        if epoch != nxt:
            raise node.error("epoch", f"the next declared epoch is {nxt}, not {epoch}")
        self.epoch_index += 1
        return Reshard(epoch)

    def _serve(self, node: Table) -> Serve:
        partition = self._member(node)
        known = {ev.id for ev in self.sc.events(self.epoch, partition)}
        events = node.texts("events")
        for event_id in events:
            if event_id not in known:
                raise node.error(
                    "events", f"{event_id!r} is not an event of {partition!r} in epoch {self.epoch}"
                )
        claim = None
        if node.has("claim"):
            claim = self._cut(node, "claim", self.sc.order_of(self.epoch, partition))
            if claim.is_nothing:
                raise node.error("claim", "leave the claim out for a page without one")
        elif node.has("final"):
            raise node.error("final", "final says whether the page's claim is final; give a claim")
        return Serve(
            partition,
            node.opt_text("token"),
            events,
            node.opt_text("next"),
            claim,
            node.boolean("final", True),
            node.integer("lost", 0, _MAX_NTH, 0),
        )

    def _publish(self, node: Table) -> Publish:
        worker = self._role(node, "publisher", "publisher")
        self._idle(node, "publisher", worker)
        return Publish(worker, self._faults(node, PUBLISHER_OPS), self._pause(node, PUBLISHER_OPS))

    def _ingest(self, node: Table) -> Ingest:
        worker = self._role(node, "reader", "reader")
        self._idle(node, "reader", worker)
        partition = self._member(node)
        self.ingesting[worker] = (partition, self.epoch)
        return Ingest(
            worker,
            partition,
            self._faults(node, READER_OPS),
            self._pause(node, READER_OPS),
            node.opt_integer("max_pages", 1, _MAX_COUNT),
        )

    def _resume(self, node: Table) -> Resume:
        worker = node.text("worker")
        if worker not in self.paused:
            raise node.error(
                "worker", f"{worker!r} is not paused; only a paused request can resume"
            )
        role = self.roles[worker]
        ops = PUBLISHER_OPS if role == "publisher" else READER_OPS
        del self.paused[worker]
        return Resume(worker, self._pause(node, ops))

    def _crash(self, node: Table) -> Crash:
        worker = node.text("worker")
        if worker not in self.paused:
            raise node.error(
                "worker", f"{worker!r} is not paused; a crash happens at a pause point"
            )
        del self.paused[worker]
        return Crash(worker)

    # -- expectations --------------------------------------------------------------------

    def _record_order(self, node: Table, key: str, epoch: int | None) -> Order:
        """The order record cuts of ``epoch`` (default: the current one) are written in."""
        e = self.epoch if epoch is None else epoch
        try:
            members = self.sc.epoch_def(e).members
        except KeyError:
            raise node.error(key, f"epoch {e} is not declared") from None
        kinds = {self.sc.orders[n].kind for n in members.values()}
        if len(kinds) > 1:
            raise node.error(
                key,
                f"the members of epoch {e} have orders of different kinds; no record cut "
                "other than 'nothing' can be written for them",
            )
        if members:
            return self.sc.orders[next(iter(members.values()))]
        return next(iter(self.sc.orders.values()))

    def _record_cut(self, node: Table, key: str, epoch: int | None) -> Cut:
        if node.raw(key) == "nothing":
            return NOTHING
        return self._cut(node, key, self._record_order(node, key, epoch))

    def _expect(self, node: Table, ends: str | None) -> Expectations:
        attempt: AttemptExpect | None = None
        ingest: Cut | None = None
        exp = node.opt_table("expect", ("outcome", "reason", "epoch", "cut"))
        if exp is not None:
            if ends is None:
                raise node.error(
                    "expect",
                    "expect describes how a request ends, and no request ends at this step "
                    "(a paused request ends at the step that resumes it)",
                )
            if ends == "publisher":
                outcome = exp.opt_text("outcome")
                if outcome is not None and outcome not in OUTCOMES:
                    raise exp.error("outcome", f"one of {', '.join(OUTCOMES)}, got {outcome!r}")
                reason = exp.opt_text("reason")
                if reason is not None:
                    if reason not in REASONS:
                        raise exp.error("reason", f"one of {', '.join(REASONS)}, got {reason!r}")
                    if outcome not in (None, "withheld"):
                        raise exp.error("reason", "only a withheld attempt has a reason")
                epoch = exp.opt_integer("epoch", 1, _MAX_EPOCH)
                cut = None
                if exp.has("cut"):
                    cut = self._record_cut(exp, "cut", epoch)
                attempt = AttemptExpect(outcome, reason, epoch, cut)
            else:
                for key in ("outcome", "reason", "epoch"):
                    if exp.has(key):
                        raise exp.error(
                            key, "an ingest pass ends with the cut it certified; expect cut only"
                        )
                if not exp.has("cut"):
                    raise exp.error(None, "expect the cut the ingest pass ends with")
                ingest = self._cut(exp, "cut", self._pass_order(node))
        record: RecordExpect | None = None
        rec = node.opt_table("record", ("epoch", "cut", "revision", "writer"))
        if rec is not None:
            epoch = rec.opt_integer("epoch", 1, _MAX_EPOCH)
            cut = self._record_cut(rec, "cut", epoch) if rec.has("cut") else None
            writer = rec.opt_text("writer")
            record = RecordExpect(epoch, cut, rec.opt_integer("revision", 0, _MAX_COUNT), writer)
        checkpoints: dict[str, Cut | None] = {}
        members = self.sc.epoch_def(self.epoch).members
        for partition, text in node.mapping("checkpoints").items():
            if partition not in members:
                raise node.error(
                    "checkpoints", f"{partition!r} is not a member of epoch {self.epoch}"
                )
            if text == "none":
                checkpoints[partition] = None
                continue
            try:
                checkpoints[partition] = parse_cut(text, self.sc.order_of(self.epoch, partition))
            except ValueError as exc:
                raise node.error(
                    "checkpoints", f"{partition}: {exc} (or 'none': no checkpoint)"
                ) from None
        generations: dict[str, int] = {}
        for partition, value in node.mapping("generations").items():
            if partition not in members:
                raise node.error(
                    "generations", f"{partition!r} is not a member of epoch {self.epoch}"
                )
            generations[partition] = self.loader.integer(
                ("steps", node.path[1], "generations", partition), value, 1, _MAX_COUNT
            )
        return Expectations(
            attempt, ingest, record, MappingProxyType(checkpoints), MappingProxyType(generations)
        )

    def _pass_order(self, node: Table) -> Order:
        """The order of the ingest pass ending at this step (its own or its resumed one)."""
        worker = node.text("reader") if node.has("reader") else node.text("worker")
        partition, epoch = self.ingesting[worker]
        return self.sc.order_of(epoch, partition)
