"""The search in the world of late commits: scripted stories, their deviations, random worlds.

``fencepost conform --world late-commits`` runs, in phases (each stops at its
first failure, as in the frontier world):

1. **error handling**: a line that is not JSON and a ``sync`` request with a
   bad field must each be answered with an ``error``;
2. one **exhaustive** phase per scripted story of :data:`STORIES`: the story
   once, then with every single inserted step (``depth`` 1 by default) at
   every point it can matter: the clock moving on (a row commits, a
   partition appears) before a page is read, a partition listed or a sync
   starts; a commit's response lost (applied or not); the tool crashing with
   a commit pending; a page's response lost;
3. **random worlds**: ``schedules`` seeded worlds (rows, shared values, late
   commits within D, partitions appearing mid-run, page sizes) with a
   schedule drawn step by step.

Every case is named by one integer seed (negative: a story and its
insertions; non-negative: a random world), and the seed alone reproduces it
with the same world options. A failure is shrunk (:func:`shrink_late`): the
schedule by delta debugging, then the world by removing rows, each candidate
counted only if it fails with the same key (rule, and for lost rows why they
were lost: :func:`fencepost.harness.late_story.failure_key`). The report keeps
**one finding per bug**: a key found again in a later phase is counted there,
not reported twice.

Every world the search builds, inserts into or shrinks is a
:class:`~fencepost.harness.late_world.LateSetup`, which cannot break the declared
bound D; the world's visibility is a function of its clock
(``tests/harness/late/test_faithful.py`` checks both on generated, inserted and
shrunk runs).

The stories, the random worlds and the options live in
:mod:`fencepost.harness.late_stories`. Cost: one run per case (story runs
observe their insertion points as they go);
shrinking at most ``shrink_runs`` runs per new finding.
"""

from __future__ import annotations

import dataclasses
import random
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from fencepost.harness.conformance import (
    PROBES_PHASE,
    Phase,
    _Counted,
    greet,
    greet_keeping,
    never_greeted,
)
from fencepost.harness.late_power import PowerTable, caught
from fencepost.harness.late_runner import WORKER, LateResult, LateRun, run_late
from fencepost.harness.late_stories import (
    DEFAULT_OPTIONS,
    STORIES,
    LateOptions,
    random_setup,
    selected_stories,
)
from fencepost.harness.late_story import LostStory, explain, failure_key
from fencepost.harness.late_world import (
    Answer,
    Crash,
    LateAction,
    LateSetup,
    Sync,
    Tick,
    TickTo,
)
from fencepost.harness.pool import SutPool
from fencepost.harness.protocol import SYNC_LEVEL, HelloOk
from fencepost.harness.results import TranscriptLine
from fencepost.harness.rules import HarnessError, Rule, SutFailure, Violation
from fencepost.harness.session import LineSession
from fencepost.harness.shrink import ddmin
from fencepost.harness.transport import SutFactory
from fencepost.inputs.jsonlines import encode

#: Called as progress(phase, done, total) while a phase runs (total None if unknown).
Progress = Callable[[str, int, int | None], None]


def _quiet(phase: str, done: int, total: int | None) -> None:
    """The default progress callback: report nothing."""


# --- seeds ---------------------------------------------------------------------------------

_DIGIT = 1 << 20
_SLOTS = 32


class SeedError(ValueError):
    """A seed that names no case of this world (a usage error: exit 2, not fencepost's)."""


@dataclass(frozen=True, slots=True)
class LateCase:
    """A story (by index) plus inserted steps: ``(point, choice)`` pairs, applied in order,
    each choosing among the steps possible at that point of the schedule so far."""

    story: int
    insertions: tuple[tuple[int, int], ...] = ()

    @property
    def seed(self) -> int:
        code = 0
        for point, choice in self.insertions:
            if not (0 <= point < 1024 and 0 <= choice < 1023):
                raise SeedError("an insertion is outside the encodable bounds")
            code = code * _DIGIT + (point * 1024 + choice + 1)
        return -(1 + self.story + _SLOTS * code)

    @staticmethod
    def from_seed(seed: int) -> LateCase:
        if seed >= 0:
            raise SeedError("story cases have negative seeds")
        code = -seed - 1
        index = code % _SLOTS
        if index >= len(STORIES):
            raise SeedError(
                f"seed {seed} names story #{index}; there are {len(STORIES)} stories "
                "(seeds below 0 come from a report of this world)"
            )
        code //= _SLOTS
        digits: list[int] = []
        while code:
            digits.append(code % _DIGIT)
            code //= _DIGIT
        return LateCase(index, tuple(((d - 1) // 1024, (d - 1) % 1024) for d in reversed(digits)))


def kind_of(seed: int) -> str:
    """The run kind a seed names: its story, or ``random``."""
    return "random" if seed >= 0 else STORIES[LateCase.from_seed(seed).story].name


def describe_seed(seed: int) -> str:
    if seed >= 0:
        return "a random world and schedule"
    case = LateCase.from_seed(seed)
    return f"story {STORIES[case.story].name} with {len(case.insertions)} inserted step(s)"


# --- the exhaustive search --------------------------------------------------------------------


@dataclass(frozen=True)
class Point:
    """Just before step ``position`` of a schedule, ``sub`` answers into it (a
    :class:`Finish` or :class:`Upto` answers several calls): what may be inserted."""

    position: int
    sub: int
    choices: tuple[LateAction, ...]


def insertions_at(run: LateRun, following: LateAction | None) -> list[LateAction]:
    """The steps inserted at this point, in a fixed order.

    The clock moves on only where the next event changes what the pending call
    reads: before a page of a partition where a row commits (or the partition
    appears) at the next event (before every page when the source certifies a
    horizon, which moves with the clock), before ``list_partitions`` when a
    partition appears next, and before a sync starts. Moving it anywhere else gives the
    tool the same answers as moving it right before the next such call, which
    is a point of its own. Every commit may lose its response (applied or not)
    or see the tool crash; the first page of each sync, and every
    ``read_state`` and ``list_partitions``, may lose its response (later pages'
    lost responses are left to the random worlds).
    """
    op = run.pending_op
    world = run.world
    upcoming = world.next_event()
    out: list[LateAction] = []
    if op == "query":
        assert run.pending is not None
        payload = run.pending.payload
        partition = getattr(payload, "partition", None)
        if upcoming is not None and (
            world.setup.horizon  # every page's horizon moves with the clock
            or any(
                r.partition == partition and world.setup.visible_from(r) == upcoming
                for r in world.setup.rows
            )
        ):
            out.append(Tick())
        current = run.current
        if current is not None and current.per_op.get("query", 0) == 1:
            out.append(Answer("lost"))
    elif op == "list_partitions":
        if upcoming is not None and any(p.appears == upcoming for p in world.setup.partitions):
            out.append(Tick())
        out.append(Answer("lost"))
    elif op == "read_state":
        out.append(Answer("lost"))
    elif op == "commit":
        out += [Answer("lost"), Answer("applied_lost"), Crash()]
    elif op is None and upcoming is not None and isinstance(following, Sync):
        out.append(Tick())
    return [a for a in out if a != following]


def observe(
    factory: SutFactory, setup: LateSetup, schedule: Sequence[LateAction], *, timeout: float
) -> tuple[LateResult, list[Point]]:
    """Run ``schedule`` to its verdict, listing every insertion point on the way."""
    points: list[Point] = []
    with LateRun(factory, setup, timeout=timeout) as run:
        run.start()
        for i, action in enumerate(schedule):
            if run.stopped:
                break
            points.append(Point(i, 0, tuple(insertions_at(run, action))))

            def inside(j: int, i: int = i) -> None:
                points.append(Point(i, j, tuple(insertions_at(run, None))))

            run.before_answer = inside
            run.execute(action)
            run.before_answer = None
        if not run.stopped:
            points.append(Point(len(schedule), 0, tuple(insertions_at(run, None))))
        run.complete()
    return run.finish(), [p for p in points if p.choices]


def insert(schedule: Sequence[LateAction], point: Point, action: LateAction) -> list[LateAction]:
    """``schedule`` with ``action`` inserted at ``point`` (splitting a multi-answer step)."""
    head = list(schedule[: point.position])
    return [*head, *[Answer("ok")] * point.sub, action, *schedule[point.position :]]


def story_schedule(
    factory: SutFactory, case: LateCase, options: LateOptions
) -> tuple[LateSetup, tuple[LateAction, ...]]:
    """The world and schedule of story case ``case`` (each insertion needs the run before it)."""
    story = STORIES[case.story]
    if not story.fits(options):
        raise SeedError(
            f"the seed names story {story.name}, which needs several partitions; it does not "
            "run under --partitions one (a seed replays with the world options it was found with)"
        )
    setup, base = story.build(options)
    schedule = list(base)
    for index, choice in case.insertions:
        _, points = observe(factory, setup, schedule, timeout=options.timeout)
        if index >= len(points) or choice >= len(points[index].choices):
            raise SeedError(
                f"the seed names step {choice} inserted at point {index} of story "
                f"{STORIES[case.story].name}, which this tool's run does not have (a seed "
                "replays with the tool and the world options it was found with)"
            )
        point = points[index]
        schedule = insert(schedule, point, point.choices[choice])
    return setup, tuple(schedule)


def exhaustive(
    factory: SutFactory, story: int, options: LateOptions
) -> Iterator[tuple[LateCase, LateResult]]:
    """The story, then every schedule with up to ``depth`` inserted steps, each run once.

    Insertions are made at non-decreasing points, so each combination is run
    once; the search stops below a failing schedule.
    """
    setup, base = STORIES[story].build(options)
    stack: list[tuple[LateCase, tuple[LateAction, ...], int]] = [(LateCase(story), base, 0)]
    while stack:
        case, schedule, lowest = stack.pop()
        try:
            result, points = observe(factory, setup, schedule, timeout=options.timeout)
        except (HarnessError, KeyboardInterrupt):
            raise
        except Exception as exc:  # a bug of the harness, never a verdict on the SUT
            raise HarnessError(f"the story {STORIES[story].name}", case.seed, exc) from exc
        yield case, result
        if len(case.insertions) >= options.depth or not result.ok:
            continue
        children = []
        for index, point in enumerate(points):
            if point.position < lowest:
                continue
            for choice, action in enumerate(point.choices):
                child = insert(schedule, point, action)
                children.append(
                    (
                        LateCase(story, (*case.insertions, (index, choice))),
                        tuple(child),
                        point.position + point.sub + 1,
                    )
                )
        stack.extend(reversed(children))


#: Lost responses per sync and crashes per run in a random schedule.
RANDOM_LOSSES = 2
RANDOM_CRASHES = 1
#: The most steps a random schedule takes.
RANDOM_STEPS = 300


def run_random(factory: SutFactory, seed: int, options: LateOptions) -> LateResult:
    """A random world and a schedule drawn step by step against the tool (see the module
    docstring); the same seed draws the same world and, for a deterministic tool, the same
    schedule."""
    rng = random.Random(seed)
    setup = random_setup(rng, options)
    g = setup.granularity
    target = rng.randint(2, 4)
    with LateRun(factory, setup, timeout=options.timeout) as run:
        run.start()
        started = losses = 0
        for _ in range(RANDOM_STEPS):
            if run.stopped or (started >= target and not run.busy):
                break
            upcoming = run.world.next_event() is not None
            choices: list[tuple[LateAction, float]] = []
            op = run.pending_op
            if op is None:
                choices.append((Sync(), 4.0))
                if upcoming:
                    choices.append((Tick(), 2.0))
                step = max(g, rng.randint(1, max(1, setup.max_commit_delay)))
                choices.append((TickTo(run.world.clock + step), 1.0))
            else:
                choices.append((Answer("ok"), 10.0))
                if losses < RANDOM_LOSSES:
                    choices.append((Answer("lost"), 0.7))
                    if op == "commit":
                        choices.append((Answer("applied_lost"), 0.7))
                if upcoming:
                    choices.append((Tick(), 2.0))
                if run.crashes < RANDOM_CRASHES and op in ("commit", "query"):
                    choices.append((Crash(), 0.4))
            action = rng.choices([a for a, _ in choices], [w for _, w in choices])[0]
            if isinstance(action, Sync):
                started += 1
                losses = 0
            if isinstance(action, Answer) and action.mode != "ok":
                losses += 1
            run.execute(action)
        run.complete()
    return run.finish()


def run_case(factory: SutFactory, seed: int, options: LateOptions) -> LateResult:
    """Run the case named by ``seed`` once (no shrinking)."""
    if seed >= 0:
        return run_random(factory, seed, options)
    setup, schedule = story_schedule(factory, LateCase.from_seed(seed), options)
    return run_late(factory, setup, schedule, timeout=options.timeout)


# --- shrinking -----------------------------------------------------------------------------


@dataclass(frozen=True)
class LateShrunk:
    """The shortest failing run found: its world, schedule and run, and the runs it took."""

    setup: LateSetup
    actions: tuple[LateAction, ...]
    result: LateResult
    runs: int


def shrink_late(factory: SutFactory, result: LateResult, options: LateOptions) -> LateShrunk:
    """The schedule by delta debugging, then the world one row at a time, then the schedule
    again; a candidate counts when it fails with the same :func:`failure_key`."""
    key = failure_key(result)
    deadline = time.monotonic() + options.shrink_seconds
    runs = 0
    setup = result.setup
    best = result

    def spent() -> bool:
        return runs >= options.shrink_runs or time.monotonic() > deadline

    def attempt_in(
        world: LateSetup,
    ) -> Callable[[list[LateAction]], tuple[list[LateAction], LateResult] | None]:
        def attempt(candidate: list[LateAction]) -> tuple[list[LateAction], LateResult] | None:
            nonlocal runs
            runs += 1
            run = run_late(factory, world, candidate, timeout=options.timeout)
            if failure_key(run) == key:
                return list(run.executed), run
            return None

        return attempt

    actions, found = ddmin(result.executed, attempt_in(setup), spent)
    if found is not None:
        best = found
    for row in sorted(setup.rows, key=lambda r: (-r.at, r.id)):
        if spent():
            break
        smaller = setup.without([row.id])
        if not smaller.rows:
            continue
        outcome = attempt_in(smaller)(list(actions))
        if outcome is not None:
            setup, (actions, best) = smaller, outcome
    actions, found = ddmin(actions, attempt_in(setup), spent)
    if found is not None:
        best = found
    return LateShrunk(setup, tuple(actions), best, runs)


# --- the whole search ----------------------------------------------------------------------


@dataclass(frozen=True)
class LateFinding:
    """One bug: its shortest run, where it was first found, and where it showed again."""

    key: tuple[str, str]
    seed: int | None
    phase: str
    result: LateResult
    original_steps: int = 0
    shrink_runs: int = 0
    also: tuple[str, ...] = ()

    @property
    def violation(self) -> Violation:
        found = self.result.first
        assert found is not None
        return found

    @property
    def actions(self) -> tuple[LateAction, ...]:
        return self.result.executed

    def stories(self) -> tuple[LostStory, ...]:
        """Every lost row of the shortest run, explained."""
        delivered = self.result.delivery
        if delivered is None:
            return ()
        return tuple(explain(self.result, r.id) for r in delivered.lost)


@dataclass(frozen=True)
class RunTotals:
    """What every run of the search came to, summed (rows lost and duplicated, syncs)."""

    runs: int = 0
    syncs: int = 0
    runs_losing: int = 0
    most_lost: int = 0
    runs_duplicating: int = 0
    most_duplicated: int = 0
    absorbed: int = 0


@dataclass(frozen=True)
class LateReport:
    """Everything ``fencepost conform --world late-commits`` reports."""

    sut: str
    sut_name: str
    options: LateOptions
    declared: tuple[str, ...]
    delivery: str
    phases: tuple[Phase, ...]
    findings: tuple[LateFinding, ...]
    seconds: float
    totals: RunTotals
    power: PowerTable
    problem: str | None = None
    processes: int = 0
    reused: int = 0
    notes: tuple[str, ...] = ()
    #: A failure outside any run (handshake, error handling, kept processes).
    handshake: tuple[tuple[Violation, tuple[TranscriptLine, ...]], ...] = ()
    #: False when no process of the tool answered ``hello`` with ``hello_ok``: nothing was
    #: tested (``fencepost conform`` exits 2 naming the cause, no verdict).
    started: bool = True
    #: Whether this was a search, not a replay of one case: only a search is expected to
    #: give every plausible wrong answer a run that would catch it.
    searched: bool = True

    @property
    def ok(self) -> bool:
        return not self.findings and not self.handshake and self.problem is None

    @property
    def runs(self) -> int:
        return sum(p.runs for p in self.phases)

    @property
    def messages(self) -> int:
        return sum(p.messages for p in self.phases)


class _Search:
    """Runs phases one after the other, keeping figures, findings and the power table."""

    def __init__(self, factory: SutFactory, options: LateOptions, progress: Progress) -> None:
        self.factory = factory
        self.options = options
        self.progress = progress
        self.phases: list[Phase] = []
        self.findings: list[LateFinding] = []
        self.power = PowerTable.empty()
        self.totals = RunTotals()

    @property
    def stop(self) -> bool:
        return self.options.fail_fast and bool(self.findings)

    def count(self, kind: str, result: LateResult) -> None:
        self.power.add(kind, caught(result))
        t = self.totals
        lost = len(result.delivery.lost) if result.delivery else 0
        dup = len(result.delivery.duplicated) if result.delivery else 0
        self.totals = RunTotals(
            t.runs + 1,
            t.syncs + len(result.syncs),
            t.runs_losing + (1 if lost else 0),
            max(t.most_lost, lost),
            t.runs_duplicating + (1 if dup else 0),
            max(t.most_duplicated, dup),
            t.absorbed + (result.delivery.absorbed if result.delivery else 0),
        )

    def found(self, phase: str, seed: int, result: LateResult) -> None:
        key = failure_key(result)
        for i, known in enumerate(self.findings):
            if known.key == key:
                self.findings[i] = dataclasses.replace(known, also=(*known.also, phase))
                return
        shrunk = shrink_late(self.factory, result, self.options)
        self.findings.append(
            LateFinding(
                key,
                seed,
                phase,
                shrunk.result,
                len(result.executed),
                shrunk.runs,
            )
        )

    def _ended(self, name: str, runs: int, messages: int, started: float, failed: bool) -> None:
        self.phases.append(Phase(name, runs, messages, time.monotonic() - started, failed))

    def probes(self) -> tuple[Violation, tuple[TranscriptLine, ...]] | None:
        started = time.monotonic()
        self.progress(PROBES_PHASE, 0, 1)
        violation, lines, messages = run_sync_probes(self.factory, self.options.timeout)
        self.progress(PROBES_PHASE, 1, 1)
        self._ended(PROBES_PHASE, 1, messages, started, violation is not None)
        return None if violation is None else (violation, lines)

    def story(self, index: int) -> None:
        name = story_phase(STORIES[index].name, self.options.depth)
        started = time.monotonic()
        runs = messages = 0
        for case, result in exhaustive(self.factory, index, self.options):
            runs += 1
            messages += result.messages
            self.count(STORIES[index].name, result)
            self.progress(name, runs, None)
            if not result.ok:
                self.found(name, case.seed, result)
                self._ended(name, runs, messages, started, True)
                return
        self._ended(name, runs, messages, started, False)

    def random(self, seeds: Sequence[int]) -> None:
        name = RANDOM_PHASE
        started = time.monotonic()
        messages = 0
        for i, seed in enumerate(seeds):
            self.progress(name, i, len(seeds))
            try:
                result = run_random(self.factory, seed, self.options)
            except (HarnessError, KeyboardInterrupt):
                raise
            except Exception as exc:  # a bug of the harness, never a verdict on the SUT
                raise HarnessError(f"phase {name}", seed, exc) from exc
            messages += result.messages
            self.count("random", result)
            if not result.ok:
                self.progress(name, i + 1, len(seeds))
                self.found(name, seed, result)
                self._ended(name, i + 1, messages, started, True)
                return
        self.progress(name, len(seeds), len(seeds))
        self._ended(name, len(seeds), messages, started, False)


#: The name of the random phase.
RANDOM_PHASE = "random worlds"


def story_phase(story: str, depth: int) -> str:
    """The name of the phase that runs the story ``story`` exhaustively."""
    return f"{story} exhaustive (depth {depth})"


def run_sync_probes(
    factory: SutFactory, timeout: float
) -> tuple[Violation | None, tuple[TranscriptLine, ...], int]:
    """A line that is not JSON, then a ``sync`` request whose ``now`` is a string: each must
    be answered with an ``error`` (the second carrying the request's id), and the tool keep
    running. The session is the tool's worker's (a kept process, reset afterwards, serves
    the runs that follow)."""
    session = LineSession(factory, timeout, WORKER, require=SYNC_LEVEL)
    violation = None
    clean = False
    try:
        session.open()
        session.send("this is not json")
        session.expect_error(None, "a line that is not JSON")
        bad = {
            "type": "sync",
            "id": 1,
            "worker": "probe",
            "now": "soon",
            "source": {
                "stream": "orders",
                "cursor": "updated_at",
                "cursor_type": "timestamp",
                "granularity": 1000,
                "max_commit_delay": 10000,
                "partitioned": False,
                "horizon": False,
                "reads": "live",
                "earliest": 1_704_110_400_000,
            },
        }
        session.send(encode(bad))
        session.expect_error(1, "a sync request whose now is a string")
        clean = True
    except SutFailure as failure:
        violation = Violation(failure.rule, failure.message, 0, failure.worker or "probe")
    problem = session.close(clean)
    if violation is None and problem is not None:
        violation = problem
    return violation, tuple(session.lines), session.messages


def late_conform(
    factory: SutFactory, options: LateOptions = DEFAULT_OPTIONS, progress: Progress = _quiet
) -> LateReport:
    """Test the sync tool ``factory`` starts, every phase (see the module docstring)."""
    started = time.monotonic()
    counted = _Counted(factory)

    def reusable(hello: HelloOk) -> bool:
        return "reset" in hello.capabilities and options.reuse and SYNC_LEVEL in hello.levels

    hello, broken, greeted = greet_keeping(counted, options.timeout, reusable)
    declared = hello.levels if hello is not None else ()
    pool: SutPool | None = None
    used: SutFactory = counted
    if hello is not None and reusable(hello):
        pool = SutPool(counted, options.timeout)
        pool.hello = hello
        pool.recycle = options.recycle
        if greeted is not None:
            pool.keep(greeted, WORKER)  # the greeting's process serves the first run
        used = pool
    search = _Search(used, options, progress)
    handshake: list[tuple[Violation, tuple[TranscriptLine, ...]]] = []
    problem = None
    if broken is not None:
        handshake.append((broken.violation, broken.transcript))
    elif SYNC_LEVEL not in declared:
        problem = (
            f"the SUT implements {', '.join(declared) or 'no level'}; the late-commit world "
            f"tests only level {SYNC_LEVEL}"
        )
    else:
        probe = search.probes()
        if probe is not None:
            handshake.append(probe)
        for index in selected_stories(options):
            if search.stop or options.depth < 0:
                break
            search.story(index)
        if options.schedules > 0 and not search.stop:
            rng = random.Random(options.seed)
            search.random([rng.getrandbits(40) for _ in range(options.schedules)])
    findings = search.findings
    if pool is not None:
        pool.close()
        for p in pool.problems:
            handshake.append((Violation(p.rule, p.message, None, p.worker), ()))
        findings = [_confirm_fresh(counted, f, options) for f in findings]
    return LateReport(
        sut=factory.description,
        sut_name=hello.name if hello is not None else "",
        options=options,
        declared=declared,
        delivery=hello.delivery if isinstance(hello, HelloOk) else "at-least-once",
        phases=tuple(search.phases),
        findings=tuple(findings),
        seconds=time.monotonic() - started,
        totals=search.totals,
        power=search.power,
        problem=problem,
        processes=counted.started,
        reused=pool.reused if pool is not None else 0,
        handshake=tuple(handshake),
        started=not never_greeted(broken),
    )


def _confirm_fresh(factory: SutFactory, finding: LateFinding, options: LateOptions) -> LateFinding:
    """Replay a finding of reused processes on fresh ones; one that does not come back is a
    ``reset`` violation (the process kept something a reset should have cleared)."""
    again = run_late(factory, finding.result.setup, finding.actions, timeout=options.timeout)
    if failure_key(again) == finding.key:
        return dataclasses.replace(finding, result=again)
    hit = again.first
    found = "nothing" if hit is None else f"{hit.rule.value} instead"
    violation = finding.violation
    reset = Violation(
        Rule.RESET,
        f"{violation.rule.value} was found on processes reused after reset, but the same "
        f"schedule on fresh processes finds {found}: after reset the tool does not behave as "
        f"a freshly started process ({violation.message})",
        violation.step,
        violation.worker,
    )
    return dataclasses.replace(
        finding,
        key=(Rule.RESET.value, ""),
        result=dataclasses.replace(finding.result, violations=(reset,)),
    )


def late_replay(factory: SutFactory, seed: int, options: LateOptions) -> LateReport:
    """Run the case named by ``seed`` again (and shrink it, if it fails), exactly as found."""
    started = time.monotonic()
    hello, broken = greet(factory, options.timeout)
    search = _Search(factory, options, _quiet)
    handshake: list[tuple[Violation, tuple[TranscriptLine, ...]]] = []
    problem = None
    declared = hello.levels if hello is not None else ()
    if broken is not None:
        handshake.append((broken.violation, broken.transcript))
    elif SYNC_LEVEL not in declared:
        problem = f"the SUT does not implement level {SYNC_LEVEL}"
    else:
        name = f"replay of seed {seed} ({describe_seed(seed)})"
        phase_started = time.monotonic()
        try:
            result = run_case(factory, seed, options)
        except (HarnessError, KeyboardInterrupt):
            raise
        except SeedError:
            raise
        except Exception as exc:  # a bug of the harness, never a verdict on the SUT
            raise HarnessError(name, seed, exc) from exc
        search.count(kind_of(seed), result)
        if not result.ok:
            search.found(name, seed, result)
        search._ended(name, 1, result.messages, phase_started, not result.ok)
    return LateReport(
        sut=factory.description,
        sut_name=hello.name if hello is not None else "",
        options=options,
        declared=declared,
        delivery=hello.delivery if hello is not None else "at-least-once",
        phases=tuple(search.phases),
        findings=tuple(search.findings),
        seconds=time.monotonic() - started,
        totals=search.totals,
        power=search.power,
        problem=problem,
        handshake=tuple(handshake),
        started=not never_greeted(broken),
        searched=False,
    )


__all__ = [
    "STORIES",
    "LateCase",
    "LateFinding",
    "LateOptions",
    "LateReport",
    "late_conform",
    "late_replay",
    "random_setup",
    "run_case",
    "shrink_late",
]
