"""The search's power in the late-commit world: in which runs a plausible wrong answer is caught.

Reaching a situation (a late commit, a shared value, a new partition) is not
enough: a run shows something only if a tool that decided wrongly *there*
would have been caught. For every run the harness asks, of each plausible
wrong answer of :data:`WRONG_ANSWERS`, whether the judge would have caught it
in that run, from the run's ground truth and what the tool under test read
(the pages it was served, when, and how its syncs ended):

- the resume rules (through the greatest value read; a lag shorter than D; a
  lag of D from the greatest value read instead of from the clock; one resume
  point for every partition; a range that stops at the last whole second) are
  judged as the coverage claim they would have made at the end of each sync:
  caught when the claim covers a row that no sync had been shown by then, or
  (the whole-second rule) a row strictly between two whole seconds at its end;
- a window up to ``now - D`` rounded *up* to the granularity is caught where a
  row inside the rounded-up part had not committed when the sync started; a
  window floored there but resumed with an exclusive lower bound is caught
  where a row sits exactly on a sync's window edge;
- paging on with ``>`` the last value read is caught where a page ended on a
  value that another visible row shares, below where the next sync resumes;
- committing the state before the records is caught where a sync crashed
  after reading rows that the state it had already written would cover;
- appending what a lagged re-read returns again is caught where a row was
  returned to two syncs.

These are predicates over one run, not runs of other tools: they say how
strong a run is, and are reported per run kind (each scripted story, and the
random runs) beside the verdict. Cost: O(syncs x rows) per run.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from fencepost.harness.late_runner import LateResult
from fencepost.harness.late_world import LateSetup, RowSpec

#: The plausible wrong answers, by name: the one home of this set.
WRONG_ANSWERS: dict[str, str] = {
    "through-greatest": "resume through the greatest value read",
    "short-lag": "resume at the greatest value read minus half of D",
    "lag-from-read": "resume at the greatest value read minus D, not clamped to the clock",
    "one-cursor": "one resume point for every partition",
    "seconds-gap": "read up to the whole second before now - D, resume at now - D",
    "ceil-window": "read a window up to now - D rounded up to the granularity, resume there",
    "exclusive-lower": "read a window up to now - D floored, resume with an exclusive lower bound",
    "strict-shared": "page on with > the last value read",
    "state-first": "commit the state before the records",
    "append-reread": "append the rows a lagged re-read returns again",
}


def _floor(value: int, step: int) -> int:
    return value - value % step


@dataclass(frozen=True)
class _Seen:
    """What the tool had been shown by the end of one sync."""

    shown: frozenset[str]
    greatest: Mapping[str, int]


def caught(result: LateResult) -> frozenset[str]:
    """The wrong answers the judge would have caught in this run (see the module docstring)."""
    setup = result.setup
    g = setup.granularity
    d = setup.max_commit_delay
    out: set[str] = set()
    shown: set[str] = set()
    greatest: dict[str, int] = {}
    by_sync: dict[int, list[tuple[str, int]]] = {}
    for q in result.queries:
        by_sync.setdefault(q.sync, []).extend(q.rows)
    rows_by_part: dict[str, list[RowSpec]] = {}
    for r in setup.rows:
        rows_by_part.setdefault(r.partition, []).append(r)
    partition_of = {r.id: r.partition for r in setup.rows}
    read_in: dict[str, set[int]] = {}
    for sync in result.syncs:
        read = by_sync.get(sync.number, [])
        for row_id, at in read:
            shown.add(row_id)
            read_in.setdefault(row_id, set()).add(sync.number)
            p = partition_of[row_id]
            greatest[p] = max(greatest.get(p, at), at)
        if sync.crashed:
            if read:
                top = max(at for _, at in read)
                bookmark = _floor(min(top, sync.now) - d, g)
                if any(at < bookmark for _, at in read):
                    out.add("state-first")
            continue
        if sync.outcome is None:
            continue

        def uncovered(partition: str, below: int, through: bool = False) -> bool:
            return any(
                (r.at <= below if through else r.at < below) and r.id not in shown
                for r in rows_by_part.get(partition, ())
            )

        for p, top in greatest.items():
            if uncovered(p, top, through=True):
                out.add("through-greatest")
            if uncovered(p, _floor(min(top, sync.now) - d // 2, g)):
                out.add("short-lag")
            if uncovered(p, _floor(top - d, g)):
                out.add("lag-from-read")
        if greatest:
            shared = max(_floor(min(top, sync.now) - d, g) for top in greatest.values())
            if any(uncovered(p, shared) for p in rows_by_part):
                out.add("one-cursor")
        if g > 1:
            edge = _floor(sync.now - d, g)
            if any(edge - g < r.at < edge for r in setup.rows):
                out.add("seconds-gap")
            # A window ending at now - D rounded up claims rows above now - D that may
            # not have committed when the sync started: caught where one had not.
            top = edge + g if edge < sync.now - d else edge
            if any(
                sync.now - d <= r.at < top and setup.appears(r.partition) <= sync.now < r.commit
                for r in setup.rows
            ):
                out.add("ceil-window")
        # A window ending at the floored edge leaves a row exactly on it to the next sync,
        # whose exclusive lower bound then skips it: caught where a row sits on an edge.
        window_edge = _floor(sync.now - d, g)
        if any(r.at == window_edge for r in setup.rows):
            out.add("exclusive-lower")
    if any(len(syncs) > 1 for syncs in read_in.values()):
        out.add("append-reread")
    if _strict_shared(result, setup):
        out.add("strict-shared")
    return frozenset(out)


def _strict_shared(result: LateResult, setup: LateSetup) -> bool:
    g = setup.granularity
    d = setup.max_commit_delay
    now = {s.number: s.now for s in result.syncs}
    top: dict[tuple[int, str], int] = {}
    for q in result.queries:
        for _, at in q.rows:
            key = (q.sync, q.partition)
            top[key] = max(top.get(key, at), at)
    for q in result.queries:
        if not q.more or not q.rows:
            continue
        last_id, last_at = q.rows[-1]
        if last_at % g:
            continue
        resume = _floor(min(top[(q.sync, q.partition)], now[q.sync]) - d, g)
        if last_at >= resume:
            continue
        for r in setup.rows:
            if (
                r.partition == q.partition
                and r.at == last_at
                and r.id > last_id
                and setup.visible_from(r) <= q.shows
            ):
                return True
    return False


@dataclass
class PowerTable:
    """Per run kind: how many runs, and in how many each wrong answer would have been caught."""

    runs: dict[str, int]
    caught: dict[str, dict[str, int]]

    @staticmethod
    def empty() -> PowerTable:
        return PowerTable({}, {})

    def add(self, kind: str, wrong: Iterable[str]) -> None:
        self.runs[kind] = self.runs.get(kind, 0) + 1
        row = self.caught.setdefault(kind, {})
        for name in wrong:
            row[name] = row.get(name, 0) + 1

    def total(self, name: str) -> int:
        return sum(row.get(name, 0) for row in self.caught.values())

    def never(self, cursor_type: str) -> tuple[str, ...]:
        """Wrong answers no run would have caught (the whole-second and rounded-up window
        ones need a timestamp: an integer cursor's granularity is 1)."""
        return tuple(
            name
            for name in WRONG_ANSWERS
            if self.total(name) == 0 and not (name in _GRANULAR and cursor_type != "timestamp")
        )


#: Wrong answers that exist only where the granularity is coarser than the stored values.
_GRANULAR = frozenset({"seconds-gap", "ceil-window"})
