"""Tool reviews: each rule catches its broken configuration, and the safe ones review clean.

The source is the shipped REST example (``rest-updated-at``: D = 10 s, milliseconds stored,
seconds queried, pages read as they are asked for) or the PostgreSQL table polled by
``updated_at`` (one SELECT per run: one snapshot), or a variant of one of them. Every error
carries a witness that re-checks by arithmetic, and a tampered witness does not.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

import pytest
from review_data import variant

from fencepost.contracts import Contract, load_contract, parse_contract, template_text
from fencepost.review.findings import Severity, SyncKind, SyncWitness
from fencepost.review.rules import review_full
from fencepost.review.sync import TOOL_RULES
from fencepost.review.tools import plan

E, W, N = Severity.ERROR, Severity.WARNING, Severity.NOTE
REST = load_contract("rest-updated-at")
SQL = load_contract("postgres-updated-at")


def rest(*edits: tuple[str, str]) -> Contract:
    """The REST example with ``edits`` applied, parsed."""
    return parse_contract(variant(template_text("rest-updated-at"), *edits), "rest.toml")


def without_cursor_tables(name: str, *keys: str) -> str:
    """A shipped contract's text without its ``[cursor.KEY]`` tables."""
    text = template_text(name)
    for key in keys:
        start = text.index(f"[cursor.{key}]")
        end = text.find("\n[", start + 1)
        text = text[:start] + (text[end + 1 :] if end >= 0 else "")
    return text


PARTITIONED = (
    ('changes = "none"\ndiscovery = "none"', 'changes = "add"\ndiscovery = "poll"'),
    ('epochs = "none"\nstatement = "one endpoint"', 'epochs = "per-change"\nstatement = "tenants"'),
)
OLD_ROWS = "\n[cursor.new_partitions]\nold_rows = true\nassumed = true\n"
NO_OLD_ROWS = "\n[cursor.new_partitions]\nold_rows = false\nassumed = true\n"
UNBOUNDED = ('max_delay = "10s"', 'max_delay = "unbounded"')


def findings(contract: Contract, tool: str, config: Mapping[str, object]) -> list[tuple[str, str]]:
    result = review_full(contract, plan(tool, config, contract))
    for f in result.findings:
        if f.witness is not None:
            assert f.witness.verify(), f
    return sorted((f.rule, f.severity.value) for f in result.findings)


def errors(contract: Contract, tool: str, config: Mapping[str, object]) -> list[str]:
    return [rule for rule, sev in findings(contract, tool, config) if sev == "error"]


SAFE_REST = {"lag": 10, "write_disposition": "merge", "upper_bound": "now"}
SAFE_SQL = {"lag": 10, "write_disposition": "merge"}


def test_every_tool_rule_is_exercised_below() -> None:
    ids = {rule.id for rule in TOOL_RULES}
    assert ids == {
        "tool-state-max-observed",
        "tool-lag-short",
        "tool-read-outlasts-lag",
        "tool-successor-manufactured",
        "tool-partition-from-global",
        "tool-cost",
        "tool-horizon-unused",
    }


# --- the greatest value read as the state ------------------------------------------------------


@pytest.mark.parametrize("tool", ["dlt", "singer", "airbyte"])
def test_defaults_resume_from_the_greatest_value_read_and_lose_a_late_row(tool: str) -> None:
    result = review_full(REST, plan(tool, {}, REST))
    (finding,) = [f for f in result.findings if f.severity is E]
    assert finding.rule == "tool-state-max-observed"
    w = finding.witness
    assert isinstance(w, SyncWitness) and w.kind is SyncKind.LATE_ROW and w.verify()
    late, top = w.rows
    assert late.commit is not None and top.at - 10 * 10**9 <= late.at < top.at  # max - d, d <= D
    assert late.commit > w.values["read_r"] - 1  # it committed after its page was read
    assert w.lost == ("r",) and "never read" in w.story[-1]


def test_the_same_defaults_on_a_source_without_late_commits_are_clean() -> None:
    ordered = rest(('max_delay = "10s"', "max_delay = 0"))
    assert errors(ordered, "airbyte", {}) == []  # its read ends at the run's start
    assert errors(ordered, "dlt", {"upper_bound": "now"}) == []
    # read live with no upper bound, a row committing at the very instant its page is read
    # is missed even with no late commits: the run's own duration is the delay
    assert errors(ordered, "dlt", {}) == ["tool-read-outlasts-lag"]
    snapshot = parse_contract(
        variant(template_text("postgres-updated-at"), ('max_delay = "10s"', "max_delay = 0")),
        "sql.toml",
    )
    assert errors(snapshot, "dlt", {}) == []
    assert errors(snapshot, "singer", {}) == []


# --- lag and lookback --------------------------------------------------------------------------


def test_a_lag_shorter_than_the_delay_loses_a_row() -> None:
    assert errors(REST, "dlt", {**SAFE_REST, "lag": 9}) == ["tool-lag-short"]
    assert errors(REST, "airbyte", {"lookback_window": "PT9S"}) == ["tool-lag-short"]
    assert errors(REST, "airbyte", {"lookback_window": "PT10S"}) == []


def test_no_lag_is_enough_when_the_delay_is_unbounded() -> None:
    unbounded = rest(UNBOUNDED)
    assert errors(unbounded, "dlt", {**SAFE_REST, "lag": 3600}) == ["tool-lag-short"]
    assert errors(unbounded, "singer", {"replication_method": "FULL_TABLE"}) == []


def test_an_exclusive_start_exactly_at_the_delay_loses_the_row_at_it() -> None:
    # on a snapshot source the read instant and a commit can coincide: the row at v - D
    assert errors(SQL, "dlt", {**SAFE_SQL, "range_start": "open"}) == ["tool-lag-short"]
    assert errors(SQL, "dlt", SAFE_SQL) == []


def test_a_read_without_an_upper_bound_outlasts_its_lag() -> None:
    """dlt's lag 10 with merge is safe on a snapshot read, not on pages read live: the run
    reads a row newer than its start (the dlt adapter finds the same when the source's clock
    moves during a sync)."""
    assert errors(REST, "dlt", SAFE_SQL) == ["tool-read-outlasts-lag"]
    assert errors(REST, "dlt", SAFE_REST) == []
    assert errors(SQL, "dlt", SAFE_SQL) == []
    assert errors(REST, "singer", {"lookback_window": 10}) == ["tool-read-outlasts-lag"]
    assert errors(REST, "singer", {"signpost_lag": 10}) == []
    result = review_full(REST, plan("dlt", SAFE_SQL, REST))
    w = result.findings[0].witness
    assert isinstance(w, SyncWitness) and w.values["read_v"] > w.values["now"]


# --- slices ending at a manufactured successor -------------------------------------------------


def test_cursor_granularity_leaves_stored_milliseconds_between_two_slices() -> None:
    result = review_full(REST, plan("airbyte", {"cursor_granularity": "PT1S"}, REST))
    gap = next(f for f in result.findings if f.rule == "tool-successor-manufactured")
    w = gap.witness
    assert isinstance(w, SyncWitness) and w.kind is SyncKind.SLICE_GAP and w.verify()
    r = w.rows[0]
    assert w.values["upper"] < r.at < w.values["lower"]
    assert (r.at - w.values["upper"]) == 412 * 10**6  # 12:00:09.412 between 09 and 10
    assert gap.where == "airbyte.cursor_granularity"


def test_a_granularity_equal_to_what_is_stored_and_named_leaves_no_gap() -> None:
    ms = rest(('query = "1s"', 'query = "1ms"'))
    config = {"cursor_granularity": "PT0.001S", "step": "PT10S", "datetime_format": "%ms"}
    assert "tool-successor-manufactured" not in errors(ms, "airbyte", config)
    # the same granularity written in seconds is a gap again
    seconds = {**config, "datetime_format": "%s"}
    assert "tool-successor-manufactured" in errors(ms, "airbyte", seconds)
    whole = rest(('stored = "1ms"', 'stored = "1s"'))
    assert "tool-successor-manufactured" not in errors(
        whole, "airbyte", {"cursor_granularity": "PT1S"}
    )


# --- partitions that appear later --------------------------------------------------------------


def test_a_new_partition_started_from_the_global_state_loses_its_old_rows() -> None:
    old = rest(*PARTITIONED, ("snapshot = false\n", "snapshot = false\n" + OLD_ROWS))
    assert errors(old, "airbyte", {"lookback_window": "PT10S"}) == ["tool-partition-from-global"]
    assert errors(old, "dlt", {**SAFE_REST, "resources": "single"}) == [
        "tool-partition-from-global"
    ]
    assert errors(old, "singer", {"signpost_lag": 10, "partitions": False}) == [
        "tool-partition-from-global"
    ]
    assert errors(old, "dlt", SAFE_REST) == []  # a resource per partition
    assert errors(old, "singer", {"signpost_lag": 10}) == []  # a bookmark per partition
    result = review_full(old, plan("airbyte", {"lookback_window": "PT10S"}, old))
    w = next(f for f in result.findings if f.rule == "tool-partition-from-global").witness
    assert isinstance(w, SyncWitness) and w.verify()
    assert w.rows[0].partition == "B" and w.rows[0].at < w.values["lower"]


def test_partitions_without_old_rows_or_that_never_appear_lose_nothing() -> None:
    young = rest(*PARTITIONED, ("snapshot = false\n", "snapshot = false\n" + NO_OLD_ROWS))
    assert errors(young, "airbyte", {"lookback_window": "PT10S"}) == []
    assert errors(REST, "airbyte", {"lookback_window": "PT10S"}) == []  # membership: none
    # silent on old rows while partitions are added: read the risky way
    silent = rest(*PARTITIONED)
    assert errors(silent, "airbyte", {"lookback_window": "PT10S"}) == ["tool-partition-from-global"]


# --- notes: cost and an unused horizon ---------------------------------------------------------


def test_safe_configurations_report_their_cost() -> None:
    def cost(contract: Contract, tool: str, config: dict[str, object]) -> str:
        result = review_full(contract, plan(tool, config, contract))
        (note,) = [f for f in result.findings if f.rule == "tool-cost"]
        assert note.severity is N
        return note.explanation

    assert "re-reads, no duplicates" in cost(SQL, "dlt", SAFE_SQL)
    assert "every row of the source" in cost(SQL, "singer", {"replication_method": "FULL_TABLE"})
    assert "(duplicates)" in cost(REST, "airbyte", {"lookback_window": "PT10S"})
    assert "at-least-once" in cost(REST, "airbyte", {"lookback_window": "PT10S"})
    assert "unique_hashes" in cost(REST, "dlt", {})


def test_a_certified_horizon_the_tool_does_not_read_is_noted() -> None:
    outbox = load_contract("postgres-outbox")
    rules = findings(outbox, "dlt", SAFE_SQL)
    assert ("tool-horizon-unused", "note") in rules
    # xid8 rows commit arbitrarily late: no lag is enough for a tool reading by the xid
    assert ("tool-lag-short", "error") in rules


# --- what the verdict rests on, and questions asked of a silent contract -----------------------


def test_a_safe_verdict_lists_the_assumptions_it_rests_on() -> None:
    result = review_full(REST, plan("dlt", SAFE_REST, REST))
    assert [f.rule for f in result.findings] == ["tool-cost"]
    (late,) = result.rests_on
    assert late.where == "cursor.late_commits" and late.evidence.assumed
    assert [rule for rule, _, _ in late.breaks] == ["tool-lag-short"]
    sql = review_full(SQL, plan("dlt", SAFE_SQL, SQL))
    assert {r.where for r in sql.rests_on} == {"cursor.late_commits", "cursor.reads"}


def test_an_unsupported_bound_is_questioned_with_what_breaks() -> None:
    bare = rest(
        (
            'statement = "a record becomes visible at most 10 s after its updated_at: the '
            "API's writers commit within 10 s of the time they write\"\nassumed = true",
            'statement = "writers commit within 10 s"',
        )
    )
    result = review_full(bare, plan("dlt", SAFE_REST, bare))
    (finding,) = [f for f in result.findings if f.severity is E]
    assert finding.rule == "declaration-unsupported" and finding.where == "cursor.late_commits"
    assert "tool-lag-short" in finding.explanation
    assert isinstance(finding.witness, SyncWitness) and finding.witness.verify()


def test_a_contract_silent_on_late_commits_and_mutability_is_asked() -> None:
    text = without_cursor_tables("rest-updated-at", "late_commits", "mutability")
    contract = parse_contract(text, "silent.toml")
    rules = findings(contract, "dlt", SAFE_REST)
    assert rules.count(("unanswered-question", "warning")) == 2
    assert ("tool-lag-short", "error") in rules  # silent is read as unbounded


# --- witnesses have teeth ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("contract", "tool", "config", "tamper"),
    [
        (REST, "dlt", {}, ("lower", -(10**9))),  # the next run would start below r
        (REST, "dlt", SAFE_SQL, ("read_r", 10**10)),  # r's page read after it committed
        # r inside the slice after all
        (
            REST,
            "airbyte",
            {"cursor_granularity": "PT1S", "lookback_window": "PT10S"},
            ("upper", 10**9),
        ),
    ],
)
def test_a_tampered_sync_witness_fails_its_recheck(
    contract: Contract, tool: str, config: dict[str, object], tamper: tuple[str, int]
) -> None:
    result = review_full(contract, plan(tool, config, contract))
    w = next(f.witness for f in result.findings if isinstance(f.witness, SyncWitness))
    assert isinstance(w, SyncWitness) and w.verify()
    key, delta = tamper
    broken = replace(w, values={**w.values, key: w.values[key] + delta})
    assert not broken.verify()
