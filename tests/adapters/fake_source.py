"""A small in-memory source and destination for adapter tests: the sync level's rules, by hand.

Not the harness: a test drives it step by step (commit a row, make a partition
appear, run a sync, lose the next response) and reads the destination's
copies. It follows docs/conformance-protocol.md "Level sync" closely enough
to test an adapter's own logic without the search; the harness's world is the
judge.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from fencepost.adapters.runtime import (
    KEEP_STATE,
    Bound,
    LostResponse,
    Mode,
    Page,
    Row,
    Source,
    SourceClient,
    SyncRequest,
    SyncResult,
    Tool,
)

#: 2024-01-01T00:00:00Z in milliseconds: the fake world's epoch.
T0 = 1_704_067_200_000


@dataclass
class FakeWorld:
    """Partitions of rows, which are visible, the destination and the tool's state."""

    granularity: int = 1000
    max_commit_delay: int = 10_000
    page_size: int = 2
    partitioned: bool = False
    #: Declared only: the fake serves every page live, as it is asked for.
    reads: Literal["live", "snapshot"] = "live"
    #: No row of the fake is older than this (the declaration's ``earliest``).
    earliest: int = T0
    rows: dict[str, list[Row]] = field(default_factory=dict)
    visible: set[str] = field(default_factory=set)
    partitions: list[str] = field(default_factory=list)
    copies: dict[str, int] = field(default_factory=dict)
    state: object = None
    now: int = T0
    #: Ops whose next response is lost; for "commit", the value says whether it applied.
    lose: dict[str, bool] = field(default_factory=dict)
    shown: set[str] = field(default_factory=set)
    calls: list[tuple[str, object]] = field(default_factory=list)

    def add(self, partition: str, row_id: str, at: int, *, visible: bool = True) -> None:
        if partition not in self.partitions:
            self.partitions.append(partition)
        self.rows.setdefault(partition, []).append(Row(row_id, at))
        if visible:
            self.visible.add(row_id)

    def commit_row(self, row_id: str) -> None:
        self.visible.add(row_id)

    def source(self) -> Source:
        return Source(
            "orders",
            "updated_at",
            "timestamp",
            self.granularity,
            self.max_commit_delay,
            self.partitioned,
            False,
            self.reads,
            self.earliest,
        )

    def run(self, tool: Tool, sync_id: int = 1) -> SyncResult:
        request = SyncRequest(sync_id, "t1", self.now, self.source())
        return tool.sync(request, _Client(self))

    def lost(self) -> list[str]:
        every = [r.id for rows in self.rows.values() for r in rows if r.id in self.visible]
        return [r for r in every if self.copies.get(r, 0) == 0]

    def duplicated(self) -> list[str]:
        return [r for r, n in self.copies.items() if n > 1]


class _Client(SourceClient):
    def __init__(self, world: FakeWorld) -> None:
        self.w = world

    def _lost(self, op: str) -> bool:
        return op in self.w.lose

    def read_state(self) -> object:
        self.w.calls.append(("read_state", None))
        if self._lost("read_state"):
            del self.w.lose["read_state"]
            raise LostResponse("read_state")
        return json.loads(json.dumps(self.w.state))

    def list_partitions(self) -> list[str]:
        self.w.calls.append(("list_partitions", None))
        return [
            p
            for p in self.w.partitions
            if any(r.id in self.w.visible for r in self.w.rows.get(p, []))
        ]

    def query(
        self, partition: str, lower: Bound | None, upper: Bound | None, after: str | None
    ) -> Page:
        self.w.calls.append(("query", (partition, lower, upper, after)))
        for b in (lower, upper):
            assert b is None or b.at % self.w.granularity == 0, f"bound {b} not expressible"
        if self._lost("query"):
            del self.w.lose["query"]
            raise LostResponse("query")
        rows = sorted(
            (r for r in self.w.rows.get(partition, []) if r.id in self.w.visible),
            key=lambda r: (r.at, r.id),
        )
        if lower is not None:
            rows = [r for r in rows if r.at > lower.at or (lower.inclusive and r.at == lower.at)]
        if upper is not None:
            rows = [r for r in rows if r.at < upper.at or (upper.inclusive and r.at == upper.at)]
        if after is not None:
            at, rid = json.loads(after)
            rows = [r for r in rows if (r.at, r.id) > (at, rid)]
        page = rows[: self.w.page_size]
        self.w.shown.update(r.id for r in page)
        token = json.dumps([page[-1].at, page[-1].id]) if len(rows) > self.w.page_size else None
        return Page(tuple(page), token, None)

    def commit(self, records: Sequence[str], mode: Mode, state: object = KEEP_STATE) -> None:
        self.w.calls.append(("commit", (list(records), mode, state)))
        unknown = [r for r in records if r not in self.w.shown]
        assert not unknown, f"invented rows {unknown}"
        applies = self.w.lose.get("commit", True)
        if applies:
            for r in records:
                if mode == "merge":
                    self.w.copies[r] = 1
                else:
                    self.w.copies[r] = self.w.copies.get(r, 0) + 1
            if state is not KEEP_STATE:
                self.w.state = json.loads(json.dumps(state))
        if "commit" in self.w.lose:
            del self.w.lose["commit"]
            raise LostResponse("commit")
