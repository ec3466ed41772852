"""``fencepost demo`` on hostile options and broken stores: the option or the store named, one
line of reason, exit 2 (exit 1 only for a record that went back); never a traceback."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from fencepost.cli import main

SMALL = ["--partitions", "2", "--events", "5", "--interval", "0"]


def demo(*args: str) -> Result:
    return CliRunner().invoke(main, ["demo", *args])


def assert_refused(result: Result, code: int, *needles: str) -> None:
    assert result.exit_code == code, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert "Traceback" not in result.output
    for needle in needles:
        assert needle in result.output, result.output


@pytest.mark.parametrize(
    ("args", "needles"),
    [
        (["--interval", "nan"], ["--interval", "not NaN"]),
        (["--interval", "inf"], ["--interval"]),
        (["--lose-responses", "nan"], ["--lose-responses", "a share of responses, not NaN"]),
        (["--lose-responses", "-0.1"], ["--lose-responses", "0<=x<=0.5"]),
        (
            ["--events", "1000000", "--partitions", "10000"],
            ["--events", "10,000,000,000 events", "at most 1,000,000"],
        ),
        (
            ["--db", "postgresql://u@127.0.0.1:1/x?fencepost_schema="],
            ["--db", "fencepost_schema=''", "1 to 63 characters"],
        ),
        (
            ["--db", "postgresql://u@127.0.0.1:1/x?fencepost_schema=a&fencepost_schema=b"],
            ["--db", "fencepost_schema is given 2 times"],
        ),
    ],
    ids=[
        "nan",
        "inf",
        "lose-nan",
        "lose-negative",
        "advertised-maximum",
        "empty-schema",
        "repeated-schema",
    ],
)
def test_hostile_options_exit_2_naming_the_option(args: list[str], needles: list[str]) -> None:
    assert_refused(demo("--db", "memory:", *args), 2, *needles)


def _finished(path: Path) -> Result:
    result = demo("--db", str(path), *SMALL, "--json")
    assert result.exit_code == 0, result.output
    return result


@pytest.mark.parametrize(
    ("statement", "needles"),
    [
        ("UPDATE publications SET cut_at = 'garbage'", ["table publications", "field cut_at"]),
        ("UPDATE memberships SET body = '{not json'", ["table memberships", "field body"]),
        ("DROP TABLE outcomes", ["outcomes are missing", "restore it from a backup"]),
        ("PRAGMA user_version = -1", ["schema version -1"]),
    ],
    ids=["garbage-cut", "membership-json", "dropped-table", "user-version"],
)
def test_a_broken_store_is_exit_2_and_says_what_is_wrong(
    tmp_path: Path, statement: str, needles: list[str]
) -> None:
    path = tmp_path / "demo.db"
    _finished(path)
    db = sqlite3.connect(path)
    db.execute(statement)
    db.commit()
    db.close()
    result = demo("--db", str(path), *SMALL)
    assert_refused(result, 2, *needles)
    assert "run the demo again" not in result.output
    assert "another source" not in result.output


def test_another_source_is_still_told_apart(tmp_path: Path) -> None:
    path = tmp_path / "demo.db"
    _finished(path)
    assert_refused(demo("--db", str(path), *SMALL, "--seed", "5"), 2, "another source")


def test_a_record_behind_the_seen_revision_is_a_regression(tmp_path: Path) -> None:
    path = tmp_path / "demo.db"

    last = [json.loads(line) for line in _finished(path).output.splitlines()][-1]
    revision = int(last["revision"])
    ok = demo("--db", str(path), *SMALL, "--seen-revision", str(revision))
    assert ok.exit_code == 0, ok.output
    behind = demo("--db", str(path), *SMALL, "--seen-revision", str(revision + 2))
    assert_refused(behind, 1, "REGRESSION on open", f"behind revision {revision + 2}")


def test_a_store_failing_mid_run_is_exit_2_not_a_regression(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A lost read that outlived its retries (or a store gone mid-run) is not a finding:
    exit 1 is kept for a record that went back."""
    from fencepost.commands import demo as demo_command
    from fencepost.impl.stores import IndefiniteStoreError

    def lost(*args: object, **kwargs: object) -> int:
        raise IndefiniteStoreError("the outcomes read's reply was lost (terminating connection)")

    monkeypatch.setattr(demo_command, "_run", lost)
    result = demo("--db", str(tmp_path / "d.db"), *SMALL)
    assert_refused(result, 2, "the store failed", "nothing acknowledged was lost")
