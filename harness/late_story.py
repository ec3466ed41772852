"""Why a row was lost, in a data engineer's words: the queries it fell between.

A lost row of a late-commit run (:mod:`fencepost.harness.late_runner`) is
explained from the run's own logs: every query chain the tool made on the
row's partition (a first page and the pages that followed it by token), and
what each chain had to do with the row:

- its range excluded the row (the row lies below its lower bound, or above its
  upper bound);
- its pages passed the row's place before the row was visible (the row
  committed late, behind what had been read);
- it stopped before the row's place (the tool did not follow ``next``).

The row's **cause** is one of :data:`CAUSES`; a failure's key is its rule and
the cause of its first lost row, so the search keeps one finding per bug
(``fencepost.harness.late_search``).

Cost: O(pages of the row's partition) per lost row.
"""

from __future__ import annotations

from dataclasses import dataclass

from fencepost.harness.late_runner import LateResult, QueryRecord, SyncRecord
from fencepost.harness.late_world import (
    LateSetup,
    RowSpec,
    bound_text,
    clock_text,
    in_bounds,
    span_text,
)
from fencepost.harness.rules import Rule
from fencepost.judge.rows import covered_rows

#: Why a row was lost: cause -> what it means (the one home of this set), in the order
#: they are tried: the first that fits a lost row is its cause.
CAUSES: dict[str, str] = {
    "shared-value-skipped": (
        "a query excluded its cursor value (an exclusive lower bound at exactly its value) "
        "after another row sharing that value was read"
    ),
    "committed-behind-read": "it committed after the tool's reads had passed its place",
    "read-not-written": (
        "the tool was shown it, but no commit of it was ever applied (a commit lost or cut "
        "short by a crash, or none sent) while its state moved past it"
    ),
    "new-partition-below-range": (
        "its partition appeared mid-run and every query of it started above the row"
    ),
    "between-ranges": "it fell in a gap between one query's upper bound and the next lower bound",
    "partition-never-read": "its partition was never queried",
    "never-in-range": "it was never inside the range of a query the tool made",
}


@dataclass(frozen=True, slots=True)
class Chain:
    """One query: its first page and the pages that followed it by token, in order."""

    sync: SyncRecord
    pages: tuple[QueryRecord, ...]

    @property
    def head(self) -> QueryRecord:
        return self.pages[0]


@dataclass(frozen=True)
class LostStory:
    """One lost row, explained."""

    row: RowSpec
    cause: str
    headline: str
    lines: tuple[str, ...]
    between: str


def chains(result: LateResult, partition: str) -> list[Chain]:
    """The run's query chains on ``partition``, in the order they started."""
    by_sync = {s.number: s for s in result.syncs}
    grouped: dict[tuple[int, int], list[QueryRecord]] = {}
    for q in result.queries:
        if q.partition == partition:
            grouped.setdefault((q.sync, q.query), []).append(q)
    out = [Chain(by_sync[sync], tuple(pages)) for (sync, _), pages in grouped.items()]
    out.sort(key=lambda c: c.head.step)
    return out


def _relation(setup: LateSetup, chain: Chain, row: RowSpec) -> tuple[str, str]:
    """(kind, words): ``below``, ``above``, ``passed-early``, ``stopped``, ``returned``."""
    head = chain.head
    if not in_bounds(row.at, head.lower, None):
        return "below", f"{row.id} lies below its lower bound"
    if not in_bounds(row.at, None, head.upper):
        return "above", f"{row.id} lies above its upper bound"
    place = (row.at, row.id)
    visible = setup.visible_from(row)
    for page in chain.pages:
        if row.id in {r for r, _ in page.rows}:
            return "returned", f"it returned {row.id}"
        last = page.rows[-1] if page.rows else None
        passed = not page.more or (last is not None and (last[1], last[0]) >= place)
        if passed:
            when = clock_text(setup, page.time)
            if page.shows < visible:
                return (
                    "passed-early",
                    f"its pages passed {row.id}'s place at {when}, before {row.id} was visible",
                )
            return "passed", f"its page at {when} passed {row.id}'s place without it"
    return "stopped", f"the tool stopped following its pages before {row.id}'s place"


def _sync_name(sync: SyncRecord) -> str:
    return f"{'completion sync' if sync.completion else 'sync'} {sync.number}"


def explain(result: LateResult, row_id: str) -> LostStory:
    """The story of one lost row (see the module docstring)."""
    setup = result.setup
    row = setup.row(row_id)
    shown = {r for q in result.queries for r, _ in q.rows}
    found = chains(result, row.partition)
    relations = [(c, *_relation(setup, c, row)) for c in found]
    cause = _cause(result, row, shown, relations)
    visible = setup.visible_from(row)
    late = row.commit - row.at
    opening = f"{row.id} ({clock_text(setup, row.at)}) in {row.partition} commits at " + (
        clock_text(setup, row.commit)
    )
    if late:
        opening += f", {span_text(setup, late)} after its cursor value"
    opening += f" (the declared bound D is {span_text(setup, setup.max_commit_delay)})"
    if visible > row.commit:
        opening += f"; its partition appears at {clock_text(setup, visible)}, holding it"
    lines = [opening]
    # The claims that covered the row while the destination did not hold it.
    overclaimed = [
        (s, c)
        for s in result.syncs
        for c in s.claims or ()
        if c.partition == row.partition
        and any(r.id == row.id for r in covered_rows(c, setup.truth()))
        and any(o.row is not None and o.row.id == row.id for o in s.overclaims)
    ]
    marker = overclaimed[0][0] if overclaimed else None
    bookmark = "" if not overclaimed else _claim(setup, overclaimed[0][1])
    for chain, _, words in relations:
        head = chain.head
        sync = chain.sync
        lines.append(
            f"{_sync_name(sync)} (now {clock_text(setup, sync.now)}) read {row.partition} "
            f"{bound_text(setup, head.lower, head.upper)}: {words}"
        )
        if sync is marker and chain is [c for c, _, _ in relations if c.sync is marker][-1]:
            lines.append(
                f"{_sync_name(sync)} saved a bookmark {bookmark} (it covers {row.id}, not held)"
            )
    if marker is not None and not any(c.sync is marker for c, _, _ in relations):
        lines.append(
            f"{_sync_name(marker)} saved a bookmark {bookmark} (it covers {row.id}, not held)"
        )
    if row.id in shown:
        commits = [c for c in result.commits if row.id in c.records]
        if not commits:
            lines.append(f"{row.id} was returned to the tool but never sent in a commit")
        else:
            fates = ", ".join(
                f"{_sync_name(_sync(result, c.sync))}'s commit at {clock_text(setup, c.time)}: "
                + {
                    "ok": "applied",
                    "applied_lost": "applied, response lost",
                    "lost": "not applied (response lost)",
                    "crash": "never applied (the tool crashed first)",
                }[c.answer]
                for c in commits
            )
            lines.append(f"{row.id} was sent in {fates}")
    lines.append(f"{row.id} is never read: the destination holds no copy")
    headline = opening.replace(
        f" (the declared bound D is {span_text(setup, setup.max_commit_delay)})", ""
    )
    if cause == "read-not-written":
        return LostStory(
            row,
            cause,
            _unwritten_headline(result, row, headline, relations),
            tuple(lines),
            _between(setup, row, relations),
        )
    after = [
        c
        for c, kind, _ in relations
        if kind in ("below", "above") and (marker is None or c.sync.number > marker.number)
    ]
    own = [c for c, _, _ in relations if marker is not None and c.sync is marker]
    headline = _in_time_order(
        result,
        row,
        marker,
        own[-1] if own else None,
        bookmark,
        after[0] if after else None,
        cause,
    )
    return LostStory(row, cause, headline, tuple(lines), _between(setup, row, relations))


def _in_time_order(
    result: LateResult,
    row: RowSpec,
    marker: SyncRecord | None,
    marker_read: Chain | None,
    bookmark: str,
    later: Chain | None,
    cause: str,
) -> str:
    """The headline of a lost row: what happened to it, one clause per event, in the order of
    the source's clock (an event of the world before a read at the same time, as the read
    sees it): the row commits, its partition appears, the sync whose bookmark covered it
    reads and saves that bookmark, a later sync reads a range without it."""
    setup = result.setup
    p = row.partition
    events: list[tuple[int, int, str, SyncRecord | None]] = []
    late = row.commit - row.at
    appears = setup.appears(p)
    commit = f"{row.id} ({clock_text(setup, row.at)}) in {p} commits at " + clock_text(
        setup, row.commit
    )
    if late:
        commit += f", {span_text(setup, late)} after its cursor value"
    if appears > row.commit:
        commit += f", before {p} is listed"
        events.append((appears, 1, f"partition {p} appears at {clock_text(setup, appears)}", None))
    events.append((row.commit, 0, commit, None))

    def read(chain: Chain) -> str:
        head = chain.head
        words = f"{_sync_name(chain.sync)} (now {clock_text(setup, chain.sync.now)}) reads {p} "
        words += bound_text(setup, head.lower, head.upper)
        if cause == "new-partition-below-range" and head.lower is not None:
            words += _from_other_partitions(result, chain)
        return words

    if marker is not None:
        if marker_read is not None:
            events.append((marker_read.head.time, 2, read(marker_read), marker))
        end = marker.end_time if marker.end_time is not None else marker.now
        events.append((end, 3, f"saves a bookmark {bookmark}", marker))
    if later is not None:
        if cause == "shared-value-skipped":
            sibling = _sibling_read(result, row, later)
            if sibling is not None:
                chain, other = sibling
                events.append(
                    (
                        chain.head.time,
                        2,
                        f"{read(chain)}, up to {other} ({clock_text(setup, row.at)})",
                        chain.sync,
                    )
                )
        events.append((later.head.time, 2, read(later), later.sync))  # after it (a stable sort)
    events.sort(key=lambda e: (e[0], e[1]))
    clauses: list[str] = []
    previous: SyncRecord | None = None
    for _, kind, words, sync in events:
        if kind == 3 and sync is not None and previous is sync and clauses:
            clauses[-1] += f" and {words}"  # the same sync read, then saved: one clause
        elif kind == 3 and sync is not None:
            clauses.append(f"{_sync_name(sync)} {words}")
        else:
            clauses.append(words)
        previous = sync
    return "; ".join(clauses) + f": {row.id} is never read"


def _sibling_read(result: LateResult, row: RowSpec, later: Chain) -> tuple[Chain, str] | None:
    """The last query before ``later`` that returned another row at ``row``'s value (and which)."""
    found: tuple[Chain, str] | None = None
    for chain in chains(result, row.partition):
        if chain.head == later.head:
            break
        for page in chain.pages:
            for other, at in page.rows:
                if at == row.at and other != row.id:
                    found = (chain, other)
    return found


def _from_other_partitions(result: LateResult, chain: Chain) -> str:
    """`` (from the other partitions' bookmark: ...)`` when a new partition's first query
    starts at the resume point a state claimed earlier for another partition, else nothing."""
    head = chain.head
    assert head.lower is not None
    for sync in result.syncs:
        if sync.number >= chain.sync.number:
            break
        for claim in sync.claims or ():
            if claim.partition != head.partition and claim.at == head.lower.at:
                return (
                    f" (from the other partitions' bookmark: {claim.partition} "
                    f"{_claim(result.setup, claim)})"
                )
    return ""


def _unwritten_headline(
    result: LateResult, row: RowSpec, opening: str, relations: list[tuple[Chain, str, str]]
) -> str:
    """A row the tool had and never wrote: who read it, what became of its commit and of the
    state, and where the next sync reads from."""
    setup = result.setup
    reader = next((c.sync for c, kind, _ in relations if kind == "returned"), None)
    out = opening
    if reader is not None:
        out += f"; {_sync_name(reader)} reads it"
        sent = [c for c in result.commits if row.id in c.records and c.sync == reader.number]
        states = [
            c for c in result.commits if c.sync == reader.number and c.sets_state and c.applied
        ]
        if sent:
            fate = {
                "lost": "is not applied (its response is lost)",
                "crash": "never applies: the tool crashes first",
            }.get(sent[-1].answer, "applies")
            out += f", and its commit of {row.id} {fate}"
        else:
            out += f", but sends no commit of {row.id}"
        if states:
            out += f", while its state {states[-1].state} has been committed"
        later = [c for c, kind, _ in relations if kind == "below" and c.sync.number > reader.number]
        if later:
            head = later[0].head
            out += (
                f"; {_sync_name(later[0].sync)} reads {row.partition} "
                f"{bound_text(setup, head.lower, head.upper)}"
            )
    return out + f": {row.id} is never read again"


def _cause(
    result: LateResult, row: RowSpec, shown: set[str], relations: list[tuple[Chain, str, str]]
) -> str:
    """The first of :data:`CAUSES` that fits (see there)."""
    kinds = [kind for _, kind, _ in relations]
    for chain, kind, _ in relations:
        lower = chain.head.lower
        if (
            kind == "below"
            and lower is not None
            and not lower.inclusive
            and lower.at == row.at
            and any(at == row.at for q in result.queries for r, at in q.rows if r != row.id)
        ):
            return "shared-value-skipped"
    sent = [c for c in result.commits if row.id in c.records]
    if row.id in shown and sent and not any(c.applied for c in sent):
        return "read-not-written"
    # Committed behind a read only if the read that passed it early is the sync whose
    # bookmark then covered it: a query that ran before the row existed, followed by a later
    # sync that set its resume point past the row without reading there, is the later
    # sync's doing (a range that never held the row), not the commit's.
    early = {c.sync.number for c, kind, _ in relations if kind == "passed-early"}
    covering = [
        s.number
        for s in result.syncs
        if any(o.row is not None and o.row.id == row.id for o in s.overclaims)
    ]
    if early and (not covering or covering[0] in early):
        return "committed-behind-read"
    if row.id in shown:
        return "read-not-written"
    if not relations:
        return "partition-never-read"
    first_sync = min((s.start_step for s in result.syncs), default=0)
    appeared_late = result.setup.appears(row.partition) > result.setup.origin
    if (
        appeared_late
        and all(kind == "below" for kind in kinds)
        and min(c.sync.start_step for c, _, _ in relations) > first_sync
    ):
        return "new-partition-below-range"
    for i, kind in enumerate(kinds):
        if kind == "above" and "below" in kinds[i + 1 :]:
            return "between-ranges"
    return "never-in-range"


def _sync(result: LateResult, number: int) -> SyncRecord:
    return next(s for s in result.syncs if s.number == number)


def _claim(setup: LateSetup, claim: object) -> str:
    at = getattr(claim, "at", None)
    kind = getattr(claim, "kind", "before")
    plus = getattr(claim, "plus", ())
    cut = "nothing" if at is None else f"{kind} {clock_text(setup, at)}"
    return cut + (f" plus {', '.join(plus)}" if plus else "")


def _between(setup: LateSetup, row: RowSpec, relations: list[tuple[Chain, str, str]]) -> str:
    """Which queries' ranges the row fell between, in one sentence."""
    if not relations:
        return f"no query ever read {row.partition}"

    def name(chain: Chain) -> str:
        head = chain.head
        return (
            f"{_sync_name(chain.sync)}'s query {row.partition} "
            f"{bound_text(setup, head.lower, head.upper)}"
        )

    missed = ("passed-early", "stopped", "above", "passed", "returned")
    before: tuple[Chain, str] | None = None
    for chain, kind, words in relations:
        if kind in missed:
            before = (chain, words)
        elif kind == "below" and before is not None:
            a, why_a = before
            return f"{row.id} fell between {name(a)} ({why_a}) and {name(chain)} ({words})"
    later = [c for c, kind, _ in relations if kind == "below"]
    if later:
        return f"{row.id} lies below every query that could have read it, from {name(later[0])} on"
    a, why_a = relations[-1][0], relations[-1][2]
    return f"{row.id} was missed by {name(a)} ({why_a})"


def failure_key(result: LateResult) -> tuple[str, str]:
    """What makes two failures the same bug: the rule, and for lost rows their first cause."""
    violation = result.first
    if violation is None:
        return ("", "")
    if violation.rule is Rule.NO_LOST_ROWS and result.delivery and result.delivery.lost:
        return (violation.rule.value, explain(result, result.delivery.lost[0].id).cause)
    return (violation.rule.value, "")
