"""``fencepost explore``: exit codes, output and DOT files."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from fencepost.commands.explore import command
from fencepost.model.mutants import MUTANTS

SMALL = ["--part", "publication", "--publishers", "1", "--epochs", "1"]


def test_holding_bounds_exit_zero_with_the_figures_and_every_situation_reached() -> None:
    result = CliRunner(env={"COLUMNS": "200"}).invoke(command, ["--part", "composed"])
    assert result.exit_code == 0, result.output
    for word in ("states", "transitions", "depth", "states/s", "holds", "15,532"):
        assert word in result.output
    assert "sometimes (situations each part must reach)" in result.output
    assert "cutover_reset_lower" in result.output and "18 steps" in result.output
    assert "NEVER" not in result.output


def test_bounds_that_leave_a_situation_unreached_exit_one() -> None:
    result = CliRunner(env={"COLUMNS": "200"}).invoke(command, SMALL)
    assert result.exit_code == 1, result.output
    assert "vacuous" in result.output and "NEVER" in result.output
    assert "never reached within these bounds" in result.output
    assert "cutover_monotone: Under the monotone policy" in result.output
    payload = json.loads(CliRunner().invoke(command, [*SMALL, "--json"]).output)
    assert payload["verdict"] == "vacuous"
    rows = {row["name"]: row for row in payload["parts"][0]["sometimes"]}
    assert (
        rows["cutover_monotone"]["reached"] is False and rows["cutover_monotone"]["steps"] is None
    )
    assert rows["publication"]["reached"] is True and rows["publication"]["steps"] == 6
    assert rows["publication"]["by"].startswith("publisher p1 writes")


def test_a_mutant_exits_one_with_its_counterexample() -> None:
    result = CliRunner().invoke(command, ["--part", "publication", "--mutant", "relabel"])
    assert result.exit_code == 1, result.output
    assert "Counterexample in part 'publication' (6 steps)" in result.output
    assert "Invariant broken: soundness" in result.output
    assert "no_relabeling" in result.output


def test_usage_errors_exit_two() -> None:
    runner = CliRunner()
    for args in (
        ["--mutant", "nope"],
        ["--partitions", "0"],
        ["--events", "40"],
        ["--part", "nowhere"],
        ["--coordinates", "1", "--events", "3", "--successor", "--part", "ingest"],
    ):
        result = runner.invoke(command, args)
        assert result.exit_code == 2, (args, result.output)
        assert "Error" in result.output and "Traceback" not in result.output


def test_json_output_is_machine_readable() -> None:
    result = CliRunner().invoke(command, ["--part", "ingest", "--mutant", "overwrite", "--json"])
    assert result.exit_code == 1
    payload = json.loads(result.output)
    part = payload["parts"][0]
    assert payload["verdict"] == "violated" and part["part"] == "ingest"
    assert part["violation"]["invariant"] == "checkpoint_monotonicity"
    assert part["counterexample"][0]["action"] is None
    assert part["counterexample"][-1]["action"]["kind"] == "write_checkpoint"


def test_list_mutants_names_every_mutant() -> None:
    result = CliRunner().invoke(command, ["--list-mutants", "--json"])
    assert result.exit_code == 0
    assert [m["name"] for m in json.loads(result.output)] == list(MUTANTS)


def test_dot_writes_the_counterexample_or_a_small_graph(tmp_path: Path) -> None:
    runner = CliRunner()
    path = tmp_path / "cx.dot"
    result = runner.invoke(
        command, ["--part", "publication", "--mutant", "epsilon", "--dot", str(path)]
    )
    assert result.exit_code == 1 and path.read_text().startswith("digraph counterexample")
    graph = tmp_path / "graph.dot"
    result = runner.invoke(command, [*SMALL, "--dot", str(graph)])
    # (one epoch: vacuous about cutovers, exit 1, but the graph is drawn all the same)
    assert result.exit_code == 1 and graph.read_text().startswith("digraph reachable")
    result = runner.invoke(command, ["--part", "composed", "--dot", str(tmp_path / "big.dot")])
    assert result.exit_code == 2 and "narrow the bounds" in result.output
