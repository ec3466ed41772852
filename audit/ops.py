"""One store operation as its caller saw it: the unit of an audit log.

An :class:`Op` is one line of the log (docs/audit.md), already read and
validated: who called (``worker``, its ``seq``), on which ``stream``, what
(``kind`` and ``args``, the judge's own values), when (``t0`` the invocation,
``t1`` the completion, on one clock shared by every worker of the log), and what
came back (``status`` and ``result``).

An indefinite operation (its response was lost, or its process died in the
call) may take effect at any time after ``t0``, or never: its ``t1`` is
``math.inf``. A definite error did not take effect and constrains nothing.

Cost: an op holds its arguments and result, O(size of the line).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import Enum
from typing import Any

INF = math.inf


class Status(Enum):
    """How the call ended, as far as its caller could tell."""

    OK = "ok"
    CONFLICT = "conflict"
    ERROR = "error"
    INDEFINITE = "indefinite"


#: The store operations a log may hold, and the attempt, drop and segment markers.
STORE_OPS = (
    "create_stream",
    "read_publication",
    "write_publication",
    "read_membership",
    "write_membership",
    "read_checkpoint",
    "read_checkpoints",
    "write_checkpoint",
    "record_outcome",
    "outcomes",
)
ATTEMPT = "attempt"
DROPPED = "dropped"
#: The first line of every segment the recorder writes (never an operation of a stream).
SEGMENT = "segment"


@dataclass(slots=True, eq=False)
class Op:
    """One operation; ``where`` is ``file:line`` of the line that completed it."""

    where: str
    worker: str
    seq: int
    stream: str
    kind: str
    t0: int
    t1: float
    status: Status
    args: dict[str, Any]
    result: Any = None
    attempt: str | None = None
    index: int = 0

    def __reduce__(self) -> tuple[type[Op], tuple[Any, ...]]:
        """Pickled as its fields (the audit's on-disk sort): faster than the generic path."""
        return (
            Op,
            (
                self.where,
                self.worker,
                self.seq,
                self.stream,
                self.kind,
                self.t0,
                self.t1,
                self.status,
                self.args,
                self.result,
                self.attempt,
                self.index,
            ),
        )

    def __repr__(self) -> str:
        end = "inf" if self.t1 == INF else str(int(self.t1))
        return f"Op({self.worker}#{self.seq} {self.kind} {self.status.value} [{self.t0}, {end}])"
