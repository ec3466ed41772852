"""``fencepost prove``: verdicts, witnesses, JSON, selection and exit codes."""

from __future__ import annotations

import json
from functools import partial

import pytest
from click.testing import CliRunner

from fencepost.cli import main
from fencepost.properties import proofs as P


def run(*args: str) -> tuple[int, str]:
    result = CliRunner(env={"COLUMNS": "240"}).invoke(main, ["prove", *args])
    return result.exit_code, result.output


def test_json_reports_witnesses_and_expected_verdicts() -> None:
    code, output = run("--only", "relabel_unsound", "--only", "spec_order_exact", "--json")
    assert code == 0, output
    report = json.loads(output)
    assert report["ok"] is True
    by_name = {t["name"]: t for t in report["theorems"]}
    assert set(by_name) == {
        "spec_order_exact.integer_successor",
        "spec_order_exact.integer_dense",
        "relabel_unsound.integer_successor",
        "relabel_unsound.integer_dense",
        "relabel_unsound.string",
    }
    for name, entry in by_name.items():
        assert entry["status"] == entry["expected"] == "proved"
        assert entry["as_expected"] is True
        assert (entry["witness"] is not None) == name.startswith("relabel_unsound")
    dense = by_name["relabel_unsound.integer_dense"]["witness"]
    assert all(set(v) == {"rational"} for k, v in dense.items() if k.endswith(".position"))


def test_table_shows_verdicts_witnesses_and_times() -> None:
    code, output = run("--only", "through_equals_before_next", "--statements")
    assert code == 0, output
    assert "through_equals_before_next.integer_dense" in output
    assert "refuted" in output and "proved" in output
    assert "event=" in output, "the dense refutation names the event between x and x+1"
    assert "D(through x) == D(before x+1)" in output
    assert "all 2 theorems as expected" in output


def test_unknown_theorem_is_a_usage_error() -> None:
    code, output = run("--only", "merge_gl")
    assert code == 2
    assert "no theorem named 'merge_gl'" in output
    assert "merge_glb" in output, "the error lists the families to choose from"


def test_list_names_every_theorem() -> None:
    code, output = run("--list")
    assert code == 0
    assert [line.split()[0] for line in output.splitlines()] == list(P.THEOREMS)


def test_a_verdict_other_than_expected_exits_1(monkeypatch: pytest.MonkeyPatch) -> None:
    # A false claim registered as if it held: Z3 refutes it and the command fails.
    wrong = P.Theorem(
        "manufactured_successor_sound.integer_dense",
        P.Status.PROVED,
        partial(P.rewrite_sound, P.INTEGER_DENSE, P.MANUFACTURED_SUCCESSOR),
    )
    monkeypatch.setattr(P, "THEOREMS", {wrong.name: wrong})
    code, output = run()
    assert code == 1
    assert "expected proved" in output
    code, output = run("--json")
    assert code == 1
    report = json.loads(output)
    assert report["ok"] is False
    assert report["theorems"][0]["status"] == "refuted"
    assert report["theorems"][0]["witness"]["x"] is not None


# --- fencepost prove --protocol ---------------------------------------------------------
# The proof's outcomes are decided once per worker (tests/proof_memo.py): these tests check
# what the command makes of them (lines, JSON, counterexamples, exit codes).


@pytest.mark.usefixtures("shared_protocol_proof")
def test_protocol_proof_prints_every_obligation_proved_with_its_time() -> None:
    code, output = run("--protocol")
    assert code == 0, output
    lines = [line for line in output.splitlines() if line.startswith(("proved", "refuted"))]
    assert len(lines) > 1000 and all(line.startswith("proved") for line in lines)
    assert all(" ms  " in line for line in lines)
    assert "proved" in output and "composed: safety: soundness" in output
    assert "publication: consecution: write_publication:lost-applied keeps record_certified" in (
        output
    )
    assert "ingest: initiation: reader_claim_true" in output
    assert f"all {len(lines)} obligations proved" in output


@pytest.mark.usefixtures("shared_protocol_proof")
def test_protocol_proof_json() -> None:
    code, output = run("--protocol", "--json")
    assert code == 0, output
    report = json.loads(output)
    assert report["ok"] is True and report["mutant"] is None
    kinds = {row["kind"] for row in report["obligations"]}
    assert kinds == {"initiation", "consecution", "safety"}
    assert {row["status"] for row in report["obligations"]} == {"proved"}
    lemmas = {x["name"]: x for x in report["lemmas"]}
    assert lemmas["soundness"]["property"] is True
    assert lemmas["proposal_certified"]["property"] is False


@pytest.mark.usefixtures("shared_protocol_proof")
def test_a_mutant_is_refuted_with_its_counterexample_and_its_reachability() -> None:
    code, output = run("--protocol", "--mutant", "stale-cut-retry")
    assert code == 1, output
    assert (
        "refuted" in output
        and "publication: consecution: write_publication:conflict keeps proposal_ahead_of_record"
        in output
    )
    assert "action write_publication:conflict (w=p1) from this state" in output
    assert "breaks lemma proposal_ahead_of_record" in output
    assert "-> reachable within the default bounds (10 steps" in output
    assert "retries the same cut with the new revision" in output
    assert "obligations refuted with mutant stale-cut-retry" in output
    code, output = run("--protocol", "--mutant", "stale-cut-retry", "--json")
    assert code == 1
    rows = [r for r in json.loads(output)["obligations"] if r["status"] == "refuted"]
    assert rows and rows[0]["counterexample"].startswith("action write_publication:conflict")
    assert rows[0]["reachable"]["reachable"] is True and rows[0]["reachable"]["steps"] == 10


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--protocol", "--mutant", "nope"], "unknown mutant 'nope'"),
        (["--mutant", "relabel"], "--mutant applies to the protocol proof"),
        (["--protocol", "--only", "merge_glb"], "apply to the cut-algebra theorems"),
        (["--protocol", "--timeout", "5"], "5 is not in the range"),
    ],
)
def test_protocol_usage_errors_exit_2(args: list[str], message: str) -> None:
    code, output = run(*args)
    assert code == 2
    assert message in output and "Traceback" not in output
