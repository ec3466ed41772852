"""Output files are checked before any work starts, and reports carry only what XML can.

``--junit`` (or ``--save``) into a folder that does not exist used to be found
only after the whole run, losing its result with a traceback; every command now
refuses it first (exit 2, naming the option). Untrusted strings (a SUT's words
in a scenario's verdict) are escaped in every JUnit file.
"""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from click.testing import CliRunner

from fencepost.cli import main
from fencepost.commands import scenarios as scenarios_command
from fencepost.gate import PartResult, junit_xml
from fencepost.scenarios.outcome import TargetResult

HOSTILE = "bad \x07 \x1b[31m \ud800 \x00 end"


@pytest.mark.parametrize(
    "args",
    [
        ["scenarios", "--junit", "{missing}/j.xml"],
        ["check", "--only", "proofs", "--junit", "{missing}/j.xml"],
        ["conform", "--junit", "{missing}/j.xml", "--", sys.executable, "-m", "fencepost", "sut"],
        ["conform", "--save", "{missing}/r.jsonl", "--", sys.executable, "-m", "fencepost", "sut"],
    ],
    ids=["scenarios-junit", "check-junit", "conform-junit", "conform-save"],
)
def test_an_output_in_a_missing_folder_is_refused_before_any_work(
    tmp_path: Path, args: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import fencepost.commands.check as check_command
    import fencepost.harness.conformance as conformance
    import fencepost.scenarios.library as library

    def no_work(*args: object, **kwargs: object) -> object:
        raise AssertionError("the run started before the output path was checked")

    monkeypatch.setattr(library, "run_all", no_work)
    monkeypatch.setattr(check_command, "Scheduler", no_work)
    monkeypatch.setattr(conformance, "conform", no_work)
    missing = tmp_path / "no-such-folder"
    result = CliRunner().invoke(main, [a.format(missing=missing) for a in args])
    assert result.exit_code == 2, result.output
    assert f"the folder {missing} does not exist" in result.output
    assert "Traceback" not in result.output


def test_a_junit_path_that_is_a_folder_is_refused(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["scenarios", "--junit", str(tmp_path)])
    assert result.exit_code == 2 and "is a directory" in result.output


HOSTILE_ESCAPED = "bad \\x07 \\x1b[31m \\ud800 \\x00 end"


def test_scenario_junit_escapes_a_suts_words(tmp_path: Path) -> None:
    result = TargetResult("x-ok", "x-ok.toml", "sut", "fail", HOSTILE, "fail", narrative=(HOSTILE,))
    text = scenarios_command._junit([result])
    root = ET.fromstring(text.encode("utf-8"))  # parses: nothing XML cannot carry
    failure = root.find("testsuite/testcase/failure")
    assert failure is not None and failure.get("message") == HOSTILE_ESCAPED
    assert failure.text == HOSTILE_ESCAPED


def test_gate_junit_escapes_every_summary() -> None:
    """Each part's summary and details reach the file, escaped, in the right place."""
    text = junit_xml(
        [
            PartResult("conformance", False, HOSTILE, (HOSTILE, "second detail")),
            PartResult("proofs", True, "44 theorems as expected " + HOSTILE),
        ]
    )
    suite = ET.fromstring(text.encode("utf-8")).find("testsuite")
    assert suite is not None
    assert (suite.get("tests"), suite.get("failures")) == ("2", "1")
    failed, passed = suite.findall("testcase")
    assert (failed.get("name"), passed.get("name")) == ("conformance", "proofs")
    failure = failed.find("failure")
    assert failure is not None and failure.get("message") == HOSTILE_ESCAPED
    assert failure.text == HOSTILE_ESCAPED + "\n\nsecond detail"
    assert passed.find("failure") is None
    assert passed.findtext("system-out") == "44 theorems as expected " + HOSTILE_ESCAPED
