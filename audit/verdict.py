"""What an audit finds: violations with their fragment, undecided registers, notes.

Plain data, so the text report (:mod:`fencepost.audit.timeline`), the JSON
output and the HTML report draw the same thing.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from fencepost.audit.ops import Op

#: The property names an audit reports besides docs/semantics.md section 7's
#: (:class:`fencepost.judge.properties.Property`).
LINEARIZABILITY = "linearizability"
OP_ID_REUSE = "op_id_reuse"


@dataclass(frozen=True)
class Violation:
    """One property the log breaks.

    ``ops`` is the fragment that shows it (for linearizability, a minimal one:
    without any one of its operations it is linearizable), ``marked`` the
    operations at fault, ``start`` what the register could hold just before the
    fragment, in words (empty when it does not matter).
    """

    property: str
    stream: str
    message: str
    ops: tuple[Op, ...]
    marked: tuple[Op, ...] = ()
    start: str = ""


@dataclass
class StreamVerdict:
    """The audit of one stream."""

    stream: str
    operations: int = 0
    violations: list[Violation] = field(default_factory=list)
    undecided: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    dropped: int = 0  # lines the recorder could not write (full disk)
    largest_frontier: int = 0  # the most configurations one register's search held at once
