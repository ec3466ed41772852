"""``fencepost sut``: fencepost's own implementation as a conformance-protocol SUT.

Reads the harness's JSON lines on stdin and answers on stdout (see
docs/conformance.md). ``--mutant NAME`` runs one of the catalog's deliberately
broken variants instead, to show what the harness catches.
"""

from __future__ import annotations

import sys

import click


@click.command(name="sut")
@click.option(
    "--mutant",
    metavar="NAME",
    default=None,
    help="Run a deliberately broken variant from the mutant catalog (see --list-mutants).",
)
@click.option("--list-mutants", is_flag=True, help="List the mutant catalog and exit.")
def command(mutant: str | None, list_mutants: bool) -> None:
    """Speak the conformance protocol (JSON lines on stdin/stdout) with fencepost's own
    publisher, partition reader and cut algebra.

    Usage: fencepost conform -- fencepost sut
    """
    from fencepost.mutants import CORRECT
    from fencepost.sut.adapter import serve_stdio

    variant = CORRECT
    if list_mutants or mutant is not None:
        from fencepost.mutants import CATALOG  # the bugs load only when one is asked for
    if list_mutants:
        for name, entry in sorted(CATALOG.items()):
            levels = ", ".join(sorted(entry.caught_by))
            click.echo(f"{name:<18} {entry.bug} (caught at: {levels})")
        return
    if mutant is not None:
        if mutant not in CATALOG:
            raise click.BadParameter(
                f"unknown mutant {mutant!r}; known: {', '.join(sorted(CATALOG))}",
                param_hint="--mutant",
            )
        variant = CATALOG[mutant]
    sys.exit(serve_stdio(variant))
