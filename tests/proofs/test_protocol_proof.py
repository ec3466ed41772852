"""The unbounded protocol proof: every obligation proved, each mutant refuted, each lemma needed.

``fencepost prove --protocol`` proves that section 7 holds for any number of
partitions, publishers, readers, epochs, events and in-flight writes. Teeth:
every model mutant makes the induction fail at the action and lemma its bug
is about, with a counterexample told in domain words and found reachable in
the explorer; and every strengthening lemma is needed (drop it and an
obligation is refuted).
"""

from __future__ import annotations

from collections import Counter

import pytest
from proof_memo import shared_prove_all

from fencepost.model.config import DEFAULTS
from fencepost.model.machine import initial as model_initial
from fencepost.model.mutants import MUTANTS
from fencepost.properties.protocol_actions import PROTOCOLS, actions_of
from fencepost.properties.protocol_cti import render_cti, search_reachable
from fencepost.properties.protocol_lemmas import (
    LEMMAS,
    PROPERTIES,
    initial,
    invariant_of,
    properties_of,
)
from fencepost.properties.protocol_logic import Z3Logic
from fencepost.properties.protocol_proof import (
    CONSECUTION,
    COUNTEREXAMPLE,
    INITIATION,
    PROVED,
    REFUTED,
    SAFETY,
    Outcome,
    family_of,
    prove_protocol,
)
from fencepost.properties.protocol_relation import Encoder
from fencepost.solver import budget, metered


@pytest.fixture(scope="module")
def proof() -> list[Outcome]:
    return shared_prove_all()


def test_every_obligation_is_proved(proof: list[Outcome]) -> None:
    bad = [f"{o.obligation.name}: {o.status} {o.detail}" for o in proof if o.status != PROVED]
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("kind", [INITIATION, CONSECUTION, SAFETY])
def test_the_rlimit_table_holds_what_the_proof_consumed(proof: list[Outcome], kind: str) -> None:
    """fencepost.solver.budgets pins what ``fencepost prove --protocol`` consumes: a Z3
    upgrade (or a change to the encoding) that changes it is noticed here, and the
    figure is remeasured (the failure message gives it)."""
    family = family_of(kind)
    peak = max(o.rlimit_used for o in proof if o.obligation.kind == kind)
    assert peak == budget(family).measured, f"{family}: measured {peak:,}, update the table"


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_the_obligations_are_complete(proof: list[Outcome], protocol: str) -> None:
    """Initiation per lemma, consecution per (action, lemma), safety per property."""
    mine = [o.obligation for o in proof if o.obligation.protocol == protocol]
    lemmas = {x.name for x in invariant_of(protocol)}
    assert {o.lemma for o in mine if o.kind == INITIATION} == lemmas
    pairs = {(o.action, o.lemma) for o in mine if o.kind == CONSECUTION}
    assert pairs == {(a.name, x) for a in actions_of(protocol) for x in lemmas}
    assert {o.lemma for o in mine if o.kind == SAFETY} == {p.name for p in properties_of(protocol)}


def test_every_action_of_the_model_is_covered() -> None:
    """The composed protocol has every action; each part's its own."""
    composed = {a.name for a in actions_of("composed")}
    assert {a.name for a in actions_of("publication")} - composed == {
        "certify",
        "bad_checkpoint:provisional",
        "bad_checkpoint:scope",
        "bad_checkpoint:epoch",
    }
    for needed in (
        "write_publication:ok",
        "write_publication:lost-applied",
        "write_publication:lost-not-applied",
        "write_publication:in-flight",
        "write_publication:conflict",
        "read_publication:authoritative",
        "delayed_write",
        "read_checkpoints:cutover_pending",
        "write_checkpoint:conflict",
        "read_checkpoint:reread",
        "reshard",
        "restart_publisher",
        "restart_reader",
    ):
        assert needed in composed


def test_every_property_and_lemma_has_a_meaning_in_domain_words() -> None:
    assert [p.name for p in PROPERTIES] == [
        "soundness",
        "monotone_publication",
        "no_relabeling",
        "epoch_fence",
        "checkpoint_monotonicity",
        "lost_response_honesty",
        "checkpoint_truth",
    ]
    for x in (*PROPERTIES, *LEMMAS):
        assert len(x.doc.split()) >= 5 and x.name not in x.doc, x.name
        assert x.protocols


@pytest.mark.parametrize("part", sorted(DEFAULTS))
def test_the_models_initial_state_is_an_initial_state(part: str) -> None:
    state = model_initial(DEFAULTS[part])
    enc = Encoder(state)
    assert initial(enc.L, enc.view(state))


# --- teeth: each model mutant is refuted where its bug lives ------------------------

#: mutant -> the (protocol, action, lemma) obligations refuted in the protocol it lives in.
REFUTED_BY = {
    "relabel": {("publication", "read_checkpoints:propose", "proposal_certified")},
    "skip-missing": {("publication", "read_checkpoints:propose", "proposal_certified")},
    "epsilon": {("publication", "read_checkpoints:propose", "proposal_certified")},
    "epoch-blind": {("publication", "read_checkpoints:propose", "proposal_certified")},
    "scope-blind": {("publication", "read_checkpoints:propose", "proposal_certified")},
    "provisional-ok": {
        ("publication", "read_checkpoints:propose", "proposal_certified"),
        ("ingest", "fetch_page", "reader_claim_true"),
    },
    "blind-success": {
        ("publication", f"write_publication:{outcome}", "lost_response_honesty")
        for outcome in ("lost-applied", "in-flight", "lost-not-applied")
    },
    "stale-cut-retry": {("publication", "write_publication:conflict", "proposal_ahead_of_record")},
    "cutover-regress": {("publication", "read_checkpoints:propose", "proposal_ahead_of_record")},
    "fence-blind": {("publication", "read_publication:authoritative", "held_record_is_current")},
    "max-observed": {("ingest", "fetch_page", "reader_claim_true")},
    "overwrite": {
        ("ingest", "write_checkpoint:conflict", "reader_holds_stored"),
        ("ingest", "read_checkpoint:reread", "reader_holds_stored"),
    },
}


def test_every_model_mutant_is_listed() -> None:
    assert set(REFUTED_BY) == set(MUTANTS)


#: The mutant whose search for a small counterexample is the most expensive: its peak is
#: the measured figure of ``protocol.counterexample`` (fencepost.solver.budgets).
COSTLIEST_MUTANT = "epoch-blind"


@pytest.mark.parametrize("mutant", sorted(REFUTED_BY))
def test_each_mutant_breaks_the_induction(mutant: str) -> None:
    expected = REFUTED_BY[mutant]
    refuted = set()
    with metered() as peaks:
        for protocol in sorted({p for p, _, _ in expected}):
            for o in prove_protocol(protocol, mutant=mutant, kinds=(CONSECUTION,)):
                if o.status == REFUTED:
                    ob = o.obligation
                    refuted.add((ob.protocol, ob.action, ob.lemma))
    assert refuted == expected, (mutant, refuted)
    # The small-counterexample search stays within its measured figure, and reaches it
    # for the costliest mutant (the budget is pinned: remeasure it if this moves).
    measured = budget(COUNTEREXAMPLE).measured
    assert peaks.get(COUNTEREXAMPLE, 0) <= measured, f"{mutant}: {peaks}"
    if mutant == COSTLIEST_MUTANT:
        assert peaks[COUNTEREXAMPLE] == measured, f"{mutant}: {peaks}, update the table"


def test_a_counterexample_to_induction_is_told_in_domain_words() -> None:
    outcomes = prove_protocol(
        "publication",
        mutant="relabel",
        actions=["read_checkpoints:propose"],
        lemmas=["proposal_certified"],
        kinds=(CONSECUTION,),
    )
    (cti,) = [o for o in outcomes if o.status == REFUTED]
    text = render_cti(cti, Z3Logic().sorts)
    assert text.startswith("action read_checkpoints:propose (w=p1")
    assert "breaks lemma proposal_certified -- every proposal is more than nothing" in text
    for words in ("before: membership epoch", "partition A: checkpoints", "publisher p1:"):
        assert words in text
    assert "after:  publisher p1: proposing" in text


def test_the_counterexample_is_looked_for_among_reachable_states() -> None:
    found = search_reachable(
        "publication", "relabel", "proposal_certified", "read_checkpoints:propose"
    )
    assert found.reachable and found.steps == 5
    assert found.last.startswith("publisher p1 reads the checkpoints of epoch 1, merges through 0")
    assert str(found).startswith("reachable within the default bounds (5 steps")
    # A through cut at an odd half-coordinate needs an event between two coordinates,
    # which the ingest part's default layout (both events at 0) does not have.
    missed = search_reachable("ingest", "max-observed", "cuts_well_formed", "fetch_page")
    assert not missed.reachable and missed.states > 1000
    assert "not reachable within the default bounds" in str(missed)


# --- teeth: every lemma is needed -----------------------------------------------------

#: A few lemmas, each with an obligation that fails without it (all of them: slow test).
NEEDED = {
    ("publication", "proposal_certified"): ("write_publication:ok", "record_certified"),
    ("publication", "held_record_is_current"): (
        "read_checkpoints:propose",
        "proposal_ahead_of_record",
    ),
    ("ingest", "reader_holds_stored"): ("write_checkpoint:ok", "checkpoint_monotonicity"),
    ("ingest", "checkpoint_prefix_recorded"): ("read_checkpoint", "reader_prefix_recorded"),
}


@pytest.mark.parametrize(("protocol", "lemma"), sorted(NEEDED))
def test_a_lemma_dropped_breaks_the_induction(protocol: str, lemma: str) -> None:
    action, broken = NEEDED[(protocol, lemma)]
    outcomes = prove_protocol(protocol, without=[lemma], actions=[action], kinds=(CONSECUTION,))
    refuted = {(o.obligation.action, o.obligation.lemma) for o in outcomes if o.status == REFUTED}
    assert (action, broken) in refuted, refuted


@pytest.mark.slow
@pytest.mark.parametrize("protocol", ["publication", "ingest"])
def test_every_lemma_is_needed(protocol: str) -> None:
    for lemma in invariant_of(protocol):
        outcomes = prove_protocol(protocol, without=[lemma.name], kinds=(CONSECUTION, SAFETY))
        statuses = Counter(o.status for o in outcomes)
        assert statuses[PROVED] < len(outcomes), f"{lemma.name} is not needed in {protocol}"
