"""Opening an untrusted input file: a regular file, or a clear refusal, never a hang.

Every loader of a file a user names (audit logs, regression files, contracts,
scenarios) opens it through :func:`open_regular`. A path may name something that
is not a file: a FIFO with no writer (``open`` blocks forever), ``/dev/zero`` or
``/dev/urandom`` (``read`` never ends), a terminal, a socket, a folder. The file is
opened with ``O_NONBLOCK`` (so opening a FIFO returns at once) and refused by
``fstat`` unless it is a regular file, with :class:`NotRegularFile` saying what
it is; the check is on the open descriptor, so the path cannot be swapped for a
device between the check and the read.

Cost: one ``open`` and one ``fstat``.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import BinaryIO

from fencepost.inputs.limits import InputProblem

_KINDS = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


class NotRegularFile(InputProblem):
    """The path names a FIFO, a device, a socket or a folder, not a file."""


def kind_of(mode: int) -> str:
    """What a file of ``mode`` is, in words (``"a FIFO (named pipe)"``)."""
    for test, words in _KINDS:
        if test(mode):
            return words
    return "not a regular file"


def refusal(mode: int) -> str:
    """The reason a non-regular file is refused."""
    if stat.S_ISDIR(mode):
        return "is a directory, not a file"
    return (
        f"{kind_of(mode)}, not a regular file; an input is read from a file "
        "(a pipe or a device could block or never end)"
    )


def open_regular(path: str | os.PathLike[str]) -> BinaryIO:
    """``path`` opened for binary reading, if it is a regular file.

    Raises :class:`NotRegularFile` (a FIFO with no writer included: it is never
    waited for) and ``OSError`` for a file that cannot be opened.
    """
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path, flags)
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise NotRegularFile(None, refusal(mode))
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def is_regular(path: Path) -> bool:
    """Whether ``path`` is a regular file (following links), without opening it."""
    try:
        return stat.S_ISREG(path.stat().st_mode)
    except OSError:
        return False
