"""Making a failing schedule short: delta debugging over its steps.

Any sub-sequence of a schedule is a schedule (impossible steps are skipped), so
:func:`shrink` removes chunks, then single steps, re-running the SUT for each
candidate and keeping those that break the same rule.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from fencepost.harness.results import RunResult
from fencepost.harness.rules import Rule
from fencepost.harness.runner import run_schedule
from fencepost.harness.schedule import (
    Action,
)
from fencepost.harness.transport import SutFactory
from fencepost.harness.world import (
    WorldSetup,
)

# --- shrinking --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Shrunk:
    """The shortest failing schedule found and its run."""

    actions: tuple[Action, ...]
    result: RunResult
    runs: int


T = TypeVar("T")
P = TypeVar("P")


def ddmin(
    items: Sequence[T],
    attempt: Callable[[list[T]], tuple[list[T], P] | None],
    spent: Callable[[], bool],
) -> tuple[list[T], P | None]:
    """Delta debugging (ddmin) over ``items``, then one-at-a-time removal.

    ``attempt(candidate)`` runs a candidate and returns what actually ran (a
    sub-sequence of it: impossible steps are skipped) with a payload when it
    still fails, None otherwise. ``spent()`` says the budget is gone: the best
    found so far is returned, with the payload of its run (None if no
    candidate failed). Shared by both worlds' shrinkers.
    """
    best = list(items)
    payload: P | None = None

    def fails(candidate: list[T]) -> bool:
        nonlocal best, payload
        if spent():
            return False
        outcome = attempt(candidate)
        if outcome is None:
            return False
        kept, found = outcome
        if len(kept) <= len(best):
            best, payload = kept, found
        return True

    granularity = 2
    while len(best) >= 2 and not spent():
        size = max(1, -(-len(best) // granularity))
        chunks = [best[i : i + size] for i in range(0, len(best), size)]
        reduced = False
        for i in range(len(chunks)):
            complement = [a for j, chunk in enumerate(chunks) if j != i for a in chunk]
            if fails(complement):
                granularity = max(granularity - 1, 2)
                reduced = True
                break
        if not reduced:
            for chunk in chunks:
                if len(chunk) < len(best) and fails(list(chunk)):
                    granularity = 2
                    reduced = True
                    break
        if not reduced:
            if granularity >= len(best):
                break
            granularity = min(len(best), granularity * 2)
    i = 0
    while i < len(best) and not spent():
        if not fails(best[:i] + best[i + 1 :]):
            i += 1
    return best, payload


def shrink(
    factory: SutFactory,
    setup: WorldSetup,
    actions: Sequence[Action],
    rule: Rule,
    result: RunResult,
    *,
    timeout: float,
    budget: int = 400,
    seconds: float = 120.0,
) -> Shrunk:
    """Delta debugging (ddmin) over the steps, then one-at-a-time removal.

    A candidate counts as failing when its run breaks the same ``rule``. Each
    candidate is a fresh run against fresh SUT workers. Stops when no single
    step can be removed, or when ``budget`` runs or ``seconds`` are spent
    (the best schedule found so far is returned).
    """
    deadline = time.monotonic() + seconds
    runs = 0

    def spent() -> bool:
        return runs >= budget or time.monotonic() > deadline

    def attempt(candidate: list[Action]) -> tuple[list[Action], RunResult] | None:
        nonlocal runs
        runs += 1
        run = run_schedule(factory, setup, candidate, timeout=timeout)
        hit = run.first
        if hit is not None and hit.rule is rule:
            return list(run.executed), run
        return None

    best, found = ddmin(actions, attempt, spent)
    return Shrunk(tuple(best), result if found is None else found, runs)
