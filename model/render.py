"""A state in domain words: what a counterexample shows after each step.

The model's own wording of its states (as stateright's ``format_step``): the
record, the checkpoints, the ground truth and the busy processes. Checkers
(:mod:`fencepost.explorer`) print traces with it, through
:attr:`fencepost.model.spec.Spec.describe` and :attr:`~fencepost.model.spec.Spec.label`.

Cost: linear in the state's partitions, events and processes.
"""

from __future__ import annotations

from fencepost.model.cuts import NOTHING
from fencepost.model.state import (
    PUBLISHER_PHASES,
    READER_PHASES,
    State,
)


def summarize(state: State) -> list[str]:
    """Lines describing the durable state and the busy processes, in domain words."""
    ctx = state.context
    lines = []
    if ctx.has_publishers:
        rec = state.record
        op = f", op {rec.op_id}" if rec.op_id else ""
        lines.append(f"record: epoch {rec.epoch}, {rec.cut}, revision {rec.revision}{op}")
    cps = []
    for i, part in enumerate(state.partitions):
        name = ctx.partition_names[i]
        for e0, cp in enumerate(part.checkpoints[: state.epoch]):
            if cp.epoch == 0:
                cps.append(f"{name}@{e0 + 1} none")
                continue
            flags = []
            if not cp.final:
                flags.append("provisional")
            if cp.scope != ctx.config.scope:
                flags.append(f"scope {cp.scope}")
            if cp.epoch != e0 + 1:
                flags.append(f"stamped epoch {cp.epoch}")
            extra = f" [{', '.join(flags)}]" if flags else ""
            cps.append(f"{name}@{e0 + 1} {cp.cut} (gen {part.generations[e0]}){extra}")
    lines.append(f"membership epoch {state.epoch}; checkpoints: {'; '.join(cps)}")
    lines.append(truth_line(state))
    busy = []
    for k, pub in enumerate(state.publishers):
        name = ctx.publisher_names[k]
        if pub.phase:
            desc = PUBLISHER_PHASES[pub.phase]
            if pub.proposal != NOTHING:
                desc += f" (epoch {pub.mem_epoch}, {pub.proposal})"
            busy.append(f"{name} {desc}")
        elif pub.outcome:
            reason = f" ({pub.reason})" if pub.reason else ""
            busy.append(f"{name} reported {pub.outcome}{reason}")
        if pub.orphan_epoch:
            busy.append(f"{name}'s write (epoch {pub.orphan_epoch}, {pub.orphan_cut}) in flight")
    for i, part in enumerate(state.partitions):
        for j, r in enumerate(part.readers):
            if r.phase:
                busy.append(
                    f"{ctx.reader_names[i][j]} {READER_PHASES[r.phase]} "
                    f"(epoch {r.epoch}, holds claim {r.claim})"
                )
    if busy:
        lines.append("processes: " + "; ".join(busy))
    return lines


def truth_line(state: State) -> str:
    """The ground truth of the current epoch: each event, its position and its flags."""
    words = []
    for i in range(len(state.partitions)):
        for ev in state.events(i, state.epoch):
            if ev.final and ev.durable:
                flags = "settled"
            else:
                flags = ("final" if ev.final else "not final") + (
                    ", outcome durable" if ev.durable else ", no outcome"
                )
            words.append(f"{ev.name}@{_coord(ev.half)} {flags}")
    return f"ground truth (epoch {state.epoch}): {'; '.join(words) or 'no events'}"


def _coord(half: int) -> str:
    return str(half // 2) if half % 2 == 0 else f"{half / 2:g}"


def node_label(state: State) -> str:
    """A short label for ``state`` in a drawing of the reachable graph: the record and the
    membership epoch."""
    rec = state.record
    return f"record e{rec.epoch} {rec.cut} r{rec.revision}\nmembership e{state.epoch}"
