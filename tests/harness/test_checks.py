"""The oracle's judgements, each shown to fire on a broken history and stay quiet on a sound one."""

from __future__ import annotations

import pytest

from fencepost.harness.checks import (
    AttemptLog,
    WriteSeen,
    expected_decision,
    judge_checkpoint_write,
    judge_ingest_ok,
    judge_publication_write,
    judge_publish_ok,
    judge_state,
)
from fencepost.harness.protocol import IngestOk, PublishOk
from fencepost.harness.rules import Rule
from fencepost.harness.world import EpochSetup, EventSpec, PartitionSetup, World, WorldSetup
from fencepost.impl.cuts import Cut
from fencepost.impl.merge import WithheldReason
from fencepost.impl.orders import IntegerOrder
from fencepost.impl.records import Checkpoint, Finality, Membership, PublicationRecord

OFFSETS = IntegerOrder("offsets", True)


def world(env: bool = True) -> World:
    setup = WorldSetup(
        order=OFFSETS,
        epochs=(
            EpochSetup(
                1,
                (
                    PartitionSetup(
                        "A", (EventSpec("a1", 1), EventSpec("a2", 3), EventSpec("a3", 3))
                    ),
                    PartitionSetup("B", (EventSpec("b1", 2),)),
                ),
            ),
            EpochSetup(2, (PartitionSetup("A", (EventSpec("a1", 1), EventSpec("m", 1))),)),
        ),
        publishers=("w",) if env else (),
        readers=() if env else ("r",),
        env_checkpoints=env,
    )
    return World.create(setup)


def rules(findings: list[tuple[Rule, str]]) -> set[Rule]:
    return {rule for rule, _ in findings}


# --- soundness ---------------------------------------------------------------------------


def test_soundness_needs_final_events_with_outcomes() -> None:
    w = world()
    w.record = PublicationRecord(1, Cut.through(1), 1, "w-1")
    assert rules(judge_state(w)) == {Rule.SOUNDNESS}  # a1 has no outcome yet
    w.outcomes["a1"] = "done"
    assert judge_state(w) == []
    w.record = PublicationRecord(1, Cut.through(3), 2, "w-2")
    findings = judge_state(w)
    assert rules(findings) == {Rule.SOUNDNESS}
    assert "a2" in findings[0][1] and "b1" in findings[0][1]
    w.truth[(1, "A")].final = 1
    w.outcomes.update({"a2": "x", "a3": "x", "b1": "x"})
    assert "not final" in judge_state(w)[0][1]


def test_soundness_judges_the_record_against_its_own_epoch() -> None:
    w = world()
    w.outcomes["a1"] = "done"
    w.reshard()
    # Epoch 2 moved event m to A at 1, without an outcome: through 1 is false there...
    w.record = PublicationRecord(2, Cut.through(1), 1, "w-1")
    assert "event m" in judge_state(w)[0][1]
    # ...but the same claim about epoch 1 is still true.
    w.record = PublicationRecord(1, Cut.through(1), 1, "w-1")
    assert judge_state(w) == []
    w.record = PublicationRecord(7, Cut.through(1), 1, "w-1")
    assert "no durable membership" in judge_state(w)[0][1]


# --- publication writes -------------------------------------------------------------------


def test_publication_writes_are_fenced_monotone_and_supported() -> None:
    w = world()
    w.advance("A")  # A through 1
    w.advance("B")  # B through 2 (complete)
    old = PublicationRecord(1, Cut.nothing(), 0)
    ok = PublicationRecord(1, Cut.through(1), 1, "w-1")
    assert judge_publication_write(w, old, ok, "monotone") == []
    back = PublicationRecord(1, Cut.nothing(), 2, "w-2")
    assert rules(judge_publication_write(w, ok, back, "monotone")) == {Rule.MONOTONE_PUBLICATION}
    older = PublicationRecord(0, Cut.nothing(), 2, "w-2")
    assert Rule.EPOCH_FENCE in rules(judge_publication_write(w, ok, older, "reset"))
    beyond = PublicationRecord(1, Cut.through(5), 2, "w-2")
    assert rules(judge_publication_write(w, ok, beyond, "monotone")) == {Rule.CERTIFIED_SUPPORT}
    # A certified through 1, which on offsets is before 2: through 2 relabels it.
    relabeled = PublicationRecord(1, Cut.through(2), 2, "w-2")
    assert rules(judge_publication_write(w, ok, relabeled, "monotone")) == {Rule.NO_RELABELING}


def test_through_over_a_member_that_certified_before_is_relabeling() -> None:
    w = world()
    w.advance("A")
    w.advance("A")  # A before 3 (two events at 3, one enumerated)
    w.advance("B")
    assert w.certified[(1, "A")] == Cut.before(3)
    relabeled = PublicationRecord(1, Cut.through(3), 1, "w-1")
    old = PublicationRecord(1, Cut.nothing(), 0)
    assert rules(judge_publication_write(w, old, relabeled, "monotone")) == {Rule.NO_RELABELING}
    # On offsets, before 3 is through 2: publishing that is exactly what was certified.
    same = PublicationRecord(1, Cut.through(2), 1, "w-1")
    assert judge_publication_write(w, old, same, "monotone") == []


def test_cutover_regression_only_matters_under_monotone() -> None:
    w = world()
    w.outcomes.update({"a1": "x", "m": "x"})
    w.reshard()
    w.advance("A")  # epoch 2: A before 1 (m and a1 share 1)
    old = PublicationRecord(1, Cut.through(2), 3, "w-3")
    lower = PublicationRecord(2, Cut.before(1), 4, "w-4")
    assert rules(judge_publication_write(w, old, lower, "monotone")) == {Rule.MONOTONE_PUBLICATION}
    assert judge_publication_write(w, old, lower, "reset") == []


# --- checkpoint writes --------------------------------------------------------------------


def cp(cut: Cut, token: str | None = None, **fields: object) -> Checkpoint:
    values: dict[str, object] = {
        "partition": "A",
        "generation": 1,
        "scope": "q1",
        "epoch": 1,
        "finality": Finality.FINAL,
    }
    values.update(fields)
    return Checkpoint(cut=cut, token=token, **values)  # type: ignore[arg-type]


def test_a_checkpoint_is_true_only_under_a_final_claim_with_outcomes() -> None:
    w = world(env=False)
    key = (1, "A")
    assert rules(judge_checkpoint_write(w, key, None, False, cp(Cut.through(1)))) == {
        Rule.CHECKPOINT_TRUTH
    }
    page = w.page(1, "A", 0, "ok")  # a1, a2: final claim before 3
    assert page.claim is not None and page.claim.final
    missing = judge_checkpoint_write(w, key, None, False, cp(Cut.before(3)))[0][1]
    assert "events a1 in its downset" in missing  # a2 sits at 3: outside before 3
    w.outcomes.update({"a1": "x", "a2": "x"})
    assert judge_checkpoint_write(w, key, None, False, cp(Cut.before(3), page.next_token)) == []
    assert (
        "final claims only up to"
        in judge_checkpoint_write(w, key, None, False, cp(Cut.through(3)))[0][1]
    )
    provisional = cp(Cut.through(3), finality=Finality.PROVISIONAL)
    assert judge_checkpoint_write(w, key, None, False, provisional) == []


def test_checkpoint_labels_tokens_and_monotonicity() -> None:
    w = world(env=False)
    key = (1, "A")
    w.page(1, "A", 0, "ok")
    w.outcomes.update({"a1": "x", "a2": "x"})
    labelled = judge_checkpoint_write(w, key, None, False, cp(Cut.through(1), scope="q2", epoch=2))
    assert rules(labelled) == {Rule.CHECKPOINT_TRUTH} and "scope 'q2'" in labelled[0][1]
    forged = judge_checkpoint_write(w, key, None, False, cp(Cut.through(1), "A@1:9#99"))
    assert "never issued" in forged[0][1]
    newer = cp(Cut.before(3), generation=2)
    back = judge_checkpoint_write(w, key, newer, False, cp(Cut.through(1), generation=3))
    assert rules(back) == {Rule.CHECKPOINT_MONOTONICITY}
    assert judge_checkpoint_write(w, key, newer, True, cp(Cut.through(1), generation=3)) == []


def test_ingest_report_is_bounded_by_the_stored_checkpoint() -> None:
    w = world(env=False)
    assert judge_ingest_ok(w, (1, "A"), IngestOk(1, Cut.nothing())) == []
    assert rules(judge_ingest_ok(w, (1, "A"), IngestOk(1, Cut.through(1)))) == {Rule.INGEST_REPORT}


# --- publish_ok -----------------------------------------------------------------------------

M1 = Membership(1, "q1", {"A": "offsets", "B": "offsets"}, {"offsets": OFFSETS})
M2 = Membership(2, "q1", {"A": "offsets"}, {"offsets": OFFSETS})


def final(partition: str, cut: Cut, epoch: int = 1) -> Checkpoint:
    return Checkpoint(partition, cut, None, 1, "q1", epoch)


def test_expected_decisions_follow_sections_5_and_6() -> None:
    record = PublicationRecord(1, Cut.through(2), 3)
    both = (final("A", Cut.through(4)), final("B", Cut.through(3)))
    assert expected_decision(record, M1, both, "monotone").kind == "write"
    behind = (final("A", Cut.through(2)), final("B", Cut.through(3)))
    assert expected_decision(record, M1, behind, "monotone").kind == "unchanged"
    missing = (final("A", Cut.through(4)),)
    assert (
        expected_decision(record, M1, missing, "monotone").reason
        is WithheldReason.MISSING_CHECKPOINT
    )
    lower = (final("A", Cut.through(1), epoch=2),)
    assert expected_decision(record, M2, lower, "monotone").reason is WithheldReason.CUTOVER_PENDING
    assert expected_decision(record, M2, lower, "reset").kind == "write"
    assert (
        expected_decision(PublicationRecord(3), M2, lower, "reset").reason
        is WithheldReason.EPOCH_MISMATCH
    )


def attempt(
    *, reads: list[PublicationRecord], writes: list[WriteSeen] = (), policy: str = "monotone"
) -> AttemptLog:  # type: ignore[assignment]
    log = AttemptLog(policy)
    for record in reads:
        log.read(record)
    for write in writes:
        log.writes.append(write)
    return log


def test_published_needs_an_acknowledged_write() -> None:
    lost = WriteSeen(1, "w-1", 1, Cut.through(2), "lost")
    log = attempt(reads=[PublicationRecord(1)], writes=[lost])
    reply = PublishOk(1, "published", 1, Cut.through(2), None)
    assert rules(judge_publish_ok(OFFSETS, log, reply)) == {Rule.LOST_RESPONSE_HONESTY}
    log.writes.append(WriteSeen(9, "w-2", 1, Cut.before(3), "applied"))
    assert judge_publish_ok(OFFSETS, log, reply) == []  # through 2 == before 3 on offsets
    other = PublishOk(1, "published", 1, Cut.through(3), None)
    assert rules(judge_publish_ok(OFFSETS, log, other)) == {Rule.HONEST_OUTCOME}


def test_confirmed_needs_a_later_read_showing_the_claim() -> None:
    log = AttemptLog("monotone")
    log.read(PublicationRecord(1, Cut.nothing(), 0))
    log.writes.append(WriteSeen(log.tick(), "w-1", 1, Cut.through(4), "lost"))
    reply = PublishOk(1, "confirmed", 1, Cut.through(4), None)
    assert rules(judge_publish_ok(OFFSETS, log, reply)) == {Rule.LOST_RESPONSE_HONESTY}
    log.read(PublicationRecord(1, Cut.through(3), 1, "other-1"))  # the revision moved, behind
    assert rules(judge_publish_ok(OFFSETS, log, reply)) == {Rule.LOST_RESPONSE_HONESTY}
    log.read(PublicationRecord(1, Cut.through(5), 2, "other-2"))  # at or past: present
    assert judge_publish_ok(OFFSETS, log, reply) == []
    no_write = AttemptLog("monotone")
    no_write.read(PublicationRecord(1, Cut.through(5), 2))
    assert rules(judge_publish_ok(OFFSETS, no_write, reply)) == {Rule.LOST_RESPONSE_HONESTY}


def test_unchanged_and_withheld_must_follow_from_the_last_reads() -> None:
    log = AttemptLog("monotone")
    log.read(PublicationRecord(1, Cut.through(2), 3))
    log.membership = M1
    log.checkpoints = (1, (final("A", Cut.through(4)), final("B", Cut.through(3))))
    unchanged = PublishOk(1, "unchanged", 1, Cut.through(2), None)
    assert "decide write through 3" in judge_publish_ok(OFFSETS, log, unchanged)[0][1]
    log.checkpoints = (1, (final("A", Cut.through(4)),))
    right = PublishOk(1, "withheld", 1, Cut.through(2), "missing_checkpoint")
    assert judge_publish_ok(OFFSETS, log, right) == []
    wrong = PublishOk(1, "withheld", 1, Cut.through(2), "no_coverage")
    assert rules(judge_publish_ok(OFFSETS, log, wrong)) == {Rule.HONEST_OUTCOME}
    elsewhere = PublishOk(1, "withheld", 1, Cut.through(1), "missing_checkpoint")
    assert "the record it read" in judge_publish_ok(OFFSETS, log, elsewhere)[0][1]


def test_gave_up_needs_trouble_and_a_record_it_was_shown() -> None:
    log = AttemptLog("monotone")
    log.read(PublicationRecord(1, Cut.through(2), 3))
    reply = PublishOk(1, "gave_up", 1, Cut.through(2), None)
    assert rules(judge_publish_ok(OFFSETS, log, reply)) == {Rule.HONEST_OUTCOME}
    log.troubles = 1
    assert judge_publish_ok(OFFSETS, log, reply) == []
    invented = PublishOk(1, "gave_up", 1, Cut.through(9), None)
    assert "never shown" in judge_publish_ok(OFFSETS, log, invented)[0][1]
    assert judge_publish_ok(OFFSETS, log, PublishOk(1, "gave_up", None, Cut.nothing(), None)) == []


@pytest.mark.parametrize("outcome", ["unchanged", "withheld"])
def test_deciding_without_reads_is_dishonest(outcome: str) -> None:
    reason = "no_coverage" if outcome == "withheld" else None
    reply = PublishOk(1, outcome, 1, Cut.nothing(), reason)
    assert "without having read" in judge_publish_ok(OFFSETS, AttemptLog("monotone"), reply)[0][1]
