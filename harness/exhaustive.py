"""The exhaustive search: every single deviation from a scripted base, at every point.

Depth *d* runs a base with every way of inserting *d* steps, each chosen among all
steps possible at that point, with two sound reductions (:func:`insertions`):
environment steps only where they change what a call reads, and no early answer
to a read nothing in between writes.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from fencepost.harness.bases import BASES
from fencepost.harness.results import RunResult
from fencepost.harness.rules import HarnessError
from fencepost.harness.runner import Run
from fencepost.harness.schedule import (
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
from fencepost.harness.seeds import FAULT_BUDGET, ExhaustiveCase
from fencepost.harness.transport import SutFactory
from fencepost.harness.world import (
    WorldSetup,
)

_READS_OF: dict[type, frozenset[str]] = {
    Advance: frozenset({"read_checkpoints"}),
    Inject: frozenset({"read_checkpoints", "read_checkpoint"}),
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
    factory: SutFactory,
    case: ExhaustiveCase,
    *,
    timeout: float,
    limits: tuple[int, int] | None = None,
) -> tuple[WorldSetup, tuple[Action, ...]]:
    """The schedule of exhaustive ``case`` (each insertion needs the run before it), in a
    world whose integers lie within ``limits`` (the SUT's declared range)."""
    base = BASES[case.base].within(limits)
    setup = base.setup
    schedule = list(base.schedule)
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
    factory: SutFactory,
    base: str,
    depth: int,
    *,
    timeout: float,
    limits: tuple[int, int] | None = None,
) -> Iterator[tuple[ExhaustiveCase, RunResult]]:
    """Every schedule of ``base`` with up to ``depth`` inserted steps, each run once, in a
    world whose integers lie within ``limits`` (the SUT's declared range).

    Insertions are made at non-decreasing positions, so each combination is
    enumerated once. The search stops below a failing schedule.
    """
    scripted = BASES[base].within(limits)
    setup = scripted.setup
    stack: list[tuple[ExhaustiveCase, tuple[Action, ...], int]] = [
        (ExhaustiveCase(base), scripted.schedule, 0)
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
