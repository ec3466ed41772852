"""docs/contracts.md documents every field, every rule and every example file."""

from __future__ import annotations

import re
from pathlib import Path

from review_data import DATA

from fencepost.contracts import FIELDS
from fencepost.review.findings import Severity
from fencepost.review.rules import RULES
from fencepost.review.sync import TOOL_RULES
from fencepost.review.tools import KEYS

ROOT = Path(__file__).parents[2]
DOC = (ROOT / "docs" / "contracts.md").read_text(encoding="utf-8")


def test_every_rule_is_documented_with_its_severity() -> None:
    rules: list[tuple[str, Severity]] = [(r.id, r.severity) for r in RULES]
    rules += [(r.id, r.severity) for r in TOOL_RULES]
    for rule_id, severity in rules:
        row = re.search(rf"^\| `{re.escape(rule_id)}` \| ([^|]+) \|", DOC, re.MULTILINE)
        assert row, f"rule {rule_id} missing from the rules table"
        assert severity.value in row.group(1)


def test_every_field_is_documented_in_its_table() -> None:
    sections = re.split(r"^### ", DOC, flags=re.MULTILINE)
    for table, fields in FIELDS.items():
        head = table.split(".")[0].strip("[]").split(" ")[0]
        section = next((s for s in sections if head in s.splitlines()[0]), None)
        assert section is not None, f"no section for {table}"
        for field in fields:
            assert f"| `{field}` |" in section, f"{table}.{field} undocumented"


def test_every_example_file_is_listed() -> None:
    for path in DATA.glob("*.toml"):
        assert path.name in DOC, path.name


def test_every_shipped_contract_is_listed() -> None:
    for path in (ROOT / "contracts").glob("*.toml"):
        assert f"`{path.stem}`" in DOC, path.stem


def test_every_tool_key_is_documented() -> None:
    section = DOC[DOC.index("### What each setting means") : DOC.index("### The tool rules")]
    for tool, keys in KEYS.items():
        for key in keys:
            assert f"`{key}`" in section, f"{tool}.{key} undocumented"


def test_the_docs_start_from_a_template_that_ships() -> None:
    assert "minimal-ok.toml" not in DOC
    assert "fencepost contracts init" in DOC
    assert (ROOT / "contracts" / "templates" / "minimal.toml").is_file()
