"""The pytest plugin: conformance phases as test items, and the ``fencepost_conform`` fixture.

``pytest --fencepost-sut "CMD"`` adds one item per phase of ``fencepost conform``
(:func:`fencepost.harness.conformance.phase_plan`: error handling, algebra,
each scripted base exhaustively, random schedules) for the levels asked
(``--fencepost-levels``, default all). Each item runs its phase alone against
fresh processes of CMD; a phase whose level the SUT does not implement is
skipped with the reason. A failure reads like any pytest failure: the rule and
what it means, what happened, the shortest schedule in domain words, and the
command that replays it (the transcript is left to ``fencepost conform --report``).

Collecting starts no process: the phases are known from the options alone, so
``--collect-only`` and ``-k`` cost nothing. Cost of a run: that of the phases
selected (see docs/conformance.md).

The fixture ``fencepost_conform`` runs a budget from inside a test and fails it
the same way; it returns the :class:`~fencepost.harness.conformance.ConformReport`.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from fencepost.harness.conformance import ConformOptions, ConformReport
    from fencepost.harness.transport import SutFactory

#: Options and ini keys, with their defaults (the same as ``fencepost conform``'s).
_DEFAULTS: dict[str, Any] = {
    "levels": "algebra,publisher,checkpointer",
    "seed": 0,
    "schedules": 20,
    "depth": 1,
    "workers": 2,
    "timeout": 10.0,
}


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("fencepost", "fencepost conformance (docs/pytest.md)")
    group.addoption(
        "--fencepost-sut",
        metavar="CMD",
        default=None,
        help="Add one test per conformance phase against the implementation CMD starts "
        "(split like a shell command; ini: fencepost_sut).",
    )
    group.addoption(
        "--fencepost-levels",
        metavar="LEVELS",
        default=None,
        help="Comma-separated protocol levels to test (default: all).",
    )
    group.addoption("--fencepost-seed", type=int, default=None, help="Base seed of the search.")
    group.addoption(
        "--fencepost-schedules",
        type=int,
        default=None,
        help="Random schedules after the exhaustive ones (default 20).",
    )
    group.addoption(
        "--fencepost-depth",
        type=int,
        default=None,
        help="Steps inserted into each scripted base (0-3, default 1).",
    )
    group.addoption(
        "--fencepost-workers",
        type=int,
        default=None,
        help="Most SUT processes per role in random worlds (default 2).",
    )
    group.addoption(
        "--fencepost-timeout",
        type=float,
        default=None,
        help="Seconds the SUT gets to answer each message (default 10).",
    )
    parser.addini(
        "fencepost_sut", "The SUT command for the conformance items (as --fencepost-sut)."
    )
    parser.addini("fencepost_levels", "Protocol levels to test (as --fencepost-levels).")
    parser.addini("fencepost_schedules", "Random schedules (as --fencepost-schedules).")


def _usage(message: str) -> pytest.UsageError:
    """A fencepost option that cannot mean anything (named, with what it accepts)."""
    return pytest.UsageError(message)


def _setting(config: pytest.Config, name: str) -> Any:
    value = config.getoption(f"--fencepost-{name}")
    if value is None and name in ("sut", "levels", "schedules"):
        value = config.getini(f"fencepost_{name}") or None
    return _DEFAULTS.get(name) if value is None else value


def options_from(config: pytest.Config, **overrides: Any) -> ConformOptions:
    """The conformance options the command line and the ini file ask for."""
    from fencepost.harness.conformance import MAX_SCHEDULES, ConformOptions, timeout_problem
    from fencepost.harness.protocol import LEVELS

    raw = {name: _setting(config, name) for name in _DEFAULTS}
    raw.update({k: v for k, v in overrides.items() if v is not None})
    levels = raw["levels"]
    names = levels.split(",") if isinstance(levels, str) else list(levels)
    chosen = frozenset(n.strip() for n in names if n.strip())
    if not chosen or chosen - set(LEVELS):
        raise _usage(
            f"fencepost levels {', '.join(sorted(chosen - set(LEVELS))) or '(none)'}: choose "
            f"from {', '.join(LEVELS)}, comma-separated"
        )
    try:
        schedules, depth, workers = int(raw["schedules"]), int(raw["depth"]), int(raw["workers"])
        timeout, seed = float(raw["timeout"]), int(raw["seed"])
    except (TypeError, ValueError) as exc:
        raise _usage(f"fencepost options: {exc}") from None
    problems = [
        f"--fencepost-timeout: {timeout_problem(timeout)}" if timeout_problem(timeout) else "",
        "" if 0 <= schedules <= MAX_SCHEDULES else f"--fencepost-schedules: 0 to {MAX_SCHEDULES}",
        "" if 0 <= depth <= 3 else "--fencepost-depth: 0 to 3",
        "" if 1 <= workers <= 8 else "--fencepost-workers: 1 to 8",
    ]
    if any(problems):
        raise _usage("fencepost options: " + "; ".join(p for p in problems if p))
    return ConformOptions(
        levels=chosen, seed=seed, schedules=schedules, workers=workers, timeout=timeout, depth=depth
    )


def _argv(command: str | Sequence[str]) -> tuple[str, ...]:
    if isinstance(command, str):
        try:
            argv = tuple(shlex.split(command))
        except ValueError as exc:
            raise _usage(f"fencepost SUT command {command!r}: {exc}") from None
    else:
        argv = tuple(command)
    if not argv:
        raise _usage("the fencepost SUT command is empty")
    return argv


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    command = _setting(config, "sut")
    if not command:
        return
    from fencepost.harness.conformance import phase_plan

    argv = _argv(command)
    options = options_from(config)
    collector = Phases.from_parent(session, name="fencepost", nodeid="fencepost")
    found: list[pytest.Item | pytest.Collector] = []
    for phase in phase_plan(options.levels, options):
        item = ConformPhase.from_parent(
            collector, name=phase, phase=phase, argv=argv, options=options
        )
        items.append(item)
        found.append(item)
    # counted like collected tests ("collected N items", -k and deselection figures)
    session.ihook.pytest_collectreport(
        report=pytest.CollectReport(collector.nodeid, "passed", None, found)
    )


class Phases(pytest.Collector):
    """The parent of the conformance items (node id ``fencepost``); collected by the hook above."""

    def collect(self) -> list[pytest.Item | pytest.Collector]:
        return []


class ConformanceFailure(Exception):
    """A conformance run found failures; ``str()`` is the report a person reads."""


class ConformPhase(pytest.Item):
    """One phase of ``fencepost conform`` against the SUT, as a test."""

    def __init__(
        self, *, phase: str, argv: tuple[str, ...], options: ConformOptions, **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        self.phase = phase
        self.argv = argv
        self.options = options
        self.add_marker(pytest.mark.fencepost)

    def runtest(self) -> None:
        import dataclasses

        options = dataclasses.replace(self.options, only=frozenset({self.phase}))
        report = run_conformance(self.argv, options)
        ran = any(p.name == self.phase for p in report.phases)
        if report.failures:
            for failure in report.failures:
                if failure.seed is not None:
                    self.user_properties.append(("seed", failure.seed))
                self.user_properties.append(("rule", failure.violation.rule.value))
            raise ConformanceFailure(describe_failures(report, shlex.join(self.argv)))
        if not ran:
            missing = sorted(self.options.levels - set(report.declared))
            why = report.problem or (
                f"the SUT declares {', '.join(report.declared) or 'no level'}; this phase "
                f"needs a level it does not declare ({', '.join(missing)})"
            )
            pytest.skip(why)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:
        if isinstance(excinfo.value, ConformanceFailure):
            return str(excinfo.value)
        return str(super().repr_failure(excinfo, style=style))

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return (
            self.config.rootpath,
            None,
            f"fencepost conform [{self.phase}] -- {shlex.join(self.argv)}",
        )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "fencepost: a conformance phase run by fencepost's pytest plugin"
    )


def run_conformance(
    command: str | Sequence[str] | SutFactory, options: ConformOptions
) -> ConformReport:
    """Run ``fencepost conform`` with ``options``; an internal error of fencepost is an error."""
    from fencepost.harness.conformance import conform
    from fencepost.harness.rules import HarnessError
    from fencepost.harness.transport import SubprocessSut

    own = isinstance(command, str | list | tuple)
    factory: Any = (
        SubprocessSut(_argv(command), prefetch=min(4, 2 * options.workers)) if own else command  # type: ignore[arg-type]
    )
    try:
        return conform(factory, options)
    except HarnessError as error:
        raise RuntimeError(
            f"fencepost INTERNAL ERROR in {error} (a bug in fencepost, not a verdict on the "
            f"SUT; seed {error.seed})"
        ) from error.cause
    finally:
        if own:
            factory.close()


def describe_failures(report: ConformReport, command: str) -> str:
    """Every failure in words, as ``fencepost conform`` prints it, without the transcripts."""
    from fencepost.harness.report import render_failure

    first = report.failures[0].violation if report.failures else None
    out = [
        f"{first.rule.value}: {first.message}"
        if first is not None
        else f"fencepost conform: NOT CONFORMANT ({report.sut})"
    ]
    if report.problem:
        out.append(f"  problem: {report.problem}")
    for failure in report.failures:
        out.append("")
        out.append(render_failure(failure, command, transcript=False))
    out.append("")
    out.append(
        f"For the transcript and a picture: fencepost conform --report DIR --html FILE -- {command}"
    )
    return "\n".join(out)


class Conformance:
    """The ``fencepost_conform`` fixture: call it with a SUT command (or factory) and a budget.

    Returns the report; a report with failures fails the test (``check=False``
    returns it for your own assertions instead).
    """

    def __init__(self, config: pytest.Config) -> None:
        self._config = config

    def __call__(
        self,
        command: str | Sequence[str] | SutFactory,
        *,
        levels: str | Sequence[str] | None = None,
        seed: int | None = None,
        schedules: int | None = None,
        depth: int | None = None,
        workers: int | None = None,
        timeout: float | None = None,
        phases: Sequence[str] | None = None,
        check: bool = True,
    ) -> ConformReport:
        import dataclasses

        options = options_from(
            self._config,
            levels=levels,
            seed=seed,
            schedules=schedules,
            depth=depth,
            workers=workers,
            timeout=timeout,
        )
        if phases is not None:
            options = dataclasses.replace(options, only=frozenset(phases))
        report = run_conformance(command, options)
        if check and not report.ok:
            shown = (
                command
                if isinstance(command, str)
                else (shlex.join(command) if isinstance(command, list | tuple) else report.sut)
            )
            pytest.fail(describe_failures(report, shown), pytrace=False)
        return report


@pytest.fixture
def fencepost_conform(request: pytest.FixtureRequest) -> Conformance:
    """Run ``fencepost conform`` from a test.

    ``fencepost_conform("python my_sut.py", schedules=50)``: see :class:`Conformance`.
    """
    return Conformance(request.config)
