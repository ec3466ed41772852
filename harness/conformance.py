"""A whole conformance run: what ``fencepost conform`` does, as a library call.

:func:`conform` shakes hands with the SUT, then runs every phase, whatever an
earlier phase found (``fail_fast`` stops at the first failure instead):

1. **error handling**: the probes of :mod:`fencepost.harness.probes`;
2. **algebra** (if tested): every small-bounds case once, then random batches;
3. **exhaustive schedules**: each scripted base of :data:`fencepost.harness.bases.BASES`
   with every single inserted step (``depth`` 1 by default);
4. **random schedules**: ``schedules`` seeded random runs, round robin over
   the publisher, checkpointer and composed families.

A phase stops at its first failure, which is shrunk
(:func:`fencepost.harness.shrink.shrink`) and kept with its rule, shortest
schedule, full transcript and the seed that replays it (:func:`replay`): the
report has the shortest counterexample of every failing phase.

A SUT that declares ``"integers"`` in ``hello_ok`` gets no integer outside that
range; one that declares the ``reset`` capability has its processes reused
between runs (:class:`~fencepost.harness.pool.SutPool`), and every failure found
on reused processes is replayed on fresh ones: a failure that does not come back
is reported as a ``reset`` violation instead. Every run's situations
(:mod:`fencepost.harness.coverage`) are counted into the report's coverage table.

The result is plain data (:class:`ConformReport`); rendering it is
:mod:`fencepost.harness.report`'s job.
"""

from __future__ import annotations

import dataclasses
import json
import math
import random
import signal
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from fencepost.harness.algebra import (
    AlgebraCase,
    AlgebraResult,
    exhaustive_cases,
    fits,
    random_cases,
    run_algebra,
    shrink_case,
)
from fencepost.harness.bases import bases_of
from fencepost.harness.classes import ClassCounts
from fencepost.harness.coverage import Coverage, Situation
from fencepost.harness.exhaustive import exhaustive, exhaustive_schedule
from fencepost.harness.pool import SutPool
from fencepost.harness.power import Power
from fencepost.harness.probes import run_probes
from fencepost.harness.protocol import (
    INTEGER_RANGES,
    LEVELS,
    PROTOCOL_VERSION,
    HelloOk,
    hello_message,
    parse_sut_message,
    shutdown_message,
)
from fencepost.harness.randomized import random_setup, run_random
from fencepost.harness.results import RunResult, StepRecord, TranscriptLine
from fencepost.harness.rules import HarnessError, Rule, SutFailure, Violation
from fencepost.harness.runner import run_schedule
from fencepost.harness.schedule import Action
from fencepost.harness.seeds import FAMILIES, FAMILY_LEVELS, ExhaustiveCase, family_of, seed_for
from fencepost.harness.shrink import shrink
from fencepost.harness.transport import SHUTDOWN_GRACE, Channel, SutFactory, ending_problem
from fencepost.harness.world import WorldSetup
from fencepost.inputs.jsonlines import (
    MessageError,
    encode,
)
from fencepost.vocabulary.conformance import (
    ALGEBRA_EXHAUSTIVE_PHASE,
    ALGEBRA_RANDOM_PHASE,
    RANDOM_SCHEDULES_PHASE,
)
from fencepost.vocabulary.conformance import PROBES_PHASE as PROBES_PHASE
from fencepost.vocabulary.conformance import exhaustive_phase as exhaustive_phase

#: Called as progress(phase, done, total) while a phase runs (total None if unknown).
Progress = Callable[[str, int, int | None], None]


def _quiet(phase: str, done: int, total: int | None) -> None:
    """The default progress callback: report nothing."""


#: Called once per phase as it ends, with its figures (``failed`` set when it found a bug):
#: a live display marks the phase and stops its clock.
PhaseEnded = Callable[["Phase"], None]


def _unnoticed(phase: Phase) -> None:
    """The default end-of-phase callback: nothing."""


#: The shortest and the longest time (seconds) a SUT may be given to answer a message.
#: Below the shortest a correct SUT is judged by the machine's load, not by what it does (a
#: process needs a scheduler tick or two to answer; ``--timeout 1e-9`` failed every SUT);
#: above the longest the clock arithmetic overflows.
TIMEOUT_RANGE = (0.5, 86400.0)
#: The most random schedules one run may ask for (a million runs take days already).
MAX_SCHEDULES = 1_000_000


def timeout_problem(seconds: float) -> str | None:
    """Why ``seconds`` cannot be a SUT's time limit, or None when it can (NaN and inf can't)."""
    low, high = TIMEOUT_RANGE
    if not math.isfinite(seconds) or not low <= seconds <= high:
        return (
            f"{seconds!r} is not a number of seconds from {low:g} to {high:g}; below "
            f"{low:g} s a correct SUT fails on a busy machine"
        )
    return None


@dataclass(frozen=True)
class ConformOptions:
    """The budget and knobs of one conformance run (``fencepost conform``'s options)."""

    levels: frozenset[str] = frozenset(LEVELS)
    seed: int = 0
    schedules: int = 20
    workers: int = 2
    timeout: float = 10.0
    depth: int = 1
    algebra_batches: int = 8
    shrink_runs: int = 400
    shrink_seconds: float = 120.0
    #: Stop at the first failing phase instead of running every phase.
    fail_fast: bool = False
    #: Reuse processes between runs when the SUT declares the reset capability.
    reuse: bool = True
    #: Run only the phases of these names (:func:`phase_plan`); None runs every phase.
    #: Seeds are drawn as in a whole run, so a phase run alone finds what it finds there.
    only: frozenset[str] | None = None
    #: Swarm testing: each random run switches a random subset of fault and situation
    #: kinds on (harness/randomized.py, Swarm); off, every kind is on in every run.
    #: docs/performance.md has the measurement that chose the default.
    swarm: bool = True


@dataclass(frozen=True)
class Failure:
    """One failure, shrunk: the rule, where, the shortest schedule, the transcript, the seed."""

    seed: int | None
    family: str
    violation: Violation
    setup: WorldSetup | None = None
    actions: tuple[Action, ...] = ()
    steps: tuple[StepRecord, ...] = ()
    transcript: tuple[TranscriptLine, ...] = ()
    stderr: dict[str, str] = field(default_factory=dict)
    original_steps: int = 0
    shrink_runs: int = 0
    case: AlgebraCase | None = None
    #: The phase that found it.
    phase: str = ""

    @property
    def kind(self) -> str:
        if self.seed is None:
            return "handshake"
        return "exhaustive" if self.seed < 0 else "random"


@dataclass(frozen=True)
class Phase:
    """What one phase ran: how many runs and messages, in how long."""

    name: str
    runs: int
    messages: int
    seconds: float
    failed: bool = False


@dataclass(frozen=True)
class ConformReport:
    """Everything ``fencepost conform`` reports."""

    sut: str
    sut_name: str
    declared: tuple[str, ...]
    tested: tuple[str, ...]
    phases: tuple[Phase, ...]
    failures: tuple[Failure, ...]
    equivalent_representations: int
    seconds: float
    problem: str | None = None
    #: The integer range the SUT declared and the harness kept to.
    integers: str = "arbitrary"
    #: Processes started, and runs served by a process kept from an earlier run (reset).
    processes: int = 0
    reused: int = 0
    coverage: Coverage = field(default_factory=lambda: Coverage.of(()))
    #: Per wrong answer, the runs that would have caught it (harness/power.py).
    power: Power = field(default_factory=lambda: Power.of(()))
    #: Per level, the runs whose world held each value class (harness/classes.py).
    classes: ClassCounts = field(default_factory=lambda: ClassCounts.of(()))
    #: Things the reader of the report should know that are not failures.
    notes: tuple[str, ...] = ()
    #: The phase a Ctrl-C (SIGINT) stopped, when it did: the report holds what ran before,
    #: and no verdict.
    interrupted: str | None = None
    #: Whether this was a search (every phase of the budget), not a replay of one case or
    #: one file: only a search is expected to reach every situation.
    searched: bool = True
    #: False when no process of the SUT answered ``hello`` with a ``hello_ok`` of this
    #: protocol (it could not be started, exited at once, or answered something else,
    #: :data:`STARTUP`): nothing was tested, and ``fencepost conform`` exits 2 naming the
    #: cause instead of giving a verdict.
    started: bool = True

    def warnings(self) -> tuple[str, ...]:
        """Situations the tested levels can reach that no run of a search exercised, and
        wrong answers of the tested levels' decisions that no run would have caught.

        Nothing for a replay (one case reaches a few situations by design), for a run that
        tested no level (nothing ran: the cause is reported instead), or for one stopped
        by Ctrl-C, or for one with a failing phase (a phase stops at its first failure,
        leaving the rest of its cases unrun; the verdict stands anyway): a warning must
        mean the search has a blind spot.
        """
        if not self.searched or not self.tested or self.interrupted is not None:
            return ()
        if any(p.failed for p in self.phases):  # a phase stops at its first failure
            return ()
        return tuple(
            f"no run exercised: {s.says}" for s in self.coverage.missing(self.tested)
        ) + tuple(
            f"no run would have caught the {w.decision} mistake {w.name}: {w.says}"
            for w in self.power.missing(self.tested)
        )

    @property
    def ok(self) -> bool:
        return not self.failures and self.problem is None and self.interrupted is None

    @property
    def messages(self) -> int:
        return sum(p.messages for p in self.phases)

    @property
    def runs(self) -> int:
        return sum(p.runs for p in self.phases)


def handshake(factory: SutFactory, timeout: float) -> tuple[str, tuple[str, ...], Failure | None]:
    """Start one worker, say hello, shut it down: the SUT's name and declared levels."""
    hello, failure = greet(factory, timeout)
    if hello is None:
        return "", (), failure
    return hello.name, hello.levels, failure


def greet(factory: SutFactory, timeout: float) -> tuple[HelloOk | None, Failure | None]:
    """Start one worker, say hello, shut it down: the SUT's whole ``hello_ok``.

    A SUT that does not answer hello with ``hello_ok`` for protocol 1, or does
    not exit with status 0 on shutdown, fails here with its transcript.
    """
    hello, failure, _ = greet_keeping(factory, timeout, lambda _: False)
    return hello, failure


def greet_keeping(
    factory: SutFactory, timeout: float, keep: Callable[[HelloOk], bool]
) -> tuple[HelloOk | None, Failure | None, Channel | None]:
    """:func:`greet`, but a process whose ``hello_ok`` satisfies ``keep`` is returned open
    (greeted, nothing else sent) instead of shut down: a caller that reuses processes
    saves one start-up, which is seconds for a tool slow to import. Its shutdown is then
    checked where the caller shuts it down (a pool's ``close``)."""
    lines: list[TranscriptLine] = []
    channel: Channel | None = None

    def failed(rule: Rule, message: str, family: str = "handshake") -> Failure:
        lines.append(TranscriptLine(0, "probe", "**", f"VIOLATION {rule.value}: {message}"))
        stderr: dict[str, str] = {}
        if channel is not None:
            stderr["probe"] = channel.stderr_tail()
        return Failure(
            None,
            family,
            Violation(rule, message, 0, "probe"),
            transcript=tuple(lines),
            stderr=stderr,
        )

    try:
        channel = factory.start("probe")
        hello = encode(hello_message())
        lines.append(TranscriptLine(0, "probe", "->", hello))
        channel.send(hello, timeout)
        line = channel.receive(timeout)
        lines.append(TranscriptLine(0, "probe", "<-", line))
        try:
            msg = parse_sut_message(line)
        except MessageError as exc:
            # A hello_ok of protocol 1 with a bad field is the program's bug, judged; any
            # other answer means the command does not start a program of this protocol.
            shape = _hello_ok_protocol(line)
            if shape is not None and shape != PROTOCOL_VERSION:  # another protocol's hello_ok
                message = (
                    f"hello (protocol {PROTOCOL_VERSION}) must be answered with hello_ok for "
                    f"protocol {PROTOCOL_VERSION}; got one for protocol {shape!r}"
                )
                return None, failed(Rule.HANDSHAKE, message, STARTUP), None
            family = "handshake" if shape == PROTOCOL_VERSION else STARTUP
            return None, failed(Rule.HANDSHAKE, f"hello was answered with {exc}", family), None
        if not isinstance(msg, HelloOk) or msg.protocol != PROTOCOL_VERSION:
            refused = failed(
                Rule.HANDSHAKE,
                f"hello (protocol {PROTOCOL_VERSION}) must be answered with hello_ok for "
                f"protocol {PROTOCOL_VERSION}; got {line[:200]!r}",
                STARTUP,
            )
            return None, refused, None
        if keep(msg):
            kept, channel = channel, None
            return msg, None, kept
        bye = encode(shutdown_message())
        lines.append(TranscriptLine(0, "probe", "->", bye))
        channel.send(bye, timeout)
        status = channel.close(SHUTDOWN_GRACE)
        problem = ending_problem(channel, status, SHUTDOWN_GRACE)
        if problem is not None:
            return msg, failed(*problem), None
        return msg, None, None
    except SutFailure as failure:
        return None, failed(failure.rule, failure.message, STARTUP), None
    finally:
        if channel is not None:
            channel.close(0.3)


#: The family of a handshake failure after which nothing can be tested: the program could
#: not be started, ended or hung before answering ``hello``, or answered with something
#: that is not a ``hello_ok`` of this protocol (``fencepost conform`` exits 2, no verdict).
STARTUP = "startup"


def _hello_ok_protocol(line: str) -> object:
    """The ``protocol`` field of ``line`` when it is a JSON object of type ``hello_ok``
    (whatever else is wrong with it), else None."""
    try:
        value = json.loads(line)
    except ValueError:
        return None
    if not isinstance(value, dict) or value.get("type") != "hello_ok":
        return None
    return value.get("protocol", "none")


def never_greeted(broken: Failure | None) -> bool:
    """Whether the handshake failed so that nothing can be tested (see :data:`STARTUP`)."""
    return broken is not None and broken.family == STARTUP


def failure_from_run(
    seed: int | None, family: str, result: RunResult, original: int, runs: int
) -> Failure:
    violation = result.first
    assert violation is not None
    return Failure(
        seed=seed,
        family=family,
        violation=violation,
        setup=result.setup,
        actions=result.executed,
        steps=result.steps,
        transcript=result.transcript,
        stderr=dict(result.stderr),
        original_steps=original,
        shrink_runs=runs,
    )


def _algebra_failure(
    factory: SutFactory, seed: int, result: AlgebraResult, options: ConformOptions
) -> Failure:
    violation = result.violations[0]
    if result.failing is not None and violation.rule in (Rule.ALGEBRA_COMPARE, Rule.ALGEBRA_MERGE):
        case, alone, runs = shrink_case(
            factory, result.failing, violation.rule, timeout=options.timeout
        )
        if alone.violations:
            return Failure(
                seed=seed,
                family="algebra",
                violation=alone.violations[0],
                transcript=alone.transcript,
                stderr=dict(alone.stderr),
                original_steps=result.cases_run,
                shrink_runs=runs,
                case=case,
            )
    return Failure(
        seed=seed,
        family="algebra",
        violation=violation,
        transcript=result.transcript,
        stderr=dict(result.stderr),
        original_steps=result.cases_run,
        case=result.failing,
    )


def _schedule_failure(
    factory: SutFactory, seed: int, result: RunResult, options: ConformOptions
) -> Failure:
    violation = result.first
    assert violation is not None
    shrunk = shrink(
        factory,
        result.setup,
        result.executed,
        violation.rule,
        result,
        timeout=options.timeout,
        budget=options.shrink_runs,
        seconds=options.shrink_seconds,
    )
    return failure_from_run(seed, family_of(seed), shrunk.result, len(result.executed), shrunk.runs)


def _limits(integers: str) -> tuple[int, int] | None:
    return INTEGER_RANGES.get(integers)


def run_case(
    factory: SutFactory, seed: int, options: ConformOptions, integers: str = "arbitrary"
) -> RunResult | AlgebraResult:
    """Run the case named by ``seed`` once (no shrinking)."""
    family = family_of(seed)
    if family == "algebra":
        if seed < 0:
            cases = [c for c in exhaustive_cases() if fits(c, _limits(integers))]
        else:
            cases = random_cases(seed, limits=_limits(integers))
        return run_algebra(factory, cases, timeout=options.timeout)
    if seed < 0:
        setup, schedule = exhaustive_schedule(
            factory,
            ExhaustiveCase.from_seed(seed),
            timeout=options.timeout,
            limits=_limits(integers),
        )
        return run_schedule(factory, setup, schedule, timeout=options.timeout)
    return run_random(
        factory,
        seed,
        workers=options.workers,
        timeout=options.timeout,
        limits=_limits(integers),
        swarm=options.swarm,
    )


def _failure_for(
    factory: SutFactory, seed: int, result: RunResult | AlgebraResult, options: ConformOptions
) -> Failure:
    if isinstance(result, AlgebraResult):
        return _algebra_failure(factory, seed, result, options)
    return _schedule_failure(factory, seed, result, options)


class _Phases:
    """Runs phases one after the other, keeping each phase's figures and first failure."""

    def __init__(
        self,
        progress: Progress,
        options: ConformOptions,
        integers: str,
        ended: PhaseEnded = _unnoticed,
    ) -> None:
        self.progress = progress
        self.ended = ended
        self.options = options
        self.integers = integers
        self.done: list[Phase] = []
        self.failures: list[Failure] = []
        self.equivalent = 0
        self.seen: list[frozenset[Situation]] = []
        self.caught: list[frozenset[str]] = []
        #: Per run: its level (the family of its case) and the value classes it held.
        self.classes: list[tuple[str, frozenset[str]]] = []
        #: The phase running now (None between phases).
        self.running: str | None = None

    @property
    def stop(self) -> bool:
        """A failure was found and the run is fail-fast."""
        return self.options.fail_fast and bool(self.failures)

    def _ended(
        self, name: str, runs: int, messages: int, started: float, failure: Failure | None
    ) -> None:
        self.running = None
        phase = Phase(name, runs, messages, time.monotonic() - started, failure is not None)
        self.done.append(phase)
        if failure is not None:
            self.failures.append(dataclasses.replace(failure, phase=name))
        self.ended(phase)

    def _count(self, family: str, result: RunResult | AlgebraResult) -> None:
        self.seen.append(result.situations)
        self.caught.append(result.caught)
        self.classes.append((family, result.classes))

    def probes(self, factory: SutFactory, levels: frozenset[str]) -> None:
        name = self.running = PROBES_PHASE
        started = time.monotonic()
        self.progress(name, 0, 1)
        result = run_probes(factory, levels, timeout=self.options.timeout)
        self.progress(name, 1, 1)
        failure = None
        if not result.ok:
            failure = Failure(
                seed=None,
                family="probes",
                violation=result.violations[0],
                transcript=result.transcript,
                stderr=dict(result.stderr),
            )
        self._ended(name, 1, result.messages, started, failure)

    def run(self, name: str, cases: list[int], factory: SutFactory) -> None:
        self.running = name
        started = time.monotonic()
        messages = 0
        for i, seed in enumerate(cases):
            self.progress(name, i, len(cases))
            try:
                result = run_case(factory, seed, self.options, self.integers)
            except (HarnessError, KeyboardInterrupt):
                raise
            except Exception as exc:  # a bug of the harness, never a verdict on the SUT
                raise HarnessError(f"phase {name}", seed, exc) from exc
            messages += result.messages
            self._count(family_of(seed), result)
            if isinstance(result, AlgebraResult):
                self.equivalent += result.equivalent_representations
            if not result.ok:
                self.progress(name, i + 1, len(cases))
                failure = _failure_for(factory, seed, result, self.options)
                self._ended(name, i + 1, messages, started, failure)
                return
        self.progress(name, len(cases), len(cases))
        self._ended(name, len(cases), messages, started, None)

    def exhaustive(self, base: str, factory: SutFactory) -> None:
        name = self.running = exhaustive_phase(base, self.options.depth)
        started = time.monotonic()
        messages = runs = 0
        for case, result in exhaustive(
            factory,
            base,
            self.options.depth,
            timeout=self.options.timeout,
            limits=_limits(self.integers),
        ):
            runs += 1
            messages += result.messages
            self._count(case.family, result)
            self.progress(name, runs, None)
            if not result.ok:
                failure = _schedule_failure(factory, case.seed, result, self.options)
                self._ended(name, runs, messages, started, failure)
                return
        self._ended(name, runs, messages, started, None)


def phase_plan(
    tested: Iterable[str], options: ConformOptions = ConformOptions()
) -> tuple[str, ...]:
    """The names of the phases :func:`conform` runs for the levels ``tested``, in order.

    What a test runner shows as one test per phase (``fencepost.testing``), and what
    :attr:`ConformOptions.only` selects from. Cost: O(number of scripted bases).
    """
    levels = set(tested)
    families = [f for f in FAMILIES if FAMILY_LEVELS[f] <= levels]
    names = [PROBES_PHASE]
    if "algebra" in families:
        names += [ALGEBRA_EXHAUSTIVE_PHASE, ALGEBRA_RANDOM_PHASE]
    schedule_families = [f for f in families if f != "algebra"]
    if options.depth >= 0:
        names += [exhaustive_phase(base, options.depth) for base in bases_of(schedule_families)]
    if schedule_families and options.schedules > 0:
        names.append(RANDOM_SCHEDULES_PHASE)
    return tuple(names)


def _confirm_fresh(
    inner: SutFactory, failure: Failure, options: ConformOptions, integers: str
) -> Failure:
    """Replay a failure found on reused processes with fresh ones (see the module docstring)."""
    if failure.seed is None:
        return failure
    if failure.setup is not None:
        again: RunResult | AlgebraResult = run_schedule(
            inner, failure.setup, failure.actions, timeout=options.timeout
        )
    elif failure.case is not None:
        again = run_algebra(inner, [failure.case], timeout=options.timeout)
    else:
        again = run_case(inner, failure.seed, options, integers)
    hit = (
        again.first
        if isinstance(again, RunResult)
        else (again.violations[0] if again.violations else None)
    )
    if hit is not None and hit.rule is failure.violation.rule:
        # Report the fresh run: the transcript a replay of the seed reproduces.
        if isinstance(again, RunResult):
            return dataclasses.replace(
                failure,
                violation=hit,
                steps=again.steps,
                transcript=again.transcript,
                stderr=dict(again.stderr),
            )
        return dataclasses.replace(
            failure, violation=hit, transcript=again.transcript, stderr=dict(again.stderr)
        )
    found = "nothing" if hit is None else f"{hit.rule.value} instead"
    return dataclasses.replace(
        failure,
        violation=Violation(
            Rule.RESET,
            f"{failure.violation.rule.value} was found on processes reused after reset, but "
            f"the same schedule on fresh processes finds {found}: after reset the SUT does not "
            f"behave as a freshly started process ({failure.violation.message})",
            failure.violation.step,
            failure.violation.worker,
        ),
    )


class _Counted:
    """A :class:`SutFactory` that counts the processes (or sessions) it starts."""

    def __init__(self, inner: SutFactory) -> None:
        self.inner = inner
        self.started = 0

    @property
    def description(self) -> str:
        return self.inner.description

    def start(self, worker: str) -> Channel:
        self.started += 1
        return self.inner.start(worker)

    def close(self) -> None:
        self.inner.close()


def conform(
    factory: SutFactory,
    options: ConformOptions = ConformOptions(),
    progress: Progress = _quiet,
    ended: PhaseEnded = _unnoticed,
) -> ConformReport:
    """Test the SUT ``factory`` starts, every phase (see the module docstring).

    ``progress`` hears of each run as a phase goes, ``ended`` of each phase as it ends.
    """
    started = time.monotonic()
    factory = counted = _Counted(factory)
    hello, broken = greet(factory, options.timeout)
    name = hello.name if hello is not None else ""
    declared = hello.levels if hello is not None else ()
    integers = hello.integers if hello is not None else "arbitrary"
    tested = tuple(level for level in LEVELS if level in options.levels and level in declared)
    pool: SutPool | None = None
    used: SutFactory = factory
    if hello is not None and "reset" in hello.capabilities and options.reuse:
        pool = SutPool(factory, options.timeout)
        used = pool
    phases = _Phases(progress, options, integers, ended)

    def report(problem: str | None = None, interrupted: str | None = None) -> ConformReport:
        if interrupted is not None:  # no graceful shutdowns, no confirming runs: stop now
            if pool is not None:
                pool.abandon()
            factory.close()
        elif pool is not None:
            pool.close()
            for p in pool.problems:
                phases.failures.append(
                    Failure(
                        None,
                        "pool",
                        Violation(p.rule, p.message, None, p.worker),
                        stderr={p.worker: p.stderr},
                        phase="kept processes",
                    )
                )
            phases.failures[:] = [
                _confirm_fresh(factory, f, options, integers) for f in phases.failures
            ]
        return ConformReport(
            sut=factory.description,
            sut_name=name,
            declared=declared,
            tested=tested,
            phases=tuple(phases.done),
            failures=tuple(phases.failures),
            equivalent_representations=phases.equivalent,
            seconds=time.monotonic() - started,
            problem=problem,
            integers=integers,
            processes=counted.started,
            reused=pool.reused if pool is not None else 0,
            coverage=Coverage.of(phases.seen),
            power=Power.of(phases.caught),
            classes=ClassCounts.of(phases.classes),
            interrupted=interrupted,
            started=not never_greeted(broken),
        )

    try:
        return _run_phases(options, phases, used, declared, tested, broken, report)
    except KeyboardInterrupt:
        with _no_second_interrupt():
            return report(interrupted=phases.running or "between phases")


def _run_phases(
    options: ConformOptions,
    phases: _Phases,
    used: SutFactory,
    declared: tuple[str, ...],
    tested: tuple[str, ...],
    broken: Failure | None,
    report: Callable[..., ConformReport],
) -> ConformReport:
    """Every phase of :func:`conform`, in order; ``report`` builds the report."""
    declared_levels = ", ".join(sorted(options.levels))
    if broken is not None:
        phases.failures.append(broken)
        return report()
    if not tested:
        return report(
            f"the SUT implements {', '.join(declared) or 'no level'}; none of the "
            f"requested levels ({declared_levels}) can be tested",
        )
    families = [f for f in FAMILIES if FAMILY_LEVELS[f] <= set(tested)]
    rng = random.Random(options.seed)

    def wanted(name: str) -> bool:
        return options.only is None or name in options.only

    if wanted(PROBES_PHASE):
        phases.probes(used, frozenset(tested))
    if "algebra" in families and not phases.stop:
        if wanted(ALGEBRA_EXHAUSTIVE_PHASE):
            phases.run(ALGEBRA_EXHAUSTIVE_PHASE, [ExhaustiveCase("algebra").seed], used)
        if not phases.stop:
            seeds = [seed_for(rng, "algebra") for _ in range(options.algebra_batches)]
            if wanted(ALGEBRA_RANDOM_PHASE):
                phases.run(ALGEBRA_RANDOM_PHASE, seeds, used)
    schedule_families = [f for f in families if f != "algebra"]
    if options.depth >= 0:
        for base in bases_of(schedule_families):
            if phases.stop:
                break
            if wanted(exhaustive_phase(base, options.depth)):
                phases.exhaustive(base, used)
    if schedule_families and options.schedules > 0 and not phases.stop:
        seeds = [
            seed_for(rng, schedule_families[i % len(schedule_families)])
            for i in range(options.schedules)
        ]
        if wanted(RANDOM_SCHEDULES_PHASE):
            phases.run(RANDOM_SCHEDULES_PHASE, seeds, used)
    return report()


@contextmanager
def _no_second_interrupt() -> Iterator[None]:
    """SIGINT ignored while a Ctrl-C is being handled (every SUT process being ended): a
    second one must not leave processes behind. Main thread only, where signals go."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def replay(
    factory: SutFactory, seed: int, options: ConformOptions = ConformOptions()
) -> ConformReport:
    """Run the case named by ``seed`` again (and shrink it, if it fails), exactly as found."""
    started = time.monotonic()
    hello, failure = greet(factory, options.timeout)
    name = hello.name if hello is not None else ""
    declared = hello.levels if hello is not None else ()
    integers = hello.integers if hello is not None else "arbitrary"
    family = family_of(seed)
    phases = _Phases(_quiet, options, integers)
    problem = None
    missing = FAMILY_LEVELS[family] - set(declared)
    if failure is None and missing:
        problem = (
            f"seed {seed} is a {family} case; the SUT does not implement "
            f"{', '.join(sorted(missing))}"
        )
    elif failure is None:
        phases.run(f"replay of seed {seed} ({family})", [seed], factory)
    failures = phases.failures if failure is None else [failure]
    return ConformReport(
        sut=factory.description,
        sut_name=name,
        declared=declared,
        tested=tuple(sorted(FAMILY_LEVELS[family])),
        phases=tuple(phases.done),
        failures=tuple(failures),
        equivalent_representations=phases.equivalent,
        seconds=time.monotonic() - started,
        problem=problem,
        integers=integers,
        coverage=Coverage.of(phases.seen),
        searched=False,
        started=not never_greeted(failure),
        power=Power.of(phases.caught),
        classes=ClassCounts.of(phases.classes),
    )


def describe_seed(seed: int, workers: int = 2) -> str:
    """What case a seed names, in words (for reports)."""
    family = family_of(seed)
    if seed < 0:
        case = ExhaustiveCase.from_seed(seed)
        inserted = len(case.insertions)
        if case.base == "algebra":
            return "algebra, exhaustive: every small-bounds compare and merge case"
        return f"{family}, exhaustive: base {case.base} with {inserted} inserted step(s)"
    if family == "algebra":
        return "algebra, a random batch of 100 compare/merge cases"
    setup = random_setup(seed, workers)
    return (
        f"{family}, random: order {setup.order.name}, {len(setup.epochs)} epoch(s), "
        f"workers {', '.join(setup.workers)}, policy {setup.policy}"
    )
