"""Random cases: a random world and a schedule chosen step by step among the possible ones.

The world draws orders (offsets, dense integers, strings above U+FFFF), events with
shared coordinates, partial finality, before/through sources, a possible reshard
that moves events below an old checkpoint, the cutover policy and the workers.
Steps are chosen with per-run worker speeds (:class:`Biases`) or PCT-style
priorities (:class:`Pct`), so that one worker often stalls mid-attempt while
others move on, within the budgets of :mod:`fencepost.harness.seeds`.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Callable
from dataclasses import dataclass

from fencepost.harness.algebra import KEYS, MILLIS, OFFSETS
from fencepost.harness.results import RunResult
from fencepost.harness.runner import Run
from fencepost.harness.schedule import (
    CONFLICT_UNTIL_END,
    LOSSES,
    LOST_UNTIL_END,
    UNTIL_END,
    Action,
    Advance,
    Answer,
    Crash,
    Finalize,
    Ingest,
    Inject,
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


#: The value classes of harness/classes.py, as pools a world draws its coordinates from
#: (each sorted, each with an end above every value). Integers: small; negatives, zero
#: and different digit counts; the 32-bit, double and 64-bit edges and beyond.
_INT_POOLS: tuple[tuple[int, ...], ...] = (
    (1, 2, 3, 4, 5, 6),
    (-12, -3, -1, 0, 9, 10),
    (8, 9, 10, 11, 99, 100),
    (2**31 - 2, 2**31 - 1, 2**31, 2**53 - 1, 2**53, 2**53 + 1, 2**63 - 1, 2**63, 2**63 + 1),
    (2**64 + 1, 10**40),
)
#: Strings (code point order): above U+FFFF where UTF-16 order disagrees (see BMP_HIGH);
#: the empty string, prefixes and case variants; a combining mark against its
#: precomposed form (equal after NFC, far apart by code point).
_STR_POOLS: tuple[tuple[str, ...], ...] = (
    ("a", "b", "c", "\uffee", "\U0001f600", "\U0001f601"),
    ("", "B", "a", "ab", "abc", "b"),
    ("e", "e\u0301", "f", "\u00e9", "\uffee", "\U0001f600"),
)
#: Member names: plain; differing only in case; equal after NFC normalisation.
_NAME_SETS: tuple[tuple[str, ...], ...] = (
    ("A", "B", "C", "D"),
    ("A", "a", "B", "b"),
    ("\u00c5", "A\u030a", "B", "C"),
)

#: What swarm testing switches on or off per run (:class:`Swarm`).
FEATURES: tuple[str, ...] = (
    "lost",  # lost responses (applied or not)
    "pages",  # page shapes: empty, heartbeat, overlap, no claim, horizon
    "crash",  # a crash of a busy worker
    "inject",  # misconfigured checkpoints
    "reshard",  # a second membership epoch
    "persistent",  # faults that outlast any retry budget (lost or beaten until the end)
    "incomparable",  # a member on an order that cannot be compared
)


@dataclass(frozen=True)
class Swarm:
    """The fault and situation kinds one random run has switched on (swarm testing:
    Groce et al., ISSTA 2012). Switching some off makes the others denser: a run
    without lost responses races its publishers much further, one without crashes
    spends its steps on conflicts. With ``all`` every kind is on (no swarm)."""

    on: frozenset[str]

    @staticmethod
    def draw(seed: int, enabled: bool) -> Swarm:
        if not enabled:
            return Swarm(frozenset(FEATURES))
        rng = random.Random(seed ^ 0x5A4A)
        return Swarm(frozenset(f for f in FEATURES if rng.random() < 0.5))

    def allows(self, action: Action) -> bool:
        if isinstance(action, Answer):
            if action.mode in UNTIL_END:
                return "persistent" in self.on
            if action.mode in LOSSES:
                return "lost" in self.on
            return action.mode == "ok" or "pages" in self.on
        if isinstance(action, Crash):
            return "crash" in self.on
        if isinstance(action, Inject):
            return "inject" in self.on
        if isinstance(action, Reshard):
            return "reshard" in self.on
        return True


def _within(pool: tuple[int, ...], limits: tuple[int, int] | None) -> list[int]:
    if limits is None:
        return list(pool)
    return [v for v in pool if limits[0] <= v <= limits[1] - 2]


def _pool(
    kind: str, rng: random.Random, edges: bool, limits: tuple[int, int] | None
) -> list[Coordinate]:
    """Six coordinates in order: the plain pool, or (``edges``) six drawn from every class
    at once, so that one world holds several classes side by side (9 beside 10 beside
    2^53 + 1; the empty string beside a combining mark beside U+1F600)."""
    if kind == "string":
        if not edges:
            return list(_STR_POOLS[0])
        # Every string class: the empty string, a prefix pair, a case pair ("B" below "a"
        # by code point, above it ignoring case), a combining mark beside "f" (e + U+0301
        # below it, its NFC/NFKC form U+00E9 above it), a character above U+FFFF.
        mark = rng.choice(("e\u0301", "\u00e9"))
        return sorted({"", "a", "ab", "B", "b", mark, "f", "\U0001f600"})
    if not edges:
        return list(_INT_POOLS[0])
    # One value of each integer class (harness/classes.py), six classes of seven.
    groups = [
        g
        for g in (
            _within((-12, -3, -1), limits),
            [0],
            [9, 10, 99, 100],
            _within((2**31 - 1, 2**31), limits),
            _within((2**53, 2**53 + 1), limits),
            _within((2**63 - 1, 2**63, 2**63 + 1), limits),
            _within((2**64 + 1, 10**40), limits),
        )
        if g
    ]
    chosen = rng.sample(groups, min(6, len(groups)))
    return sorted({rng.choice(g) for g in chosen} | {1, 2})


def _end(kind: str, rng: random.Random, pool: list[Coordinate]) -> Coordinate:
    if kind == "string":
        return rng.choice(["\U0001f602", "\U0001f603"])
    top = max(v for v in pool if isinstance(v, int))
    return top + rng.choice([1, 2])


def random_setup(
    seed: int,
    workers: int = 2,
    limits: tuple[int, int] | None = None,
    swarm: bool = True,
) -> WorldSetup:
    """The world of random case ``seed`` (its family decides the workers and who certifies).

    Coordinates, member names and epoch numbers are drawn from the value classes
    (harness/classes.py) that the run's :class:`Swarm` switches on; integers stay
    within ``limits`` (a range the SUT declared).
    """
    family = family_of(seed)
    if family == "algebra":
        raise ValueError("algebra cases have no world")
    features = Swarm.draw(seed, swarm).on
    rng = random.Random(seed)
    order = rng.choice((OFFSETS, MILLIS, KEYS))
    # Value classes are not a swarm feature: every level meets them in most runs.
    pool = _pool(order.kind, rng, rng.random() < 0.75, limits)
    env = family == "publisher"
    names = list(rng.choice(_NAME_SETS)[: rng.randint(1, 4 if env else 3)])

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
                end=_end(order.kind, rng, pool) if rng.random() < 0.5 else None,
            )
        )
    other = "incomparable" in features and len(parts) > 1
    if other and rng.random() < 0.5:
        parts[-1] = dataclasses.replace(parts[-1], order="ledger")
        other = False
    epochs = [EpochSetup(1, tuple(parts))]
    if "reshard" in features and rng.random() < 0.5:
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
        second = [
            new_target,
            *(
                PartitionSetup(p.name, p.events, final_count(len(p.events)), p.claims, p.end)
                for p in kept
            ),
        ]
        if other and len(second) > 1:
            second[-1] = dataclasses.replace(second[-1], order="ledger")
        # Epochs skip numbers as often as not: an implementation must not assume +1.
        epochs.append(EpochSetup(1 + rng.choice((1, 1, 2, 3)), tuple(second)))
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
        if action.mode in UNTIL_END:
            return 0.15
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


def run_random(
    factory: SutFactory,
    seed: int,
    *,
    workers: int,
    timeout: float,
    limits: tuple[int, int] | None = None,
    swarm: bool = True,
) -> RunResult:
    """Random schedule case ``seed`` (not algebra) against fresh SUT workers.

    With ``swarm`` the run switches a random subset of fault and situation kinds
    on (:class:`Swarm`); without it every kind is on.
    """
    setup = random_setup(seed, workers, limits, swarm)
    features = Swarm.draw(seed, swarm)
    rng = random.Random(seed ^ 0x5EED)
    family = family_of(seed)
    steps = _length(rng, family)
    if rng.random() < 0.5:
        pct = Pct(rng, setup, steps)
        return run_chosen(
            factory,
            setup,
            lambda possible: pct(_persistent(possible, features)),
            steps,
            timeout=timeout,
        )
    biases = Biases.draw(rng, setup)

    def choose(possible: list[Action]) -> Action:
        possible = _persistent(possible, features)
        return rng.choices(possible, weights=[biases.weight(a) for a in possible])[0]

    return run_chosen(factory, setup, choose, steps, timeout=timeout)


def _persistent(possible: list[Action], swarm: Swarm) -> list[Action]:
    """``possible`` filtered by the swarm, with the faults that outlast any retry budget
    added for each pending publisher call when the swarm has them on."""
    kept = [a for a in possible if swarm.allows(a)] or possible
    if "persistent" in swarm.on:
        pending = {a.worker for a in possible if isinstance(a, Answer)}
        for worker in sorted(pending):
            kept.append(Answer(worker, LOST_UNTIL_END))
            if worker.startswith("w"):
                kept.append(Answer(worker, CONFLICT_UNTIL_END))
    return kept
