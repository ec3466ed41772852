"""The late-commit world's options, its scripted stories, and its random worlds.

- :class:`LateOptions`: the world (cursor type, the bound D, a certified
  horizon) and the search's budget, as ``fencepost conform --world
  late-commits`` takes them;
- :data:`STORIES`: the scripted bases the exhaustive search starts from, each a
  small world and schedule built to exercise one way incremental-sync tools
  lose rows; story times are in story seconds (D/10 each), so every story keeps
  its shape, and its bound, under any declared D;
- :func:`random_setup`: a random world within the declared bound.

Every world built here is a :class:`~fencepost.harness.late_world.LateSetup`,
which cannot break the bound. Cost: O(rows) per world.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from fencepost.harness.late_world import (
    MAIN,
    TIMESTAMP_ORIGIN,
    Answer,
    Crash,
    Finish,
    LateAction,
    LateSetup,
    PartitionSpec,
    RowSpec,
    Sync,
    TickTo,
    Upto,
)
from fencepost.harness.worlds import (
    CURSORS,
    DEFAULT_MAX_COMMIT_DELAY,
    DEFAULT_PARTITIONS,
    DEFAULT_READS,
    WIRE_UNITS,
)


@dataclass(frozen=True)
class LateOptions:
    """The world and the budget of one late-commit run (``fencepost conform`` options)."""

    cursor: str = "timestamp"
    #: The bound D in the cursor's units (seconds for timestamps).
    max_commit_delay: int = DEFAULT_MAX_COMMIT_DELAY
    horizon: bool = False
    #: ``live`` (each page read when asked) or ``snapshot`` (a query's pages from one snapshot).
    reads: str = DEFAULT_READS
    #: ``appearing``, ``fixed`` or ``one`` (``fencepost.harness.worlds.PARTITIONINGS``).
    partitions: str = DEFAULT_PARTITIONS
    seed: int = 0
    schedules: int = 10
    timeout: float = 10.0
    #: The stories to run exhaustively, by name (None: every story that fits the world).
    stories: tuple[str, ...] | None = None
    depth: int = 1
    shrink_runs: int = 120
    shrink_seconds: float = 60.0
    fail_fast: bool = False
    reuse: bool = True
    #: With ``reuse``: a simulated crash drains and resets the process instead of killing it.
    recycle: bool = True

    @property
    def wire_delay(self) -> int:
        """D on the wire (milliseconds for timestamps)."""
        return self.max_commit_delay * WIRE_UNITS[self.cursor]

    @property
    def origin(self) -> int:
        return TIMESTAMP_ORIGIN if self.cursor == "timestamp" else 0

    def flags(self) -> str:
        """The options that name this world on the command line (for replay hints)."""
        out = ["--world late-commits"]
        if self.cursor != "timestamp":
            out.append(f"--cursor {self.cursor}")
        if self.max_commit_delay != DEFAULT_MAX_COMMIT_DELAY:
            out.append(f"--max-commit-delay {self.max_commit_delay}")
        if self.horizon:
            out.append("--horizon")
        if self.reads != DEFAULT_READS:
            out.append(f"--reads {self.reads}")
        if self.partitions != DEFAULT_PARTITIONS:
            out.append(f"--partitions {self.partitions}")
        return " ".join(out)


# --- the scripted stories ---------------------------------------------------------------------


@dataclass(frozen=True)
class Story:
    """A scripted base: a small world and a schedule, in story seconds (D is 10 of them).

    Times scale with the declared D (a story second is D/10), so every story
    keeps its shape, and its bound, under any ``--max-commit-delay``.
    """

    name: str
    says: str
    rows: tuple[tuple[str, str, float, float], ...]
    schedule: tuple[LateAction | float, ...]
    page_size: int = 2
    partitions: tuple[tuple[str, float], ...] = ((MAIN, 0.0),)

    @property
    def partitioned(self) -> bool:
        return self.partitions != ((MAIN, 0.0),)

    def fits(self, options: LateOptions) -> bool:
        """Whether the story exists in the world ``options`` names: a story of several
        partitions does not under ``--partitions one``."""
        return not (self.partitioned and options.partitions == "one")

    def build(self, options: LateOptions) -> tuple[LateSetup, tuple[LateAction, ...]]:
        """The story's world and schedule under ``options`` (a float in the schedule is a
        :class:`TickTo` of that story time)."""
        unit = options.wire_delay / 10
        origin = options.origin
        d = options.wire_delay

        def at(x: float) -> int:
            return origin + round(x * unit)

        if not self.fits(options):
            raise ValueError(f"story {self.name} needs several partitions")
        rows = []
        for row_id, partition, value, commit in self.rows:
            a = at(value)
            rows.append(RowSpec(row_id, partition, a, min(max(at(commit), a), a + d)))
        fixed = options.partitions == "fixed"
        setup = LateSetup(
            cursor_type=options.cursor,
            max_commit_delay=d,
            horizon=options.horizon,
            partitioned=self.partitioned,
            page_size=self.page_size,
            partitions=tuple(
                PartitionSpec(n, origin if fixed else at(t)) for n, t in self.partitions
            ),
            rows=tuple(rows),
            origin=origin,
            reads=options.reads,
        )
        schedule = tuple(TickTo(at(s)) if isinstance(s, float) else s for s in self.schedule)
        return setup, schedule


#: The scripted stories, in the order they run: the one home of this set.
STORIES: tuple[Story, ...] = (
    Story(
        "late-behind-greatest",
        "a row commits late behind the greatest value a sync read",
        (
            ("r05", MAIN, 5.0, 5.5),
            ("r12", MAIN, 12.25, 13.0),
            ("r24", MAIN, 24.412, 32.0),
            ("r30", MAIN, 30.0, 30.2),
            ("r31", MAIN, 31.5, 31.6),
        ),
        (30.5, Sync(), Finish(), 45.0, Sync(), Finish()),
    ),
    Story(
        "shared-value-page",
        "several rows share one cursor value, split across a page; one more commits late",
        (
            ("r10a", MAIN, 10.0, 10.2),
            ("r10b", MAIN, 10.0, 10.2),
            ("r10c", MAIN, 10.0, 10.2),
            ("r11", MAIN, 11.3, 11.5),
            ("r24a", MAIN, 24.0, 24.1),
            ("r24b", MAIN, 24.0, 26.0),
            ("r35", MAIN, 35.0, 35.2),
        ),
        (25.0, Sync(), Finish(), 40.0, Sync(), Finish()),
    ),
    Story(
        "between-seconds",
        "rows stored between two whole seconds at the end of a sync's range",
        (
            ("r03", MAIN, 3.0, 3.1),
            ("r14", MAIN, 14.6, 15.2),
            ("r19", MAIN, 19.999, 20.5),
            ("r25", MAIN, 25.0, 25.1),
            ("r29", MAIN, 29.45, 31.0),
        ),
        (25.3, Sync(), Finish(), 40.7, Sync(), Finish()),
    ),
    Story(
        "partition-appears",
        "a partition appears mid-run holding rows older than anything read elsewhere",
        (
            ("r05", MAIN, 5.0, 5.1),
            ("r15", MAIN, 15.5, 16.0),
            ("r25", MAIN, 25.0, 25.2),
            ("r38", MAIN, 38.0, 38.5),
            ("e02", "eu", 2.5, 3.0),
            ("e08", "eu", 8.0, 9.0),
        ),
        (26.0, Sync(), Finish(), 30.0, Sync(), Finish(), 45.0, Sync(), Finish()),
        partitions=((MAIN, 0.0), ("eu", 28.0)),
    ),
    Story(
        "crash-between-commits",
        "the tool crashes between its first and its second commit of a sync",
        (
            ("r02", MAIN, 2.0, 2.2),
            ("r07", MAIN, 7.5, 7.7),
            ("r13", MAIN, 13.0, 13.1),
            ("r26", MAIN, 26.0, 26.3),
        ),
        (27.0, Sync(), Upto("commit", 2), Crash(), 30.0, Sync(), Finish()),
    ),
    Story(
        "lost-commit",
        "a commit's response is lost, once applied and once not",
        (
            ("r04", MAIN, 4.0, 4.3),
            ("r09", MAIN, 9.2, 9.9),
            ("r18", MAIN, 18.0, 18.4),
            ("r27", MAIN, 27.1, 27.3),
        ),
        (
            28.0,
            Sync(),
            Upto("commit", 1),
            Answer("applied_lost"),
            Finish(),
            31.0,
            Sync(),
            Upto("commit", 1),
            Answer("lost"),
            Finish(),
            45.0,
            Sync(),
            Finish(),
        ),
    ),
    Story(
        "behind-a-page",
        "a row commits late behind a page already read, while the sync goes on to newer rows",
        (
            ("r10", MAIN, 10.0, 10.1),
            ("r15", MAIN, 15.7, 21.0),
            ("r16", MAIN, 16.0, 16.2),
            ("r18", MAIN, 18.0, 18.3),
            ("r27", MAIN, 27.0, 27.1),
        ),
        (20.0, Sync(), Upto("query", 2), 28.0, Finish(), 40.0, Sync(), Finish()),
    ),
    Story(
        "window-edges",
        "a sync starts between two whole seconds: one row sits exactly on the whole second "
        "below now - D, another just above now - D commits after the sync started",
        (
            ("r05", MAIN, 5.0, 5.2),
            ("r20", MAIN, 20.0, 20.1),
            ("r20h", MAIN, 20.6, 30.5),
            ("r27", MAIN, 27.0, 27.3),
        ),
        (30.4, Sync(), Finish(), 45.0, Sync(), Finish()),
    ),
)

STORY_NAMES: tuple[str, ...] = tuple(s.name for s in STORIES)


# --- random worlds ---------------------------------------------------------------------------

_PARTITION_NAMES = (MAIN, "eu", "apac")


def random_setup(rng: random.Random, options: LateOptions) -> LateSetup:
    """A random world within the declared bound (see the module docstring)."""
    d = options.wire_delay
    g = CURSORS[options.cursor]
    origin = options.origin
    span = max(rng.choice((3, 4, 6)) * d, 8 * g)
    count = rng.choice((1, 1, 2, 3))
    partitioned = count > 1 or rng.random() < 0.3
    if options.partitions == "one":
        count, partitioned = 1, False
    names = _PARTITION_NAMES[:count] if partitioned else (MAIN,)
    appears = {names[0]: origin}
    for name in names[1:]:
        later = origin + round(rng.uniform(0.3, 0.9) * span)
        early = rng.random() < 0.4 or options.partitions == "fixed"
        appears[name] = origin if early else later
    rows: list[RowSpec] = []
    for n in range(rng.randint(4, 10)):
        partition = rng.choice(names)
        start = appears[partition]
        if start > origin and rng.random() < 0.6:
            at = origin + rng.randint(0, max(0, start - origin - d))
        else:
            at = origin + rng.randint(0, span)
        same = [r for r in rows if r.partition == partition]
        if same and rng.random() < 0.25:
            at = rng.choice(same).at
        elif rng.random() < 0.35:
            at -= (at - origin) % g
        luck = rng.random()
        if luck < 0.4:
            delay = rng.randint(0, max(0, min(d, g // 4)))
        elif luck < 0.7:
            delay = rng.randint(0, d // 2)
        else:
            delay = rng.randint(d // 2, d)
        rows.append(RowSpec(f"r{n + 1}", partition, at, at + delay))
    return LateSetup(
        cursor_type=options.cursor,
        max_commit_delay=d,
        horizon=options.horizon,
        partitioned=partitioned,
        page_size=rng.randint(1, 3),
        partitions=tuple(PartitionSpec(n, appears[n]) for n in names),
        rows=tuple(rows),
        origin=origin,
        reads=options.reads,
    )


def selected_stories(options: LateOptions) -> tuple[int, ...]:
    """The indices of the stories the search runs under ``options``: those named by
    ``stories`` (every one by default) that exist in its world (:meth:`Story.fits`)."""
    wanted = STORY_NAMES if options.stories is None else options.stories
    return tuple(i for i, s in enumerate(STORIES) if s.name in wanted and s.fits(options))


#: The default options: the world and budget ``fencepost conform --world late-commits`` runs.
DEFAULT_OPTIONS = LateOptions()
