"""What a run of the late-commit world produced, as plain data.

The pages the source served (:class:`QueryRecord`), the commits the tool sent
and what became of them (:class:`CommitRecord`), each sync (:class:`SyncRecord`),
the steps in domain words with the world after each (:class:`LateStep`,
:class:`LateSnapshot`), and the whole run with its verdict (:class:`LateResult`).
:mod:`fencepost.harness.late_runner` produces them; the stories, the search's
power and the reports read them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from fencepost.harness.late_world import LateAction, LateSetup, Position
from fencepost.harness.protocol import QueryBound
from fencepost.harness.results import TranscriptLine
from fencepost.harness.rules import Rule, Violation, first
from fencepost.judge.rows import ROW_PRIORITY, Claim, Delivery, Overclaim

#: The worker the tool runs as.
WORKER = "t1"
#: The most syncs run to completion after the world quiesced.
COMPLETION_SYNCS = 4
#: The row properties as rules, in the judge's report order.
ROW_RULES: tuple[Rule, ...] = tuple(Rule(p.value) for p in ROW_PRIORITY)


@dataclass(frozen=True, slots=True)
class QueryRecord:
    """One page the source served: which sync asked, when, which range, what it held.

    ``shows`` is the clock whose visibility the page showed: ``time`` for live reads and
    first pages, the query's first page for later pages of a snapshot source.
    """

    sync: int
    step: int
    time: int
    partition: str
    lower: QueryBound | None
    upper: QueryBound | None
    after: Position | None
    query: int
    rows: tuple[tuple[str, int], ...]
    more: bool
    horizon: int | None
    shows: int


@dataclass(frozen=True, slots=True)
class CommitRecord:
    """One commit the tool sent and what became of it.

    ``answer``: ``ok``, ``lost`` (not applied), ``applied_lost`` or ``crash``.
    """

    sync: int
    step: int
    time: int
    records: tuple[str, ...]
    mode: str
    sets_state: bool
    state: str
    answer: str

    @property
    def applied(self) -> bool:
        return self.answer in ("ok", "applied_lost")


@dataclass
class SyncRecord:
    """One sync: when it started, how it ended, what its state claimed, and what it copied."""

    number: int
    request_id: int
    now: int
    start_step: int
    worker: str
    completion: bool = False
    end_step: int | None = None
    end_time: int | None = None
    outcome: str | None = None
    crashed: bool = False
    claims: tuple[Claim, ...] | None = None
    overclaims: tuple[Overclaim, ...] = ()
    #: Rows the destination holds at the end that it did not hold at the start.
    new_rows: int = 0
    calls: int = 0
    per_op: dict[str, int] = field(default_factory=dict)
    held_at_start: frozenset[str] = frozenset()
    #: Row ids the source returned to this sync.
    read: set[str] = field(default_factory=set)


@dataclass(frozen=True, slots=True)
class LateSnapshot:
    """The world right after a step: the clock, the source, the destination, the state."""

    clock: int
    visible: tuple[tuple[str, tuple[str, ...]], ...]
    pending: tuple[str, ...]
    copies: tuple[tuple[str, int], ...]
    state: str


@dataclass(frozen=True, slots=True)
class LateStep:
    """One executed step and what happened, in domain words.

    ``phase``: ``schedule`` (a step of the schedule), ``drain`` (the harness
    answering a sync's remaining calls), ``quiesce`` or ``completion``.
    """

    index: int
    action: LateAction | None
    says: str
    phase: str = "schedule"
    state: LateSnapshot | None = None


@dataclass(frozen=True)
class LateResult:
    """Everything one run produced; ``ok`` when no rule was broken."""

    setup: LateSetup
    violations: tuple[Violation, ...]
    steps: tuple[LateStep, ...]
    transcript: tuple[TranscriptLine, ...]
    messages: int
    syncs: tuple[SyncRecord, ...]
    queries: tuple[QueryRecord, ...]
    commits: tuple[CommitRecord, ...]
    #: The verdict's counts (None when a protocol rule stopped the run first).
    delivery: Delivery | None
    exactly_once: bool
    stderr: dict[str, str] = field(default_factory=dict)
    sut_name: str = ""
    crashes: int = 0

    @property
    def ok(self) -> bool:
        return not self.violations

    @property
    def first(self) -> Violation | None:
        """The violation to report: a lost row before an overclaim before a duplicate, then
        the protocol rules (earliest step, most serious rule)."""
        rows = [v for v in self.violations if v.rule.is_row_property]
        if rows:
            rank = {rule: i for i, rule in enumerate(ROW_RULES)}
            return min(rows, key=lambda v: rank[v.rule])
        return first(self.violations)

    @property
    def executed(self) -> tuple[LateAction, ...]:
        """The schedule's steps that ran (drain, quiescence and completion excluded)."""
        return tuple(s.action for s in self.steps if s.phase == "schedule" and s.action)

    @property
    def overclaims(self) -> tuple[tuple[SyncRecord, Overclaim], ...]:
        return tuple((s, o) for s in self.syncs for o in s.overclaims)
