"""The scenario library's entry points: load scenarios, run them on targets, report.

Targets:

- ``model``: the formal model (:mod:`fencepost.scenarios.model_runner`);
- ``impl``: the implementation on a real store, ``memory`` or ``sqlite``
  (:mod:`fencepost.scenarios.impl_runner`);
- ``sut``: a SUT through the conformance harness
  (:mod:`fencepost.scenarios.sut_runner`): a command line, or fencepost's own
  implementation in-process when none is given (for a ``-bad`` scenario, the
  harness's mutant of the scenario's variant).

A scenario's ``not_on`` table says which targets cannot express it and why; it
is then skipped there without running (``force=True`` runs it anyway, which is
how the tests check that such a declaration is still needed).

``fencepost scenarios`` and ``fencepost check`` call :func:`run_all`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from fencepost.scenarios.format import (
    load_file,
    load_shipped_all,
    scenario_files,
)
from fencepost.scenarios.outcome import (
    TargetResult,
    Unsupported,
    drive,
    errored,
    skipped,
)
from fencepost.scenarios.spec import (
    Scenario,
    ScenarioError,
)

TARGETS: tuple[str, ...] = ("model", "impl", "sut")


@dataclass(frozen=True)
class RunOptions:
    """Where and how scenarios run.

    ``sut_command``: the SUT's argv (None: fencepost's own SUT in-process).
    ``force``: run on targets a scenario's ``not_on`` excludes.
    """

    targets: tuple[str, ...] = ("model", "impl")
    backend: str = "memory"
    sut_command: tuple[str, ...] | None = None
    timeout: float = 10.0
    force: bool = False


@dataclass
class Library:
    """Scenarios that loaded, and the errors (file:line) of those that did not."""

    scenarios: list[Scenario] = field(default_factory=list)
    errors: list[ScenarioError] = field(default_factory=list)


def load(paths: Sequence[Path | str] = ()) -> Library:
    """The shipped library when ``paths`` is empty, else the scenario files they name."""
    library = Library()
    if not paths:
        try:
            library.scenarios.extend(load_shipped_all())
        except ScenarioError as exc:
            library.errors.append(exc)
        return library
    try:
        files = scenario_files(paths)
    except ScenarioError as exc:
        library.errors.append(exc)
        return library
    for path in files:
        try:
            library.scenarios.append(load_file(path))
        except ScenarioError as exc:
            library.errors.append(exc)
    return library


def target_label(target: str, options: RunOptions) -> str:
    if target == "impl":
        return f"impl:{options.backend}"
    if target == "sut":
        return "sut:" + (" ".join(options.sut_command) if options.sut_command else "in-process")
    return target


def run_one(scenario: Scenario, target: str, options: RunOptions = RunOptions()) -> TargetResult:
    """Run ``scenario`` on one target and judge it."""
    label = target_label(target, options)
    declared = scenario.not_on.get(target)
    if declared is not None and not options.force:
        return skipped(scenario, label, f"declared not expressible on {target}: {declared}")
    try:
        if target == "model":
            from fencepost.scenarios.model_runner import ModelDriver

            return drive(scenario, label, ModelDriver(scenario))
        if target == "impl":
            from fencepost.scenarios.impl_runner import ImplDriver

            return drive(scenario, label, ImplDriver(scenario, options.backend))
        if target == "sut":
            return _run_sut(scenario, label, options)
    except Unsupported as exc:
        return skipped(scenario, label, f"not expressible on {target}: {exc}")
    raise ValueError(f"unknown target {target!r}; targets are {', '.join(TARGETS)}")


def _run_sut(scenario: Scenario, label: str, options: RunOptions) -> TargetResult:
    from fencepost.harness.transport import SubprocessSut, SutFactory
    from fencepost.scenarios.sut_runner import SutDriver, in_process_factory

    if options.sut_command:
        if scenario.variant is not None:
            return skipped(
                scenario,
                label,
                "a -bad scenario replays a known bug; it runs on fencepost's own mutant "
                "(--target sut without --sut), not on the given SUT",
            )
        factory: SutFactory = SubprocessSut(options.sut_command, prefetch=0)
    else:
        factory = in_process_factory(scenario.variant)
    try:
        return drive(scenario, label, SutDriver(scenario, factory, timeout=options.timeout))
    except OSError as exc:
        return errored(scenario, label, f"cannot run the SUT: {exc}")
    finally:
        factory.close()


def run_all(
    scenarios: Iterable[Scenario], options: RunOptions = RunOptions()
) -> list[TargetResult]:
    """Every scenario on every target of ``options``, in order."""
    return [run_one(s, t, options) for s in scenarios for t in options.targets]
