"""The publisher in every branch of docs/semantics.md sections 5 and 6.

Each attempt runs on a :class:`RecordingStore` and is judged by
:func:`check_attempt` from the store calls alone; the teeth tests at the end
show that check catches a publisher that reuses a stale cut after a conflict
or takes a lost response as success.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from typing import Any

import pytest
from impl_checks import RecordingStore, check_attempt

from fencepost.impl.cuts import NOTHING, Cut
from fencepost.impl.faults import FaultKind, FaultyStore
from fencepost.impl.memory import MemoryStore
from fencepost.impl.merge import WithheldReason
from fencepost.impl.orders import IntegerOrder, Order, StringOrder
from fencepost.impl.publisher import (
    Outcome,
    Policy,
    Publisher,
    PublishResult,
    _Propose,
    _Stop,
)
from fencepost.impl.records import Checkpoint, Finality, Membership, PublicationRecord
from fencepost.impl.stores import IndefiniteStoreError, PublicationWrite

OFFSETS = IntegerOrder("offsets", successor_exact=True)
TIMES = IntegerOrder("ts", successor_exact=False)


def members(epoch: int, partitions: Sequence[str], order: Order = OFFSETS) -> Membership:
    return Membership(epoch, "q1", {p: order.name for p in partitions}, {order.name: order})


def advance(
    store: Any,
    partition: str,
    cut: Cut,
    epoch: int = 1,
    *,
    scope: str = "q1",
    finality: Finality = Finality.FINAL,
) -> Checkpoint:
    """Store ``cut`` for ``partition`` on top of what is stored; returns the checkpoint written."""
    current = store.read_checkpoint("s", epoch, partition)
    expected = None if current is None else current.generation
    checkpoint = Checkpoint(partition, cut, "tok", (expected or 0) + 1, scope, epoch, finality)
    store.write_checkpoint("s", expected, checkpoint)
    return checkpoint


def stream(*partitions: str, order: Order = OFFSETS) -> MemoryStore:
    store = MemoryStore()
    store.create_stream("s", members(1, partitions or ("A", "B"), order))
    return store


def attempt(
    store: Any, policy: Policy = Policy.MONOTONE, worker: str = "w", **kwargs: Any
) -> tuple[PublishResult, RecordingStore]:
    recording = RecordingStore(store)
    result = Publisher(recording, "s", worker, policy, **kwargs).attempt()
    check_attempt(recording.calls, result, policy)
    return result, recording


# --- the plain branches ------------------------------------------------------------------


def test_publishes_the_minimum_exactly_as_certified() -> None:
    store = stream()
    advance(store, "A", Cut.before(100))
    advance(store, "B", Cut.through(100))
    result, recording = attempt(store)
    assert result.outcome is Outcome.PUBLISHED
    assert (result.epoch, result.cut) == (1, Cut.before(100))
    assert result.record == PublicationRecord(1, Cut.before(100), 1, "w-1")
    assert result.attributed and result.attempts == 1
    assert [c.op for c in recording.calls] == [
        "read_publication",
        "read_membership",
        "read_merge_summary",
        "write_publication",
    ]


def test_before_to_through_at_one_coordinate_is_progress() -> None:
    store = stream(order=TIMES)
    advance(store, "A", Cut.before(100))
    advance(store, "B", Cut.through(100))
    assert attempt(store)[0].cut == Cut.before(100)
    advance(store, "A", Cut.through(100))
    result, _ = attempt(store)
    assert result.outcome is Outcome.PUBLISHED and result.cut == Cut.through(100)


def test_unchanged_when_not_ahead_including_an_equivalent_claim() -> None:
    store = stream()
    advance(store, "A", Cut.through(4))
    advance(store, "B", Cut.through(9))
    attempt(store)
    result, recording = attempt(store)
    assert result.outcome is Outcome.UNCHANGED and result.reason is None
    assert result.cut == Cut.through(4) and result.attempts == 0
    # B's before 5 is the same claim as through 4 on an order with an exact successor.
    advance(store, "A", Cut.through(20))
    advance(store, "B", Cut.before(5))
    result, recording = attempt(store)
    assert result.outcome is Outcome.UNCHANGED
    assert "write_publication" not in [c.op for c in recording.calls]


@pytest.mark.parametrize(
    ("setup", "reason"),
    [
        (lambda s: advance(s, "A", Cut.through(3)), WithheldReason.MISSING_CHECKPOINT),
        (
            lambda s: (
                advance(s, "A", Cut.through(3)),
                advance(s, "B", Cut.through(3), scope="q2"),
            ),
            WithheldReason.SCOPE_MISMATCH,
        ),
        (
            lambda s: (
                advance(s, "A", Cut.through(3)),
                advance(s, "B", Cut.through(3), finality=Finality.PROVISIONAL),
            ),
            WithheldReason.UNSUPPORTED_FINALITY,
        ),
        (
            lambda s: (advance(s, "A", Cut.through(3)), advance(s, "B", NOTHING)),
            WithheldReason.NO_COVERAGE,
        ),
    ],
    ids=["missing", "scope", "provisional", "no-coverage"],
)
def test_withheld_reasons_stop_without_writing(
    setup: Callable[[MemoryStore], object], reason: WithheldReason
) -> None:
    store = stream()
    setup(store)
    result, recording = attempt(store)
    assert result.outcome is Outcome.WITHHELD and result.reason is reason
    assert result.record == PublicationRecord(1)
    assert "write_publication" not in [c.op for c in recording.calls]


def test_incomparable_orders_are_withheld() -> None:
    store = MemoryStore()
    names = StringOrder("names")
    store.create_stream(
        "s",
        Membership(1, "q1", {"A": "offsets", "B": "names"}, {"offsets": OFFSETS, "names": names}),
    )
    advance(store, "A", Cut.through(3))
    advance(store, "B", Cut.through("x"))
    result, _ = attempt(store)
    assert result.outcome is Outcome.WITHHELD and result.reason is WithheldReason.INCOMPARABLE


# --- conflicts ---------------------------------------------------------------------------


class BeforeWrite:
    """Runs ``meanwhile`` on the inner store just before the first ``n`` writes."""

    def __init__(self, inner: MemoryStore, meanwhile: Callable[[], object], n: int = 1) -> None:
        self.inner = inner
        self.meanwhile = meanwhile
        self.left = n

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def write_publication(self, *args: Any) -> PublicationWrite:
        if self.left:
            self.left -= 1
            self.meanwhile()
        return self.inner.write_publication(*args)


def test_conflict_rereads_and_recomputes_before_retrying() -> None:
    store = stream()
    advance(store, "A", Cut.through(10))
    advance(store, "B", Cut.through(10))

    def rival() -> None:
        # Checkpoints move and another publisher publishes before our write lands.
        advance(store, "A", Cut.through(30))
        advance(store, "B", Cut.through(20))
        Publisher(store, "s", "rival").attempt()
        advance(store, "B", Cut.through(25))

    result, recording = attempt(BeforeWrite(store, rival))
    assert result.outcome is Outcome.PUBLISHED and result.cut == Cut.through(25)
    writes = [c for c in recording.calls if c.op == "write_publication"]
    assert [w.args[3] for w in writes] == [Cut.through(10), Cut.through(25)]
    assert [w.args[4] for w in writes] == ["w-1", "w-2"]
    assert result.record == PublicationRecord(1, Cut.through(25), 2, "w-2")


def test_conflict_with_a_rival_that_published_the_same_claim_is_unchanged() -> None:
    store = stream()
    advance(store, "A", Cut.through(10))
    advance(store, "B", Cut.through(10))
    rival = BeforeWrite(store, lambda: Publisher(store, "s", "rival").attempt())
    result, _ = attempt(rival)
    assert result.outcome is Outcome.UNCHANGED
    assert result.record == PublicationRecord(1, Cut.through(10), 1, "rival-1")


def test_gives_up_when_every_write_loses() -> None:
    store = stream()
    advance(store, "A", Cut.through(1))
    advance(store, "B", Cut.through(1))
    bump = iter(range(2, 100))

    def rival() -> None:
        value = next(bump)
        advance(store, "A", Cut.through(value))
        advance(store, "B", Cut.through(value))
        Publisher(store, "s", f"rival{value}").attempt()
        advance(store, "A", Cut.through(value + 1000))
        advance(store, "B", Cut.through(value + 1000))

    result, _ = attempt(BeforeWrite(store, rival, n=100), max_retries=2)
    assert result.outcome is Outcome.GAVE_UP and result.attempts == 3
    assert result.record is not None and result.record.op_id == "rival4-1"


# --- lost responses: the four cases of Materialize #12797 ---------------------------------


class LoseFirstWrite:
    """The first write's response is lost: applied or not, and maybe a rival moves first."""

    def __init__(self, inner: MemoryStore, applied: bool, meanwhile: Callable[[], object]) -> None:
        self.inner = inner
        self.applied = applied
        self.meanwhile = meanwhile
        self.fired = False

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def write_publication(self, *args: Any) -> PublicationWrite:
        if self.fired:
            return self.inner.write_publication(*args)
        self.fired = True
        if self.applied:
            self.inner.write_publication(*args)
        self.meanwhile()
        raise IndefiniteStoreError("response lost")


def _lost_setup() -> MemoryStore:
    store = stream()
    advance(store, "A", Cut.through(10))
    advance(store, "B", Cut.through(10))
    return store


def _rival_advances(store: MemoryStore) -> Callable[[], object]:
    def rival() -> None:
        advance(store, "A", Cut.through(40))
        advance(store, "B", Cut.through(40))
        assert Publisher(store, "s", "rival").attempt().outcome is Outcome.PUBLISHED

    return rival


def test_lost_response_applied_no_rival_is_confirmed_and_attributed() -> None:
    store = _lost_setup()
    result, _ = attempt(LoseFirstWrite(store, True, lambda: None))
    assert result.outcome is Outcome.CONFIRMED and result.attributed
    assert result.record == PublicationRecord(1, Cut.through(10), 1, "w-1")


def test_lost_response_applied_then_rival_advanced_is_confirmed_not_attributed() -> None:
    store = _lost_setup()
    result, _ = attempt(LoseFirstWrite(store, True, _rival_advances(store)))
    assert result.outcome is Outcome.CONFIRMED and not result.attributed
    assert result.record == PublicationRecord(1, Cut.through(40), 2, "rival-1")
    assert result.proposal == Cut.through(10)


def test_lost_response_not_applied_no_rival_recomputes_and_publishes() -> None:
    store = _lost_setup()
    result, recording = attempt(LoseFirstWrite(store, False, lambda: None))
    assert result.outcome is Outcome.PUBLISHED and result.attempts == 2
    assert result.record == PublicationRecord(1, Cut.through(10), 1, "w-2")
    ops = [c.op for c in recording.calls]
    # The authoritative read comes right after the lost write, before any retry.
    assert ops[ops.index("write_publication") + 1] == "read_publication"


def test_lost_response_not_applied_rival_advanced_is_confirmed_not_attributed() -> None:
    store = _lost_setup()
    result, _ = attempt(LoseFirstWrite(store, False, _rival_advances(store)))
    assert result.outcome is Outcome.CONFIRMED and not result.attributed
    assert result.record == PublicationRecord(1, Cut.through(40), 1, "rival-1")


def test_lost_response_and_rival_behind_proposal_is_retried_not_confirmed() -> None:
    """A rival's record that is ahead of the old one but behind ours proves nothing."""
    store = stream()
    advance(store, "A", Cut.through(10))
    advance(store, "B", Cut.through(10))
    Publisher(store, "s", "first").attempt()
    advance(store, "A", Cut.through(50))
    advance(store, "B", Cut.through(50))

    def rival() -> None:  # a slow rival that read checkpoints at 20
        store.write_publication("s", 1, 1, Cut.through(20), "slow-1")

    result, _ = attempt(LoseFirstWrite(store, False, rival))
    assert result.outcome is Outcome.PUBLISHED
    assert result.record == PublicationRecord(1, Cut.through(50), 3, "w-2")


def test_lost_response_then_epoch_changed_applies_the_cutover_rule() -> None:
    store = _lost_setup()

    def reshard() -> None:
        store.write_membership("s", members(2, ("C",)))
        advance(store, "C", Cut.through(90), epoch=2)
        Publisher(store, "s", "rival", Policy.RESET).attempt()

    result, _ = attempt(LoseFirstWrite(store, False, reshard))
    assert result.outcome is Outcome.UNCHANGED
    assert (result.epoch, result.cut) == (2, Cut.through(90))


def test_lost_response_and_unreadable_record_gives_up_honestly() -> None:
    store = _lost_setup()
    faulty = FaultyStore(
        store, plan={3: FaultKind.LOSE_AFTER, **{n: FaultKind.LOSE_BEFORE for n in range(4, 9)}}
    )
    result, _ = attempt(faulty, max_retries=3)
    assert result.outcome is Outcome.GAVE_UP
    # It knows only the record it read before writing; it does not claim the write.
    assert result.record == PublicationRecord(1) and not result.attributed
    assert store.read_publication("s") == PublicationRecord(1, Cut.through(10), 1, "w-1")


def test_read_timeouts_are_retried_within_budget() -> None:
    store = _lost_setup()
    faulty = FaultyStore(store, plan={0: FaultKind.LOSE_BEFORE, 3: FaultKind.LOSE_BEFORE})
    result, _ = attempt(faulty)
    assert result.outcome is Outcome.PUBLISHED
    assert [e.op for e in faulty.events] == ["read_publication", "read_merge_summary"]


def test_read_timeouts_past_budget_give_up() -> None:
    store = _lost_setup()
    faulty = FaultyStore(store, lose_before=1.0)
    result, _ = attempt(faulty, max_retries=2)
    assert result.outcome is Outcome.GAVE_UP and result.record is None and result.epoch is None
    assert len(faulty.events) == 3


# --- membership cutover ------------------------------------------------------------------


def _resharded(policy: Policy) -> tuple[MemoryStore, PublishResult]:
    """Epoch 1 (A, B) published through 50; epoch 2 reshards into (C, D) starting lower."""
    store = stream()
    advance(store, "A", Cut.through(50))
    advance(store, "B", Cut.through(60))
    assert attempt(store, policy)[0].cut == Cut.through(50)
    store.write_membership("s", members(2, ("C", "D")))
    advance(store, "C", Cut.before(20), epoch=2)
    # D has no epoch-2 checkpoint yet: the first e2 claim needs every member.
    result, _ = attempt(store, policy)
    assert result.outcome is Outcome.WITHHELD
    assert result.reason is WithheldReason.MISSING_CHECKPOINT
    advance(store, "D", Cut.through(70), epoch=2)
    return store, attempt(store, policy)[0]


def test_monotone_cutover_waits_until_the_new_epoch_catches_up() -> None:
    store, result = _resharded(Policy.MONOTONE)
    assert result.outcome is Outcome.WITHHELD
    assert result.reason is WithheldReason.CUTOVER_PENDING
    assert (result.epoch, result.cut) == (1, Cut.through(50))  # the old claim stays
    assert result.proposal == Cut.before(20)
    advance(store, "C", Cut.before(51), epoch=2)  # the same claim as through 50
    result, _ = attempt(store)
    assert result.outcome is Outcome.PUBLISHED
    assert (result.epoch, result.cut) == (2, Cut.before(51))


def test_reset_cutover_moves_to_the_new_epoch_with_a_lower_cut() -> None:
    _store, result = _resharded(Policy.RESET)
    assert result.outcome is Outcome.PUBLISHED
    assert (result.epoch, result.cut) == (2, Cut.before(20))


def test_monotone_cutover_from_nothing_moves_at_once() -> None:
    store = stream()
    store.write_membership("s", members(2, ("C",)))
    advance(store, "C", Cut.before(3), epoch=2)
    result, _ = attempt(store)
    assert result.outcome is Outcome.PUBLISHED and (result.epoch, result.cut) == (2, Cut.before(3))


def test_monotone_cutover_into_another_order_waits_for_reset() -> None:
    store = stream()
    advance(store, "A", Cut.through(5))
    advance(store, "B", Cut.through(5))
    attempt(store)
    names = StringOrder("names")
    store.write_membership("s", Membership(2, "q1", {"C": "names"}, {"names": names}))
    advance(store, "C", Cut.through("m"), epoch=2)
    result, _ = attempt(store)
    assert result.reason is WithheldReason.CUTOVER_PENDING and "reset" in result.detail
    result, _ = attempt(store, Policy.RESET)
    assert result.outcome is Outcome.PUBLISHED and result.cut == Cut.through("m")


class StaleMembership(MemoryStore):
    """A store whose membership read lags behind the record (a stale replica)."""

    def read_membership(self, stream: str, epoch: int | None = None) -> Membership:
        return super().read_membership(stream, 1 if epoch is None else epoch)


def test_never_writes_a_claim_for_an_epoch_older_than_the_record() -> None:
    store = StaleMembership()
    store.create_stream("s", members(1, ("A",)))
    advance(store, "A", Cut.through(80))
    store.write_membership("s", members(2, ("A",)))
    store.write_publication("s", 0, 2, Cut.through(3), "reset-1")
    for policy in Policy:
        result, recording = attempt(store, policy)
        assert result.outcome is Outcome.WITHHELD
        assert result.reason is WithheldReason.EPOCH_MISMATCH
        assert "write_publication" not in [c.op for c in recording.calls]


# --- logging and op ids ----------------------------------------------------------------


def test_every_decision_is_one_json_log_line(caplog: pytest.LogCaptureFixture) -> None:
    store = _lost_setup()
    caplog.set_level(logging.INFO, logger="fencepost.publisher")
    attempt(LoseFirstWrite(store, False, lambda: None))
    lines = [json.loads(r.getMessage()) for r in caplog.records if r.name == "fencepost.publisher"]
    assert [line["decision"] for line in lines] == [
        "propose",
        "lost_response_behind",
        "propose",
        "published",
    ]
    for line in lines:
        assert {"stream", "worker", "op_id", "decision", "epoch", "cut", "revision"} <= set(line)
    assert lines[-1]["op_id"] == "w-2" and lines[-1]["cut"] == "through 10"
    assert lines[-1]["revision"] == 1


def test_op_ids_are_fresh_across_attempts_and_can_start_later() -> None:
    store = stream()
    publisher = Publisher(store, "s", "host-7", first_op=40)
    for value in (1, 2, 3):
        advance(store, "A", Cut.through(value))
        advance(store, "B", Cut.through(value))
        publisher.attempt()
    assert store.read_publication("s").op_id == "host-7-42"


def test_bad_configuration_is_refused() -> None:
    store = stream()
    with pytest.raises(ValueError, match="policy"):
        Publisher(store, "s", "w", "monotone")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="max_retries"):
        Publisher(store, "s", "w", max_retries=True)
    with pytest.raises(ValueError, match="worker"):
        Publisher(store, "s", "")


# --- teeth: the assertion helper catches dishonest publishers ------------------------------


class StaleCutPublisher(Publisher):
    """After a conflict, proposes its first cut again instead of recomputing."""

    first: _Propose | None = None

    def _decide(
        self, record: PublicationRecord, membership: Membership, checkpoints: Sequence[Checkpoint]
    ) -> _Propose | _Stop:
        decision = super()._decide(record, membership, checkpoints)
        if self.first is None and isinstance(decision, _Propose):
            self.first = decision
        return self.first if self.first is not None else decision


class OptimisticPublisher(Publisher):
    """Takes a lost response as success: any reread 'confirms' the proposal."""

    @staticmethod
    def _at_or_past(order: Order, stored: Cut, proposed: Cut) -> bool:
        return True


def test_check_attempt_catches_a_publisher_reusing_a_stale_cut() -> None:
    store = stream()
    advance(store, "A", Cut.through(10))
    advance(store, "B", Cut.through(10))

    def rival() -> None:
        advance(store, "A", Cut.through(5 + 10))
        advance(store, "B", Cut.through(5 + 10))
        Publisher(store, "s", "rival").attempt()
        advance(store, "A", Cut.through(30))
        advance(store, "B", Cut.through(30))

    recording = RecordingStore(BeforeWrite(store, rival))
    result = StaleCutPublisher(recording, "s", "w").attempt()
    with pytest.raises(AssertionError, match="stale or invented cut"):
        check_attempt(recording.calls, result)


def test_check_attempt_catches_a_publisher_taking_a_lost_response_as_success() -> None:
    store = _lost_setup()
    recording = RecordingStore(LoseFirstWrite(store, False, lambda: None))
    result = OptimisticPublisher(recording, "s", "w").attempt()
    assert result.outcome is Outcome.CONFIRMED  # the lie
    with pytest.raises(AssertionError, match="behind"):
        check_attempt(recording.calls, result)
