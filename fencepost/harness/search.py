"""Finding failing schedules and making them short.

Every case the harness runs is named by one integer **seed**, and the seed
alone reproduces it:

- a non-negative seed is a *random* case; ``seed % 4`` picks the family
  (:data:`FAMILIES`: algebra, publisher, checkpointer, composed), and a
  ``random.Random(seed)`` draws the world (orders, events with shared
  coordinates, partial finality, before/through sources, a possible reshard
  that moves events below an old checkpoint, the cutover policy, the workers)
  and then chooses every step among those possible, with weights favouring
  normal answers and a budget of lost responses per request;
- a negative seed is an *exhaustive* case: a small scripted base schedule of
  one family plus up to ``depth`` inserted steps, each chosen among every step
  possible at its position. Enumerating all insertions up to ``depth`` covers
  every single deviation (a lost response here, a conflicting publisher there,
  a misconfiguration, a reshard) from the base at every point.

:func:`shrink` cuts a failing schedule down by delta debugging over its steps
(any sub-sequence is a schedule; impossible steps are skipped), re-running the
SUT for each candidate and keeping those that break the same rule.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from fencepost.harness.algebra import MILLIS, OFFSETS, KEYS
from fencepost.harness.rules import Rule
from fencepost.harness.runner import Run, RunResult, run_schedule
from fencepost.harness.schedule import (
    LOSSES,
    Action,
    Advance,
    Answer,
    Finalize,
    Ingest,
    Inject,
    Publish,
    Reshard,
)
from fencepost.harness.transport import SutFactory
from fencepost.harness.world import (
    ClaimStyle,
    EpochSetup,
    EventSpec,
    PartitionSetup,
    WorldSetup,
)
from fencepost.impl.orders import Coordinate

FAMILIES: tuple[str, ...] = ("algebra", "publisher", "checkpointer", "composed")
FAMILY_LEVELS: dict[str, frozenset[str]] = {
    "algebra": frozenset({"algebra"}),
    "publisher": frozenset({"publisher"}),
    "checkpointer": frozenset({"checkpointer"}),
    "composed": frozenset({"publisher", "checkpointer"}),
}
#: Lost responses one request may get in a random schedule (more only makes it give up).
FAULT_BUDGET = 2
#: Misconfigurations per random run.
INJECT_BUDGET = 2

_DIGIT = 1 << 20


# --- seeds ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ExhaustiveCase:
    """A scripted base plus inserted steps: ``(position, choice index)`` pairs, applied in
    order, each choosing among the steps possible at that position of the schedule so far."""

    family: str
    insertions: tuple[tuple[int, int], ...] = ()

    @property
    def seed(self) -> int:
        code = 0
        for position, choice in self.insertions:
            if not (0 <= position < 1024 and 0 <= choice < 1023):
                raise ValueError("an insertion is outside the encodable bounds")
            code = code * _DIGIT + (position * 1024 + choice + 1)
        return -(1 + FAMILIES.index(self.family) + 4 * code)

    @staticmethod
    def from_seed(seed: int) -> ExhaustiveCase:
        if seed >= 0:
            raise ValueError("exhaustive cases have negative seeds")
        code = -seed - 1
        family = FAMILIES[code % 4]
        code //= 4
        digits: list[int] = []
        while code:
            digits.append(code % _DIGIT)
            code //= _DIGIT
        insertions = tuple(((d - 1) // 1024, (d - 1) % 1024) for d in reversed(digits))
        return ExhaustiveCase(family, insertions)


def family_of(seed: int) -> str:
    """The family a seed's case belongs to."""
    if seed < 0:
        return ExhaustiveCase.from_seed(seed).family
    return FAMILIES[seed % 4]


def seed_for(rng: random.Random, family: str) -> int:
    """A fresh random seed of ``family``."""
    return rng.getrandbits(40) * 4 + FAMILIES.index(family)


# --- random worlds ------------------------------------------------------------------------


def _pool(kind: str) -> list[Coordinate]:
    if kind == "string":
        return ["a", "b", "c", "d", "e", "f"]
    return [1, 2, 3, 4, 5, 6]


def _end(kind: str, rng: random.Random) -> Coordinate:
    return rng.choice(["g", "h"]) if kind == "string" else rng.choice([7, 8])


def random_setup(seed: int, workers: int = 2) -> WorldSetup:
    """The world of random case ``seed`` (its family decides the workers and who certifies)."""
    family = family_of(seed)
    if family == "algebra":
        raise ValueError("algebra cases have no world")
    rng = random.Random(seed)
    order = rng.choice((OFFSETS, MILLIS, KEYS))
    pool = _pool(order.kind)
    env = family == "publisher"
    names = ["A", "B", "C"][: rng.randint(1, 3 if env else 2)]

    def final_count(n: int) -> int | None:
        return None if env and rng.random() < 0.7 else rng.randint(0, n)

    parts: list[PartitionSetup] = []
    for name in names:
        n = rng.randint(0, 4)
        positions = sorted(rng.choice(pool) for _ in range(n))
        parts.append(
            PartitionSetup(
                name=name,
                events=tuple(EventSpec(f"{name}{i + 1}", at) for i, at in enumerate(positions)),
                final=final_count(n),
                claims=rng.choice((ClaimStyle.BEFORE, ClaimStyle.THROUGH)),
                end=_end(order.kind, rng) if rng.random() < 0.5 else None,
            )
        )
    epochs = [EpochSetup(1, tuple(parts))]
    if rng.random() < 0.5:
        # Reshard: events move into the first partition below its old checkpoint, from a
        # removed partition (same ids) and as late arrivals (fresh ids, low positions).
        target, *others = parts
        removed = others[-1] if others and rng.random() < 0.5 else None
        moved = list(target.events)
        if removed is not None:
            moved.extend(removed.events)
        low = pool[: max(1, len(pool) // 2)]
        moved.extend(
            EventSpec(f"{target.name}m{i + 1}", rng.choice(low)) for i in range(rng.randint(1, 2))
        )
        end = target.end if target.end is not None or removed is None else removed.end
        if end is not None and any(order.compare(ev.at, end) >= 0 for ev in moved):
            end = None
        new_target = PartitionSetup(
            target.name, tuple(moved), final_count(len(moved)), target.claims, end
        )
        kept = [p for p in others if p is not removed]
        epochs.append(EpochSetup(2, (new_target, *(PartitionSetup(
            p.name, p.events, final_count(len(p.events)), p.claims, p.end) for p in kept))))
    count = max(1, workers)
    publishers: tuple[str, ...] = ()
    readers: tuple[str, ...] = ()
    if family == "publisher":
        publishers = tuple(f"w{i + 1}" for i in range(rng.randint(min(2, count), count)))
    elif family == "checkpointer":
        readers = tuple(f"r{i + 1}" for i in range(rng.randint(min(2, count), count)))
    else:
        publishers = tuple(f"w{i + 1}" for i in range(rng.randint(1, min(2, count))))
        readers = tuple(f"r{i + 1}" for i in range(rng.randint(1, min(2, count))))
    return WorldSetup(
        order=order,
        epochs=tuple(epochs),
        publishers=publishers,
        readers=readers,
        policy="reset" if rng.random() < 0.3 else "monotone",
        page_size=rng.randint(1, 3),
        env_checkpoints=env,
    )


def weight(action: Action) -> float:
    """How likely a random schedule takes ``action`` among those possible."""
    if isinstance(action, Answer):
        if action.mode == "ok":
            return 10.0
        return 1.5 if action.mode in LOSSES else 1.0
    if isinstance(action, Publish | Ingest):
        return 3.0
    if isinstance(action, Advance):
        return 3.0
    if isinstance(action, Finalize):
        return 2.0
    if isinstance(action, Reshard):
        return 0.5
    return 0.3


def _length(rng: random.Random, family: str) -> int:
    low, high = {"publisher": (15, 45), "checkpointer": (20, 60), "composed": (30, 80)}[family]
    return rng.randint(low, high)


def run_chosen(
    factory: SutFactory,
    setup: WorldSetup,
    choose: Callable[[list[Action]], Action],
    steps: int,
    *,
    timeout: float,
) -> RunResult:
    """A run whose steps ``choose`` picks among those possible, then drained."""
    with Run(factory, setup, timeout=timeout) as run:
        run.start()
        for _ in range(steps):
            possible = run.enabled(FAULT_BUDGET, INJECT_BUDGET)
            if not possible:
                break
            run.execute(choose(possible))
        run.drain()
    return run.finish()


def run_random(factory: SutFactory, seed: int, *, workers: int, timeout: float) -> RunResult:
    """Random schedule case ``seed`` (not algebra) against fresh SUT workers."""
    setup = random_setup(seed, workers)
    rng = random.Random(seed ^ 0x5EED)
    family = family_of(seed)

    def choose(possible: list[Action]) -> Action:
        return rng.choices(possible, weights=[weight(a) for a in possible])[0]

    return run_chosen(factory, setup, choose, _length(rng, family), timeout=timeout)


# --- exhaustive -----------------------------------------------------------------------------


def _events(partition: str, *positions: int) -> tuple[EventSpec, ...]:
    return tuple(EventSpec(f"{partition}{i + 1}", at) for i, at in enumerate(positions))


#: The small worlds of the exhaustive search. Publisher: two publishers over two
#: partitions (three events at two coordinates, a before-style source with a
#: heartbeat), and a reshard that moves a late event into A below its checkpoint.
#: Checkpointer: two readers over one partition with two events at one coordinate,
#: one not yet final.
TINY: dict[str, WorldSetup] = {
    "publisher": WorldSetup(
        order=OFFSETS,
        epochs=(
            EpochSetup(
                1,
                (
                    PartitionSetup("A", _events("A", 1, 2, 2)),
                    PartitionSetup("B", _events("B", 2), claims=ClaimStyle.BEFORE, end=4),
                ),
            ),
            EpochSetup(
                2,
                (
                    PartitionSetup("A", (*_events("A", 1, 2, 2), EventSpec("Am1", 1))),
                    PartitionSetup("B", _events("B", 2), claims=ClaimStyle.BEFORE, end=4),
                ),
            ),
        ),
        publishers=("w1", "w2"),
        env_checkpoints=True,
    ),
    "checkpointer": WorldSetup(
        order=MILLIS,
        epochs=(EpochSetup(1, (PartitionSetup("A", _events("A", 1, 2, 2), final=2),)),),
        readers=("r1", "r2"),
        page_size=2,
    ),
    "composed": WorldSetup(
        order=OFFSETS,
        epochs=(
            EpochSetup(
                1,
                (
                    PartitionSetup("A", _events("A", 1, 1), claims=ClaimStyle.BEFORE, end=3),
                    PartitionSetup("B", _events("B", 2)),
                ),
            ),
        ),
        publishers=("w1",),
        readers=("r1",),
        page_size=1,
    ),
}

BASE: dict[str, tuple[Action, ...]] = {
    "publisher": (
        Advance("A"),
        Advance("B"),
        Publish("w1"),
        Answer("w1"),
        Answer("w1"),
        Publish("w2"),
        Answer("w2"),
        Answer("w2"),
        Answer("w1"),
        Advance("A"),
        Answer("w2"),
        Answer("w2"),
        Reshard(),
        Publish("w1"),
    ),
    "checkpointer": (
        Ingest("r1", "A"),
        Answer("r1"),
        Answer("r1"),
        Ingest("r2", "A"),
        Answer("r2"),
        Answer("r1"),
        Finalize("A"),
        Answer("r2"),
        Answer("r2"),
        Answer("r1"),
        Answer("r2"),
    ),
    "composed": (
        Ingest("r1", "A"),
        Answer("r1"),
        Answer("r1"),
        Publish("w1"),
        Answer("w1"),
        Answer("r1"),
        Answer("w1"),
        Answer("w1"),
        Ingest("r1", "B"),
        Publish("w1"),
    ),
}


def observe(
    factory: SutFactory, setup: WorldSetup, schedule: Sequence[Action], *, timeout: float
) -> tuple[RunResult, list[list[Action]]]:
    """Run ``schedule`` and note, before each of its steps and after the last, every
    step that was possible (the exhaustive search's branching points)."""
    possible: list[list[Action]] = []
    with Run(factory, setup, timeout=timeout) as run:
        run.start()
        for action in schedule:
            possible.append(run.enabled(FAULT_BUDGET, None))
            if run.stopped:
                break
            run.execute(action)
        possible.append(run.enabled(FAULT_BUDGET, None))
        run.drain()
    possible.extend([] for _ in range(len(schedule) + 1 - len(possible)))
    return run.finish(), possible


def exhaustive_schedule(
    factory: SutFactory, case: ExhaustiveCase, *, timeout: float
) -> tuple[WorldSetup, tuple[Action, ...]]:
    """The schedule of exhaustive ``case`` (each insertion needs the run before it)."""
    setup = TINY[case.family]
    schedule = list(BASE[case.family])
    for position, choice in case.insertions:
        _, possible = observe(factory, setup, schedule, timeout=timeout)
        options = possible[position] if position < len(possible) else []
        if choice >= len(options):
            raise ValueError(f"seed names step {choice} of {len(options)} possible at {position}")
        schedule.insert(position, options[choice])
    return setup, tuple(schedule)


def exhaustive(
    factory: SutFactory, family: str, depth: int, *, timeout: float
) -> Iterator[tuple[ExhaustiveCase, RunResult]]:
    """Every schedule of ``family``'s base with up to ``depth`` inserted steps, each run once.

    Insertions are made at non-decreasing positions, so each combination is
    enumerated once (up to steps that turn out to be impossible and are skipped).
    """
    setup = TINY[family]
    stack: list[tuple[ExhaustiveCase, tuple[Action, ...], int]] = [
        (ExhaustiveCase(family), BASE[family], 0)
    ]
    while stack:
        case, schedule, lowest = stack.pop()
        result, possible = observe(factory, setup, schedule, timeout=timeout)
        yield case, result
        if len(case.insertions) >= depth or not result.ok:
            continue
        children = []
        for position in range(lowest, len(schedule) + 1):
            for choice, action in enumerate(possible[position]):
                child = list(schedule)
                child.insert(position, action)
                children.append(
                    (
                        ExhaustiveCase(family, (*case.insertions, (position, choice))),
                        tuple(child),
                        position + 1,
                    )
                )
        stack.extend(reversed(children))


# --- shrinking --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Shrunk:
    """The shortest failing schedule found and its run."""

    actions: tuple[Action, ...]
    result: RunResult
    runs: int


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
    best = list(actions)
    best_result = result
    runs = 0

    def fails(candidate: list[Action]) -> bool:
        nonlocal runs, best, best_result
        if runs >= budget or time.monotonic() > deadline:
            return False
        runs += 1
        attempt = run_schedule(factory, setup, candidate, timeout=timeout)
        hit = attempt.first
        if hit is not None and hit.rule is rule:
            executed = list(attempt.executed)
            if len(executed) <= len(best):
                best, best_result = executed, attempt
            return True
        return False

    granularity = 2
    while len(best) >= 2 and runs < budget:
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
    while i < len(best) and runs < budget:
        if not fails(best[:i] + best[i + 1 :]):
            i += 1
    return Shrunk(tuple(best), best_result, runs)
