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
        (
            ("--fencepost-levels", "publisher,nonsense"),
            "--fencepost-levels publisher,nonsense: nonsense is not a level; levels must be "
            "some of algebra, checkpointer, publisher",
        ),
        (("--fencepost-depth", "7"), "--fencepost-depth 7 is out of range: depth must be 0-3"),
        (("--fencepost-depth", "-1"), "--fencepost-depth -1 is out of range: depth must be 0-3"),
        (
            ("--fencepost-workers", "9"),
            "--fencepost-workers 9 is out of range: workers must be 1-8",
        ),
        (
            ("--fencepost-workers", "0"),
            "--fencepost-workers 0 is out of range: workers must be 1-8",
        ),
        (
            ("--fencepost-timeout", "1e-9"),
            "--fencepost-timeout 1e-09 is out of range: timeout must be a number of seconds "
            "from 0.5 to 86400",
        ),
        (
            ("--fencepost-timeout", "nan"),
            "--fencepost-timeout nan is out of range: timeout must be a number of seconds",
        ),
        (
            ("--fencepost-schedules", "-1"),
            "--fencepost-schedules -1 is out of range: schedules must be 0-1000000",
        ),
    ],
)
def test_bad_options_are_usage_errors_naming_option_and_value(
    project: pytest.Pytester, args: tuple[str, ...], says: str
) -> None:
    result = project.runpytest("--fencepost-sut", SUT, *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert says in result.stderr.str()


@pytest.mark.parametrize(
    ("key", "value", "says"),
    [
        ("depth", "7", "fencepost_depth = 7 (pytest.ini) is out of range: depth must be 0-3"),
        (
            "workers",
            "12",
            "fencepost_workers = 12 (pytest.ini) is out of range: workers must be 1-8",
        ),
        (
            "schedules",
            "2000000",
            "fencepost_schedules = 2000000 (pytest.ini) is out of range: schedules must be "
            "0-1000000",
        ),
        (
            "timeout",
            "0.1",
            "fencepost_timeout = 0.1 (pytest.ini) is out of range: timeout must be a number of "
            "seconds from 0.5 to 86400",
        ),
        ("levels", "sync", "fencepost_levels = sync (pytest.ini): sync is not a level"),
        ("seed", "zero", "fencepost_seed = zero (pytest.ini) is not an integer"),
    ],
)
def test_bad_ini_values_are_usage_errors_naming_key_and_value(
    project: pytest.Pytester, key: str, value: str, says: str
) -> None:
    project.makefile(".ini", pytest=f"[pytest]\nfencepost_sut = {SUT}\nfencepost_{key} = {value}\n")
    result = project.runpytest("--collect-only")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert says in result.stderr.str()


def test_several_bad_values_are_named_together(project: pytest.Pytester) -> None:
    result = project.runpytest(
        "--fencepost-sut", SUT, "--fencepost-depth", "4", "--fencepost-workers", "0"
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert (
        "--fencepost-depth 4 is out of range: depth must be 0-3; "
        "--fencepost-workers 0 is out of range: workers must be 1-8"
    ) in result.stderr.str()


def test_a_bad_fixture_argument_names_the_argument(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_budget=f"""
        def test_deep(fencepost_conform):
            fencepost_conform({SUT!r}, depth=7)
        """
    )
    result = pytester.runpytest("-q")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*fencepost_conform(depth=7) is out of range: depth must be 0-3*"])


# -- the conformance items run only when asked -------------------------------------------

CONFIGURED = (
    f"[pytest]\nfencepost_sut = {SUT}\nfencepost_levels = publisher\n"
    "fencepost_schedules = 0\nfencepost_depth = 0\n"
)
PHASES = 1 + len(bases_of(["publisher"]))  # error handling and each publisher base


@pytest.fixture
def configured(project: pytest.Pytester) -> pytest.Pytester:
    """A project whose pytest.ini names the SUT, as issue 23 describes."""
    project.makefile(".ini", pytest=CONFIGURED)
    return project


def test_one_named_test_runs_no_conformance_item(configured: pytest.Pytester) -> None:
    result = configured.runpytest("test_own.py::test_own_code", "-v")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "fencepost: conformance phases of * not collected: the arguments name none*",
            "*collected 1 item",
            "test_own.py::test_own_code PASSED*",
        ]
    )
    assert "fencepost::" not in result.stdout.str()
    # the same items as without the plugin at all
    alone = configured.runpytest("test_own.py::test_own_code", "-v", "-p", "no:fencepost")
    alone.assert_outcomes(passed=1)
    alone.stdout.fnmatch_lines(["*collected 1 item"])


def test_a_path_to_one_file_runs_no_conformance_item(configured: pytest.Pytester) -> None:
    result = configured.runpytest("test_own.py", "-v")
    result.assert_outcomes(passed=1)
    assert "fencepost::" not in result.stdout.str()


def test_options_in_addopts_are_configuration_not_a_request(project: pytest.Pytester) -> None:
    project.makeini(f"[pytest]\naddopts = --fencepost-sut {SUT!r}\n")
    result = project.runpytest("test_own.py", "--collect-only", "-q")
    assert result.ret == pytest.ExitCode.OK
    assert "fencepost::" not in result.stdout.str()


def test_a_run_of_the_whole_suite_runs_them(configured: pytest.Pytester) -> None:
    result = configured.runpytest("-v")
    result.assert_outcomes(passed=PHASES + 1)
    result.stdout.fnmatch_lines(
        [
            "fencepost: conformance phases of * collected: a run of the whole suite*",
            "test_own.py::test_own_code PASSED*",
            "fencepost::error handling PASSED*",
        ]
    )


@pytest.mark.parametrize(
    ("args", "collected"),
    [
        (("fencepost",), ["fencepost::error handling", "fencepost::publisher-offsets *"]),
        (("fencepost::error handling",), ["fencepost::error handling"]),
        (
            ("test_own.py", "fencepost::error handling"),
            ["test_own.py::test_own_code", "fencepost::error handling"],
        ),
        (
            ("test_own.py", "--fencepost"),
            ["test_own.py::test_own_code", "fencepost::error handling"],
        ),
        (("test_own.py", "-m", "fencepost"), ["fencepost::error handling"]),
        (
            ("test_own.py", "--fencepost-sut", SUT),
            ["test_own.py::test_own_code", "fencepost::error handling"],
        ),
        ((".",), ["test_own.py::test_own_code", "fencepost::error handling"]),
    ],
    ids=["node-id", "one-phase", "file-and-phase", "flag", "marker", "sut-option", "rootdir"],
)
def test_asking_for_them_collects_them(
    configured: pytest.Pytester, args: tuple[str, ...], collected: list[str]
) -> None:
    result = configured.runpytest(*args, "--collect-only", "-q")
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(collected)
    if "test_own.py::test_own_code" not in collected:
        assert "test_own.py::test_own_code" not in result.stdout.str()
    if args == ("fencepost::error handling",):
        assert (
            "collected 1 item" in result.stdout.str() or "1 test collected" in result.stdout.str()
        )


def test_naming_them_runs_them(configured: pytest.Pytester) -> None:
    result = configured.runpytest("fencepost", "-v")
    result.assert_outcomes(passed=PHASES)
    result.stdout.fnmatch_lines(
        [
            "fencepost: conformance phases of * collected: named (fencepost)",
            "fencepost::error handling PASSED*",
            "fencepost::publisher-offsets exhaustive (depth 0) PASSED*",
        ]
    )
    assert "test_own_code" not in result.stdout.str()


@pytest.mark.parametrize(
    "filters",
    [("-m", "not slow"), ("-k", "random or own"), ("-k", "fencepost or own")],
    ids=["marker-not-naming-them", "keyword-matching-a-phase", "keyword-fencepost"],
)
def test_filters_never_add_them_to_a_run_that_names_a_path(
    configured: pytest.Pytester, filters: tuple[str, str]
) -> None:
    # -k and -m filter what the paths collected: "random" matches the phase
    # "random schedules", yet `pytest test_own.py -k random` must not start the SUT
    result = configured.runpytest("test_own.py", *filters, "--collect-only", "-q")
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["test_own.py::test_own_code"])
    assert "fencepost::" not in result.stdout.str()


def test_a_phase_that_does_not_exist_is_a_usage_error(configured: pytest.Pytester) -> None:
    result = configured.runpytest("fencepost::algebra exhaustive")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*fencepost::algebra exhaustive: no such conformance phase*phases are: error handling*"]
    )


def test_asking_without_a_sut_is_a_usage_error(project: pytest.Pytester) -> None:
    result = project.runpytest("--fencepost")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "--fencepost: no SUT to test; give --fencepost-sut CMD" in result.stderr.str()
    result = project.runpytest("fencepost")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "no SUT is configured" in result.stderr.str()


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
