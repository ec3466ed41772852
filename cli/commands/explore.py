"""``fencepost explore``: exhaustively explore the protocol model within bounds.

Each part (ingest, publication, composed) is explored breadth first from its
default bounds, overridden by the options given. Every invariant (an *always*
property) is checked in every reachable state, and every *sometimes* property
the part must reach (:mod:`fencepost.model.sometimes`) on every transition;
each is printed as reached, with the steps to its first occurrence.

Exit codes: 0 every invariant holds in every reachable state and every
situation was reached; 1 a counterexample was found, or a situation was never
reached (verdict ``vacuous``: the invariants about it passed vacuously, so the
run proves less than it claims; it is a finding about the bounds, not bad
input, hence 1 and not 2); 2 a usage error (unknown mutant, bad bounds) or a
budget ran out before the bounds were exhausted (``--max-states``,
``--max-memory``: nothing was proved, and the message says which budget to
raise or which bounds to narrow).

Every exploration has a budget, so bounds that are each within range but
together too large end with that message instead of growing until
``MemoryError``. The defaults were picked from a measured 250-750 bytes per
distinct state (peak resident-set growth; the graph is kept only for
``--dot``, which roughly triples it) and 40,000-70,000 states per second on one
core: 3,000,000 states is about 1-2 GB and about a minute. Long explorations
print a progress line (part, states, depth, states/s, memory in use, and its
growth per state so far) to stderr every few seconds, except with ``--json``.
The line under the table gives each part's bytes per distinct state: the peak
resident-set growth during its exploration (sampled every 1,024 states) over
its states; memory a part frees and a later part reuses counts for the first
only.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.table import Table

from fencepost.explorer.render import (
    counterexample_dot,
    graphs_dot,
    render_counterexample,
    render_unreached,
)
from fencepost.explorer.search import (
    HOLDS,
    VACUOUS,
    VIOLATED,
    Exploration,
    ExploreProgress,
    ExploreResult,
    explore_parts,
)
from fencepost.model.config import PARTS, POLICIES, ConfigError, ModelConfig, default_config
from fencepost.model.mutants import MUTANTS
from fencepost.model.sometimes import applicable
from fencepost.views.output import check_output, report_options, wants_report, write_outputs

#: Above this many states in total, --dot refuses to draw the whole graph.
DOT_GRAPH_LIMIT = 3000

#: The default budgets (see the module docstring for how they were chosen).
DEFAULT_MAX_STATES = 3_000_000
DEFAULT_MAX_MEMORY_MIB = 4096

#: Seconds between two progress lines on stderr.
PROGRESS_SECONDS = 2.0

#: Exit status when a budget ran out: the bounds asked for more than the budget allows.
EXIT_BUDGET = 2

_BOUNDS = {
    "partitions": "partitions",
    "publishers": "publishers",
    "readers": "readers",
    "coordinates": "coordinates",
    "events": "events_per_partition",
    "moved_events": "moved_events",
    "epochs": "epochs",
    "attempts": "attempts",
    "retries": "retries",
    "lost_responses": "lost_responses",
    "in_flight": "in_flight",
    "policy": "policy",
    "successor": "successor",
}


def _configs(part: str, mutant: str | None, overrides: dict[str, Any]) -> list[ModelConfig]:
    parts = PARTS if part == "all" else (part,)
    try:
        return [default_config(p, mutant=mutant, **overrides) for p in parts]
    except ConfigError as exc:
        raise click.UsageError(str(exc)) from exc


def _result_json(result: ExploreResult) -> dict[str, Any]:
    out: dict[str, Any] = {
        "part": result.part,
        "verdict": result.verdict,
        "states": result.states,
        "transitions": result.transitions,
        "depth": result.depth,
        "seconds": round(result.seconds, 4),
        "states_per_second": round(result.states_per_second, 1),
        "bytes_per_state": round(result.bytes_per_state, 1),
        "peak_rss": result.memory_peak,
        "mutant": result.config.mutant,
        "bounds": {
            f.name: getattr(result.config, f.name)
            for f in dataclasses.fields(result.config)
            if f.init and f.name not in ("part", "mutant")
        },
    }
    if result.stopped_by is not None:
        out["stopped_by"] = result.stopped_by
    out["sometimes"] = _sometimes_json(result)
    if result.violation is not None and result.counterexample is not None:
        v = result.violation
        out["violation"] = {
            "invariant": v.invariant,
            "doc": v.doc,
            "message": v.message,
            "also": list(v.also),
        }
        out["counterexample"] = [
            {
                "step": step.index,
                "action": None
                if step.action is None
                else {
                    "kind": step.action.kind,
                    "actor": step.action.actor,
                    "partition": step.action.partition,
                    "epoch": step.action.epoch,
                    "cut": None if step.action.cut is None else str(step.action.cut),
                    "outcome": step.action.outcome,
                    "detail": step.action.detail,
                },
                "text": step.text,
                "after": step.summary(),
            }
            for step in result.counterexample
        ]
    return out


def _sometimes_json(result: ExploreResult) -> list[dict[str, Any]]:
    """Each situation the part must reach: reached (steps, by which action) or not."""
    rows: list[dict[str, Any]] = []
    for s in applicable(result.config):
        hit = result.reached.get(s.name)
        rows.append(
            {
                "name": s.name,
                "doc": s.doc,
                "about": list(s.about),
                "reached": hit is not None,
                "steps": None if hit is None else hit.steps,
                "by": None if hit is None else hit.action,
            }
        )
    return rows


def _print_sometimes(console: Console, exploration: Exploration) -> None:
    """One table of the sometimes properties: part, property, where first reached."""
    table = Table(title="sometimes (situations each part must reach)")
    for column in ("part", "property", "reached", "keeps honest"):
        table.add_column(
            column,
            justify="right" if column == "reached" else "left",
            no_wrap=column != "keeps honest",
            overflow="fold",
        )
    for r in exploration.results:
        if r.verdict not in (HOLDS, VACUOUS):
            continue  # stopped early: the situations were not all looked for
        for s in applicable(r.config):
            hit = r.reached.get(s.name)
            where = f"{hit.steps} steps" if hit is not None else "[bold red]NEVER[/]"
            table.add_row(r.part, s.name, where, ", ".join(s.about))
    if table.row_count:
        console.print(table)


def _print_table(console: Console, exploration: Exploration) -> None:
    table = Table(title="fencepost explore")
    for column in ("part", "states", "transitions", "depth", "seconds", "states/s", "verdict"):
        table.add_column(column, justify="left" if column in ("part", "verdict") else "right")
    for r in exploration.results:
        table.add_row(
            r.part,
            f"{r.states:,}",
            f"{r.transitions:,}",
            str(r.depth),
            f"{r.seconds:.2f}",
            f"{r.states_per_second:,.0f}",
            r.verdict,
        )
    if len(exploration.results) > 1:
        table.add_row(
            "total",
            f"{exploration.states:,}",
            f"{exploration.transitions:,}",
            "",
            f"{exploration.seconds:.2f}",
            f"{exploration.states_per_second:,.0f}",
            exploration.verdict,
        )
    console.print(table)
    figures = [
        f"{r.part} {r.bytes_per_state:,.0f}" + ("*" if n else "")
        for n, r in enumerate(exploration.results)
    ]
    note = (
        " (*: explored after another part in this process, reusing memory it freed, so "
        "this undercounts; explore that part alone for its own figure)"
        if len(figures) > 1
        else ""
    )
    console.print(
        "memory: bytes per distinct state (peak resident-set growth during the part): "
        f"{', '.join(figures)}{note}"
    )


def _write_dot(path: Path, exploration: Exploration) -> str:
    violated = [r for r in exploration.results if r.verdict == VIOLATED]
    if violated:
        text = counterexample_dot(violated[0])
        what = f"counterexample of part '{violated[0].part}'"
    else:
        total = exploration.states
        if total > DOT_GRAPH_LIMIT:
            raise click.UsageError(
                f"--dot: no counterexample, and the reachable graph has {total:,} states, more "
                f"than {DOT_GRAPH_LIMIT:,} can usefully be drawn; narrow the bounds or pick "
                "one --part"
            )
        text = graphs_dot(exploration.results)
        what = f"reachable graph ({total:,} states)"
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise click.UsageError(f"--dot: cannot write {path}: {exc.strerror}") from exc
    return what


@click.command(name="explore")
@click.option(
    "--part",
    type=click.Choice([*PARTS, "all"]),
    default="all",
    show_default=True,
    help="Sub-model to explore: ingest, publication, composed, or all three.",
)
@click.option(
    "--partitions", type=click.IntRange(min=1), help="Partitions (members of every epoch)."
)
@click.option("--publishers", type=click.IntRange(min=0), help="Concurrent publishers.")
@click.option("--readers", type=click.IntRange(min=0), help="Ingest readers per partition.")
@click.option(
    "--coordinates",
    type=click.IntRange(min=1),
    help="Integer coordinate values 0..N-1 of the order.",
)
@click.option("--events", type=click.IntRange(min=0), help="Own events per partition.")
@click.option(
    "--moved-events",
    type=click.IntRange(min=0),
    help="Events each reshard moves into a partition.",
)
@click.option("--epochs", type=click.IntRange(min=1), help="Membership epochs (reshards + 1).")
@click.option("--attempts", type=click.IntRange(min=0), help="Publication attempts per publisher.")
@click.option("--retries", type=click.IntRange(min=0), help="Retries within one attempt.")
@click.option(
    "--lost-responses/--no-lost-responses",
    default=None,
    help="Let write responses be lost (applied or not applied).",
)
@click.option(
    "--in-flight/--no-in-flight",
    default=None,
    help="Let a timed-out publication write still be applied later.",
)
@click.option("--policy", type=click.Choice(POLICIES), help="Membership cutover policy.")
@click.option(
    "--successor/--dense",
    default=None,
    help="Order with an exact successor (offsets) or dense (timestamps, strings).",
)
@click.option("--mutant", metavar="NAME", help="Switch one known bug on (see --list-mutants).")
@click.option("--list-mutants", is_flag=True, help="List the mutants and exit.")
@click.option(
    "--max-states",
    type=click.IntRange(min=1),
    default=DEFAULT_MAX_STATES,
    show_default=True,
    help="Budget: stop after this many distinct states per part (verdict: incomplete, exit 2).",
)
@click.option(
    "--max-memory",
    type=click.IntRange(min=64),
    default=DEFAULT_MAX_MEMORY_MIB,
    show_default=True,
    metavar="MIB",
    help="Budget: stop when the process uses this many MiB (verdict: incomplete, exit 2).",
)
@click.option("--no-symmetry", is_flag=True, help="Explore without symmetry reduction.")
@click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON.")
@click.option(
    "--dot",
    type=click.Path(dir_okay=False, writable=True, path_type=Path),
    help="Write the counterexample (or, when none, the small reachable graph) as Graphviz DOT.",
)
@report_options("a counterexample drawn as a timeline")
def command(
    part: str,
    mutant: str | None,
    list_mutants: bool,
    max_states: int,
    max_memory: int,
    no_symmetry: bool,
    as_json: bool,
    dot: Path | None,
    html: Path | None,
    summary_md: Path | None,
    **bounds: Any,
) -> None:
    """Exhaustively explore the protocol model within bounds.

    Prints distinct states, transitions, depth, states per second and the
    verdict per part, then each sometimes property (a situation the part must
    reach, so that no invariant passes vacuously) with the steps to where it
    was first reached; on a violation, the shortest counterexample step by step
    and the invariant it breaks. Exit 0: every invariant holds and every
    situation was reached; 1: a counterexample, or a situation never reached
    (vacuous); 2: usage error, or a budget (--max-states, --max-memory) ran out
    before the bounds were exhausted.
    """
    console = Console(highlight=False)
    if list_mutants:
        if as_json:
            rows = [
                {
                    "name": m.name,
                    "description": m.description,
                    "field_bug": m.field_bug,
                    "breaks": dict(m.expected),
                }
                for m in MUTANTS.values()
            ]
            click.echo(json.dumps(rows, indent=2))
            return
        table = Table(title="fencepost mutants")
        for column in ("name", "part: invariant it breaks", "bug"):
            table.add_column(column)
        for m in MUTANTS.values():
            breaks = "\n".join(f"{p}: {inv}" for p, inv in m.expected)
            table.add_row(m.name, breaks, m.description)
        console.print(table)
        return
    if mutant is not None and mutant not in MUTANTS:
        raise click.BadParameter(
            f"unknown mutant {mutant!r}; choose one of {', '.join(MUTANTS)} (see --list-mutants)",
            param_hint="--mutant",
        )
    check_output(html, "--html")
    check_output(summary_md, "--summary-md")
    overrides = {_BOUNDS[k]: v for k, v in bounds.items() if v is not None}
    configs = _configs(part, mutant, overrides)
    try:
        exploration = explore_parts(
            configs,
            symmetry=not no_symmetry,
            # The graph is drawn only for --dot; without it, each state costs a key and a
            # parent pointer (a third of the memory).
            keep_graph=dot is not None,
            max_states=max_states,
            max_memory=max_memory << 20,
            progress=None if as_json else _progress,
            progress_every=PROGRESS_SECONDS,
        )
    except MemoryError:
        click.echo(
            f"fencepost explore: out of memory below the --max-memory budget of {max_memory:,} "
            "MiB (the machine has less free); narrow the bounds or lower --max-memory",
            err=True,
        )
        raise SystemExit(EXIT_BUDGET) from None
    dot_note = _write_dot(dot, exploration) if dot is not None else None
    if as_json:
        payload = {
            "verdict": exploration.verdict,
            "states": exploration.states,
            "transitions": exploration.transitions,
            "seconds": round(exploration.seconds, 4),
            "states_per_second": round(exploration.states_per_second, 1),
            "parts": [_result_json(r) for r in exploration.results],
        }
        if dot_note:
            payload["dot"] = {"path": str(dot), "content": dot_note}
        click.echo(json.dumps(payload, indent=2))
    else:
        _print_table(console, exploration)
        _print_sometimes(console, exploration)
        for r in exploration.results:
            if r.verdict == VIOLATED:
                click.echo(render_counterexample(r))
            elif r.verdict == VACUOUS:
                click.echo(render_unreached(r))
            elif r.verdict != HOLDS:
                click.echo(_budget_message(r, max_states, max_memory), err=True)
        if dot_note:
            click.echo(f"wrote the {dot_note} to {dot}")
    if wants_report(html, summary_md):
        from fencepost.views.explore import explore_report

        write_outputs(
            explore_report(exploration, _shown(part, mutant, overrides)), html, summary_md
        )
    if exploration.verdict in (VIOLATED, VACUOUS):
        raise SystemExit(1)
    if exploration.verdict != HOLDS:
        raise SystemExit(EXIT_BUDGET)


def _shown(part: str, mutant: str | None, overrides: dict[str, Any]) -> str:
    """The command that explores the same bounds again."""
    words = ["fencepost", "explore", "--part", part]
    if mutant:
        words += ["--mutant", mutant]
    for name, value in overrides.items():
        option = next(k for k, v in _BOUNDS.items() if v == name).replace("_", "-")
        if isinstance(value, bool):
            off = "--dense" if option == "successor" else f"--no-{option}"
            words.append(f"--{option}" if value else off)
        else:
            words += [f"--{option}", str(value)]
    return " ".join(words)


def _budget_message(result: ExploreResult, max_states: int, max_memory: int) -> str:
    budget = (
        f"--max-memory {max_memory:,} MiB"
        if result.stopped_by == "max_memory"
        else f"--max-states {max_states:,}"
    )
    return (
        f"part '{result.part}': the budget ran out ({budget}) after {result.states:,} states "
        f"at depth {result.depth}, before the bounds were exhausted: no invariant was broken "
        "in the states explored, but nothing is proved. Narrow the bounds (fewer partitions, "
        "publishers, coordinates, attempts or retries) or raise the budget."
    )


def _progress(now: ExploreProgress) -> None:
    click.echo(
        f"explore {now.part}: {now.states:,} states, depth {now.depth}, "
        f"{now.states_per_second:,.0f} states/s, {now.memory / (1 << 20):,.0f} MiB "
        f"({now.bytes_per_state:,.0f} bytes/state), {now.seconds:.0f}s",
        err=True,
    )
