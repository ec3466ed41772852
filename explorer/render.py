"""Counterexamples for people: a trace, the situations never reached, a Graphviz picture.

Each step is told in the model's words (its actions' descriptions and
:attr:`~fencepost.model.spec.Spec.describe` of the state after), the verdict last.
Cost: linear in the trace's length and the state's partitions and publishers.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

from fencepost.explorer.search import ExploreResult


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
        model = result.model
        for n, state in enumerate(result.representatives):
            label = f"#{n}\n{model.label(state)}"
            lines.append(f"    c{c}n{n} [label={_dot_quote(label)}];")
        index = {k: n for n, k in enumerate(result.keys)}
        for n, state in enumerate(result.representatives):
            for action, new in model.successors(state):
                target = index.get(model.canonical_key(new, result.symmetry))
                if target is not None:
                    lines.append(
                        f"    c{c}n{n} -> c{c}n{target} [label={_dot_quote(action.actor)}];"
                    )
        lines.append("  }")
    lines.append("}")
    return "\n".join(lines) + "\n"
