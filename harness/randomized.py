"""Random cases: a random world and a schedule chosen step by step among the possible ones.

The world draws orders (offsets, dense integers, strings above U+FFFF), events with
shared coordinates, partial finality, before/through sources, a possible reshard
that moves events below an old checkpoint, the cutover policy and the workers.
Steps are chosen with per-run worker speeds (:class:`Biases`) or PCT-style
priorities (:class:`Pct`), so that one worker often stalls mid-attempt while
others move on, within the budgets of :mod:`fencepost.harness.seeds`.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

from fencepost.harness.algebra import KEYS, MILLIS, OFFSETS
from fencepost.harness.results import RunResult
from fencepost.harness.runner import Run
from fencepost.harness.schedule import (
    LOSSES,
    Action,
    Advance,
    Answer,
    Crash,
    Finalize,
    Ingest,
    Publish,
    Reshard,
)
from fencepost.harness.seeds import CRASH_BUDGET, FAULT_BUDGET, INJECT_BUDGET, family_of
from fencepost.harness.transport import SutFactory
from fencepost.harness.world import (
    ClaimStyle,
    EpochSetup,
    EventSpec,
    PartitionSetup,
    WorldSetup,
)
from fencepost.judge.values import Coordinate

# --- random worlds ------------------------------------------------------------------------


def _pool(kind: str) -> list[Coordinate]:
    if kind == "string":
        # In code point order; the last three disagree with UTF-16 order (see BMP_HIGH).
        return ["a", "b", "c", "\uffee", "\U0001f600", "\U0001f601"]
    return [1, 2, 3, 4, 5, 6]


def _end(kind: str, rng: random.Random) -> Coordinate:
    return rng.choice(["\U0001f602", "\U0001f603"]) if kind == "string" else rng.choice([7, 8])


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
        epochs.append(
            EpochSetup(
                2,
                (
                    new_target,
                    *(
                        PartitionSetup(
                            p.name, p.events, final_count(len(p.events)), p.claims, p.end
                        )
                        for p in kept
                    ),
                ),
            )
        )
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
    """How likely a random schedule takes ``action`` among those possible (before biases)."""
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
    if isinstance(action, Crash):
        return 0.2
    return 0.3


@dataclass(frozen=True)
class Biases:
    """Per-run speeds: each worker's and the environment's weight multiplier.

    Drawing them once per run makes some workers slow and others fast, so a
    worker often stalls between reading and writing while others and the
    environment move on: the interleavings behind stale retries and confused
    lost responses, which uniform choices reach only rarely.
    """

    workers: dict[str, float]
    environment: float

    @staticmethod
    def draw(rng: random.Random, setup: WorldSetup) -> Biases:
        speeds = (0.1, 1.0, 8.0)
        return Biases({w: rng.choice(speeds) for w in setup.workers}, rng.choice((0.5, 1.0, 3.0)))

    def weight(self, action: Action) -> float:
        base = weight(action)
        if isinstance(action, Answer | Publish | Ingest):
            return base * self.workers.get(action.worker, 1.0)
        return base * self.environment


class Pct:
    """A chooser after probabilistic concurrency testing (PCT).

    Workers get random distinct priorities and the highest-priority worker
    with something to do goes next; at a few random steps the running worker
    drops to the lowest priority. A bug that needs one worker to stop at one
    precise point (between reading checkpoints and writing, say) while another
    runs a whole attempt is then found with a probability that depends on the
    number of change points, not on the length of the run. The environment and
    lost responses interleave at random rates.
    """

    def __init__(self, rng: random.Random, setup: WorldSetup, steps: int) -> None:
        order = list(setup.workers)
        rng.shuffle(order)
        self.rng = rng
        self.priority = {w: i for i, w in enumerate(order)}
        self.changes = set(rng.sample(range(1, steps + 1), k=min(steps, rng.randint(1, 3))))
        self.environment = rng.choice((0.1, 0.25))
        self.faults = rng.choice((0.05, 0.15))
        self.step = 0

    def __call__(self, possible: list[Action]) -> Action:
        self.step += 1
        mine = [a for a in possible if isinstance(a, Answer | Publish | Ingest)]
        others = [a for a in possible if not isinstance(a, Answer | Publish | Ingest)]
        if others and (not mine or self.rng.random() < self.environment):
            return self.rng.choices(others, weights=[weight(a) for a in others])[0]
        top = max({a.worker for a in mine}, key=lambda w: self.priority[w])
        if self.step in self.changes:
            self.priority[top] = min(self.priority.values()) - 1
        moves = [a for a in mine if a.worker == top]
        faults = [a for a in moves if isinstance(a, Answer) and a.mode != "ok"]
        if faults and self.rng.random() < self.faults:
            return self.rng.choice(faults)
        normal = [a for a in moves if a not in faults]
        return self.rng.choice(normal or moves)


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
            possible = run.enabled(FAULT_BUDGET, INJECT_BUDGET, CRASH_BUDGET)
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
    steps = _length(rng, family)
    if rng.random() < 0.5:
        return run_chosen(factory, setup, Pct(rng, setup, steps), steps, timeout=timeout)
    biases = Biases.draw(rng, setup)

    def choose(possible: list[Action]) -> Action:
        return rng.choices(possible, weights=[biases.weight(a) for a in possible])[0]

    return run_chosen(factory, setup, choose, steps, timeout=timeout)
