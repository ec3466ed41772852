"""The real tools against the late-commit world, end to end: ``fencepost conform --world
late-commits -- fencepost adapter NAME --config JSON``, as issue 20's "Show" runs them.

Each case runs the CLI (the harness in this process, the adapter as a subprocess driving
the real library) and asserts the exit status, the property broken, and that lost rows
are named with their cause; a safe configuration exits 0 with its cost (duplicates, or
re-reads absorbed by merge) counted. Whole searches take tens of seconds per tool, so they
are ``slow`` (CI runs them); one story per adapter (``--stories``, no random worlds) is
the fast smoke test of the default suite.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass

import pytest
from click.testing import CliRunner

from fencepost.cli import main

ADAPTER = [sys.executable, "-m", "fencepost", "adapter"]


@dataclass(frozen=True)
class Outcome:
    code: int
    report: dict[str, object]

    @property
    def findings(self) -> list[dict[str, object]]:
        found = self.report["findings"]
        assert isinstance(found, list)
        return found

    def row_totals(self) -> dict[str, int]:
        rows = self.report["rows"]
        assert isinstance(rows, dict)
        return rows

    def causes(self) -> list[str]:
        return [str(f["cause"]) for f in self.findings]

    def lost(self) -> list[str]:
        out: list[str] = []
        for f in self.findings:
            rows = f["rows"]
            assert isinstance(rows, dict)
            out += rows["lost"]
        return out


def run(adapter: str, config: str | None, *world: str) -> Outcome:
    """``fencepost conform --world late-commits WORLD... --json -- fencepost adapter ...``."""
    tool = [*ADAPTER, adapter] + ([] if config is None else ["--config", config])
    result = CliRunner().invoke(
        main, ["conform", "--world", "late-commits", *world, "--json", "--", *tool]
    )
    assert result.exit_code in (0, 1), (result.exit_code, result.stderr, result.stdout[-2000:])
    report = json.loads(result.stdout)
    assert report["conformant"] is (result.exit_code == 0)
    return Outcome(result.exit_code, report)


def assert_loses(outcome: Outcome, cause: str, rows: list[str] | None = None) -> None:
    """Exit 1 for lost rows: ``no_lost_rows`` with ``cause``, each lost row named in a story."""
    assert outcome.code == 1
    assert cause in outcome.causes(), outcome.causes()
    finding = next(f for f in outcome.findings if f["cause"] == cause)
    assert finding["rule"] == "no_lost_rows"
    lost = finding["rows"]
    assert isinstance(lost, dict) and lost["lost"]
    stories = finding["stories"]
    assert isinstance(stories, list)
    assert [s["row"] for s in stories] == lost["lost"]
    assert all(str(s["headline"]).endswith(f"{s['row']} is never read") for s in stories)
    if rows is not None:
        assert lost["lost"] == rows


SMOKE = ["--stories", "late-behind-greatest", "--schedules", "0"]


@pytest.mark.parametrize("adapter", ["dlt", "singer", "airbyte"])
def test_each_adapter_loses_the_late_row_by_default(adapter: str) -> None:
    """One story, no random worlds: each tool's default resumes from the greatest value it
    read, and r24, committing 7.6 s late behind it, is lost."""
    outcome = run(adapter, None, *SMOKE)
    assert_loses(outcome, "committed-behind-read", ["r24"])
    assert outcome.report["options"] == {
        **outcome.report["options"],  # type: ignore[dict-item]
        "stories": ["late-behind-greatest"],
        "reads": "live",
        "partitions": "appearing",
    }


@pytest.mark.slow
def test_dlt_default_loses_rows() -> None:
    assert_loses(run("dlt", None), "committed-behind-read")


@pytest.mark.slow
def test_dlt_lag_merge_capped_at_now_is_safe() -> None:
    outcome = run("dlt", '{"lag": 10, "write_disposition": "merge", "upper_bound": "now"}')
    assert outcome.code == 0
    assert outcome.row_totals()["runs_losing"] == 0
    assert outcome.row_totals()["absorbed"] > 0  # the lag's re-reads, merged


@pytest.mark.slow
@pytest.mark.parametrize(("reads", "code"), [("snapshot", 0), ("live", 1)])
def test_dlt_lag_merge_is_safe_only_when_pages_come_from_one_snapshot(
    reads: str, code: int
) -> None:
    """Lag D with merge resumes at the greatest value read minus D: safe when every page of a
    query comes from its first page's snapshot, not when pages are read live while the clock
    moves (the row r15 commits behind the first page while the second reads newer rows)."""
    outcome = run("dlt", '{"lag": 10, "write_disposition": "merge"}', "--reads", reads)
    assert outcome.report["options"]["reads"] == reads  # type: ignore[index]
    if code == 0:
        assert outcome.code == 0 and outcome.row_totals()["absorbed"] > 0
    else:
        assert_loses(outcome, "committed-behind-read", ["r15"])


@pytest.mark.slow
def test_singer_default_loses_rows() -> None:
    assert_loses(run("singer", None), "committed-behind-read")


@pytest.mark.slow
def test_singer_full_table_is_safe_and_duplicates_every_run() -> None:
    outcome = run("singer", '{"replication_method": "FULL_TABLE"}')
    assert outcome.code == 0
    totals = outcome.row_totals()
    assert totals["runs_losing"] == 0
    assert totals["runs_duplicating"] == totals["runs"] > 0


@pytest.mark.slow
def test_airbyte_whole_second_slices_lose_the_rows_between_them() -> None:
    """``cursor_granularity: PT1S`` ends each slice a second before the next starts: a row
    stored at 12:00:19.999 falls in neither; the story names both slices."""
    outcome = run("airbyte", '{"cursor_granularity": "PT1S"}')
    assert_loses(outcome, "between-ranges")
    finding = next(f for f in outcome.findings if f["cause"] == "between-ranges")
    between = finding["stories"][0]["between"]  # type: ignore[index]
    assert "fell between" in between and "12:00:19]" in between and "[12:00:20" in between


@pytest.mark.slow
def test_airbyte_lookback_is_safe_on_an_unpartitioned_source() -> None:
    outcome = run("airbyte", '{"lookback_window": "PT10S"}', "--partitions", "one")
    assert outcome.code == 0
    totals = outcome.row_totals()
    assert totals["runs_losing"] == 0 and totals["runs_duplicating"] > 0
    phases = [p["name"] for p in outcome.report["phases"]]  # type: ignore[attr-defined]
    assert not any(name.startswith("partition-appears") for name in phases)


@pytest.mark.slow
def test_airbyte_lookback_loses_a_new_partitions_old_rows() -> None:
    """The per-partition cursor starts a partition that appears later from the global
    cursor: its older rows are never read, and the report says where it started from."""
    outcome = run("airbyte", '{"lookback_window": "PT10S"}')
    assert_loses(outcome, "new-partition-below-range")
    finding = next(f for f in outcome.findings if f["cause"] == "new-partition-below-range")
    headline = finding["stories"][0]["headline"]  # type: ignore[index]
    assert "from the other partitions' bookmark" in headline
