"""``fencepost prove``: run the Z3 theorems of the cut algebra and report each verdict.

Exit 0 when every theorem run got its expected verdict (``proved`` for the algebra's
laws and for the unsoundness theorems, whose proof is a counterexample; ``refuted`` for
the one registered false claim, ``through x == before x+1`` on a dense order), 1 when any
did not (including ``unknown``: an exhausted resource limit is never counted as a
proof), 2 for a usage error such as an unknown theorem name, 3 when the machine was too
slow (a check reached the wall-clock guard, ``--timeout``, before its deterministic
resource limit: no verdict).

Every Z3 check is bounded by its family's rlimit (:mod:`fencepost.solver`), never by
wall time, so the verdicts are the same on any machine whatever its load; each line
shows the units the theorem used beside its limit, and ``--budgets`` prints the table
of limits with the figures they were measured from.

``--protocol`` proves instead that section 7 holds for the whole protocol at any size
(inductive invariants, :mod:`fencepost.commands.prove_protocol`); ``--mutant NAME``
switches a model mutant on for it.
"""

from __future__ import annotations

import json
import time

import click
from rich.console import Console

from fencepost.properties.proofs import (
    Status,
    Theorem,
    TheoremResult,
    UnknownTheorem,
    render_witness,
    select,
)
from fencepost.solver import BUDGETS, GUARD_MS, MachineTooSlow, budget, wall_guard

#: Exit code when a check reached the wall-clock guard: fencepost's own trouble, no verdict.
EXIT_TOO_SLOW = 3

_STYLE = {Status.PROVED: "green", Status.REFUTED: "yellow", Status.UNKNOWN: "red"}


def _witness_text(result: TheoremResult) -> str:
    if result.witness is None:
        return ""
    return ", ".join(f"{key}={render_witness(value)}" for key, value in result.witness.items())


def _report_json(pairs: list[tuple[Theorem, TheoremResult]], seconds: float) -> str:
    theorems = []
    for theorem, result in pairs:
        entry = result.to_json()
        entry["rlimit"] = budget(result.family).rlimit
        entry["expected"] = theorem.expected.value
        entry["as_expected"] = result.status is theorem.expected
        theorems.append(entry)
    ok = all(result.status is theorem.expected for theorem, result in pairs)
    return json.dumps(
        {"ok": ok, "seconds": round(seconds, 4), "theorems": theorems},
        ensure_ascii=False,
        indent=2,
    )


def _report_table(
    console: Console, pairs: list[tuple[Theorem, TheoremResult]], seconds: float, statements: bool
) -> None:
    """One line per theorem (verdict, name, time); its witness and statement indented below.

    Lines rather than a table: witnesses are long and must stay readable at any
    terminal width and in CI logs.
    """
    width = max(len(result.name) for _, result in pairs)
    for theorem, result in pairs:
        verdict = f"[{_STYLE[result.status]}]{result.status.value:<7}[/]"
        limit = budget(result.family).rlimit
        line = (
            f"{verdict} {result.name:<{width}}  {result.seconds * 1000:7.1f} ms  "
            f"{result.rlimit_used:>11,} of {limit:>11,} units"
        )
        if result.status is not theorem.expected:
            line += f"  [bold red]expected {theorem.expected.value}[/]"
        if result.detail:
            line += f"  ({result.detail})"
        console.print(line, highlight=False)
        if statements:
            console.print(f"        [dim]{result.statement}[/]", highlight=False)
        if result.witness is not None:
            console.print(f"        witness: {_witness_text(result)}", highlight=False)
    bad = [r.name for t, r in pairs if r.status is not t.expected]
    if bad:
        console.print(f"[bold red]{len(bad)} of {len(pairs)} not as expected:[/] {', '.join(bad)}")
    else:
        console.print(
            f"[bold green]all {len(pairs)} theorems as expected[/] in {seconds:.2f} s "
            "(refuted entries are false claims Z3 must refute)"
        )
    worst = max(pairs, key=lambda p: p[1].rlimit_used / budget(p[1].family).rlimit)[1]
    share = worst.rlimit_used / budget(worst.family).rlimit
    console.print(
        f"Z3 resource limits (deterministic, not wall time): the largest use was "
        f"{share:.1%} of its limit ({worst.name}); `fencepost prove --budgets` lists them",
        highlight=False,
    )


def _report_budgets() -> None:
    """The rlimit table: each family's measured units, margin and limit."""
    width = max(len(name) for name in BUDGETS)
    click.echo(f"{'family':<{width}}  {'measured':>11}  {'margin':>6}  {'limit':>13}  measured on")
    for b in BUDGETS.values():
        click.echo(
            f"{b.family:<{width}}  {b.measured:>11,}  {b.margin:>5}x  {b.rlimit:>13,}  "
            f"{b.measured_on}"
        )


@click.command(name="prove")
@click.option("--json", "as_json", is_flag=True, help="Print the results as JSON.")
@click.option(
    "--only",
    "only",
    multiple=True,
    metavar="NAME",
    help="Run only this theorem, or a family such as merge_glb (repeatable).",
)
@click.option("--list", "list_only", is_flag=True, help="List theorem names and exit.")
@click.option("--statements", is_flag=True, help="Show each theorem's statement in words.")
@click.option(
    "--protocol",
    is_flag=True,
    help="Prove section 7 for the whole protocol, any size (inductive invariants in Z3).",
)
@click.option(
    "--mutant",
    metavar="NAME",
    help="With --protocol: switch a model mutant on (the induction should fail).",
)
@click.option(
    "--timeout",
    "timeout_ms",
    type=click.IntRange(100, 3_600_000),
    default=GUARD_MS,
    show_default=True,
    help="Last-resort wall-clock guard per Z3 check, in milliseconds. Verdicts come from "
    "deterministic resource limits; reaching the guard is 'machine too slow' (exit 3).",
)
@click.option(
    "--budgets", is_flag=True, help="Print the Z3 resource limits (rlimit table) and exit."
)
def command(
    as_json: bool,
    only: tuple[str, ...],
    list_only: bool,
    statements: bool,
    protocol: bool,
    mutant: str | None,
    timeout_ms: int,
    budgets: bool,
) -> None:
    """Prove the cut-algebra theorems with Z3, from the downset definition; with
    --protocol, prove section 7 for the protocol at any size.

    Exit 0 when every theorem gets its expected verdict (every protocol obligation is
    proved), 1 otherwise, 2 on usage errors, 3 when the machine was too slow (a check
    reached the wall-clock guard before its deterministic resource limit).
    """
    if budgets:
        _report_budgets()
        return
    try:
        with wall_guard(timeout_ms):
            _prove(as_json, only, list_only, statements, protocol, mutant)
    except MachineTooSlow as slow:
        click.echo(f"fencepost prove: {slow}", err=True)
        raise SystemExit(EXIT_TOO_SLOW) from None


def _prove(
    as_json: bool,
    only: tuple[str, ...],
    list_only: bool,
    statements: bool,
    protocol: bool,
    mutant: str | None,
) -> None:
    if protocol:
        if only or list_only or statements:
            raise click.UsageError(
                "--only, --list and --statements apply to the cut-algebra theorems; "
                "run them without --protocol"
            )
        from fencepost.commands.prove_protocol import run

        run(mutant, as_json)
        return
    if mutant is not None:
        raise click.UsageError("--mutant applies to the protocol proof: add --protocol")
    try:
        chosen = select(only)
    except UnknownTheorem as error:
        raise click.BadParameter(str(error), param_hint="--only") from None
    if list_only:
        for theorem in chosen:
            click.echo(f"{theorem.name}  (expected {theorem.expected.value})")
        return
    started = time.perf_counter()
    pairs = [(theorem, theorem.run()) for theorem in chosen]
    seconds = time.perf_counter() - started
    if as_json:
        click.echo(_report_json(pairs, seconds))
    else:
        _report_table(Console(), pairs, seconds, statements)
    if any(result.status is not theorem.expected for theorem, result in pairs):
        raise SystemExit(1)
