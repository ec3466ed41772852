"""When two states are the same: the canonical key, part of the model's meaning.

A checker deduplicates states by a key. Which states may share one is a claim
about the protocol, so it is stated here, beside the transitions and the
invariants it is sound for, and handed to checkers through
:mod:`fencepost.model.spec`:

* **Revision and generation numbers are abstracted.** A publisher's held
  revision matters only through equality with the record's current revision,
  and a reader's expected generation only through its gap to the stored
  generation (current, one write past it for a reader rereading after a lost
  response, or further): both only ever grow, so that gap is all a transition
  or an invariant can observe. The record's ``op_id`` and a publisher's attempt
  counter are write-only (no transition or invariant reads them) and are left
  out. States differing only there are bisimilar.
* **Symmetry.** Partitions are interchangeable as wholes (ground truth,
  checkpoints per epoch, peaks and their readers, readers interchangeable among
  themselves) and so are publishers. This is sound because no invariant
  (:mod:`fencepost.model.invariants`) or situation
  (:mod:`fencepost.model.sometimes`) names a particular partition, reader or
  publisher: each quantifies over all of them; the transitions are the same for
  every partition, reader and publisher (a reshard chooses its target among all
  partitions; a reader's moves are any other reader's of that partition with its
  name changed, :func:`~fencepost.model.machine.reader_renamed`); and nothing
  outside a partition's tuple refers to it by position, nor anything outside a
  publisher's tuple to it (op_id is left out). Permuting them maps reachable
  states to reachable states and violations to violations, so one
  representative per orbit suffices.

The key is built from parts, each a function of what it reads, so that a checker
can intern the parts and compute a successor's key from its parent's without
building the successor: :func:`head_of` (the membership epoch, the record less
its numbering, the history), :func:`core_key` (a partition less its readers and
generations), :func:`reader_key` (a reader with its generation gap, read from
its partition's core) and :func:`publisher_key` (a publisher with "the revision
I read is current", read from the record). :func:`canonical_key` is the key
these make, sorted under symmetry; two states get equal keys exactly when their
parts are equal as multisets.

Cost: O(partitions + readers + publishers) tuple work per key.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

from fencepost.model.cuts import Cut
from fencepost.model.publishers import history_after
from fencepost.model.state import (
    CONFIRMED,
    PUBLISHED,
    PUBLISHER_LOCAL,
    READER_EXPECTED,
    REREADING,
    Context,
    Core,
    History,
    Partition,
    Publisher,
    Reader,
    Record,
    State,
    core_of,
)

#: What a state's key holds besides its partitions and publishers: the membership
#: epoch, the record's epoch and cut (its revision and op id abstracted), the history.
Head = tuple[int, int, Cut, History]

_CLAIMS = (PUBLISHED, CONFIRMED)


def head_of(state: State) -> Head:
    """The head of ``state``'s key."""
    rec = state.record
    return (state.epoch, rec.epoch, rec.cut, state.history)


def head_resharded(head: Head) -> Head:
    """The head once the membership moves to the next epoch (the record untouched)."""
    epoch, rec_epoch, rec_cut, history = head
    return (epoch + 1, rec_epoch, rec_cut, history)


def head_written(ctx: Context, head: Head, record: Record) -> Head:
    """The head once the store applies a publication write leaving ``record``."""
    epoch, _, _, history = head
    return (epoch, record.epoch, record.cut, history_after(ctx, history, record.epoch, record.cut))


def _generation_gap(reader: Reader, generations: tuple[int, ...]) -> int:
    """How the stored generation stands to the one a reader expects, as far as it can matter.

    0: the expected one is current; 1: one write past it (only kept for a reader
    rereading after a lost response, which compares the stored checkpoint with
    the one it wrote); 2: anything else (idle, or moved on).
    """
    if reader.epoch == 0:
        return 2
    gap = generations[reader.epoch - 1] - reader.expected
    if gap == 0:
        return 0
    return 1 if gap == 1 and reader.phase == REREADING else 2


def core_key(core: Core) -> tuple[Any, ...]:
    """A partition's core less its generation numbers (ground truth, checkpoints, peaks)."""
    truth, checkpoints, _, peaks = core
    return (truth, checkpoints, peaks)


def reader_key(reader: Reader, core: Core) -> tuple[Any, ...]:
    """A reader less its expected generation, with its gap to the one ``core`` stores."""
    return (*reader[:READER_EXPECTED], _generation_gap(reader, core[2]))


def publisher_key(pub: Publisher, record: Record) -> tuple[Any, ...]:
    """A publisher less its revision number (kept: "the one I read is current"), op ids and,
    when idle, its last report (kept: whether a published/confirmed report was justified)."""
    if pub.phase:
        return (*pub[:PUBLISHER_LOCAL], pub.rec_revision == record.revision)
    honest = pub.justified or pub.outcome not in _CLAIMS
    return (0, pub.attempts_left, pub.orphan_epoch, pub.orphan_cut, honest)


def partition_key(part: Partition, symmetry: bool = True) -> tuple[Any, ...]:
    """A partition's key: its core's, then its readers' (sorted under symmetry)."""
    core = core_of(part)
    readers = [reader_key(r, core) for r in part.readers]
    if symmetry:
        readers.sort()
    return (core_key(core), *readers)


def canonical_key(state: State, symmetry: bool = True) -> Hashable:
    """The key identifying ``state`` up to bisimilar numbering and (optionally) symmetry."""
    rec = state.record
    parts = [partition_key(part, symmetry) for part in state.partitions]
    pubs = [publisher_key(p, rec) for p in state.publishers]
    if symmetry:
        parts.sort()
        pubs.sort()
    return (head_of(state), tuple(parts), tuple(pubs))
