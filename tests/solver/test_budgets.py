"""The rlimit table's measured figures for the families no other test runs whole.

``cut_decision`` is measured on ``DECISION_SAMPLES`` and ``review.witness`` on the
review of every shipped contract; both are recomputed here and compared exactly,
so a Z3 upgrade that changes what they cost is noticed (the theorem families are
pinned in tests/proofs/test_proofs.py, the protocol's in
tests/proofs/test_protocol_proof.py and test_protocol_relation.py).
"""

from __future__ import annotations

from pathlib import Path

from fencepost.contracts import load_contract, shipped_contract_names
from fencepost.properties.cut_decisions import DECISION_SAMPLES, decide_cut_order
from fencepost.review.rules import review_contract
from fencepost.solver import BUDGETS, budget, metered


def test_the_decision_samples_consume_the_measured_figure() -> None:
    with metered() as peaks:
        for kind, a, b in DECISION_SAMPLES:
            decide_cut_order(kind, a, b)
    assert peaks["cut_decision"] == budget("cut_decision").measured, peaks


def test_the_shipped_reviews_consume_the_measured_figure() -> None:
    with metered() as peaks:
        for name in shipped_contract_names():
            review_contract(load_contract(name))
    assert peaks["review.witness"] == budget("review.witness").measured, peaks


def test_docs_proofs_shows_the_table_as_it_is() -> None:
    """docs/proofs.md shows the rlimit table; the code is its one home, so the page's
    copy is compared with it row by row."""
    page = (Path(__file__).resolve().parents[2] / "docs" / "proofs.md").read_text()
    for b in BUDGETS.values():
        row = f"| `{b.family}` | {b.measured:,} | {b.margin}x | {b.rlimit:,} | {b.measured_on} |"
        assert row in page, f"docs/proofs.md lacks (or has another) row: {row}"
    shown = [line for line in page.splitlines() if line.startswith("| `") and "x | " in line]
    assert len(shown) == len(BUDGETS), "docs/proofs.md shows a family the table does not have"
