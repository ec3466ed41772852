"""The audit's verdicts on hand-built histories: the field report's false alarms and misses
fixed (real-valued linearization points, the initial record, clean verdicts on corrupt
histories), and every anomaly the retired history checker caught still caught.

Each history's linearizability verdict is also asked of the brute-force checker, which
shares no code with the audit's search.
"""

from __future__ import annotations

import pytest
from audit_histories import INITIAL, M1, H, before, kinds, rec, run, through

from fencepost.audit import brute
from fencepost.audit.ops import Status
from fencepost.audit.register import Budget, Snapshot, replay
from fencepost.audit.run import AuditReport
from fencepost.audit.stream import StreamAudit
from fencepost.audit.verdict import LINEARIZABILITY, OP_ID_REUSE


def linearizable(h: H) -> bool:
    verdict = LINEARIZABILITY not in kinds(h)
    assert verdict == brute.linearizable(h.ops)
    return verdict


# --- the field report: coarse clocks and ties ------------------------------------------


def test_the_minimal_false_alarm_is_linearizable() -> None:
    """w1 writes 0 -> 1 over [0, 2]; r1 reads 0 over [0, 1]; r2 reads 1 over [0, 0]."""
    h = H()
    h.write("w1", 0, 2, 0, through(3), "w1-1")
    h.read("r1", 0, 1, INITIAL)
    h.read("r2", 0, 0, rec(1, through(3), 1, "w1-1"))
    assert linearizable(h)
    assert run(h).exit_code == 0


def test_a_millisecond_clock_puts_several_operations_in_one_tick() -> None:
    """Three writes and reads all at t = 5 on a coarse clock: ties order nothing."""
    h = H()
    h.write("w1", 5, 5, 0, through(1), "w1-1")
    h.read("r1", 5, 5, rec(1, through(1), 1, "w1-1"))
    h.write("w2", 5, 5, 1, through(2), "w2-1")
    h.read("r2", 5, 5, rec(1, through(2), 2, "w2-1"))
    h.read("r3", 5, 5, rec(1, through(1), 1, "w1-1"))
    assert linearizable(h)


def test_an_operation_completing_when_another_is_invoked_does_not_precede_it() -> None:
    """w completes at 3 and r is invoked at 3: r may take effect first (ties are concurrent)."""
    h = H()
    h.write("w", 1, 3, 0, through(1), "w-1")
    h.read("r", 3, 4, INITIAL)
    assert linearizable(h)


def test_strictly_earlier_completion_does_precede() -> None:
    """w completes at 2 and r is invoked at 3: r must see w's revision."""
    h = H()
    h.write("w", 1, 2, 0, through(1), "w-1")
    h.read("r", 3, 4, INITIAL)
    assert not linearizable(h)
    assert "stale read" in run(h).violations[0].message


def test_a_chain_of_zero_length_operations_at_one_time() -> None:
    h = H()
    for i in range(5):
        h.write(f"w{i}", 7, 7, i, through(i), f"w{i}-1")
    h.read("r", 7, 7, INITIAL)
    h.read("r2", 7, 7, rec(1, through(4), 5, "w4-1"))
    assert linearizable(h)


# --- the field report: misses and corrupt histories -----------------------------------


@pytest.mark.parametrize(
    "shown",
    [rec(1, through(4), 0, None), rec(1, None, 0, "ghost"), rec(7, None, 0, None)],
    ids=["a cut", "an op_id", "another epoch"],
)
def test_revision_0_is_the_initial_record(shown: object) -> None:
    h = H()
    h.read("r", 1, 2, shown)  # type: ignore[arg-type]
    assert not linearizable(h)


def test_revision_0_is_the_initial_record_even_when_the_log_begins_later() -> None:
    h = H(created=False)
    h.read("r", 1, 2, rec(1, through(4), 0, None))
    assert LINEARIZABILITY in kinds(h)


def test_a_log_that_begins_after_the_stream_was_made_starts_anywhere() -> None:
    h = H(created=False)
    h.read("r", 1, 2, rec(1, through(4), 7, "x-7"))
    h.write("w", 3, 4, 7, through(5), "w-1")
    h.read("r", 5, 6, rec(1, through(5), 8, "w-1"))
    assert run(h).exit_code == 0
    h.read("r", 7, 8, rec(1, through(4), 7, "x-7"))  # back to 7 after 8 was read
    assert LINEARIZABILITY in kinds(h)


def test_a_read_naming_an_epoch_with_no_membership_is_a_clean_verdict() -> None:
    h = H()
    h.write("w", 1, 2, 0, through(1), "w-1", epoch=9)
    report = run(h)
    assert {v.property for v in report.violations} == {"soundness"}
    assert "epoch 9" in report.violations[0].message


def test_without_the_creation_an_unknown_epoch_is_a_note() -> None:
    h = H(created=False)
    h.read("r", 1, 2, rec(9, through(1), 3, "x"))
    report = run(h)
    assert report.exit_code == 0
    assert any("epoch 9" in n for n in report.verdicts[0].notes)


# --- every anomaly the retired history checker caught ---------------------------------


def base() -> H:
    h = H()
    h.ingest_all()
    return h


def test_a_legal_history_with_overlaps_and_indefinite_writes_is_clean() -> None:
    h = base()
    h.read("p1", 20, 30, INITIAL)
    h.read("p2", 21, 31, INITIAL)
    # p1's write is indefinite but took effect (seen later); p2 loses the race.
    h.write("p1", 40, 0, 0, before(1), "p1-1", status=Status.INDEFINITE)
    h.write(
        "p2",
        41,
        60,
        0,
        through(1),
        "p2-1",
        status=Status.CONFLICT,
        current=rec(1, before(1), 1, "p1-1"),
    )
    h.read("p2", 61, 70, rec(1, before(1), 1, "p1-1"))
    h.write("p2", 71, 80, 1, through(1), "p2-2")
    # A read overlapping the write may see either version.
    h.read("p3", 72, 90, rec(1, before(1), 1, "p1-1"))
    h.read("p3", 91, 95, rec(1, through(1), 2, "p2-2"))
    # An indefinite write that never took effect is fine too.
    h.write("p1", 96, 0, 2, through(1), "p1-2", status=Status.INDEFINITE)
    assert run(h, truth=True).violations == []


def test_stale_read_after_a_newer_completed_write() -> None:
    h = base()
    h.read("p1", 20, 30, INITIAL)
    h.write("p1", 40, 50, 0, through(1), "p1-1")
    h.read("p2", 60, 70, INITIAL)  # began after the write completed
    assert LINEARIZABILITY in kinds(h)


def test_read_of_a_value_before_its_write_was_invoked() -> None:
    h = base()
    h.read("p2", 20, 30, rec(1, through(1), 1, "p1-1"))
    h.write("p1", 40, 50, 0, through(1), "p1-1")
    assert LINEARIZABILITY in kinds(h)


def test_two_writes_winning_one_revision() -> None:
    h = base()
    h.write("p1", 40, 50, 0, before(1), "p1-1")
    h.write("p2", 41, 51, 0, through(1), "p2-1")
    report = run(h)
    assert LINEARIZABILITY in {v.property for v in report.violations}
    assert any("both acknowledged as revision 1" in v.message for v in report.violations)


def test_conflict_reported_while_the_expected_revision_was_current() -> None:
    h = base()
    h.write("p1", 40, 50, 0, through(1), "p1-1", status=Status.CONFLICT, current=INITIAL)
    report = run(h)
    assert any("should have applied" in v.message for v in report.violations)


def test_a_write_reported_failed_took_effect() -> None:
    h = base()
    h.write("p1", 40, 50, 0, through(1), "p1-1", status=Status.ERROR)
    h.read("p2", 60, 70, rec(1, through(1), 1, "p1-1"))
    report = run(h)
    assert any("failed definitely" in v.message for v in report.violations)


def test_a_record_no_write_produced() -> None:
    h = base()
    h.read("p2", 60, 70, rec(1, through(1), 1, "ghost-1"))
    report = run(h)
    assert any("phantom" in v.message for v in report.violations)


def test_publication_regressing_within_an_epoch() -> None:
    h = base()
    h.write("p1", 40, 50, 0, through(1), "p1-1")
    h.write("p1", 60, 70, 1, before(1), "p1-2")
    assert "monotone_publication" in kinds(h)


def test_epoch_going_back() -> None:
    h = base()
    h.add(
        "setup",
        "write_membership",
        90,
        91,
        Status.OK,
        {"membership": M1.__class__.of(2, "q", M1.orders["offsets"], ["A", "B"])},
        None,
    )
    h.write("p1", 140, 150, 0, None, "p1-1", epoch=2)
    h.write("p1", 160, 170, 1, through(1), "p1-2")
    assert "epoch_fence" in kinds(h)


def test_relabeling_before_as_through() -> None:
    h = H()
    for i, e in enumerate(["a0", "a1", "b0", "b1"]):
        h.outcome("r", i, i + 1, e)
    h.checkpoint("r", 5, 6, "A", None, before(1))  # A certified only before 1
    h.checkpoint("r", 7, 8, "B", None, through(1))
    h.write("p1", 40, 50, 0, through(1), "p1-1")
    assert "no_relabeling" in kinds(h)


def test_publication_visible_before_the_checkpoint_backing_it() -> None:
    h = H()
    for i, e in enumerate(["a0", "a1", "b0", "b1"]):
        h.outcome("r", i, i + 1, e)
    h.write("p1", 10, 20, 0, through(1), "p1-1")
    h.checkpoint("r", 30, 40, "A", None, through(1))
    h.checkpoint("r", 30, 40, "B", None, through(1))
    assert "certified_support" in kinds(h)


def test_a_checkpoint_written_concurrently_may_back_the_publication() -> None:
    h = H()
    h.checkpoint("r", 5, 6, "B", None, through(1))
    h.checkpoint("r", 10, 30, "A", None, through(1))  # invoked before the write completed
    h.write("p1", 11, 20, 0, through(1), "p1-1")
    assert kinds(h) == set()


def test_certified_event_without_a_durable_outcome() -> None:
    h = H()
    h.outcome("r", 0, 1, "a0")  # a1 never gets an outcome
    h.checkpoint("r", 5, 6, "A", None, through(1))
    assert "checkpoint_truth" in kinds(h, truth=True)
    assert kinds(h) == set()  # without a ground truth, soundness is not decidable


def test_published_event_without_a_durable_outcome() -> None:
    h = H()
    h.checkpoint("r", 5, 6, "A", None, through(1))
    h.checkpoint("r", 5, 6, "B", None, through(1))
    h.write("p1", 10, 20, 0, through(1), "p1-1")
    assert "soundness" in kinds(h, truth=True)


def test_checkpoint_regressing() -> None:
    h = base()
    h.checkpoint("r", 20, 30, "A", 1, before(1))
    assert "checkpoint_monotonicity" in kinds(h)


@pytest.mark.parametrize("outcome", ["published", "confirmed"])
def test_attempt_claiming_success_without_proof(outcome: str) -> None:
    h = base()
    h.read("p1", 20, 30, INITIAL, attempt="a1")
    h.write("p1", 40, 0, 0, through(1), "p1-1", status=Status.INDEFINITE, attempt="a1")
    # No acknowledged write and no reread: neither published nor confirmed is known.
    h.attempt("p1", 15, 60, "a1", outcome, 1, through(1), op_id="p1-1")
    assert "lost_response_honesty" in kinds(h)


def test_confirmed_after_an_authoritative_read_is_honest() -> None:
    h = base()
    h.read("p1", 20, 30, INITIAL, attempt="a1")
    h.membership("p1", 31, 32, M1, attempt="a1")
    h.write("p1", 40, 0, 0, through(1), "p1-1", status=Status.INDEFINITE, attempt="a1")
    h.read("p1", 50, 55, rec(1, through(1), 1, "p1-1"), attempt="a1")
    h.attempt("p1", 15, 60, "a1", "confirmed", 1, through(1), op_id="p1-1")
    assert run(h).violations == []


def test_unchanged_while_the_reads_decide_a_write_is_dishonest() -> None:
    h = base()
    h.read("p1", 20, 21, INITIAL, attempt="a1")
    h.membership("p1", 22, 23, M1, attempt="a1")
    cps = tuple(op.result for op in h.ops if op.kind == "write_checkpoint")
    h.checkpoints("p1", 24, 25, 1, cps, attempt="a1")
    h.attempt("p1", 19, 26, "a1", "unchanged", 1, None)
    assert "honest_outcome" in kinds(h)


def test_an_op_id_reused_by_another_attempt() -> None:
    h = base()
    h.write("p1", 20, 21, 0, through(0), "same", attempt="a1")
    h.write("p2", 30, 31, 1, through(1), "same", attempt="a2")
    assert OP_ID_REUSE in kinds(h)
    h2 = base()
    h2.write("p1", 20, 21, 0, through(0), "one", attempt="a1")
    h2.write("p1", 30, 31, 1, through(1), "two", attempt="a1")
    assert OP_ID_REUSE not in kinds(h2)


# --- fragments, budget -------------------------------------------------------------------


def test_the_fragment_is_minimal_and_starts_from_a_state() -> None:
    h = H()
    for i in range(30):  # a long legal prefix
        h.write("w", 10 * i + 1, 10 * i + 2, i, through(i), f"w-{i}")
        h.read("r", 10 * i + 3, 10 * i + 4, rec(1, through(i), i + 1, f"w-{i}"))
    h.read("late", 400, 401, rec(1, through(3), 4, "w-3"))  # stale
    report = run(h)
    [v] = report.violations
    assert len(v.ops) <= 3
    assert "revision" in v.start
    # The fragment as the register found it: its start states and its operations.
    audit = StreamAudit("s")
    for op in sorted(h.ops, key=lambda o: (o.t0, o.worker, o.seq)):
        audit.add(op)
    audit.finish()
    failure = audit.record.failed
    assert failure is not None and [r.op for r in failure.ops] == list(v.ops)
    start = Snapshot(failure.start, ())
    assert replay(start, failure.ops, Budget()) is not None  # not linearizable from there
    for i in range(len(failure.ops)):  # without any one operation, it is
        rest = failure.ops[:i] + failure.ops[i + 1 :]
        assert replay(start, rest, Budget()) is None, f"still not linearizable without {i}"


def test_a_budget_too_small_is_undecided_not_a_verdict() -> None:
    h = H()
    for level in range(3):  # six concurrent writes with lost responses on each of 3 revisions
        for i in range(6):
            h.write(
                f"w{level}{i}",
                1,
                0,
                level,
                through(level),
                f"w{level}{i}",
                status=Status.INDEFINITE,
            )
    h.read("r", 50, 51, rec(1, through(2), 3, "w24"))
    assert run(h).exit_code == 0
    small = run(h, budget=3)
    assert small.exit_code == 4 and small.undecided and not small.violations
    assert "budget" in small.undecided[0]


def test_clock_skew_makes_operations_within_it_concurrent() -> None:
    h = H()
    h.write("w", 1, 2, 0, through(1), "w-1")
    h.read("r", 4, 5, INITIAL)  # stale by 2 time units on one clock
    assert LINEARIZABILITY in {v.property for v in run_skewed(h, 0).violations}
    assert run_skewed(h, 1).violations == []  # within 1 unit of skew: 2 + 1 < 4 - 1 is false


def run_skewed(h: H, skew: int) -> AuditReport:
    from dataclasses import replace

    from fencepost.audit.run import audit_ops

    return audit_ops([replace(o) for o in h.ops], clock_skew=skew)


def test_the_timeline_draws_ties_as_overlaps_and_lost_responses_open_ended() -> None:
    from fencepost.audit.timeline import render_text, timeline_of
    from fencepost.audit.verdict import Violation

    h = H(created=False)
    w = h.write("w", 2, 5, 0, through(1), "w-1")
    lost = h.write("lost", 3, 0, 0, through(2), "lost-1", status=Status.INDEFINITE)
    r = h.read("r", 5, 6, INITIAL)  # invoked as w completes: a tie, drawn overlapping
    text = render_text(timeline_of(Violation("x", "s", "m", (w, lost, r), (r,))))
    rows = {line.split()[0]: line for line in text.splitlines()[1:4]}
    assert rows["lost"].endswith("-->")
    assert rows["r"].index("[") < rows["w"].index("]")  # r starts before w's end is drawn
    assert "#" in rows["r"] and "#" not in rows["w"]  # the operation at fault is marked
    assert "[5, 6]  read record -> revision 0" in text and "[3, lost]" in text
