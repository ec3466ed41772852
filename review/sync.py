"""Judging a sync tool's plan against a contract's ``[cursor]`` facts, with Z3 witnesses.

A sync tool keeps, as its state, the greatest cursor value it has read, and its next
run starts there (less a lag, if configured): ``docs/procedure.md``'s "the greatest
event observed is not a coverage boundary". Whether that loses rows depends on the
source: how late a row may commit behind a greater one, whether one read is one
snapshot, how fine stored values are against what a query can name, whether
partitions appear later holding old rows. Each rule here states, as Z3 constraints,
what the contract allows and what the tool's plan does (:class:`~fencepost.review.tools.SyncPlan`),
and asks for rows and commit times under which a row is never copied. A model is a
witness, told as a story in domain words (:class:`~fencepost.review.findings.SyncWitness`)
and re-checked by arithmetic; no model means Z3 proved the pair safe on that count.

What the facts mean (docs/conformance-protocol.md, "Level `sync`"): a row with cursor
value ``at`` commits at some time in ``[at, at + D]`` on the source's clock (no upper
end when ``D`` is unbounded or unknown); a run that starts at ``now`` reads its pages
at times ``>= now``, in cursor order, each page seeing the rows committed by the time
it is read (a row committing at the very instant its page is read is not on it); on a
snapshot source a run's one query sees everything at one instant. Queries name values
at multiples of the contract's query step (a tool's request format may be coarser).

The Z3 queries go through :func:`fencepost.review.witness._solve` (one home for their
bounds). Cost: a handful of small integer queries per rule.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

import z3

from fencepost.contracts import Contract, Delay, Encoding, MembershipChange, decode
from fencepost.inputs.tomllines import Path
from fencepost.review import witness as w
from fencepost.review.findings import Finding, Severity, SyncKind, SyncRow, SyncWitness, floor_to
from fencepost.review.tools import SECOND, SyncPlan


@dataclass(frozen=True)
class ToolRule:
    """A rule about a tool's configuration on a source: stable id, title, severity, why."""

    id: str
    title: str
    severity: Severity
    why: str


TOOL_RULES: tuple[ToolRule, ...] = (
    ToolRule(
        "tool-state-max-observed",
        "the state is the greatest value read, on a source with late commits",
        Severity.ERROR,
        "The next run starts at the greatest cursor value the tool has read. A row whose "
        "value is below it can still commit afterwards (a writer's transaction that ends "
        "late), and no run reads below the state again: the row is lost for good "
        "(docs/procedure.md: the greatest event observed is not a coverage boundary).",
    ),
    ToolRule(
        "tool-lag-short",
        "lag or lookback shorter than the commit delay",
        Severity.ERROR,
        "Starting the next run a lag below the greatest value read covers rows that commit "
        "up to that lag late. A row may commit up to the contract's max_delay late, so a "
        "shorter lag (or any lag, when the delay is unbounded or unknown; or an exclusive "
        "start exactly at the delay) still loses rows.",
    ),
    ToolRule(
        "tool-read-outlasts-lag",
        "a run reads rows newer than its start, so its own duration adds to the delay",
        Severity.ERROR,
        "A run that reads pages as it asks for them, with no upper bound, can read a row "
        "that committed after it started. The greatest value read is then ahead of the "
        "run's start by as long as the run lasted, and a lag of the commit delay no longer "
        "reaches back far enough. Bound the read by the run's start, or read one snapshot.",
    ),
    ToolRule(
        "tool-successor-manufactured",
        "slices end at a manufactured successor, finer values fall between them",
        Severity.ERROR,
        "A slice that ends at next start minus a granularity, with its bounds written at a "
        "coarser step than the stored values, leaves the values between one slice's upper "
        "bound and the next slice's lower bound in no slice (airbytehq/airbyte#20322). "
        "docs/procedure.md: do not manufacture an exclusive boundary by adding a small "
        "increment unless the source defines an exact successor.",
    ),
    ToolRule(
        "tool-partition-from-global",
        "a partition seen for the first time starts from the global state",
        Severity.ERROR,
        "One state for all partitions (or a per-partition cursor that starts a new partition "
        "from the global cursor) is a merge by max instead of min: a partition that appears "
        "later holding rows older than the others' state starts past them, and its state then "
        "claims coverage nobody read.",
    ),
    ToolRule(
        "tool-cost",
        "what a configuration costs: re-reads, duplicates, delay",
        Severity.NOTE,
        "Safe configurations pay: a lag re-reads its window every run (absorbed by merge, "
        "duplicated by append), an inclusive start re-reads the boundary rows, a full table "
        "reads everything, records committed before their state come again after a crash.",
    ),
    ToolRule(
        "tool-horizon-unused",
        "the source certifies a horizon the tool does not read",
        Severity.NOTE,
        "A certified horizon (every row before it has committed) is the boundary a run can "
        "safely stop at, with no lag at all; none of the tool's settings reads it.",
    ),
)

TOOL_RULES_BY_ID: dict[str, ToolRule] = {rule.id: rule for rule in TOOL_RULES}


# --- the source, as the sync rules read the contract ------------------------------------------


@dataclass(frozen=True)
class _Source:
    contract: Contract
    time: bool
    unit: int  # one second on a timestamp order, one unit otherwise
    delay: int | None  # None: unbounded or unknown
    delay_words: str
    stored: int
    query: int
    snapshot: bool
    partitions_appear: bool
    old_rows: bool  # true, or unknown (read as true)
    base: int

    def show(self, value: int) -> str:
        """A cursor value or a time on the source's clock, as people read it."""
        if not self.time:
            return str(value)
        seconds, nanos = divmod(value, SECOND)
        moment = datetime.fromtimestamp(seconds, tz=UTC)
        digits = 3 if nanos % 10**6 == 0 else 6 if nanos % 10**3 == 0 else 9
        fraction = f"{nanos:09d}"[:digits]
        return moment.strftime("%H:%M:%S") + "." + fraction

    def span(self, amount: int) -> str:
        """A length: ``10 s``, ``1.5 s``, ``412 ms`` (or units on an integer order)."""
        if not self.time:
            return f"{amount} unit{'s' if amount != 1 else ''}"
        for size, name in ((SECOND, "s"), (10**6, "ms"), (10**3, "us")):
            if amount % size == 0 or size == 10**3:
                value = amount / size
                return f"{value:g} {name}" if amount % size == 0 else f"{amount / SECOND:g} s"
        return f"{amount} ns"  # pragma: no cover - the loop always returns

    def day(self) -> str:
        if not self.time:
            return "cursor values and the source clock in the order's units"
        moment = datetime.fromtimestamp(self.base // SECOND, tz=UTC)
        return f"times are UTC, on {moment:%Y-%m-%d}"


def _source(contract: Contract) -> _Source:
    facts = contract.cursor
    time = contract.order_facts.encoding is Encoding.RFC3339
    unit = SECOND if time else 1
    late = facts.late_commits
    if late is None or late.delay is not Delay.BOUNDED:
        delay = None
        words = (
            "the contract does not say how late a row may commit (read as: any time later)"
            if late is None
            else f"rows may commit any time after their cursor value (max_delay = {late.shown})"
        )
    else:
        delay = late.max_delay
        words = f"a row commits at most {late.shown} after its cursor value"
    precision = facts.precision
    stored = precision.stored if precision is not None else 1
    query = precision.query if precision is not None else 1
    anchor = contract.order_facts.example
    base = 0
    if anchor is not None:
        value = decode(contract.order_facts.encoding, anchor, "order.example")
        base = value if isinstance(value, int) else 0
    if base <= 0:
        base = 1_704_067_200 * SECOND if time else 1000  # 2024-01-01T00:00:00Z, or 1000
    base = floor_to(base, 60 * unit)
    changes = contract.membership_facts.changes
    old = facts.new_partitions
    return _Source(
        contract=contract,
        time=time,
        unit=unit,
        delay=delay,
        delay_words=words,
        stored=stored,
        query=query,
        snapshot=facts.reads.snapshot if facts.reads is not None else False,
        partitions_appear=changes in (MembershipChange.ADD, MembershipChange.SPLIT_MERGE),
        old_rows=old is None or old.old_rows is not False,
        base=base,
    )


def _fact_line(src: _Source, key: str) -> tuple[Path, int]:
    path: Path = ("cursor", key)
    return path, src.contract.line_of(path)


def _finding(
    src: _Source,
    plan: SyncPlan,
    rule: str,
    severity: Severity,
    key: str | None,
    fact: str,
    explanation: str,
    witness: SyncWitness | None = None,
) -> Finding:
    if witness is not None and not witness.verify():
        raise AssertionError(f"rule {rule}: Z3 produced a witness that does not verify")
    _, line = _fact_line(src, fact)
    return Finding(
        rule=rule,
        severity=severity,
        title=TOOL_RULES_BY_ID[rule].title,
        provider=src.contract.provider.name,
        file=src.contract.origin,
        where=f"{plan.tool}.{key}" if key else plan.tool,
        line=line,
        explanation=explanation,
        witness=witness,
    )


def _step(src: _Source, plan: SyncPlan) -> int:
    """The step a request bound is written at: the tool's format, else the API's."""
    return max(plan.request_step or 1, src.query)


class _Linear:
    """Rounding and multiples as linear constraints over fresh integers (no div or mod terms,
    which keep the queries in linear integer arithmetic)."""

    def __init__(self) -> None:
        self.constraints: list[z3.BoolRef] = []
        self.count = 0

    def fresh(self) -> z3.ArithRef:
        self.count += 1
        return z3.Int(f"k{self.count}")

    def floor(self, value: z3.ArithRef, step: int) -> z3.ArithRef:
        """``value`` rounded down to a multiple of ``step``."""
        if step == 1:
            return value
        q = self.fresh()
        self.constraints += [q * step <= value, value < q * step + step]
        return q * step

    def multiple(self, value: z3.ArithRef, step: int) -> None:
        if step > 1:
            self.constraints.append(value == self.fresh() * step)


def _start_z3(lin: _Linear, plan: SyncPlan, value: z3.ArithRef, step: int) -> z3.ArithRef:
    shifted = value - plan.lag
    if plan.exact_lower:
        return shifted
    return lin.floor(shifted, step)


def _model(constraints: list[z3.BoolRef], prefs: list[list[z3.BoolRef]]) -> z3.ModelRef | None:
    """A model, the first preference that holds; the empty preference last always holds."""
    return w._solve(constraints, [*prefs, []])


def _below(plan: SyncPlan, at: z3.ArithRef, lower: z3.ArithRef) -> z3.BoolRef:
    return at < lower if plan.lower_inclusive else at <= lower


# --- rows that commit late --------------------------------------------------------------------


@dataclass(frozen=True)
class _Late:
    now: int
    read_r: int
    read_v: int
    at_v: int
    commit_v: int
    at_r: int
    commit_r: int
    lower: int
    cap: int | None


def _late_row(src: _Source, plan: SyncPlan, *, standstill: bool) -> _Late | None:
    """A row that commits behind a run's read, below where every later run starts.

    ``standstill``: the read sees the source as it was when the run started (the
    clock stands still while it reads); the loss then needs no long run.
    """
    names = ("now", "read_r", "read_v", "at_v", "commit_v", "at_r", "commit_r")
    now, read_r, read_v, at_v, commit_v, at_r, commit_r = z3.Ints(" ".join(names))
    step = _step(src, plan)
    lin = _Linear()
    lower = _start_z3(lin, plan, at_v, step)
    lin.multiple(at_r, src.stored)
    lin.multiple(at_v, src.stored)
    constraints: list[z3.BoolRef] = [
        at_v <= commit_v,
        commit_v <= read_v,
        at_r <= commit_r,
        now <= read_r,
        read_r <= read_v,
        at_r <= at_v,
        read_r <= commit_r,  # r is not on the page that passed its position
        now > src.base,
        _below(plan, at_r, lower),
    ]
    if src.delay is not None:
        constraints += [commit_r <= at_r + src.delay, commit_v <= at_v + src.delay]
    if standstill:
        constraints += [read_r == now, read_v == now]
    elif src.snapshot and plan.one_query:
        constraints.append(read_r == read_v)
    cap: z3.ArithRef | None = None
    if plan.cap != "none":
        cap = lin.floor(now - plan.cap_lag, step)
        constraints.append(at_v <= cap if plan.cap_inclusive else at_v < cap)
    constraints += lin.constraints
    u = src.unit
    start = src.base + 31 * u
    prefs: list[list[z3.BoolRef]] = []
    delay = src.delay if src.delay is not None else 10 * u
    still = standstill or (src.snapshot and plan.one_query)
    for gap in (5 * u, u, src.stored) if still else (u, 5 * u, src.stored):
        for late in (u, 0):
            if still:
                prefs.append(
                    [
                        now == start,
                        read_r == now,
                        read_v == now,
                        at_v == start - u,
                        commit_v == at_v,
                        at_r == lower - gap,
                        commit_r == now + late,
                    ]
                )
            else:
                prefs.append(
                    [
                        now == start,
                        read_r == now,
                        commit_r == now + late + u,
                        at_r == commit_r - delay,
                        at_v == at_r + plan.lag + gap,
                        commit_v == at_v,
                        read_v == commit_v,
                    ]
                )
    model = _model(constraints, prefs)
    if model is None:
        return None

    def val(term: z3.ArithRef) -> int:
        return int(model.eval(term, model_completion=True).as_long())

    return _Late(
        now=val(now),
        read_r=val(read_r),
        read_v=val(read_v),
        at_v=val(at_v),
        commit_v=val(commit_v),
        at_r=val(at_r),
        commit_r=val(commit_r),
        lower=val(lower),
        cap=val(cap) if cap is not None else None,
    )


def _state_words(src: _Source, plan: SyncPlan, at_v: int, lower: int) -> str:
    if plan.lag:
        return (
            f"{src.show(at_v)}; the next run starts at {src.show(at_v)} - {src.span(plan.lag)} "
            f"({plan.lag_key})"
        )
    return src.show(at_v)


def _late_witness(src: _Source, plan: SyncPlan, late: _Late) -> SyncWitness:
    step = _step(src, plan)
    sign = ">=" if plan.lower_inclusive else ">"
    rounding = (
        ""
        if plan.exact_lower or step == 1 or late.lower == late.at_v - plan.lag
        else f", rounded down to the {src.span(step)} a request can name"
    )
    cap_words = {
        "none": "with no upper bound",
        "start": f"up to its start ({src.show(late.cap or 0)})",
        "start-minus-lag": f"up to its start less {src.span(plan.cap_lag)} "
        f"({src.show(late.cap or 0)})",
    }[plan.cap]
    timed: list[tuple[int, int, str]] = [
        (late.now, 0, f"{src.show(late.now)}: run 1 starts and reads the partition {cap_words}"),
        (
            late.read_r,
            1,
            f"{src.show(late.read_r)}: run 1 reads past {src.show(late.at_r)}; row r "
            f"(cursor {src.show(late.at_r)}) has not committed yet",
        ),
        (
            late.read_v,
            2,
            f"{src.show(late.read_v)}: run 1 reads row v (cursor {src.show(late.at_v)}, "
            f"committed at {src.show(late.commit_v)}), the greatest value it reads; its state "
            f"becomes {_state_words(src, plan, late.at_v, late.lower)}",
        ),
        (
            late.commit_r,
            3,
            f"{src.show(late.commit_r)}: row r commits, "
            f"{src.span(late.commit_r - late.at_r)} after its cursor value"
            + (" (within the contract's bound)" if src.delay is not None else ""),
        ),
    ]
    story = [text for _, _, text in sorted(timed)]
    story.append(
        f"run 2 and every later run ask for {sign} {src.show(late.lower)}{rounding}: row r "
        f"({src.show(late.at_r)}) falls outside that and is never read"
    )
    values = {
        "now": late.now,
        "read_r": late.read_r,
        "read_v": late.read_v,
        "lower": late.lower,
        "lag": plan.lag,
        "step": step if not plan.exact_lower else 1,
    }
    if src.delay is not None:
        values["delay"] = src.delay
    if late.cap is not None:
        values["cap"] = late.cap
        values["cap_lag"] = plan.cap_lag
        values["cap_step"] = step
    facts = [src.day(), src.delay_words]
    if src.snapshot and plan.one_query:
        facts.append("one read sees one snapshot (cursor.reads)")
    elif late.read_v > late.now:
        facts.append("pages are read as they are asked for: rows commit while the run reads")
    return SyncWitness(
        kind=SyncKind.LATE_ROW,
        rows=(
            SyncRow("r", "p0", late.at_r, "commits late, below the state", late.commit_r),
            SyncRow("v", "p0", late.at_v, "the greatest value run 1 reads", late.commit_v),
        ),
        values=values,
        flags={
            "lower_inclusive": plan.lower_inclusive,
            "exact": plan.exact_lower or step == 1,
            "snapshot": src.snapshot and plan.one_query,
            "cap_inclusive": plan.cap_inclusive,
        },
        story=tuple(story),
        lost=("r",),
        explanation=(
            f"row r committed after run 1 had read past it, and every later run starts above "
            f"it: the destination never holds it, while {plan.tool}'s state claims everything "
            f"{'before' if plan.lower_inclusive else 'through'} {src.show(late.lower)} was "
            "copied."
        ),
        facts=tuple(facts),
    )


def _late_findings(src: _Source, plan: SyncPlan) -> list[Finding]:
    if plan.full_table:
        return []
    still = _late_row(src, plan, standstill=True)
    found = still or _late_row(src, plan, standstill=False)
    if found is None:
        return []
    witness = _late_witness(src, plan, found)
    fix = _fix_words(src, plan)
    if still is not None and not plan.lag:
        rule = "tool-state-max-observed"
        key = {"dlt": "lag", "singer": "replication_method", "airbyte": "lookback_window"}[
            plan.tool
        ]
        text = (
            f"{plan.tool} resumes from the greatest cursor value it has read "
            f"({_greatest_words(plan)}), and {src.delay_words}: a row below that value that "
            f"commits after it was read is never copied. {fix}"
        )
    elif still is not None:
        rule = "tool-lag-short"
        key = plan.lag_key or "lag"
        bound = src.span(src.delay) if src.delay is not None else "unbounded"
        exclusive = (
            " With an exclusive start, a row exactly at the window's start is lost too."
            if not plan.lower_inclusive and src.delay is not None and plan.lag >= src.delay
            else ""
        )
        text = (
            f"{plan.tool}'s {plan.lag_key} = {src.span(plan.lag)} starts the next run that far "
            f"below the greatest value read, but {src.delay_words} (delay {bound}).{exclusive} "
            f"{fix}"
        )
    else:
        rule = "tool-read-outlasts-lag"
        key = {"dlt": "upper_bound", "singer": "signpost_lag", "airbyte": "end_time_option"}[
            plan.tool
        ]
        fix = {
            "dlt": 'Add "upper_bound": "now": each run then reads only rows before its start.',
            "singer": f'Read only up to the run\'s start less the delay ({{"signpost_lag": '
            f"{plan.lag / src.unit:g}}}, tap code) instead of a lookback from the bookmark.",
            "airbyte": "Keep the slices' end at the run's start (no end_datetime).",
        }[plan.tool]
        text = (
            f"{plan.tool} reads pages as it asks for them, with no upper bound at the run's "
            f"start, so it can read rows that commit while it runs; the greatest value read "
            f"then runs ahead of the start and {plan.lag_key or 'the lag'} = "
            f"{src.span(plan.lag)} no longer reaches every row still to commit. {fix}"
        )
    return [_finding(src, plan, rule, Severity.ERROR, key, "late_commits", text, witness)]


def _greatest_words(plan: SyncPlan) -> str:
    return {
        "dlt": "last_value",
        "singer": "the bookmark, replication_key_value",
        "airbyte": "the state, most_recent_cursor_value",
    }[plan.tool]


def _fix_words(src: _Source, plan: SyncPlan) -> str:
    """What to configure instead, in the tool's own keys."""
    if src.delay is None:
        return (
            "No lag is enough while the delay is unbounded or unknown: bound it (state "
            "[cursor.late_commits] max_delay), read a certified horizon, or read everything "
            + ('(replication_method = "FULL_TABLE").' if plan.tool == "singer" else "every run.")
        )
    d = src.span(src.delay)
    seconds = f"{src.delay / src.unit:g}"
    return {
        "dlt": f'Configure {{"lag": {seconds}, "write_disposition": "merge"}} (lag >= {d}, '
        "range_start closed)"
        + ("" if src.snapshot else ', with "upper_bound": "now" on a source read page by page')
        + ".",
        "singer": f'Read only up to the run\'s start less {d} ({{"signpost_lag": {seconds}}}, '
        'tap code) or {"replication_method": "FULL_TABLE"}.',
        "airbyte": f'Configure {{"lookback_window": "PT{seconds}S"}} (>= {d}).',
    }[plan.tool]


# --- slices that end at a manufactured successor ----------------------------------------------


def _slice_findings(src: _Source, plan: SyncPlan) -> list[Finding]:
    slices = plan.slices
    if slices is None or plan.full_table:
        return []
    qr = _step(src, plan)
    boundary, at, state = z3.Ints("boundary at state")
    lin = _Linear()
    upper = lin.floor(boundary - slices.granularity, qr)
    lower = lin.floor(boundary, qr)
    later = _start_z3(lin, plan, state, qr)
    for value in (boundary, at, state):
        lin.multiple(value, src.stored)
    constraints: list[z3.BoolRef] = [
        *lin.constraints,
        boundary > src.base,
        at > upper if plan.cap_inclusive else at >= upper,
        _below(plan, at, lower),
        state >= boundary + slices.step,  # a row read in a later slice moves the state past r
        _below(plan, at, later),
    ]
    u = src.unit
    b = src.base + 10 * u
    prefs = [
        [boundary == b, at == b - slices.granularity + off, state == b + slices.step]
        for off in (412 * 10**6 if src.time else u // 2, slices.granularity // 2, src.stored)
        if off > 0
    ]
    model = _model(constraints, prefs)
    if model is None:
        return []

    def val(term: z3.ArithRef) -> int:
        return int(model.eval(term, model_completion=True).as_long())

    s, r, v, up, lo = val(boundary), val(at), val(state), val(upper), val(lower)
    fmt = plan.config.get("datetime_format")
    written = f"written with {fmt}" if isinstance(fmt, str) else "written in the API's step"
    lte = "cursor[lte]" if plan.cap_inclusive else "cursor[lt]"
    gte = "cursor[gte]" if plan.lower_inclusive else "cursor[gt]"
    story = (
        f"a slice ends at {src.show(s)} - {src.span(slices.granularity)} "
        f"({slices.granularity_key}) and asks {lte}={src.show(up)} ({written}, "
        f"step {src.span(qr)})",
        f"the next slice starts at {src.show(s)} and asks {gte}={src.show(lo)}",
        f"row r, stored at {src.show(r)}, is after {src.show(up)} and before {src.show(lo)}: "
        "no slice asks for it",
        f"a later slice reads row v at {src.show(v)}; every later run starts at "
        f"{src.show(floor_to(v - plan.lag, qr))} or above, past r",
    )
    precision = src.contract.cursor.precision
    stored_words = (
        f"stored values step {precision.stored_shown}, a query names {precision.query_shown} "
        "(cursor.precision)"
        if precision is not None
        else "the contract does not state the stored precision (read as: as fine as the order)"
    )
    witness = SyncWitness(
        kind=SyncKind.SLICE_GAP,
        rows=(
            SyncRow("r", "p0", r, "between two slices"),
            SyncRow("v", "p0", v, "read by a later slice"),
        ),
        values={
            "boundary": s,
            "granularity": slices.granularity,
            "request_step": qr,
            "upper": up,
            "lower": lo,
            "stored_step": src.stored,
            "state": v,
            "lag": plan.lag,
        },
        flags={
            "upper_inclusive": plan.cap_inclusive,
            "lower_inclusive": plan.lower_inclusive,
            "exact": plan.exact_lower or qr == 1,
        },
        story=story,
        lost=("r",),
        explanation=(
            "the slice's end is a successor manufactured from the next start; the source "
            "stores values between the two bounds, so the row is in no slice of this run, and "
            "the state moves past it."
        ),
        facts=(src.day(), stored_words),
    )
    text = (
        f"airbyte ends each slice {src.span(slices.granularity)} before the next one starts "
        f"({slices.granularity_key}), and writes the bounds at a step of {src.span(qr)}; the "
        f"source stores values at a step of {src.span(src.stored)}, so values between two "
        "slices are never requested. Remove cursor_granularity (and step), or set it to the "
        "stored precision with a request format that names it."
    )
    return [
        _finding(
            src,
            plan,
            "tool-successor-manufactured",
            Severity.ERROR,
            "cursor_granularity",
            "precision",
            text,
            witness,
        )
    ]


# --- partitions that appear later -------------------------------------------------------------


def _partition_findings(src: _Source, plan: SyncPlan) -> list[Finding]:
    if plan.full_table or plan.new_partition_start == "beginning" or not src.partitions_appear:
        return []
    if not src.old_rows:
        return []  # its rows then commit under the late-commit bound: the late-row rules
    qr = _step(src, plan)
    top, old = z3.Ints("top old")
    lin = _Linear()
    lower = _start_z3(lin, plan, top, qr)
    lin.multiple(top, src.stored)
    lin.multiple(old, src.stored)
    constraints: list[z3.BoolRef] = [
        *lin.constraints,
        top > src.base,
        _below(plan, old, lower),
    ]
    u = src.unit
    prefs = [[top == src.base + 28 * u, old == src.base + o * u] for o in (3, 0)]
    model = _model(constraints, prefs)
    if model is None:
        return []
    g = int(model.eval(top, model_completion=True).as_long())
    b = int(model.eval(old, model_completion=True).as_long())
    lo = int(model.eval(lower, model_completion=True).as_long())
    sign = ">=" if plan.lower_inclusive else ">"
    how = {
        "dlt": 'one resource reads every partition under one cursor ("resources": "single")',
        "singer": "one bookmark for the stream "
        + (
            '("partitions": false)'
            if plan.state_key == "partitions"
            else '("state_partitioning_keys": [])'
        ),
        "airbyte": (
            'one global state ("global_substream_cursor": true)'
            if plan.state == "global"
            else "ConcurrentPerPartitionCursor starts a partition it has not seen from the "
            "global cursor, the greatest value over the other partitions"
        ),
    }[plan.tool]
    story = (
        f"run 1 reads partition A up to row v ({src.show(g)}); the state it keeps for new "
        f"partitions becomes {src.show(g)}"
        + (f" (less {src.span(plan.lag)}, {plan.lag_key})" if plan.lag else ""),
        f"partition B appears, holding row b at {src.show(b)}, older than anything read in A",
        f"run 2 reads B {sign} {src.show(lo)}: row b is below it and is never read; B's own "
        "state then claims everything before its greatest value, b included",
    )
    new = src.contract.cursor.new_partitions
    old_words = (
        "a partition that appears later may hold older rows (cursor.new_partitions)"
        if new is not None and new.old_rows
        else "the contract does not rule out a later partition holding older rows (read as: it may)"
    )
    witness = SyncWitness(
        kind=SyncKind.NEW_PARTITION,
        rows=(
            SyncRow("b", "B", b, "an old row of a partition that appears later"),
            SyncRow("v", "A", g, "the greatest value read before B appears"),
        ),
        values={"lower": lo, "lag": plan.lag, "step": qr},
        flags={"lower_inclusive": plan.lower_inclusive, "exact": plan.exact_lower or qr == 1},
        story=story,
        lost=("b",),
        explanation=(
            "the new partition started from the other partitions' state, a merge by max "
            "instead of min: its older rows are skipped for good."
        ),
        facts=(src.day(), old_words),
    )
    fix = {
        "dlt": 'Give each partition its own resource ("resources": "per_partition").',
        "singer": "Keep one bookmark per partition (the default partitions and "
        "state_partitioning_keys).",
        "airbyte": "No setting of the per-partition cursor starts a new partition from its "
        "beginning; read a partition seen for the first time in full (tap code), or read the "
        "partitions as separate streams.",
    }[plan.tool]
    key = plan.state_key or "partitions"
    text = f"{how}, and {old_words}. {fix}"
    return [
        _finding(
            src,
            plan,
            "tool-partition-from-global",
            Severity.ERROR,
            key,
            "new_partitions",
            text,
            witness,
        )
    ]


# --- notes ------------------------------------------------------------------------------------


def _cost(src: _Source, plan: SyncPlan) -> list[Finding]:
    step = _step(src, plan)
    parts: list[str] = []
    merge = plan.mode == "merge"
    landing = (
        "absorbed by the merge on the row id (re-reads, no duplicates)"
        if merge
        else "each one copied again into the append-only destination (duplicates)"
    )
    if plan.full_table:
        parts.append(f"every run reads every row of the source, {landing}")
    else:
        if plan.lag:
            parts.append(
                f"every run reads again the rows of the {src.span(plan.lag)} below the greatest "
                f"value read ({plan.lag_key}), {landing}"
            )
        if plan.lower_inclusive and not plan.boundary_dedupe and not plan.lag:
            at = "the rows at the state's value"
            if not plan.exact_lower and step > src.stored:
                at += f" and the rest of its {src.span(step)} (the start is rounded down)"
            parts.append(f"{at} come again every run, {landing}")
        if plan.boundary_dedupe:
            parts.append(
                "the rows at last_value are skipped by hash on the next run (unique_hashes), "
                "not read twice"
            )
        if plan.cap != "none":
            lag = f" less {src.span(plan.cap_lag)}" if plan.cap_lag else ""
            parts.append(f"rows newer than a run's start{lag} wait for the next run")
    if not plan.atomic:
        parts.append(
            "records are committed before the state that covers them, so a run that fails "
            "between the two delivers them again (at-least-once)"
        )
    mutable = src.contract.cursor.mutability
    if not merge and (mutable is None or mutable.mutable is not False):
        parts.append("every update of a row adds another copy of it (the destination appends)")
    if not parts:
        return []
    text = "Cost of this configuration: " + "; ".join(parts) + "."
    return [_finding(src, plan, "tool-cost", Severity.NOTE, None, "cursor", text)]


def _horizon_note(src: _Source, plan: SyncPlan) -> list[Finding]:
    horizon = src.contract.cursor.horizon
    if horizon is None:
        return []
    text = (
        f"The source certifies a horizon ({horizon.boundary}: every row before it has "
        f"committed). A run that reads only below it needs no lag and loses nothing to late "
        f"commits; no setting of {plan.tool} reads it (it would be resource or tap code)."
    )
    return [_finding(src, plan, "tool-horizon-unused", Severity.NOTE, None, "horizon", text)]


def tool_findings(contract: Contract, plan: SyncPlan) -> list[Finding]:
    """Every finding about ``plan`` on ``contract``'s source (errors carry witnesses)."""
    src = _source(contract)
    out: list[Finding] = []
    out += _late_findings(src, plan)
    out += _slice_findings(src, plan)
    out += _partition_findings(src, plan)
    out += _cost(src, plan)
    out += _horizon_note(src, plan)
    return out
