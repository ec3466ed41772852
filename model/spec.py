"""The model as a checker is handed it: pure functions, and nothing else.

:data:`SPEC` is the whole of what :mod:`fencepost.explorer` (the checker) knows of
the model, as stateright's checkers know a ``Model`` (``init_states``,
``actions``, ``next_state``, ``properties``) and porcupine's a model of ``Init``
and ``Step``. The checker imports this module alone from the model, and no
private name of it (``tests/test_layout.py`` checks both); the model imports
nothing of the checker. So the spec can be read without the checker, and a
checker can be written without reading the transitions.

Two layers:

* :class:`Spec`: the model itself. :attr:`~Spec.initial` state, the enabled
  actions with their next states (:attr:`~Spec.successors`, stateright's
  ``next_steps``: ``actions`` and ``next_state`` in one, in a stable order; a
  move is named by its position there), the *always* properties
  (:attr:`~Spec.invariants`, each naming the state fields it reads), the
  *sometimes* properties a configuration must reach (:attr:`~Spec.sometimes`),
  which states are the same (:attr:`~Spec.canonical_key`, symmetry included:
  part of the spec's meaning, argued sound in :mod:`fencepost.model.canonical`),
  and a state in domain words (:attr:`~Spec.describe`, :attr:`~Spec.label`).
  Any breadth-first search over these checks the model.
* :class:`Factored`: the same transition relation split by what each move
  reads, which is what a fast checker needs (docs/performance.md, Explorer). A
  state is a *head* (membership epoch, the record, the history), partitions
  (each a *core* and its readers) and publishers; every move replaces a few of
  these parts and reads a few. Each function is pure in its arguments, so a
  checker may memoize it on them (by ids of its own), and compute a successor's
  key from its parent's parts without building the successor. Nothing here
  adds a transition: ``tests/model/test_explore_speed.py`` checks that these
  moves, composed in this order, are :attr:`Spec.successors`, and that each
  changes only the fields it declares.

Adding an invariant or a sometimes property changes nothing here
(docs/model.md, "Model and checker").
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any

from fencepost.model.canonical import (
    Head,
    canonical_key,
    core_key,
    head_of,
    head_resharded,
    head_written,
    publisher_key,
    reader_key,
)
from fencepost.model.config import ModelConfig
from fencepost.model.cuts import Cut
from fencepost.model.invariants import INVARIANTS, Invariant
from fencepost.model.machine import (
    environment_moves,
    initial,
    membership_moves,
    partition_of,
    reader_moves,
    reader_renamed,
    reshard_into,
    resharded,
    successors,
)
from fencepost.model.merge import merge_cores
from fencepost.model.publishers import (
    READS_EPOCH,
    READS_MERGE,
    READS_RECORD,
    Write,
    published,
    publisher_reads,
    publisher_step,
    record_written,
    write_dropped,
)
from fencepost.model.render import node_label, summarize
from fencepost.model.sometimes import Sometimes, applicable
from fencepost.model.state import (
    Action,
    Context,
    Core,
    Partition,
    Publisher,
    Reader,
    Record,
    State,
    core_of,
)
from fencepost.model.updates import with_partition

__all__ = [
    "READS_EPOCH",
    "READS_MERGE",
    "READS_RECORD",
    "SPEC",
    "Action",
    "Context",
    "Core",
    "Factored",
    "Head",
    "Invariant",
    "ModelConfig",
    "Partition",
    "Publisher",
    "Reader",
    "Record",
    "Sometimes",
    "Spec",
    "State",
    "Write",
]


@dataclass(frozen=True, slots=True)
class Factored:
    """The transition relation split by what each move reads (see the module docstring).

    ``ctx`` is ``state.context`` (the configuration compiled; fixed per
    exploration), ``e`` the state's membership epoch, ``i`` a partition's index,
    ``j`` a reader's, ``k`` a publisher's. In :attr:`Spec.successors` order, the
    moves of a state are: per partition, :attr:`environment_moves` then each
    reader's :attr:`reader_moves`; then :attr:`membership_moves` and each
    partition's :attr:`reshard_into`; then each publisher's
    :attr:`publisher_step`.
    """

    # -- the parts of a state, and back ------------------------------------------
    #: A partition less its readers (its ground truth, checkpoints, generations, peaks).
    core_of: Callable[[Partition], Core]
    #: The partition made of a core and readers.
    partition_of: Callable[[Core, tuple[Reader, ...]], Partition]
    #: The head of a state's key: membership epoch, record less its numbering, history.
    head_of: Callable[[State], Head]

    # -- what the key keeps of each part (canonical_key is made of these) --------
    #: A core less its generation numbers.
    core_key: Callable[[Core], Hashable]
    #: A reader with its gap to the generation its partition's core stores.
    reader_key: Callable[[Reader, Core], Hashable]
    #: A publisher with whether the revision it read is the record's.
    publisher_key: Callable[[Publisher, Record], Hashable]

    # -- moves ---------------------------------------------------------------------
    #: ``(ctx, i, e, partition)`` -> ``[(action, core after)]``: the environment on
    #: partition ``i``; reads its core only. Its readers are left alone.
    environment_moves: Callable[[Context, int, int, Partition], list[tuple[Action, Core]]]
    #: ``(ctx, i, j, e, partition)`` -> ``[(action, core after, reader after)]``: reader
    #: ``j`` of partition ``i``; reads the core and that reader only.
    reader_moves: Callable[[Context, int, int, int, Partition], list[tuple[Action, Core, Reader]]]
    #: ``(ctx, action, i, j)``: another reader's action of partition ``i`` taken by reader
    #: ``j`` (readers of a partition are interchangeable: same core and reader state, same
    #: moves, renamed).
    reader_renamed: Callable[[Context, Action, int, int], Action]
    #: ``(ctx, e)`` -> the moves to the next epoch that change no partition.
    membership_moves: Callable[[Context, int], list[Action]]
    #: ``(ctx, e, i, partition)`` -> ``[(action, partition after)]``: the moves to the next
    #: epoch moving events into partition ``i``; reads its core only.
    reshard_into: Callable[[Context, int, int, Partition], list[tuple[Action, Partition]]]
    #: A publisher -> ``(what its next step reads, epoch)``: :data:`READS_RECORD` (itself
    #: and the record only), :data:`READS_EPOCH` (and the membership epoch) or
    #: :data:`READS_MERGE` (and :attr:`merge_cores` of that epoch).
    publisher_reads: Callable[[Publisher], tuple[int, int]]
    #: ``(ctx, epoch, cores)`` -> the merge of that epoch's checkpoints, ``(reason, cut)``.
    merge_cores: Callable[[Context, int, Sequence[Core]], tuple[str, Cut]]
    #: ``(ctx, k, publisher, record, seen)`` -> ``[(action, publisher after, write)]``:
    #: publisher ``k``'s steps, ``seen`` what :attr:`publisher_reads` names (0, the
    #: membership epoch, or the merge). ``write`` (opaque; ``None``: the record is left
    #: alone) is what the store applies first.
    publisher_step: Callable[
        [Context, int, Publisher, Record, object], list[tuple[Action, Publisher, Any]]
    ]
    #: ``(record, write)`` -> the record once the store applies the write.
    record_written: Callable[[Record, Any], Record]
    #: Another publisher once a write is applied (a write of its still in flight dropped).
    write_dropped: Callable[[Publisher], Publisher]
    #: The head once the membership moves to the next epoch.
    head_resharded: Callable[[Head], Head]
    #: ``(ctx, head, record after)`` -> the head once a write leaves that record.
    head_written: Callable[[Context, Head, Record], Head]

    # -- successors built -------------------------------------------------------------
    #: ``(state, i, partition)``: after a local move (environment or reader).
    with_partition: Callable[[State, int, Partition], State]
    #: ``(state, i, partition or None)``: after a move to the next epoch (``i`` -1 and
    #: ``None`` for a membership move).
    resharded: Callable[[State, int, Partition | None], State]
    #: ``(state, k, publisher, write)``: after publisher ``k``'s step.
    published: Callable[[State, int, Publisher, Any], State]

    # -- which state fields each kind of move changes (the rest are its parent's) -----
    #: Of ``epoch``, ``partitions``, ``record``, ``publishers``, ``history``: the vocabulary
    #: of :attr:`Invariant.reads`. A checker need not re-check an invariant reading none.
    local_changes: frozenset[str]
    reshard_changes: frozenset[str]
    publisher_changes: frozenset[str]
    write_changes: frozenset[str]


@dataclass(frozen=True, slots=True)
class Spec:
    """The model as pure functions (see the module docstring)."""

    #: The initial state of a configuration (one: the bounds fix it).
    initial: Callable[[ModelConfig], State]
    #: Every enabled ``(action, next state)``, in a stable order.
    successors: Callable[[State], list[tuple[Action, State]]]
    #: The always properties, in the order a counterexample names them.
    invariants: tuple[Invariant, ...]
    #: The sometimes properties an exploration of a configuration must reach.
    sometimes: Callable[[ModelConfig], list[Sometimes]]
    #: ``(state, symmetry)`` -> its key: equal exactly for states a checker may merge.
    canonical_key: Callable[[State, bool], Hashable]
    #: A state in domain words, line by line.
    describe: Callable[[State], list[str]]
    #: A state in a few words, for a node of a drawn graph.
    label: Callable[[State], str]
    #: The transition relation split by what each move reads.
    factored: Factored


SPEC = Spec(
    initial=initial,
    successors=successors,
    invariants=INVARIANTS,
    sometimes=applicable,
    canonical_key=canonical_key,
    describe=summarize,
    label=node_label,
    factored=Factored(
        core_of=core_of,
        partition_of=partition_of,
        head_of=head_of,
        core_key=core_key,
        reader_key=reader_key,
        publisher_key=publisher_key,
        environment_moves=environment_moves,
        reader_moves=reader_moves,
        reader_renamed=reader_renamed,
        membership_moves=membership_moves,
        reshard_into=reshard_into,
        publisher_reads=publisher_reads,
        merge_cores=merge_cores,
        publisher_step=publisher_step,
        record_written=record_written,
        write_dropped=write_dropped,
        head_resharded=head_resharded,
        head_written=head_written,
        with_partition=with_partition,
        resharded=resharded,
        published=published,
        local_changes=frozenset({"partitions"}),
        reshard_changes=frozenset({"partitions", "epoch"}),
        publisher_changes=frozenset({"publishers"}),
        write_changes=frozenset({"record", "publishers", "history"}),
    ),
)
