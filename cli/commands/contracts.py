"""``fencepost contracts``: list, show and start from the shipped provider contracts.

``list`` gives one row per provider (order, finality sources, review verdict);
``show NAME`` prints one contract's facts with their citations (``--format json``
for the typed data, ``--format toml`` for the file itself); ``init [PATH]`` writes a
template that ships in the package (``--template minimal``, the default, or any
shipped contract) to start a contract of your own. Exit 2 for an unknown name (with
a suggestion) or a file that already exists (unless ``--force``).
"""

from __future__ import annotations

import importlib.resources
import json
import sys
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

from fencepost.contracts import (
    Contract,
    ContractError,
    Guarantee,
    UnknownContract,
    every_error,
    load_shipped_contract,
    shipped_contract_names,
    template_names,
    template_text,
)
from fencepost.inputs.tomllines import format_path
from fencepost.review.findings import Severity
from fencepost.review.report import review


def _load(name: str) -> Contract:
    try:
        return load_shipped_contract(name)
    except UnknownContract as exc:
        raise click.BadParameter(exc.problem, param_hint="'NAME'") from None
    except ContractError as exc:  # a shipped file that does not load is a packaging bug
        for error in every_error(exc):
            click.echo(f"fencepost contracts: {error}", err=True)
        sys.exit(2)


def _finality(contract: Contract) -> str:
    final = [
        c.name for c in contract.claims.values() if c.certifies and c.guarantee is Guarantee.FINAL
    ]
    return ", ".join(final) if final else "none"


def _order(contract: Contract) -> str:
    o = contract.order_facts
    successor = "exact successor" if o.successor else "no successor"
    shared = ", shared positions" if o.shared_positions else ""
    opaque = ", opaque" if not o.comparable else ""
    return f"{o.kind.value} ({successor}{shared}{opaque})"


@click.group(name="contracts")
def command() -> None:
    """List and show the shipped provider contracts."""


@command.command(name="list")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def list_contracts(as_json: bool) -> None:
    """One row per shipped contract, with its review verdict."""
    rows = []
    for name in shipped_contract_names():
        contract = _load(name)
        report = review(contract, rests_on=False)
        rows.append(
            {
                "name": name,
                "title": contract.provider.title,
                "order": _order(contract),
                "across_partitions": contract.partitions.order.value,
                "frontier": contract.partitions.frontier.value,
                "finality": _finality(contract),
                "errors": report.count(Severity.ERROR),
                "warnings": report.count(Severity.WARNING),
                "notes": report.count(Severity.NOTE),
            }
        )
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    table = Table(title="Shipped provider contracts (fencepost review --provider NAME)")
    for column in ("name", "provider", "order", "across", "finality", "review"):
        table.add_column(column, overflow="fold")
    for row in rows:
        verdict = f"{row['errors']}E {row['warnings']}W {row['notes']}N"
        table.add_row(
            str(row["name"]),
            str(row["title"]),
            str(row["order"]),
            f"{row['across_partitions']} / {row['frontier']}",
            str(row["finality"]),
            verdict,
        )
    Console(width=max(120, Console().width)).print(table)


@command.command(name="init")
@click.argument("path", required=False, default="contract.toml", metavar="[PATH]")
@click.option(
    "--template",
    default="minimal",
    show_default=True,
    metavar="NAME",
    help="minimal, or any shipped contract (see `fencepost contracts list`).",
)
@click.option("--force", is_flag=True, help="Overwrite PATH if it exists.")
def init_contract(path: str, template: str, force: bool) -> None:
    """Write a contract template to PATH (default contract.toml; - for stdout).

    The templates ship in the package, so this works wherever fencepost is
    installed. Edit the facts, cite your provider's documentation, then run
    `fencepost review PATH`.
    """
    try:
        text = template_text(template)
    except UnknownContract as exc:
        hint = f"; did you mean {exc.suggestion!r}?" if exc.suggestion else ""
        raise click.BadParameter(
            f"no template named {template!r} (known: {', '.join(template_names())}){hint}",
            param_hint="'--template'",
        ) from None
    if path == "-":
        click.echo(text, nl=False)
        return
    target = Path(path)
    if target.is_dir():
        target = target / "contract.toml"
    if target.exists() and not force:
        raise click.BadParameter(
            f"{target} exists; choose another PATH or pass --force to overwrite it",
            param_hint="'PATH'",
        )
    try:
        target.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise click.BadParameter(
            f"cannot write {target}: {exc.strerror or exc}", param_hint="'PATH'"
        ) from None
    click.echo(
        f"wrote {target} (template {template}); edit its facts, cite your sources, then run: "
        f"fencepost review {target}"
    )


@command.command(name="show")
@click.argument("name")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json", "toml"]),
    default="text",
    show_default=True,
)
def show_contract(name: str, fmt: str) -> None:
    """Print one shipped contract: its facts, boundaries, claims and citations."""
    contract = _load(name)
    if fmt == "toml":
        resource = importlib.resources.files("fencepost.contracts") / f"{name}.toml"
        click.echo(resource.read_text(encoding="utf-8"), nl=False)
        return
    if fmt == "json":
        click.echo(json.dumps(contract.to_json(), indent=2, ensure_ascii=False))
        return
    click.echo(_describe(contract), nl=False)


def _cites(ids: tuple[str, ...], assumed: bool = False) -> str:
    if ids:
        return f" [{', '.join(ids)}]"
    return " [assumed]" if assumed else " [uncited]"


def _cursor_lines(c: Contract) -> list[str]:
    cur = c.cursor
    rows: list[str] = []
    if cur.late_commits is not None:
        e = cur.late_commits.evidence
        rows.append(
            f"  late commits: max_delay {cur.late_commits.shown}{_cites(e.cite, e.assumed)}"
        )
    if cur.precision is not None:
        e = cur.precision.evidence
        rows.append(
            f"  precision: stored {cur.precision.stored_shown}, query "
            f"{cur.precision.query_shown}{_cites(e.cite, e.assumed)}"
        )
    if cur.mutability is not None:
        e = cur.mutability.evidence
        value = "unknown" if cur.mutability.mutable is None else str(cur.mutability.mutable).lower()
        rows.append(f"  mutable: {value}{_cites(e.cite, e.assumed)}")
    if cur.new_partitions is not None:
        e = cur.new_partitions.evidence
        old = cur.new_partitions.old_rows
        value = "unknown" if old is None else str(old).lower()
        rows.append(f"  new partitions hold old rows: {value}{_cites(e.cite, e.assumed)}")
    if cur.horizon is not None:
        e = cur.horizon.evidence
        rows.append(f"  certified horizon: {cur.horizon.boundary}{_cites(e.cite, e.assumed)}")
    if cur.reads is not None:
        e = cur.reads.evidence
        rows.append(
            f"  one read is one snapshot: {str(cur.reads.snapshot).lower()}"
            f"{_cites(e.cite, e.assumed)}"
        )
    if not rows and cur.field is None:
        return []
    head = f"cursor: {cur.field}" if cur.field else "cursor:"
    return ["", head, *rows]


def _describe(c: Contract) -> str:
    o = c.order_facts
    m = c.membership_facts
    p = c.pagination
    lines = [
        f"{c.provider.title} ({c.provider.name})",
        f"version: {c.provider.version}",
        f"file: {c.origin}",
        "",
        "order:",
        f"  {o.name}: {_order(c)}; encoding {o.encoding.value}{_cites(o.cite, o.assumed)}",
        f"  resolution: {o.resolution}",
    ]
    if o.shared_positions:
        ties = o.ties.value if o.ties else "not stated"
        tiebreak = f" ({o.tiebreaker})" if o.tiebreaker else ""
        own = o.evidence.get("ties")
        evidence = _cites(own.cite, own.assumed) if own else (" [uncited]" if o.ties else "")
        lines.append(f"  ties: {ties}{tiebreak}{evidence}")
    lines += ["", "boundaries:"]
    for b in c.boundaries.values():
        lines.append(f"  {b.name} ({b.surface.value}) -> {b.cut.value}{_cites(b.cite, b.assumed)}")
        lines.append(f"      {b.meaning}")
    lines += ["", "claims (finality sources):"]
    if not c.claims:
        lines.append("  none")
    for claim in c.claims.values():
        use = "certifies" if claim.certifies else "does not certify"
        adjust = f", adjust {claim.adjust.value}" if claim.adjust.value != "none" else ""
        lines.append(
            f"  {claim.name}: {claim.boundary} is {claim.guarantee.value}, {use} as "
            f"{claim.as_kind.value}{adjust}, {claim.occurs.value}"
            f"{_cites(claim.cite, claim.assumed)}"
        )
        lines.append(f"      {claim.statement}")
    lines += ["", "resume:"]
    if not c.resume:
        lines.append("  none")
    for kind, rule in c.resume.items():
        adjust = f" (adjust {rule.adjust.value})" if rule.adjust.value != "none" else ""
        lines.append(f"  a {kind.value} checkpoint resumes with {rule.boundary}{adjust}")
    lines += [
        "",
        f"partitions: {c.partitions.unit}s, order {c.partitions.order.value}, "
        f"frontier {c.partitions.frontier.value}"
        f"{_cites(c.partitions.cite, c.partitions.assumed)}",
        f"membership: changes {m.changes.value}, discovery {m.discovery.value}, "
        f"epochs {m.epochs.value}, lineage {m.lineage.value}{_cites(m.cite)}",
        f"pagination: token {p.token.value}, overlap {p.overlap.value}, empty pages "
        f"{p.empty_pages.value}, event id {p.event_id or 'none'}{_cites(p.cite)}",
    ]
    lines += _cursor_lines(c)
    if c.caveats:
        lines += ["", "caveats:"]
        lines += [f"  - {cv.text}{_cites(cv.cite)}" for cv in c.caveats]
    if c.unconfirmed:
        lines += ["", "unconfirmed:"]
        for u in c.unconfirmed:
            state = f"resolved by {', '.join(u.resolved_by)}" if u.resolved else "unresolved"
            lines.append(f"  - {format_path(u.field)} ({state}): {u.question}{_cites(u.cite)}")
            if u.assumed:
                lines.append(f"      assumed: {u.assumed}")
    lines += ["", "sources:"]
    for s in c.sources.values():
        where = f" <{s.url}>" if s.url else ""
        lines.append(f"  [{s.id}] {s.title}{where}")
    return "\n".join(lines) + "\n"
