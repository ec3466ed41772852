"""`fencepost check`: parts run, a failing part fails the gate, usage errors exit 2."""

from __future__ import annotations

import re
from pathlib import Path
from xml.etree import ElementTree

import pytest
from click.testing import CliRunner

from fencepost import gate
from fencepost.commands.check import command
from fencepost.gate import GateOptions, Part, PartResult


@pytest.mark.usefixtures("shared_protocol_proof")
def test_proofs_part_passes_and_writes_junit(tmp_path: Path) -> None:
    junit = tmp_path / "gate.xml"
    result = CliRunner().invoke(command, ["--only", "proofs", "--junit", str(junit)])
    assert result.exit_code == 0, result.output
    suite = ElementTree.parse(junit).getroot().find("testsuite")
    assert suite is not None
    assert suite.get("tests") == "1" and suite.get("failures") == "0"
    assert suite.find("testcase").get("name") == "proofs"  # type: ignore[union-attr]
    # the cut algebra, and section 7 at any size (the protocol's inductive invariants)
    out = suite.find("testcase/system-out")
    assert out is not None and "protocol obligations proved (section 7 at any size)" in (
        out.text or ""
    )


@pytest.mark.usefixtures("shared_protocol_proof")
def test_proofs_part_fails_when_the_protocol_induction_fails(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from fencepost.properties import protocol_proof

    real = protocol_proof.prove_all
    monkeypatch.setattr(
        protocol_proof, "prove_all", lambda **kw: real(**{**kw, "mutant": "relabel"})
    )
    result = gate.run_part(gate.PARTS["proofs"], GateOptions())
    assert not result.ok
    assert any("keeps proposal_certified: refuted" in d for d in result.details)


def test_a_failing_part_fails_the_gate(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    def broken(options: GateOptions) -> PartResult:
        return PartResult("broken", False, "1 invariant violated", ("the counterexample",))

    def crashing(options: GateOptions) -> PartResult:
        raise RuntimeError("store unreachable")

    monkeypatch.setitem(gate.PARTS, "broken", Part("broken", "always fails", broken))
    monkeypatch.setitem(gate.PARTS, "crashing", Part("crashing", "raises", crashing))
    junit = tmp_path / "gate.xml"
    result = CliRunner().invoke(command, ["--only", "broken,crashing", "--junit", str(junit)])
    assert result.exit_code == 1
    assert "the counterexample" in result.output
    assert "crashed: RuntimeError: store unreachable" in result.output
    suite = ElementTree.parse(junit).getroot().find("testsuite")
    assert suite is not None
    assert suite.get("failures") == "2"


def test_mutants_part_has_teeth(monkeypatch: pytest.MonkeyPatch) -> None:
    """If a mutant stops being caught (here: no invariant is checked), the part fails."""
    from fencepost.explorer import search
    from fencepost.model import mutants

    monkeypatch.setattr(mutants, "MUTANTS", {"relabel": mutants.MUTANTS["relabel"]})
    real = search.explore
    monkeypatch.setattr(
        search, "explore", lambda config, **kw: real(config, **{**kw, "invariants": ()})
    )
    result = gate.run_part(gate.PARTS["mutants"], GateOptions())
    assert not result.ok
    assert "relabel in publication: expected no_relabeling to break, got holds" in result.details


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--only", "nonsense"], "unknown part 'nonsense'"),
        (["--backend", "oracle"], "Invalid value for '--backend'"),
    ],
)
def test_usage_errors_exit_2(args: list[str], message: str) -> None:
    result = CliRunner().invoke(command, args)
    assert result.exit_code == 2
    assert message in result.output


def test_postgres_backend_needs_a_url(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FENCEPOST_DATABASE_URL", raising=False)
    result = CliRunner().invoke(command, ["--backend", "postgres", "--only", "proofs"])
    assert result.exit_code == 2
    assert "FENCEPOST_DATABASE_URL" in result.output


def _stub_parts(monkeypatch: pytest.MonkeyPatch, ok: bool = True) -> None:
    """Every part answered at once by a stub, through the gate's real seam (``--jobs 1``)."""

    def stub(part: Part, options: GateOptions) -> PartResult:
        return PartResult(part.name, ok or part.name != "explore", "stubbed", ("why",))

    monkeypatch.setattr(gate, "run_part", stub)


def test_check_says_how_long_it_takes_and_ends_with_the_next_step(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The README's main command welcomes: its first line says how long it usually takes,
    its last lines what to run on one's own system."""
    _stub_parts(monkeypatch)
    monkeypatch.setattr("os.getloadavg", lambda: (0.5, 0.5, 0.5))
    result = CliRunner().invoke(command, ["--jobs", "1"])
    assert result.exit_code == 0, result.output
    lines = result.output.rstrip("\n").splitlines()
    assert lines[0].startswith("fencepost check: every part of the gate")
    assert re.search(r"usually about \d+ s with 1 job \(longer on a busy machine\)$", lines[0])
    assert lines[-4:-3] == ["next, on your own system:"]
    commands = [line.split()[:3] for line in lines[-3:]]
    assert commands == [
        ["fencepost", "conform", "--"],
        ["fencepost", "review", "contract.toml"],
        ["fencepost", "audit", "LOG"],
    ]
    assert "YOUR_CMD" in lines[-3]


def test_check_says_when_the_machine_is_busy(monkeypatch: pytest.MonkeyPatch) -> None:
    _stub_parts(monkeypatch)
    monkeypatch.setattr("os.getloadavg", lambda: (15.6, 13.0, 10.0))
    result = CliRunner().invoke(command, ["--jobs", "1"])
    assert result.exit_code == 0, result.output
    assert "the machine is busy now (load average 15.6 on" in result.output.splitlines()[1]


def test_a_failed_gate_ends_by_naming_the_part_to_rerun(monkeypatch: pytest.MonkeyPatch) -> None:
    _stub_parts(monkeypatch, ok=False)
    result = CliRunner().invoke(command, ["--jobs", "1"])
    assert result.exit_code == 1, result.output
    last = result.output.rstrip("\n").splitlines()[-1]
    assert last.endswith("fencepost check --only explore"), last


def test_part_summaries_speak_plain_words() -> None:
    """Before: '131,971 states, all invariants hold, 27 sometimes properties reached
    (ingest: ... depth 9, holds; ...)'. (The explore part: 1.6 s on a quiet core.)"""
    explored = gate.run_part(gate.PARTS["explore"], GateOptions())
    assert explored.ok, explored.summary
    assert "sometimes" not in explored.summary and "invariant" not in explored.summary
    assert "situations that must be possible were reached" in explored.summary
