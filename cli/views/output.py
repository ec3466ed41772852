"""Writing output files where asked: ``--html``, ``--summary-md``, ``--junit``, CI summaries.

The Markdown summary is also appended to the file ``GITHUB_STEP_SUMMARY`` names
whenever that variable is set (GitHub Actions sets it in every step), so a
fencepost step shows its verdict on the run's page with no option at all; a
summary that cannot be appended there is a warning, never a failed run.

Output paths are checked before the run starts (:func:`check_output`): finding
out after a long search that a page cannot be written would lose the result.
A write that still fails (a full disk, ``/dev/full``, a folder made read-only
meanwhile) is an :class:`OutputError`: exit 2 naming the option and the path,
after the verdict was printed, never 1 (which is a finding) and never a traceback.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import click

from fencepost.reports import Report, render_html, render_markdown

#: The variable GitHub Actions sets to the file its job summary is read from.
STEP_SUMMARY = "GITHUB_STEP_SUMMARY"

F = TypeVar("F", bound=Callable[..., object])


def report_options(page: str) -> Callable[[F], F]:
    """The ``--html FILE`` and ``--summary-md FILE`` options; ``page`` says what the page shows."""

    def decorate(function: F) -> F:
        function = click.option(
            "--summary-md",
            type=click.Path(dir_okay=False, path_type=Path),
            help="Write a Markdown summary (also appended to $GITHUB_STEP_SUMMARY when set).",
        )(function)
        return click.option(
            "--html",
            type=click.Path(dir_okay=False, path_type=Path),
            help=f"Write a self-contained HTML report: {page}.",
        )(function)

    return decorate


def check_output(path: Path | None, option: str) -> None:
    """Refuse an output path whose folder does not exist, or that is a folder, up front."""
    if path is None:
        return
    if path.is_dir():
        raise click.BadParameter(f"{path} is a folder; give a file name", param_hint=option)
    if not path.parent.is_dir():
        raise click.BadParameter(
            f"{path}: the folder {path.parent} does not exist; create it first", param_hint=option
        )


class OutputError(click.ClickException):
    """An output file that could not be written: exit 2, naming the option and the path."""

    exit_code = 2

    def __init__(self, option: str, path: object, exc: OSError) -> None:
        super().__init__(
            f"{option}: cannot write {path}: {exc.strerror or exc}; the verdict above stands "
            "but this output is missing: free space or fix the path, and run again"
        )


def write_output(path: Path, text: str, option: str) -> None:
    """Write ``text`` (UTF-8) to ``path``; an OS error is an :class:`OutputError` (exit 2)."""
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise OutputError(option, exc.filename or path, exc) from None


def write_outputs(report: Report, html: Path | None, summary_md: Path | None) -> None:
    """The page and the summary, as asked, and the CI job summary when there is one."""
    if html is not None:
        write_output(html, render_html(report), "--html")
    if summary_md is not None:
        write_output(summary_md, render_markdown(report), "--summary-md")
    step_summary = os.environ.get(STEP_SUMMARY)
    if step_summary:
        try:
            with open(step_summary, "a", encoding="utf-8") as out:
                out.write(render_markdown(report) + "\n")
        except OSError as exc:
            click.echo(
                f"warning: could not append the summary to ${STEP_SUMMARY} ({step_summary}): "
                f"{exc.strerror or exc}",
                err=True,
            )


def wants_report(html: Path | None, summary_md: Path | None) -> bool:
    """Whether building the neutral report is worth it for this run."""
    return html is not None or summary_md is not None or bool(os.environ.get(STEP_SUMMARY))
