"""``fencepost prove --protocol``: the protocol's safety, proved for any size with Z3.

Runs every obligation of :mod:`fencepost.properties.protocol_proof` (initiation,
consecution per action and lemma, safety per property) for the publication, the
ingest and the composed protocol, printing each as ``proved``, ``refuted`` or
``unknown`` with its time. With ``--mutant NAME`` the model mutant is switched
on in the relation: each refuted obligation is printed with its counterexample
to induction in domain words and whether the explorer reaches such a break
within its default bounds.

Exit 0 when every obligation is proved (with a mutant: none refuted, i.e. the
induction missed the bug, which is reported); 1 when any is refuted or unknown
(an exhausted resource limit is never a proof); 2 on a usage error; 3 when a check
reached the wall-clock guard (``fencepost prove`` handles that).
"""

from __future__ import annotations

import json
import time
from typing import Any

import click
from rich.console import Console

from fencepost.model.mutants import MUTANTS
from fencepost.properties.protocol_cti import Reachability, render_cti, search_reachable
from fencepost.properties.protocol_lemmas import LEMMAS, PROPERTIES
from fencepost.properties.protocol_logic import Z3Logic
from fencepost.properties.protocol_proof import (
    CONSECUTION,
    PROVED,
    REFUTED,
    Outcome,
    family_of,
    prove_all,
)
from fencepost.solver import budget

_STYLE = {PROVED: "green", REFUTED: "yellow"}


def _line(out: Outcome) -> str:
    style = _STYLE.get(out.status, "red")
    detail = f"  ({out.detail})" if out.detail else ""
    return (
        f"[{style}]{out.status:<8}[/] {out.seconds * 1000:8.1f} ms {out.rlimit_used:>9,} units  "
        f"{out.obligation.name}{detail}"
    )


def _share(out: Outcome) -> float:
    """The share of its kind's rlimit the obligation's first check used."""
    return out.rlimit_used / budget(family_of(out.obligation.kind)).rlimit


def run(mutant: str | None, as_json: bool) -> None:
    """Prove (or, with a mutant, try to) and report; raises SystemExit(1) unless all proved."""
    if mutant is not None and mutant not in MUTANTS:
        raise click.BadParameter(
            f"unknown mutant {mutant!r}; choose one of {', '.join(MUTANTS)}",
            param_hint="--mutant",
        )
    console = Console(highlight=False, soft_wrap=True)
    sorts = Z3Logic().sorts
    reach: dict[tuple[str, str, str | None], Reachability] = {}

    def reachability(out: Outcome) -> Reachability:
        ob = out.obligation
        key = (ob.protocol, ob.lemma, ob.action)
        if key not in reach:
            reach[key] = search_reachable(ob.protocol, mutant, ob.lemma, ob.action)
        return reach[key]

    def show(out: Outcome) -> None:
        if as_json:
            return
        console.print(_line(out))
        if out.status == REFUTED and out.model is not None:
            for text in render_cti(out, sorts).splitlines():
                console.print(f"           {text}", markup=False)
            if out.obligation.kind == CONSECUTION:
                console.print(f"           -> {reachability(out)}", markup=False)

    started = time.perf_counter()
    outcomes = prove_all(mutant=mutant, report=show)
    seconds = time.perf_counter() - started
    refuted = [o for o in outcomes if o.status == REFUTED]
    unknown = [o for o in outcomes if o.status not in (PROVED, REFUTED)]
    if as_json:
        click.echo(json.dumps(_json(outcomes, mutant, seconds, reachability, sorts), indent=2))
    else:
        _summary(console, outcomes, refuted, unknown, mutant, seconds)
    if refuted or unknown:
        raise SystemExit(1)


def _summary(
    console: Console,
    outcomes: list[Outcome],
    refuted: list[Outcome],
    unknown: list[Outcome],
    mutant: str | None,
    seconds: float,
) -> None:
    n = len(outcomes)
    if outcomes:
        worst = max(outcomes, key=_share)
        console.print(
            f"Z3 resource limits (deterministic, not wall time): the largest use was "
            f"{_share(worst):.1%} of its limit ({worst.obligation.name}); "
            "`fencepost prove --budgets` lists them"
        )
    if not refuted and not unknown:
        console.print(
            f"[bold green]all {n} obligations proved[/] in {seconds:.1f} s: section 7 holds for "
            "any number of partitions, publishers, readers, epochs, events and in-flight writes"
        )
        if mutant is not None:
            console.print(
                f"[bold red]mutant {mutant} survived the induction[/]: no obligation is refuted "
                "with it switched on"
            )
        return
    if unknown:
        console.print(f"[bold red]{len(unknown)} of {n} obligations unknown[/] (never a proof)")
    if refuted:
        what = f" with mutant {mutant}" if mutant else ""
        console.print(
            f"[bold yellow]{len(refuted)} of {n} obligations refuted{what}[/] in {seconds:.1f} s"
        )


def _json(
    outcomes: list[Outcome],
    mutant: str | None,
    seconds: float,
    reachability: Any,
    sorts: dict[str, Any],
) -> dict[str, Any]:
    rows = []
    for o in outcomes:
        ob = o.obligation
        row: dict[str, Any] = {
            "protocol": ob.protocol,
            "kind": ob.kind,
            "lemma": ob.lemma,
            "action": ob.action,
            "status": o.status,
            "seconds": round(o.seconds, 4),
            "detail": o.detail,
            "rlimit_used": o.rlimit_used,
            "rlimit": budget(family_of(ob.kind)).rlimit,
        }
        if o.status == REFUTED and o.model is not None:
            row["counterexample"] = render_cti(o, sorts)
            if ob.kind == CONSECUTION:
                found: Reachability = reachability(o)
                row["reachable"] = {
                    "reachable": found.reachable,
                    "steps": found.steps,
                    "last": found.last,
                    "states": found.states,
                }
        rows.append(row)
    return {
        "ok": all(o.status == PROVED for o in outcomes),
        "mutant": mutant,
        "seconds": round(seconds, 3),
        "obligations": rows,
        "lemmas": [
            {"name": x.name, "doc": x.doc, "property": x.property, "protocols": list(x.protocols)}
            for x in (*PROPERTIES, *LEMMAS)
        ],
    }


__all__ = ["run"]
