"""A gate run (:class:`~fencepost.gate.GateRun`) as a report.

The table of parts, then a section per failing part with its details in words,
and a section for whatever a part handed over as data, drawn in full: the
conformance run's phases, situation coverage and failure timelines, the model's
exploration table and counterexample timelines, the failing scenarios'
timelines. A passing gate thus still shows its figures and the situation coverage.

Cost: linear in the parts' evidence.
"""

from __future__ import annotations

from collections.abc import Sequence

from fencepost.explorer.search import Exploration, ExploreResult
from fencepost.gate import GateRun, PartResult
from fencepost.harness.conformance import ConformReport
from fencepost.reports import Fact, Report, Section, Status, Table
from fencepost.scenarios.outcome import TargetResult
from fencepost.views.conform import conform_report
from fencepost.views.explore import explore_report
from fencepost.views.scenarios import result_section

#: The command the gate's conformance part runs (replay commands name it).
GATE_SUT = "fencepost sut"


def parts_table(results: Sequence[PartResult]) -> Table:
    return Table(
        "parts",
        ("part", "verdict", "seconds", "summary"),
        tuple((r.name, "pass" if r.ok else "FAIL", f"{r.seconds:.1f}", r.summary) for r in results),
        tuple(Status.PASS if r.ok else Status.FAIL for r in results),
        numeric=frozenset({2}),
    )


def check_report(run: GateRun, backend: str, command: str) -> Report:
    return Report(
        "fencepost check",
        Status.PASS if run.ok else Status.FAIL,
        "every part passed" if run.ok else "the gate FAILED",
        (
            Fact("command", command, code=True),
            Fact("backend", backend),
            Fact("parts", ", ".join(r.name for r in run.results)),
        ),
        tuple(s for r in run.results for s in part_sections(r)),
        (parts_table(run.results),),
    )


def part_sections(result: PartResult) -> list[Section]:
    status = Status.PASS if result.ok else Status.FAIL
    conformance = [e for e in result.evidence if isinstance(e, ConformReport)]
    explored = [e for e in result.evidence if isinstance(e, ExploreResult)]
    scenarios = [e for e in result.evidence if isinstance(e, TargetResult)]
    if conformance:
        inner = conform_report(conformance[0], GATE_SUT)
        head = Section(
            f"{result.name}: {inner.verdict}",
            status,
            result.summary,
            inner.facts,
            inner.tables,
        )
        # the failures before the head, whose tables (phases, coverage) come after them
        return [*inner.sections, head]
    if explored:
        inner = explore_report(Exploration(list(explored)), "fencepost explore")
        return [Section(result.name, status, result.summary, (), inner.tables), *inner.sections]
    if scenarios:
        return [
            Section(result.name, status, result.summary),
            *(result_section(r) for r in scenarios if not r.ok),
        ]
    if result.ok:
        return []  # its row in the parts table says it all
    text = tuple(line for detail in result.details for line in (*detail.splitlines(), ""))
    return [Section(result.name, status, result.summary, text=text)]
