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
from fencepost.judge.values import NOTHING, Checkpoint, Cut, Membership, Order, Record

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
    result: Record | Checkpoint | None = None


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
        if isinstance(result, Record):
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


# --- the whole store: the record and checkpoints, rotation, misfiled answers -----------------


@dataclass
class StoreHistory:
    """A simulated history of one stream's record and checkpoints, as a log would hold it.

    ``ops`` are the calls the log keeps; ``start`` is when the log's knowledge starts
    (None: the whole history, its creation included); ``logged`` is, per kept op, when its
    last line was written (its completion, or when its caller gave up on it).
    """

    ops: list[Op]
    start: int | None = None
    held: bool = True
    logged: dict[int, float] = field(default_factory=dict)


def simulate_store(
    rng: random.Random,
    *,
    stream: str = "s",
    clients: int = 3,
    ops: int = 6,
    partitions: int = 2,
    lost: float = 0.15,
    span: int = 20,
) -> StoreHistory:
    """A linearizable history of record and checkpoint calls (created first, at time 0).

    Each call takes effect at a point drawn inside its interval, in the order of the
    points, on the true state (the record and one checkpoint per partition); a
    client's writes name the revision or generation it last saw. Some responses are
    lost (indefinite; the call applied or not, as its point decided).
    """
    m = membership(partitions=partitions)
    names = sorted(m.partitions)
    record = Record(m.epoch, NOTHING, 0, None)
    cps: dict[str, Checkpoint] = {}
    create = Op("sim", "c0", 0, stream, "create_stream", 0, 0, Status.OK, {"membership": m}, record)
    history: list[Op] = [create]
    logged: dict[int, float] = {id(create): 0.0}
    seen_rev = dict.fromkeys(range(clients), 0)
    seen_gen: dict[tuple[int, str], int] = {}
    seq = {c: 1 if c == 0 else 0 for c in range(clients)}
    cut_at: dict[str, int] = dict.fromkeys(names, 0)
    events: list[tuple[float, int, int, int, _Call | None]] = []
    tie = 0
    for c in range(clients):
        events.append((1 + rng.randrange(span // 4 + 1), tie, 0, c, None))
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
            fate = "ok"
            if rng.random() < lost:
                fate = "lost" if rng.random() < 0.5 else "lost_before"
            kind = rng.choice(
                ["read_publication", "write_publication", "read_checkpoint", "write_checkpoint"]
            )
            call = _Call(c, seq[c], kind, int(t), t + length, fate)
            seq[c] += 1
            p = rng.choice(names)
            if kind == "write_publication":
                at = rng.randrange(4)
                call.args = {
                    "expected_revision": seen_rev[c],
                    "epoch": m.epoch,
                    "cut": Cut.through(at),
                    "op_id": f"c{c}-{call.seq}",
                }
            elif kind == "read_checkpoint":
                call.args = {"epoch": m.epoch, "partition": p}
            elif kind == "write_checkpoint":
                cut_at[p] += rng.randrange(2)
                gen = seen_gen.get((c, p), 0)
                cp = Checkpoint(p, Cut.through(cut_at[p]), f"t{call.seq}", 1, m.scope, m.epoch)
                call.args = {"expected_generation": gen or None, "checkpoint": cp}
            heapq.heappush(events, (t + rng.random() * length, tie, 1, c, call))
            tie += 1
            continue
        assert call is not None
        if event == 1:
            applies = call.fate != "lost_before"
            answer: Record | Checkpoint | None = None
            if call.kind == "read_publication":
                answer = record
            elif call.kind == "write_publication":
                if record.revision == call.args["expected_revision"]:
                    if applies:
                        a = call.args
                        epoch, claim, op_id = a["epoch"], a["cut"], a["op_id"]
                        assert isinstance(epoch, int) and isinstance(claim, Cut)
                        assert isinstance(op_id, str)
                        record = Record(epoch, claim, record.revision + 1, op_id)
                else:
                    call.status = Status.CONFLICT
                answer = record
            elif call.kind == "read_checkpoint":
                answer = cps.get(str(call.args["partition"]))
            else:
                written = call.args["checkpoint"]
                assert isinstance(written, Checkpoint)
                current = cps.get(written.partition)
                expected = call.args["expected_generation"] or 0
                assert isinstance(expected, int)
                if (0 if current is None else current.generation) == expected:
                    stored = replace(written, generation=expected + 1)
                    if applies:
                        cps[written.partition] = stored
                    answer = stored
                else:
                    call.status = Status.CONFLICT
                    answer = current
            call.result = answer
            heapq.heappush(events, (call.t1, tie, 2, c, call))
            tie += 1
            continue
        t1 = math.ceil(call.t1)
        status, result, end = call.status, call.result, float(t1)
        if call.fate in ("lost", "lost_before"):
            status, result, end = Status.INDEFINITE, None, INF
        if isinstance(result, Record):
            seen_rev[c] = result.revision
        if isinstance(result, Checkpoint):
            seen_gen[(c, result.partition)] = result.generation
        op = Op(
            "sim",
            f"c{c}",
            call.seq,
            stream,
            call.kind,
            call.t0,
            end,
            status,
            dict(call.args),
            result,
        )
        history.append(op)
        logged[id(op)] = float(t1)
        heapq.heappush(events, (t1 + rng.randrange(3), tie, 0, c, None))
        tie += 1
    for i, op in enumerate(history):
        op.index = i
    return StoreHistory(history, None, True, {op.index: logged[id(op)] for op in history})


def rotate(h: StoreHistory, at: int) -> StoreHistory:
    """The log as ``LogWriter(keep=N)`` leaves it when the segments written up to ``at``
    are deleted: only calls whose last line was written after ``at`` remain, and the
    log's knowledge starts at ``at``."""
    kept: list[Op] = []
    logged: dict[int, float] = {}
    for op in h.ops:
        if h.logged[op.index] > at:
            logged[len(kept)] = h.logged[op.index]
            kept.append(replace(op, index=len(kept)))
    return StoreHistory(kept, at, False, logged)


def misfile(h: StoreHistory, rng: random.Random) -> StoreHistory:
    """One checkpoint read answered with another partition's checkpoint (misfiled), or with
    a checkpoint no write made (a phantom), when the history has a read to edit."""
    reads = [i for i, op in enumerate(h.ops) if op.kind == "read_checkpoint"]
    if not reads:
        return h
    i = rng.choice(reads)
    op = h.ops[i]
    asked = str(op.args["partition"])
    shown = [o.result for o in h.ops if isinstance(o.result, Checkpoint)]
    others = [c for c in shown if c.partition != asked]
    if others and rng.random() < 0.5:
        result: Checkpoint = rng.choice(others)
    else:
        base = op.result if isinstance(op.result, Checkpoint) else None
        generation = (base.generation if base else 0) + rng.randrange(1, 3)
        result = Checkpoint(asked, Cut.through(9), "phantom", generation, "q", 1)
    ops = list(h.ops)
    ops[i] = replace(op, status=Status.OK, t1=op.t1 if op.t1 != INF else op.t0 + 1, result=result)
    return StoreHistory(ops, h.start, h.held, dict(h.logged))
