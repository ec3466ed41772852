"""``fencepost explore`` has a budget: large bounds end with a clear message and exit 2,
never ``MemoryError`` and never exit 1 (which means a counterexample); long runs show progress.
"""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from fencepost.commands import explore as explore_command
from fencepost.commands.explore import DEFAULT_MAX_MEMORY_MIB, DEFAULT_MAX_STATES, command
from fencepost.explorer.search import INCOMPLETE, ExploreProgress, explore, memory_in_use
from fencepost.model.config import default_config

#: The issue's probe: every bound within its range, together far too many states.
LARGE = [
    "--part",
    "publication",
    "--partitions",
    "3",
    "--publishers",
    "3",
    "--coordinates",
    "5",
    "--attempts",
    "3",
    "--retries",
    "2",
]


def test_a_memory_budget_stops_the_exploration() -> None:
    # Any process uses more than one byte: the first look at the memory stops it.
    result = explore(default_config("publication"), keep_graph=False, max_memory=1)
    assert result.verdict == INCOMPLETE and result.stopped_by == "max_memory"
    assert result.states == 1024
    unbounded = explore(default_config("publication"), keep_graph=False, max_states=5000)
    assert unbounded.stopped_by == "max_states" and unbounded.states == 5000


def test_progress_reports_states_depth_rate_and_memory() -> None:
    seen: list[ExploreProgress] = []
    explore(
        default_config("publication"),
        keep_graph=False,
        max_states=6000,
        progress=seen.append,
        progress_every=0.0,
    )
    assert [p.states for p in seen] == [1024 * i for i in range(1, 6)]
    assert all(p.part == "publication" and p.depth >= 1 and p.memory > 0 for p in seen)
    assert all(p.states_per_second > 0 for p in seen)
    assert memory_in_use() > 0


def test_large_bounds_end_in_a_budget_message_and_exit_2() -> None:
    result = CliRunner().invoke(command, [*LARGE, "--max-states", "3000"])
    assert result.exit_code == 2, result.output
    assert "the budget ran out (--max-states 3,000) after 3,000 states" in result.output
    assert "nothing is proved" in result.output and "Narrow the bounds" in result.output
    result = CliRunner().invoke(command, [*LARGE, "--max-memory", "64"])
    assert result.exit_code == 2, result.output
    assert "--max-memory 64 MiB" in result.output


def test_every_exploration_has_a_default_budget() -> None:
    params = {p.name: p.default for p in command.params}
    assert params["max_states"] == DEFAULT_MAX_STATES == 3_000_000
    assert params["max_memory"] == DEFAULT_MAX_MEMORY_MIB == 4096


def test_json_says_why_it_stopped_and_prints_no_progress() -> None:
    result = CliRunner().invoke(command, [*LARGE, "--max-states", "3000", "--json"])
    assert result.exit_code == 2
    payload = json.loads(result.stdout)
    assert payload["verdict"] == "incomplete"
    assert payload["parts"][0]["stopped_by"] == "max_states"
    assert "explore publication:" not in result.stderr


def test_progress_lines_go_to_stderr(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(explore_command, "PROGRESS_SECONDS", 0.0)
    result = CliRunner().invoke(command, [*LARGE, "--max-states", "3000"])
    assert "explore publication: 1,024 states, depth" in result.stderr
    assert "states/s" in result.stderr and "MiB" in result.stderr
    assert "explore publication:" not in result.stdout


def test_memory_error_is_a_budget_message_not_a_traceback(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def exhausted(*args: object, **kwargs: object) -> object:
        raise MemoryError

    monkeypatch.setattr(explore_command, "explore_parts", exhausted)
    result = CliRunner().invoke(command, LARGE)
    assert result.exit_code == 2
    assert "out of memory below the --max-memory budget" in result.output
    assert "Traceback" not in result.output
