"""The values an audit compares, and how it names them.

Register values are small tuples of plain values (cheap to hash: the
linearizability search keeps sets of them), read back into words by
:func:`describe`. :class:`Shown` keeps the values a register showed, by
revision, so that each newly shown revision is compared with its neighbours.

Cost: O(1) per value; :meth:`Shown.add` O(log r + r_after) for r revisions kept.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Any

from fencepost.audit.ops import INF, Op
from fencepost.audit.register import ABSENT, UNKNOWN, WILD
from fencepost.judge.values import Checkpoint, Record


def record_value(r: Record) -> Hashable:
    """What a publication revision holds besides its number, as a cheap hashable key."""
    cut = r.cut
    return (r.epoch, cut.endpoint._value_, cut.at, r.op_id)  # _value_: .value, no descriptor


def checkpoint_value(c: Checkpoint | None) -> Hashable:
    if c is None:
        return None
    return (c.cut.endpoint.value, c.cut.at, c.token, c.scope, c.finality.value)


def describe(value: Hashable, rev: int, what: str = "record") -> str:
    """A register state in words."""
    if rev == ABSENT:
        return "not created yet"
    if rev == UNKNOWN:
        return "in a state the log never shows"
    if value is WILD:
        return f"revision {rev} (its value not shown)"
    if what == "record":
        assert isinstance(value, tuple)
        epoch, kind, at, op_id = value
        cut = "nothing" if kind == "nothing" else f"{kind} {at!r}"
        by = f", written by {op_id}" if op_id else ""
        return f"revision {rev}: epoch {epoch}, {cut}{by}"
    if value is None:
        return "generation 0: no checkpoint"
    assert isinstance(value, tuple)
    kind, at, _, _, finality = value
    cut = "nothing" if kind == "nothing" else f"{kind} {at!r}"
    return f"generation {rev}: {cut} ({finality})"


@dataclass
class Shown:
    """The values a register showed, by revision, for the section 7 properties."""

    revs: list[int] = field(default_factory=list)
    values: dict[int, tuple[Any, Op]] = field(default_factory=dict)
    deadline: dict[int, float] = field(default_factory=dict)

    def add(self, rev: int, value: Any, op: Op) -> tuple[tuple[int, Any, Op] | None, ...] | None:
        """Record ``value`` at ``rev``; the neighbours to compare with when it is new."""
        if op.t1 < self.deadline.get(rev, INF):
            self.deadline[rev] = op.t1
        if rev in self.values:
            return None
        self.values[rev] = (value, op)
        i = bisect_left(self.revs, rev)
        self.revs.insert(i, rev) if i < len(self.revs) else self.revs.append(rev)
        revs, values = self.revs, self.values
        below = None
        if i > 0:
            r = revs[i - 1]
            below = (r, *values[r])
        above = None
        if i + 1 < len(revs):
            r = revs[i + 1]
            above = (r, *values[r])
        return (below, above)


def written(op: Op) -> Record:
    a = op.args
    return Record(a["epoch"], a["cut"], a["expected_revision"] + 1, a["op_id"])


def light(op: Op) -> Op:
    """The op without its result (kept long for op_id reuse reports)."""
    return Op(
        op.where,
        op.worker,
        op.seq,
        op.stream,
        op.kind,
        op.t0,
        op.t1,
        op.status,
        op.args,
        None,
        op.attempt,
        op.index,
    )


def op_words(op: Op) -> str:
    """An operation in domain words, for messages."""
    a = op.args
    if op.kind == "write_publication":
        return (
            f"{op.worker}'s write {a['op_id']} (revision {a['expected_revision']} -> "
            f"epoch {a['epoch']}, {a['cut']})"
        )
    if op.kind == "write_checkpoint":
        cp = a["checkpoint"]
        exp = a["expected_generation"] or 0
        return (
            f"{op.worker}'s checkpoint write of {cp.partition} ({cp.cut}, generation {exp} -> "
            f"{exp + 1})"
        )
    if op.kind == "read_publication":
        return f"{op.worker}'s read at {op.where}"
    return f"{op.worker}'s {op.kind} at {op.where}"
