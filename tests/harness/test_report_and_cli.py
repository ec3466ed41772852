"""Reports, regression files and the ``fencepost conform`` / ``fencepost sut`` commands."""

from __future__ import annotations

import functools
import json
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from click.testing import CliRunner

from fencepost.cli import main
from fencepost.harness.conformance import ConformOptions, ConformReport, conform
from fencepost.harness.report import (
    RegressionError,
    Replayed,
    load_regression,
    render_failure,
    replay_regression,
    save_regression,
    write_junit,
    write_report_dir,
)
from fencepost.harness.rules import Rule
from fencepost.mutants import CATALOG
from fencepost.sut.adapter import InProcessSut

PUBLISHER = ConformOptions(levels=frozenset({"publisher"}), schedules=0)


@functools.cache
def _failing_report(
    name: str = "stale-cut-retry", options: ConformOptions = PUBLISHER
) -> ConformReport:
    """The same conformance run, searched and shrunk once per worker: the report is a
    frozen value, read (never changed) by each test that renders, saves or edits it."""
    return conform(InProcessSut(CATALOG[name]), options)


def test_a_failure_renders_rule_schedule_transcript_and_seed() -> None:
    failure = _failing_report().failures[0]
    text = render_failure(failure, "my-sut")
    assert text.startswith("FAILURE: monotone_publication (docs/semantics.md section 7 property)")
    assert f"--replay {failure.seed} -- my-sut" in text
    assert "shortest schedule found" in text and "transcript (" in text
    assert text.count("\n") > len(failure.transcript)


def test_regression_files_round_trip_and_replay(tmp_path: Path) -> None:
    failure = _failing_report().failures[0]
    saved = save_regression(tmp_path, failure, "in-process")
    assert saved.name.endswith("-bad.jsonl") and saved.name.startswith("monotone_publication-")
    regression = load_regression(saved)
    assert regression.actions == failure.actions and regression.rule == "monotone_publication"
    bad = replay_regression(InProcessSut(CATALOG["stale-cut-retry"]), regression, timeout=5)
    assert isinstance(bad, Replayed) and bad.result.first is not None
    assert bad.result.first.rule is Rule.MONOTONE_PUBLICATION
    good = replay_regression(InProcessSut(), regression, timeout=5)
    assert isinstance(good, Replayed) and good.result.ok


def test_algebra_regressions_store_the_case(tmp_path: Path) -> None:
    failure = _failing_report(
        "compare-swap", ConformOptions(levels=frozenset({"algebra"}))
    ).failures[0]
    path = save_regression(tmp_path / "swap-bad.jsonl", failure, "x")
    regression = load_regression(path)
    assert regression.case == failure.case and regression.setup is None
    assert replay_regression(InProcessSut(), regression, timeout=5) is None
    again = replay_regression(InProcessSut(CATALOG["compare-swap"]), regression, timeout=5)
    assert again is not None and not isinstance(again, Replayed)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("", "empty"),
        ("{}\n", "not a fencepost regression file"),
        ('{"fencepost_regression": 1}\n', "needs a world or an algebra case"),
        ("not json\n", ":1: not JSON"),
    ],
)
def test_unreadable_regression_files_say_where(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "x-bad.jsonl"
    path.write_text(content)
    with pytest.raises(RegressionError, match=message):
        load_regression(path)


def test_a_bad_step_line_is_named(tmp_path: Path) -> None:
    failure = _failing_report().failures[0]
    path = save_regression(tmp_path / "r-bad.jsonl", failure, "x")
    lines = path.read_text().splitlines()
    lines.append(json.dumps({"step": 99, "action": {"do": "teleport"}}))
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(RegressionError, match=rf":{len(lines)}: line {len(lines)}.action.do"):
        load_regression(path)


@pytest.mark.parametrize(
    ("action", "says"),
    [
        ({"do": "publish", "worker": "w9"}, "action.worker: 'w9' is not a worker"),
        ({"do": "advance", "partition": "Z"}, "action.partition: 'Z' is not a partition"),
        ({"do": "crash", "worker": "nobody"}, "action.worker: 'nobody' is not a worker"),
    ],
)
def test_a_step_naming_an_unknown_worker_or_partition_is_an_error(
    tmp_path: Path, action: dict[str, object], says: str
) -> None:
    failure = _failing_report().failures[0]
    path = save_regression(tmp_path / "r-bad.jsonl", failure, "x")
    lines = path.read_text().splitlines()
    lines.insert(2, json.dumps({"step": 2, "action": action}))
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(RegressionError, match=rf"r-bad.jsonl:3: {says}"):
        load_regression(path)
    result = CliRunner().invoke(
        main, ["conform", "--replay-file", str(path), "--", *mutant("stale-cut-retry")]
    )
    assert result.exit_code == 2 and "r-bad.jsonl:3:" in result.output
    assert "Traceback" not in result.output


def test_hostile_regression_files_are_refused_with_their_line(tmp_path: Path) -> None:
    deep = tmp_path / "deep-bad.jsonl"
    deep.write_text('{"fencepost_regression": 1}\n' + "[" * 100_000 + "]" * 100_000 + "\n")
    with pytest.raises(RegressionError, match=r"deep-bad.jsonl:2:"):
        load_regression(deep)
    binary = tmp_path / "binary-bad.jsonl"
    binary.write_bytes(b'{"fencepost_regression": 1}\n\xff\xfe\n')
    with pytest.raises(RegressionError, match=r"binary-bad.jsonl:2: not UTF-8"):
        load_regression(binary)
    huge = tmp_path / "huge-bad.jsonl"
    huge.write_text('{"fencepost_regression": 1, "seed": ' + "9" * 5000 + "}\n")
    with pytest.raises(RegressionError, match=r"huge-bad.jsonl:1:"):
        load_regression(huge)


def test_a_regression_read_from_an_endless_device_is_refused() -> None:
    with pytest.raises(RegressionError, match="/dev/zero: a character device, not a regular file"):
        load_regression(Path("/dev/zero"))


def test_a_step_that_cannot_run_in_a_replay_is_reported_not_skipped(tmp_path: Path) -> None:
    failure = _failing_report().failures[0]
    path = save_regression(tmp_path / "r-bad.jsonl", failure, "x")
    lines = path.read_text().splitlines()
    # An answer to a worker that has no call pending at the start: it cannot run.
    lines.insert(1, json.dumps({"step": 1, "action": {"do": "answer", "worker": "w1"}}))
    path.write_text("\n".join(lines) + "\n")
    result = CliRunner().invoke(
        main,
        ["conform", "--replay-file", str(path), "--", sys.executable, "-m", "fencepost", "sut"],
    )
    assert "step 1 of r-bad.jsonl could not run now and was not executed" in result.output


def test_junit_and_report_folder(tmp_path: Path) -> None:
    report = _failing_report()
    junit = tmp_path / "junit.xml"
    write_junit(junit, report, "sut")
    suite = ET.parse(junit).getroot().find("testsuite")
    failed_phases = [p for p in report.phases if p.failed]
    assert failed_phases and len(report.failures) == len(failed_phases)
    assert suite is not None and suite.get("failures") == str(len(failed_phases))
    failures = suite.findall("testcase/failure")
    assert len(failures) == len(failed_phases)
    assert {f.get("type") for f in failures} <= {
        "monotone_publication",
        "epoch_fence",
        "honest_outcome",
    }
    # Each failing phase's test case carries that phase's own failure.
    for case in suite.findall("testcase"):
        node = case.find("failure")
        if node is not None:
            assert f"in phase {case.get('name')}" in (node.text or "")
    coverage = {p.get("name"): p.get("value") for p in suite.findall("properties/property")}
    assert coverage["coverage.conflict"] is not None and int(coverage["coverage.conflict"]) > 0
    written = write_report_dir(tmp_path / "report", report, "sut")
    names = sorted(p.name for p in written)
    assert "summary.json" in names and any(n.endswith("-bad.jsonl") for n in names)
    summary = json.loads((tmp_path / "report" / "summary.json").read_text())
    assert summary["conformant"] is False
    assert summary["failures"][0]["violation"]["rule"] == "monotone_publication"


# --- the commands -------------------------------------------------------------------------


def mutant(name: str) -> list[str]:
    return [sys.executable, "-m", "fencepost.sut", name]


def test_conform_exit_codes(tmp_path: Path) -> None:
    runner = CliRunner()
    args = ["conform", "--levels", "algebra", "--schedules", "0"]
    bad = runner.invoke(main, [*args, "--save", str(tmp_path), "--", *mutant("compare-swap")])
    assert bad.exit_code == 1, bad.output
    assert "NOT CONFORMANT" in bad.output and "algebra_compare" in bad.output
    saved = sorted(tmp_path.glob("*-bad.jsonl"))
    # Every phase runs: the exhaustive and the random algebra phases each keep a failure.
    assert len(saved) == 2
    assert "FAIL  algebra exhaustive" in bad.output and "FAIL  algebra random" in bad.output
    fail_fast = runner.invoke(main, [*args, "--fail-fast", "--", *mutant("compare-swap")])
    assert fail_fast.exit_code == 1 and "algebra random" not in fail_fast.output
    good = runner.invoke(main, [*args, "--", sys.executable, "-m", "fencepost", "sut"])
    assert good.exit_code == 0, good.output
    assert "fencepost conform: CONFORMANT" in good.output
    replayed_bad = runner.invoke(
        main, ["conform", "--replay-file", str(saved[0]), "--", *mutant("compare-swap")]
    )
    assert replayed_bad.exit_code == 1
    replayed_good = runner.invoke(
        main,
        ["conform", "--replay-file", str(saved[0]), "--", sys.executable, "-m", "fencepost", "sut"],
    )
    assert replayed_good.exit_code == 0, replayed_good.output


def test_conform_replays_a_seed_and_speaks_json() -> None:
    runner = CliRunner()
    first = runner.invoke(
        main,
        ["conform", "--levels", "algebra", "--json", "--", *mutant("reason-order")],
    )
    assert first.exit_code == 1
    found = json.loads(first.stdout)
    seed = found["failures"][0]["seed"]
    again = runner.invoke(
        main, ["conform", "--json", "--replay", str(seed), "--", *mutant("reason-order")]
    )
    assert again.exit_code == 1
    replayed = json.loads(again.stdout)["failures"][0]
    assert replayed["violation"] == found["failures"][0]["violation"]
    assert replayed["transcript"] == found["failures"][0]["transcript"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["conform"], "give the SUT command after --"),
        (["conform", "--levels", "sideways", "--", "x"], "unknown level"),
        (["conform", "--timeout", "nan", "--", "x"], "--timeout: nan is not a number of seconds"),
        (["conform", "--timeout", "inf", "--", "x"], "--timeout: inf is not a number of seconds"),
        (["conform", "--timeout", "1e10", "--", "x"], "from 0.5 to 86400"),
        (["conform", "--timeout", "1e-9", "--", "x"], "--timeout: 1e-09 is not a number"),
        (["conform", "--timeout", "-1", "--", "x"], "--timeout: -1.0 is not a number"),
        (["conform", "--schedules", "10000000000", "--", "x"], "'--schedules'"),
        (["conform", "--replay", "-10" + "0" * 30, "--", "x"], "--replay: seed -10"),
        (["conform", "--junit", "/nonexistent/dir/j.xml", "--", "x"], "does not exist"),
        (["conform", "--workers", "0", "--", "x"], "--workers"),
        (["conform", "--replay", "1", "--replay-file", __file__, "--", "x"], "exclude each other"),
        (["sut", "--mutant", "nope"], "unknown mutant"),
    ],
)
def test_usage_errors_exit_2(args: list[str], message: str) -> None:
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2, result.output
    assert message in result.output


def test_sut_lists_the_catalog() -> None:
    result = CliRunner().invoke(main, ["sut", "--list-mutants"])
    assert result.exit_code == 0
    assert all(name in result.output for name in CATALOG)
