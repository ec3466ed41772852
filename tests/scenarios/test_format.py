"""The scenario format: bad files are refused with the file, the line and the field."""

from __future__ import annotations

from pathlib import Path

import pytest

from fencepost.judge.values import Cut
from fencepost.scenarios.format import (
    load_file,
    load_text,
    scenario_files,
)
from fencepost.scenarios.spec import (
    Publish,
    ScenarioError,
)

GOOD = """\
name = "x-ok"
description = "a test scenario"
source = "tests"

[orders.ts]
kind = "integer"
successor = false

[[epochs]]
epoch = 1
members = { A = "ts" }

[[truth]]
partition = "A"
events = [{ id = "a1", at = 10 }]

[[steps]]
do = "certify"
partition = "A"
cut = "through 10"

[[steps]]
do = "publish"
publisher = "p1"
expect = { outcome = "published", cut = "through 10" }
record = { revision = 1, writer = "p1" }
"""


def error_of(text: str, name: str = "x-ok") -> ScenarioError:
    with pytest.raises(ScenarioError) as info:
        load_text(text, f"dir/{name}.toml")
    return info.value


def line_of(text: str, needle: str) -> int:
    for number, line in enumerate(text.splitlines(), start=1):
        if needle in line:
            return number
    raise AssertionError(needle)


def test_the_good_file_loads_into_plain_data() -> None:
    sc = load_text(GOOD, "dir/x-ok.toml")
    assert sc.name == "x-ok" and sc.verdict == "ok"
    assert [s.kind for s in sc.steps] == ["certify", "publish"]
    assert sc.steps[1].line == line_of(GOOD, 'do = "publish"') - 1
    publish = sc.steps[1].action
    assert isinstance(publish, Publish) and publish.publisher == "p1"
    assert sc.steps[1].expect.attempt is not None
    assert sc.steps[1].expect.attempt.cut == Cut.through(10)
    assert sc.publishers == ("p1",)


def test_malformed_toml_names_its_line() -> None:
    text = GOOD.replace('kind = "integer"', 'kind = "integer')
    err = error_of(text)
    assert err.file == "dir/x-ok.toml"
    assert err.line == line_of(text, 'kind = "integer')
    assert "TOML syntax" in str(err) and str(err).startswith(f"dir/x-ok.toml:{err.line}: ")


@pytest.mark.parametrize(
    ("old", "new", "needle", "problem"),
    [
        ('source = "tests"', 'source = "tests"\nsummary = "x"', "summary", "unknown field"),
        ('do = "certify"', 'do = "certify"\ncutt = "x"', "cutt", "has no field 'cutt'"),
        ('do = "certify"', 'do = "certifyy"', "certifyy", "did you mean 'certify'"),
        ("successor = false", "successor = 1", "successor = 1", "true or false"),
        ("epoch = 1", "epoch = true", "epoch = true", "the boolean true"),
        ("epoch = 1", "epoch = 1.0", "epoch = 1.0", "the float 1.0"),
        ("epoch = 1", "epoch = 99999999999999999999", "epoch = 9999", "out of range"),
        ('cut = "through 10"', 'cut = "through 1.5"', "through 1.5", "not an integer"),
        ('cut = "through 10"', 'cut = "over 10"', "over 10", "'before X' or 'through X'"),
        ('cut = "through 10"', "cut = 10", "cut = 10", "a cut is a string"),
        ('partition = "A"\ncut', 'partition = "Z"\ncut', 'partition = "Z"', "not a member"),
        ('publisher = "p1"', 'publisher = "p1"\nmax_pages = 2', "max_pages", "no field"),
    ],
)
def test_field_errors_name_the_line_and_the_field(
    old: str, new: str, needle: str, problem: str
) -> None:
    assert old in GOOD
    text = GOOD.replace(old, new, 1)
    err = error_of(text)
    assert err.line == line_of(text, needle), str(err)
    assert problem in str(err)


def test_nan_and_infinity_are_not_positions() -> None:
    text = GOOD.replace("at = 10", "at = nan")
    err = error_of(text)
    assert err.line == line_of(text, "at = nan")
    assert "nan (not a number)" in str(err)
    err = error_of(GOOD.replace("at = 10", "at = inf"))
    assert "infinity" in str(err)


def test_huge_counts_are_refused_but_huge_coordinates_are_coordinates() -> None:
    err = error_of(GOOD.replace('source = "tests"', 'source = "tests"\nmax_retries = 10000000'))
    assert "out of range" in str(err) and "max_retries" in str(err)
    text = GOOD.replace('publisher = "p1"', 'publisher = "p1"\npause_before = "write_publication"')
    text = text.replace(
        'pause_before = "write_publication"',
        'pause_before = "write_publication"\npause_nth = 123456789012',
    )
    assert "out of range" in str(error_of(text))
    big = "1" + "0" * 40
    sc = load_text(
        GOOD.replace("at = 10", f"at = {big}").replace("through 10", f"through {big}"),
        "dir/x-ok.toml",
    )
    assert sc.steps[0].expect.empty
    assert sc.events(1, "A")[0].at == int(big)


def test_the_name_carries_the_verdict() -> None:
    err = error_of(GOOD.replace('name = "x-ok"', 'name = "y-ok"'))
    assert "must equal the file name" in str(err) and err.line == 1
    err = error_of(GOOD.replace('name = "x-ok"', 'name = "x"'), name="x")
    assert "end it in '-ok'" in str(err)
    bad = GOOD.replace('name = "x-ok"', 'name = "x-bad"')
    assert "needs a [broken] table" in str(error_of(bad, name="x-bad"))
    err = error_of(GOOD.replace('source = "tests"', 'source = "tests"\nvariant = "relabel"'))
    assert "only '-bad' scenarios" in str(err)
    err = error_of(
        bad.replace('source = "tests"', 'source = "tests"\nvariant = "relabl"')
        + '\n[broken]\nproperty = "soundness"\n',
        name="x-bad",
    )
    assert "did you mean 'relabel'" in str(err)


def test_a_worker_left_paused_is_named_at_its_pausing_step() -> None:
    text = GOOD.replace(
        'publisher = "p1"\nexpect = { outcome = "published", cut = "through 10" }',
        'publisher = "p1"\npause_before = "write_publication"',
    )
    err = error_of(text)
    assert "left paused" in str(err)
    assert err.line == line_of(text, 'do = "publish"') - 1


def test_an_expectation_on_a_step_that_ends_nothing_is_refused() -> None:
    text = GOOD.replace(
        'publisher = "p1"\n',
        'publisher = "p1"\npause_before = "write_publication"\n',
    )
    text += '\n[[steps]]\ndo = "resume"\nworker = "p1"\n'
    err = error_of(text)
    assert "no request ends at this step" in str(err)
    assert err.line == line_of(text, "expect = ")


def test_semantic_mistakes_are_explained() -> None:
    cases = [
        (
            GOOD.replace('kind = "integer"\nsuccessor = false', 'kind = "integer"'),
            "successor = true",
        ),
        (GOOD.replace("epoch = 1\nmembers", "epoch = 0\nmembers"), "out of range"),
        (GOOD.replace('{ A = "ts" }', '{ A = "tz" }'), "not declared"),
        (
            GOOD.replace('id = "a1", at = 10 }]', 'id = "a1", at = 10 }, { id = "a1", at = 10 }]'),
            "listed twice",
        ),
        (GOOD.replace('outcome = "published"', 'outcome = "done"'), "one of published"),
        (GOOD + '\n[[steps]]\ndo = "reshard"\nepoch = 2\n', "no epoch is declared after"),
        (GOOD + '\n[[steps]]\ndo = "resume"\nworker = "p1"\n', "not paused"),
        (
            GOOD
            + '\n[[steps]]\ndo = "publish"\npublisher = "p1"\n'
            + 'faults = { read_membership = ["applied_lost"] }\n',
            "a read is never applied",
        ),
        (GOOD + '\n[[steps]]\ndo = "ingest"\nreader = "p1"\npartition = "A"\n', "is a publisher"),
        (GOOD + '\n[[steps]]\ndo = "finalize"\nevents = ["zz"]\n', "not an event"),
    ]
    for text, problem in cases:
        assert problem in str(error_of(text)), (problem, str(error_of(text)))


def test_files_and_folders(tmp_path: Path) -> None:
    (tmp_path / "x-ok.toml").write_text(GOOD, encoding="utf-8")
    (tmp_path / "notes.txt").write_text("not a scenario", encoding="utf-8")
    assert [p.name for p in scenario_files([tmp_path])] == ["x-ok.toml"]
    assert load_file(tmp_path / "x-ok.toml").name == "x-ok"
    with pytest.raises(ScenarioError, match="no such file"):
        scenario_files([tmp_path / "missing.toml"])
    with pytest.raises(ScenarioError, match=r"ends in \.toml"):
        scenario_files([tmp_path / "notes.txt"])
    (tmp_path / "empty").mkdir()
    with pytest.raises(ScenarioError, match=r"no \*\.toml"):
        scenario_files([tmp_path / "empty"])
    raw = tmp_path / "y-ok.toml"
    raw.write_bytes(b'name = "y-ok"\n\xff\n')
    with pytest.raises(ScenarioError, match="not UTF-8") as info:
        load_file(raw)
    assert info.value.line == 2
