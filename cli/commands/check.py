"""``fencepost check``: the CI gate for changes to frontier logic.

Runs the parts of :mod:`fencepost.gate` (all of them by default) and prints each
part once. On a terminal: a live table that grows as parts finish (a spinner on
the part running), left as the one summary table. In a log (stdout not a
terminal): the same table as plain text, a row printed as each part finishes,
never wrapped, with no colour and no progress bar. ``NO_COLOR`` turns colour off
everywhere. Failing parts' details follow the table.

``--html FILE`` and ``--summary-md FILE`` write the results as a page and as
Markdown (appended to ``$GITHUB_STEP_SUMMARY`` too when it is set).

The parts run on ``--jobs`` worker processes (three by default on two cores: the
pieces wait on IPC and fsync a good part of the time): the proofs split into the
cut theorems and each protocol's induction, the conformance run into one group of
phases per job, the longest pieces start first, and the table is the same as on
one core, row by row in part order.

Exit 0 when every part passes, 1 when any fails, 2 on a usage error, 3 when the
machine was too slow (a Z3 check reached its wall-clock guard before its
deterministic resource limit: no verdict, never a failed proof).
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import click
from rich.console import Console, Group
from rich.live import Live
from rich.spinner import Spinner
from rich.status import Status
from rich.table import Table

from fencepost.gate import (
    BACKENDS,
    PARTS,
    GateOptions,
    GateRun,
    GateTooSlow,
    PartResult,
    Scheduler,
    default_jobs,
    junit_xml,
    typical_seconds,
)
from fencepost.reports.text import printable
from fencepost.views.output import (
    check_output,
    report_options,
    wants_report,
    write_output,
    write_outputs,
)


def _parse_only(values: tuple[str, ...]) -> list[str]:
    chosen: list[str] = []
    for value in values:
        for name in (v.strip() for v in value.split(",")):
            if not name:
                continue
            if name not in PARTS:
                raise click.BadParameter(
                    f"unknown part {name!r}; parts are {', '.join(PARTS)}", param_hint="--only"
                )
            if name not in chosen:
                chosen.append(name)
    return chosen or list(PARTS)


def consoles() -> tuple[Console, Console]:
    """stdout and stderr consoles: colour only on a terminal and never under ``NO_COLOR``."""
    no_color = bool(os.environ.get("NO_COLOR"))
    return (
        Console(highlight=False, no_color=no_color),
        Console(stderr=True, highlight=False, no_color=no_color),
    )


@click.command(name="check")
@click.option(
    "--only",
    "only",
    multiple=True,
    metavar="PARTS",
    help=f"Run only these parts (comma-separated or repeated): {', '.join(PARTS)}.",
)
@click.option(
    "--backend",
    type=click.Choice(BACKENDS),
    default="sqlite",
    show_default=True,
    help="Store backend for the refinement check (postgres reads FENCEPOST_DATABASE_URL).",
)
@click.option("--seed", type=int, default=0, show_default=True, help="Seed for randomized parts.")
@click.option(
    "--examples",
    type=click.IntRange(1, 100_000),
    default=60,
    show_default=True,
    help="Hypothesis examples for the refinement check.",
)
@click.option(
    "--jobs",
    type=click.IntRange(1, 64),
    default=None,
    help="Worker processes for the parts (default: cores + 1, at most 3; 1 runs them in turn).",
)
@click.option(
    "--junit", "junit", type=click.Path(dir_okay=False, path_type=Path), help="Write JUnit XML."
)
@report_options("coverage, counterexamples as timelines")
@click.option("--list", "list_parts", is_flag=True, help="List the parts and exit.")
def command(
    only: tuple[str, ...],
    backend: str,
    seed: int,
    examples: int,
    jobs: int | None,
    junit: Path | None,
    html: Path | None,
    summary_md: Path | None,
    list_parts: bool,
) -> None:
    """The CI gate: proofs, bounded exploration, mutants, stateful refinement,
    scenarios and self-conformance on the project's own implementation.

    Exit 0 when every part passes, 1 when any fails, 2 on usage errors, 3 when the
    machine was too slow for a Z3 check's wall-clock guard (no verdict).
    """
    if list_parts:
        for part in PARTS.values():
            click.echo(f"{part.name:<12} {part.description}")
        return
    names = _parse_only(only)
    if backend == "postgres" and not os.environ.get("FENCEPOST_DATABASE_URL"):
        raise click.UsageError(
            "--backend postgres needs FENCEPOST_DATABASE_URL "
            "(for example postgresql://postgres@127.0.0.1:5432/test)"
        )
    check_output(junit, "--junit")
    check_output(html, "--html")
    check_output(summary_md, "--summary-md")
    options = GateOptions(
        backend=backend,
        refinement_examples=examples,
        seed=seed,
        jobs=default_jobs() if jobs is None else jobs,
    )
    out, err = consoles()
    title = f"fencepost check (backend {backend})"
    click.echo(_welcome(names, options))
    run = GateRun()
    live = _live_table if out.is_terminal else _plain_table
    try:
        # The workers fork before the live display starts its thread.
        with Scheduler(names, options) as scheduler, live(out, err, title, run) as started:
            for name in names:
                started(name)
                run.results.append(scheduler.result(name))
    except GateTooSlow as slow:
        click.echo(f"fencepost check: {slow}", err=True)
        click.echo("the gate was NOT decided: machine too slow (exit 3)", err=True)
        raise SystemExit(3) from None
    for r in run.results:
        if not r.ok and r.details:
            if out.is_terminal:
                out.rule(f"[bold red]{r.name}[/]")
            else:
                click.echo(f"\n== {r.name}: details")
            for detail in r.details:
                out.print(printable(detail), markup=False, soft_wrap=True)
    if junit is not None:
        write_output(junit, junit_xml(run.results), "--junit")
    if wants_report(html, summary_md):
        from fencepost.views.check import check_report

        chosen = ["--only", ",".join(names)] if only else []
        shown = shlex.join(["fencepost", "check", "--backend", backend, *chosen])
        write_outputs(check_report(run, backend, shown), html, summary_md)
    verdict = "every part passed" if run.ok else "the gate FAILED"
    out.print(f"[bold]{verdict}[/]" if out.is_terminal else verdict)
    click.echo("\n".join(_next_steps(run)))
    if not run.ok:
        raise SystemExit(1)


#: What to run next on one's own system, after the gate on fencepost's own passed.
NEXT_STEPS = (
    (
        "fencepost conform -- YOUR_CMD",
        "test your implementation, in any language, through "
        "the JSON-lines protocol (docs/conformance.md)",
    ),
    (
        "fencepost review contract.toml",
        "review your sources' provider contracts (docs/contracts.md)",
    ),
    ("fencepost audit LOG", "check the recorded history of your live system (docs/audit.md)"),
)


def _welcome(names: list[str], options: GateOptions) -> str:
    """The first line: what runs and how long it usually takes (so a wait is expected)."""
    seconds = typical_seconds(names, options)
    rounded = max(5, round(seconds / 5.0) * 5)
    what = "every part" if len(names) == len(PARTS) else f"{len(names)} of {len(PARTS)} parts"
    line = (
        f"fencepost check: {what} of the gate on fencepost's own implementation "
        f"({', '.join(names)}); usually about {rounded} s with {options.jobs} "
        f"job{'s' if options.jobs != 1 else ''} (longer on a busy machine)"
    )
    busy = _busy()
    return line if busy is None else f"{line}\n{busy}"


def _busy() -> str | None:
    """A second line when the machine is busy now (the load average above twice the
    cores): the estimate is a quiet machine's, and a wait several times longer is not a
    hang. None where the load cannot be read."""
    try:
        load = os.getloadavg()[0]
    except OSError:
        return None
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1
    if load <= 2 * cores:
        return None
    return (
        f"  the machine is busy now (load average {load:.1f} on {cores} "
        f"core{'s' if cores != 1 else ''}): expect several times that"
    )


def _next_steps(run: GateRun) -> list[str]:
    """The last lines: on a pass, what to run on one's own system; on a failure, how to
    look at a failing part alone."""
    if not run.ok:
        failing = ",".join(r.name for r in run.results if not r.ok)
        return [
            "next: each failing part's details are above; run it alone with "
            f"fencepost check --only {failing}"
        ]
    width = max(len(command) for command, _ in NEXT_STEPS)
    return [
        "next, on your own system:",
        *(f"  {command:<{width}}  {what}" for command, what in NEXT_STEPS),
    ]


def _verdict(result: PartResult, styled: bool) -> str:
    if not styled:
        return "pass" if result.ok else "FAIL"
    return "[green]pass[/]" if result.ok else "[bold red]FAIL[/]"


def _rich_table(title: str, results: list[PartResult], running: str | None) -> Table:
    table = Table(title=title)
    table.add_column("part", no_wrap=True)
    table.add_column("verdict", no_wrap=True)
    table.add_column("seconds", justify="right", no_wrap=True)
    table.add_column("summary", overflow="fold")
    for r in results:
        table.add_row(r.name, _verdict(r, True), f"{r.seconds:.1f}", r.summary)
    if running is not None:
        table.add_row(running, Spinner("dots"), "", f"{PARTS[running].description} ...")
    return table


@contextmanager
def _live_table(
    out: Console, err: Console, title: str, run: GateRun
) -> Iterator[Callable[[str], None]]:
    """On a terminal: the table, live, one row per finished part and a spinner on the next."""
    with Live(_rich_table(title, run.results, None), console=out, refresh_per_second=8) as live:

        def started(name: str) -> None:
            live.update(_rich_table(title, run.results, name), refresh=True)

        try:
            yield started
        finally:
            live.update(Group(_rich_table(title, run.results, None)), refresh=True)


#: Column widths of the plain table (the summary column is never cut or wrapped).
_PLAIN = "{:<12} {:<7} {:>8}  {}"


@contextmanager
def _plain_table(
    out: Console, err: Console, title: str, run: GateRun
) -> Iterator[Callable[[str], None]]:
    """In a log: the table as plain text, a row as each part finishes (no bar, no colour).

    When stderr is a terminal (stdout redirected) a transient spinner there says
    which part runs; it leaves nothing behind.
    """
    click.echo(title)
    click.echo(_PLAIN.format("part", "verdict", "seconds", "summary"))
    shown = 0
    spinner: list[Status] = []  # the transient spinner on stderr, while a part runs

    def flush() -> None:
        nonlocal shown
        for r in run.results[shown:]:
            click.echo(_PLAIN.format(r.name, _verdict(r, False), f"{r.seconds:.1f}", r.summary))
        shown = len(run.results)

    def stop() -> None:
        while spinner:
            spinner.pop().stop()

    def started(name: str) -> None:
        stop()
        flush()
        if err.is_terminal:
            spinner.append(err.status(f"{name}: {PARTS[name].description} ...", spinner="dots"))
            spinner[-1].start()

    try:
        yield started
    finally:
        stop()
        flush()
