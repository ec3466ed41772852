"""The oracle's judgements, each shown to fire on a broken history and stay quiet on a sound one."""

from __future__ import annotations

from fencepost.harness.checks import (
    judge_checkpoint_write,
    judge_ingest_ok,
    judge_publication_write,
    judge_publish_ok,
    judge_state,
)
from fencepost.harness.protocol import IngestOk, PublishOk
from fencepost.harness.rules import Rule
from fencepost.harness.world import EpochSetup, EventSpec, PartitionSetup, World, WorldSetup
from fencepost.judge.decide import AttemptLog, WriteAnswer
from fencepost.judge.values import Checkpoint, Cut, Finality, Order, Record

OFFSETS = Order.integer("offsets", True)


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
    w.record = Record(1, Cut.through(1), 1, "w-1")
    assert rules(judge_state(w)) == {Rule.SOUNDNESS}  # a1 has no outcome yet
    w.outcomes["a1"] = "done"
    assert judge_state(w) == []
    w.record = Record(1, Cut.through(3), 2, "w-2")
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
    w.record = Record(2, Cut.through(1), 1, "w-1")
    assert "event m" in judge_state(w)[0][1]
    # ...but the same claim about epoch 1 is still true.
    w.record = Record(1, Cut.through(1), 1, "w-1")
    assert judge_state(w) == []
    w.record = Record(7, Cut.through(1), 1, "w-1")
    assert "no durable membership" in judge_state(w)[0][1]


# --- publication writes -------------------------------------------------------------------


def test_publication_writes_are_fenced_monotone_and_supported() -> None:
    w = world()
    w.advance("A")  # A through 1
    w.advance("B")  # B through 2 (complete)
    old = Record(1, Cut.nothing(), 0)
    ok = Record(1, Cut.through(1), 1, "w-1")
    assert judge_publication_write(w, old, ok, "monotone") == []
    back = Record(1, Cut.nothing(), 2, "w-2")
    assert rules(judge_publication_write(w, ok, back, "monotone")) == {Rule.MONOTONE_PUBLICATION}
    older = Record(0, Cut.nothing(), 2, "w-2")
    assert Rule.EPOCH_FENCE in rules(judge_publication_write(w, ok, older, "reset"))
    beyond = Record(1, Cut.through(5), 2, "w-2")
    assert rules(judge_publication_write(w, ok, beyond, "monotone")) == {Rule.CERTIFIED_SUPPORT}
    # A certified through 1, which on offsets is before 2: through 2 relabels it.
    relabeled = Record(1, Cut.through(2), 2, "w-2")
    assert rules(judge_publication_write(w, ok, relabeled, "monotone")) == {Rule.NO_RELABELING}


def test_through_over_a_member_that_certified_before_is_relabeling() -> None:
    w = world()
    w.advance("A")
    w.advance("A")  # A before 3 (two events at 3, one enumerated)
    w.advance("B")
    assert w.certified[(1, "A")] == Cut.before(3)
    relabeled = Record(1, Cut.through(3), 1, "w-1")
    old = Record(1, Cut.nothing(), 0)
    assert rules(judge_publication_write(w, old, relabeled, "monotone")) == {Rule.NO_RELABELING}
    # On offsets, before 3 is through 2: publishing that is exactly what was certified.
    same = Record(1, Cut.through(2), 1, "w-1")
    assert judge_publication_write(w, old, same, "monotone") == []


def test_cutover_regression_only_matters_under_monotone() -> None:
    w = world()
    w.outcomes.update({"a1": "x", "m": "x"})
    w.reshard()
    w.advance("A")  # epoch 2: A before 1 (m and a1 share 1)
    old = Record(1, Cut.through(2), 3, "w-3")
    lower = Record(2, Cut.before(1), 4, "w-4")
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
# The outcome rules themselves are the judge's (tests/judge/test_decide.py); here the
# harness's reply reaches them with the judge's verdict translated to the harness's rule.


def test_publish_ok_is_judged_against_the_attempt_log() -> None:
    log = AttemptLog("monotone")
    log.show_record(Record(1, Cut.through(2), 3))
    log.wrote("w-1", 1, Cut.through(4), WriteAnswer.LOST)
    reply = PublishOk(1, "published", 1, Cut.through(4), None)
    assert rules(judge_publish_ok(OFFSETS, log, reply)) == {Rule.LOST_RESPONSE_HONESTY}
