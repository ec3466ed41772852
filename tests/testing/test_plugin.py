"""The pytest plugin in a user's project (pytester): phases as tests, failures in words.

``fencepost sut`` is the correct implementation and ``fencepost sut --mutant
relabel`` a broken one: its failure must read like any pytest failure, with the
rule, the shortest schedule in domain words and the command that replays it.
Budgets are small (``--fencepost-depth 0``, no random schedules) to stay fast.
"""

from __future__ import annotations

import shlex
import sys
from xml.etree import ElementTree

import pytest

from fencepost.harness.bases import bases_of

pytest_plugins = ["pytester"]

SUT = shlex.join([sys.executable, "-m", "fencepost", "sut"])
SMALL = ("--fencepost-levels", "publisher", "--fencepost-schedules", "0", "--fencepost-depth", "0")


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makepyfile(test_own="def test_own_code():\n    assert sum([1, 2]) == 3\n")
    return pytester


def test_without_the_option_nothing_is_added(project: pytest.Pytester) -> None:
    result = project.runpytest("-q")
    result.assert_outcomes(passed=1)


def test_a_conformant_sut_passes_one_test_per_phase(project: pytest.Pytester) -> None:
    result = project.runpytest("--fencepost-sut", SUT, *SMALL, "-v")
    phases = 1 + len(bases_of(["publisher"]))  # error handling and each publisher base
    result.assert_outcomes(passed=phases + 1)  # and the project's own test
    result.stdout.fnmatch_lines(
        [
            f"*collected {phases + 1} items*",
            "test_own.py::test_own_code PASSED*",
            "fencepost::error handling PASSED*",
            "fencepost::publisher-offsets exhaustive (depth 0) PASSED*",
            "fencepost::publisher-keys exhaustive (depth 0) PASSED*",
        ]
    )


def test_a_broken_sut_fails_like_any_pytest_failure(project: pytest.Pytester) -> None:
    junit = project.path / "junit.xml"
    result = project.runpytest(
        "--fencepost-sut", f"{SUT} --mutant relabel", *SMALL, "-k", "offsets", f"--junitxml={junit}"
    )
    result.assert_outcomes(failed=1, deselected=len(bases_of(["publisher"])) + 1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "*_ fencepost conform [[]publisher-offsets exhaustive (depth 0)[]] -- *",
            "soundness: the record (epoch 1, through 3) covers event A3*",
            "FAILURE: soundness (docs/semantics.md section 7 property) in phase publisher-offsets*",
            "  meaning: the publication record (e, c) claims an event*",
            "  replay: fencepost conform --replay * -- * -m fencepost sut --mutant relabel",
            "  shortest schedule found: * step(s)*",
            "      1. an honest reader certifies A through 1 (epoch 1, generation 1)",
            "*w2 starts publication attempt #1; it calls read_publication",
            "*write_publication (epoch 1, through 3) at rev 0 applied; it ends: published*",
            "FAILED fencepost::publisher-offsets exhaustive (depth 0) - soundness*",
        ]
    )
    assert "transcript (" not in result.stdout.str()  # the words, not the wire
    case = (
        ElementTree.parse(junit)
        .getroot()
        .find(".//testcase[@name='publisher-offsets exhaustive (depth 0)']")
    )
    assert case is not None and case.find("failure") is not None
    properties = {p.get("name"): p.get("value") for p in case.iter("property")}
    assert properties["rule"] == "soundness" and properties["seed"] == "-2"


def test_collecting_starts_no_process(project: pytest.Pytester) -> None:
    result = project.runpytest("--fencepost-sut", "/nonexistent/sut --flag", "--collect-only", "-q")
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(
        [
            "fencepost::error handling",
            "fencepost::algebra exhaustive",
            "fencepost::random schedules",
        ]
    )


def test_the_ini_file_names_the_sut(project: pytest.Pytester) -> None:
    project.makeini(
        f"[pytest]\nfencepost_sut = {SUT}\nfencepost_levels = algebra\nfencepost_schedules = 0\n"
    )
    result = project.runpytest("--collect-only", "-q")
    result.stdout.fnmatch_lines(["fencepost::error handling", "fencepost::algebra random"])
    assert "exhaustive (depth" not in result.stdout.str()


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("--fencepost-levels", "publisher,nonsense"), "fencepost levels nonsense: choose from"),
        (("--fencepost-depth", "7"), "--fencepost-depth: 0 to 3"),
        (("--fencepost-timeout", "1e-9"), "--fencepost-timeout: 1e-09 is not a number of seconds"),
        (("--fencepost-timeout", "nan"), "--fencepost-timeout: nan is not a number of seconds"),
        (("--fencepost-schedules", "-1"), "--fencepost-schedules: 0 to 1000000"),
    ],
)
def test_bad_options_are_usage_errors(
    project: pytest.Pytester, args: tuple[str, ...], says: str
) -> None:
    result = project.runpytest("--fencepost-sut", SUT, *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert says in result.stderr.str()


def test_the_fixture_runs_a_budget_inside_a_test(pytester: pytest.Pytester) -> None:
    phase = "publisher-offsets exhaustive (depth 0)"
    pytester.makepyfile(
        test_budget=f"""
        SUT = {SUT!r}
        PHASE = {phase!r}

        def test_correct(fencepost_conform):
            report = fencepost_conform(SUT, levels="publisher", depth=0, phases=[PHASE])
            assert report.ok and [p.name for p in report.phases] == [PHASE]

        def test_broken(fencepost_conform):
            broken = SUT + " --mutant relabel"
            fencepost_conform(broken, levels="publisher", depth=0, phases=[PHASE])

        def test_broken_kept(fencepost_conform):
            report = fencepost_conform(
                [*SUT.split(), "--mutant", "relabel"], levels=["publisher"], depth=0,
                phases=[PHASE], check=False,
            )
            assert [f.violation.rule.value for f in report.failures] == ["soundness"]
        """
    )
    result = pytester.runpytest("-q")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*test_broken*",
            "soundness: the record (epoch 1, through 3)*",
            "  replay: fencepost conform --replay -2 -- *--mutant relabel",
        ]
    )


def test_a_phase_of_a_level_the_sut_does_not_declare_is_skipped(project: pytest.Pytester) -> None:
    code = (
        "import sys; from fencepost.mutants import Variant; "
        "from fencepost.sut.adapter import serve_stdio; "
        "sys.exit(serve_stdio(Variant(levels=('publisher',))))"
    )
    only_publisher = shlex.join([sys.executable, "-c", code])
    result = project.runpytest(
        "--fencepost-sut",
        only_publisher,
        "--fencepost-levels",
        "publisher,checkpointer",
        "--fencepost-schedules",
        "0",
        "--fencepost-depth",
        "0",
        "-k",
        "checkpointer-keys or publisher-keys",
        "-rs",
    )
    phases = 1 + len(bases_of(["publisher", "checkpointer", "composed"]))
    result.assert_outcomes(passed=1, skipped=1, deselected=phases + 1 - 2)  # + the own test
    result.stdout.fnmatch_lines(
        ["SKIPPED * the SUT declares publisher; this phase needs a level it does not declare *"]
    )
