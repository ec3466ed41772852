"""The CI gate behind ``fencepost check``: every check of the project's own implementation.

Each *part* is one kind of evidence that the frontier logic is still right:

- ``proofs``: the cut-algebra theorems, each with its expected Z3 verdict, and the
  protocol's safety at any size (section 7 as inductive invariants, every
  obligation proved);
- ``explore``: bounded exhaustive exploration of the model; every invariant holds;
- ``mutants``: every known bug switched on in the model is still caught (the
  invariants have teeth);
- ``refinement``: Hypothesis runs the model and the implementation in lockstep on
  the chosen backend; abstraction and invariants agree after every step;
- ``scenarios``: the scenario library (field bugs included) on the model and on
  the implementation;
- ``conformance``: the conformance harness against ``fencepost sut``, the
  project's implementation speaking the wire protocol as outsiders do.

A part returns a :class:`PartResult`; the gate passes only when every part
selected passes. Parts import their machinery lazily, so ``--only proofs``
never loads the model or the harness.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass, field

BACKENDS = ("memory", "sqlite", "postgres")


@dataclass(frozen=True, slots=True)
class GateOptions:
    """What the gate runs on and how hard it tries."""

    backend: str = "sqlite"
    refinement_examples: int = 60
    seed: int = 0
    conformance_schedules: int = 40


@dataclass(frozen=True, slots=True)
class PartResult:
    """The verdict of one part: ok, a one-line summary, and details for failures."""

    name: str
    ok: bool
    summary: str
    details: tuple[str, ...] = ()
    seconds: float = 0.0
    #: The part's results as data (a ConformReport, ExploreResults, scenario
    #: TargetResults), for reports that draw them (``fencepost check --html``).
    evidence: tuple[object, ...] = ()


@dataclass(frozen=True, slots=True)
class Part:
    """A named check of the gate."""

    name: str
    description: str
    run: Callable[[GateOptions], PartResult]


def _proofs(options: GateOptions) -> PartResult:
    from fencepost.properties.proofs import THEOREMS
    from fencepost.properties.protocol_proof import PROVED, prove_all

    bad: list[str] = []
    for theorem in THEOREMS.values():
        result = theorem.run()
        if result.status is not theorem.expected:
            bad.append(
                f"{theorem.name}: {result.status.value}, expected {theorem.expected.value}"
                + (f" ({result.detail})" if result.detail else "")
            )
    n = len(THEOREMS)
    # The protocol's safety for any size: section 7 as inductive invariants.
    obligations = prove_all()
    for o in obligations:
        if o.status != PROVED:
            bad.append(
                f"{o.obligation.name}: {o.status}"
                + (f" ({o.detail})" if o.detail else "")
                + " -- run `fencepost prove --protocol` for the counterexample"
            )
    m = len(obligations)
    if bad:
        return PartResult(
            "proofs",
            False,
            f"{len(bad)} of {n} theorems and {m} protocol obligations not as expected",
            tuple(bad),
        )
    return PartResult(
        "proofs",
        True,
        f"{n} theorems, each with its expected verdict; {m} protocol obligations proved "
        "(section 7 at any size)",
    )


def _explore(options: GateOptions) -> PartResult:
    from fencepost.model.config import PARTS, default_config
    from fencepost.model.explorer import HOLDS, VACUOUS, explore
    from fencepost.model.render import render_counterexample, render_unreached

    lines: list[str] = []
    failures: list[str] = []
    results = []
    states = 0
    reached = 0
    for part in PARTS:
        result = explore(default_config(part), keep_graph=False)
        results.append(result)
        states += result.states
        reached += len(result.reached)
        lines.append(f"{part}: {result.states:,} states, depth {result.depth}, {result.verdict}")
        if result.verdict == VACUOUS:
            failures.append(render_unreached(result))
        elif result.verdict != HOLDS:
            failures.append(render_counterexample(result) if result.violation else lines[-1])
    if failures:
        return PartResult(
            "explore", False, "; ".join(lines), tuple(failures), evidence=tuple(results)
        )
    return PartResult(
        "explore",
        True,
        f"{states:,} states, all invariants hold, {reached} sometimes properties reached "
        f"({'; '.join(lines)})",
        evidence=tuple(results),
    )


def _mutants(options: GateOptions) -> PartResult:
    from fencepost.model import mutants
    from fencepost.model.config import default_config
    from fencepost.model.explorer import VIOLATED, explore

    missed: list[str] = []
    for name, mutant in mutants.MUTANTS.items():
        for part, invariant in mutant.expected:
            result = explore(default_config(part, mutant=name), keep_graph=False)
            if result.verdict != VIOLATED or invariant not in result.broken:
                missed.append(
                    f"{name} in {part}: expected {invariant} to break, got {result.verdict} "
                    f"{', '.join(result.broken) or ''}".rstrip()
                )
    n = len(mutants.MUTANTS)
    if missed:
        return PartResult("mutants", False, f"{len(missed)} mutant runs not caught", tuple(missed))
    return PartResult("mutants", True, f"all {n} model mutants caught by the invariant they break")


def _refinement(options: GateOptions) -> PartResult:
    import os

    from fencepost.properties.refinement import run_refinement

    report = run_refinement(
        options.backend,
        options.refinement_examples,
        options.seed,
        database_url=os.environ.get("FENCEPOST_DATABASE_URL")
        if options.backend == "postgres"
        else None,
    )
    return PartResult("refinement", report.passed, report.summary, tuple(report.details()))


def _scenarios(options: GateOptions) -> PartResult:
    from fencepost.scenarios.library import RunOptions, load, run_all

    library = load()
    if library.errors:
        return PartResult(
            "scenarios",
            False,
            f"{len(library.errors)} scenario files do not validate",
            tuple(str(e) for e in library.errors),
        )
    # The scenario driver runs the implementation on memory or SQLite; a PostgreSQL
    # gate runs scenarios on SQLite (PostgreSQL gets the refinement part).
    backend = "sqlite" if options.backend == "postgres" else options.backend
    results = run_all(library.scenarios, RunOptions(targets=("model", "impl"), backend=backend))
    bad = [r for r in results if not r.ok]
    passed = sum(r.status == "pass" for r in results)
    skipped = sum(r.status == "skip" for r in results)
    summary = (
        f"{len(library.scenarios)} scenarios on model and impl ({backend}): "
        f"{passed} pass, {skipped} skip (declared), {len(bad)} fail"
    )
    details = tuple(
        "\n".join([f"{r.scenario} on {r.target}: {r.status}: {r.detail}", *r.narrative])
        for r in bad
    )
    return PartResult("scenarios", not bad, summary, details, evidence=tuple(results))


def _conformance(options: GateOptions) -> PartResult:
    import sys

    from fencepost.harness.conformance import ConformOptions, conform
    from fencepost.harness.report import render_failure
    from fencepost.harness.transport import SubprocessSut

    # Through the real wire: `fencepost sut` in its own processes, as outsiders are tested.
    factory = SubprocessSut([sys.executable, "-m", "fencepost", "sut"], prefetch=4)
    try:
        report = conform(
            factory,
            ConformOptions(seed=options.seed, schedules=options.conformance_schedules),
        )
    finally:
        factory.close()
    summary = (
        f"fencepost sut: {report.runs} runs, {report.messages:,} messages, "
        f"levels {', '.join(report.tested)}"
    )
    if report.ok:
        return PartResult("conformance", True, summary + ", conformant", evidence=(report,))
    details = [render_failure(f, "fencepost sut") for f in report.failures]
    if report.problem:
        details.append(report.problem)
    return PartResult(
        "conformance", False, summary + ", NOT conformant", tuple(details), evidence=(report,)
    )


PARTS: dict[str, Part] = {
    part.name: part
    for part in (
        Part("proofs", "Z3: the cut algebra, and section 7 at any size", _proofs),
        Part("explore", "bounded exhaustive exploration of the model", _explore),
        Part("mutants", "every model mutant caught", _mutants),
        Part("refinement", "model and implementation in lockstep (Hypothesis)", _refinement),
        Part("scenarios", "the scenario library on model and implementation", _scenarios),
        Part("conformance", "the conformance harness against fencepost sut", _conformance),
    )
}


def run_part(part: Part, options: GateOptions) -> PartResult:
    """Run one part, timing it; an unexpected exception is a failed part, not a crash."""
    started = time.perf_counter()
    try:
        result = part.run(options)
    except Exception as exc:  # a broken part must fail the gate with its reason
        result = PartResult(part.name, False, f"crashed: {type(exc).__name__}: {exc}")
    seconds = time.perf_counter() - started
    return dataclasses.replace(result, seconds=seconds)


def junit_xml(results: list[PartResult]) -> str:
    """The results as JUnit XML (one test case per part), by the one JUnit writer."""
    from fencepost.reports.junit import Case, Outcome, Suite
    from fencepost.reports.junit import junit_xml as write

    cases = tuple(
        Case(
            "fencepost.check",
            r.name,
            r.seconds,
            None
            if r.ok
            else Outcome("failure", r.summary, None, "\n\n".join(r.details) or r.summary),
            r.summary if r.ok else None,
        )
        for r in results
    )
    return write(Suite("fencepost check", cases))


@dataclass
class GateRun:
    """The results of one gate run, in the order the parts ran."""

    results: list[PartResult] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return bool(self.results) and all(r.ok for r in self.results)
