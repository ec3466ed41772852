"""``fencepost conform --world late-commits``: options, exit codes, every output, replay.

The reference tools run as subprocesses (``late_tools.py VARIANT``), as an
adapter would (``fencepost adapter NAME``), with a small budget where the
whole search is not the point.
"""

from __future__ import annotations

import json
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from click.testing import CliRunner

from fencepost.cli import main

TOOL = str(Path(__file__).with_name("late_tools.py"))
SMALL = ["--depth", "0", "--schedules", "2"]


def tool(variant: str) -> list[str]:
    return [sys.executable, TOOL, variant]


def conform(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["conform", *args])
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize(
    ("args", "option", "words"),
    [
        (["--max-commit-delay", "5"], "--max-commit-delay", "add --world late-commits"),
        (["--cursor", "integer"], "--cursor", "add --world late-commits"),
        (["--horizon"], "--horizon", "add --world late-commits"),
        (["--reads", "snapshot"], "--reads", "add --world late-commits"),
        (["--partitions", "one"], "--partitions", "add --world late-commits"),
        (["--stories", "lost-commit"], "--stories", "add --world late-commits"),
        (["--world", "late-commits", "--stories", "lost-comit"], "--stories", "lost-commit"),
        (["--world", "late-commits", "--reads", "stale"], "--reads", "stale"),
        (["--world", "late-commits", "--partitions", "two"], "--partitions", "two"),
        (["--levels", "sync"], "--levels", "tested only in the late-commits world"),
        (["--world", "late-commits", "--levels", "publisher"], "--levels", "only level sync"),
        (["--world", "late-commits", "--workers", "3"], "--workers", "one tool worker"),
        (["--world", "late-commits", "--cursor", "float"], "--cursor", "float"),
        (["--world", "late-commits", "--max-commit-delay", "-1"], "--max-commit-delay", "-1"),
        (["--world", "later"], "--world", "later"),
    ],
)
def test_options_that_mean_nothing_in_the_world_are_refused_by_name(
    args: list[str], option: str, words: str
) -> None:
    code, _, err = conform(*args, "--", *tool("correct"))
    assert code == 2
    assert option in err and words in err


def test_a_correct_tool_conforms_and_the_summary_ends_with_the_verdict(tmp_path: Path) -> None:
    junit = tmp_path / "junit.xml"
    html = tmp_path / "report.html"
    md = tmp_path / "summary.md"
    code, out, _ = conform(
        "--world",
        "late-commits",
        "--levels",
        "sync",
        *SMALL,
        "--junit",
        str(junit),
        "--html",
        str(html),
        "--summary-md",
        str(md),
        "--",
        *tool("correct"),
    )
    assert code == 0, out
    lines = out.strip().splitlines()
    assert lines[0] == "fencepost conform --world late-commits: CONFORMANT"
    assert lines[1].startswith("  across the search: rows lost in 0 of")
    assert lines[-1].startswith("verdict: CONFORMANT: no row lost")
    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite is not None and suite.get("failures") == "0"
    props = {p.get("name"): p.get("value") for p in suite.iter("property")}
    assert props["world"] == "late-commits" and props["max_commit_delay"] == "10"
    assert "power.random.append-reread" in props
    assert "CONFORMANT" in md.read_text() and "<svg" not in html.read_text()


def test_a_lossy_tool_leads_with_its_lost_rows_and_its_story(tmp_path: Path) -> None:
    saved = tmp_path / "saved.jsonl"
    html = tmp_path / "report.html"
    folder = tmp_path / "report"
    code, out, _ = conform(
        "--world",
        "late-commits",
        "--depth",
        "0",
        "--schedules",
        "0",
        "--save",
        str(saved),
        "--html",
        str(html),
        "--report",
        str(folder),
        "--junit",
        str(tmp_path / "junit.xml"),
        "--",
        *tool("through-max"),
    )
    assert code == 1
    # JUnit by the one writer: the finding on the phase that found it, with its story
    suite = ET.parse(tmp_path / "junit.xml").getroot().find("testsuite")
    assert suite is not None
    failed = [c for c in suite.iter("testcase") if c.find("failure") is not None]
    assert suite.get("failures") == str(len(failed)) and failed
    failure = failed[0].find("failure")
    assert failure is not None and failure.get("type") == "no_lost_rows"
    assert "r24 fell between" in (failure.text or "")
    written = sorted(p.name for p in folder.iterdir())
    assert written == [
        "finding-1-no_lost_rows-bad.jsonl",
        "finding-1-no_lost_rows-transcript.jsonl",
        "finding-1-no_lost_rows.txt",
        "summary.json",
        "summary.txt",
    ]
    lines = out.strip().splitlines()
    assert lines[1] == (
        "  rows: 1 row(s) lost (r24), 0 duplicated, 0 re-read(s) absorbed by merge in the "
        "shortest counterexample"
    )
    story = next(i for i, line in enumerate(lines) if "what happened:" in line)
    schedule = next(i for i, line in enumerate(lines) if "shortest schedule found" in line)
    prop = next(i for i, line in enumerate(lines) if "property broken: no_lost_rows" in line)
    between = next(i for i, line in enumerate(lines) if "r24 fell between" in line)
    assert 1 < story < schedule < prop < between
    assert "r24 (12:00:24.412) in main commits at 12:00:32" in lines[story]
    assert "and saves a bookmark through 12:00:30; r24 (12:00:24.412)" in lines[story]
    assert lines[-1].startswith("verdict: NOT CONFORMANT: the tool loses rows")
    page = html.read_text()
    assert "writers: main" in page and "no_lost_rows" in page and "r24 commits" in page
    header = json.loads(saved.read_text().splitlines()[0])
    assert header["world"] == "late-commits" and header["rule"] == "no_lost_rows"
    replayed = conform(
        "--world", "late-commits", "--replay-file", str(saved), "--", *tool("through-max")
    )
    assert replayed[0] == 1 and "r24" in replayed[1]
    fixed = conform("--world", "late-commits", "--replay-file", str(saved), "--", *tool("correct"))
    assert fixed[0] == 0, fixed[1]
    frontier = conform("--replay-file", str(saved), "--", *tool("correct"))
    assert frontier[0] == 2 and "add --world late-commits" in frontier[2]


def test_replay_by_seed_and_json(tmp_path: Path) -> None:
    code, out, _ = conform(
        "--world",
        "late-commits",
        "--json",
        "--depth",
        "0",
        "--schedules",
        "0",
        "--",
        *tool("short-lag"),
    )
    assert code == 1
    data = json.loads(out)
    assert data["world"] == "late-commits" and data["conformant"] is False
    finding = data["findings"][0]
    assert finding["rule"] == "no_lost_rows" and finding["rows"]["lost"] == ["r24"]
    assert finding["stories"][0]["cause"] == "committed-behind-read"
    assert finding["replay"].startswith("fencepost conform --world late-commits --replay -1 ")
    again = conform("--world", "late-commits", "--replay", "-1", "--json", "--", *tool("short-lag"))
    assert again[0] == 1 and json.loads(again[1])["findings"][0]["rows"]["lost"] == ["r24"]
    integer = conform(
        "--world",
        "late-commits",
        "--cursor",
        "integer",
        "--replay",
        "-1",
        "--",
        *tool("short-lag"),
    )
    assert integer[0] == 1 and "r24 (24) in main commits at 32" in integer[1]


def test_a_tool_that_is_no_sync_tool_is_told_so() -> None:
    code, out, _ = conform(
        "--world", "late-commits", *SMALL, "--", sys.executable, "-m", "fencepost", "sut"
    )
    assert code == 1
    assert "the late-commit world tests only level sync" in out


@pytest.mark.parametrize(
    ("world", "seed", "words"),
    [
        ([], "-31", "no such base"),
        (["--world", "late-commits"], "-31", "there are 8 stories"),
        (["--world", "late-commits"], str(-(1 + 32 * (1024 * 900 + 6))), "does not have"),
    ],
)
def test_a_seed_that_names_no_case_is_a_usage_error(
    world: list[str], seed: str, words: str
) -> None:
    code, _, err = conform(*world, "--replay", seed, "--", *tool("correct"))
    assert code == 2 and "--replay" in err and words in err


ROW = {"id": "r1", "partition": "main", "at": 1704110401000, "commit": 1704110402000}
GOOD_SETUP: dict[str, object] = {
    "cursor_type": "timestamp",
    "max_commit_delay": 10000,
    "horizon": False,
    "reads": "live",
    "partitioned": False,
    "page_size": 2,
    "origin": 1704110400000,
    "stream": "orders",
    "cursor": "updated_at",
    "partitions": [{"name": "main", "appears": 1704110400000}],
    "rows": [ROW],
}


def header(**changes: object) -> str:
    base: dict[str, object] = {
        "fencepost_regression": 1,
        "world": "late-commits",
        "verdict": "bad",
        "rule": "no_lost_rows",
        "seed": None,
        "setup": GOOD_SETUP,
    }
    return json.dumps({**base, **changes})


@pytest.mark.parametrize(
    ("text", "words"),
    [
        (header(setup={**GOOD_SETUP, "rows": [{**ROW, "commit": 1704110412000}]}), "bound D"),
        (header(setup={**GOOD_SETUP, "page_size": 0}), "page_size"),
        (header(setup={**GOOD_SETUP, "colour": 1}), "colour"),
        (header(seed="x"), "seed"),
        (header() + '\n{"step": 1, "action": {"do": "dance"}}', ":2: line 2.action.do"),
        (header() + '\n{"step": 1, "action": {"do": "tick_to", "time": 1.5}}', "time"),
        (header() + "\n" + "[" * 100000, ":2: nested too deeply"),
        (header() + '\n{"step": 1, "step": 2, "action": {"do": "sync"}}', ":2: "),
        (header()[:-1] + ', "world": "frontier"}', ":1: "),
        # the one JSON-lines reader: a second "seed" must not silently replace the first
        (header()[:-1] + ', "seed": 7}', ":1: seed: duplicate key"),
        (header() + '\n{"step": 1, "action": {"do": "tick_to", "time": NaN}}', ":2: NaN"),
        ("", "empty"),
        ("\xff", ""),
    ],
)
def test_a_bad_regression_file_is_refused_with_its_line(
    tmp_path: Path, text: str, words: str
) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(text, encoding="latin-1" if text == "\xff" else "utf-8")
    code, _, err = conform(
        "--world", "late-commits", "--replay-file", str(path), "--", *tool("correct")
    )
    assert code == 2 and "--replay-file" in err and words in err
    if text.count('"step"') == 2 or text.count('"world"') == 2:
        assert "duplicate" in err, err


def test_a_regression_file_that_is_a_device_is_refused_at_once() -> None:
    code, _, err = conform(
        "--world", "late-commits", "--replay-file", "/dev/zero", "--", *tool("correct")
    )
    assert code == 2 and "/dev/zero: a character device, not a regular file" in err


def test_a_replay_warns_about_no_wrong_answer_a_single_case_cannot_reach() -> None:
    # One case reaches a few wrong answers by design: only a search warns about the rest.
    code, out, _ = conform("--world", "late-commits", "--replay", "-1", "--", *tool("short-lag"))
    assert code == 1 and "plausible wrong answers" in out
    assert "WARNING: no run would have caught" not in out
    searched = conform("--world", "late-commits", *SMALL, "--", *tool("correct"))
    assert searched[0] == 0
