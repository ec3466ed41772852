"""Simulated histories of the publication register, with real linearization points.

:func:`simulate` runs ``clients`` clients against one stream's record in
simulated time: each operation is invoked, takes effect at a point drawn inside
its interval (the register is applied at the points, in their order), and
completes; a client's next write names the revision it last saw. Some
responses are lost (indefinite: the write applied or not, as its point
decided), some writes fail definitely (never applied). The history is
linearizable by construction, with the simulated points as a witness, and
stays so when its times are read on a coarser clock (:func:`coarsen`: floor
keeps every point inside its interval, ties allowed).

:func:`corrupt` edits one operation (a read shows another revision, an
acknowledged write becomes a conflict, an interval moves), which may or may not
break linearizability: the brute-force checker decides
(:mod:`fencepost.audit.brute`). Used by the cross-check tests and
``benchmarks/audit.py``.

Cost: O(n log n) for n operations.
"""

from __future__ import annotations

import heapq
import math
import random
from dataclasses import dataclass, field, replace

from fencepost.audit.ops import INF, Op, Status
from fencepost.judge.values import NOTHING, Cut, Membership, Order, Record

ORDER = Order.integer("offsets", True)


def membership(epoch: int = 1, partitions: int = 2) -> Membership:
    return Membership.of(epoch, "q", ORDER, [f"p{i}" for i in range(partitions)])


@dataclass
class _Call:
    """One simulated call in flight."""

    client: int
    seq: int
    kind: str
    t0: int
    t1: float
    fate: str  # ok, failed, lost (applied if its point says so), lost_before (never applied)
    args: dict[str, object] = field(default_factory=dict)
    status: Status = Status.OK
    result: Record | None = None


def simulate(
    rng: random.Random,
    *,
    stream: str = "s",
    clients: int = 3,
    ops: int = 6,
    lost: float = 0.15,
    failed: float = 0.05,
    reads: float = 0.4,
    span: int = 20,
    start: int = 0,
    worker_prefix: str = "c",
) -> list[Op]:
    """A linearizable history: a create, then ``ops`` operations over ``clients`` clients.

    Each call's point is drawn uniformly inside its interval; the register is
    applied at the points in time order; a client's next call starts after its
    previous one completed.
    """
    m = membership()
    initial = Record(m.epoch, NOTHING, 0, None)
    create = Op(
        "sim",
        f"{worker_prefix}0",
        0,
        stream,
        "create_stream",
        start,
        start,
        Status.OK,
        {"membership": m},
        initial,
    )
    history: list[Op] = [create]
    state = initial
    seen = dict.fromkeys(range(clients), initial)
    seq = {c: 1 if c == 0 else 0 for c in range(clients)}
    cut_at = 0
    # (time, tie, event, client, call): event 0 invoke, 1 point, 2 complete
    events: list[tuple[float, int, int, int, _Call | None]] = []
    tie = 0
    for c in range(clients):
        events.append((start + 1 + rng.randrange(span // 4 + 1), tie, 0, c, None))
        tie += 1
    heapq.heapify(events)
    issued = 0
    while events:
        t, _, event, c, call = heapq.heappop(events)
        if event == 0:
            if issued >= ops:
                continue
            issued += 1
            length = rng.randrange(span + 1)
            draw = rng.random()
            fate = "lost" if draw < lost else ("failed" if draw < lost + failed else "ok")
            if fate == "lost" and rng.random() < 0.5:
                fate = "lost_before"
            call = _Call(c, seq[c], "read_publication", int(t), t + length, fate)
            seq[c] += 1
            if rng.random() >= reads:
                cut_at += rng.randrange(3)
                call.kind = "write_publication"
                cut = Cut.through(cut_at) if rng.random() < 0.5 else Cut.before(cut_at + 1)
                call.args = {
                    "expected_revision": seen[c].revision,
                    "epoch": m.epoch,
                    "cut": cut,
                    "op_id": f"{worker_prefix}{c}-{call.seq}",
                }
            heapq.heappush(events, (t + rng.random() * length, tie, 1, c, call))
            tie += 1
            continue
        assert call is not None
        if event == 1:
            applies = call.fate not in ("failed", "lost_before")
            if call.kind == "write_publication":
                expected = call.args["expected_revision"]
                if state.revision == expected and applies:
                    epoch, claim, op_id = call.args["epoch"], call.args["cut"], call.args["op_id"]
                    assert isinstance(epoch, int) and isinstance(claim, Cut)
                    assert isinstance(op_id, str)
                    state = Record(epoch, claim, state.revision + 1, op_id)
                elif state.revision == expected:
                    call.status = Status.ERROR
                else:
                    call.status = Status.CONFLICT
            call.result = state
            heapq.heappush(events, (call.t1, tie, 2, c, call))
            tie += 1
            continue
        t1 = math.ceil(call.t1)
        status, result, end = call.status, call.result, float(t1)
        if call.fate in ("lost", "lost_before"):
            status, result, end = Status.INDEFINITE, None, INF
        elif call.fate == "failed" or status is Status.ERROR:
            status, result = Status.ERROR, None
        if result is not None:
            seen[c] = result
        history.append(
            Op(
                "sim",
                f"{worker_prefix}{c}",
                call.seq,
                stream,
                call.kind,
                call.t0,
                end,
                status,
                dict(call.args),
                result,
            )
        )
        heapq.heappush(events, (t1 + rng.randrange(3), tie, 0, c, None))
        tie += 1
    for i, op in enumerate(history):
        op.index = i
    return history


def coarsen(history: list[Op], granularity: int) -> list[Op]:
    """The same history read on a clock that ticks every ``granularity`` units (floor)."""
    out = []
    for op in history:
        t1 = op.t1 if op.t1 == INF else float(int(op.t1) // granularity * granularity)
        out.append(replace(op, t0=op.t0 // granularity * granularity, t1=t1))
    return out


def corrupt(history: list[Op], rng: random.Random) -> list[Op]:
    """One operation edited: a shown record, a write's answer, or its interval."""
    out = list(history)
    candidates = [i for i, op in enumerate(out) if i > 0]
    if not candidates:
        return out
    i = rng.choice(candidates)
    op = out[i]
    shown = [o.result for o in out if isinstance(o.result, Record)]
    choice = rng.randrange(4)
    if choice == 0 and op.kind == "read_publication" and op.status is Status.OK:
        other = rng.choice(shown)
        out[i] = replace(op, result=other)
    elif choice == 1 and op.kind == "write_publication" and op.status is Status.OK:
        out[i] = replace(op, status=Status.CONFLICT, result=rng.choice(shown))
    elif choice == 2 and op.kind == "write_publication" and op.status is Status.CONFLICT:
        a = op.args
        out[i] = replace(
            op,
            status=Status.OK,
            result=Record(a["epoch"], a["cut"], a["expected_revision"] + 1, a["op_id"]),
        )
    else:
        shift = rng.randrange(1, 15)
        t1 = op.t1 if op.t1 == INF else op.t1 + shift
        out[i] = replace(op, t0=op.t0 + shift, t1=t1)
    return out
