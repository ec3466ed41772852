"""Violations drawn as timelines: one lane per worker, one box per operation.

:func:`timeline_of` turns a :class:`~fencepost.audit.verdict.Violation` into
plain data (:class:`Timeline`: lanes of :class:`Box`, each from invocation to
completion, the operations at fault marked), which :func:`render_text` draws
for a terminal and an HTML report can draw as a Porcupine-style picture. Times
are drawn by rank, invocations before completions at equal times, so what
overlaps on the page is exactly what was concurrent (``A.t1 < B.t0`` is the
only thing that orders two operations).

Cost: O(k log k) for a fragment of k operations.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fencepost.audit.ops import INF, Op, Status
from fencepost.audit.verdict import Violation
from fencepost.judge.values import Checkpoint, Cut, Membership, Record


@dataclass(frozen=True)
class Box:
    """One operation: ``end`` None when its response was lost (it may take effect any time)."""

    number: int
    worker: str
    start: int
    end: int | None
    label: str
    where: str
    marked: bool


@dataclass(frozen=True)
class Lane:
    worker: str
    boxes: tuple[Box, ...]


@dataclass(frozen=True)
class Timeline:
    """What an HTML or text report draws for one violation."""

    rule: str  # the property broken
    stream: str
    message: str
    start: str
    lanes: tuple[Lane, ...]

    @property
    def boxes(self) -> list[Box]:
        return sorted((b for lane in self.lanes for b in lane.boxes), key=lambda b: b.number)

    def to_json(self) -> dict[str, Any]:
        return {
            "property": self.rule,
            "stream": self.stream,
            "message": self.message,
            "start": self.start,
            "lanes": [
                {
                    "worker": lane.worker,
                    "boxes": [
                        {
                            "number": b.number,
                            "start": b.start,
                            "end": b.end,
                            "label": b.label,
                            "where": b.where,
                            "marked": b.marked,
                        }
                        for b in lane.boxes
                    ],
                }
                for lane in self.lanes
            ],
        }


def _record(r: Record) -> str:
    by = f", by {r.op_id}" if r.op_id else ""
    return f"revision {r.revision} (epoch {r.epoch}, {r.cut}{by})"


def _cp(c: Checkpoint | None) -> str:
    if c is None:
        return "no checkpoint"
    return f"{c.partition} generation {c.generation} ({c.cut}, {c.finality.value})"


def _cut(c: Cut | None) -> str:
    return "no cut" if c is None else str(c)


def label(op: Op) -> str:
    """An operation and its answer in domain words."""
    a, r, s = op.args, op.result, op.status
    lost = {Status.INDEFINITE: ": response lost", Status.ERROR: ": failed (not applied)"}
    if op.kind == "write_publication":
        head = (
            f"write {a['op_id']}: revision {a['expected_revision']} -> "
            f"{a['expected_revision'] + 1} (epoch {a['epoch']}, {a['cut']})"
        )
        if s is Status.OK:
            return head + ": applied"
        if s is Status.CONFLICT:
            return head + f": conflict, current {_record(r)}"
        return head + lost[s]
    if op.kind == "read_publication":
        return f"read record -> {_record(r)}" if s is Status.OK else "read record" + lost[s]
    if op.kind == "create_stream":
        m: Membership = a["membership"]
        done = f" -> {_record(r)}" if s is Status.OK else lost.get(s, "")
        return f"create stream (epoch {m.epoch}){done}"
    if op.kind == "write_checkpoint":
        c: Checkpoint = a["checkpoint"]
        exp = a["expected_generation"] or 0
        head = (
            f"checkpoint {c.partition}: generation {exp} -> {exp + 1} ({c.cut}, {c.finality.value})"
        )
        if s is Status.OK:
            return head + ": applied"
        if s is Status.CONFLICT:
            return head + f": conflict, current {_cp(r)}"
        return head + lost[s]
    if op.kind == "read_checkpoint":
        return f"read checkpoint -> {_cp(r)}" if s is Status.OK else "read checkpoint" + lost[s]
    if op.kind == "read_checkpoints":
        if s is not Status.OK:
            return f"read checkpoints of epoch {a['epoch']}" + lost[s]
        shown = ", ".join(_cp(c) for c in r) or "none"
        return f"read checkpoints of epoch {a['epoch']} -> {shown}"
    if op.kind == "read_membership":
        return f"read membership -> epoch {r.epoch}" if s is Status.OK else "read membership"
    if op.kind == "attempt":
        reason = f" ({r['reason']})" if r["reason"] else ""
        return (
            f"attempt {op.attempt} reported {r['outcome']}{reason}: epoch {r['epoch']}, "
            f"{_cut(r['cut'])}"
        )
    return f"{op.kind} {s.value}"


def timeline_of(v: Violation) -> Timeline:
    """The violation's fragment as lanes of boxes, numbered by invocation."""
    ops = sorted(v.ops, key=lambda o: (o.t0, o.index))
    marked = {id(o) for o in v.marked}
    lanes: dict[str, list[Box]] = {}
    for n, op in enumerate(ops, 1):
        end = None if op.t1 == INF else int(op.t1)
        lanes.setdefault(op.worker, []).append(
            Box(n, op.worker, op.t0, end, label(op), op.where, id(op) in marked)
        )
    return Timeline(
        v.property,
        v.stream,
        v.message,
        v.start,
        tuple(Lane(w, tuple(bs)) for w, bs in lanes.items()),
    )


def render_text(t: Timeline, width: int = 100) -> str:
    """The timeline for a terminal: a row per worker, then each operation in words."""
    keys = sorted(
        {(b.start, 0) for b in t.boxes} | {(b.end, 1) for b in t.boxes if b.end is not None}
    )
    step = max(2, min(6, (width - 16) // max(1, len(keys) + 1)))
    col = {k: i * step for i, k in enumerate(keys)}
    right = len(keys) * step + 2
    name_width = min(24, max(len(lane.worker) for lane in t.lanes) if t.lanes else 4)
    lines = [f"{t.rule} on stream {t.stream}: {t.message}"]
    if t.start:
        lines.append(f"  before the fragment the register was {t.start}")
    for lane in t.lanes:
        row = [" "] * (right + 4)
        for b in lane.boxes:
            a = col[(b.start, 0)]
            z = right if b.end is None else col[(b.end, 1)]
            fill = "#" if b.marked else "="
            for i in range(a, z + 1):
                row[i] = fill
            row[a] = "["
            if b.end is None:
                row[z : z + 3] = list("-->")
            else:
                row[z] = "]"
            tag = str(b.number)
            if z - a - 1 >= len(tag):
                row[a + 1 : a + 1 + len(tag)] = list(tag)
        lines.append(f"  {lane.worker[:name_width]:<{name_width}} {''.join(row).rstrip()}")
    for b in t.boxes:
        end = "lost" if b.end is None else str(b.end)
        mark = "  <-- at fault" if b.marked else ""
        lines.append(
            f"  {b.number:>3}{'*' if b.marked else ' '} {b.worker[:name_width]:<{name_width}} "
            f"[{b.start}, {end}]  {b.label}  ({b.where}){mark}"
        )
    return "\n".join(lines)
