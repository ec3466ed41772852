"""What a run produced, as plain data: the transcript, the steps, the result, the state.

These are the values :class:`fencepost.harness.runner.Run` and
:func:`fencepost.harness.runner.run_schedule` hand back, and what reports render.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from fencepost.harness.coverage import Situation
from fencepost.harness.rules import Violation, first
from fencepost.harness.schedule import (
    Action,
)
from fencepost.harness.world import WorldSetup
from fencepost.inputs.jsonlines import (
    JSONObject,
)
from fencepost.judge.values import Checkpoint, Cut, Record


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
    #: The stores and the source right after the step (None when the run kept no
    #: transcript): what a report shows when a reader inspects this step.
    state: Snapshot | None = None


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
    #: The situations of docs/procedure.md the run exercised (harness/coverage.py).
    situations: frozenset[Situation] = frozenset()
    #: The wrong answers this run would have caught (harness/power.py).
    caught: frozenset[str] = frozenset()
    #: The value classes this run's world drew from (harness/classes.py).
    classes: frozenset[str] = frozenset()

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
    #: Every checkpoint in the store, of every epoch, in (epoch, partition) order.
    stored: tuple[StoredCheckpoint, ...] = ()


@dataclass(frozen=True, slots=True)
class StoredCheckpoint:
    """A checkpoint in the harness's store under membership epoch ``epoch`` (its own
    ``epoch`` field may say otherwise when misconfigured); ``injected``: put there as a
    misconfiguration (an ``inject`` step), not written by a SUT or an honest reader."""

    epoch: int
    checkpoint: Checkpoint
    injected: bool = False
