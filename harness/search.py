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

from fencepost.harness.algebra import KEYS, MILLIS, OFFSETS
from fencepost.harness.results import RunResult
from fencepost.harness.rules import HarnessError, Rule
from fencepost.harness.runner import Run, run_schedule
from fencepost.harness.schedule import (
    LOSSES,
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
from fencepost.harness.transport import SutFactory
from fencepost.harness.world import (
    ClaimStyle,
    EpochSetup,
    EventSpec,
    PartitionSetup,
    WorldSetup,
)
from fencepost.judge.values import Coordinate

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
#: Crashes of a busy worker per random run (the worker restarts with no memory).
CRASH_BUDGET = 1

_DIGIT = 1 << 20


# --- seeds ---------------------------------------------------------------------------------


#: Room for scripted bases in an exhaustive seed (their index is part of the seed).
_BASE_SLOTS = 32


@dataclass(frozen=True, slots=True)
class ExhaustiveCase:
    """A scripted base (by name; ``"algebra"`` is the algebra level's small-bounds cases)
    plus inserted steps: ``(position, choice index)`` pairs, applied in order, each
    choosing among the steps possible at that position of the schedule so far."""

    base: str
    insertions: tuple[tuple[int, int], ...] = ()

    @property
    def family(self) -> str:
        return "algebra" if self.base == "algebra" else BASES[self.base].family

    @property
    def seed(self) -> int:
        code = 0
        for position, choice in self.insertions:
            if not (0 <= position < 1024 and 0 <= choice < 1023):
                raise ValueError("an insertion is outside the encodable bounds")
            code = code * _DIGIT + (position * 1024 + choice + 1)
        return -(1 + BASE_NAMES.index(self.base) + _BASE_SLOTS * code)

    @staticmethod
    def from_seed(seed: int) -> ExhaustiveCase:
        if seed >= 0:
            raise ValueError("exhaustive cases have negative seeds")
        code = -seed - 1
        index = code % _BASE_SLOTS
        if index >= len(BASE_NAMES):
            raise ValueError(f"seed {seed} names scripted base #{index}; there is no such base")
        code //= _BASE_SLOTS
        digits: list[int] = []
        while code:
            digits.append(code % _DIGIT)
            code //= _DIGIT
        insertions = tuple(((d - 1) // 1024, (d - 1) % 1024) for d in reversed(digits))
        return ExhaustiveCase(BASE_NAMES[index], insertions)


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


# --- exhaustive -----------------------------------------------------------------------------


def _events(partition: str, *positions: int) -> tuple[EventSpec, ...]:
    return tuple(EventSpec(f"{partition}{i + 1}", at) for i, at in enumerate(positions))


#: The small worlds of the exhaustive search, and their scripted bases.
#:
#: Publisher (offsets): A's events sit at 1, 3, 3, 4, 6 (two at one coordinate, so an
#: honest reader certifies ``through 1``, ``before 3``, ``through 3``, ...); B's at 1,
#: 3 and 7. Epoch 2 moves a late event into A at 1, below A's old checkpoint. The base
#: races two publishers twice: first w2 reads older checkpoints than w1 and writes
#: first (one lost response on w1's write then tests confirmation), then w1 reads
#: older ones and writes last (a stale retry); then it reshards under the monotone
#: policy with the new epoch's frontier below the record (cutover pending).
#:
#: Checkpointer (millis, dense): A's events at 1, 2, 2, 3, the last not yet final.
#: r1 stops before writing its first checkpoint while r2 ingests twice (the
#: second time after the source finalizes the last event); r1's write then
#: arrives late, after a newer checkpoint.
TINY: dict[str, WorldSetup] = {
    "publisher": WorldSetup(
        order=OFFSETS,
        epochs=(
            EpochSetup(
                1,
                (
                    PartitionSetup("A", _events("A", 1, 3, 3, 4, 6)),
                    PartitionSetup("B", _events("B", 1, 3, 7)),
                ),
            ),
            EpochSetup(
                2,
                (
                    PartitionSetup("A", (*_events("A", 1, 3, 3, 4, 6), EventSpec("Am1", 1))),
                    PartitionSetup("B", _events("B", 1, 3, 7)),
                ),
            ),
        ),
        publishers=("w1", "w2"),
        env_checkpoints=True,
    ),
    "checkpointer": WorldSetup(
        order=MILLIS,
        epochs=(EpochSetup(1, (PartitionSetup("A", _events("A", 1, 2, 2, 3), final=3),)),),
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


def _events_at(partition: str, *positions: str) -> tuple[EventSpec, ...]:
    return tuple(EventSpec(f"{partition}{i + 1}", at) for i, at in enumerate(positions))


def _answers(worker: str, count: int) -> tuple[Action, ...]:
    return tuple(Answer(worker) for _ in range(count))


BASE: dict[str, tuple[Action, ...]] = {
    "publisher": (
        Advance("A"),  # A through 1
        Publish("w1"),
        *_answers("w1", 4),  # B has no checkpoint yet: withheld missing_checkpoint
        Advance("B"),  # B through 1
        # Race 1: w1 reads older checkpoints, w2 newer; w2 writes first, w1's write is stale.
        Publish("w1"),
        *_answers("w1", 3),  # w1 proposes through 1
        Advance("A"),  # A before 3
        Advance("B"),  # B through 3
        Publish("w2"),
        *_answers("w2", 3),  # w2 proposes before 3 (B is through 3: same coordinate)
        Answer("w2"),  # w2 publishes before 3
        Answer("w1"),  # w1's stale write conflicts; it rereads
        *_answers("w1", 3),  # and finds nothing new: unchanged
        # Race 2: w2 reads older checkpoints, w1 newer; w2 writes first.
        Advance("A"),  # A through 3
        Publish("w2"),
        *_answers("w2", 3),  # w2 proposes through 3
        Advance("A"),  # A through 4
        Advance("B"),  # B through 7
        Publish("w1"),
        *_answers("w1", 3),  # w1 proposes through 4
        Answer("w2"),  # w2 publishes through 3 (a lost response on w1's write before
        Answer("w1"),  # this point makes w1 reread a moved revision with a lower cut)
        *_answers("w1", 4),  # w1 recomputes and publishes through 4
        # Cutover: epoch 2 moves a late event into A below its checkpoint.
        Reshard(),
        Advance("A"),  # epoch 2: A before 1
        Advance("B"),
        Publish("w2"),  # monotone policy: cutover pending
    ),
    "checkpointer": (
        Ingest("r1", "A"),
        *_answers("r1", 4),  # r1 read nothing, fetched [A1, A2], recorded them; write pending
        Ingest("r2", "A"),
        *_answers("r2", 8),  # r2's whole pass: certifies before 2, sees A3, A4 (not final)
        Finalize("A"),
        Ingest("r2", "A"),
        *_answers("r2", 5),  # r2 certifies through 3
        Answer("r1"),  # r1's write arrives after the newer checkpoint
    ),
    "composed": (
        Ingest("r1", "A"),
        *_answers("r1", 2),
        Publish("w1"),
        *_answers("w1", 2),
        Answer("r1"),
        *_answers("w1", 2),
        Ingest("r1", "B"),
        Publish("w1"),
    ),
}


#: Strings whose code point order and UTF-16 order disagree: U+FFEE < U+1F600 by code
#: point, but U+1F600 is written with a surrogate pair (D83D DE00) that sorts first in
#: UTF-16 units (JavaScript's and Java's string comparison).
BMP_HIGH, ASTRAL = "\uffee", "\U0001f600"

#: Dense integers, both endpoint kinds at one coordinate, under the reset policy. A's
#: events at 5, 5 and 7: an honest reader certifies ``before 5``, ``through 5``,
#: ``through 7``; B's one event at 5 under a source that states ``before`` boundaries
#: and vouches for ``before 6``. The merge goes ``before 5`` -> ``through 5`` (progress
#: at one coordinate: an endpoint-blind comparison calls it unchanged), and
#: ``through 5`` is the minimum of ``through 5`` and ``before 6`` on a dense order (a
#: manufactured successor publishes ``before 6``). Epoch 2 moves a late event into A at
#: 4, below A's old checkpoint.
_MILLIS_PUBLISHER = WorldSetup(
    order=MILLIS,
    epochs=(
        EpochSetup(
            1,
            (
                PartitionSetup("A", _events("A", 5, 5, 7)),
                PartitionSetup("B", _events("B", 5), claims=ClaimStyle.BEFORE, end=6),
            ),
        ),
        EpochSetup(
            2,
            (
                PartitionSetup("A", (*_events("A", 5, 5, 7), EventSpec("Am1", 4))),
                PartitionSetup("B", _events("B", 5), claims=ClaimStyle.BEFORE, end=6),
            ),
        ),
    ),
    publishers=("w1", "w2"),
    env_checkpoints=True,
    policy="reset",
)

_MILLIS_PUBLISHER_BASE: tuple[Action, ...] = (
    Advance("A"),  # A before 5
    Advance("B"),  # B before 5
    Publish("w1"),
    *_answers("w1", 4),  # w1 publishes before 5
    Advance("A"),  # A through 5
    Advance("B"),  # B before 6
    Publish("w1"),
    *_answers("w1", 4),  # w1 publishes through 5: progress at one coordinate
    Advance("A"),  # A through 7
    Publish("w1"),
    *_answers("w1", 3),  # w1 proposes before 6
    Answer("w1", "lost"),  # its write is not applied and the response is lost
    Reshard(),  # epoch 2 before w1 rereads: the cutover rule applies
    *_answers("w1", 5),  # w1 rereads: its membership is epoch 2, with no checkpoint yet
    Advance("A"),  # epoch 2: A through 4
    Advance("B"),  # epoch 2: B before 5
    Publish("w2"),
    *_answers("w2", 4),  # reset policy: the record moves to epoch 2 with a lower cut
    Publish("w1"),
    *(Answer("w1", "lost") for _ in range(5)),  # persistent loss: a retry budget is spent
)

#: A crash between two calls: w1 dies after reading the record (its process is killed
#: and a fresh one started); the restarted w1 attempts again with no memory and must
#: not reuse the dead process's op_ids. Short, because every run starts a process.
_CRASH_BASE: tuple[Action, ...] = (
    Advance("A"),  # A through 1
    Advance("B"),  # B through 1
    Publish("w1"),
    Answer("w1"),
    Crash("w1"),
    Publish("w1"),
    *_answers("w1", 4),  # the restarted w1 publishes through 1
)

#: Strings above U+FFFF. A's events at "a", U+FFEE and U+1F600, B's at U+FFEE and
#: U+1F600. The record reaches ``through U+FFEE``; then A alone certifies
#: ``through U+1F600`` (the merge stays ``through U+FFEE``: a UTF-16 minimum publishes
#: U+1F600), then B does too (the merge is ahead: a UTF-16 comparison calls it behind).
_KEYS_PUBLISHER = WorldSetup(
    order=KEYS,
    epochs=(
        EpochSetup(
            1,
            (
                PartitionSetup("A", _events_at("A", "a", BMP_HIGH, ASTRAL)),
                PartitionSetup("B", _events_at("B", BMP_HIGH, ASTRAL)),
            ),
        ),
    ),
    publishers=("w1", "w2"),
    env_checkpoints=True,
)

_KEYS_PUBLISHER_BASE: tuple[Action, ...] = (
    Advance("A"),  # A through "a"
    Advance("A"),  # A through U+FFEE
    Advance("B"),  # B through U+FFEE
    Publish("w1"),
    *_answers("w1", 4),  # w1 publishes through U+FFEE
    Advance("A"),  # A through U+1F600
    Publish("w2"),
    *_answers("w2", 3),  # w2: the merge is still through U+FFEE: unchanged
    Advance("B"),  # B through U+1F600
    Publish("w1"),
    *_answers("w1", 4),  # w1 publishes through U+1F600
)

#: The checkpointer on strings above U+FFFF: r1's pass stops before its write while r2
#: certifies further; r1's late write conflicts, and on rereading it must see that the
#: stored U+1F600 is ahead of its own U+FFEE (a UTF-16 comparison rewrites it lower).
_KEYS_CHECKPOINTER = WorldSetup(
    order=KEYS,
    epochs=(
        EpochSetup(1, (PartitionSetup("A", _events_at("A", "a", BMP_HIGH, ASTRAL), final=2),)),
    ),
    readers=("r1", "r2"),
    page_size=2,
)

_KEYS_CHECKPOINTER_BASE: tuple[Action, ...] = (
    Ingest("r1", "A"),
    *_answers("r1", 4),  # r1 read nothing, fetched [a, U+FFEE], recorded them; write pending
    Finalize("A"),
    Ingest("r2", "A"),
    *_answers("r2", 9),  # r2's whole pass certifies through U+1F600
    Answer("r1"),  # r1's late write conflicts with the newer checkpoint
    *_answers("r1", 3),  # r1 rereads and must not write its lower cut again
)


@dataclass(frozen=True)
class Base:
    """A scripted base of the exhaustive search: a small world and a schedule racing its
    workers, into which the search inserts every possible deviation."""

    name: str
    family: str
    setup: WorldSetup
    schedule: tuple[Action, ...]
    #: What the base is built to exercise, in words (reports and docs).
    about: str = ""


#: Every scripted base by name, in the order the default budget runs them.
BASES: dict[str, Base] = {
    b.name: b
    for b in (
        Base(
            "publisher-offsets",
            "publisher",
            TINY["publisher"],
            BASE["publisher"],
            "offsets: races, a stale write, a lost response, a cutover pending under monotone",
        ),
        Base(
            "publisher-millis",
            "publisher",
            _MILLIS_PUBLISHER,
            _MILLIS_PUBLISHER_BASE,
            "dense integers: both endpoint kinds at one coordinate, a manufactured successor, "
            "an epoch change between a lost write and its reread, the reset policy, a retry "
            "budget spent",
        ),
        Base(
            "publisher-crash",
            "publisher",
            TINY["publisher"],
            _CRASH_BASE,
            "a crash between two calls, then the restarted worker attempts again",
        ),
        Base(
            "publisher-keys",
            "publisher",
            _KEYS_PUBLISHER,
            _KEYS_PUBLISHER_BASE,
            "strings above U+FFFF: code point order, not UTF-16 order",
        ),
        Base(
            "checkpointer-millis",
            "checkpointer",
            TINY["checkpointer"],
            BASE["checkpointer"],
            "a dense order: a late checkpoint write after a newer one",
        ),
        Base(
            "checkpointer-keys",
            "checkpointer",
            _KEYS_CHECKPOINTER,
            _KEYS_CHECKPOINTER_BASE,
            "strings above U+FFFF: a late write reread against a newer checkpoint",
        ),
        Base(
            "composed-offsets",
            "composed",
            TINY["composed"],
            BASE["composed"],
            "readers and a publisher of the SUT together",
        ),
    )
}
#: Exhaustive seeds name a base by its index here (index 0: the algebra level's cases).
BASE_NAMES: tuple[str, ...] = ("algebra", *BASES)


def bases_of(families: Sequence[str]) -> list[str]:
    """The bases of ``families``, in :data:`BASES` order."""
    return [name for name, base in BASES.items() if base.family in families]


#: The calls whose answers an environment step can change: inserting the step
#: anywhere before the next such call gives the same answers to the SUT.
_READS_OF: dict[type, frozenset[str]] = {
    Advance: frozenset({"read_checkpoints"}),
    Inject: frozenset({"read_checkpoints"}),
    Finalize: frozenset({"fetch_page"}),
    Reshard: frozenset({"read_membership"}),
}

#: What each call reads and writes of the harness's state (for the reduction below).
_READS: dict[str, str] = {
    "read_publication": "record",
    "read_membership": "membership",
    "read_checkpoints": "checkpoints",
    "read_checkpoint": "checkpoints",
    "fetch_page": "source",
}
_WRITES: dict[str, str] = {
    "write_publication": "record",
    "write_checkpoint": "checkpoints",
    "record_outcome": "outcomes",
}
_ENV_WRITES: dict[type, frozenset[str]] = {
    Advance: frozenset({"checkpoints", "outcomes"}),
    Inject: frozenset({"checkpoints"}),
    Finalize: frozenset({"source"}),
    Reshard: frozenset({"membership"}),
}


@dataclass(frozen=True)
class Point:
    """The state of a run just before one step of its schedule: what may be inserted
    there, and which call each worker has pending."""

    possible: tuple[Action, ...]
    pending: dict[str, str | None]


def _writes(step: Action, pending: dict[str, str | None]) -> frozenset[str]:
    """The state ``step`` may change (a worker's answer changes what its call writes)."""
    if isinstance(step, Answer):
        op = pending.get(step.worker)
        written = _WRITES.get(op or "")
        return frozenset({written}) if written else frozenset()
    if isinstance(step, Publish | Ingest | Crash):
        return frozenset()
    return _ENV_WRITES.get(type(step), frozenset())


def _redundant_read(
    action: Answer, position: int, schedule: Sequence[Action], points: Sequence[Point]
) -> bool:
    """Answering a read early is redundant when nothing before that worker's next
    turn in the base writes what the read reads: the SUT gets the same answer
    either way, and every other worker's answers are unchanged (a read writes
    nothing). Only a normal answer to a read qualifies; lost responses and
    answers to writes change what happens next.
    """
    op = points[position].pending.get(action.worker)
    reads = _READS.get(op or "")
    if action.mode != "ok" or reads is None:
        return False
    # ``points`` ends where the base's run stopped (a violation, a crash of the SUT):
    # past it nothing is known, so nothing is redundant.
    for later in range(position, min(len(schedule), len(points))):
        step = schedule[later]
        if isinstance(step, Answer) and step.worker == action.worker:
            return True
        if isinstance(step, Crash) and step.worker == action.worker:
            return False  # the crash ends the request: answering first changes what it did
        if reads in _writes(step, points[later].pending):
            return False
    return False


def _commute(a: Action, b: Action) -> bool:
    """Environment step ``a`` placed before ``b`` changes nothing ``b`` would not.

    Steps on different partitions commute; a misconfiguration right before an
    honest reader's advance of the same partition is overwritten at once (a
    no-op); a reshard commutes with nothing (it changes which epoch the others
    act on).
    """
    if isinstance(a, Reshard) or isinstance(b, Reshard):
        return False
    if getattr(a, "partition", None) != getattr(b, "partition", None):
        return True
    if isinstance(a, Inject) and isinstance(b, Advance):
        return True
    return isinstance(a, Finalize) != isinstance(b, Finalize)


def point(run: Run) -> Point:
    """Where ``run`` is now (see :class:`Point`)."""
    pending = {w.name: (w.pending.op if w.pending else None) for w in run.workers.values()}
    return Point(tuple(run.enabled(FAULT_BUDGET, None)), pending)


def insertions(
    points: Sequence[Point], schedule: Sequence[Action], position: int, first_member: str | None
) -> list[Action]:
    """The steps the exhaustive search inserts before ``schedule[position]``.

    Every answer to a pending call in every mode (lost responses, page shapes,
    answering another worker first), except a normal answer to a read that is
    redundant (:func:`_redundant_read`). Environment steps only where they
    matter: right before a step that reads what they change (a checkpoint read
    for an advance or a misconfiguration, a page fetch for a finalization, a
    membership read or an ingest start for a reshard), before another
    environment step they do not commute with (:func:`_commute`), or at the end
    while calls are pending. Inserting them anywhere earlier gives the SUT the
    same answers; the only difference is that the harness's checks see more
    certified support and recorded outcomes earlier, which can hide a
    violation but never create one, so no violation is lost. Misconfigurations
    are inserted on the first member only (the members of the worlds of
    :data:`TINY` play interchangeable roles). New requests are not inserted:
    the bases start them.
    """
    here = points[position]
    following = schedule[position] if position < len(schedule) else None
    environment = (Advance, Finalize, Reshard, Inject)
    out: list[Action] = []
    for action in here.possible:
        if isinstance(action, Publish | Ingest) or action == following:
            continue
        if isinstance(action, Inject) and action.partition != first_member:
            continue
        if isinstance(action, Answer) and _redundant_read(action, position, schedule, points):
            continue
        if isinstance(action, environment):
            if following is None:
                relevant = any(op is not None for op in here.pending.values())
            elif isinstance(following, Answer):
                relevant = here.pending.get(following.worker) in _READS_OF[type(action)]
            elif isinstance(following, Ingest):
                relevant = isinstance(action, Reshard)
            elif isinstance(following, Publish):
                relevant = False
            else:
                relevant = not _commute(action, following)
            if not relevant:
                continue
        out.append(action)
    return out


def observe(
    factory: SutFactory, setup: WorldSetup, schedule: Sequence[Action], *, timeout: float
) -> tuple[RunResult, list[list[Action]]]:
    """Run ``schedule`` and list, before each of its steps and after the last, the
    steps the exhaustive search may insert there (see :func:`insertions`)."""
    points: list[Point] = []
    members: list[str] = []
    with Run(factory, setup, timeout=timeout) as run:
        run.start()
        members = run.world.members()
        for action in schedule:
            if run.stopped:
                break
            points.append(point(run))
            run.execute(action)
        if not run.stopped:
            points.append(point(run))
        run.drain()
    first_member = members[0] if members else None
    options = [insertions(points, schedule, i, first_member) for i in range(len(points))]
    options.extend([] for _ in range(len(schedule) + 1 - len(options)))
    return run.finish(), options


def exhaustive_schedule(
    factory: SutFactory, case: ExhaustiveCase, *, timeout: float
) -> tuple[WorldSetup, tuple[Action, ...]]:
    """The schedule of exhaustive ``case`` (each insertion needs the run before it)."""
    setup = BASES[case.base].setup
    schedule = list(BASES[case.base].schedule)
    for position, choice in case.insertions:
        _, options = observe(factory, setup, schedule, timeout=timeout)
        possible = options[position] if position < len(options) else []
        if choice >= len(possible):
            raise ValueError(
                f"seed names insertion {choice} of {len(possible)} possible at step {position}"
            )
        schedule.insert(position, possible[choice])
    return setup, tuple(schedule)


def exhaustive(
    factory: SutFactory, base: str, depth: int, *, timeout: float
) -> Iterator[tuple[ExhaustiveCase, RunResult]]:
    """Every schedule of ``base`` with up to ``depth`` inserted steps, each run once.

    Insertions are made at non-decreasing positions, so each combination is
    enumerated once. The search stops below a failing schedule.
    """
    setup = BASES[base].setup
    stack: list[tuple[ExhaustiveCase, tuple[Action, ...], int]] = [
        (ExhaustiveCase(base), BASES[base].schedule, 0)
    ]
    while stack:
        case, schedule, lowest = stack.pop()
        try:
            result, options = observe(factory, setup, schedule, timeout=timeout)
        except (HarnessError, KeyboardInterrupt):
            raise
        except Exception as exc:  # a bug of the harness, never a verdict on the SUT
            raise HarnessError(f"the exhaustive search of {base}", case.seed, exc) from exc
        yield case, result
        if len(case.insertions) >= depth or not result.ok:
            continue
        children = []
        for position in range(lowest, len(schedule) + 1):
            for choice, action in enumerate(options[position]):
                child = list(schedule)
                child.insert(position, action)
                children.append(
                    (
                        ExhaustiveCase(base, (*case.insertions, (position, choice))),
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
