"""The public step-by-step API and the steps scenarios need: scripted pages, explicit
certifications and misconfigurations, crashing one worker mid-request."""

from __future__ import annotations

import sys

import pytest

from fencepost.harness import (
    Answer,
    EpochSetup,
    EventSpec,
    Ingest,
    PartitionSetup,
    Publish,
    Reshard,
    Rule,
    WorldSetup,
)
from fencepost.harness.checks import judge_checkpoint_write
from fencepost.harness.runner import Run
from fencepost.harness.schedule import (
    Certify,
    Crash,
    Inject,
    ScheduleError,
    Serve,
    action_from_json,
    action_to_json,
)
from fencepost.harness.transport import SubprocessSut
from fencepost.harness.world import SetupError, World
from fencepost.judge.values import NOTHING, Checkpoint, Cut, Finality, Order
from fencepost.sut.adapter import InProcessSut

LSN = Order.integer("lsn", False)

#: Two events share 500 (Debezium DBZ-5915); e3 is not final at the start.
WORLD = WorldSetup(
    order=LSN,
    epochs=(
        EpochSetup(
            1,
            (
                PartitionSetup(
                    "A", (EventSpec("e1", 500), EventSpec("e2", 500), EventSpec("e3", 600)), final=2
                ),
                PartitionSetup("B", (EventSpec("b1", 100),)),
            ),
        ),
        EpochSetup(2, (PartitionSetup("A", ()), PartitionSetup("B", ()))),
    ),
    publishers=("p1",),
    readers=("r1",),
    env_checkpoints=True,
)


def drive(run: Run, worker: str) -> None:
    """Answer ``worker``'s calls until its request ends (or the run stops)."""
    while not run.stopped and run.pending_call(worker) is not None:
        assert run.execute(Answer(worker))


def test_the_step_api_reports_pending_calls_and_ends_as_data() -> None:
    with Run(InProcessSut(), WORLD) as run:
        run.start()
        assert not run.busy("p1") and run.pending_call("p1") is None
        assert run.last_end("p1") is None
        assert run.execute(Publish("p1"))
        pending = run.pending_call("p1")
        assert pending is not None
        assert (pending.worker, pending.request_kind, pending.op) == (
            "p1",
            "publish",
            "read_publication",
        )
        assert run.busy("p1")
        drive(run, "p1")
        end = run.last_end("p1")
        assert end is not None and not run.busy("p1")
        assert (end.kind, end.request_id) == ("publish", pending.request_id)
        assert (end.outcome, end.reason, end.epoch, end.cut) == (
            "withheld",
            "missing_checkpoint",
            1,
            NOTHING,
        )
        snap = run.snapshot()
        assert snap.epoch == 1 and snap.writer is None
        assert snap.checkpoints == {"A": None, "B": None}
        assert snap.unfinal == {"A": ("e3",), "B": ()}
    assert run.finish().ok


def test_explicit_certify_reaches_cuts_the_next_true_cut_never_names() -> None:
    with Run(InProcessSut(), WORLD) as run:
        run.start()
        # before 500 ahead of A's first event, then both endpoint kinds at 500.
        for cut in (Cut.before(500), Cut.through(500)):
            assert run.execute(Certify("A", cut))
            stored = run.snapshot().checkpoints["A"]
            assert stored is not None and stored.cut == cut
        assert not run.possible(Certify("A", Cut.before(500))), "an honest reader never goes back"
        assert not run.possible(Certify("A", Cut.through(500))), "nor stays"
        assert run.execute(Certify("B", Cut.through(100)))
        assert run.execute(Publish("p1"))
        drive(run, "p1")
        end = run.last_end("p1")
        assert end is not None and (end.outcome, end.cut) == ("published", Cut.through(100))
        assert run.snapshot().writer == "p1"
        # Certifying through 600 finalizes e3 and records its outcome as it goes.
        assert run.execute(Certify("A", Cut.through(600)))
        assert run.snapshot().unfinal["A"] == ()
    assert run.finish().ok


def test_a_certified_checkpoint_is_judged_like_a_sut_write() -> None:
    # The judgement run after an explicit certify flags an untrue checkpoint: shown
    # on the world directly, a final cut covering e3 before the source finalized it.
    world = World.create(WORLD)
    untrue = Checkpoint("A", Cut.through(600), None, 1, "q1", 1, Finality.FINAL)
    world.final_claims[(1, "A")] = Cut.through(600)
    world.outcomes.update({"e1": "processed", "e2": "processed", "e3": "processed"})
    stored = world.store_checkpoint((1, "A"), untrue)
    found = judge_checkpoint_write(world, (1, "A"), None, False, stored)
    assert [rule for rule, _ in found] == [Rule.CHECKPOINT_TRUTH]
    assert "e3" in found[0][1] and "not final" in found[0][1]


def scripted(claim: Cut, final: bool = True) -> list[Serve]:
    return [
        Serve("A", None, ("e1",), "t1", Cut.before(500), True),
        Serve("A", "t1", ("e2", "e3"), None, claim, final),
    ]


def test_scripted_pages_answer_fetches_and_a_true_claim_is_certified() -> None:
    with Run(InProcessSut(), WORLD) as run:
        run.start()
        for step in scripted(Cut.through(500)):
            assert run.execute(step)
        assert run.execute(Ingest("r1", "A"))
        assert run.execute(Answer("r1"))  # read_checkpoint
        assert not run.possible(Answer("r1", "empty")), "the script decides the page's shape"
        drive(run, "r1")
        end = run.last_end("r1")
        assert end is not None and (end.kind, end.cut) == ("ingest", Cut.through(500))
        stored = run.snapshot().checkpoints["A"]
        assert stored is not None and stored.cut == Cut.through(500)
    result = run.finish()
    assert result.ok, result.first
    fetched = [
        t.text for t in result.transcript if '"fetch_page"' in t.text and t.direction == "<-"
    ]
    assert any('"token":"t1"' in t.replace(" ", "") for t in fetched), "the scripted token is used"


def test_an_untrue_scripted_claim_is_flagged_by_the_checks() -> None:
    # The provider claims, final, through 600 although e3 is not final at the source:
    # the correct SUT trusts the claim, and the checks judge what it stored.
    with Run(InProcessSut(), WORLD) as run:
        run.start()
        for step in scripted(Cut.through(600)):
            assert run.execute(step)
        assert run.execute(Ingest("r1", "A"))
        drive(run, "r1")
    result = run.finish()
    assert result.first is not None and result.first.rule is Rule.CHECKPOINT_TRUTH
    assert "e3" in result.first.message and "not final" in result.first.message


def test_a_non_final_scripted_claim_certifies_nothing_and_lost_fetches_time_out() -> None:
    with Run(InProcessSut(), WORLD) as run:
        run.start()
        assert run.execute(Serve("A", None, ("e1", "e2"), None, Cut.through(500), False, lost=2))
        assert run.execute(Ingest("r1", "A"))
        drive(run, "r1")
        end = run.last_end("r1")
        assert end is not None and end.cut == NOTHING
    result = run.finish()
    assert result.ok, result.first
    assert sum("times out (scripted)" in s.says for s in result.steps) == 2


def test_a_page_of_events_the_partition_does_not_have_is_the_callers_mistake() -> None:
    with Run(InProcessSut(), WORLD) as run:
        run.start()
        with pytest.raises(SetupError, match="b1 not among A's events"):
            run.execute(Serve("A", None, ("b1",), None, None))
        assert run.execute(Serve("A", None, ("e1",), "t1", None))
        with pytest.raises(SetupError, match="already the provider's for A"):
            run.execute(Serve("B", "t1", ("b1",), None, None))


def test_inject_at_an_explicit_cut() -> None:
    with Run(InProcessSut(), WORLD) as run:
        run.start()
        assert run.execute(Inject("A", "provisional", Cut.before(500)))
        stored = run.snapshot().checkpoints["A"]
        assert stored is not None
        assert (stored.cut, stored.finality) == (Cut.before(500), Finality.PROVISIONAL)
        assert run.execute(Reshard())
        assert run.execute(Inject("B", "wrong_epoch", Cut.through(100)))
        misfiled = run.snapshot().checkpoints["B"]
        assert misfiled is not None and (misfiled.cut, misfiled.epoch) == (Cut.through(100), 1)
        assert not run.possible(Inject("B", "wrong_scope", Cut.through("x"))), "not of the order"
    assert run.finish().ok


def _crash_mid_ingest(factory: InProcessSut | SubprocessSut) -> None:
    with Run(factory, WORLD) as run:
        run.start()
        for step in scripted(Cut.through(500)):
            assert run.execute(step)
        assert run.execute(Ingest("r1", "A"))
        while (call := run.pending_call("r1")) is not None and call.op != "write_checkpoint":
            assert run.execute(Answer("r1"))
        assert run.execute(Crash("r1"))
        assert not run.busy("r1") and run.pending_call("r1") is None
        assert run.snapshot().checkpoints["A"] is None, "the dead write never happened"
        assert run.execute(Ingest("r1", "A"))
        drive(run, "r1")
        stored = run.snapshot().checkpoints["A"]
        assert stored is not None and stored.cut == Cut.through(500)
    result = run.finish()
    assert result.ok, result.first
    assert any('"worker":"r1.2"' in t.text.replace(" ", "") for t in result.transcript)


def test_a_crashed_reader_restarts_and_the_stores_keep_their_state() -> None:
    _crash_mid_ingest(InProcessSut())


def test_a_crashed_subprocess_is_killed_and_replaced() -> None:
    factory = SubprocessSut([sys.executable, "-m", "fencepost", "sut"], prefetch=0)
    try:
        _crash_mid_ingest(factory)
    finally:
        factory.close()
    assert len(factory.started) == 3, "one process per worker, and one for the restart"


def test_a_restarted_publisher_never_reuses_its_predecessors_op_id() -> None:
    with Run(InProcessSut(), WORLD) as run:
        run.start()
        assert run.execute(Certify("A", Cut.before(500)))
        assert run.execute(Certify("B", Cut.through(100)))
        assert run.execute(Publish("p1"))
        while (call := run.pending_call("p1")) is not None and call.op != "write_publication":
            assert run.execute(Answer("p1"))
        assert run.execute(Answer("p1", "applied_lost"))  # p1-1 is in the record
        assert run.execute(Crash("p1"))
        assert run.execute(Certify("A", Cut.through(500)))
        assert run.execute(Certify("B", Cut.before(1000)))
        assert run.execute(Publish("p1"))
        drive(run, "p1")
        end = run.last_end("p1")
        assert end is not None and (end.outcome, end.cut) == ("published", Cut.through(500))
        assert run.snapshot().record.op_id == "p1.2-1"
        assert run.snapshot().writer == "p1"
    assert run.finish().ok


@pytest.mark.parametrize(
    "action",
    [
        Certify("A", Cut.before(5)),
        Serve("A", None, ("e1",), "t1", Cut.through(5), False, 1),
        Serve("A", "t1", (), None, None),
        Crash("r1"),
        Inject("A", "wrong_scope", Cut.through(3)),
        Inject("A", "missing"),
    ],
)
def test_new_steps_round_trip_through_json(action: object) -> None:
    assert action_from_json(action_to_json(action)) == action  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"do": "certify", "partition": "A"}, "step.cut"),
        ({"do": "certify", "partition": "A", "cut": {"at": 1, "kind": "below"}}, "step.cut"),
        ({"do": "serve", "partition": "A", "events": [1]}, "step.events"),
        ({"do": "serve", "partition": "A", "final": 1}, "step.final"),
        ({"do": "serve", "partition": "A", "lost": True}, "step.lost"),
        ({"do": "serve", "partition": "A", "token": ""}, "step.token"),
        ({"do": "crash"}, "step.worker"),
        ({"do": "crash", "worker": "r1", "why": "x"}, "step.why"),
    ],
)
def test_bad_new_steps_name_the_field(data: dict[str, object], field: str) -> None:
    with pytest.raises(ScheduleError, match=field.replace(".", r"\.")):
        action_from_json(data)
