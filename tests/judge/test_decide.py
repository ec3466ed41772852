"""The judge's outcome rules: each fires on a dishonest attempt and stays quiet on an honest one.

Every rule is also checked against the choices a correct implementation may make
(docs/conformance.md, "Choices a correct implementation may make"): a test named
``test_choice_*`` is a correct attempt the rule must accept.
"""

from __future__ import annotations

import pytest

from fencepost.judge.decide import AttemptLog, Reported, WriteAnswer, decide, judge_outcome
from fencepost.judge.merge import WithheldReason
from fencepost.judge.properties import Property, judge_restated_claim
from fencepost.judge.values import Checkpoint, Cut, Membership, Order, Record

OFFSETS = Order.integer("offsets", True)
M1 = Membership(1, "q1", {"A": "offsets", "B": "offsets"}, {"offsets": OFFSETS})
M2 = Membership(2, "q1", {"A": "offsets"}, {"offsets": OFFSETS})


def final(partition: str, cut: Cut, epoch: int = 1) -> Checkpoint:
    return Checkpoint(partition, cut, None, 1, "q1", epoch)


def props(log: AttemptLog, reported: Reported) -> set[Property]:
    return {p for p, _ in judge_outcome(OFFSETS, log, reported)}


def test_decisions_follow_sections_5_and_6() -> None:
    record = Record(1, Cut.through(2), 3)
    both = (final("A", Cut.through(4)), final("B", Cut.through(3)))
    assert decide(record, M1, both, "monotone").kind == "write"
    behind = (final("A", Cut.through(2)), final("B", Cut.through(3)))
    assert decide(record, M1, behind, "monotone").kind == "unchanged"
    missing = (final("A", Cut.through(4)),)
    assert decide(record, M1, missing, "monotone").reason is WithheldReason.MISSING_CHECKPOINT
    lower = (final("A", Cut.through(1), epoch=2),)
    assert decide(record, M2, lower, "monotone").reason is WithheldReason.CUTOVER_PENDING
    assert decide(record, M2, lower, "reset").kind == "write"
    assert decide(Record(3), M2, lower, "reset").reason is WithheldReason.EPOCH_MISMATCH


def test_published_needs_an_acknowledged_write_of_the_same_claim() -> None:
    log = AttemptLog("monotone")
    log.show_record(Record(1))
    log.wrote("w-1", 1, Cut.through(2), WriteAnswer.LOST)
    reported = Reported("published", 1, Cut.through(2))
    assert props(log, reported) == {Property.LOST_RESPONSE_HONESTY}
    log.wrote("w-2", 1, Cut.before(3), WriteAnswer.APPLIED)
    assert props(log, reported) == set()  # through 2 == before 3 on offsets
    assert props(log, Reported("published", 1, Cut.through(3))) == {Property.HONEST_OUTCOME}


def test_published_must_write_ahead_of_the_record_it_replaced() -> None:
    """Section 5: a write in the record's epoch is strictly ahead of it. before 10 over
    through 9 on offsets restates the record's claim (a comparison that ignores the
    exact successor makes it); the attempt should have ended unchanged. One rule, at the
    write (``judge_restated_claim``, which the harness applies to every accepted write)."""
    old = Record(1, Cut.through(9), 3)
    restated = judge_restated_claim(OFFSETS, old, Record(1, Cut.before(10), 4), "w-1")
    assert [p for p, _ in restated] == [Property.HONEST_OUTCOME]
    assert judge_restated_claim(OFFSETS, old, Record(1, Cut.through(10), 4), "w-1") == []
    # A cutover to a newer epoch may write the same cut (section 6: at least the record).
    assert judge_restated_claim(OFFSETS, old, Record(2, Cut.before(10), 4), "w-1") == []


def test_confirmed_needs_a_later_record_showing_the_claim() -> None:
    log = AttemptLog("monotone")
    log.show_record(Record(1, Cut.nothing(), 0))
    log.wrote("w-1", 1, Cut.through(4), WriteAnswer.LOST)
    reported = Reported("confirmed", 1, Cut.through(4))
    assert props(log, reported) == {Property.LOST_RESPONSE_HONESTY}
    log.show_record(Record(1, Cut.through(3), 1, "other-1"))  # the revision moved, behind
    assert props(log, reported) == {Property.LOST_RESPONSE_HONESTY}
    log.show_record(Record(1, Cut.through(5), 2, "other-2"))  # at or past: present
    assert props(log, reported) == set()
    no_write = AttemptLog("monotone")
    no_write.show_record(Record(1, Cut.through(5), 2))
    assert props(no_write, reported) == {Property.LOST_RESPONSE_HONESTY}


def test_confirmed_may_report_the_proposal_or_the_record_but_nothing_else() -> None:
    log = AttemptLog("monotone")
    log.show_record(Record(1))
    log.wrote("w-1", 1, Cut.through(4), WriteAnswer.APPLIED_LOST)
    log.show_record(Record(1, Cut.through(6), 2, "other-1"))
    assert props(log, Reported("confirmed", 1, Cut.through(4))) == set()
    assert props(log, Reported("confirmed", 1, Cut.through(6))) == set()
    assert props(log, Reported("confirmed", 1, Cut.through(7))) == {Property.LOST_RESPONSE_HONESTY}
    assert props(log, Reported("confirmed", 1, Cut.through(3))) == {Property.LOST_RESPONSE_HONESTY}


def test_unchanged_and_withheld_must_follow_from_the_latest_view() -> None:
    log = AttemptLog("monotone")
    log.show_record(Record(1, Cut.through(2), 3))
    log.read_membership(M1)
    log.read_checkpoints(1, (final("A", Cut.through(4)), final("B", Cut.through(3))))
    found = judge_outcome(OFFSETS, log, Reported("unchanged", 1, Cut.through(2)))
    assert "decide write through 3" in found[0][1]
    log.read_checkpoints(1, (final("A", Cut.through(4)),))
    right = Reported("withheld", 1, Cut.through(2), "missing_checkpoint")
    assert props(log, right) == set()
    assert props(log, Reported("withheld", 1, Cut.through(2), "no_coverage")) == {
        Property.HONEST_OUTCOME
    }
    elsewhere = judge_outcome(
        OFFSETS, log, Reported("withheld", 1, Cut.through(1), "missing_checkpoint")
    )
    assert "the latest record it was shown" in elsewhere[0][1]


def test_a_decision_needs_the_checkpoints_of_the_membership_epoch() -> None:
    """Section 5 (found by a clean-room implementation that read the checkpoints of the
    record's epoch + 1 on a cutover that skipped epoch 2): with the membership at epoch 3
    and checkpoints of epoch 2 read, `withheld missing_checkpoint` agrees with what was
    read but not with what the attempt must read; reading epoch 3's decides."""
    m3 = Membership(3, "q1", {"A": "offsets"}, {"offsets": OFFSETS})
    log = AttemptLog("monotone")
    log.show_record(Record(1, Cut.through(2), 3))
    log.read_membership(m3)
    log.read_checkpoints(2, ())
    held = Reported("withheld", 1, Cut.through(2), "missing_checkpoint")
    found = judge_outcome(OFFSETS, log, held)
    assert [p for p, _ in found] == [Property.HONEST_OUTCOME]
    assert "checkpoints of epoch 2" in found[0][1] and "epoch 3" in found[0][1]
    log.read_checkpoints(3, ())
    assert props(log, held) == set()
    # A membership older than the record decides epoch_mismatch whatever was read.
    stale = AttemptLog("monotone")
    stale.show_record(Record(2, Cut.through(2), 3))
    stale.read_membership(M1)
    stale.read_checkpoints(2, ())
    assert props(stale, Reported("withheld", 2, Cut.through(2), "epoch_mismatch")) == set()


def test_choice_unchanged_decided_from_the_record_a_conflict_carried() -> None:
    """A conflict reply carries the current record: deciding from it is honest."""
    log = AttemptLog("monotone")
    log.show_record(Record(1, Cut.nothing(), 0))
    log.read_membership(M1)
    log.read_checkpoints(1, (final("A", Cut.through(1)), final("B", Cut.through(1))))
    log.wrote("w-1", 1, Cut.through(1), WriteAnswer.CONFLICT)
    log.show_record(Record(1, Cut.through(1), 1, "other-1"), "conflict")
    assert props(log, Reported("unchanged", 1, Cut.through(1))) == set()
    # ... and judging it against the older read instead would be wrong:
    assert props(log, Reported("unchanged", 1, Cut.nothing())) == {Property.HONEST_OUTCOME}


def test_gave_up_needs_trouble_and_a_record_it_was_shown() -> None:
    log = AttemptLog("monotone")
    log.show_record(Record(1, Cut.through(2), 3))
    reported = Reported("gave_up", 1, Cut.through(2))
    assert props(log, reported) == {Property.HONEST_OUTCOME}
    log.trouble()
    assert props(log, reported) == set()
    invented = judge_outcome(OFFSETS, log, Reported("gave_up", 1, Cut.through(9)))
    assert "never shown" in invented[0][1]
    assert props(log, Reported("gave_up", None, Cut.nothing())) == set()


def test_choice_gave_up_on_the_record_a_conflict_carried() -> None:
    log = AttemptLog("monotone")
    log.show_record(Record(1))
    log.wrote("w-1", 1, Cut.through(1), WriteAnswer.CONFLICT)
    log.show_record(Record(1, Cut.through(2), 1, "other"), "conflict")
    assert props(log, Reported("gave_up", 1, Cut.through(2))) == set()


@pytest.mark.parametrize("outcome", ["unchanged", "withheld"])
def test_deciding_without_reads_is_dishonest(outcome: str) -> None:
    reason = "no_coverage" if outcome == "withheld" else None
    found = judge_outcome(
        OFFSETS, AttemptLog("monotone"), Reported(outcome, 1, Cut.nothing(), reason)
    )
    assert "without having read" in found[0][1]
