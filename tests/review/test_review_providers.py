"""The shipped contracts' findings, pinned by hand from the facts in docs/providers.md.

Each expectation below was written from reading the provider's facts, not by
running the review: a change to a contract or to a rule that moves any of them
must be a deliberate edit here.
"""

from __future__ import annotations

from collections import Counter

import pytest

from fencepost.contracts import load_contract, shipped_contract_names
from fencepost.review.rules import review_contract, review_full

E, W, N = "error", "warning", "note"

EXPECTED: dict[str, list[tuple[str, str]]] = {
    # LSO off-by-one wording differs between docs: unconfirmed, read as `before` (safe).
    # Offsets have an exact successor, so resuming `through x` at x+1 is the same claim.
    "kafka": [("unconfirmed-unresolved", W)],
    # Order across shards: the docs conflict (unconfirmed). Finality only from a closed
    # shard; MillisBehindLatest = 0 is listed as caught-up and never certifies.
    "kinesis": [("unconfirmed-unresolved", W), ("finality-limited", N)],
    # No watermark: only a closed shard's inclusive EndingSequenceNumber is final.
    "dynamodb-streams": [("finality-limited", N)],
    # Heartbeats are `through` on one time axis; a `through` checkpoint resumes with the
    # inclusive start_timestamp, which redelivers the records at x.
    "spanner": [("endpoint-mismatch", N)],
    # Resolved: rows exactly at it, wording differs (unconfirmed, read as before). The
    # cursor is exclusive, so no parameter resumes a `before` checkpoint exactly.
    "cockroachdb": [("unconfirmed-unresolved", W), ("resume-missing", N)],
    # Several events share one LSN; the contract does not state a tie rule (before only).
    "postgresql": [("ties-unhandled", W)],
    # Several events share one clusterTime; resume tokens are per event (before only).
    "mongodb": [("ties-unhandled", W)],
    # A checkpoint is the consumer's own progress: no finality claim. Successor, order
    # across partitions and how additions are discovered are all unconfirmed.
    "event-hubs": [("no-finality", E)] + [("unconfirmed-unresolved", W)] * 3,
    # Opaque object ids in a reverse chronological list; no finality documented.
    "stripe": [("no-finality", E), ("opaque-coordinates", E)],
    # Seek is imprecise, no finality; publish times may coincide without a tie rule;
    # exactly-at-the-seek-time is undefined (unconfirmed, used only the safe way).
    "pubsub": [("no-finality", E), ("ties-unhandled", W), ("unconfirmed-unresolved", W)],
    # Final only within one point in time.
    "elasticsearch": [("finality-limited", N)],
    # Claims from the snapshot's xmin: before, final, continuous; ties atomic (one xid per
    # transaction, all its rows visible at once); xid8 never wraps. Nothing to find.
    "postgres-outbox": [],
    # Examples for sync tools (fencepost review --tool): a REST list and a table polled by
    # updated_at state no finality (the greatest value read is only observed), and many rows
    # share one updated_at with no tie rule (only before cuts are derived).
    "rest-updated-at": [("no-finality", E), ("ties-unhandled", W)],
    "postgres-updated-at": [("no-finality", E), ("ties-unhandled", W)],
}


def test_every_shipped_contract_is_pinned() -> None:
    assert set(shipped_contract_names()) == set(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_findings_per_provider(name: str) -> None:
    findings = review_contract(load_contract(name))
    got = Counter((f.rule, f.severity.value) for f in findings)
    assert got == Counter(EXPECTED[name]), [(f.rule, f.severity.value, f.where) for f in findings]
    for f in findings:
        assert f.witness is None or f.witness.verify()


def test_what_the_shipped_verdicts_rest_on() -> None:
    """The outbox's finality rests on its cited horizon (xmin); the examples' cursor facts
    are assumed where no document can say them, and the review says so."""
    outbox = review_full(load_contract("postgres-outbox"))
    horizon = next(r for r in outbox.rests_on if r.where == "cursor.horizon")
    assert horizon.evidence.cite == ("functions-info",)
    assert [rule for rule, _, _ in horizon.breaks] == ["late-commit-finality"]
    cockroach = review_full(load_contract("cockroachdb"))
    ties = next(r for r in cockroach.rests_on if r.where == "order.ties")
    assert ties.evidence.cite and ("ties-unhandled", "warning") in {
        (rule, sev.value) for rule, sev, _ in ties.breaks
    }


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_no_shipped_fact_is_uncited(name: str) -> None:
    findings = review_contract(load_contract(name))
    assert not [f for f in findings if f.rule == "uncited-fact"]


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_the_cheap_review_finds_what_the_full_one_does(name: str) -> None:
    """review_contract negates only the declarations without evidence; the findings must be
    those of the full review, which negates every one to list what the verdict rests on."""
    contract = load_contract(name)
    full = review_full(contract)
    assert review_contract(contract) == full.findings
    unsupported = review_full(contract, rests_on=False).rests_on
    assert {r.where for r in unsupported} <= {r.where for r in full.rests_on}
    assert all(not r.evidence.supported for r in unsupported)
