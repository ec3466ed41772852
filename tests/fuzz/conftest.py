"""Print how many inputs each fuzz target ran (docs/robustness.md quotes these counts)."""

from __future__ import annotations

import pytest


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    from test_fuzz_loaders import RUNS, VALID

    if RUNS:
        terminalreporter.section("fuzz targets: inputs run (valid ones among them)")
        for target, count in sorted(RUNS.items()):
            terminalreporter.write_line(f"{target:<24} {count:>8,}  ({VALID[target]:,} valid)")
