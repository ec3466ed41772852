"""Building successor states: direct constructors of the frozen state (``_replace`` is slow).

Each helper replaces one partition, one publisher or one stored checkpoint and
shares everything else with its parent: O(partitions + publishers) per successor.
"""

from __future__ import annotations

from fencepost.model.cuts import rank
from fencepost.model.state import (
    Action,
    Checkpoint,
    Partition,
    Publisher,
    State,
    Truth,
)

Successors = list[tuple[Action, State]]


def _with_partition(state: State, i: int, part: Partition, epoch: int = 0) -> State:
    parts = state.partitions
    return State(
        state.context,
        epoch or state.epoch,
        (*parts[:i], part, *parts[i + 1 :]),
        state.record,
        state.publishers,
        state.history,
    )


def with_partition(state: State, i: int, part: Partition) -> State:
    """``state`` after a step of :func:`local_moves`: partition ``i`` is ``part``."""
    return _with_partition(state, i, part)


def _with_publisher(state: State, k: int, pub: Publisher) -> State:
    pubs = state.publishers
    return State(
        state.context,
        state.epoch,
        state.partitions,
        state.record,
        (*pubs[:k], pub, *pubs[k + 1 :]),
        state.history,
    )


def _store_checkpoint(
    part: Partition, truth: Truth, epoch: int, cp: Checkpoint, generation: int, successor: bool
) -> Partition:
    """The store writes ``cp`` as generation ``generation`` of (partition, epoch).

    It also keeps the observer's peak (the highest cut ever stored there).
    """
    e = epoch - 1
    peaks = part.peaks
    if rank(cp.cut, successor) > rank(peaks[e], successor):
        peaks = (*peaks[:e], cp.cut, *peaks[e + 1 :])
    cps = part.checkpoints
    gens = part.generations
    return Partition(
        truth,
        (*cps[:e], cp, *cps[e + 1 :]),
        (*gens[:e], generation, *gens[e + 1 :]),
        peaks,
        part.readers,
    )


#: A partition's steps: the action and the partition after it.
LocalMoves = list[tuple[Action, Partition]]
