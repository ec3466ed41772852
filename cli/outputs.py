"""Output files of the commands: checked before any work starts, written without a traceback.

Finding out after a long search or a whole gate run that ``--junit`` points into
a folder that does not exist loses the result; :func:`check_output_file` refuses
it up front (exit 2, naming the option). :func:`write_output` turns an I/O error
at the end into a click error instead of a traceback.
"""

from __future__ import annotations

from pathlib import Path

import click


def check_output_file(path: Path | None, option: str) -> None:
    """Refuse an output file whose folder does not exist, or that is a folder."""
    if path is None:
        return
    if path.is_dir():
        raise click.BadParameter(f"{path} is a folder; give a file name", param_hint=option)
    parent = path.parent
    if not parent.is_dir():
        raise click.BadParameter(
            f"{path}: the folder {parent} does not exist; create it first", param_hint=option
        )


def write_output(path: Path, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path``; an OS error becomes a click error, not a traceback."""
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise click.FileError(str(path), hint=exc.strerror or str(exc)) from None
