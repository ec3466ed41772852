"""The scripted bases of the exhaustive search: small worlds, and schedules racing their workers.

Each :class:`Base` is built to reach situations where implementations go wrong
(docs/conformance.md, "How the search works"); the exhaustive search
(:mod:`fencepost.harness.exhaustive`) inserts every possible deviation into it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

from fencepost.harness.algebra import KEYS, MILLIS, OFFSETS
from fencepost.harness.schedule import (
    LOST_UNTIL_END,
    Action,
    Advance,
    Answer,
    Certify,
    Crash,
    Finalize,
    Ingest,
    Inject,
    Publish,
    Reshard,
)
from fencepost.harness.world import (
    ClaimStyle,
    EpochSetup,
    EventSpec,
    PartitionSetup,
    WorldSetup,
)
from fencepost.judge.values import NOTHING, Cut

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
    # Persistent loss: every call of the attempt loses its response until it gives up
    # (a program that never does is a runaway).
    Answer("w1", LOST_UNTIL_END),
)

#: Both endpoint kinds at one coordinate in either partition order, and every withheld
#: reason in the documented order (docs/semantics.md section 4). First both members
#: store a progress token with no coverage (``no_coverage``). Dense integers: A's one
#: event at 5, B's two events at 5, in both epochs. A certifies ``through 5`` and B only
#: ``before 5`` (one of its events at 5 has no outcome yet): the merge is ``before 5``,
#: whichever member comes first (a minimum that keeps the endpoint kind it met first
#: publishes ``through 5``). After the reshard, A's old checkpoint is misfiled into
#: epoch 2 while B's is of another scope: two reasons at once, and ``epoch_mismatch``
#: comes first. Then a provisional checkpoint, then a missing one beside a wrong scope
#: (``missing_checkpoint`` comes first), then the cutover once both members certify,
#: with a retired partition's checkpoint in the vector (it must not pin the frontier).
_REASONS_PUBLISHER = WorldSetup(
    order=MILLIS,
    epochs=(
        EpochSetup(
            1, (PartitionSetup("A", _events("A", 5)), PartitionSetup("B", _events("B", 5, 5)))
        ),
        EpochSetup(
            2, (PartitionSetup("A", _events("A", 5)), PartitionSetup("B", _events("B", 5, 5)))
        ),
    ),
    publishers=("w1", "w2"),
    env_checkpoints=True,
)

_REASONS_PUBLISHER_BASE: tuple[Action, ...] = (
    Certify("A", NOTHING),  # progress tokens, no coverage yet
    Certify("B", NOTHING),
    Publish("w2"),
    *_answers("w2", 3),  # withheld no_coverage
    Certify("A", Cut.through(5)),
    Certify("B", Cut.before(5)),
    Publish("w1"),
    *_answers("w1", 4),  # w1 publishes before 5, not through 5
    Reshard(),
    Inject("A", "wrong_epoch"),  # A's epoch 1 checkpoint read as epoch 2's
    Inject("B", "wrong_scope"),
    Publish("w2"),
    *_answers("w2", 3),  # withheld epoch_mismatch (checked before scope_mismatch)
    Certify("B", Cut.before(5)),
    Inject("A", "provisional"),
    Publish("w1"),
    *_answers("w1", 3),  # withheld unsupported_finality
    Inject("B", "wrong_scope"),
    Inject("A", "missing"),
    Publish("w2"),
    *_answers("w2", 3),  # withheld missing_checkpoint (checked before scope_mismatch)
    Certify("A", Cut.through(5)),
    Certify("B", Cut.through(5)),
    Inject("A", "non_member"),  # a retired partition's checkpoint of epoch 2, no coverage
    Publish("w1"),
    *_answers("w1", 4),  # the cutover: (epoch 2, through 5) is ahead of before 5
)

#: Integers no 64-bit or floating-point number holds (docs/conformance-protocol.md,
#: "Values": integers of any size). Dense integers, so neighbouring coordinates are
#: different claims: A's events at N = 2^53, N+5 and 2^63+1; B's two events at N+1 and
#: one at 10^40. As JavaScript numbers N and N+1 are one value, so ``through N`` and
#: ``before N+1`` (B's first certified cut: one of its two events at N+1 is not done)
#: compare as ``through x`` against ``before x``, and the minimum comes out as the
#: claim nobody certified; 2^63+1 and 10^40 do not fit a 64-bit integer at all. A SUT
#: that declares a range (``hello_ok.integers``) gets this world moved inside it
#: (:meth:`Base.within`).
_WIDE = 2**53
_WIDE_PUBLISHER = WorldSetup(
    order=MILLIS,
    epochs=(
        EpochSetup(
            1,
            (
                PartitionSetup("A", _events("A", _WIDE, _WIDE + 5, 2**63 + 1)),
                PartitionSetup("B", _events("B", _WIDE + 1, _WIDE + 1, 10**40)),
            ),
        ),
    ),
    publishers=("w1", "w2"),
    env_checkpoints=True,
)

_WIDE_PUBLISHER_BASE: tuple[Action, ...] = (
    Advance("A"),  # A through 2^53
    Advance("B"),  # B before 2^53+1
    Publish("w1"),
    *_answers("w1", 4),  # w1 publishes through 2^53, the smaller of the two
    Advance("A"),  # A through 2^53+5
    Advance("B"),  # B through 2^53+1
    Publish("w2"),
    *_answers("w2", 4),  # w2 publishes through 2^53+1
    Advance("A"),  # A through 2^63+1
    Advance("B"),  # B through 10^40
    Publish("w1"),
    *_answers("w1", 4),  # w1 publishes through 2^63+1
)

#: The checkpointer with a retry budget spent: every response of r1's pass after its
#: records is lost (its write, its rereads) until the pass ends. An honest
#: pass ends reporting what the store was last seen to hold, never the cut it failed
#: to write.
_BUDGET_CHECKPOINTER = WorldSetup(
    order=OFFSETS,
    epochs=(EpochSetup(1, (PartitionSetup("A", _events("A", 1, 2)),)),),
    readers=("r1", "r2"),
    page_size=2,
)

_BUDGET_CHECKPOINTER_BASE: tuple[Action, ...] = (
    Ingest("r1", "A"),
    *_answers("r1", 4),  # r1 read nothing, fetched [A1, A2], recorded both; write pending
    Answer("r1", LOST_UNTIL_END),
    Ingest("r2", "A"),
    *_answers("r2", 5),  # r2 certifies through 2 after r1 gave up
)

#: The epoch fence after a lost write, a spent retry budget after a write, and coordinate
#: 0 (the first offset of a Kafka partition). Offsets: A's events at 0, 2 and 4, B's at 0,
#: 1 and 3 in both epochs. Both members certify ``through 0`` (a reader that takes 0 for
#: "no coverage" publishes nothing, or withholds). Then A certifies ``through 2`` and B
#: ``before 3``, the successor edge (one claim on offsets). w1's write of ``through 2`` is
#: lost, not applied; the membership moves to epoch 2 and w2 cuts the record over to it
#: (at ``through 3``, past w1's proposal) before w1 rereads: w1 must apply the cutover
#: rule, never write its epoch 1 claim over the record's epoch 2, and never report
#: ``confirmed`` from a record of another epoch, however far it is. Last, w2 reads,
#: proposes and writes, the write is lost, and so is every reread after it, until it
#: gives up: it reports a record it was shown (or none), never its proposal.
_FENCE_PUBLISHER = WorldSetup(
    order=OFFSETS,
    epochs=(
        EpochSetup(
            1,
            (
                PartitionSetup("A", _events("A", 0, 2, 4)),
                PartitionSetup("B", _events("B", 0, 1, 3)),
            ),
        ),
        EpochSetup(
            2,
            (
                PartitionSetup("A", _events("A", 0, 2, 4, 6)),
                PartitionSetup("B", _events("B", 0, 1, 3, 5)),
            ),
        ),
    ),
    publishers=("w1", "w2"),
    env_checkpoints=True,
)

_FENCE_PUBLISHER_BASE: tuple[Action, ...] = (
    Advance("A"),  # A through 0
    Advance("B"),  # B through 0
    Publish("w1"),
    *_answers("w1", 4),  # w1 publishes through 0
    Advance("A"),  # A through 2
    Advance("B"),  # B through 1
    Certify("B", Cut.before(3)),  # B before 3: the same claim as through 2 on offsets
    Publish("w1"),
    *_answers("w1", 3),  # w1 proposes through 2 (the tie: the smaller coordinate)
    Answer("w1", "lost"),  # its write is lost, not applied
    Reshard(),  # epoch 2 is durable
    *(Advance("A") for _ in range(3)),  # epoch 2: A through 4
    *(Advance("B") for _ in range(3)),  # epoch 2: B through 3
    Publish("w2"),
    *_answers("w2", 4),  # w2 cuts the record over to (epoch 2, through 3)
    *_answers("w1", 4),  # w1 rereads: epoch 2 now, past its proposal; the fence holds
    Advance("A"),  # epoch 2: A through 6
    Advance("B"),  # epoch 2: B through 5
    Publish("w2"),
    *_answers("w2", 3),  # w2 proposes (epoch 2, through 5)
    Answer("w2", LOST_UNTIL_END),  # the write, and every reread until w2 gives up
)

#: A checkpointer whose late write is *ahead* of the one that beat it, on a page holding
#: two events at one coordinate (A's events at 1, 2, 2 and 4, one page of four): r1
#: reads no checkpoint, then r2 certifies ``before 2`` from a page whose final claim
#: stops at what the source has finalized; the source finalizes the rest, and r1's page
#: claims ``through 4`` (every event of the page needs its outcome, both at 2). r1's
#: write expected no checkpoint and conflicts with r2's weaker one: it must reread and
#: write again (its claim is still strictly ahead), and report only
#: what the store then holds. Then an operator stores a checkpoint of another scope in
#: r1's key: a reader must neither resume from its token nor trust its cut.
_AHEAD_CHECKPOINTER = WorldSetup(
    order=OFFSETS,
    epochs=(EpochSetup(1, (PartitionSetup("A", _events("A", 1, 2, 2, 4), final=2),)),),
    readers=("r1", "r2"),
    page_size=4,
)

_AHEAD_CHECKPOINTER_BASE: tuple[Action, ...] = (
    Ingest("r1", "A"),
    Answer("r1"),  # r1 reads: no checkpoint; its fetch is pending
    Ingest("r2", "A"),
    Answer("r2"),  # r2 reads: no checkpoint
    Answer("r2", "horizon"),  # [A1..A4], a final claim only up to before 2
    *_answers("r2", 5),  # four outcomes recorded, before 2 stored
    Finalize("A"),
    Finalize("A"),
    *_answers("r1", 6),  # [A1..A4] claiming through 4, outcomes, the write conflicts
    *_answers("r1", 3),  # the reread and the write again on top of r2's
    Inject("A", "wrong_scope"),
    Ingest("r2", "A"),
    *_answers("r2", 4),  # r2 reads the misconfigured checkpoint and starts over
)

#: A crash between two calls: w1 dies after reading the record (its process is killed
#: and a fresh one started); the restarted w1 attempts again with no memory and must
#: not reuse the dead process's op_ids. Short, because every run starts a process.
_CRASH_BASE: tuple[Action, ...] = (
    Advance("A"),  # A through 1
    Advance("B"),  # B through 1
    Publish("w1"),
    *_answers("w1", 4),  # w1 publishes through 1 (its first attempt's op_id)
    Advance("A"),  # A before 3
    Advance("B"),  # B through 3
    Publish("w1"),
    Answer("w1"),
    Crash("w1"),
    Publish("w1"),
    *_answers("w1", 4),  # the restarted w1's first attempt publishes before 3: a fresh op_id
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


#: Two orders that cannot be compared, epochs that skip numbers, three members, an idle
#: member, and a cutover judged against the record rather than the worker's own last write.
#: Offsets. Epoch 1: A, B, C on ``offsets``; w1 publishes, then w2 publishes further.
#: Epoch 3 (epoch 2 is skipped): B moves to order ``ledger``: the members cannot be
#: compared and the merge must withhold ``incomparable`` (a scalar minimum across them is
#: caught as ``certified_support``). Epoch 4: every member on ``offsets`` again, C idle
#: (no events, a source vouching for ``before 9``), A with a late event below its old
#: checkpoint: under ``monotone`` the new frontier is above w1's own last write but below
#: the record, so the cutover is pending (a worker comparing with its own high-water
#: mark instead of the record moves the record back).
_INCOMPARABLE_PUBLISHER = WorldSetup(
    order=OFFSETS,
    epochs=(
        EpochSetup(
            1,
            (
                PartitionSetup("A", _events("A", 2, 3, 5)),
                PartitionSetup("B", _events("B", 2, 4, 6)),
                PartitionSetup("C", _events("C", 1, 3, 5)),
            ),
        ),
        EpochSetup(
            3,
            (
                PartitionSetup("A", _events("A", 2, 3, 5)),
                PartitionSetup("B", _events("B", 2, 4, 6), order="ledger"),
                PartitionSetup("C", _events("C", 1, 3, 5)),
            ),
        ),
        EpochSetup(
            4,
            (
                PartitionSetup("A", (*_events("A", 2, 3, 5), EventSpec("Am1", 1))),
                PartitionSetup("B", _events("B", 2, 4, 6)),
                PartitionSetup("C", (), end=9),
            ),
        ),
    ),
    publishers=("w1", "w2"),
    env_checkpoints=True,
)

_INCOMPARABLE_PUBLISHER_BASE: tuple[Action, ...] = (
    Advance("A"),  # through 2
    Advance("B"),  # through 2
    Advance("C"),  # through 1: the third member is the lowest (a two-member merge misses it)
    Publish("w1"),
    *_answers("w1", 4),  # w1 publishes epoch 1 through 1
    Certify("A", Cut.through(5)),
    Certify("B", Cut.through(4)),
    Certify("C", Cut.through(3)),
    Publish("w2"),
    *_answers("w2", 4),  # w2 publishes epoch 1 through 3
    Reshard(),  # epoch 3: B on ledger
    Certify("A", Cut.through(5)),
    Certify("B", Cut.through(6)),
    Certify("C", Cut.through(5)),  # a scalar minimum would be through 5
    Publish("w1"),
    *_answers("w1", 3),  # withheld incomparable
    Reshard(),  # epoch 4: all on offsets, C idle, A's late event at 1
    Certify("A", Cut.through(2)),
    Certify("B", Cut.through(4)),
    Advance("C"),  # before 9
    Publish("w1"),
    *_answers("w1", 3),  # epoch 4 through 2: above w1's through 1, below the record
)

#: Member names that differ only in case ("A", "a") or only in Unicode normalisation
#: (U+00C5 against A + U+030A, equal after NFC). Four members on offsets: A certifies
#: ``through 1`` and is the minimum while "a" certifies ``through 3`` (a map keyed by
#: lower-cased names gives A the checkpoint of "a" and publishes ``through 2``); then A
#: moves to ``through 5`` and A + U+030A at ``through 2`` is the minimum (a map keyed by
#: NFC names gives it the checkpoint of U+00C5 and publishes ``through 3``).
_NAMES_PUBLISHER = WorldSetup(
    order=OFFSETS,
    epochs=(
        EpochSetup(
            1,
            (
                PartitionSetup("A", _events("A", 1, 5)),
                PartitionSetup("a", _events("a", 1, 2, 3)),
                PartitionSetup("A\u030a", _events("A\u030a", 1, 2)),
                PartitionSetup("\u00c5", _events("\u00c5", 1, 2, 3)),
            ),
        ),
    ),
    publishers=("w1", "w2"),
    env_checkpoints=True,
)

_NAMES_PUBLISHER_BASE: tuple[Action, ...] = (
    Advance("A"),  # through 1
    *(Advance("a") for _ in range(3)),  # through 3
    *(Advance("A\u030a") for _ in range(2)),  # through 2
    *(Advance("\u00c5") for _ in range(3)),  # through 3
    Publish("w1"),
    *_answers("w1", 4),  # w1 publishes through 1
    Advance("A"),  # through 5
    Publish("w2"),
    *_answers("w2", 4),  # w2 publishes through 2
)


#: The integer value classes at the publisher level alone (an implementation that declares
#: no ``algebra`` level meets them here): ``nothing`` beside negative coordinates,
#: negatives whose order differs as text, 9 beside 10, three members, and a successor
#: edge restated. Offsets. A stores a progress token with no coverage while B certifies
#: ``before -3`` and C ``through -4`` (the same claim): the merge withholds
#: ``no_coverage`` (a program that ranks ``nothing`` as coordinate 0, ``before 0``,
#: takes ``through -4`` for the minimum, or calls it behind the record's ``nothing``).
#: A certifies ``through -2``: the record becomes ``through -4`` (the tie with
#: ``before -3`` goes to the smaller coordinate; ranked by exclusive bound, -1 against
#: -3, as text "-1" sorts below "-3"). C moves on to ``through 99`` and the merge is B's
#: ``before -3``, the record's claim on offsets: ``unchanged`` (a comparison that
#: ignores the exact successor writes it again).
_CLASSES_PUBLISHER = WorldSetup(
    order=OFFSETS,
    epochs=(
        EpochSetup(
            1,
            (
                PartitionSetup("A", _events("A", -4, -2, 10)),
                PartitionSetup("B", _events("B", -4, 0, 9)),
                PartitionSetup("C", _events("C", -4, 9, 99)),
            ),
        ),
    ),
    publishers=("w1", "w2"),
    env_checkpoints=True,
)

_CLASSES_PUBLISHER_BASE: tuple[Action, ...] = (
    Certify("A", NOTHING),  # a progress token, no coverage
    Certify("B", Cut.before(-3)),
    Certify("C", Cut.through(-4)),
    Publish("w1"),
    *_answers("w1", 4),  # withheld no_coverage: A certified nothing
    Certify("A", Cut.through(-2)),
    Publish("w2"),
    *_answers("w2", 4),  # w2 publishes through -4 (not through -2: "-1" < "-3" as text)
    Certify("C", Cut.through(99)),
    Publish("w1"),
    *_answers("w1", 4),  # the merge is before -3, the record's claim: unchanged
)

#: The string value classes at the publisher level alone: the empty string, a prefix
#: (``a``, ``ab``), case variants (``B``, ``b``, and ``B`` below ``a`` by code point but
#: above it ignoring case), a combining mark (``e`` + U+0301 below ``f`` by code point,
#: equal to U+00E9 above ``f`` after normalisation) and a character above U+FFFF, across
#: three members. A certifies ``through B``, B ``through a``, C ``through ab``: the
#: minimum is ``through B`` (ignoring case, ``a`` ranks below ``b`` and ``through a`` is
#: published beyond A's claim). Then A ``through e + U+0301``, B ``through f``, C
#: ``through U+00E9``: the minimum is A's (after NFC or NFKC it ranks above ``f``, and
#: ``through f`` is published beyond A's claim).
_STRINGS_PUBLISHER = WorldSetup(
    order=KEYS,
    epochs=(
        EpochSetup(
            1,
            (
                PartitionSetup("A", _events_at("A", "", "B", "e\u0301", ASTRAL)),
                PartitionSetup("B", _events_at("B", "", "a", "b", "f")),
                PartitionSetup("C", _events_at("C", "ab", "\u00e9")),
            ),
        ),
    ),
    publishers=("w1", "w2"),
    env_checkpoints=True,
)

_STRINGS_PUBLISHER_BASE: tuple[Action, ...] = (
    Certify("A", Cut.through("B")),
    Certify("B", Cut.through("a")),
    Certify("C", Cut.through("ab")),
    Publish("w1"),
    *_answers("w1", 4),  # w1 publishes through "B" (code point: "B" < "a")
    Certify("A", Cut.through("e\u0301")),
    Certify("B", Cut.through("f")),
    Certify("C", Cut.through("\u00e9")),
    Publish("w2"),
    *_answers("w2", 4),  # w2 publishes through "e" + U+0301 (code point: below "f")
)


#: String edges at the publisher level alone, two members on one string order: a prefix
#: and its extension (``ab`` listed before ``a``, then ``x`` before ``xy``: a comparison
#: that calls a prefix equal keeps whichever member it met first, or last, and publishes
#: the longer string beyond the other member's claim; and ``through ab`` after the
#: record's ``through a``, which such a comparison calls no progress), and both endpoint
#: kinds at one string (``through m`` beside ``before m``: a comparison that ranks ``before`` above
#: ``through`` on strings publishes ``through m``, which B never certified); then a
#: cutover to a membership with no partitions, which withholds ``no_coverage``.
_STRING_EDGES_PUBLISHER = WorldSetup(
    order=KEYS,
    epochs=(
        EpochSetup(
            1,
            (
                PartitionSetup("A", _events_at("A", "ab", "m", "x")),
                PartitionSetup("B", _events_at("B", "a", "ab", "m", "xy")),
            ),
        ),
        EpochSetup(2, ()),
    ),
    publishers=("w1", "w2"),
    env_checkpoints=True,
)

_STRING_EDGES_PUBLISHER_BASE: tuple[Action, ...] = (
    Certify("A", Cut.through("ab")),
    Certify("B", Cut.through("a")),
    Publish("w1"),
    *_answers("w1", 4),  # w1 publishes through "a" (a prefix is below its extension)
    Certify("B", Cut.through("ab")),
    Publish("w2"),
    *_answers("w2", 4),  # w2 publishes through "ab": ahead of the record's through "a"
    Certify("A", Cut.through("m")),
    Certify("B", Cut.before("m")),
    Publish("w2"),
    *_answers("w2", 4),  # w2 publishes before "m" (before x is below through x)
    Certify("A", Cut.through("x")),
    Certify("B", Cut.through("xy")),
    Publish("w1"),
    *_answers("w1", 4),  # w1 publishes through "x"
    Reshard(),  # epoch 2: no partitions at all
    Publish("w2"),
    *_answers("w2", 3),  # withheld no_coverage (an empty membership certifies nothing)
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

    def within(self, limits: tuple[int, int] | None) -> Base:
        """The base with every integer coordinate moved inside ``limits`` (a range a SUT
        declared in ``hello_ok.integers``; None: any size, the base as written).

        Coordinates already inside stay; those outside are moved, in order, to the top
        of the range two apart (dense orders keep a gap between neighbours), so the
        world keeps its shape: the same events at the same relative positions.
        """
        if limits is None:
            return self
        low, high = limits
        outside = sorted(
            {
                at
                for epoch in self.setup.epochs
                for part in epoch.partitions
                for at in (*(ev.at for ev in part.events), part.end)
                if isinstance(at, int) and not low <= at <= high
            }
        )
        if not outside:
            return self
        moved = {at: high - 2 * (len(outside) - i) for i, at in enumerate(outside)}

        def place(at: object) -> object:
            return moved.get(at, at) if isinstance(at, int) else at

        epochs = tuple(
            EpochSetup(
                epoch.epoch,
                tuple(
                    dataclasses.replace(
                        part,
                        events=tuple(EventSpec(ev.id, place(ev.at)) for ev in part.events),  # type: ignore[arg-type]
                        end=place(part.end),  # type: ignore[arg-type]
                    )
                    for part in epoch.partitions
                ),
            )
            for epoch in self.setup.epochs
        )
        return dataclasses.replace(self, setup=dataclasses.replace(self.setup, epochs=epochs))


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
            "publisher-reasons",
            "publisher",
            _REASONS_PUBLISHER,
            _REASONS_PUBLISHER_BASE,
            "both endpoint kinds at one coordinate in either partition order, and every "
            "withheld reason with two reasons at once (the documented order decides)",
        ),
        Base(
            "publisher-wide",
            "publisher",
            _WIDE_PUBLISHER,
            _WIDE_PUBLISHER_BASE,
            "integers beyond 2^53 and 2^63 (moved inside a declared range)",
        ),
        Base(
            "publisher-fence",
            "publisher",
            _FENCE_PUBLISHER,
            _FENCE_PUBLISHER_BASE,
            "coordinate 0; another publisher cuts over between a lost write and its reread "
            "(the epoch fence); a retry budget spent after a write",
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
            "checkpointer-ahead",
            "checkpointer",
            _AHEAD_CHECKPOINTER,
            _AHEAD_CHECKPOINTER_BASE,
            "a late checkpoint write ahead of the one that beat it; a misconfigured checkpoint "
            "in the reader's own key",
        ),
        Base(
            "checkpointer-budget",
            "checkpointer",
            _BUDGET_CHECKPOINTER,
            _BUDGET_CHECKPOINTER_BASE,
            "a retry budget spent on a lost checkpoint write and its rereads",
        ),
        Base(
            "composed-offsets",
            "composed",
            TINY["composed"],
            BASE["composed"],
            "readers and a publisher of the SUT together",
        ),
        Base(
            "publisher-incomparable",
            "publisher",
            _INCOMPARABLE_PUBLISHER,
            _INCOMPARABLE_PUBLISHER_BASE,
            "two orders that cannot be compared (withheld incomparable); epochs skipping "
            "numbers; three members, one idle; a cutover judged against the record, not the "
            "worker's own last write",
        ),
        Base(
            "publisher-names",
            "publisher",
            _NAMES_PUBLISHER,
            _NAMES_PUBLISHER_BASE,
            "member names differing only in case or in Unicode normalisation; four members",
        ),
        Base(
            "publisher-classes",
            "publisher",
            _CLASSES_PUBLISHER,
            _CLASSES_PUBLISHER_BASE,
            "integer value classes: nothing beside negative coordinates, negatives and "
            "different digit counts, three members, a successor edge restated (unchanged)",
        ),
        Base(
            "publisher-strings",
            "publisher",
            _STRINGS_PUBLISHER,
            _STRINGS_PUBLISHER_BASE,
            "string value classes: the empty string, a prefix, case variants, a combining "
            "mark, a character above U+FFFF; three members",
        ),
        Base(
            "publisher-string-edges",
            "publisher",
            _STRING_EDGES_PUBLISHER,
            _STRING_EDGES_PUBLISHER_BASE,
            "a prefix beside its extension (either listed first), both endpoint kinds at "
            "one string, a cutover to a membership with no partitions",
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
