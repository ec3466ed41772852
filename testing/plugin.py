"""The pytest plugin: conformance phases as test items, and the ``fencepost_conform`` fixture.

``pytest --fencepost-sut "CMD"`` adds one item per phase of ``fencepost conform``
(:func:`fencepost.harness.conformance.phase_plan`: error handling, algebra,
each scripted base exhaustively, random schedules) for the levels asked
(``--fencepost-levels``, default all). Each item runs its phase alone against
fresh processes of CMD; a phase whose level the SUT does not implement is
skipped with the reason. A failure reads like any pytest failure: the rule and
what it means, what happened, the shortest schedule in domain words, and the
command that replays it (the transcript is left to ``fencepost conform --report``).

The items run only when asked (:func:`_select`): ``--fencepost-sut`` or
``--fencepost`` on the command line, a node id naming them (``pytest
fencepost``, ``pytest "fencepost::algebra exhaustive"``), ``-m fencepost``, or
a run of the whole suite (no path, or the rootdir). With ``fencepost_sut`` in
the ini file, ``pytest tests/test_x.py::one`` collects none of them, so it
costs what it cost without the plugin. The header says which case applies.

Collecting starts no process: the phases are known from the options alone, so
``--collect-only`` and ``-k`` cost nothing. Cost of a run: that of the phases
selected (see docs/conformance.md).

The fixture ``fencepost_conform`` runs a budget from inside a test and fails it
the same way; it returns the :class:`~fencepost.harness.conformance.ConformReport`.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from dataclasses import dataclass
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

#: The node id of the conformance items' parent: ``pytest fencepost`` runs them all,
#: ``pytest "fencepost::algebra exhaustive"`` one phase.
NODE = "fencepost"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("fencepost", "fencepost conformance (docs/pytest.md)")
    group.addoption(
        "--fencepost-sut",
        metavar="CMD",
        default=None,
        help="Run one test per conformance phase against the implementation CMD starts "
        "(split like a shell command; ini: fencepost_sut). Given here, the phases run "
        "whatever paths are named.",
    )
    group.addoption(
        "--fencepost",
        action="store_true",
        default=False,
        help="Run the conformance phases of the SUT the ini file names (fencepost_sut), "
        "whatever paths are named.",
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
        help="Most SUT processes per role in random worlds (1-8, default 2).",
    )
    group.addoption(
        "--fencepost-timeout",
        type=float,
        default=None,
        help="Seconds the SUT gets to answer each message (default 10).",
    )
    parser.addini(
        "fencepost_sut",
        "The SUT command for the conformance items (as --fencepost-sut; the items run "
        "in a run of the whole suite, or when named: pytest fencepost).",
    )
    parser.addini("fencepost_levels", "Protocol levels to test (as --fencepost-levels).")
    parser.addini("fencepost_schedules", "Random schedules (as --fencepost-schedules).")
    parser.addini("fencepost_seed", "Base seed (as --fencepost-seed).")
    parser.addini("fencepost_depth", "Steps inserted into each base (as --fencepost-depth).")
    parser.addini("fencepost_workers", "Processes per role (as --fencepost-workers).")
    parser.addini("fencepost_timeout", "Seconds per message (as --fencepost-timeout).")


def _usage(message: str) -> pytest.UsageError:
    """A fencepost option that cannot mean anything (named, with what it accepts)."""
    return pytest.UsageError(message)


def _setting(config: pytest.Config, name: str) -> tuple[Any, str]:
    """The value of option ``name`` and where it was given, as an error message names it.

    The command line wins over the ini file; the default is named by the option.
    """
    value = config.getoption(f"--fencepost-{name}")
    if value is not None:
        return value, f"--fencepost-{name} {value}"
    raw = config.getini(f"fencepost_{name}")
    if raw not in (None, "", []):
        text = " ".join(raw) if isinstance(raw, list) else str(raw)
        where = f" ({config.inipath.name})" if config.inipath is not None else ""
        return text, f"fencepost_{name} = {text}{where}"
    return _DEFAULTS.get(name), f"--fencepost-{name} (default {_DEFAULTS.get(name)})"


def _number(kind: type[int] | type[float], value: Any, where: str) -> Any:
    if isinstance(value, kind) and not isinstance(value, bool):
        return value
    try:
        return kind(str(value).strip())
    except ValueError:
        noun = "an integer" if kind is int else "a number"
        raise _usage(f"{where} is not {noun}") from None


def options_from(config: pytest.Config, **overrides: Any) -> ConformOptions:
    """The conformance options the command line and the ini file ask for.

    ``overrides`` (the fixture's arguments) win. A value out of range is a usage
    error naming the option, where it was given, the value and the range.
    """
    from fencepost.harness.conformance import (
        MAX_SCHEDULES,
        TIMEOUT_RANGE,
        ConformOptions,
        timeout_problem,
    )
    from fencepost.harness.protocol import LEVELS

    given = {name: _setting(config, name) for name in _DEFAULTS}
    for name, value in overrides.items():
        if value is not None:
            given[name] = (value, f"fencepost_conform({name}={value!r})")
    levels, where = given["levels"]
    names = levels.split(",") if isinstance(levels, str) else list(levels)
    chosen = frozenset(n.strip() for n in names if n.strip())
    if not chosen or chosen - set(LEVELS):
        unknown = ", ".join(sorted(chosen - set(LEVELS))) or "no level"
        raise _usage(
            f"{where}: {unknown} is not a level; levels must be some of "
            f"{', '.join(LEVELS)}, comma-separated"
        )
    seed = _number(int, *given["seed"])
    schedules = _number(int, *given["schedules"])
    depth = _number(int, *given["depth"])
    workers = _number(int, *given["workers"])
    timeout = _number(float, *given["timeout"])
    low, high = TIMEOUT_RANGE
    problems = [
        f"{given['timeout'][1]} is out of range: timeout must be a number of seconds from "
        f"{low:g} to {high:g} (below {low:g} s a correct SUT fails on a busy machine)"
        if timeout_problem(timeout)
        else "",
        ""
        if 0 <= schedules <= MAX_SCHEDULES
        else f"{given['schedules'][1]} is out of range: schedules must be 0-{MAX_SCHEDULES}",
        "" if 0 <= depth <= 3 else f"{given['depth'][1]} is out of range: depth must be 0-3",
        "" if 1 <= workers <= 8 else f"{given['workers'][1]} is out of range: workers must be 1-8",
    ]
    if any(problems):
        raise _usage("; ".join(p for p in problems if p))
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


@dataclass(frozen=True)
class Selection:
    """Whether this run collects the conformance items, which ones, and why (the header).

    ``phases`` is None for every phase, or the phase names the node ids named.
    """

    command: str | None
    run: bool
    phases: frozenset[str] | None
    why: str


_SELECTION = pytest.StashKey[Selection]()


def _on_command_line(config: pytest.Config) -> bool:
    """``--fencepost-sut`` or ``--fencepost`` typed on this command line (not in addopts)."""
    return any(
        arg in ("--fencepost", "--fencepost-sut") or arg.startswith("--fencepost-sut=")
        for arg in (str(a) for a in config.invocation_params.args)
    )


def _names_root(config: pytest.Config, arg: str) -> bool:
    """An argument naming the rootdir or a folder above it: the whole project."""
    if "::" in arg:
        return False
    path = (config.invocation_params.dir / arg).resolve()
    root = config.rootpath.resolve()
    return path == root or path in root.parents


def _marker_asks(config: pytest.Config) -> bool:
    """``-m`` keeps an item because it carries the ``fencepost`` marker (``-m fencepost``).

    ``-m "not slow"`` keeps unmarked items too, so it names nothing.
    """
    expression = config.getoption("markexpr", default="") or ""
    if not expression:
        return False
    # pytest has no public way to evaluate a -m expression; its own evaluator is used,
    # and tests/testing/test_plugin.py ("marker") notices if a pytest release moves it.
    from _pytest.mark.expression import Expression

    def ours(name: str, /, **kwargs: str | int | bool | None) -> bool:
        return name == "fencepost" and not kwargs

    def none(name: str, /, **kwargs: str | int | bool | None) -> bool:
        return False

    try:
        compiled = Expression.compile(expression)
        return compiled.evaluate(ours) and not compiled.evaluate(none)
    except Exception:  # a bad -m expression is pytest's to report, with its own words
        return False


def _select(config: pytest.Config) -> Selection:
    """Decide, before anything is collected, whether the conformance items run.

    They run when asked, and never as a side effect: a run of the whole suite
    (``pytest`` with no path, or a path naming the rootdir), a node id naming
    them (``fencepost``, ``fencepost::PHASE``), ``-m fencepost``, or
    ``--fencepost``/``--fencepost-sut`` on the command line. ``pytest
    tests/test_x.py::one`` collects none of them. The node ids are taken out
    of the arguments (no such file exists for pytest to find).
    """
    command, _ = _setting(config, "sut")
    named: set[str] = set()
    whole = False
    kept: list[str] = []
    invocation = config.invocation_params.dir
    for arg in config.args:
        head, _, rest = str(arg).partition("::")
        if head == NODE and not (invocation / head).exists():
            if rest:
                named.add(rest)
            else:
                whole = True
            continue
        kept.append(arg)
    if named or whole:
        config.args[:] = kept
        if not command:
            raise _usage(
                f"{NODE}: the arguments name fencepost's conformance phases but no SUT is "
                "configured; give --fencepost-sut CMD or fencepost_sut in the ini file"
            )
    if not command:
        if config.getoption("--fencepost"):
            raise _usage(
                "--fencepost: no SUT to test; give --fencepost-sut CMD or set fencepost_sut "
                "in the ini file"
            )
        return Selection(None, False, None, "")
    phases = None if whole or not named else frozenset(named)
    source = config.args_source
    if _on_command_line(config):
        why = "asked on the command line"
    elif named or whole:
        why = f"named ({NODE})"
    elif _marker_asks(config):
        why = "-m fencepost"
    elif source == pytest.Config.ArgsSource.TESTPATHS or (
        source == pytest.Config.ArgsSource.INVOCATION_DIR and _names_root(config, config.args[0])
    ):
        why = "a run of the whole suite (no path given)"
    elif source == pytest.Config.ArgsSource.ARGS and any(_names_root(config, a) for a in kept):
        why = "a path naming the rootdir"
    else:
        return Selection(
            command,
            False,
            None,
            f"not collected: the arguments name none (run them with `pytest {NODE}`, "
            "`--fencepost`, or a run of the whole suite)",
        )
    return Selection(command, True, phases, f"collected: {why}")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "fencepost: a conformance phase run by fencepost's pytest plugin"
    )
    config.stash[_SELECTION] = _select(config)


def pytest_report_header(config: pytest.Config) -> str | None:
    selection = config.stash.get(_SELECTION, None)
    if selection is None or selection.command is None:
        return None
    return f"fencepost: conformance phases of {selection.command!r} {selection.why}"


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    selection = config.stash.get(_SELECTION, None)
    if selection is None or not selection.run or selection.command is None:
        return
    from fencepost.harness.conformance import phase_plan

    argv = _argv(selection.command)
    options = options_from(config)
    plan = phase_plan(options.levels, options)
    if selection.phases is not None and selection.phases - set(plan):
        unknown = ", ".join(f"{NODE}::{p}" for p in sorted(selection.phases - set(plan)))
        raise _usage(
            f"{unknown}: no such conformance phase at these options; the phases are: "
            + "; ".join(plan)
        )
    collector = Phases.from_parent(session, name=NODE, nodeid=NODE)
    found: list[pytest.Item | pytest.Collector] = []
    for phase in plan:
        if selection.phases is not None and phase not in selection.phases:
            continue
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
