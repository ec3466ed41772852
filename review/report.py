"""Rendering review results as text (terminals), Markdown (pull requests) and JSON (machines).

The exit code is part of the report: :func:`exit_code` is 1 when any finding is
at least as severe as ``fail_on`` (``error`` by default), which makes
``fencepost review`` a CI gate for contract changes.
"""

from __future__ import annotations

import json
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass

from fencepost.contracts import Contract
from fencepost.review.findings import (
    Finding,
    Severity,
    SyncWitness,
    Witness,
    WitnessEvent,
    show_position,
)
from fencepost.review.rules import Reliance, review_full
from fencepost.review.tools import SyncPlan

WIDTH = 100


@dataclass(frozen=True)
class ContractReport:
    """The findings of one contract, with what identifies it."""

    provider: str
    title: str
    version: str
    file: str
    findings: tuple[Finding, ...]
    #: the declarations the verdict rests on, and what breaks if each is false
    rests_on: tuple[Reliance, ...] = ()
    #: the sync tool reviewed beside the contract, and its configuration
    tool: str | None = None
    config: str | None = None

    def count(self, severity: Severity) -> int:
        return sum(1 for f in self.findings if f.severity is severity)


def review(
    contract: Contract, plan: SyncPlan | None = None, *, rests_on: bool = True
) -> ContractReport:
    """Review one contract, beside a sync tool's plan when one is given.

    ``rests_on=False`` skips listing the cited and assumed declarations the verdict rests on
    (the findings are the same, at a fraction of the cost).
    """
    result = review_full(contract, plan, rests_on=rests_on)
    return ContractReport(
        provider=contract.provider.name,
        title=contract.provider.title,
        version=contract.provider.version,
        file=contract.origin,
        findings=result.findings,
        rests_on=result.rests_on,
        tool=plan.tool if plan is not None else None,
        config=plan.shown_config() if plan is not None else None,
    )


def totals(reports: Sequence[ContractReport]) -> dict[str, int]:
    """Findings per severity over all reports."""
    return {s.value: sum(r.count(s) for r in reports) for s in Severity}


def exit_code(reports: Sequence[ContractReport], fail_on: Severity = Severity.ERROR) -> int:
    """1 when some finding is at least as severe as ``fail_on``, else 0."""
    worst = [f.severity.rank for r in reports for f in r.findings]
    return 1 if worst and min(worst) <= fail_on.rank else 0


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _summary_line(counts: dict[str, int]) -> str:
    return ", ".join(
        (
            _plural(counts["error"], "error"),
            _plural(counts["warning"], "warning"),
            _plural(counts["note"], "note"),
        )
    )


def _event_line(e: WitnessEvent) -> str:
    extra = []
    if e.seq is not None:
        extra.append(f"seq {e.seq}")
    if e.time is not None:
        extra.append(f"t={e.time}")
    if not e.final:
        extra.append("not final")
    more = f" ({', '.join(extra)})" if extra else ""
    at = e.shown if e.shown is not None else show_position(e.at)
    return f"{e.id} in {e.partition} at {at}{more}: {e.note}"


def _witness_items(witness: Witness | SyncWitness) -> list[tuple[str, str]]:
    if isinstance(witness, SyncWitness):
        return witness.items()
    items = [("claim", witness.claim_text)]
    if witness.guarantee_text:
        items.append(("guarantee", witness.guarantee_text))
    if witness.members:
        items.append(("members", f"{', '.join(witness.members)} (when the claim was computed)"))
    items.extend(("event", _event_line(e)) for e in witness.events)
    items.append(("so", witness.explanation))
    return items


def _witness_lines(witness: Witness | SyncWitness) -> list[str]:
    return [f"{label}: {text}" for label, text in _witness_items(witness)]


def render_text(reports: Sequence[ContractReport]) -> str:
    """A report for terminals: one block per contract, witnesses under their finding."""
    out: list[str] = []
    for report in reports:
        beside = f" with {report.tool} {report.config}" if report.tool else ""
        out.append(f"{report.file}: {report.provider} ({report.title}; {report.version}){beside}")
        if not report.findings:
            out.append("  no findings")
        for f in report.findings:
            out.append(f"  {f.severity.value:<8}{f.rule}  {f.file}:{f.line}  {f.where}")
            out.append(_wrap(f.title + ". " + f.explanation, 11))
            if f.witness is not None:
                status = "verified" if f.witness.verify() else "NOT VERIFIED"
                out.append(f"           witness (Z3, {status}):")
                for label, text in _witness_items(f.witness):
                    out.append(_wrap_labelled(label, text, 13))
        if report.rests_on:
            out.append("  the verdict rests on (if one is false, the review finds):")
            for r in report.rests_on:
                out.append(_wrap(_reliance_line(r), 4, 6))
        counts = {s.value: report.count(s) for s in Severity}
        out.append(f"  {_summary_line(counts)}")
        out.append("")
    counts = totals(reports)
    out.append(f"reviewed {_plural(len(reports), 'contract')}: {_summary_line(counts)}")
    return "\n".join(out) + "\n"


def _reliance_line(r: Reliance) -> str:
    breaks = ", ".join(f"{rule} ({severity.value})" for rule, severity, _ in r.breaks)
    return f"{r.statement} (line {r.line}; {r.evidence.describe()}): {breaks}"


def _wrap(text: str, indent: int, subsequent: int | None = None) -> str:
    return textwrap.fill(
        " ".join(text.split()),
        width=WIDTH,
        initial_indent=" " * indent,
        subsequent_indent=" " * (subsequent if subsequent is not None else indent),
        break_long_words=False,
        break_on_hyphens=False,
    )


def _wrap_labelled(label: str, text: str, indent: int) -> str:
    head = " " * indent + f"{label + ':':<11}"
    return textwrap.fill(
        " ".join(text.split()),
        width=WIDTH,
        initial_indent=head,
        subsequent_indent=" " * len(head),
        break_long_words=False,
        break_on_hyphens=False,
    )


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def render_markdown(reports: Sequence[ContractReport]) -> str:
    """A report for pull requests and docs: a table per contract, witnesses below it."""
    counts = totals(reports)
    out = [
        "# Contract review",
        "",
        f"Reviewed {_plural(len(reports), 'contract')}: {_summary_line(counts)}.",
        "",
    ]
    for report in reports:
        beside = f" · with {report.tool} `{report.config}`" if report.tool else ""
        out += [
            f"## {report.provider}: {_cell(report.title)}",
            "",
            f"`{report.file}` · {_cell(report.version)}{beside}",
            "",
        ]
        if report.rests_on:
            out += [
                "The verdict rests on:",
                "",
                "| declaration | line | evidence | if false, the review finds |",
                "|---|---|---|---|",
            ]
            for r in report.rests_on:
                breaks = ", ".join(f"`{rule}` ({sev.value})" for rule, sev, _ in r.breaks)
                out.append(
                    f"| `{_cell(r.statement)}` | {r.line} | {_cell(r.evidence.describe())} | "
                    f"{breaks} |"
                )
            out.append("")
        if not report.findings:
            out += ["No findings.", ""]
            continue
        out += ["| severity | rule | where | finding |", "|---|---|---|---|"]
        for f in report.findings:
            out.append(
                f"| {f.severity.value} | `{f.rule}` | `{_cell(f.where)}` (line {f.line}) | "
                f"{_cell(f.explanation)} |"
            )
        out.append("")
        for f in report.findings:
            if f.witness is None:
                continue
            status = "verified" if f.witness.verify() else "NOT VERIFIED"
            out += [f"**Witness for `{f.rule}` at `{f.where}`** (Z3, {status})", ""]
            out += [f"- {_cell(line)}" for line in _witness_lines(f.witness)]
            out.append("")
    return "\n".join(out)


def render_json(reports: Sequence[ContractReport], fail_on: Severity = Severity.ERROR) -> str:
    """A report for machines: every finding with its witness, and the verdict."""
    payload = {
        "contracts": [
            {
                "provider": r.provider,
                "title": r.title,
                "version": r.version,
                "file": r.file,
                "tool": {"name": r.tool, "config": r.config} if r.tool else None,
                "findings": [f.to_json() for f in r.findings],
                "rests_on": [x.to_json() for x in r.rests_on],
                "summary": {s.value: r.count(s) for s in Severity},
            }
            for r in reports
        ],
        "summary": totals(reports),
        "fail_on": fail_on.value,
        "failed": exit_code(reports, fail_on) == 1,
    }
    return json.dumps(payload, indent=2, ensure_ascii=False) + "\n"
