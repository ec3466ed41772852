"""What docs/ci.md and .pre-commit-hooks.yaml promise, checked against the commands.

The example workflow must call options that exist, fail the build on exit 1 and
upload the reports it writes; the pre-commit hook must pick contract files and
gate on an error finding.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import click
from click.testing import CliRunner

from fencepost.cli import main

ROOT = Path(__file__).resolve().parents[2]


def _hooks() -> list[dict[str, str]]:
    """The hook file's list of flat mappings (the subset of YAML it is written in)."""
    hooks: list[dict[str, str]] = []
    for raw in (ROOT / ".pre-commit-hooks.yaml").read_text().splitlines():
        line = raw.split(" #")[0].rstrip()
        if not line or line.lstrip().startswith("#"):
            continue
        if line.startswith("- "):
            hooks.append({})
            line = line[2:]
        key, _, value = line.strip().partition(": ")
        hooks[-1][key] = value.strip()
    return hooks


def test_the_pre_commit_hook_reviews_contract_files() -> None:
    (hook,) = _hooks()
    assert hook["id"] == "fencepost-review" and hook["language"] == "python"
    assert hook["entry"] == "fencepost review"
    files = re.compile(hook["files"])
    for path in ("contracts/kafka.toml", "src/contract/mine.toml", "sources/my.contract.toml"):
        assert files.search(path), path
    for path in ("pyproject.toml", "scenarios/kcl-261-ok.toml", "contracts/x/deep.toml"):
        assert not files.search(path), path


def test_the_hook_entry_gates_on_an_error_finding() -> None:
    (hook,) = _hooks()
    words = shlex.split(hook["entry"])
    assert words[0] == "fencepost"
    clean = CliRunner().invoke(main, [*words[1:], str(ROOT / "contracts" / "kafka.toml")])
    assert clean.exit_code == 0, clean.output
    finding = CliRunner().invoke(main, [*words[1:], str(ROOT / "contracts" / "event-hubs.toml")])
    assert finding.exit_code == 1, finding.output


def _workflow() -> str:
    text = (ROOT / "docs" / "ci.md").read_text()
    blocks: list[str] = re.findall(r"```yaml\n(# \.github/workflows/.*?)```", text, re.DOTALL)
    assert len(blocks) == 1
    return blocks[0]


def test_the_example_workflow_uses_real_options_and_fails_on_exit_1() -> None:
    block = _workflow()
    run = re.search(r"fencepost conform (.*?)-- ", block.replace("\\\n", " "), re.DOTALL)
    assert run is not None
    used = [w for w in shlex.split(run.group(1)) if w.startswith("--")]
    conform = main.get_command(click.Context(main), "conform")
    assert conform is not None
    known = {opt for p in conform.params for opt in p.opts}
    assert used and set(used) <= known, set(used) - known
    assert "--junit" in used and "--html" in used
    assert "continue-on-error" not in block  # exit 1 fails the step and the build
    assert "if: always()" in block
    for written in ("fencepost-junit.xml", "fencepost-report.html"):
        assert block.count(written) == 2, written  # written by conform, then uploaded
