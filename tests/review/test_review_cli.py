"""`fencepost review` and `fencepost contracts`: output, formats and exit codes."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner
from review_data import DATA, MINIMAL, variant

from fencepost.cli import main
from fencepost.contracts import shipped_contract_names


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


def test_contracts_list_names_every_shipped_contract() -> None:
    code, out, _ = run("contracts", "list")
    assert code == 0
    for name in shipped_contract_names():
        assert name in out
    code, out, _ = run("contracts", "list", "--json")
    rows = {row["name"]: row for row in json.loads(out)}
    assert rows["stripe"]["errors"] == 2 and rows["kafka"]["errors"] == 0
    assert rows["kinesis"]["finality"] == "shard-closed"


def test_contracts_show() -> None:
    code, out, _ = run("contracts", "show", "kafka")
    assert code == 0
    assert "last-stable-offset" in out and "[consumer-javadoc]" in out
    assert "boundaries.last-stable-offset.cut (unresolved)" in out
    code, out, _ = run("contracts", "show", "kafka", "--format", "json")
    assert json.loads(out)["order"]["successor"] is True
    code, out, _ = run("contracts", "show", "spanner", "--format", "toml")
    root = Path(__file__).parents[2]
    assert out == (root / "contracts" / "spanner.toml").read_text(encoding="utf-8")


def test_contracts_show_unknown_name_is_a_usage_error() -> None:
    code, _, err = run("contracts", "show", "kinesys")
    assert code == 2 and "did you mean 'kinesis'?" in err


def test_review_provider_kinesis_passes() -> None:
    code, out, _ = run("review", "--provider", "kinesis")
    assert code == 0
    assert "unconfirmed-unresolved" in out and "finality-limited" in out
    assert "contracts/kinesis.toml:" in out
    assert out.rstrip().endswith("reviewed 1 contract: 0 errors, 1 warning, 1 note")


def test_review_bad_contract_exits_1_with_its_witness() -> None:
    path = str(DATA / "kinesis-caught-up-bad.toml")
    code, out, _ = run("review", path)
    assert code == 1
    assert "caught-up-finality" in out and "witness (Z3, verified)" in out
    assert "visible only after the signal" in out


def test_review_formats() -> None:
    path = str(DATA / "cockroach-cursor-bad.toml")
    code, out, _ = run("review", path, "--format", "json")
    payload = json.loads(out)
    assert code == 1 and payload["failed"] is True
    (finding,) = payload["contracts"][0]["findings"]
    assert finding["rule"] == "endpoint-mismatch" and finding["severity"] == "error"
    assert finding["witness"]["verified"] is True
    assert finding["witness"]["events"][0]["shown"] == "1700000000000000000.0000000000"
    code, same, _ = run("review", path, "--json")
    assert json.loads(same) == payload
    code, md, _ = run("review", path, "--format", "md")
    assert code == 1 and "| error | `endpoint-mismatch` |" in md and "**Witness for" in md


def test_review_several_and_all() -> None:
    code, out, _ = run("review", "--provider", "kafka", "--provider", "spanner", str(MINIMAL))
    assert code == 0 and "reviewed 3 contracts" in out
    code, out, _ = run("review", "--all", "--json")
    payload = json.loads(out)
    assert code == 1 and len(payload["contracts"]) == len(shipped_contract_names())


def test_fail_on_warning() -> None:
    assert run("review", "--provider", "kafka")[0] == 0
    assert run("review", "--provider", "kafka", "--fail-on", "warning")[0] == 1
    assert run("review", str(MINIMAL), "--fail-on", "note")[0] == 0


def test_usage_errors_exit_2() -> None:
    code, _, err = run("review")
    assert code == 2 and "CONTRACT" in err
    code, _, err = run("review", "--provider", "kafak")
    assert code == 2 and "did you mean 'kafka'?" in err
    code, _, err = run("review", "--provider", "kafka", "--format", "yaml")
    assert code == 2


def test_malformed_and_missing_files_exit_2_with_file_and_line(tmp_path: Path) -> None:
    text = variant(MINIMAL.read_text(), ('guarantee = "final"', 'guarantee = "finale"'))
    bad = tmp_path / "broken.toml"
    bad.write_text(text)
    line = text.splitlines().index('guarantee = "finale"') + 1
    code, out, err = run("review", str(bad))
    assert code == 2 and out == ""
    assert f"{bad}:{line}: claims.durable.guarantee: must be one of" in err
    assert "did you mean 'final'?" in err
    code, _, err = run("review", str(tmp_path / "absent.toml"))
    assert code == 2 and "no such file" in err
    syntax = tmp_path / "syntax.toml"
    syntax.write_text("[provider]\nname = \n")
    code, _, err = run("review", str(syntax))
    assert code == 2 and f"{syntax}:2: TOML syntax" in err


def test_every_mistake_of_every_file_comes_at_once(tmp_path: Path) -> None:
    text = variant(
        MINIMAL.read_text(),
        ('guarantee = "final"', 'guarantee = "finale"'),
        ('as = "before"', 'as = "thru"'),
    )
    first = tmp_path / "first.toml"
    first.write_text(text)
    second = tmp_path / "second.toml"
    second.write_text("[provider]\nname = \n")
    code, out, err = run("review", str(first), str(second))
    assert code == 2 and out == ""
    lines = err.splitlines()
    assert len(lines) == 3, err
    assert (
        lines[0].startswith(f"fencepost review: {first}:")
        and "claims.durable.guarantee" in lines[0]
    )
    assert "claims.durable.as" in lines[1]
    assert lines[2].startswith(f"fencepost review: {second}:2: TOML syntax")


# --- a sync tool's configuration beside a contract ---------------------------------------------

SAFE = '{"lag": 10, "write_disposition": "merge", "upper_bound": "now"}'


def test_review_with_a_tool_loses_rows_then_is_safe() -> None:
    code, out, _ = run("review", "--provider", "rest-updated-at", "--tool", "dlt")
    assert code == 1
    assert "with dlt {} (the defaults)" in out
    assert "error   tool-state-max-observed" in out and "witness (Z3, verified)" in out
    assert "lost:      r" in out
    code, out, _ = run("review", "--provider", "rest-updated-at", "--tool", "dlt", "--config", SAFE)
    assert code == 0, out
    assert "note    tool-cost" in out and "re-reads, no duplicates" in out
    assert "the verdict rests on" in out and 'max_delay = "10s" (line' in out
    assert out.rstrip().endswith("reviewed 1 contract: 0 errors, 0 warnings, 1 note")


def test_review_with_a_tool_in_json_and_markdown() -> None:
    args = ("review", "--provider", "rest-updated-at", "--tool", "airbyte")
    code, out, _ = run(*args, "--config", '{"cursor_granularity": "PT1S"}', "--json")
    payload = json.loads(out)
    report = payload["contracts"][0]
    assert code == 1 and report["tool"] == {
        "name": "airbyte",
        "config": '{"cursor_granularity": "PT1S"}',
    }
    gap = next(f for f in report["findings"] if f["rule"] == "tool-successor-manufactured")
    assert gap["witness"]["kind"] == "slice-gap" and gap["witness"]["verified"] is True
    code, out, _ = run(*args, "--config", '{"lookback_window": "PT10S"}', "--json")
    report = json.loads(out)["contracts"][0]
    assert code == 0 and report["rests_on"][0]["where"] == "cursor.late_commits"
    assert report["rests_on"][0]["assumed"] is True
    code, md, _ = run(*args, "--config", '{"lookback_window": "PT10S"}', "--format", "md")
    assert code == 0 and "The verdict rests on:" in md and "with airbyte" in md


def test_tool_configuration_mistakes_exit_2_naming_the_key() -> None:
    base = ("review", "--provider", "rest-updated-at")
    code, out, err = run(*base, "--tool", "dlt", "--config", '{"lagg": 10}')
    assert code == 2 and out == ""
    assert "--config for dlt: lagg: unknown key (did you mean 'lag'?)" in err
    code, _, err = run(*base, "--tool", "dlt", "--config", "{lag: 10}")
    assert code == 2 and "not JSON" in err
    code, _, err = run(*base, "--tool", "dlt", "--config", "[1]")
    assert code == 2 and "JSON object" in err
    code, _, err = run(*base, "--config", "{}")
    assert code == 2 and "--tool" in err
    code, _, err = run(*base, "--tool", "meltano")
    assert code == 2 and "'meltano' is not one of" in err
    code, _, err = run("review", "--provider", "kafka", "--tool", "airbyte")
    assert code == 2 and "contracts/kafka.toml: --config for airbyte" in err


# --- contracts init ----------------------------------------------------------------------------


def test_contracts_init_writes_a_template_that_reviews_clean(tmp_path: Path) -> None:
    target = tmp_path / "mine.toml"
    code, out, _ = run("contracts", "init", str(target))
    assert code == 0 and f"fencepost review {target}" in out
    assert target.read_text() == MINIMAL.read_text()
    assert run("review", str(target), "--fail-on", "note")[0] == 0
    code, _, err = run("contracts", "init", str(target))
    assert code == 2 and "exists" in err and "--force" in err
    code, _, _ = run("contracts", "init", "--template", "rest-updated-at", "--force", str(target))
    assert code == 0 and 'name = "rest-updated-at"' in target.read_text()
    code, out, _ = run("contracts", "init", "--template", "kafka", "-")
    assert code == 0 and out.startswith("#") and 'name = "kafka"' in out
    code, _, err = run("contracts", "init", "--template", "rest-updtaed-at", "-")
    assert code == 2 and "did you mean 'rest-updated-at'?" in err and "minimal" in err


def test_contracts_show_marks_assumptions_and_cursor_facts() -> None:
    code, out, _ = run("contracts", "show", "rest-updated-at")
    assert code == 0
    assert "late commits: max_delay 10s [assumed]" in out
    assert "precision: stored 1ms, query 1s [assumed]" in out
    code, out, _ = run("contracts", "show", "postgres-outbox", "--format", "json")
    cursor = json.loads(out)["cursor"]
    assert cursor["horizon"] == {
        "boundary": "snapshot-xmin",
        "cite": ["functions-info"],
        "assumed": False,
    }
