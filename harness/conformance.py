"""A whole conformance run: what ``fencepost conform`` does, as a library call.

:func:`conform` shakes hands with the SUT, then runs, level by level and
stopping at the first failure:

1. **algebra** (if tested): every small-bounds case once, then random batches;
2. **exhaustive schedules**: each scripted base of :data:`fencepost.harness.search.BASE`
   with every single inserted step (``depth`` 1 by default);
3. **random schedules**: ``schedules`` seeded random runs, round robin over
   the publisher, checkpointer and composed families.

A failure is shrunk (:func:`fencepost.harness.search.shrink`) and returned with
its rule, shortest schedule, full transcript and the seed that replays it
(:func:`replay`). The result is plain data (:class:`ConformReport`); rendering
it is :mod:`fencepost.harness.report`'s job.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from fencepost.harness.algebra import (
    AlgebraCase,
    AlgebraResult,
    exhaustive_cases,
    random_cases,
    run_algebra,
    shrink_case,
)
from fencepost.harness.protocol import (
    LEVELS,
    PROTOCOL_VERSION,
    HelloOk,
    MessageError,
    encode,
    hello_message,
    parse_sut_message,
    shutdown_message,
)
from fencepost.harness.results import RunResult, StepRecord, TranscriptLine
from fencepost.harness.rules import Rule, SutFailure, Violation
from fencepost.harness.runner import run_schedule
from fencepost.harness.schedule import Action
from fencepost.harness.search import (
    FAMILIES,
    FAMILY_LEVELS,
    ExhaustiveCase,
    exhaustive,
    exhaustive_schedule,
    family_of,
    random_setup,
    run_random,
    seed_for,
    shrink,
)
from fencepost.harness.transport import SHUTDOWN_GRACE, Channel, SutFactory
from fencepost.harness.world import WorldSetup

#: Called as progress(phase, done, total) while a phase runs (total None if unknown).
Progress = Callable[[str, int, int | None], None]


def _quiet(phase: str, done: int, total: int | None) -> None:
    """The default progress callback: report nothing."""


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

    @property
    def ok(self) -> bool:
        return not self.failures and self.problem is None

    @property
    def messages(self) -> int:
        return sum(p.messages for p in self.phases)

    @property
    def runs(self) -> int:
        return sum(p.runs for p in self.phases)


def handshake(factory: SutFactory, timeout: float) -> tuple[str, tuple[str, ...], Failure | None]:
    """Start one worker, say hello, shut it down: the SUT's name and declared levels.

    A SUT that does not answer hello with ``hello_ok`` for protocol 1, or does
    not exit with status 0 on shutdown, fails here with its transcript.
    """
    lines: list[TranscriptLine] = []
    channel: Channel | None = None

    def failed(rule: Rule, message: str) -> Failure:
        lines.append(TranscriptLine(0, "probe", "**", f"VIOLATION {rule.value}: {message}"))
        stderr: dict[str, str] = {}
        if channel is not None:
            stderr["probe"] = channel.stderr_tail()
        return Failure(
            None,
            "handshake",
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
            return "", (), failed(Rule.HANDSHAKE, f"hello was answered with {exc}")
        if not isinstance(msg, HelloOk) or msg.protocol != PROTOCOL_VERSION:
            return (
                "",
                (),
                failed(
                    Rule.HANDSHAKE,
                    f"hello (protocol {PROTOCOL_VERSION}) must be answered with hello_ok for "
                    f"protocol {PROTOCOL_VERSION}; got {line[:200]!r}",
                ),
            )
        bye = encode(shutdown_message())
        lines.append(TranscriptLine(0, "probe", "->", bye))
        channel.send(bye, timeout)
        status = channel.close(SHUTDOWN_GRACE)
        if status != 0:
            how = (
                "did not exit after shutdown (killed)"
                if status is None
                else f"exited with status {status} after shutdown"
            )
            return msg.name, msg.levels, failed(Rule.SHUTDOWN, how)
        return msg.name, msg.levels, None
    except SutFailure as failure:
        return "", (), failed(failure.rule, failure.message)
    finally:
        if channel is not None:
            channel.close(0.3)


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


def run_case(factory: SutFactory, seed: int, options: ConformOptions) -> RunResult | AlgebraResult:
    """Run the case named by ``seed`` once (no shrinking)."""
    family = family_of(seed)
    if family == "algebra":
        cases = exhaustive_cases() if seed < 0 else random_cases(seed)
        return run_algebra(factory, cases, timeout=options.timeout)
    if seed < 0:
        setup, schedule = exhaustive_schedule(
            factory, ExhaustiveCase.from_seed(seed), timeout=options.timeout
        )
        return run_schedule(factory, setup, schedule, timeout=options.timeout)
    return run_random(factory, seed, workers=options.workers, timeout=options.timeout)


def _failure_for(
    factory: SutFactory, seed: int, result: RunResult | AlgebraResult, options: ConformOptions
) -> Failure:
    if isinstance(result, AlgebraResult):
        return _algebra_failure(factory, seed, result, options)
    return _schedule_failure(factory, seed, result, options)


class _Phases:
    def __init__(self, progress: Progress) -> None:
        self.progress = progress
        self.done: list[Phase] = []
        self.equivalent = 0

    def run(
        self,
        name: str,
        cases: list[int],
        factory: SutFactory,
        options: ConformOptions,
    ) -> Failure | None:
        started = time.monotonic()
        messages = 0
        for i, seed in enumerate(cases):
            self.progress(name, i, len(cases))
            result = run_case(factory, seed, options)
            messages += result.messages
            if isinstance(result, AlgebraResult):
                self.equivalent += result.equivalent_representations
            if not result.ok:
                self.progress(name, i + 1, len(cases))
                failure = _failure_for(factory, seed, result, options)
                self.done.append(Phase(name, i + 1, messages, time.monotonic() - started, True))
                return failure
        self.progress(name, len(cases), len(cases))
        self.done.append(Phase(name, len(cases), messages, time.monotonic() - started))
        return None

    def exhaustive(
        self, family: str, factory: SutFactory, options: ConformOptions
    ) -> Failure | None:
        name = f"{family} exhaustive (depth {options.depth})"
        started = time.monotonic()
        messages = runs = 0
        for case, result in exhaustive(factory, family, options.depth, timeout=options.timeout):
            runs += 1
            messages += result.messages
            self.progress(name, runs, None)
            if not result.ok:
                failure = _schedule_failure(factory, case.seed, result, options)
                self.done.append(Phase(name, runs, messages, time.monotonic() - started, True))
                return failure
        self.done.append(Phase(name, runs, messages, time.monotonic() - started))
        return None


def conform(
    factory: SutFactory, options: ConformOptions = ConformOptions(), progress: Progress = _quiet
) -> ConformReport:
    """Test the SUT ``factory`` starts; stops at the first failure (see the module docstring)."""
    started = time.monotonic()
    name, declared, broken = handshake(factory, options.timeout)
    tested = tuple(level for level in LEVELS if level in options.levels and level in declared)
    phases = _Phases(progress)

    def report(failure: Failure | None, problem: str | None = None) -> ConformReport:
        return ConformReport(
            sut=factory.description,
            sut_name=name,
            declared=declared,
            tested=tested,
            phases=tuple(phases.done),
            failures=() if failure is None else (failure,),
            equivalent_representations=phases.equivalent,
            seconds=time.monotonic() - started,
            problem=problem,
        )

    if broken is not None:
        return report(broken)
    if not tested:
        return report(
            None,
            f"the SUT implements {', '.join(declared) or 'no level'}; none of the requested "
            f"levels ({', '.join(sorted(options.levels))}) can be tested",
        )
    families = [f for f in FAMILIES if FAMILY_LEVELS[f] <= set(tested)]
    rng = random.Random(options.seed)
    if "algebra" in families:
        failure = phases.run(
            "algebra exhaustive", [ExhaustiveCase("algebra").seed], factory, options
        )
        if failure is None:
            seeds = [seed_for(rng, "algebra") for _ in range(options.algebra_batches)]
            failure = phases.run("algebra random", seeds, factory, options)
        if failure is not None:
            return report(failure)
    schedule_families = [f for f in families if f != "algebra"]
    if options.depth >= 0:
        for family in schedule_families:
            failure = phases.exhaustive(family, factory, options)
            if failure is not None:
                return report(failure)
    if schedule_families and options.schedules > 0:
        seeds = [
            seed_for(rng, schedule_families[i % len(schedule_families)])
            for i in range(options.schedules)
        ]
        failure = phases.run("random schedules", seeds, factory, options)
        if failure is not None:
            return report(failure)
    return report(None)


def replay(
    factory: SutFactory, seed: int, options: ConformOptions = ConformOptions()
) -> ConformReport:
    """Run the case named by ``seed`` again (and shrink it, if it fails), exactly as found."""
    started = time.monotonic()
    name, declared, failure = handshake(factory, options.timeout)
    family = family_of(seed)
    phases = _Phases(_quiet)
    problem = None
    missing = FAMILY_LEVELS[family] - set(declared)
    if failure is None and missing:
        problem = (
            f"seed {seed} is a {family} case; the SUT does not implement "
            f"{', '.join(sorted(missing))}"
        )
    elif failure is None:
        failure = phases.run(f"replay of seed {seed} ({family})", [seed], factory, options)
    return ConformReport(
        sut=factory.description,
        sut_name=name,
        declared=declared,
        tested=tuple(sorted(FAMILY_LEVELS[family])),
        phases=tuple(phases.done),
        failures=() if failure is None else (failure,),
        equivalent_representations=phases.equivalent,
        seconds=time.monotonic() - started,
        problem=problem,
    )


def describe_seed(seed: int, workers: int = 2) -> str:
    """What case a seed names, in words (for reports)."""
    family = family_of(seed)
    if seed < 0:
        case = ExhaustiveCase.from_seed(seed)
        inserted = len(case.insertions)
        return f"{family}, exhaustive: the scripted base with {inserted} inserted step(s)"
    if family == "algebra":
        return "algebra, a random batch of 100 compare/merge cases"
    setup = random_setup(seed, workers)
    return (
        f"{family}, random: order {setup.order.name}, {len(setup.epochs)} epoch(s), "
        f"workers {', '.join(setup.workers)}, policy {setup.policy}"
    )
