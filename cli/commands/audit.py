"""``fencepost audit LOG...``: check the recorded history of a live system (docs/audit.md).

Exit codes: 0 every property decidable from the log holds; 1 a violation, shown
as the shortest fragment that breaks it, drawn as a timeline; 2 an unreadable
log (``file:line``), a path that is a FIFO or a device, or a usage error; 3
fencepost's own error; 4 undecided: no violation was found, but some register
ran out of ``--budget``, the recorder dropped lines (full disk), a segment is
missing, a worker's clock went back, or the log holds no operation at all, so
the log cannot be said to be correct. A CI job that must not pass an unchecked
history treats 4 as a failure.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from fencepost.audit.log import LogError
from fencepost.audit.run import AuditReport, audit
from fencepost.audit.timeline import render_text, timeline_of
from fencepost.reports.text import printable
from fencepost.views.output import check_output, report_options, wants_report, write_outputs

#: At most this many violations are drawn in text (all are in --json).
SHOWN = 10


@click.command(name="audit")
@click.argument("logs", nargs=-1, required=True, type=click.Path(dir_okay=True))
@click.option(
    "--policy",
    type=click.Choice(["monotone", "reset"]),
    default=None,
    help="The publishers' cutover policy (attempt lines carry their own). Default: monotone.",
)
@click.option(
    "--budget",
    type=click.IntRange(1, 10**9),
    default=2_000_000,
    show_default=True,
    help="Configurations one register may visit before it is reported undecided (exit 4).",
)
@click.option(
    "--memory-ops",
    type=click.IntRange(1000, 10**8),
    default=200_000,
    show_default=True,
    help="Operations held in memory while sorting; more are sorted on disk.",
)
@click.option(
    "--clock-skew",
    type=click.IntRange(0, 10**15),
    default=0,
    show_default=True,
    help="The most two workers' clocks may disagree, in the log's time unit (several machines).",
)
@click.option("--json", "as_json", is_flag=True, help="The report as one JSON object.")
@report_options("the figures and each violation's fragment drawn as a timeline")
def command(
    logs: tuple[str, ...],
    policy: str | None,
    budget: int,
    memory_ops: int,
    clock_skew: int,
    as_json: bool,
    html: Path | None,
    summary_md: Path | None,
) -> None:
    """Check audit logs: linearizability of each stream's publication record and
    checkpoints, the section 7 properties, honest outcomes, op_id reuse.

    LOGS are files or folders of files written by fencepost.impl.recording (or
    any program writing the format of docs/audit.md).
    """
    check_output(html, "--html")
    check_output(summary_md, "--summary-md")
    try:
        report = audit(
            logs, policy=policy, budget=budget, memory_ops=memory_ops, clock_skew=clock_skew
        )
    except LogError as exc:
        click.echo(printable(f"error: {exc.where}: {exc.problem}"), err=True)
        raise SystemExit(2) from None
    except OSError as exc:
        click.echo(f"error: cannot read {exc.filename or 'the log'}: {exc.strerror}", err=True)
        raise SystemExit(2) from None
    except Exception as exc:  # fencepost's own bug: say so, never a traceback
        click.echo(f"internal error in the audit ({type(exc).__name__}: {exc})", err=True)
        raise SystemExit(3) from None
    if as_json:
        click.echo(json.dumps(_as_json(report), sort_keys=True))
    else:
        _print(report)
    if wants_report(html, summary_md):
        from fencepost.views.audit import audit_report

        write_outputs(audit_report(report, "fencepost audit " + " ".join(logs)), html, summary_md)
    sys.stdout.flush()
    raise SystemExit(report.exit_code)


def _say(text: str = "") -> None:
    """A line for the terminal: what the log holds is untrusted (controls, invisible and
    direction-changing characters shown as escapes)."""
    click.echo(printable(text))


def _print(report: AuditReport) -> None:
    rate = report.operations / report.seconds if report.seconds else 0.0
    _say(
        f"audited {report.operations:,} operations on {report.streams:,} stream(s) from "
        f"{report.files} file(s) in {report.seconds:.2f} s ({rate:,.0f} operations/s)"
    )
    if report.unfinished:
        _say(
            f"  {report.unfinished} call(s) never completed (process killed in the call): "
            "taken as indefinite"
        )
    for where in report.torn:
        _say(f"  {where}: a last line cut short (killed while writing it, or a full disk): skipped")
    violations = report.violations
    for v in violations[:SHOWN]:
        _say("")
        _say(render_text(timeline_of(v)))
    if len(violations) > SHOWN:
        _say(f"\n... and {len(violations) - SHOWN} more violation(s) (--json shows all)")
    notes = [f"{s.stream}: {n}" for s in report.verdicts for n in s.notes]
    for note in notes[:20]:
        _say(f"  note: {note}")
    for s in report.incomplete:
        _say(
            f"  stream {s.stream}: the recorder dropped {s.dropped} line(s) (disk full): "
            "its history is incomplete"
        )
    for u in report.undecided:
        _say(f"  undecided: {u}")
    for doubt in report.doubts:
        _say(f"  undecided: {doubt}")
    code = report.exit_code
    if code == 1:
        props = sorted({v.property for v in violations})
        _say(f"\nverdict: {len(violations)} violation(s): {', '.join(props)}")
    elif code == 4:
        _say("\nverdict: undecided (no violation found, but the log could not be decided)")
    else:
        _say("\nverdict: every property decidable from the log holds")


def _as_json(report: AuditReport) -> dict[str, Any]:
    return {
        "exit": report.exit_code,
        "files": report.files,
        "operations": report.operations,
        "streams": report.streams,
        "seconds": round(report.seconds, 3),
        "torn": report.torn,
        "unfinished": report.unfinished,
        "violations": [timeline_of(v).to_json() for v in report.violations],
        "undecided": [*report.undecided, *report.doubts],
        "incomplete": {s.stream: s.dropped for s in report.incomplete},
        "notes": {s.stream: s.notes for s in report.verdicts if s.notes},
    }
