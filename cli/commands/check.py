"""``fencepost check``: the CI gate for changes to frontier logic.

Runs the parts of :mod:`fencepost.gate` (all of them by default) with live
progress on stderr and a summary table on stdout. Exit 0 when every part
passes, 1 when any fails, 2 on a usage error.
"""

from __future__ import annotations

import os
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

from fencepost.gate import BACKENDS, PARTS, GateOptions, GateRun, junit_xml, run_part
from fencepost.outputs import check_output_file, write_output


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
    "--junit", "junit", type=click.Path(dir_okay=False, path_type=Path), help="Write JUnit XML."
)
@click.option("--list", "list_parts", is_flag=True, help="List the parts and exit.")
def command(
    only: tuple[str, ...],
    backend: str,
    seed: int,
    examples: int,
    junit: Path | None,
    list_parts: bool,
) -> None:
    """The CI gate: proofs, bounded exploration, mutants, stateful refinement,
    scenarios and self-conformance on the project's own implementation.

    Exit 0 when every part passes, 1 when any fails, 2 on usage errors.
    """
    if list_parts:
        for part in PARTS.values():
            click.echo(f"{part.name:<12} {part.description}")
        return
    names = _parse_only(only)
    check_output_file(junit, "--junit")
    if backend == "postgres" and not os.environ.get("FENCEPOST_DATABASE_URL"):
        raise click.UsageError(
            "--backend postgres needs FENCEPOST_DATABASE_URL "
            "(for example postgresql://postgres@127.0.0.1:5432/test)"
        )
    options = GateOptions(backend=backend, refinement_examples=examples, seed=seed)
    out = Console()
    err = Console(stderr=True)
    run = GateRun()
    for name in names:
        part = PARTS[name]
        with err.status(f"[bold]{name}[/]: {part.description} ...", spinner="dots"):
            result = run_part(part, options)
        run.results.append(result)
        mark = "[green]pass[/]" if result.ok else "[bold red]FAIL[/]"
        err.print(f"{mark} {name} ({result.seconds:.1f} s): {result.summary}", highlight=False)

    table = Table(title=f"fencepost check (backend {backend})")
    table.add_column("part", no_wrap=True)
    table.add_column("verdict", no_wrap=True)
    table.add_column("seconds", justify="right", no_wrap=True)
    table.add_column("summary", overflow="fold")
    for r in run.results:
        verdict = "[green]pass[/]" if r.ok else "[bold red]FAIL[/]"
        table.add_row(r.name, verdict, f"{r.seconds:.1f}", r.summary)
    out.print(table)
    for r in run.results:
        if not r.ok and r.details:
            out.rule(f"[bold red]{r.name}[/]")
            for detail in r.details:
                out.print(detail, highlight=False, markup=False)
    if junit is not None:
        write_output(junit, junit_xml(run.results))
    verdict = "every part passed" if run.ok else "the gate FAILED"
    out.print(f"[bold]{verdict}[/]", highlight=False)
    if not run.ok:
        raise SystemExit(1)
