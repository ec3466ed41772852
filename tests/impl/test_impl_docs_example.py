"""The complete example of docs/python-api.md runs as written."""

from __future__ import annotations

import re
import runpy
from pathlib import Path

DOC = Path(__file__).resolve().parents[2] / "docs" / "python-api.md"


def example() -> str:
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)
    assert len(blocks) == 1, "docs/python-api.md should hold exactly one runnable example"
    return str(blocks[0])


def test_the_documented_example_runs(tmp_path: Path) -> None:
    script = tmp_path / "example.py"
    script.write_text(example(), encoding="utf-8")
    namespace = runpy.run_path(str(script), run_name="__main__")
    assert namespace["second"].cut.at == 3
    assert len(namespace["effects"]) >= 8  # every event was handled at least once


def test_a_broken_example_would_fail(tmp_path: Path) -> None:
    """The extraction really runs the block: a wrong assertion in it fails."""
    broken = example().replace("Cut.before(3))", "Cut.through(3))")
    script = tmp_path / "broken.py"
    script.write_text(broken, encoding="utf-8")
    try:
        runpy.run_path(str(script), run_name="__main__")
    except AssertionError:
        return
    raise AssertionError("the broken example passed")
