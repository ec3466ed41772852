"""Counterexamples for people: a state in domain words, a trace, a Graphviz picture.

Cost: linear in the trace's length and the state's partitions and publishers.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import TYPE_CHECKING

from fencepost.model.cuts import NOTHING

# Rendering
from fencepost.model.keys import canonical_key
from fencepost.model.machine import successors
from fencepost.model.state import (
    PUBLISHER_PHASES,
    READER_PHASES,
    State,
)

if TYPE_CHECKING:
    from fencepost.model.explorer import ExploreResult


def summarize(state: State) -> list[str]:
    """Lines describing the durable state and the busy processes, in domain words."""
    ctx = state.context
    lines = []
    if ctx.has_publishers:
        rec = state.record
        op = f", op {rec.op_id}" if rec.op_id else ""
        lines.append(f"record: epoch {rec.epoch}, {rec.cut}, revision {rec.revision}{op}")
    cps = []
    for i, part in enumerate(state.partitions):
        name = ctx.partition_names[i]
        for e0, cp in enumerate(part.checkpoints[: state.epoch]):
            if cp.epoch == 0:
                cps.append(f"{name}@{e0 + 1} none")
                continue
            flags = []
            if not cp.final:
                flags.append("provisional")
            if cp.scope != ctx.config.scope:
                flags.append(f"scope {cp.scope}")
            if cp.epoch != e0 + 1:
                flags.append(f"stamped epoch {cp.epoch}")
            extra = f" [{', '.join(flags)}]" if flags else ""
            cps.append(f"{name}@{e0 + 1} {cp.cut} (gen {part.generations[e0]}){extra}")
    lines.append(f"membership epoch {state.epoch}; checkpoints: {'; '.join(cps)}")
    lines.append(truth_line(state))
    busy = []
    for k, pub in enumerate(state.publishers):
        name = ctx.publisher_names[k]
        if pub.phase:
            desc = PUBLISHER_PHASES[pub.phase]
            if pub.proposal != NOTHING:
                desc += f" (epoch {pub.mem_epoch}, {pub.proposal})"
            busy.append(f"{name} {desc}")
        elif pub.outcome:
            reason = f" ({pub.reason})" if pub.reason else ""
            busy.append(f"{name} reported {pub.outcome}{reason}")
        if pub.orphan_epoch:
            busy.append(f"{name}'s write (epoch {pub.orphan_epoch}, {pub.orphan_cut}) in flight")
    for i, part in enumerate(state.partitions):
        for j, r in enumerate(part.readers):
            if r.phase:
                busy.append(
                    f"{ctx.reader_names[i][j]} {READER_PHASES[r.phase]} "
                    f"(epoch {r.epoch}, holds claim {r.claim})"
                )
    if busy:
        lines.append("processes: " + "; ".join(busy))
    return lines


def truth_line(state: State) -> str:
    """The ground truth of the current epoch: each event, its position and its flags."""
    words = []
    for i in range(len(state.partitions)):
        for ev in state.events(i, state.epoch):
            if ev.final and ev.durable:
                flags = "settled"
            else:
                flags = ("final" if ev.final else "not final") + (
                    ", outcome durable" if ev.durable else ", no outcome"
                )
            words.append(f"{ev.name}@{_coord(ev.half)} {flags}")
    return f"ground truth (epoch {state.epoch}): {'; '.join(words) or 'no events'}"


def _coord(half: int) -> str:
    return str(half // 2) if half % 2 == 0 else f"{half / 2:g}"


def render_counterexample(result: ExploreResult) -> str:
    """The shortest path to the violation, step by step, then the invariant it breaks."""
    if result.counterexample is None or result.violation is None:
        return ""
    v = result.violation
    out = [
        f"Counterexample in part '{result.part}' ({len(result.counterexample) - 1} steps):",
    ]
    last_truth = ""
    for step in result.counterexample:
        out.append(f"{step.index:3d}. {step.text}")
        for line in step.summary():
            if line.startswith("ground truth"):
                # The ground truth is shown when it changes, not after every step.
                if line == last_truth:
                    continue
                last_truth = line
            out.append(f"       {line}")
    out.append(f"Invariant broken: {v.invariant} — {v.doc}")
    out.append(f"  {v.message}")
    if v.also:
        out.append(f"  (the same state also breaks: {', '.join(v.also)})")
    return "\n".join(out)


def render_unreached(result: ExploreResult) -> str:
    """Why a ``vacuous`` exploration fails: each situation never reached, in domain words."""
    if not result.unreached:
        return ""
    out = [
        f"part '{result.part}': {len(result.unreached)} situation(s) never reached within these "
        "bounds, so the invariants about them passed vacuously (nothing is proved about them):"
    ]
    for s in result.unreached:
        out.append(f"  - {s.name}: {s.doc} (keeps {', '.join(s.about)} honest)")
    out.append("  raise the bounds (or restore the defaults) until every one is reached")
    return "\n".join(out)


def _dot_quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def counterexample_dot(result: ExploreResult) -> str:
    """The counterexample path as a Graphviz DOT chain (states boxed, actions on edges)."""
    steps = result.counterexample or []
    lines = ["digraph counterexample {", "  rankdir=TB;", "  node [shape=box, fontsize=10];"]
    for step in steps:
        label = "\n".join(step.summary())
        attrs = ", color=red" if step is steps[-1] else ""
        lines.append(f"  s{step.index} [label={_dot_quote(label)}{attrs}];")
    for prev, step in itertools.pairwise(steps):
        lines.append(f"  s{prev.index} -> s{step.index} [label={_dot_quote(step.text)}];")
    if result.violation is not None:
        v = result.violation
        lines.append(
            "  violation [shape=note, color=red, "
            f"label={_dot_quote(v.invariant + ': ' + v.message)}];"
        )
        if steps:
            lines.append(f"  s{steps[-1].index} -> violation [style=dashed];")
    lines.append("}")
    return "\n".join(lines) + "\n"


def graphs_dot(results: Sequence[ExploreResult]) -> str:
    """The bounded reachable graphs as one DOT digraph, one cluster per part.

    Nodes are labelled with the record and the membership epoch, edges with the
    acting process. Needs the graphs kept (``keep_graph=True``).
    """
    lines = ["digraph reachable {", "  node [shape=box, fontsize=9];"]
    for c, result in enumerate(results):
        if result.graph is None:
            raise ValueError("the exploration did not keep its graph; explore with keep_graph=True")
        lines.append(f"  subgraph cluster_{c} {{")
        lines.append(f"    label={_dot_quote(result.part)};")
        for n, state in enumerate(result.representatives):
            rec = state.record
            label = (
                f"#{n}\nrecord e{rec.epoch} {rec.cut} r{rec.revision}\nmembership e{state.epoch}"
            )
            lines.append(f"    c{c}n{n} [label={_dot_quote(label)}];")
        index = {k: n for n, k in enumerate(result.keys)}
        for n, state in enumerate(result.representatives):
            for action, new in successors(state):
                target = index.get(canonical_key(new, result.symmetry))
                if target is not None:
                    lines.append(
                        f"    c{c}n{n} -> c{c}n{target} [label={_dot_quote(action.actor)}];"
                    )
        lines.append("  }")
    lines.append("}")
    return "\n".join(lines) + "\n"
