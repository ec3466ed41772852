"""Bounded exploration: pinned state counts, every mutant caught, symmetry, counterexamples.

The pinned counts are the model's fingerprint (as in stateright's examples):
any change to the transitions, the bounds or the canonical keys shows here and
must be explained in the change that makes it.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections import deque
from collections.abc import Hashable

import pytest

from fencepost.explorer.render import (
    counterexample_dot,
    graphs_dot,
    render_counterexample,
    render_unreached,
)
from fencepost.explorer.search import (
    HOLDS,
    INCOMPLETE,
    VACUOUS,
    VIOLATED,
    ExploreResult,
    explore,
    explore_parts,
)
from fencepost.model.canonical import canonical_key
from fencepost.model.config import DEFAULTS, ModelConfig, default_config
from fencepost.model.cuts import NOTHING
from fencepost.model.invariants import INVARIANTS, violations
from fencepost.model.machine import initial, step, successors
from fencepost.model.mutants import MUTANTS
from fencepost.model.sometimes import SOMETIMES, applicable
from fencepost.model.spec import SPEC, Invariant
from fencepost.model.state import State

#: part -> (distinct states, transitions) of the default bounds, all invariants holding.
PINNED_DEFAULTS = {
    "ingest": (17_328, 77_815),
    "publication": (99_111, 584_822),
    "composed": (15_532, 77_671),
}

#: part -> the sometimes properties its default bounds reach, with the steps to the first
#: occurrence (a shortest path: the exploration is breadth first). A bound change that
#: loses one fails here, beside the state counts.
PINNED_SOMETIMES = {
    "ingest": {
        "checkpoint_conflict": 6,
        "lost_checkpoint_applied": 3,
        "lost_checkpoint_not_applied": 3,
        "rewrite_after_lost_race": 6,
        "progress_write": 3,
        "checkpoint_before_to_through": 9,
    },
    "publication": {
        "publication": 6,
        "cutover_monotone": 7,
        "cutover_pending": 12,
        "lost_publication_applied": 6,
        "lost_publication_not_applied": 6,
        "confirmed_after_loss": 7,
        "delayed_write": 7,
        "publication_conflict": 10,
        "reshard_below_checkpoint": 2,
        "both_kinds_at_one_coordinate": 5,
        "record_before_to_through": 11,
        "withheld_missing_checkpoint": 3,
        "withheld_epoch_mismatch": 6,
        "withheld_scope_mismatch": 5,
        "withheld_unsupported_finality": 5,
    },
    "composed": {
        "publication": 7,
        "cutover_reset_lower": 18,
        "progress_write": 3,
        "reshard_below_checkpoint": 6,
        "record_before_to_through": 15,
        "checkpoint_before_to_through": 7,
    },
}

#: Smaller configurations pinned as well: name -> (config, states, transitions, the
#: sometimes properties they cannot reach: their explorations are vacuous about those).
PINNED_SMALL: dict[str, tuple[ModelConfig, int, int, set[str]]] = {
    "one publisher, one epoch": (
        default_config("publication", publishers=1, epochs=1),
        134,
        443,
        {
            "cutover_monotone",
            "cutover_pending",
            "record_before_to_through",
            "reshard_below_checkpoint",
            "withheld_epoch_mismatch",
        },
    ),
    "successor order, reset policy": (
        default_config(
            "publication",
            successor=True,
            policy="reset",
            publishers=1,
            coordinates=2,
            events_per_partition=2,
            bad_checkpoints=(),
            in_flight=False,
        ),
        14_976,
        73_612,
        {
            "cutover_reset_lower",
            "delayed_write",
            "publication_conflict",
            "record_before_to_through",
            "withheld_epoch_mismatch",
            "withheld_scope_mismatch",
            "withheld_unsupported_finality",
        },
    ),
    "ingest with a reshard": (
        default_config("ingest", epochs=2, events_per_partition=2, readers=1),
        2_522,
        7_875,
        {"checkpoint_conflict", "rewrite_after_lost_race"},
    ),
    "composed, one epoch": (
        default_config("composed", epochs=1),
        925,
        4_070,
        {"cutover_reset_lower", "reshard_below_checkpoint"},
    ),
}


@pytest.fixture(scope="module")
def default_results() -> dict[str, ExploreResult]:
    return {part: explore(cfg, keep_graph=False) for part, cfg in DEFAULTS.items()}


@pytest.mark.parametrize("part", sorted(PINNED_DEFAULTS))
def test_default_bounds_hold_with_pinned_counts(
    default_results: dict[str, ExploreResult], part: str
) -> None:
    result = default_results[part]
    assert result.verdict == HOLDS, render_counterexample(result)
    assert (result.states, result.transitions) == PINNED_DEFAULTS[part]
    assert result.depth > 0 and result.states_per_second > 0


@pytest.mark.parametrize("part", sorted(PINNED_SOMETIMES))
def test_default_bounds_reach_every_sometimes_property(
    default_results: dict[str, ExploreResult], part: str
) -> None:
    result = default_results[part]
    assert not result.unreached, render_unreached(result)
    assert {n: r.steps for n, r in result.reached.items()} == PINNED_SOMETIMES[part]
    assert set(PINNED_SOMETIMES[part]) == {s.name for s in applicable(result.config)}


def test_every_sometimes_property_is_required_of_some_default_part() -> None:
    required = {name for names in PINNED_SOMETIMES.values() for name in names}
    assert required == {s.name for s in SOMETIMES}
    # a cutover under each policy: monotone in publication, reset in composed
    assert DEFAULTS["publication"].policy == "monotone" and DEFAULTS["composed"].policy == "reset"


@pytest.mark.parametrize("name", sorted(PINNED_SMALL))
def test_small_configurations_hold_with_pinned_counts(name: str) -> None:
    cfg, states, transitions, unreached = PINNED_SMALL[name]
    result = explore(cfg)
    assert result.violation is None, render_counterexample(result)
    assert result.verdict == VACUOUS and {s.name for s in result.unreached} == unreached
    assert (result.states, result.transitions) == (states, transitions)
    assert result.graph is not None and result.graph.number_of_nodes() == states
    assert result.graph.number_of_edges() <= transitions


_MUTANT_CASES = [(m.name, part, inv) for m in MUTANTS.values() for part, inv in m.expected]


@pytest.mark.parametrize(("mutant", "part", "invariant"), _MUTANT_CASES)
def test_default_bounds_catch_every_mutant(mutant: str, part: str, invariant: str) -> None:
    result = explore(DEFAULTS[part].replace(mutant=mutant), keep_graph=False)
    assert result.verdict == VIOLATED, f"{mutant} survived the default {part} bounds"
    assert invariant in result.broken, (result.broken, render_counterexample(result))
    assert result.counterexample is not None
    last = result.counterexample[-1].state
    assert invariant in {inv.name for inv, _ in violations(last)}


def test_epsilon_is_no_bug_on_an_order_with_an_exact_successor() -> None:
    cfg, states, _, _ = PINNED_SMALL["successor order, reset policy"]
    result = explore(cfg.replace(mutant="epsilon", policy="monotone"), keep_graph=False)
    assert result.violation is None and result.states == states


def test_a_bound_that_cannot_reach_a_situation_fails_the_exploration() -> None:
    """Teeth: one epoch cannot reach a cutover or a reshard, one reader never races."""
    one_epoch = explore(DEFAULTS["publication"].replace(epochs=1), keep_graph=False)
    assert one_epoch.violation is None and one_epoch.verdict == VACUOUS
    assert {"cutover_monotone", "reshard_below_checkpoint"} <= {s.name for s in one_epoch.unreached}
    lone = explore(DEFAULTS["ingest"].replace(readers=1), keep_graph=False)
    assert lone.verdict == VACUOUS
    assert {s.name for s in lone.unreached} == {"checkpoint_conflict", "rewrite_after_lost_race"}
    text = render_unreached(lone)
    assert "rewrite_after_lost_race" in text and "checkpoint_monotonicity" in text
    both = explore_parts([DEFAULTS["ingest"].replace(readers=1), DEFAULTS["composed"]])
    assert both.verdict == VACUOUS


def test_sometimes_properties_apply_by_part_and_policy() -> None:
    monotone = {s.name for s in applicable(DEFAULTS["publication"])}
    reset = {s.name for s in applicable(DEFAULTS["publication"].replace(policy="reset"))}
    assert "cutover_monotone" in monotone - reset and "cutover_reset_lower" in reset - monotone
    assert not {s.name for s in applicable(DEFAULTS["ingest"])} & monotone


def test_symmetry_reduction_shrinks_the_graph_and_keeps_verdicts() -> None:
    cfg = default_config("publication", epochs=1, bad_checkpoints=())
    reduced = explore(cfg, keep_graph=False)
    full = explore(cfg, keep_graph=False, symmetry=False)
    # One epoch: no cutover (vacuous about it), in both, and the same situations reached.
    assert (reduced.verdict, full.verdict) == (VACUOUS, VACUOUS)
    assert set(reduced.reached) == set(full.reached)
    assert reduced.unreached == full.unreached
    assert reduced.states < full.states
    assert (reduced.states, full.states) == (1_135, 2_592)
    for mutant in ("relabel", "stale-cut-retry"):
        a = explore(cfg.replace(mutant=mutant), keep_graph=False)
        b = explore(cfg.replace(mutant=mutant), keep_graph=False, symmetry=False)
        assert a.verdict == b.verdict == VIOLATED
        assert a.depth == b.depth and a.violation and b.violation
        assert a.violation.invariant == b.violation.invariant


def test_symmetric_states_share_a_canonical_key() -> None:
    state = initial(DEFAULTS["publication"])
    certify_a = next(a for a, _ in successors(state) if a.partition == "A")
    certify_b = next(
        a
        for a, _ in successors(state)
        if a.partition == "B" and a.kind == certify_a.kind and a.cut == certify_a.cut
    )
    one, other = step(state, certify_a), step(state, certify_b)
    assert one != other
    assert canonical_key(one) == canonical_key(other)
    assert canonical_key(one, symmetry=False) != canonical_key(other, symmetry=False)


def _naive_shortest(cfg: ModelConfig, limit: int) -> int | None:
    """Depth of the first violation by plain BFS over raw states (no keys, no symmetry)."""
    start = initial(cfg)
    seen: set[Hashable] = {start}
    queue: deque[tuple[State, int]] = deque([(start, 0)])
    while queue:
        state, depth = queue.popleft()
        if violations(state):
            return depth
        if depth == limit:
            continue
        for _, new in successors(state):
            if new not in seen:
                seen.add(new)
                queue.append((new, depth + 1))
    return None


def test_counterexample_is_a_shortest_path_told_in_domain_words() -> None:
    cfg = DEFAULTS["publication"].replace(mutant="relabel")
    result = explore(cfg)
    assert result.counterexample is not None and result.violation is not None
    steps = result.counterexample
    assert result.depth == len(steps) - 1 == _naive_shortest(cfg, result.depth)
    assert steps[0].action is None and steps[0].state == initial(cfg)
    for prev, cur in itertools.pairwise(steps):
        assert cur.action is not None and step(prev.state, cur.action) == cur.state
    assert all(not violations(s.state) for s in steps[:-1])
    text = render_counterexample(result)
    assert "publisher p1 writes (epoch 1, through 0)" in text
    assert "ingest certifies A before 0 in epoch 1" in text
    assert "record: epoch 1, through 0, revision 1" in text
    assert f"Invariant broken: {result.violation.invariant}" in text
    assert INVARIANTS[0].doc and result.violation.doc in text
    dot = counterexample_dot(result)
    assert dot.startswith("digraph counterexample {") and dot.count(" -> ") == len(steps)


def test_graph_dot_draws_every_state_and_edge_of_a_small_graph() -> None:
    result = explore(default_config("ingest", events_per_partition=1, readers=1), sometimes=())
    assert result.verdict == HOLDS
    dot = graphs_dot([result])
    assert dot.count('[label="#') == result.states
    assert dot.count(" -> ") == result.transitions


def test_max_states_stops_with_an_incomplete_verdict() -> None:
    result = explore(DEFAULTS["publication"], max_states=50, keep_graph=False)
    assert result.verdict == INCOMPLETE and result.states == 50
    assert result.counterexample is None


def _nothing_published(state: State) -> str | None:
    cut = state.record.cut
    return None if cut == NOTHING else f"the record claims {cut}"


def test_the_checker_checks_the_model_it_is_handed() -> None:
    """explore(model=...) checks the spec it is given and tells its states in that spec's
    words: an extra invariant is checked (and broken at the first publication), and the
    counterexample is described by the spec's own describe."""
    extra = Invariant("nothing_published", "no claim is ever published", _nothing_published)
    spec = dataclasses.replace(
        SPEC,
        invariants=(*SPEC.invariants, extra),
        describe=lambda state: [f"in the handed spec's words: epoch {state.epoch}"],
    )
    result = explore(DEFAULTS["publication"], keep_graph=False, model=spec)
    assert result.verdict == VIOLATED and result.violation is not None
    assert result.violation.invariant == "nothing_published"
    assert result.depth == PINNED_SOMETIMES["publication"]["publication"]
    text = render_counterexample(result)
    assert "in the handed spec's words: epoch 1" in text and "record:" not in text
    assert explore(DEFAULTS["publication"], keep_graph=False).verdict == HOLDS
