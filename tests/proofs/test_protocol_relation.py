"""The Z3 relation is the model: tied to the explorer's transitions both ways.

1. Every transition the explorer takes satisfies the relation: the relation's
   action standing for it has its guard true on the encoded state, and yields
   exactly the encoded next state (the formulas Z3 proves things about,
   evaluated on finite states). Fast by default: every transition of small
   configurations and of a sample of the default explorations; ``--run-slow``:
   every 6th state's transitions of the default exploration of every part, and
   with ``--full-length`` every transition (``FENCEPOST_RELATION_STRIDE=n``
   checks every n-th state's instead).
2. Successors Z3 finds from sampled reachable states are successors in the model.
3. Reachable states satisfy every lemma (the lemmas are true of the model).
Teeth: a relation that forgets an update, or a guard, is caught by each.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
from lengths import Length

from fencepost.explorer.search import ExploreResult, explore
from fencepost.model.config import DEFAULTS, ModelConfig, default_config
from fencepost.model.machine import successors
from fencepost.model.state import State
from fencepost.properties import protocol_actions
from fencepost.properties.protocol_actions import ACTIONS_BY_NAME, Action
from fencepost.properties.protocol_lemmas import invariant_of, properties_of
from fencepost.properties.protocol_relation import (
    Encoder,
    check_transition,
    model_actions,
    witness,
    z3_successors,
)
from fencepost.properties.protocol_state import normalize
from fencepost.solver import budget, metered

#: Every n-th reachable state's transitions by default (fewer with --run-slow).
STRIDE = 25
#: Reachable states sampled per part for Z3 successors (more with --run-slow).
SAMPLES = 4


@pytest.fixture(scope="module")
def explorations() -> dict[str, ExploreResult]:
    return {part: explore(cfg, sometimes=()) for part, cfg in DEFAULTS.items()}


def _check_all(states: list[State]) -> tuple[int, Counter[str], list[str]]:
    enc = Encoder(states[0])
    used: Counter[str] = Counter()
    bad: list[str] = []
    n = 0
    for state in states:
        for a, nxt in successors(state):
            n += 1
            used[witness(enc, state, a, nxt)[0]] += 1
            problem = check_transition(enc, state, a, nxt)
            if problem is not None and len(bad) < 5:
                bad.append(problem)
    return n, used, bad


SMALL: dict[str, ModelConfig] = {
    "publication, one publisher, one epoch": default_config("publication", publishers=1, epochs=1),
    "publication, successor order, two coordinates": default_config(
        "publication",
        successor=True,
        policy="reset",
        publishers=1,
        coordinates=2,
        epochs=1,
        in_flight=False,
        bad_checkpoints=(),
    ),
    "ingest, one reader, a reshard": default_config(
        "ingest", events_per_partition=1, readers=1, epochs=2
    ),
    "composed, one epoch": default_config("composed", epochs=1),
}


@pytest.mark.parametrize("name", sorted(SMALL))
def test_every_transition_of_a_small_configuration_is_in_the_relation(name: str) -> None:
    result = explore(SMALL[name], sometimes=())
    n, _, bad = _check_all(result.representatives)
    assert n == result.transitions
    assert not bad, "\n".join(bad)


def test_sampled_transitions_of_the_default_exploration_are_in_the_relation(
    explorations: dict[str, ExploreResult],
) -> None:
    used: Counter[str] = Counter()
    for part in sorted(DEFAULTS):
        states = explorations[part].representatives[::STRIDE]
        n, seen, bad = _check_all(states)
        assert not bad, "\n".join(bad)
        assert n > 1000, part
        used.update(seen)
    # Every action of the relation that stands for a model transition is exercised: its
    # guard holds in reachable states, so no obligation about it is vacuous.
    in_model = {a.name for a in model_actions()}
    assert set(used) == in_model, in_model - set(used)


@pytest.mark.slow
@pytest.mark.parametrize("part", sorted(DEFAULTS))
def test_every_transition_of_the_default_exploration_is_in_the_relation(
    explorations: dict[str, ExploreResult], part: str, length: Length
) -> None:
    result = explorations[part]
    stride = length.pick(full=1, bounded=6, env="FENCEPOST_RELATION_STRIDE")
    n, _, bad = _check_all(result.representatives[::stride])
    assert not bad, "\n".join(bad)
    if stride == 1:
        assert n == result.transitions


# --- Z3's successors are the model's --------------------------------------------------


def _sample(result: ExploreResult, count: int, seed: int) -> list[State]:
    return random.Random(seed).sample(result.representatives, count)


def _z3_vs_model(states: list[State], part: str) -> tuple[int, list[str]]:
    enc = Encoder(states[0])
    found_total = 0
    bad = []
    for state in states:
        by_action: dict[str, list[Any]] = {}
        for a, nxt in successors(state):
            name = witness(enc, state, a, nxt)[0]
            by_action.setdefault(name, []).append(normalize(enc.tables(nxt)))
        every = [x for xs in by_action.values() for x in xs]
        for action in model_actions():
            if part not in action.protocols:
                continue
            found = z3_successors(state, action, limit=4)
            found_total += len(found)
            for succ in found:
                if succ not in every:
                    bad.append(f"{action.name}: Z3 found a successor the model does not have")
            if by_action.get(action.name) and not found:
                bad.append(f"{action.name}: the model has successors, Z3 found none")
    return found_total, bad


#: The part whose successor queries are the most expensive: its peak here is the measured
#: figure of ``protocol.successors`` (fencepost.solver.budgets).
COSTLIEST_PART = "publication"


@pytest.mark.parametrize("part", sorted(DEFAULTS))
def test_successors_z3_finds_are_successors_in_the_model(
    explorations: dict[str, ExploreResult], part: str
) -> None:
    with metered() as peaks:
        found, bad = _z3_vs_model(_sample(explorations[part], SAMPLES, seed=15), part)
    assert not bad, "\n".join(bad[:5])
    assert found > 10
    # The rlimit table pins what these queries consume (remeasure it if this moves).
    measured = budget("protocol.successors").measured
    assert peaks["protocol.successors"] <= measured, peaks
    if part == COSTLIEST_PART:
        assert peaks["protocol.successors"] == measured, f"{peaks}, update the table"


@pytest.mark.slow
@pytest.mark.parametrize("part", sorted(DEFAULTS))
def test_successors_z3_finds_from_many_states_are_successors_in_the_model(
    explorations: dict[str, ExploreResult], part: str, length: Length
) -> None:
    count = length.pick(full=40, bounded=16, env="FENCEPOST_Z3_SUCCESSOR_SAMPLES")
    _, bad = _z3_vs_model(_sample(explorations[part], count, seed=16), part)
    assert not bad, "\n".join(bad[:5])


# --- the lemmas are true of the model -------------------------------------------------


def _lemma_failures(states: list[State], part: str) -> Counter[str]:
    enc = Encoder(states[0])
    checks = [*invariant_of(part), *properties_of(part)]
    failed: Counter[str] = Counter()
    for state in states:
        view = enc.view(state)
        for lemma in checks:
            if not lemma.formula(enc.L, view):
                failed[lemma.name] += 1
    return failed


@pytest.mark.parametrize("part", sorted(DEFAULTS))
def test_sampled_reachable_states_satisfy_every_lemma(
    explorations: dict[str, ExploreResult], part: str
) -> None:
    assert not _lemma_failures(explorations[part].representatives[::STRIDE], part)


@pytest.mark.slow
@pytest.mark.parametrize("part", sorted(DEFAULTS))
def test_reachable_states_satisfy_every_lemma(
    explorations: dict[str, ExploreResult], part: str, length: Length
) -> None:
    """Every 4th reachable state (12th bounded); FENCEPOST_LEMMA_STRIDE=1 checks them all."""
    stride = length.pick(full=4, bounded=12, env="FENCEPOST_LEMMA_STRIDE")
    assert not _lemma_failures(explorations[part].representatives[::stride], part)


# --- teeth ----------------------------------------------------------------------------


def _broken(name: str, drop: str | None = None, no_guard: bool = False) -> Action:
    real = ACTIONS_BY_NAME[name]

    def build(L: Any, s: Any, prm: dict[str, Any], mutant: str | None) -> Any:
        guard, changes = real.build(L, s, prm, mutant)
        if drop is not None:
            changes = {k: v for k, v in changes.items() if k != drop}
        return (L.true if no_guard else guard), changes

    return Action(real.name, real.doc, real.protocols, real.params, build, real.in_model)


@pytest.fixture
def patched(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    def patch(action: Action) -> None:
        monkeypatch.setitem(protocol_actions.ACTIONS_BY_NAME, action.name, action)
        from fencepost.properties import protocol_relation

        table = vars(protocol_relation)["ACTIONS_BY_NAME"]  # the relation check's own reference
        monkeypatch.setitem(table, action.name, action)

    yield patch


def test_a_relation_that_forgets_an_update_is_caught(patched: Any) -> None:
    patched(_broken("write_publication:ok", drop="rec_rev"))
    result = explore(SMALL["publication, one publisher, one epoch"], sometimes=())
    _, _, bad = _check_all(result.representatives)
    assert bad and "write_publication:ok" in bad[0] and "rec_rev" in bad[0]


def test_a_relation_that_forgets_a_guard_is_caught(
    explorations: dict[str, ExploreResult],
) -> None:
    loose = _broken("record_outcomes", no_guard=True)
    states = _sample(explorations["ingest"], 6, seed=3)
    enc = Encoder(states[0])
    extra = 0
    for state in states:
        model_next = [normalize(enc.tables(n)) for _, n in successors(state)]
        extra += sum(1 for s in z3_successors(state, loose, limit=3) if s not in model_next)
    assert extra > 0
