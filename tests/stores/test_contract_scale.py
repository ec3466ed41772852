"""The store contract of the two calls that make cost independent of partitions.

``read_merge_summary``: on every backend of ``STORE_BACKENDS``, for generated
memberships and checkpoint histories, the store's summary equals
:func:`~fencepost.impl.merge.summarize` of the vector ``read_checkpoints``
returns, so deciding from it (:func:`merge_summary`) gives exactly what
:func:`merge` gives over the vector: the same cut, or the same withheld reason
and detail. The generated data has ties of equivalent cuts (``through x`` and
``before x+1``), both endpoint kinds at one coordinate, integers of any size,
strings with NUL and characters above U+FFFF, other scopes, provisional
checkpoints, several orders, and checkpoints of partitions that left the
membership at a reshard.

``write_checkpoints``: each write conditional on its own generation, a lost race
losing alone, every write admitted before any is applied, one atomic commit.

The checks are plain functions; the teeth at the end run them on broken stores.
"""

from __future__ import annotations

import dataclasses
import itertools
import threading
from collections.abc import Callable, Mapping, Sequence

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from store_backends import StoreFactory

from fencepost.impl.cuts import NOTHING, Cut, Endpoint
from fencepost.impl.errors import InvalidValue
from fencepost.impl.memory import MemoryStore
from fencepost.impl.merge import (
    DETAIL_NAMES,
    MergeSummary,
    Withheld,
    WithheldReason,
    merge,
    merge_summary,
    summarize,
)
from fencepost.impl.orders import IntegerOrder, Order, StringOrder
from fencepost.impl.records import Checkpoint, Finality, Membership
from fencepost.impl.stores import (
    BatchWrite,
    CheckpointApplied,
    CheckpointConflict,
    CheckpointWrite,
    DefiniteStoreError,
    Store,
    UnknownStream,
)

OFFSETS = IntegerOrder("offsets", successor_exact=True)
MILLIS = IntegerOrder("ms", successor_exact=False)
KEYS = StringOrder("keys")
ORDERS: tuple[Order, ...] = (OFFSETS, MILLIS, KEYS)

#: Partition names whose code-point order differs from UTF-16 and from naive byte handling.
NAMES = ("A", "B", "a", "é", "\uffff", "\U0001f600", "z", "p\x00", "p", "ключ")
INTEGERS = (-(10**40), -1, 0, 4, 5, 6, 2**64 - 1, 2**64, 10**40, 10**40 + 1)
STRINGS = ("", "\x00", "a", "a\x00", "ab", "é", "\uffff", "\U0001f600")

_streams = itertools.count()


def membership(epoch: int, partitions: Mapping[str, Order], scope: str = "q1") -> Membership:
    return Membership(
        epoch,
        scope,
        {p: o.name for p, o in partitions.items()},
        {o.name: o for o in partitions.values()},
    )


def cuts(order: Order) -> st.SearchStrategy[Cut]:
    coordinate = st.sampled_from(INTEGERS if order.kind == "integer" else STRINGS)
    kind = st.sampled_from([Endpoint.BEFORE, Endpoint.THROUGH])
    return st.one_of(st.just(NOTHING), st.builds(Cut, kind, coordinate))


@dataclasses.dataclass(frozen=True)
class History:
    """Two epochs of one stream and the checkpoint writes made in each."""

    first: Membership
    second: Membership
    writes: tuple[Checkpoint, ...]


@st.composite
def histories(draw: st.DrawFn) -> History:
    main = draw(st.sampled_from(ORDERS))
    mixed = draw(st.integers(0, 7)) == 0
    names = draw(st.lists(st.sampled_from(NAMES), min_size=0, max_size=7, unique=True))
    orders = {p: (draw(st.sampled_from(ORDERS)) if mixed else main) for p in names}
    first = membership(1, orders)
    # the reshard keeps a subset: the others' epoch-1 checkpoints must count nowhere in 2
    kept = {p: o for p, o in orders.items() if draw(st.booleans())}
    second = membership(2, kept)
    writes = []
    for _ in range(draw(st.integers(0, 14))):
        epoch = draw(st.sampled_from([1, 2])) if kept else 1
        pool = sorted(orders if epoch == 1 else kept)
        if not pool:
            break
        partition = draw(st.sampled_from(pool))
        unusual = draw(st.integers(0, 7))
        writes.append(
            Checkpoint(
                partition,
                draw(cuts(orders[partition])),
                "t",
                1,
                "other" if unusual == 1 else "q1",
                epoch,
                Finality.PROVISIONAL if unusual == 2 else Finality.FINAL,
            )
        )
    return History(first, second, tuple(writes))


def write_all(store: Store, stream: str, history: History) -> None:
    store.create_stream(stream, history.first)
    store.write_membership(stream, history.second)
    for checkpoint in history.writes:
        current = store.read_checkpoint(stream, checkpoint.epoch, checkpoint.partition)
        expected = None if current is None else current.generation
        store.write_checkpoint(stream, expected, checkpoint)


def check_summary_is_the_vector_summary(
    store: Store, stream: str, memberships: list[Membership]
) -> None:
    """The contract of read_merge_summary, and what it buys: merge's exact answer."""
    for m in memberships:
        vector = store.read_checkpoints(stream, m.epoch)
        got = store.read_merge_summary(stream, m.epoch)
        assert got == summarize(m, vector), (m.epoch, got, summarize(m, vector))
        decided, merged = merge_summary(m, got), merge(m, vector)
        if isinstance(merged, Withheld):
            assert isinstance(decided, Withheld), (decided, merged)
            assert (decided.reason, decided.detail) == (merged.reason, merged.detail)
        else:
            assert decided == merged


# --- read_merge_summary --------------------------------------------------------------------


def _examples(factory: StoreFactory) -> int:
    return 25 if factory.name == "postgres" else 120


def test_summary_equals_the_summary_of_the_vector(store_factory: StoreFactory) -> None:
    store = store_factory()

    @settings(
        max_examples=_examples(store_factory),
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow],
    )
    @given(histories())
    def run(history: History) -> None:
        stream = f"s{next(_streams)}"
        write_all(store, stream, history)
        check_summary_is_the_vector_summary(store, stream, [history.first, history.second])

    run()


def test_equivalent_cuts_tie_to_the_published_representation(store: Store) -> None:
    both = {"A": OFFSETS, "B": OFFSETS, "C": OFFSETS}
    store.create_stream("s", membership(1, both))
    for partition, cut in (("A", Cut.before(5)), ("B", Cut.through(4)), ("C", Cut.before(5))):
        store.write_checkpoint("s", None, Checkpoint(partition, cut, None, 1, "q1", 1))
    assert store.read_merge_summary("s", 1).minimum == Cut.through(4)
    # both endpoint kinds at one coordinate of a dense order: before is the weaker
    store.create_stream("t", membership(1, {"A": MILLIS, "B": MILLIS}))
    store.write_checkpoint("t", None, Checkpoint("A", Cut.through(7), None, 1, "q1", 1))
    store.write_checkpoint("t", None, Checkpoint("B", Cut.before(7), None, 1, "q1", 1))
    assert merge_summary(
        membership(1, {"A": MILLIS, "B": MILLIS}), store.read_merge_summary("t", 1)
    ) == Cut.before(7)


def test_summary_names_the_first_offenders_in_code_point_order(store: Store) -> None:
    names = [f"p{i:02d}" for i in range(30)] + ["\uffff", "\U0001f600", "é"]
    m = membership(1, dict.fromkeys(names, KEYS))
    store.create_stream("s", m)
    summary = store.read_merge_summary("s", 1)
    assert summary.missing == tuple(sorted(names)[: DETAIL_NAMES + 1])
    withheld = merge_summary(m, summary)
    assert isinstance(withheld, Withheld)
    assert withheld.reason is WithheldReason.MISSING_CHECKPOINT
    assert withheld.detail == ", ".join(sorted(names)[:DETAIL_NAMES]) + " and more"
    # every member certified, two in another scope: scope_mismatch names exactly those
    for i, name in enumerate(names):
        scope = "other" if name in ("\U0001f600", "p07") else "q1"
        store.write_checkpoint("s", None, Checkpoint(name, Cut.through(str(i)), None, 1, scope, 1))
    summary = store.read_merge_summary("s", 1)
    assert (summary.missing, summary.wrong_scope) == ((), ("p07", "\U0001f600"))
    assert merge_summary(m, summary) == Withheld(
        WithheldReason.SCOPE_MISMATCH, (), "p07, \U0001f600"
    )


def test_summary_of_an_empty_membership_and_of_unknown_epochs(store: Store) -> None:
    empty = membership(1, {})
    store.create_stream("s", empty)
    assert store.read_merge_summary("s", 1) == MergeSummary(1)
    assert merge_summary(empty, MergeSummary(1)) == Withheld(
        WithheldReason.NO_COVERAGE, (), "the membership has no partitions"
    )
    with pytest.raises(DefiniteStoreError, match="epoch 2"):
        store.read_merge_summary("s", 2)
    with pytest.raises(UnknownStream, match="create_stream"):
        store.read_merge_summary("nope", 1)
    with pytest.raises(InvalidValue, match="epoch"):
        store.read_merge_summary("s", -1)


@pytest.mark.durable
def test_summary_survives_reopen(store_factory: StoreFactory) -> None:
    store = store_factory()
    m = membership(1, {"A": OFFSETS, "B": OFFSETS})
    store.create_stream("s", m)
    store.write_checkpoint("s", None, Checkpoint("A", Cut.through(10**40), None, 1, "q1", 1))
    store.close()
    again = store_factory()
    assert again.read_merge_summary("s", 1) == MergeSummary(
        1, missing=("B",), minimum=Cut.through(10**40)
    )
    again.write_checkpoint("s", None, Checkpoint("B", Cut.before(3), None, 1, "q1", 1))
    assert merge_summary(m, again.read_merge_summary("s", 1)) == Cut.before(3)


# --- write_checkpoints ----------------------------------------------------------------------


def cp(partition: str, cut: Cut, generation: int = 1, epoch: int = 1) -> Checkpoint:
    return Checkpoint(partition, cut, f"tok-{cut}", generation, "q1", epoch)


def check_batch_fencing(factory: Callable[[], Store]) -> None:
    """Each write is conditional on its own generation; a lost race loses alone."""
    store = factory()
    store.create_stream("s", membership(1, dict.fromkeys("ABCD", OFFSETS)))
    first = store.write_checkpoints(
        "s", [(None, cp("A", Cut.before(1))), (None, cp("B", Cut.before(1)))]
    )
    assert first == [
        CheckpointApplied(cp("A", Cut.before(1))),
        CheckpointApplied(cp("B", Cut.before(1))),
    ]
    results = store.write_checkpoints(
        "s",
        [
            (1, cp("A", Cut.through(5), 2)),
            (None, cp("B", Cut.through(9))),  # a late retry of B's first write: loses
            (None, cp("C", Cut.before(2))),
            (7, cp("D", Cut.before(3), 8)),  # expects a checkpoint D does not have: loses
        ],
    )
    assert results == [
        CheckpointApplied(cp("A", Cut.through(5), 2)),
        CheckpointConflict(cp("B", Cut.before(1))),
        CheckpointApplied(cp("C", Cut.before(2))),
        CheckpointConflict(None),
    ]
    assert [c.partition for c in store.read_checkpoints("s", 1)] == ["A", "B", "C"]
    assert store.read_checkpoint("s", 1, "B") == cp("B", Cut.before(1))


def test_batch_writes_are_each_fenced_by_their_own_generation(store_factory: StoreFactory) -> None:
    check_batch_fencing(store_factory)


def test_batch_writes_apply_in_order(store: Store) -> None:
    store.create_stream("s", membership(1, {"A": OFFSETS}))
    results = store.write_checkpoints(
        "s",
        [
            (None, cp("A", Cut.before(1))),
            (1, cp("A", Cut.before(2), 2)),
            (1, cp("A", Cut.before(9), 2)),
        ],
    )
    assert [type(r) for r in results] == [CheckpointApplied, CheckpointApplied, CheckpointConflict]
    assert store.read_checkpoint("s", 1, "A") == cp("A", Cut.before(2), 2)
    assert store.write_checkpoints("s", []) == []


@pytest.mark.parametrize(
    "bad",
    [
        (None, cp("Z", Cut.before(1))),  # not a member
        (None, cp("A", Cut.before(1), epoch=5)),  # no membership for the epoch
        (None, cp("B", Cut.before("x"))),  # does not fit the order
        (True, cp("B", Cut.before(1))),  # a bool is not a generation
        (None, "not a checkpoint"),
        ("just one thing",),
    ],
    ids=[
        "non-member",
        "no-membership",
        "wrong-order",
        "bool-generation",
        "not-a-checkpoint",
        "not-a-pair",
    ],
)
def test_one_bad_write_refuses_the_whole_batch(store: Store, bad: tuple[object, ...]) -> None:
    m = membership(1, dict.fromkeys("AB", OFFSETS))
    store.create_stream("s", m)
    batch = [(None, cp("A", Cut.before(1))), bad]
    with pytest.raises((DefiniteStoreError, InvalidValue)):
        store.write_checkpoints("s", batch)  # type: ignore[arg-type]
    assert store.read_checkpoints("s", 1) == []
    assert store.read_merge_summary("s", 1) == MergeSummary(1, missing=("A", "B"))


def test_batch_writes_keep_the_summary_exact(store: Store) -> None:
    m = membership(1, dict.fromkeys("ABC", OFFSETS))
    store.create_stream("s", m)
    store.write_checkpoints("s", [(None, cp("A", Cut.through(4))), (None, cp("B", Cut.before(5)))])
    assert store.read_merge_summary("s", 1) == MergeSummary(
        1, missing=("C",), minimum=Cut.through(4)
    )
    store.write_checkpoints("s", [(None, cp("C", Cut.through(8))), (1, cp("A", Cut.through(9), 2))])
    assert merge_summary(m, store.read_merge_summary("s", 1)) == Cut.before(5)
    check_summary_is_the_vector_summary(store, "s", [m])


def test_unknown_stream_batch_is_refused(store: Store) -> None:
    with pytest.raises(UnknownStream, match="create_stream"):
        store.write_checkpoints("nope", [(None, cp("A", Cut.before(1)))])


@pytest.mark.durable
def test_batch_survives_reopen(store_factory: StoreFactory) -> None:
    store = store_factory()
    store.create_stream("s", membership(1, dict.fromkeys("AB", OFFSETS)))
    store.write_checkpoints(
        "s", [(None, cp("A", Cut.before(2**70))), (None, cp("B", Cut.before(1)))]
    )
    store.close()
    again = store_factory()
    assert again.read_checkpoints("s", 1) == [cp("A", Cut.before(2**70)), cp("B", Cut.before(1))]


def test_concurrent_batches_one_winner_per_generation(store_factory: StoreFactory) -> None:
    setup = store_factory()
    partitions = [f"p{i}" for i in range(6)]
    setup.create_stream("s", membership(1, dict.fromkeys(partitions, OFFSETS)))
    threads = 4
    handles = [store_factory() for _ in range(threads)]
    barrier = threading.Barrier(threads, timeout=60)  # a writer that fails breaks it
    wins: list[tuple[str, int | None]] = []
    lock = threading.Lock()

    def writer(index: int) -> None:
        store = handles[index]
        for r in range(4):
            barrier.wait()
            seen = {c.partition: c.generation for c in store.read_checkpoints("s", 1)}
            barrier.wait()
            # every writer targets every partition, each batch in its own order (a store
            # that locked rows in batch order would deadlock here)
            order = partitions[index:] + partitions[:index]
            batch: list[BatchWrite] = [
                (seen.get(p), cp(p, Cut.through(10 * r + index), (seen.get(p) or 0) + 1))
                for p in order
            ]
            results = store.write_checkpoints("s", batch)
            with lock:
                wins.extend(
                    (p, seen.get(p))
                    for p, result in zip(order, results, strict=True)
                    if isinstance(result, CheckpointApplied)
                )

    workers = [threading.Thread(target=writer, args=(i,)) for i in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    for p in partitions:
        generations = sorted((-1 if g is None else g) for q, g in wins if q == p)
        assert generations == [-1, 1, 2, 3], (p, generations)
        stored = setup.read_checkpoint("s", 1, p)
        assert stored is not None and stored.generation == 4


# --- teeth ------------------------------------------------------------------------------------


class SummaryIgnoresScope(MemoryStore):
    """Summarises as if every checkpoint were of the epoch's scope."""

    def read_merge_summary(self, stream: str, epoch: int) -> MergeSummary:
        return dataclasses.replace(super().read_merge_summary(stream, epoch), wrong_scope=())


class SummaryLastNames(MemoryStore):
    """Names the *last* offenders (a descending index), not the first."""

    def read_merge_summary(self, stream: str, epoch: int) -> MergeSummary:
        m = self.read_membership(stream, epoch)
        got = super().read_merge_summary(stream, epoch)
        missing = sorted(
            set(m.partitions) - {c.partition for c in self.read_checkpoints(stream, epoch)}
        )
        return dataclasses.replace(got, missing=tuple(reversed(missing))[: DETAIL_NAMES + 1])


class SummaryRepresentationBlind(MemoryStore):
    """Takes the minimum without the tie rule: ``before x+1`` may stand for ``through x``."""

    def read_merge_summary(self, stream: str, epoch: int) -> MergeSummary:
        got = super().read_merge_summary(stream, epoch)
        m = self.read_membership(stream, epoch)
        least = got.minimum
        if (
            least is not None
            and least.endpoint is Endpoint.THROUGH
            and m.order is not None
            and m.order.has_successor
        ):
            assert isinstance(least.at, int)
            least = Cut.before(least.at + 1)
        return dataclasses.replace(got, minimum=least)


class BatchAllOrNothingOnConflict(MemoryStore):
    """Rolls the whole batch back when one write loses its race."""

    def write_checkpoints(self, stream: str, writes: Sequence[BatchWrite]) -> list[CheckpointWrite]:
        with self._lock:
            state = self._stream(stream)
            for expected, c in writes:
                current = state.checkpoints.get((c.epoch, c.partition))
                if (None if current is None else current.generation) != expected:
                    return [CheckpointConflict(current) for _ in writes]
        return super().write_checkpoints(stream, writes)


def _summary_check(factory: Callable[[], Store]) -> None:
    store = factory()
    tie = {"A": OFFSETS, "B": OFFSETS}
    store.create_stream("tie", membership(1, tie))
    store.write_checkpoint("tie", None, Checkpoint("A", Cut.through(4), None, 1, "q1", 1))
    store.write_checkpoint("tie", None, Checkpoint("B", Cut.before(5), None, 1, "other", 1))
    names = membership(1, dict.fromkeys([f"n{i:02d}" for i in range(14)], KEYS))
    store.create_stream("names", names)
    check_summary_is_the_vector_summary(store, "tie", [membership(1, tie)])
    check_summary_is_the_vector_summary(store, "names", [names])


@pytest.mark.parametrize(
    ("broken", "check"),
    [
        (SummaryIgnoresScope, _summary_check),
        (SummaryLastNames, _summary_check),
        (SummaryRepresentationBlind, _summary_check),
        (BatchAllOrNothingOnConflict, check_batch_fencing),
    ],
    ids=[
        "summary-ignores-scope",
        "summary-last-names",
        "summary-tie-blind",
        "batch-all-or-nothing",
    ],
)
def test_contract_checks_catch_broken_stores(
    broken: type[MemoryStore], check: Callable[[Callable[[], Store]], None]
) -> None:
    _summary_check(MemoryStore) if check is _summary_check else check(MemoryStore)
    shared = broken()
    with pytest.raises(AssertionError):
        check(lambda: shared)
