"""The shipped ``postgres-outbox`` contract and the provider say the same thing.

The contract (contracts/postgres-outbox.toml) is what the review judges; the
provider (fencepost.impl.providers.postgres_outbox) is what runs. They are
written separately (impl may not import contracts), so this test holds them
together: the same order, the same claim from the same boundary, the same
resume position; and the wrong design (through the greatest id seen) is an
error with a verified Z3 witness.
"""

from __future__ import annotations

from pathlib import Path

from fencepost.contracts import ResumePosition, load_contract, read_contract_file
from fencepost.impl.cuts import Cut
from fencepost.impl.merge import merge
from fencepost.impl.provider import Claim
from fencepost.impl.providers.postgres_outbox import (
    XID8_MAX,
    XID8_ORDER,
    Position,
    build_page,
    decode_token,
    resume_token,
)
from fencepost.impl.records import Checkpoint, Finality
from fencepost.review.findings import Severity, WitnessKind
from fencepost.review.rules import review_contract

CONTRACT = load_contract("postgres-outbox")
DATA = Path(__file__).parents[1] / "review" / "data"


def test_the_order_is_the_providers() -> None:
    assert CONTRACT.order() == XID8_ORDER
    assert XID8_ORDER.has_successor and CONTRACT.order_facts.shared_positions


def test_the_snapshot_claim_certifies_exactly_what_the_provider_claims() -> None:
    for xmin in (3, 2**32, 21474836583, XID8_MAX):
        decision = CONTRACT.check_claim("snapshot-xmin", xmin)
        assert decision.final, decision.reason
        assert (
            decision.as_claim()
            == build_page("p", xmin, [], 10).claim
            == Claim(Cut.before(xmin), True)
        )
    assert not CONTRACT.check_claim("greatest-xid-seen", 50).final


def test_resuming_from_a_cut_alone_agrees() -> None:
    position = CONTRACT.resume_from(Cut.before(21474836583))
    assert position == ResumePosition("xid-at-least", 21474836583, redelivers=False)
    token = resume_token("p", Cut.before(21474836583))
    assert token is not None and decode_token("p", token) == Position(21474836583, None)


def test_one_scalar_frontier_across_partitions() -> None:
    membership = CONTRACT.membership(1, "q", ["outbox_p0", "outbox_p1"])
    vector = [
        Checkpoint("outbox_p0", Cut.before(900), None, 1, "q", 1, Finality.FINAL),
        Checkpoint("outbox_p1", Cut.before(905), None, 1, "q", 1, Finality.FINAL),
    ]
    assert merge(membership, vector) == Cut.before(900)


def test_the_review_finds_nothing_in_the_contract_and_an_error_in_the_greatest_id_design() -> None:
    assert review_contract(CONTRACT) == ()
    bad = review_contract(read_contract_file(DATA / "outbox-greatest-id-bad.toml"))
    errors = {f.rule: f for f in bad if f.severity is Severity.ERROR}
    assert set(errors) == {"unfinal-claim-certifies", "no-finality"}
    witness = errors["unfinal-claim-certifies"].witness
    assert witness is not None and witness.kind is WitnessKind.UNFINAL and witness.verify()
    assert any(not e.final and e.at == 99 for e in witness.events)
