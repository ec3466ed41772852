"""Every document the code and the docs refer to is in the repository, with the section named.

Users of the package have the repository's ``docs/`` and nothing else, so a
comment saying "docs/semantics.md section 4" must point at a file that exists and
a section that exists in it. Checked over every tracked source, document, scenario
and contract file:

- ``docs/NAME.md`` (and other repository paths ending in ``.md`` or ``.txt``)
  names an existing file;
- ``docs/NAME.md section N`` / ``sections N and M`` / ``sections N-M`` names
  ``## N.`` headings of that file;
- ``docs/procedure.md step N`` names a numbered step of the procedure;
- nothing refers to the steering repository's ``shared/`` folder.
"""

from __future__ import annotations

import re
import subprocess
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

DOC = re.compile(r"(?<![\w/.-])((?:docs|scenarios|tests|contracts|examples)/[\w./-]+\.(?:md|txt))")
SECTION = re.compile(
    r"(docs/[\w-]+\.md),? sections? (\d+)(?:(?:\s*(?:and|-|to|,)\s*)(\d+))?", re.IGNORECASE
)
STEP = re.compile(r"docs/procedure\.md,? steps? (\d+)")


def tracked() -> list[Path]:
    out = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    keep = (".py", ".md", ".toml", ".txt", ".json", ".yaml", ".yml")
    return [ROOT / p for p in out if p.endswith(keep) and (ROOT / p).is_file()]


@cache
def sections(doc: str) -> frozenset[int]:
    text = (ROOT / doc).read_text()
    return frozenset(int(m) for m in re.findall(r"^## (\d+)\.", text, re.MULTILINE))


@cache
def steps() -> frozenset[int]:
    text = (ROOT / "docs/procedure.md").read_text()
    return frozenset(int(m) for m in re.findall(r"^(\d+)\. ", text, re.MULTILINE))


def references() -> list[tuple[str, int, str]]:
    found = []
    for path in tracked():
        rel = str(path.relative_to(ROOT))
        if path == Path(__file__).resolve():
            continue  # its own teeth cases name missing documents on purpose
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            found.append((rel, number, line))
    return found


def test_every_referenced_document_exists() -> None:
    missing = []
    for rel, number, line in references():
        for target in DOC.findall(line):
            target = target.rstrip(".")
            if not (ROOT / target).exists():
                missing.append(f"{rel}:{number}: {target}")
    assert missing == []


def test_every_referenced_section_and_step_exists() -> None:
    missing = []
    for rel, number, line in references():
        for doc, first, last in SECTION.findall(line):
            if not (ROOT / doc).exists():
                continue  # reported by the test above
            wanted = {int(first)} | ({int(last)} if last else set())
            if " - " not in line and last and int(last) > int(first):
                wanted |= set(range(int(first), int(last) + 1))
            absent = wanted - sections(doc)
            if absent:
                missing.append(f"{rel}:{number}: {doc} section(s) {sorted(absent)}")
        for step in STEP.findall(line):
            if int(step) not in steps():
                missing.append(f"{rel}:{number}: docs/procedure.md step {step}")
    assert missing == []


def test_nothing_refers_to_the_steering_repository() -> None:
    found = [
        f"{rel}:{number}"
        for rel, number, line in references()
        if re.search(r"shared/(spec|providers|field-bugs)", line)
    ]
    assert found == []


@pytest.mark.parametrize(
    ("line", "ok"),
    [
        ("see docs/semantics.md section 4", True),
        ("see docs/semantics.md section 9", False),
        ("docs/semantics.md sections 5 and 6", True),
        ("docs/procedure.md step 5", True),
        ("docs/procedure.md step 7", False),
        ("docs/nowhere.md", False),
    ],
)
def test_the_checker_has_teeth(line: str, ok: bool) -> None:
    bad = [t for t in DOC.findall(line) if not (ROOT / t).exists()]
    for doc, first, last in SECTION.findall(line):
        wanted = {int(first)} | ({int(last)} if last else set())
        bad += [str(s) for s in wanted - sections(doc)]
    bad += [s for s in STEP.findall(line) if int(s) not in steps()]
    assert (not bad) is ok
