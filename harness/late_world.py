"""The world of late commits: a table with several writers, its clock, and a destination.

docs/conformance-protocol.md ("Level sync") specifies the source an
incremental-sync tool reads; this module is that source as ground truth and
mutable state, and the schedule steps that move it.

**Ground truth** (:class:`LateSetup`, plain data, replayable from a file): every
row that will ever exist, each with its partition, its cursor value ``at``
and its commit time on the source's clock, with ``at <= commit <= at + D``
for the declared bound ``D`` (``max_commit_delay``); every partition with the
time it appears. A setup that breaks the bound cannot be built
(:class:`~fencepost.harness.world.SetupError`), so no world the harness runs,
generates, inserts into or shrinks ever breaks it.

**The source** (:class:`LateWorld`): a row is visible when the clock has passed
its commit time and its partition has appeared. Visibility is a function of
the clock and nothing else, so the only thing a schedule moves is the clock
(:class:`Tick`, :class:`TickTo`): once a row at ``v`` is visible, every row of
its partition below ``v - D`` is visible too, and no row is visible before it
commits. No row's cursor value is below the setup's ``origin`` (declared as
``earliest``). Pages come in ``(at, id)`` order, at most ``page_size`` rows
(the world's choice, 1 to 3, so commits land between pages); a page's
``next`` is an opaque token bound to its query (partition and bounds), the
position it continues after and the query's snapshot time. With ``reads``
``live`` (a paginated API) each page shows what is visible when it is asked
for; with ``snapshot`` (one SQL statement) every page of a query shows what
was visible at its first page. With ``horizon`` every page carries ``before
h``: every row of the partition below ``h`` that will ever exist is visible
at the time the page shows (``h`` is the oldest cursor value still in
flight then, or that time).

**The destination**: the commits it applied, in order (row ids and mode),
and the tool's state (any JSON value). A commit applies its records and its
state together or not at all. Counting copies is the judge's job
(:mod:`fencepost.judge.rows`), from this log.

Cost: a query is O(rows of the partition log n); a tick O(events).
"""

from __future__ import annotations

import copy
import datetime
import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from fencepost.harness.protocol import (
    COMMIT_MODES,
    READS,
    SYNC_OPS,
    QueryBound,
    source_declaration,
)
from fencepost.harness.world import SetupError
from fencepost.harness.worlds import CURSORS
from fencepost.inputs.jsonlines import JSONObject
from fencepost.judge.rows import AppliedCommit, TruthRow

#: The largest page the world serves (a setup may ask for any size from 1 to this).
MAX_PAGE_SIZE = 10
#: The most rows and partitions a setup may hold (regression files are untrusted).
MAX_ROWS = 400
MAX_PARTITIONS = 16
#: The time origin of timestamp worlds: 2024-01-01T12:00:00Z in milliseconds.
TIMESTAMP_ORIGIN = 1_704_110_400_000
#: The default partition of a source that is not partitioned.
MAIN = "main"


@dataclass(frozen=True, slots=True)
class RowSpec:
    """A row of the ground truth: it becomes visible at ``commit`` (and once its partition is)."""

    id: str
    partition: str
    at: int
    commit: int


@dataclass(frozen=True, slots=True)
class PartitionSpec:
    """A partition and the time it appears (listed, its rows queryable)."""

    name: str
    appears: int


def _int(value: object, where: str) -> int:
    if type(value) is not int:
        raise SetupError(f"{where}: an integer is required, got {value!r}")
    return value


def _str(value: object, where: str) -> str:
    if not isinstance(value, str) or not value:
        raise SetupError(f"{where}: a non-empty string is required, got {value!r}")
    return value


def _bool(value: object, where: str) -> bool:
    if type(value) is not bool:
        raise SetupError(f"{where}: true or false is required, got {value!r}")
    return value


def _keys(data: object, where: str, keys: Sequence[str]) -> Mapping[str, object]:
    if not isinstance(data, dict):
        raise SetupError(f"{where}: an object is required")
    unknown = set(data) - set(keys)
    missing = set(keys) - set(data)
    if unknown or missing:
        raise SetupError(
            f"{where}: unknown field(s) {sorted(unknown)}, missing field(s) {sorted(missing)}; "
            f"it has {', '.join(keys)}"
        )
    return data


@dataclass(frozen=True)
class LateSetup:
    """The ground truth of one late-commit world (see the module docstring).

    Values are in the cursor's wire units (milliseconds for ``timestamp``).
    ``origin`` is the clock when the run starts; ``page_size`` the rows per page.
    """

    cursor_type: str
    max_commit_delay: int
    horizon: bool
    partitioned: bool
    page_size: int
    partitions: tuple[PartitionSpec, ...]
    rows: tuple[RowSpec, ...]
    origin: int = TIMESTAMP_ORIGIN
    stream: str = "orders"
    cursor: str = "updated_at"
    #: How the pages of one query are served: ``live`` or ``snapshot`` (:data:`READS`).
    reads: str = "live"

    def __post_init__(self) -> None:
        if self.reads not in READS:
            raise SetupError(f"reads: one of {', '.join(READS)}, got {self.reads!r}")
        if self.cursor_type not in CURSORS:
            raise SetupError(
                f"cursor_type: {self.cursor_type!r}; one of {', '.join(sorted(CURSORS))}"
            )
        if self.max_commit_delay < 0:
            raise SetupError(f"max_commit_delay: at least 0, got {self.max_commit_delay}")
        if not 1 <= self.page_size <= MAX_PAGE_SIZE:
            raise SetupError(f"page_size: from 1 to {MAX_PAGE_SIZE}, got {self.page_size}")
        names = [p.name for p in self.partitions]
        if not names or len(set(names)) != len(names) or len(names) > MAX_PARTITIONS:
            raise SetupError(
                f"partitions: 1 to {MAX_PARTITIONS} partitions with distinct names, got {names}"
            )
        if not self.partitioned and names != [MAIN]:
            raise SetupError(f"partitions: a source that is not partitioned has only {MAIN!r}")
        if len(self.rows) > MAX_ROWS:
            raise SetupError(f"rows: at most {MAX_ROWS}, got {len(self.rows)}")
        ids = [r.id for r in self.rows]
        if len(set(ids)) != len(ids):
            raise SetupError("rows: row ids must be unique across the source")
        known = set(names)
        bound = self.max_commit_delay
        for r in self.rows:
            if r.partition not in known:
                raise SetupError(f"row {r.id}: partition {r.partition!r} is not in partitions")
            if r.at < self.origin:
                raise SetupError(
                    f"row {r.id}: cursor value {r.at} is below the origin {self.origin}, which "
                    "the source declares as earliest (no row is older)"
                )
            if not r.at <= r.commit <= r.at + bound:
                raise SetupError(
                    f"row {r.id}: commits at {r.commit}, outside [at, at + D] = "
                    f"[{r.at}, {r.at + bound}]: the declared bound D would be broken"
                )

    @property
    def granularity(self) -> int:
        """The step of the values a query bound can name (1000: stored ms, queried seconds)."""
        return CURSORS[self.cursor_type]

    def appears(self, partition: str) -> int:
        for p in self.partitions:
            if p.name == partition:
                return p.appears
        raise KeyError(partition)

    def visible_from(self, row: RowSpec) -> int:
        """When ``row`` becomes visible: its commit, or its partition's appearance if later."""
        return max(row.commit, self.appears(row.partition))

    def truth(self) -> tuple[TruthRow, ...]:
        """The ground truth as the judge reads it (every row that will ever exist)."""
        return tuple(TruthRow(r.id, r.partition, r.at) for r in self.rows)

    def row(self, row_id: str) -> RowSpec:
        for r in self.rows:
            if r.id == row_id:
                return r
        raise KeyError(row_id)

    def without(self, row_ids: Sequence[str]) -> LateSetup:
        """The same world without some rows (a smaller world is as faithful: shrinking uses it)."""
        drop = set(row_ids)
        return LateSetup(
            self.cursor_type,
            self.max_commit_delay,
            self.horizon,
            self.partitioned,
            self.page_size,
            self.partitions,
            tuple(r for r in self.rows if r.id not in drop),
            self.origin,
            self.stream,
            self.cursor,
            self.reads,
        )

    def source_json(self) -> JSONObject:
        """The source as a ``sync`` request declares it."""
        return source_declaration(
            stream=self.stream,
            cursor=self.cursor,
            cursor_type=self.cursor_type,
            granularity=self.granularity,
            max_commit_delay=self.max_commit_delay,
            partitioned=self.partitioned,
            horizon=self.horizon,
            reads=self.reads,
            earliest=self.origin,
        )

    def to_json(self) -> JSONObject:
        return {
            "cursor_type": self.cursor_type,
            "max_commit_delay": self.max_commit_delay,
            "horizon": self.horizon,
            "partitioned": self.partitioned,
            "page_size": self.page_size,
            "origin": self.origin,
            "stream": self.stream,
            "cursor": self.cursor,
            "reads": self.reads,
            "partitions": [{"name": p.name, "appears": p.appears} for p in self.partitions],
            "rows": [
                {"id": r.id, "partition": r.partition, "at": r.at, "commit": r.commit}
                for r in self.rows
            ],
        }

    @staticmethod
    def from_json(data: object) -> LateSetup:
        """A setup from its JSON form, strictly (:class:`SetupError` names the field)."""
        keys = (
            "cursor_type",
            "max_commit_delay",
            "horizon",
            "partitioned",
            "page_size",
            "origin",
            "stream",
            "cursor",
            "reads",
            "partitions",
            "rows",
        )
        d = _keys(data, "world", keys)
        raw_parts = d["partitions"]
        raw_rows = d["rows"]
        if not isinstance(raw_parts, list) or not isinstance(raw_rows, list):
            raise SetupError("world: partitions and rows are lists")
        if len(raw_rows) > MAX_ROWS or len(raw_parts) > MAX_PARTITIONS:
            raise SetupError(f"world: at most {MAX_ROWS} rows and {MAX_PARTITIONS} partitions")
        parts = []
        for i, p in enumerate(raw_parts):
            pd = _keys(p, f"world.partitions[{i}]", ("name", "appears"))
            parts.append(
                PartitionSpec(
                    _str(pd["name"], f"world.partitions[{i}].name"),
                    _int(pd["appears"], f"world.partitions[{i}].appears"),
                )
            )
        rows = []
        for i, r in enumerate(raw_rows):
            rd = _keys(r, f"world.rows[{i}]", ("id", "partition", "at", "commit"))
            rows.append(
                RowSpec(
                    _str(rd["id"], f"world.rows[{i}].id"),
                    _str(rd["partition"], f"world.rows[{i}].partition"),
                    _int(rd["at"], f"world.rows[{i}].at"),
                    _int(rd["commit"], f"world.rows[{i}].commit"),
                )
            )
        return LateSetup(
            cursor_type=_str(d["cursor_type"], "world.cursor_type"),
            max_commit_delay=_int(d["max_commit_delay"], "world.max_commit_delay"),
            horizon=_bool(d["horizon"], "world.horizon"),
            partitioned=_bool(d["partitioned"], "world.partitioned"),
            page_size=_int(d["page_size"], "world.page_size"),
            partitions=tuple(parts),
            rows=tuple(rows),
            origin=_int(d["origin"], "world.origin"),
            stream=_str(d["stream"], "world.stream"),
            cursor=_str(d["cursor"], "world.cursor"),
            reads=_str(d["reads"], "world.reads"),
        )


# --- time in words ----------------------------------------------------------------------------


def clock_text(setup: LateSetup, value: int) -> str:
    """A cursor value or clock time in words: UTC clock time for timestamps, else the number.

    ``12:00:25.412``; whole seconds drop their milliseconds (``12:00:32``); a
    value on another day than the origin carries its date.
    """
    if setup.cursor_type != "timestamp":
        return str(value)
    moment = datetime.datetime.fromtimestamp(value / 1000, tz=datetime.UTC)
    origin = datetime.datetime.fromtimestamp(setup.origin / 1000, tz=datetime.UTC)
    text = moment.strftime("%H:%M:%S")
    if value % 1000:
        text += f".{value % 1000:03d}"
    if moment.date() != origin.date():
        text = moment.strftime("%Y-%m-%d ") + text
    return text


def span_text(setup: LateSetup, value: int) -> str:
    """A duration in the cursor's units, in words (``10 s`` or ``10``)."""
    if setup.cursor_type != "timestamp":
        return str(value)
    seconds = value / 1000
    return f"{seconds:g} s"


def bound_text(setup: LateSetup, lower: QueryBound | None, upper: QueryBound | None) -> str:
    """A query's range in interval notation: ``[12:00:20, end)``, ``(start, 12:00:30]``."""
    low = (
        "(start"
        if lower is None
        else ("[" if lower.inclusive else "(") + clock_text(setup, lower.at)
    )
    high = (
        "end)" if upper is None else clock_text(setup, upper.at) + ("]" if upper.inclusive else ")")
    )
    return f"{low}, {high}"


def in_bounds(at: int, lower: QueryBound | None, upper: QueryBound | None) -> bool:
    """Whether a row at ``at`` lies within the bounds of a query."""
    if lower is not None and (at < lower.at or (at == lower.at and not lower.inclusive)):
        return False
    return not (upper is not None and (at > upper.at or (at == upper.at and not upper.inclusive)))


# --- the schedule's steps ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Sync:
    """Start a sync of the tool; its ``now`` is the clock."""


@dataclass(frozen=True, slots=True)
class Answer:
    """Answer the tool's pending call: ``ok``, ``lost`` (not applied) or ``applied_lost``."""

    mode: str = "ok"


@dataclass(frozen=True, slots=True)
class Finish:
    """Answer every call of the sync in progress normally until it ends."""


@dataclass(frozen=True, slots=True)
class Upto:
    """Answer normally until the pending call is the ``nth`` call of ``op`` in this sync."""

    op: str
    nth: int = 1


@dataclass(frozen=True, slots=True)
class Tick:
    """The clock moves to the next event: a row commits or a partition appears."""


@dataclass(frozen=True, slots=True)
class TickTo:
    """The clock moves on to ``time`` (if it is not there yet); every event until then happens."""

    time: int


@dataclass(frozen=True, slots=True)
class Crash:
    """The tool's process dies while a call is pending; it is restarted with no memory."""


LateAction = Sync | Answer | Finish | Upto | Tick | TickTo | Crash

#: The answer modes each call may be given (a read's lost response changed nothing).
MODES: Mapping[str, tuple[str, ...]] = {
    "read_state": ("ok", "lost"),
    "list_partitions": ("ok", "lost"),
    "query": ("ok", "lost"),
    "commit": ("ok", "lost", "applied_lost"),
}
ALL_MODES: tuple[str, ...] = ("ok", "lost", "applied_lost")


def action_to_json(action: LateAction) -> JSONObject:
    if isinstance(action, Sync):
        return {"do": "sync"}
    if isinstance(action, Answer):
        return {"do": "answer", "mode": action.mode}
    if isinstance(action, Finish):
        return {"do": "finish"}
    if isinstance(action, Upto):
        return {"do": "upto", "op": action.op, "nth": action.nth}
    if isinstance(action, Tick):
        return {"do": "tick"}
    if isinstance(action, TickTo):
        return {"do": "tick_to", "time": action.time}
    return {"do": "crash"}


def action_from_json(data: object, where: str) -> LateAction:
    """A step from its JSON form, strictly (:class:`SetupError` names the field)."""
    if not isinstance(data, dict):
        raise SetupError(f"{where}: a step object is required")
    do = data.get("do")
    shapes: dict[object, tuple[str, ...]] = {
        "sync": ("do",),
        "answer": ("do", "mode"),
        "finish": ("do",),
        "upto": ("do", "op", "nth"),
        "tick": ("do",),
        "tick_to": ("do", "time"),
        "crash": ("do",),
    }
    if do not in shapes:
        raise SetupError(f"{where}.do: one of {', '.join(str(k) for k in shapes)}, got {do!r}")
    d = _keys(data, where, shapes[do])
    if do == "sync":
        return Sync()
    if do == "answer":
        mode = d["mode"]
        if mode not in ALL_MODES:
            raise SetupError(f"{where}.mode: one of {', '.join(ALL_MODES)}, got {mode!r}")
        return Answer(str(mode))
    if do == "finish":
        return Finish()
    if do == "upto":
        op = d["op"]
        if op not in SYNC_OPS:
            raise SetupError(f"{where}.op: one of {', '.join(SYNC_OPS)}, got {op!r}")
        nth = _int(d["nth"], f"{where}.nth")
        if not 1 <= nth <= 1000:
            raise SetupError(f"{where}.nth: from 1 to 1000, got {nth}")
        return Upto(str(op), nth)
    if do == "tick":
        return Tick()
    if do == "tick_to":
        return TickTo(_int(d["time"], f"{where}.time"))
    return Crash()


def describe_action(setup: LateSetup, action: LateAction) -> str:
    """A step in words (for steps that did not run: a replay's skipped steps)."""
    if isinstance(action, Sync):
        return "start a sync"
    if isinstance(action, Answer):
        return f"answer the pending call ({action.mode})"
    if isinstance(action, Finish):
        return "answer every call until the sync ends"
    if isinstance(action, Upto):
        return f"answer until call {action.op} #{action.nth}"
    if isinstance(action, Tick):
        return "the clock moves to the next commit"
    if isinstance(action, TickTo):
        return f"the clock moves to {clock_text(setup, action.time)}"
    return "the tool's process crashes"


# --- the source and the destination ----------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Position:
    """Where a query's page ended: strictly after ``(at, id)`` comes next."""

    at: int
    id: str


@dataclass(frozen=True, slots=True)
class IssuedToken:
    """What a ``next`` token was issued for: its query, the position, its query's number, and
    the clock its query's first page showed (the snapshot, for ``snapshot`` reads)."""

    partition: str
    lower: QueryBound | None
    upper: QueryBound | None
    position: Position
    query: int
    snapshot: int


@dataclass(frozen=True, slots=True)
class ServedPage:
    """One page as the source served it."""

    rows: tuple[RowSpec, ...]
    next: str | None
    horizon: int | None


@dataclass
class LateWorld:
    """One run's source, clock and destination, built from a :class:`LateSetup`."""

    setup: LateSetup
    clock: int = 0
    #: Applied commits, in order (the judge replays them).
    applied: list[AppliedCommit] = field(default_factory=list)
    #: The tool's state as last committed (None before the first).
    state: object = None
    #: Row ids the source returned to some query (a commit may name only these).
    shown: set[str] = field(default_factory=set)
    tokens: dict[str, IssuedToken] = field(default_factory=dict)
    queries: int = 0

    @staticmethod
    def create(setup: LateSetup) -> LateWorld:
        return LateWorld(setup, clock=setup.origin)

    # --- the clock ------------------------------------------------------------------------

    def events(self) -> list[int]:
        """The times still to come at which something becomes visible, ascending."""
        times = {self.setup.visible_from(r) for r in self.setup.rows}
        times |= {p.appears for p in self.setup.partitions}
        return sorted(t for t in times if t > self.clock)

    def next_event(self) -> int | None:
        upcoming = self.events()
        return upcoming[0] if upcoming else None

    def move_to(self, time: int) -> tuple[list[RowSpec], list[str]]:
        """Move the clock on to ``time`` (never back); what became visible (rows, partitions)."""
        before = self.clock
        after = max(before, time)
        rows = [r for r in self.setup.rows if before < self.setup.visible_from(r) <= after]
        rows.sort(key=lambda r: (self.setup.visible_from(r), r.at, r.id))
        parts = [p.name for p in self.setup.partitions if before < p.appears <= after]
        self.clock = after
        return rows, parts

    def quiesced(self) -> bool:
        return self.next_event() is None

    # --- the source -----------------------------------------------------------------------

    def visible(self, row: RowSpec, at: int | None = None) -> bool:
        """Whether ``row`` is visible now (or at the earlier time ``at``: a snapshot)."""
        return (self.clock if at is None else at) >= self.setup.visible_from(row)

    def listed(self) -> list[str]:
        """The partitions that exist now, in the order they appeared."""
        parts = [p for p in self.setup.partitions if p.appears <= self.clock]
        parts.sort(key=lambda p: (p.appears, p.name))
        return [p.name for p in parts]

    def horizon(self, partition: str, at: int | None = None) -> int:
        """``before h``: every row of ``partition`` below ``h`` that will ever exist is visible
        now (or at the snapshot time ``at``)."""
        when = self.clock if at is None else at
        pending = [
            r.at for r in self.setup.rows if r.partition == partition and not self.visible(r, when)
        ]
        return min([when, *pending])

    def shows(self, issued: IssuedToken | None) -> int:
        """The clock whose visibility a page shows: now for ``live`` reads and first pages; the
        query's first page for later pages of a ``snapshot`` source."""
        if issued is None or self.setup.reads == "live":
            return self.clock
        return issued.snapshot

    def page(
        self,
        partition: str,
        lower: QueryBound | None,
        upper: QueryBound | None,
        after: Position | None,
        query: int,
        snapshot: int | None = None,
    ) -> ServedPage:
        """One page of the rows of ``partition`` visible at ``snapshot`` (default: now) within
        the bounds, after ``after``."""
        when = self.clock if snapshot is None else snapshot
        rows = sorted(
            (
                r
                for r in self.setup.rows
                if r.partition == partition
                and self.visible(r, when)
                and in_bounds(r.at, lower, upper)
                and (after is None or (r.at, r.id) > (after.at, after.id))
            ),
            key=lambda r: (r.at, r.id),
        )
        page = tuple(rows[: self.setup.page_size])
        token = None
        if len(rows) > len(page):
            last = page[-1]
            token = self._issue(
                IssuedToken(partition, lower, upper, Position(last.at, last.id), query, when)
            )
        self.shown.update(r.id for r in page)
        return ServedPage(
            page, token, self.horizon(partition, when) if self.setup.horizon else None
        )

    def _issue(self, issued: IssuedToken) -> str:
        number = len(self.tokens) + 1
        digest = hashlib.blake2s(f"{number}:{issued}".encode(), digest_size=5).hexdigest()
        token = f"k{number}{digest}"
        self.tokens[token] = issued
        return token

    # --- the destination ------------------------------------------------------------------

    def commit(self, records: Sequence[str], mode: str, sets_state: bool, state: object) -> None:
        """Apply one commit: its records and (if it carries one) its state, together."""
        assert mode in COMMIT_MODES
        self.applied.append(AppliedCommit(tuple(records), mode))
        if sets_state:
            self.state = copy.deepcopy(state)

    def state_json(self) -> object:
        """The state as ``read_state`` returns it (a copy the tool cannot alias)."""
        return json.loads(json.dumps(self.state))
