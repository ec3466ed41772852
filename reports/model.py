"""The neutral shape of a report: what a page or a summary shows, as plain data.

Nothing here knows where the figures came from (the conformance harness, the
model's explorer, the scenario library, the gate, an audit): each producer
turns its own results into a :class:`Report`, and :mod:`fencepost.reports.page`
and :mod:`fencepost.reports.markdown` render any report the same way. Every
string is plain text, untrusted (a SUT wrote some of it): the renderers escape it.

A counterexample is a :class:`Timeline` drawn in the manner of Porcupine's
histories: one :class:`Lane` per worker, reader and the environment, each call
a :class:`Span` from its request to its reply, and per :class:`Step` the state
(:class:`Table` values) a reader can inspect. The step that breaks a property
carries a :class:`Breach`.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class Status(Enum):
    """How a row, a section or the whole report came out (drives colour and wording)."""

    PASS = "pass"
    FAIL = "fail"
    SKIP = "skip"
    WARN = "warn"
    ERROR = "error"
    INFO = "info"


class LaneKind(Enum):
    """Who a lane belongs to."""

    PUBLISHER = "publisher"
    READER = "reader"
    WORKER = "worker"
    ENVIRONMENT = "environment"
    #: An incremental-sync tool (the late-commit world).
    TOOL = "tool"
    #: The writers of one partition of a source (the late-commit world).
    WRITER = "writer"


class Mark(Enum):
    """What is special about a span."""

    NONE = "none"
    #: The reply was lost and the write was not applied.
    LOST = "lost"
    #: The write was applied, then its reply was lost.
    LOST_APPLIED = "lost-applied"
    #: The process died while the call was pending: never answered.
    CRASHED = "crashed"
    #: Still pending when the run stopped.
    OPEN = "open"
    #: The span during which the property broke.
    BREACH = "breach"


@dataclass(frozen=True, slots=True)
class Fact:
    """One labelled value (``seed: -2``, ``replay: fencepost conform --replay -2 -- ...``).

    ``code``: shown as a command or literal (monospace), copied as is.
    """

    label: str
    value: str
    code: bool = False


@dataclass(frozen=True, slots=True)
class Table:
    """A titled table of text cells; ``status`` (empty, or one per row) colours rows.

    ``numeric`` lists the columns to right-align.
    """

    title: str
    columns: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    status: tuple[Status, ...] = ()
    numeric: frozenset[int] = frozenset()

    def __post_init__(self) -> None:
        for row in self.rows:
            if len(row) != len(self.columns):
                raise ValueError(
                    f"table {self.title!r}: a row of {len(row)} cells, not {len(self.columns)}"
                )
        if self.status and len(self.status) != len(self.rows):
            raise ValueError(f"table {self.title!r}: one status per row or none")


@dataclass(frozen=True, slots=True)
class Lane:
    """One row of a timeline: ``key`` is what spans and steps refer to."""

    key: str
    label: str
    kind: LaneKind


@dataclass(frozen=True, slots=True)
class Span:
    """A box on ``lane`` from step ``start`` to step ``end`` (inclusive; None: never ended).

    ``depth`` 0 is a request (a publication attempt, an ingest pass), 1 a call
    inside it; ``detail`` is the hover text (the messages exchanged).
    """

    lane: str
    start: int
    end: int | None
    label: str
    detail: str = ""
    depth: int = 1
    mark: Mark = Mark.NONE


@dataclass(frozen=True, slots=True)
class Step:
    """One step of a counterexample: who acted, what happened, the state after it.

    ``state``: what a reader inspects at this step (the publication record, every
    checkpoint, ...); ``messages``: the wire lines of the step, if any.
    """

    index: int
    lane: str | None
    text: str
    state: tuple[Table, ...] = ()
    messages: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Breach:
    """The property (or rule) broken at ``step``: its name, what it means, what happened."""

    step: int
    name: str
    meaning: str
    message: str
    lane: str | None = None


@dataclass(frozen=True, slots=True)
class Timeline:
    """A counterexample drawn as lanes over steps (see the module docstring)."""

    title: str
    lanes: tuple[Lane, ...]
    spans: tuple[Span, ...]
    steps: tuple[Step, ...]
    breach: Breach | None = None
    facts: tuple[Fact, ...] = ()
    notes: tuple[str, ...] = ()
    #: What an outer box of a worker's lane is, in the legend (the world's word for a request).
    request_legend: str = "a request: a publication attempt or an ingest pass"

    def __post_init__(self) -> None:
        keys = {lane.key for lane in self.lanes}
        for span in self.spans:
            if span.lane not in keys:
                raise ValueError(f"timeline {self.title!r}: span on unknown lane {span.lane!r}")
            if span.end is not None and span.end < span.start:
                raise ValueError(
                    f"timeline {self.title!r}: span {span.label!r} ends before it starts"
                )
        for step in self.steps:
            if step.lane is not None and step.lane not in keys:
                raise ValueError(f"timeline {self.title!r}: step on unknown lane {step.lane!r}")

    @property
    def last(self) -> int:
        """The highest step index drawn (0 for an empty timeline)."""
        ends = [s.index for s in self.steps]
        ends += [s.end if s.end is not None else s.start for s in self.spans]
        return max(ends, default=0)


@dataclass(frozen=True, slots=True)
class Section:
    """A part of a report: a verdict, facts, tables, counterexamples, and verbatim text.

    ``text``: preformatted lines shown as is (a failure rendered in words, a
    transcript), folded away in the page.
    """

    title: str
    status: Status
    summary: str = ""
    facts: tuple[Fact, ...] = ()
    tables: tuple[Table, ...] = ()
    timelines: tuple[Timeline, ...] = ()
    text: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Report:
    """A whole report: one verdict, facts about the run, and its sections.

    Renderers show it in reading order: the verdict and facts, an index of the failing
    sections (each linking to its anchor), those sections with their timelines, then
    the report's tables (phases, coverage), then the other sections.
    """

    title: str
    status: Status
    verdict: str
    facts: tuple[Fact, ...] = ()
    sections: tuple[Section, ...] = ()
    tables: tuple[Table, ...] = ()

    @property
    def timelines(self) -> tuple[Timeline, ...]:
        return tuple(t for s in self.sections for t in s.timelines)

    @property
    def failing(self) -> tuple[Section, ...]:
        """The sections that failed (or broke), in order: what a reader must see first."""
        return tuple(s for s in self.sections if s.status in _FAILING)

    @property
    def others(self) -> tuple[Section, ...]:
        """The sections that did not fail, in order: shown after the report's tables."""
        return tuple(s for s in self.sections if s.status not in _FAILING)


#: The statuses of a section that is a failure (shown first, listed in the index).
_FAILING = frozenset({Status.FAIL, Status.ERROR})
