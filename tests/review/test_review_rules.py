"""Every rule has teeth: one broken variant of a clean contract per rule, and nothing else.

Each case edits the ``minimal`` template (which has no findings) and states, by hand,
the exact findings the edit must cause. Errors about truth must carry a witness
that verifies independently of Z3.
"""

from __future__ import annotations

import pytest
from review_data import DATA, minimal_variant, variant

from fencepost.contracts import parse_contract
from fencepost.review.findings import Severity
from fencepost.review.rules import RULES, review_contract

E, W, N = Severity.ERROR, Severity.WARNING, Severity.NOTE
WITH_CITE = '\ncite = ["ledger-docs"]'
LATE = ("max_delay = 0", "max_delay = 5")
HORIZON = '\n\n[cursor.horizon]\nboundary = "next-offset"\ncite = ["ledger-docs"]'
FINAL_STATEMENT = 'statement = "entries before the next offset are durable and will never change"'
UNCITED_FINAL = (FINAL_STATEMENT + '\ncite = ["ledger-docs"]', FINAL_STATEMENT)
ASSUMED_FINAL = (FINAL_STATEMENT + '\ncite = ["ledger-docs"]', FINAL_STATEMENT + "\nassumed = true")
NO_ANSWERS = (
    '\n[cursor.late_commits]\nmax_delay = 0\nstatement = "an entry is visible once it has its '
    'offset: offsets are assigned in commit order"\ncite = ["ledger-docs"]\n\n'
    '[cursor.mutability]\nmutable = false\nstatement = "entries are appended, never changed"\n'
    'cite = ["ledger-docs"]\n',
    "",
)


def unconfirmed(field: str, extra: str = "") -> tuple[str, str]:
    """An edit appending an ``[[unconfirmed]]`` entry about ``field``."""
    entry = f'\n\n[[unconfirmed]]\nfield = "{field}"\nquestion = "q"{WITH_CITE}{extra}'
    return ('event_id = "offset"', 'event_id = "offset"' + entry)


CASES: dict[str, tuple[list[tuple[str, str]], list[tuple[str, Severity]]]] = {
    # resume.through resumes `through x` at from = x+1: on a dense order an event at
    # x + 1/2 is skipped without being covered.
    "successor-manufactured/error": (
        [("successor = true", "successor = false")],
        [("successor-manufactured", E)],
    ),
    # claim `through x-1` from `before x` on a dense order: true, but x-1 is manufactured;
    # resume.through then needs no adjust (it would be manufactured too) and redelivers.
    "successor-manufactured/warning": (
        [
            ("successor = true", "successor = false"),
            ('as = "before"', 'as = "through"\nadjust = "predecessor"'),
            ('boundary = "from"\nadjust = "successor"', 'boundary = "from"'),
        ],
        [("successor-manufactured", W), ("endpoint-mismatch", N)],
    ),
    # a before record read as through.
    "endpoint-mismatch/claim-over": (
        [('as = "before"', 'as = "through"')],
        [("endpoint-mismatch", E)],
    ),
    # an exclusive start parameter used for before checkpoints (cockroach #82488).
    "endpoint-mismatch/resume-skips": (
        [
            ('cut = "before"\nmeaning = "read from', 'cut = "through"\nmeaning = "read from'),
            ('[resume.through]\nboundary = "from"\nadjust = "successor"\n', ""),
        ],
        # claims certify before cuts only, so no [resume.through] is missing
        [("endpoint-mismatch", E)],
    ),
    # a through record read as before: true, progress given up.
    "endpoint-mismatch/claim-under": (
        [('cut = "before"\nmeaning = "every', 'cut = "through"\nmeaning = "every')],
        [("endpoint-mismatch", W)],
    ),
    # an inclusive start used for through checkpoints: events at x come again.
    "endpoint-mismatch/resume-redelivers": (
        [('boundary = "from"\nadjust = "successor"', 'boundary = "from"')],
        [("endpoint-mismatch", N)],
    ),
    "ties-unhandled/error": (
        [
            ("shared_positions = false", "shared_positions = true"),
            ('cut = "before"\nmeaning = "every', 'cut = "through"\nmeaning = "every'),
            ('as = "before"', 'as = "through"'),
        ],
        [("ties-unhandled", E)],
    ),
    "ties-unhandled/warning": (
        [("shared_positions = false", "shared_positions = true")],
        [("ties-unhandled", W)],
    ),
    "ties-handled/atomic-is-clean": (
        [
            (
                "shared_positions = false",
                'shared_positions = true\nties = { value = "atomic", cite = ["ledger-docs"] }',
            ),
            ('cut = "before"\nmeaning = "every', 'cut = "through"\nmeaning = "every'),
            ('as = "before"', 'as = "through"'),
        ],
        [],
    ),
    "ties-handled/atomic-assumed-is-clean": (
        [
            (
                "shared_positions = false",
                'shared_positions = true\nties = { value = "atomic", assumed = true }',
            ),
            ('cut = "before"\nmeaning = "every', 'cut = "through"\nmeaning = "every'),
            ('as = "before"', 'as = "through"'),
        ],
        [],
    ),
    # issue 23: ties = "atomic" written plainly made a REST contract review clean; the
    # order's cite documents the coordinate, not how boundaries treat its events.
    "declaration-unsupported/ties": (
        [
            ("shared_positions = false", 'shared_positions = true\nties = "atomic"'),
            ('cut = "before"\nmeaning = "every', 'cut = "through"\nmeaning = "every'),
            ('as = "before"', 'as = "through"'),
        ],
        [("declaration-unsupported", E)],
    ),
    # only before cuts are derived: if ties were not atomic, only a warning would appear.
    "declaration-unsupported/ties-warning": (
        [("shared_positions = false", 'shared_positions = true\nties = "atomic"')],
        [("declaration-unsupported", W)],
    ),
    # a final claim with no citation: what breaks is the claim itself. The template
    # answers the questions its truth depends on (late commits, mutability).
    "declaration-unsupported/final": (
        [UNCITED_FINAL],
        [("declaration-unsupported", E)],
    ),
    # the same claim, silent on late commits and mutability: the questions are asked
    "unanswered-question/final-uncited": (
        [UNCITED_FINAL, NO_ANSWERS],
        [
            ("declaration-unsupported", E),
            ("unanswered-question", W),
            ("unanswered-question", W),
        ],
    ),
    # assumed instead of cited: no declaration finding, but the questions are still asked
    "unanswered-question": (
        [ASSUMED_FINAL, NO_ANSWERS],
        [("unanswered-question", W), ("unanswered-question", W)],
    ),
    "unanswered-question/answered": ([ASSUMED_FINAL], []),
    # rows commit late, and the final claim is not the certified horizon
    "late-commit-finality": ([LATE], [("late-commit-finality", E)]),
    "late-commit-finality/horizon-is-clean": (
        [LATE, ('event_id = "offset"', 'event_id = "offset"' + HORIZON)],
        [],
    ),
    # the horizon without evidence: the verdict rests on it (the late claim would be an error)
    "declaration-unsupported/horizon": (
        [
            LATE,
            (
                'event_id = "offset"',
                'event_id = "offset"' + HORIZON.replace('\ncite = ["ledger-docs"]', ""),
            ),
        ],
        [("declaration-unsupported", E)],
    ),
    "caught-up-finality": (
        [('guarantee = "final"', 'guarantee = "caught-up"')],
        [("caught-up-finality", E), ("no-finality", E)],
    ),
    "unfinal-claim-certifies/observed": (
        [('guarantee = "final"', 'guarantee = "observed"')],
        [("unfinal-claim-certifies", E), ("no-finality", E)],
    ),
    "unfinal-claim-certifies/provisional": (
        [('guarantee = "final"', 'guarantee = "provisional"')],
        [("unfinal-claim-certifies", E), ("no-finality", E)],
    ),
    "no-finality": (
        [("certifies = true", "certifies = false")],
        [("no-finality", E)],
    ),
    "opaque-coordinates": (
        [("successor = true", "successor = true\ncomparable = false")],
        [("opaque-coordinates", E)],
    ),
    "scalar-incomparable": (
        [('order = "shared"', 'order = "per-partition"')],
        [("scalar-incomparable", E)],
    ),
    "scalar-incomparable/vector-is-clean": (
        [('order = "shared"\nfrontier = "scalar"', 'order = "per-partition"\nfrontier = "vector"')],
        [],
    ),
    "membership-no-epoch/epochs": (
        [
            (
                'changes = "none"\ndiscovery = "none"',
                'changes = "add"\ndiscovery = "poll"' + WITH_CITE,
            )
        ],
        [("membership-no-epoch", E)],
    ),
    "membership-no-epoch/discovery": (
        [
            ('changes = "none"', 'changes = "add"' + WITH_CITE),
            ('epochs = "none"', 'epochs = "per-change"'),
        ],
        [("membership-no-epoch", E)],
    ),
    "membership/epochs-are-clean": (
        [
            (
                'changes = "none"\ndiscovery = "none"',
                'changes = "add"\ndiscovery = "poll"' + WITH_CITE,
            ),
            ('epochs = "none"', 'epochs = "per-change"'),
        ],
        [],
    ),
    "split-without-lineage": (
        [
            (
                'changes = "none"\ndiscovery = "none"',
                'changes = "split-merge"\ndiscovery = "in-band"' + WITH_CITE,
            ),
            ('epochs = "none"', 'epochs = "per-change"'),
        ],
        [("split-without-lineage", W)],
    ),
    "unconfirmed-unresolved/load-bearing": (
        [unconfirmed("partitions.order")],
        [("unconfirmed-unresolved", W)],
    ),
    "unconfirmed-unresolved/other": (
        [unconfirmed("pagination.empty_pages")],
        [("unconfirmed-unresolved", N)],
    ),
    "unconfirmed/resolved-is-clean": (
        [unconfirmed("partitions.order", '\nresolved_by = ["ledger-docs"]')],
        [],
    ),
    # resume.through adds one: false if the successor turns out not to be exact.
    "unconfirmed-strong-reading/successor": (
        [unconfirmed("order.successor")],
        [("unconfirmed-strong-reading", E), ("unconfirmed-unresolved", W)],
    ),
    # resume.before with an inclusive start: lossy if the start is in fact exclusive.
    "unconfirmed-strong-reading/resume-boundary": (
        [unconfirmed("boundaries.from.cut")],
        [
            ("unconfirmed-strong-reading", E),
            ("unconfirmed-strong-reading", E),
            ("unconfirmed-unresolved", W),
        ],
    ),
    # the claim reads its boundary as before: true under either reading.
    "unconfirmed/safe-reading-is-only-flagged": (
        [unconfirmed("boundaries.next-offset.cut")],
        [("unconfirmed-unresolved", W)],
    ),
    "uncited-fact": (
        [
            (
                'meaning = "read from this offset (inclusive)"\ncite = ["ledger-docs"]',
                'meaning = "read from this offset (inclusive)"',
            )
        ],
        [("uncited-fact", W)],
    ),
    # the order uncited: its load-bearing facts (successor, unique positions) are questioned,
    # one finding each, and the plain uncited-fact warning is folded into them
    "declaration-unsupported/order": (
        [('example = 100\ncite = ["ledger-docs"]', "example = 100")],
        [("declaration-unsupported", E), ("declaration-unsupported", W)],
    ),
    "no-event-id": (
        [('event_id = "offset"', "")],
        [("no-event-id", W)],
    ),
    "resume-missing": (
        [('[resume.before]\nboundary = "from"\n', "")],
        [("resume-missing", N)],
    ),
    "finality-limited/partition-end": (
        [('as = "before"', 'as = "before"\noccurs = "partition-end"')],
        [("finality-limited", N)],
    ),
    "finality-limited/snapshot": (
        [('as = "before"', 'as = "before"\noccurs = "snapshot"')],
        [("finality-limited", N)],
    ),
}

TRUTH_RULES = {
    "successor-manufactured",
    "endpoint-mismatch",
    "ties-unhandled",
    "caught-up-finality",
    "unfinal-claim-certifies",
    "scalar-incomparable",
    "membership-no-epoch",
    "unconfirmed-strong-reading",
}


def test_the_minimal_contract_is_clean() -> None:
    assert review_contract(minimal_variant()) == ()


@pytest.mark.parametrize("case", sorted(CASES))
def test_rule_fires_exactly(case: str) -> None:
    edits, expected = CASES[case]
    findings = review_contract(minimal_variant(*edits))
    got = sorted((f.rule, f.severity.value) for f in findings)
    assert got == sorted((rule, sev.value) for rule, sev in expected), findings
    for f in findings:
        assert f.line >= 1 and f.file == "variant.toml"
        if f.severity is E and f.rule in TRUTH_RULES:
            assert f.witness is not None, f
            assert f.witness.verify(), f.witness
        if f.witness is not None:
            assert f.witness.verify()


def test_every_rule_has_a_case_that_fires_it() -> None:
    fired = {rule for _, expected in CASES.values() for rule, _ in expected}
    assert fired == {rule.id for rule in RULES}


def test_rule_ids_are_stable_and_unique() -> None:
    ids = [rule.id for rule in RULES]
    assert len(ids) == len(set(ids)) == 19
    for rule in RULES:
        assert rule.id == rule.id.lower() and " " not in rule.id
        assert rule.title and rule.why


def test_findings_are_sorted_most_severe_first() -> None:
    findings = review_contract(
        minimal_variant(
            ('guarantee = "final"', 'guarantee = "caught-up"'),
            ('event_id = "offset"', ""),
            ('[resume.before]\nboundary = "from"\n', ""),
        )
    )
    ranks = [f.severity.rank for f in findings]
    assert ranks == sorted(ranks) and ranks[0] == 0


def test_a_rest_contract_leaning_on_bare_declarations_is_questioned() -> None:
    """Issue 23: ties = "atomic" (false for a limit-paginated list) made a REST updated_at
    contract review clean; a final page end was never questioned."""
    path = DATA / "rest-ties-atomic-bad.toml"
    text = path.read_text(encoding="utf-8")
    findings = review_contract(parse_contract(text, str(path)))
    assert sorted((f.rule, f.severity.value, f.where) for f in findings) == [
        ("declaration-unsupported", "error", "claims.page-end.guarantee"),
        ("declaration-unsupported", "error", "order.ties"),
        ("resume-missing", "note", "resume"),
        ("unanswered-question", "warning", "cursor.late_commits"),
        ("unanswered-question", "warning", "cursor.mutability"),
    ]
    ties = next(f for f in findings if f.where == "order.ties")
    assert ties.witness is not None and ties.witness.verify()
    assert "ties-unhandled (error)" in ties.explanation
    # stating the ties' evidence settles that finding and nothing else
    cited = variant(text, ('ties = "atomic"', 'ties = { value = "atomic", cite = ["api-docs"] }'))
    assert "order.ties" not in {f.where for f in review_contract(parse_contract(cited))}
    # answering that rows commit late makes the final page end a contradiction
    late = cited + '\n[cursor.late_commits]\nmax_delay = "10s"\ncite = ["api-docs"]\n'
    rules = {f.rule for f in review_contract(parse_contract(late))}
    assert "late-commit-finality" in rules
