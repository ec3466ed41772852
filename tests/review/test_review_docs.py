"""docs/contracts.md documents every field, every rule and every example file."""

from __future__ import annotations

import re
from pathlib import Path

from review_data import DATA

from fencepost.contracts import FIELDS
from fencepost.review.rules import RULES

ROOT = Path(__file__).parents[2]
DOC = (ROOT / "docs" / "contracts.md").read_text(encoding="utf-8")


def test_every_rule_is_documented_with_its_severity() -> None:
    for rule in RULES:
        row = re.search(rf"^\| `{re.escape(rule.id)}` \| ([^|]+) \|", DOC, re.MULTILINE)
        assert row, f"rule {rule.id} missing from the rules table"
        assert rule.severity.value in row.group(1)


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
