"""``fencepost scenarios``: run the scenario library on the model, the implementation, a SUT.

Without PATHS the shipped library runs; with PATHS, the given scenario files and
folders (every ``*.toml`` in a folder). One line per scenario and target: pass,
fail, skip (the target cannot express the scenario, with the reason) or error
(the scenario's own world is inconsistent). A failure shows the step and line,
expected against actual, or the property that broke, and what happened step by
step.

Exit 0 when nothing failed, 1 when any scenario failed on any target, 2 for a
usage error or a scenario file that does not validate (``file:line: message``).
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import click
from rich.console import Console
from rich.markup import escape

from fencepost.reports.text import json_text, printable
from fencepost.views.output import (
    check_output,
    report_options,
    wants_report,
    write_output,
    write_outputs,
)
from fencepost.vocabulary.backends import STORE_BACKENDS

_TARGET_CHOICES = ("model", "impl", "sut", "both", "all")
_STYLE = {"pass": "green", "fail": "bold red", "skip": "yellow", "error": "bold magenta"}


def _targets(choice: str, sut: str | None) -> tuple[str, ...]:
    chosen = {
        "model": ("model",),
        "impl": ("impl",),
        "sut": ("sut",),
        "both": ("model", "impl"),
        "all": ("model", "impl", "sut"),
    }[choice]
    if sut is not None and "sut" not in chosen:
        chosen = (*chosen, "sut")
    return chosen


def _junit(results: list[object]) -> str:
    """One test case per scenario and target, by the one JUnit writer."""
    from fencepost.reports.junit import Case, Outcome, Suite, junit_xml
    from fencepost.scenarios.outcome import TargetResult

    kinds = {"fail": "failure", "error": "error", "skip": "skipped"}
    cases = []
    for r in results:
        assert isinstance(r, TargetResult)
        kind = kinds.get(r.status)
        text = "\n".join(r.narrative) if kind == "failure" else None
        outcome = None if kind is None else Outcome(kind, r.detail, None, text)
        cases.append(Case(f"scenarios.{r.target}", r.scenario, r.seconds, outcome))
    return junit_xml(Suite("fencepost scenarios", tuple(cases)))


@click.command(name="scenarios")
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option(
    "--target",
    type=click.Choice(_TARGET_CHOICES),
    default="both",
    show_default=True,
    help="Where to run: the model, the implementation, a SUT through the conformance "
    "harness, both (model and impl) or all three.",
)
@click.option(
    "--backend",
    # the backends the scenario runner drives (fencepost.scenarios.impl_runner.BACKENDS)
    type=click.Choice([b.name for b in STORE_BACKENDS.values() if b.in_scenarios]),
    default="memory",
    show_default=True,
    help="The implementation's store.",
)
@click.option(
    "--sut",
    "sut",
    metavar="COMMAND",
    help="Run the scenarios against this SUT command too (one process per worker, "
    "speaking the conformance protocol). Without it, --target sut uses fencepost's own "
    "implementation in-process.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the results as JSON.")
@click.option(
    "--junit", "junit", type=click.Path(dir_okay=False, path_type=Path), help="Write JUnit XML."
)
@click.option(
    "--force", is_flag=True, help="Also run on targets a scenario declares it cannot run on."
)
@click.option("--list", "list_only", is_flag=True, help="List the scenarios and exit.")
@click.option("--format-help", is_flag=True, help="Print the scenario file format and exit.")
@click.option(
    "-v", "--verbose", is_flag=True, help="Show every scenario's steps, not only failures'."
)
@report_options("each failing scenario drawn as a timeline")
def command(
    paths: tuple[Path, ...],
    target: str,
    backend: str,
    sut: str | None,
    as_json: bool,
    junit: Path | None,
    force: bool,
    list_only: bool,
    format_help: bool,
    verbose: bool,
    html: Path | None,
    summary_md: Path | None,
) -> None:
    """Run scenario files (default: the shipped library) on the model, the
    implementation or a SUT.

    Exit 0 when none failed, 1 when any failed, 2 on usage or validation errors.
    """
    from fencepost.scenarios.format import (
        FORMAT_HELP,
    )
    from fencepost.scenarios.library import RunOptions, load, run_all

    if format_help:
        click.echo(FORMAT_HELP, nl=False)
        return
    sut_argv: tuple[str, ...] | None = None
    if sut is not None:
        try:
            sut_argv = tuple(shlex.split(sut))
        except ValueError as exc:
            raise click.BadParameter(
                f"cannot split the command: {exc}", param_hint="--sut"
            ) from None
        if not sut_argv:
            raise click.BadParameter("the SUT command is empty", param_hint="--sut")
    check_output(html, "--html")
    check_output(summary_md, "--summary-md")
    check_output(junit, "--junit")
    library = load(paths)
    err = Console(stderr=True, highlight=False, soft_wrap=True)
    if library.errors:
        for error in library.errors:
            err.print(escape(str(error)), markup=True)
        err.print(f"{len(library.errors)} scenario file(s) did not validate; nothing was run")
        raise SystemExit(2)
    if list_only:
        for sc in library.scenarios:
            click.echo(f"{sc.name:<48} {sc.source}")
        return
    options = RunOptions(
        targets=_targets(target, sut), backend=backend, sut_command=sut_argv, force=force
    )
    results = run_all(library.scenarios, options)
    failed = [r for r in results if not r.ok]
    if junit is not None:
        write_output(junit, _junit(list(results)), "--junit")
    if as_json:
        counts = {s: sum(1 for r in results if r.status == s) for s in _STYLE}
        click.echo(
            json_text(
                json.dumps(
                    {"ok": not failed, "counts": counts, "results": [r.to_json() for r in results]},
                    ensure_ascii=False,
                    indent=2,
                )
            )
        )
    else:
        out = Console(highlight=False, soft_wrap=True)
        width = max((len(r.scenario) for r in results), default=10)
        label = max((len(r.target) for r in results), default=5)
        for r in results:
            style = _STYLE[r.status]
            out.print(
                f"[{style}]{r.status.upper():<5}[/] {escape(r.target):<{label}} "
                f"{escape(printable(r.scenario)):<{width}}  {escape(printable(r.detail))}"
            )
            if r.status == "fail":
                for m in r.mismatches:
                    out.print(f"      mismatch: {escape(printable(str(m)))}")
                if r.breach is not None:
                    out.print(f"      property: {escape(printable(str(r.breach)))}")
            if r.narrative and (r.status == "fail" or verbose):
                for line in r.narrative:
                    out.print(f"        {escape(printable(line))}")
        counts = {s: sum(1 for r in results if r.status == s) for s in _STYLE}
        out.print(
            f"{len(library.scenarios)} scenarios, {len(results)} runs: "
            + ", ".join(f"{n} {s}" for s, n in counts.items() if n)
        )
    if wants_report(html, summary_md):
        from fencepost.views.scenarios import scenarios_report

        shown = shlex.join(["fencepost", "scenarios", *map(str, paths), "--target", target])
        write_outputs(scenarios_report(results, len(library.scenarios), shown), html, summary_md)
    if failed:
        raise SystemExit(1)
