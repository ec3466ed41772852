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

The parts are independent (each builds its own worlds, stores and processes, from
the same seed), so :class:`Scheduler` runs them, and the pieces of the ones that
split (the proofs: the cut theorems and each protocol's induction), on ``jobs``
forked worker processes, longest first; the results come back in part order, the
same as a run on one core.
"""

from __future__ import annotations

import dataclasses
import importlib
import multiprocessing
import os
import sys
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass, field
from multiprocessing.reduction import ForkingPickler
from types import MappingProxyType, TracebackType
from typing import Any

from fencepost.vocabulary.backends import STORE_BACKENDS

#: The store backends ``fencepost check --backend`` takes: the vocabulary's.
BACKENDS: tuple[str, ...] = tuple(STORE_BACKENDS)


@dataclass(frozen=True, slots=True)
class GateOptions:
    """What the gate runs on and how hard it tries."""

    backend: str = "sqlite"
    refinement_examples: int = 60
    seed: int = 0
    conformance_schedules: int = 40
    #: Worker processes (``fencepost check --jobs``); 1 runs every part in this process.
    jobs: int = 1


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
class Pieces:
    """How a part splits into independent pieces that may run in parallel.

    ``keys`` names the pieces (with the seconds each takes on a quiet machine, to
    start the longest first); ``run`` runs one and returns picklable data;
    ``combine`` turns the pieces' data, in ``keys`` order, into the part's result.
    """

    keys: Callable[[GateOptions], tuple[tuple[str, float], ...]]
    run: Callable[[GateOptions, str], object]
    combine: Callable[[GateOptions, list[object]], PartResult]


@dataclass(frozen=True, slots=True)
class Part:
    """A named check of the gate.

    ``seconds`` is what the part takes on a quiet machine, for scheduling only (the
    longest start first); ``pieces`` splits it (``run`` then runs them in order).
    """

    name: str
    description: str
    run: Callable[[GateOptions], PartResult]
    seconds: float = 1.0
    pieces: Pieces | None = None
    #: The modules the part imports, loaded once before the workers fork (see
    #: :class:`Scheduler`), so no worker imports them again.
    modules: tuple[str, ...] = ()


def _in_order(pieces: Pieces) -> Callable[[GateOptions], PartResult]:
    """The part run on one core: every piece in order, combined."""

    def run(options: GateOptions) -> PartResult:
        keys = [key for key, _ in pieces.keys(options)]
        return pieces.combine(options, [pieces.run(options, key) for key in keys])

    return run


#: The pieces of the proofs part: the cut theorems, then each protocol's induction.
_THEOREMS = "theorems"


def _proof_keys(options: GateOptions) -> tuple[tuple[str, float], ...]:
    from fencepost.properties.protocol_actions import PROTOCOLS

    seconds = {_THEOREMS: 5.5, "composed": 3.0, "publication": 2.0}
    return tuple((key, seconds.get(key, 1.0)) for key in (_THEOREMS, *PROTOCOLS))


def _proof_piece(options: GateOptions, key: str) -> object:
    """(failures, how many checked): the theorems, or one protocol's obligations."""
    bad: list[str] = []
    if key == _THEOREMS:
        from fencepost.properties.proofs import THEOREMS

        for theorem in THEOREMS.values():
            result = theorem.run()
            if result.status is not theorem.expected:
                bad.append(
                    f"{theorem.name}: {result.status.value}, expected {theorem.expected.value}"
                    + (f" ({result.detail})" if result.detail else "")
                )
        return bad, len(THEOREMS)
    from fencepost.properties.protocol_proof import PROVED, prove_all

    # The protocol's safety for any size: section 7 as inductive invariants.
    obligations = prove_all(protocols=(key,))
    for o in obligations:
        if o.status != PROVED:
            bad.append(
                f"{o.obligation.name}: {o.status}"
                + (f" ({o.detail})" if o.detail else "")
                + " -- run `fencepost prove --protocol` for the counterexample"
            )
    return bad, len(obligations)


def _proofs_combined(options: GateOptions, outputs: list[object]) -> PartResult:
    pieces = [out for out in outputs if isinstance(out, tuple)]
    bad = [line for failures, _ in pieces for line in failures]
    n = pieces[0][1]
    m = sum(count for _, count in pieces[1:])
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
        f"{n} theorems about cuts came out as expected; {m:,} protocol obligations proved "
        "(section 7 at any size): the safety rules hold for any number of partitions and "
        "publishers",
    )


_PROOFS = Pieces(_proof_keys, _proof_piece, _proofs_combined)


def _explore(options: GateOptions) -> PartResult:
    from fencepost.explorer.render import render_counterexample, render_unreached
    from fencepost.explorer.search import HOLDS, VACUOUS, explore
    from fencepost.model.config import PARTS, default_config

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
        f"every state the model can reach in {len(results)} small worlds checked "
        f"({states:,} states): no safety rule broken, and all {reached} situations that "
        "must be possible were reached (so the check is not vacuous)",
        evidence=tuple(results),
    )


def _mutants(options: GateOptions) -> PartResult:
    from fencepost.explorer.search import VIOLATED, explore
    from fencepost.model import mutants
    from fencepost.model.config import default_config

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
    return PartResult(
        "mutants", True, f"each of {n} deliberately broken models caught by the rule it breaks"
    )


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
    summary = (
        f"{report.examples} random programs ({report.steps:,} steps, {len(report.coverage)} "
        f"kinds of transitions) run on the model and the implementation ({options.backend}) "
        "side by side: " + ("they agree" if report.passed else "they DISAGREE")
    )
    return PartResult("refinement", report.passed, summary, tuple(report.details()))


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
        f"{len(library.scenarios)} scenarios on the model and the implementation ({backend}): "
        f"{passed} pass, {skipped} do not apply (declared in the scenario), {len(bad)} fail"
    )
    details = tuple(
        "\n".join([f"{r.scenario} on {r.target}: {r.status}: {r.detail}", *r.narrative])
        for r in bad
    )
    return PartResult("scenarios", not bad, summary, details, evidence=tuple(results))


#: Seconds each conformance phase takes on a quiet 2-core machine (one job), only to
#: split the phases into groups of about equal cost; a phase not listed counts one
#: second. Each group is one ``conform`` with ``only`` its phases: seeds are drawn as in
#: a whole run, so together they run exactly what one ``conform`` runs, plus one
#: handshake and one pool of processes per group. A run is mostly waiting for the
#: SUT's answers (a message's round trip between processes), so the groups, one per
#: job, overlap their waits with each other and with the CPU-bound parts.
_PHASE_SECONDS: dict[str, float] = {
    "publisher-offsets exhaustive (depth 1)": 3.2,
    "publisher-reasons exhaustive (depth 1)": 3.3,
    "publisher-crash exhaustive (depth 1)": 2.9,
    "random schedules": 2.6,
    "publisher-fence exhaustive (depth 1)": 2.2,
    "checkpointer-ahead exhaustive (depth 1)": 1.8,
    "publisher-millis exhaustive (depth 1)": 1.7,
}


def _conformance_groups(options: GateOptions) -> tuple[tuple[str, ...], ...]:
    """The phases of a whole run, in plan order, split greedily into one group per job."""
    from fencepost.harness.conformance import ConformOptions, phase_plan
    from fencepost.harness.protocol import LEVELS

    plan = phase_plan(LEVELS, ConformOptions(schedules=options.conformance_schedules))
    count = max(1, options.jobs)
    groups: list[list[str]] = [[] for _ in range(count)]
    load = [0.0] * count
    for name in sorted(plan, key=lambda n: -_PHASE_SECONDS.get(n, 1.0)):
        lightest = load.index(min(load))
        groups[lightest].append(name)
        load[lightest] += _PHASE_SECONDS.get(name, 1.0)
    return tuple(tuple(n for n in plan if n in group) for group in groups if group)


def _conformance_keys(options: GateOptions) -> tuple[tuple[str, float], ...]:
    groups = _conformance_groups(options)
    return tuple(
        (f"group {i + 1}", sum(_PHASE_SECONDS.get(n, 1.0) for n in group) + 1.0)
        for i, group in enumerate(groups)
    )


def _conformance_piece(options: GateOptions, key: str) -> object:
    """One group's ConformReport: the conformance harness against ``fencepost sut``."""
    import sys

    from fencepost.harness.conformance import ConformOptions, conform
    from fencepost.harness.transport import SubprocessSut

    only = _conformance_groups(options)[int(key.split()[-1]) - 1]
    # Through the real wire: `fencepost sut` in its own processes, as outsiders are tested.
    factory = SubprocessSut([sys.executable, "-m", "fencepost", "sut"], prefetch=2)
    try:
        return conform(
            factory,
            ConformOptions(
                seed=options.seed,
                schedules=options.conformance_schedules,
                only=frozenset(only),
            ),
        )
    finally:
        factory.close()


def _conformance_combined(options: GateOptions, outputs: list[object]) -> PartResult:
    from fencepost.harness.conformance import ConformOptions, ConformReport, phase_plan
    from fencepost.harness.findings import group
    from fencepost.harness.protocol import LEVELS
    from fencepost.harness.report import render_finding

    halves = [out for out in outputs if isinstance(out, ConformReport)]
    first = halves[0]
    coverage = first.coverage
    for half in halves[1:]:
        coverage = coverage.merged(half.coverage)
    plan = phase_plan(LEVELS, ConformOptions(schedules=options.conformance_schedules))
    order = {name: i for i, name in enumerate(plan)}
    report = dataclasses.replace(
        first,
        phases=tuple(
            sorted((p for h in halves for p in h.phases), key=lambda p: order.get(p.name, 0))
        ),
        failures=tuple(f for h in halves for f in h.failures),
        equivalent_representations=sum(h.equivalent_representations for h in halves),
        seconds=sum(h.seconds for h in halves),
        problem=next((h.problem for h in halves if h.problem), None),
        processes=sum(h.processes for h in halves),
        reused=sum(h.reused for h in halves),
        coverage=coverage,
        notes=tuple(dict.fromkeys(n for h in halves for n in h.notes)),
    )
    summary = (
        f"fencepost's implementation tested through the wire protocol as yours would be "
        f"(fencepost sut): {report.runs} runs, {report.messages:,} messages, "
        f"levels {', '.join(report.tested)}"
    )
    if report.ok:
        return PartResult("conformance", True, summary + ", conformant", evidence=(report,))
    findings = group(report.failures)  # one per distinct bug, not one per phase
    details = [
        render_finding(f, n, len(findings), "fencepost sut") for n, f in enumerate(findings, 1)
    ]
    if report.problem:
        details.append(report.problem)
    return PartResult(
        "conformance", False, summary + ", NOT conformant", tuple(details), evidence=(report,)
    )


_CONFORMANCE = Pieces(_conformance_keys, _conformance_piece, _conformance_combined)


PARTS: dict[str, Part] = {
    part.name: part
    for part in (
        Part(
            "proofs",
            "Z3: the cut algebra, and section 7 at any size",
            _in_order(_PROOFS),
            pieces=_PROOFS,
            modules=("fencepost.properties.proofs", "fencepost.properties.protocol_proof"),
        ),
        Part(
            "explore",
            "bounded exhaustive exploration of the model",
            _explore,
            2.0,
            modules=("fencepost.explorer.search", "fencepost.explorer.render"),
        ),
        Part(
            "mutants",
            "every model mutant caught",
            _mutants,
            2.0,
            modules=("fencepost.explorer.search", "fencepost.model.mutants"),
        ),
        Part(
            "refinement",
            "model and implementation in lockstep (Hypothesis)",
            _refinement,
            7.0,
            modules=("fencepost.properties.refinement",),
        ),
        Part(
            "scenarios",
            "the scenario library on model and implementation",
            _scenarios,
            1.2,
            modules=("fencepost.scenarios.library",),
        ),
        Part(
            "conformance",
            "the conformance harness against fencepost sut",
            _in_order(_CONFORMANCE),
            pieces=_CONFORMANCE,
            modules=(
                "fencepost.harness.conformance",
                "fencepost.harness.transport",
                "fencepost.harness.report",
            ),
        ),
    )
}


def _too_slow(exc: BaseException) -> bool:
    """Whether ``exc`` is a Z3 check that reached its wall-clock guard (never a verdict)."""
    solver = sys.modules.get("fencepost.solver")
    return solver is not None and isinstance(exc, solver.MachineTooSlow)


def run_part(part: Part, options: GateOptions) -> PartResult:
    """Run one part, timing it; an unexpected exception is a failed part, not a crash.

    A Z3 check that reached the wall-clock guard (``MachineTooSlow``) is not a
    failed part: it propagates, and ``fencepost check`` exits 3.
    """
    started = time.perf_counter()
    try:
        result = part.run(options)
    except Exception as exc:  # a broken part must fail the gate with its reason
        if _too_slow(exc):
            raise
        result = PartResult(part.name, False, f"crashed: {type(exc).__name__}: {exc}")
    seconds = time.perf_counter() - started
    return dataclasses.replace(result, seconds=seconds)


@dataclass(frozen=True, slots=True)
class _Done:
    """A piece's outcome, as it comes back from a worker (picklable)."""

    output: object = None
    seconds: float = 0.0
    #: ``type: message`` of an exception the piece raised (a crashed part).
    crashed: str = ""
    #: The message of a Z3 check that reached the wall-clock guard.
    too_slow: str = ""


def _run_piece(name: str, key: str | None, options: GateOptions) -> _Done:
    """In a worker: one piece of the part ``name`` (the whole part when ``key`` is None)."""
    part = PARTS[name]
    started = time.perf_counter()
    try:
        if key is None:
            output: object = run_part(part, options)
        else:
            assert part.pieces is not None
            output = part.pieces.run(options, key)
    except Exception as exc:
        if _too_slow(exc):
            return _Done(too_slow=str(exc))
        return _Done(crashed=f"{type(exc).__name__}: {exc}")
    return _Done(output, time.perf_counter() - started)


def _mapping_proxy(items: dict[Any, Any]) -> MappingProxyType[Any, Any]:
    return MappingProxyType(items)


def _reduce_mapping_proxy(
    proxy: MappingProxyType[Any, Any],
) -> tuple[Callable[[dict[Any, Any]], MappingProxyType[Any, Any]], tuple[dict[Any, Any]]]:
    return _mapping_proxy, (dict(proxy),)


# Results come back from the workers pickled; the scenario evidence holds read-only
# mappings, which pickle cannot carry by itself (only multiprocessing's pickler learns it).
ForkingPickler.register(MappingProxyType, _reduce_mapping_proxy)


class GateTooSlow(RuntimeError):
    """A Z3 check of the gate reached its wall-clock guard: the machine was too slow."""


def default_jobs() -> int:
    """Worker processes by default: one more than the cores (at most 3), one without ``fork``.

    One more than the cores because the pieces wait a good part of their time (the
    conformance runs on the SUT's answers, the refinement and the scenarios on SQLite's
    fsync): a third worker on two cores fills those waits (benchmarks/check.py: on 2
    cores, --jobs 3 ran 2.0 times faster than one job, --jobs 2 1.8 times).
    """
    if "fork" not in multiprocessing.get_all_start_methods():
        return 1
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1
    return 1 if cores < 2 else min(3, cores + 1)


def typical_seconds(names: Sequence[str], options: GateOptions) -> float:
    """What the parts ``names`` usually take, in wall seconds, on a quiet machine.

    The sum of the parts' (and pieces') one-job seconds above, shared by the jobs that
    can run at once (at most one per core): an estimate to tell the user, never used to
    decide anything. docs/performance.md has the measured figures (about 25 s for the
    whole gate on two cores with three jobs).
    """
    total = 0.0
    for name in names:
        part = PARTS[name]
        pieces = part.pieces.keys(options) if part.pieces is not None else ()
        total += sum(seconds for _, seconds in pieces) if pieces else part.seconds
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1
    return total / max(1, min(options.jobs, cores))


class Scheduler:
    """Runs the parts named, on ``options.jobs`` forked workers, longest pieces first.

    A context manager: entering forks the workers and hands them every piece (do it
    before any thread starts, such as a live display); :meth:`result` waits for one
    part and returns it, in any order asked. Each worker runs a piece exactly as the
    part would run it in this process (same options, same seed), so a part's result
    does not depend on ``jobs``; a part's ``seconds`` is the sum of its pieces'.
    With ``jobs`` 1 (or no ``fork``) nothing is forked and :meth:`result` runs the
    part here. Cost: one process per job, and pickling each piece's result back.
    """

    def __init__(self, names: Sequence[str], options: GateOptions) -> None:
        self.names = list(names)
        self.options = options
        self._pool: ProcessPoolExecutor | None = None
        self._futures: dict[str, list[Future[_Done]]] = {}

    def __enter__(self) -> Scheduler:
        if self.options.jobs <= 1 or "fork" not in multiprocessing.get_all_start_methods():
            return self
        work: list[tuple[float, str, str | None]] = []
        for name in self.names:
            part = PARTS[name]
            if part.pieces is None:
                work.append((part.seconds, name, None))
            else:
                work.extend((seconds, name, key) for key, seconds in part.pieces.keys(self.options))
        # Import every part's machinery here, once, before forking: each worker then
        # shares it instead of importing it again (about 2 s of CPU for the whole gate,
        # paid once instead of once per worker).
        for name in self.names:
            for module in PARTS[name].modules:
                importlib.import_module(module)
        context = multiprocessing.get_context("fork")
        self._pool = ProcessPoolExecutor(max_workers=self.options.jobs, mp_context=context)
        futures: dict[tuple[str, str | None], Future[_Done]] = {}
        for _, name, key in sorted(work, key=lambda w: -w[0]):
            futures[(name, key)] = self._pool.submit(_run_piece, name, key, self.options)
        for name in self.names:
            part = PARTS[name]
            keys = [None] if part.pieces is None else [k for k, _ in part.pieces.keys(self.options)]
            self._futures[name] = [futures[(name, key)] for key in keys]
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self._pool is not None:
            processes = list((getattr(self._pool, "_processes", None) or {}).values())
            self._pool.shutdown(wait=kind is None, cancel_futures=True)
            if kind is not None:  # interrupted or failed: stop the pieces still running
                for process in processes:
                    process.terminate()

    def result(self, name: str) -> PartResult:
        """The result of the part ``name`` (waiting for its pieces).

        Raises :class:`GateTooSlow` when one of its Z3 checks reached the guard.
        """
        part = PARTS[name]
        if self._pool is None:
            try:
                return run_part(part, self.options)
            except Exception as exc:
                if _too_slow(exc):
                    raise GateTooSlow(f"{name}: {exc}") from exc
                raise
        done = [future.result() for future in self._futures[name]]
        seconds = sum(d.seconds for d in done)
        for d in done:
            if d.too_slow:
                raise GateTooSlow(f"{name}: {d.too_slow}")
        crashed = [d.crashed for d in done if d.crashed]
        if crashed:
            return PartResult(name, False, f"crashed: {crashed[0]}", seconds=seconds)
        if part.pieces is None:
            result = done[0].output
            assert isinstance(result, PartResult)
            return result
        try:
            combined = part.pieces.combine(self.options, [d.output for d in done])
        except Exception as exc:  # a broken part must fail the gate with its reason
            combined = PartResult(name, False, f"crashed: {type(exc).__name__}: {exc}")
        return dataclasses.replace(combined, seconds=seconds)


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
