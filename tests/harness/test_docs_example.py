"""The Python example of docs/conformance.md ("Using the harness from Python") runs as written."""

from __future__ import annotations

import re
import runpy
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "conformance.md"


def example() -> str:
    text = DOC.read_text(encoding="utf-8")
    section = text[text.index("## Using the harness from Python") :]
    block = re.search(r"```python\n(.*?)```", section, re.S)
    assert block is not None
    return block.group(1)


def test_the_documented_example_runs(tmp_path: Path) -> None:
    script = tmp_path / "example.py"
    script.write_text(example(), encoding="utf-8")
    namespace = runpy.run_path(str(script), run_name="__main__")
    assert namespace["result"].ok
    assert str(namespace["result"].record.cut) == "before 100"


def test_a_broken_example_would_fail(tmp_path: Path) -> None:
    broken = example().replace("assert result.ok, result.violations", "assert not result.ok")
    script = tmp_path / "broken.py"
    script.write_text(broken, encoding="utf-8")
    with pytest.raises(AssertionError):
        runpy.run_path(str(script), run_name="__main__")
