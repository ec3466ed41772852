"""``fencepost review``: review provider contracts and report findings (a CI gate).

Exit codes: 0 no finding at or above ``--fail-on`` (error by default); 1 some
finding is; 2 a usage error or a contract file that is missing, unreadable or
malformed (the message names the file and line).
"""

from __future__ import annotations

import sys

import click

from fencepost.contracts import (
    Contract,
    ContractError,
    ContractErrors,
    UnknownContract,
    every_error,
    load_contract,
    load_shipped_contract,
    shipped_contract_names,
)
from fencepost.review.findings import Severity
from fencepost.review.report import (
    ContractReport,
    exit_code,
    render_json,
    render_markdown,
    render_text,
    review,
)


def _load_all(paths: tuple[str, ...], providers: tuple[str, ...], every: bool) -> list[Contract]:
    """Every contract named; the mistakes of every file are reported together (exit 2)."""
    contracts: list[Contract] = []
    names = list(providers)
    if every:
        names += [n for n in shipped_contract_names() if n not in names]
    for name in names:
        contracts.append(load_shipped_contract(name))
    problems: list[ContractError] = []
    for path in paths:
        try:
            contracts.append(load_contract(path))
        except ContractError as exc:
            problems.extend(every_error(exc))
    if problems:
        raise problems[0] if len(problems) == 1 else ContractErrors(problems)
    return contracts


@click.command(name="review")
@click.argument("contracts", nargs=-1, metavar="CONTRACT...")
@click.option(
    "--provider",
    "providers",
    multiple=True,
    metavar="NAME",
    help="Review a shipped contract by name (repeatable); see `fencepost contracts list`.",
)
@click.option("--all", "every", is_flag=True, help="Review every shipped contract.")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "md", "json"]),
    default="text",
    show_default=True,
    help="Report format.",
)
@click.option("--json", "as_json", is_flag=True, help="Same as --format json.")
@click.option(
    "--fail-on",
    type=click.Choice([s.value for s in Severity]),
    default="error",
    show_default=True,
    help="Exit 1 when a finding is at least this severe.",
)
def command(
    contracts: tuple[str, ...],
    providers: tuple[str, ...],
    every: bool,
    fmt: str,
    as_json: bool,
    fail_on: str,
) -> None:
    """Review provider CONTRACT files (TOML) and report findings.

    Each finding has a severity (error, warning, note), a stable rule id and an
    explanation; findings about truth carry a Z3 witness: events that make the
    derived claim false. Exit 1 when a finding reaches --fail-on, 2 for usage
    errors and malformed contract files.
    """
    if not contracts and not providers and not every:
        raise click.UsageError(
            "name at least one CONTRACT file, a --provider NAME, or --all "
            f"(shipped: {', '.join(shipped_contract_names())})"
        )
    try:
        loaded = _load_all(contracts, providers, every)
    except UnknownContract as exc:
        raise click.BadParameter(exc.problem, param_hint="'--provider'") from None
    except ContractError as exc:
        for error in every_error(exc):
            click.echo(f"fencepost review: {error}", err=True)
        sys.exit(2)
    reports: list[ContractReport] = [review(c) for c in loaded]
    threshold = Severity(fail_on)
    if as_json or fmt == "json":
        click.echo(render_json(reports, threshold), nl=False)
    elif fmt == "md":
        click.echo(render_markdown(reports), nl=False)
    else:
        click.echo(render_text(reports), nl=False)
    sys.exit(exit_code(reports, threshold))
