"""The model's transitions, driven step by step from outside (as the lockstep test will)."""

from __future__ import annotations

import pytest

from fencepost.model.config import default_config
from fencepost.model.cuts import NOTHING, before, through
from fencepost.model.invariants import INVARIANTS_BY_NAME, violations
from fencepost.model.machine import actions, initial, matching, step, successors
from fencepost.model.merge import merge
from fencepost.model.state import (
    CONFIRMED,
    HAVE_MEMBERSHIP,
    IDLE,
    MISSING,
    PUBLISHED,
    READING,
    SETTLING,
    Action,
    Checkpoint,
    Publisher,
    Record,
    State,
    Truth,
)


def _with_checkpoints(state: State, epoch: int, *cps: Checkpoint) -> State:
    parts = []
    for part, cp in zip(state.partitions, cps, strict=True):
        e = epoch - 1
        checkpoints = (*part.checkpoints[:e], cp, *part.checkpoints[e + 1 :])
        gens = (*part.generations[:e], 1, *part.generations[e + 1 :])
        peaks = (*part.peaks[:e], cp.cut, *part.peaks[e + 1 :])
        parts.append(part._replace(checkpoints=checkpoints, generations=gens, peaks=peaks))
    return state._replace(partitions=tuple(parts))


def _good(cut: object, epoch: int = 1) -> Checkpoint:
    assert not isinstance(cut, str)
    return Checkpoint(cut, 0, "q1", epoch, True)  # type: ignore[arg-type]


def _one(state: State, kind: str, **fields: object) -> Action:
    found = matching(state, kind, **fields)
    assert len(found) == 1, [a.describe() for a in found]
    return found[0]


def test_initial_state_matches_the_spec() -> None:
    state = initial(default_config("publication"))
    assert state.record == Record(1, NOTHING, 0, None)
    assert state.checkpoint(0, 1) is None and state.generation(0, 1) == 0
    assert state.memberships() == {1: ("A", "B")}
    assert [ev.name for ev in state.events(0, 1)] == ["A#1", "A#2"]
    assert violations(state) == []


def test_actions_and_step_are_the_same_relation() -> None:
    state = initial(default_config("publication"))
    pairs = successors(state)
    assert actions(state) == [a for a, _ in pairs]
    for action, nxt in pairs:
        assert step(state, action) == nxt
        assert action.describe() and str(action) == action.describe()
    texts = {a.describe() for a in actions(state)}
    assert "publisher p1 starts an attempt: reads the publication record" in texts
    assert any(t.startswith("ingest certifies A through 0 in epoch 1") for t in texts)


def test_step_refuses_an_action_that_is_not_enabled() -> None:
    state = initial(default_config("publication"))
    with pytest.raises(ValueError, match="not enabled"):
        step(state, Action("write_publication", "p1", epoch=1, cut=through(0), outcome="ok"))


def test_merge_publishes_the_documented_tie_representation() -> None:
    cfg = default_config("publication", successor=True, coordinates=2, events_per_partition=2)
    state = _with_checkpoints(initial(cfg), 1, _good(through(0)), _good(before(1)))
    assert merge(state, 1) == ("", through(0))
    dense = default_config("publication", coordinates=2)
    state = _with_checkpoints(initial(dense), 1, _good(before(1)), _good(through(1)))
    assert merge(state, 1) == ("", before(1))


def test_merge_checks_reasons_in_the_documented_order() -> None:
    state = initial(default_config("publication"))
    assert merge(state, 1) == ("missing_checkpoint", NOTHING)
    stale = Checkpoint(through(0), 0, "q1", 2, True)
    other = Checkpoint(through(0), 0, "q9", 1, True)
    provisional = Checkpoint(through(0), 0, "q1", 1, False)
    cases = [
        ((stale, other), "epoch_mismatch"),
        ((other, provisional), "scope_mismatch"),
        ((provisional, _good(through(0))), "unsupported_finality"),
        ((_good(through(0)), MISSING), "missing_checkpoint"),
    ]
    for cps, reason in cases:
        assert merge(_with_checkpoints(state, 1, *cps), 1)[0] == reason


@pytest.mark.parametrize(
    ("policy", "detail"), [("monotone", "cutover_pending"), ("reset", "propose")]
)
def test_cutover_policy_decides_a_lower_cut_in_a_new_epoch(policy: str, detail: str) -> None:
    state = initial(default_config("publication", policy=policy))
    state = _with_checkpoints(state, 2, _good(before(0), 2), _good(before(0), 2))
    pub = state.publishers[0]._replace(
        phase=HAVE_MEMBERSHIP, rec_epoch=1, rec_cut=through(0), rec_revision=1, mem_epoch=2
    )
    state = state._replace(
        epoch=2,
        record=Record(1, through(0), 1, "p2-1"),
        publishers=(pub, state.publishers[1]),
    )
    act = _one(state, "read_checkpoints", actor="p1", outcome="ok")
    assert act.detail == detail and act.cut == before(0)


def _ready_to_publish(lost: bool = True) -> State:
    state = initial(default_config("publication", lost_responses=lost))
    state = step(state, _one(state, "certify", partition="A", cut=through(0)))
    state = step(state, _one(state, "certify", partition="B", cut=before(0)))
    for kind in ("read_publication", "read_membership", "read_checkpoints"):
        state = step(state, _one(state, kind, actor="p1", outcome="ok"))
    return state


@pytest.mark.parametrize(
    ("outcome", "applied", "report"),
    [("lost-applied", True, CONFIRMED), ("lost-not-applied", False, "gave_up")],
)
def test_a_lost_response_is_settled_only_by_the_authoritative_read(
    outcome: str, applied: bool, report: str
) -> None:
    state = _ready_to_publish()
    state = step(state, _one(state, "write_publication", actor="p1", outcome=outcome))
    assert (state.record.cut == before(0)) is applied
    assert state.publishers[0].outcome == ""  # nothing concluded from the silence
    state = state._replace(
        publishers=(state.publishers[0]._replace(retries_left=0), *state.publishers[1:])
    )
    state = step(state, _one(state, "read_publication", actor="p1", outcome="ok"))
    assert state.publishers[0].outcome == report
    assert violations(state) == []


def test_an_acknowledged_write_publishes_and_a_stale_write_conflicts() -> None:
    state = _ready_to_publish(lost=False)
    # p2 publishes first, so p1's write names a revision that moved.
    for kind in ("read_publication", "read_membership", "read_checkpoints", "write_publication"):
        state = step(state, _one(state, kind, actor="p2", outcome="ok"))
    assert state.publishers[1].outcome == PUBLISHED and state.record.revision == 1
    conflict = _one(state, "write_publication", actor="p1", outcome="conflict")
    assert conflict.detail == "retry"
    after = step(state, conflict)
    assert after.record == state.record and after.publishers[0].rec_revision == 1


def test_a_late_ingest_write_loses_to_a_newer_checkpoint() -> None:
    state = initial(default_config("ingest", events_per_partition=1))
    state = step(state, _one(state, "finalize", partition="A"))
    for reader in ("A.r1", "A.r2"):
        state = step(state, _one(state, "read_checkpoint", actor=reader))
    fetch = [
        a
        for a in matching(state, "fetch_page", actor="A.r2")
        if a.page and a.page.claim_kind == "final"
    ]
    state = step(state, next(a for a in fetch if a.page and a.page.claim == through(0)))
    state = step(state, _one(state, "record_outcomes", actor="A.r2"))
    state = step(state, _one(state, "write_checkpoint", actor="A.r2", outcome="ok"))
    assert state.checkpoint(0, 1) is not None and state.generation(0, 1) == 1
    # A.r1 still paging from nothing: an empty page with a weaker final claim, then its write.
    fetch = [
        a
        for a in matching(state, "fetch_page", actor="A.r1")
        if a.page and a.page.claim == before(0)
    ]
    state = step(state, fetch[0])
    late = step(state, _one(state, "write_checkpoint", actor="A.r1", outcome="conflict"))
    assert late.checkpoint(0, 1) == state.checkpoint(0, 1)
    assert violations(late) == []


def test_every_invariant_reports_a_state_built_to_break_it() -> None:
    base = initial(default_config("publication"))
    unsettled = base._replace(record=Record(1, through(0), 1, "p1-1"))
    assert INVARIANTS_BY_NAME["soundness"].check(unsettled)
    assert INVARIANTS_BY_NAME["no_relabeling"].check(unsettled)
    hist = base.history._replace(peak_epoch=2, peak_cut=through(0), peak_all=through(0))
    assert INVARIANTS_BY_NAME["epoch_fence"].check(base._replace(history=hist))
    assert INVARIANTS_BY_NAME["monotone_publication"].check(base._replace(history=hist))
    liar = base.publishers[0]._replace(outcome=PUBLISHED, justified=False)
    assert INVARIANTS_BY_NAME["lost_response_honesty"].check(
        base._replace(publishers=(liar, base.publishers[1]))
    )
    false_cp = _with_checkpoints(base, 1, _good(through(0)), _good(through(0)))
    assert INVARIANTS_BY_NAME["checkpoint_truth"].check(false_cp)
    part = false_cp.partitions[0]
    settled = part._replace(truth=Truth((), 0b11, 0b11), peaks=(through(1), *part.peaks[1:]))
    regressed = false_cp._replace(partitions=(settled, false_cp.partitions[1]))
    assert INVARIANTS_BY_NAME["checkpoint_monotonicity"].check(regressed)
    publisher: Publisher = base.publishers[0]
    assert publisher.justified  # the initial report is vacuously honest


# --- the production reader: rewrites after a lost race, rereads, progress writes -----


def _page(state: State, reader: str, claim: object, start: int | None = None) -> Action:
    """The page of ``reader`` carrying the final claim ``claim`` (or no claim for None)."""
    for a in matching(state, "fetch_page", actor=reader):
        page = a.page
        assert page is not None
        kind_ok = page.claim_kind == ("final" if claim is not None else "")
        where_ok = start is None or (page.start, page.end) == (start, start)
        if kind_ok and where_ok and (claim is None or page.claim == claim):
            return a
    raise AssertionError(f"no page for {reader} with claim {claim}")


def _two_readers(**overrides: object) -> State:
    state = initial(default_config("ingest", events_per_partition=1, **overrides))
    state = step(state, _one(state, "finalize", partition="A"))
    for reader in ("A.r1", "A.r2"):
        state = step(state, _one(state, "read_checkpoint", actor=reader))
    return state


def test_a_reader_that_loses_a_race_rewrites_while_its_claim_is_still_ahead() -> None:
    state = _two_readers()
    # A.r2 certifies before 0 first (an empty page: no event is needed for it).
    state = step(state, _page(state, "A.r2", before(0), start=0))
    state = step(state, _one(state, "write_checkpoint", actor="A.r2", outcome="ok"))
    # A.r1 holds through 0, which is still strictly ahead: it rewrites on generation 1.
    state = step(state, _page(state, "A.r1", through(0)))
    state = step(state, _one(state, "record_outcomes", actor="A.r1"))
    race = _one(state, "write_checkpoint", actor="A.r1", outcome="conflict")
    assert race.detail == "no checkpoint; claim; rewrite"
    assert "it claims less: rewrites on it" in race.describe()
    state = step(state, race)
    assert matching(state, "fetch_page", actor="A.r1") == []  # it must write next
    again = _one(state, "write_checkpoint", actor="A.r1", outcome="ok")
    assert again.detail == "generation 1; again"
    state = step(state, again)
    assert state.checkpoint(0, 1) == Checkpoint(through(0), 1, "q1", 1, True)
    assert state.generation(0, 1) == 2 and violations(state) == []


def test_a_reader_keeps_a_stronger_checkpoint_and_gives_up_when_its_budget_is_spent() -> None:
    state = _two_readers(reader_retries=0)
    state = step(state, _page(state, "A.r2", before(0), start=0))
    state = step(state, _one(state, "write_checkpoint", actor="A.r2", outcome="ok"))
    state = step(state, _page(state, "A.r1", through(0)))
    state = step(state, _one(state, "record_outcomes", actor="A.r1"))
    race = _one(state, "write_checkpoint", actor="A.r1", outcome="conflict")
    assert race.detail == "no checkpoint; claim; gave_up"
    after = step(state, race)
    assert after.partitions[0].readers[0].phase == SETTLING
    assert after.checkpoint(0, 1) == state.checkpoint(0, 1)
    # It rereads what is stored (another call: others may write first) and goes on from it.
    settle = _one(after, "read_checkpoint", actor="A.r1")
    assert settle.detail == "authoritative:settle"
    after = step(after, settle)
    r1 = after.partitions[0].readers[0]
    assert (r1.phase, r1.base, r1.claim, r1.expected) == (READING, before(0), before(0), 1)
    # A stronger checkpoint stored first is kept, and the pass goes on from it.
    state = _two_readers()
    state = step(state, _page(state, "A.r2", through(0)))
    state = step(state, _one(state, "record_outcomes", actor="A.r2"))
    state = step(state, _one(state, "write_checkpoint", actor="A.r2", outcome="ok"))
    state = step(state, _page(state, "A.r1", before(0), start=0))
    keep = _one(state, "write_checkpoint", actor="A.r1", outcome="conflict")
    assert keep.detail == "no checkpoint; claim; keep"
    r1 = step(state, keep).partitions[0].readers[0]
    assert (r1.phase, r1.base, r1.expected) == (READING, through(0), 1)


def test_after_a_lost_response_the_reader_rereads_and_never_guesses() -> None:
    state = _two_readers()
    state = step(state, _page(state, "A.r1", through(0)))
    state = step(state, _one(state, "record_outcomes", actor="A.r1"))
    applied = step(state, _one(state, "write_checkpoint", actor="A.r1", outcome="lost-applied"))
    written = _one(applied, "read_checkpoint", actor="A.r1")
    assert written.detail == "authoritative:written"
    r1 = step(applied, written).partitions[0].readers[0]
    assert (r1.phase, r1.base, r1.base_token, r1.expected) == (READING, through(0), r1.token, 1)
    lost = step(state, _one(state, "write_checkpoint", actor="A.r1", outcome="lost-not-applied"))
    retry = _one(lost, "read_checkpoint", actor="A.r1")
    assert retry.detail == "authoritative:retry"
    lost = step(lost, retry)
    # The retry is lost too: the budget (one retry) is spent, so it gives up.
    lost = step(lost, _one(lost, "write_checkpoint", actor="A.r1", outcome="lost-not-applied"))
    assert _one(lost, "read_checkpoint", actor="A.r1").detail == "authoritative:gave_up"
    lost = step(lost, _one(lost, "read_checkpoint", actor="A.r1"))
    assert _one(lost, "read_checkpoint", actor="A.r1").detail == "authoritative:settle"
    # Another writer moved it on meanwhile: the reread sees a newer generation.
    lost = step(state, _one(state, "write_checkpoint", actor="A.r1", outcome="lost-not-applied"))
    weaker = step(lost, _page(lost, "A.r2", before(0), start=0))
    weaker = step(weaker, _one(weaker, "write_checkpoint", actor="A.r2", outcome="ok"))
    assert _one(weaker, "read_checkpoint", actor="A.r1").detail == "authoritative:rewrite"
    same = step(lost, _page(lost, "A.r2", through(0)))
    same = step(same, _one(same, "record_outcomes", actor="A.r2"))
    same = step(same, _one(same, "write_checkpoint", actor="A.r2", outcome="ok"))
    # Exactly the checkpoint A.r1 wrote is stored (the implementation compares the whole
    # checkpoint): the claim is present, whoever wrote it.
    assert _one(same, "read_checkpoint", actor="A.r1").detail == "authoritative:written"


def test_a_pass_that_moved_its_token_ends_with_a_progress_write() -> None:
    state = initial(default_config("ingest", events_per_partition=1))
    state = step(state, _one(state, "read_checkpoint", actor="A.r1"))
    assert state.partitions[0].readers[0].token == -1  # the implementation's None
    # One page with the (not yet final) event and no claim: nothing to certify.
    state = step(state, _page(state, "A.r1", None, start=None))
    if state.partitions[0].readers[0].phase == 2:
        state = step(state, _one(state, "record_outcomes", actor="A.r1"))
    assert matching(state, "end_pass", actor="A.r1") == []
    progress = _one(state, "write_checkpoint", actor="A.r1", outcome="ok")
    assert progress.detail == "no checkpoint; progress" and progress.cut == NOTHING
    state = step(state, progress)
    stored = state.checkpoint(0, 1)
    assert stored is not None and stored.cut == NOTHING and stored.token >= 0
    assert state.partitions[0].readers[0].phase == IDLE  # the progress write ends the pass
    assert violations(state) == []


def test_after_an_acknowledged_claim_the_pass_goes_on_from_what_it_wrote() -> None:
    state = _two_readers()
    state = step(state, _page(state, "A.r1", through(0)))
    state = step(state, _one(state, "record_outcomes", actor="A.r1"))
    state = step(state, _one(state, "write_checkpoint", actor="A.r1", outcome="ok"))
    r1 = state.partitions[0].readers[0]
    assert (r1.phase, r1.base, r1.claim, r1.expected) == (READING, through(0), through(0), 1)
    assert r1.base_token == r1.token  # nothing more to save: the pass may end plainly
    assert _one(state, "end_pass", actor="A.r1")


def test_the_simple_reader_ends_its_pass_at_its_first_write() -> None:
    state = _two_readers(reader_retries=None, save_progress=False)
    state = step(state, _page(state, "A.r1", through(0)))
    state = step(state, _one(state, "record_outcomes", actor="A.r1"))
    for outcome in ("ok", "lost-applied", "lost-not-applied"):
        after = step(state, _one(state, "write_checkpoint", actor="A.r1", outcome=outcome))
        assert after.partitions[0].readers[0].phase == 0, outcome
