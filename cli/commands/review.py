"""``fencepost review``: review provider contracts and report findings (a CI gate).

``--tool NAME --config JSON`` reviews a sync tool's configuration beside each
contract (the tool's own keys, the JSON ``fencepost adapter NAME --config`` takes;
names from ``fencepost.adapters.ADAPTERS``, whose libraries are not imported).

Exit codes: 0 no finding at or above ``--fail-on`` (error by default); 1 some
finding is; 2 a usage error, a contract file that is missing, unreadable or
malformed (the message names the file and line), or a tool configuration with an
unknown key or a bad value (the message names the key).
"""

from __future__ import annotations

import json
import sys

import click

from fencepost.adapters import ADAPTERS
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
from fencepost.review.tools import TOOLS, ToolConfigError, plan


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


def _config(tool: str | None, text: str | None) -> dict[str, object]:
    """The --config JSON object; a usage error (exit 2) names what is wrong."""
    if text is None:
        return {}
    if tool is None:
        raise click.UsageError("--config is a tool's configuration: name the tool with --tool")
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise click.BadParameter(
            f"not JSON ({exc.msg} at column {exc.colno}); write e.g. '{{\"lag\": 10}}'",
            param_hint="'--config'",
        ) from None
    if not isinstance(value, dict):
        raise click.BadParameter(
            f"a JSON object of {tool}'s keys is required, got {type(value).__name__}",
            param_hint="'--config'",
        )
    return value


assert set(TOOLS) == set(ADAPTERS), "every adapter needs a review model (fencepost.review.tools)"


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
    "--tool",
    type=click.Choice(sorted(ADAPTERS)),
    default=None,
    help="Review this sync tool's configuration beside each contract.",
)
@click.option(
    "--config",
    "config_text",
    default=None,
    metavar="JSON",
    help="The tool's configuration, under its own keys (as `fencepost adapter NAME --config`); "
    "default {} (the tool's defaults).",
)
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
    tool: str | None,
    config_text: str | None,
    fail_on: str,
) -> None:
    """Review provider CONTRACT files (TOML) and report findings.

    Each finding has a severity (error, warning, note), a stable rule id and an
    explanation; findings about truth carry a Z3 witness: events that make the
    derived claim false. Each report ends with the declarations its verdict
    rests on, and what breaks if each is false. Exit 1 when a finding reaches
    --fail-on, 2 for usage errors, malformed contract files and tool
    configurations with an unknown key or a bad value.

    With --tool dlt|singer|airbyte (and --config JSON, the tool's own keys), the
    review says where that configuration loses rows on each contract's source
    (late commits, stored precision, partitions that appear later), with a
    witness in rows and commit times, and what a safe one costs.
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
    config = _config(tool, config_text)
    reports: list[ContractReport] = []
    for contract in loaded:
        if tool is None:
            reports.append(review(contract))
            continue
        try:
            reports.append(review(contract, plan(tool, config, contract)))
        except ToolConfigError as exc:
            click.echo(f"fencepost review: {contract.origin}: {exc}", err=True)
            sys.exit(2)
    threshold = Severity(fail_on)
    if as_json or fmt == "json":
        click.echo(render_json(reports, threshold), nl=False)
    elif fmt == "md":
        click.echo(render_markdown(reports), nl=False)
    else:
        click.echo(render_text(reports), nl=False)
    sys.exit(exit_code(reports, threshold))
