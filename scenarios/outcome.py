"""What running one scenario on one target produced, and the verdict.

Every runner (model, implementation, SUT) drives the scenario step by step and
hands back, per step, an :class:`Observed`: the publication record after it,
how the request ending at it ended, the checkpoints of the current epoch. The
comparison with the scenario's expectations and the verdict are the same for
every target and live here, so "pass" means the same thing everywhere:

- an ``-ok`` scenario passes when every expectation matches and no property
  broke;
- a ``-bad`` scenario passes when its variant was caught breaking the property
  of ``[broken]`` (or one it accepts), at the step it names if it names one,
  and every expectation up to that step matched.

A target that cannot express a step raises :class:`Unsupported`; the scenario
is then *skipped* on it with the reason, never silently passed.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from fencepost.judge.values import Cut
from fencepost.scenarios.spec import (
    Broken,
    Expectations,
    Scenario,
    Step,
    format_cut,
)

PASS = "pass"
FAIL = "fail"
SKIP = "skip"
ERROR = "error"


class Unsupported(Exception):
    """The target cannot express this step of the scenario (the reason says why)."""


class ScenarioRuntimeError(Exception):
    """The scenario asks for something its own world forbids (found while running).

    For example certifying a cut that is not ahead of the stored one, or a
    provider page whose final claim covers an event that is not final: the
    environment must be honest, only the system under test may be wrong.
    """


@dataclass(frozen=True, slots=True)
class Mismatch:
    """An expectation that did not hold: where, which field, expected and actual."""

    step: int
    line: int
    field: str
    expected: str
    actual: str

    def __str__(self) -> str:
        return (
            f"step {self.step} (line {self.line}): {self.field}: expected {self.expected}, "
            f"got {self.actual}"
        )

    def to_json(self) -> dict[str, object]:
        return {
            "step": self.step,
            "line": self.line,
            "field": self.field,
            "expected": self.expected,
            "actual": self.actual,
        }


@dataclass(frozen=True, slots=True)
class Breach:
    """A property (or harness rule) that broke: which, why, at which step."""

    property: str
    message: str
    step: int
    line: int

    def __str__(self) -> str:
        return f"step {self.step} (line {self.line}): {self.property}: {self.message}"

    def to_json(self) -> dict[str, object]:
        return {
            "property": self.property,
            "message": self.message,
            "step": self.step,
            "line": self.line,
        }


@dataclass(frozen=True, slots=True)
class AttemptSeen:
    """How a publication attempt ended; ``cut`` None when the target does not report it."""

    outcome: str
    reason: str | None
    epoch: int | None
    cut: Cut | None


@dataclass(frozen=True, slots=True)
class RecordSeen:
    """The publication record; ``writer`` is the worker whose op_id it carries (None: none)."""

    epoch: int
    cut: Cut
    revision: int
    writer: str | None


@dataclass(frozen=True)
class Observed:
    """What one target saw after one step.

    ``ended`` says which kind of request ended at this step (None: none did);
    ``attempt`` / ``ingest`` its end; ``failure`` a request that raised instead
    of ending. ``blind`` lists expectation fields this target cannot observe
    (for example the reported cut of a model attempt that did not publish).
    """

    record: RecordSeen
    checkpoints: Mapping[str, Cut | None]
    generations: Mapping[str, int | None]
    attempt: AttemptSeen | None = None
    ingest: Cut | None = None
    failure: str | None = None
    paused: bool = False
    narrative: str = ""
    blind: frozenset[str] = field(default_factory=frozenset)


#: The ``blind`` mark of a step during which the target stopped at a broken property.
STOPPED = "stopped_by_violation"


def compare(step: Step, seen: Observed) -> list[Mismatch]:
    """The expectations of ``step`` that ``seen`` does not meet (fields ``blind`` skipped).

    ``blind`` holding :data:`STOPPED` means the target stopped at a broken
    property during this step (the conformance harness ends a run at its first
    violation): nothing after it can be observed, and the breach itself is the
    verdict (a failure of a ``-ok`` scenario, the catch of a ``-bad`` one).
    """
    exp: Expectations = step.expect
    out: list[Mismatch] = []
    if STOPPED in seen.blind:
        return out

    def miss(name: str, expected: object, actual: object) -> None:
        out.append(Mismatch(step.index, step.line, name, _text(expected), _text(actual)))

    pause = getattr(step.action, "pause", None)
    if pause is not None and not seen.paused:
        ended = seen.failure or (f"{seen.attempt.outcome}" if seen.attempt is not None else "ended")
        miss("pause_before", f"the request paused {pause}", f"it never got there ({ended})")
        return out

    if exp.attempt is not None:
        a = exp.attempt
        got = seen.attempt
        if got is None:
            miss("expect", "the attempt to end", seen.failure or _pending(seen))
        else:
            if a.outcome is not None and a.outcome != got.outcome:
                miss("expect.outcome", a.outcome, got.outcome)
            if a.reason is not None and a.reason != got.reason:
                miss("expect.reason", a.reason, got.reason)
            if a.epoch is not None and a.epoch != got.epoch and "attempt.epoch" not in seen.blind:
                miss("expect.epoch", a.epoch, got.epoch)
            if a.cut is not None and "attempt.cut" not in seen.blind and a.cut != got.cut:
                miss("expect.cut", a.cut, got.cut)
    if exp.ingest is not None:
        if seen.failure is not None:
            miss("expect.cut", exp.ingest, seen.failure)
        elif seen.ingest is None:
            miss("expect.cut", exp.ingest, _pending(seen))
        elif seen.ingest != exp.ingest:
            miss("expect.cut", exp.ingest, seen.ingest)
    if exp.record is not None:
        r = exp.record
        rec = seen.record
        if r.epoch is not None and r.epoch != rec.epoch:
            miss("record.epoch", r.epoch, rec.epoch)
        if r.cut is not None and r.cut != rec.cut:
            miss("record.cut", r.cut, rec.cut)
        if r.revision is not None and r.revision != rec.revision:
            miss("record.revision", r.revision, rec.revision)
        if r.writer is not None and r.writer != rec.writer and "record.writer" not in seen.blind:
            miss("record.writer", r.writer, rec.writer or "no writer")
    for partition, cut in exp.checkpoints.items():
        actual = seen.checkpoints.get(partition)
        if actual != cut:
            miss(f"checkpoints.{partition}", "none" if cut is None else cut, actual or "none")
    if "generations" not in seen.blind:
        for partition, generation in exp.generations.items():
            got_gen = seen.generations.get(partition)
            if got_gen != generation:
                miss(f"generations.{partition}", generation, got_gen or "no checkpoint")
    return out


def _pending(seen: Observed) -> str:
    return "the request is still paused" if seen.paused else "no request ended at this step"


def _text(value: object) -> str:
    if isinstance(value, Cut):
        return format_cut(value)
    if value is None:
        return "none"
    return str(value)


@dataclass(frozen=True)
class TargetResult:
    """One scenario on one target: the verdict and everything needed to explain it."""

    scenario: str
    origin: str
    target: str
    status: str
    detail: str
    verdict: str
    mismatches: tuple[Mismatch, ...] = ()
    breach: Breach | None = None
    narrative: tuple[str, ...] = ()
    seconds: float = 0.0
    #: Each step run and what the target saw after it, in order (for reports).
    trace: tuple[tuple[Step, Observed], ...] = ()

    @property
    def ok(self) -> bool:
        """True unless the scenario failed or could not run (a skip is not a failure)."""
        return self.status in (PASS, SKIP)

    def to_json(self) -> dict[str, object]:
        return {
            "scenario": self.scenario,
            "origin": self.origin,
            "target": self.target,
            "status": self.status,
            "verdict": self.verdict,
            "detail": self.detail,
            "mismatches": [m.to_json() for m in self.mismatches],
            "breach": None if self.breach is None else self.breach.to_json(),
            "narrative": list(self.narrative),
            "seconds": round(self.seconds, 4),
        }


def judge(
    scenario: Scenario,
    target: str,
    mismatches: Sequence[Mismatch],
    breach: Breach | None,
    narrative: Sequence[str],
    seconds: float,
) -> TargetResult:
    """The verdict of one completed run (see the module docstring)."""
    broken: Broken | None = scenario.broken

    def result(status: str, detail: str) -> TargetResult:
        return TargetResult(
            scenario.name,
            scenario.origin,
            target,
            status,
            detail,
            scenario.verdict,
            tuple(mismatches),
            breach,
            tuple(narrative),
            seconds,
        )

    if broken is None:
        if breach is not None:
            return result(FAIL, f"{breach.property} broke: {breach}")
        if mismatches:
            return result(FAIL, str(mismatches[0]))
        return result(PASS, "every expectation met; every property held")
    if breach is None:
        return result(
            FAIL,
            f"variant {scenario.variant!r} was not caught: {broken.property} was expected to "
            "break and no property did",
        )
    if not broken.accepts(breach.property):
        wanted = " or ".join((broken.property, *broken.accept))
        return result(FAIL, f"caught, but for {breach.property} instead of {wanted}: {breach}")
    if broken.step is not None and breach.step != broken.step:
        return result(
            FAIL, f"caught at step {breach.step}, expected at step {broken.step}: {breach}"
        )
    if mismatches:
        return result(FAIL, str(mismatches[0]))
    return result(PASS, f"caught as expected: {breach}")


def skipped(scenario: Scenario, target: str, reason: str, seconds: float = 0.0) -> TargetResult:
    return TargetResult(
        scenario.name, scenario.origin, target, SKIP, reason, scenario.verdict, seconds=seconds
    )


def errored(scenario: Scenario, target: str, reason: str, seconds: float = 0.0) -> TargetResult:
    return TargetResult(
        scenario.name, scenario.origin, target, ERROR, reason, scenario.verdict, seconds=seconds
    )


class Driver(Protocol):
    """One target's way of running a scenario step by step."""

    @property
    def breach(self) -> Breach | None:
        """The first property the run broke so far (None: all held)."""
        ...

    def begin(self) -> None:
        """Build the world of the scenario's first epoch."""
        ...

    def step(self, step: Step) -> Observed:
        """Run one step; raise :class:`Unsupported` when the target cannot express it."""
        ...

    def close(self) -> None:
        """Release whatever the run holds (threads, files, processes)."""
        ...


def drive(scenario: Scenario, target: str, driver: Driver) -> TargetResult:
    """Run ``scenario`` on ``driver`` and judge it.

    The run stops at the first step whose expectations fail or at which a
    property breaks: that step is what the report shows. A step the target
    cannot express skips the scenario there; a scenario whose own world is
    inconsistent is an error naming the step and line.
    """
    start = time.perf_counter()
    mismatches: list[Mismatch] = []
    narrative: list[str] = []
    trace: list[tuple[Step, Observed]] = []
    current: Step | None = None
    try:
        driver.begin()
        legend = getattr(driver, "legend", "")
        if legend:
            narrative.append(f"0. {legend}")
        for step in scenario.steps:
            current = step
            seen = driver.step(step)
            narrative.append(f"{step.index}. {seen.narrative}")
            trace.append((step, seen))
            mismatches.extend(compare(step, seen))
            if mismatches or driver.breach is not None:
                break
    except Unsupported as exc:
        where = f"step {current.index} (line {current.line})" if current else "setup"
        return skipped(
            scenario, target, f"not expressible on {target} at {where}: {exc}", _since(start)
        )
    except ScenarioRuntimeError as exc:
        where = f"{scenario.origin}:{current.line}" if current else scenario.origin
        return errored(
            scenario,
            target,
            f"{where}: step {current.index if current else 0}: {exc}",
            _since(start),
        )
    finally:
        driver.close()
    result = judge(scenario, target, mismatches, driver.breach, narrative, _since(start))
    return dataclasses.replace(result, trace=tuple(trace))


def _since(start: float) -> float:
    return time.perf_counter() - start
