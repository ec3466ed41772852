"""Histories of concurrent store operations, and the checker that judges them.

A *history* is every store operation of every process of a run, each with its
invocation and completion time on one clock shared by all processes
(``time.monotonic_ns``, system-wide on Linux) and its outcome:

- ``ok``: the store answered (a conditional write may have answered "conflict");
- ``fail``: a definite error: the operation did not take effect;
- ``info``: an indefinite error or a process killed mid-call: a write may or may
  not have taken effect, at any time after its invocation (it may commit after
  the client gave up), so its completion is treated as infinitely late.

:class:`RecordingStore` wraps any store and appends each invocation and each
completion as one JSON line to a per-process file (one ``write`` each, so a
``kill -9`` loses at most the completion of the call in flight, which then
reads as ``info``). :func:`load_history` pairs the lines back into :class:`Op`.

:func:`check_history` reports every :class:`Anomaly` it can prove:

1. **Linearizability** of the publication record of each stream, and of each
   checkpoint (stream, epoch, partition), as a *version-conditional register*:
   a write names the version it read and, if applied, makes version + 1. Since
   every applied write makes a new version, versions order the writes: the
   write of version ``v`` must take effect at a point ``t_v`` inside its
   interval, with ``t_1 < t_2 < ...``; a read (or a conflict, which reports the
   current value) returning version ``v`` must fall between ``t_v`` and
   ``t_{v+1}``. Those constraints are lower and upper bounds on a chain, so
   assigning each ``t_v`` its earliest feasible value decides feasibility
   exactly (no search). Indefinite writes may have applied; definite failures
   and conflicts must not have. Two different values at one version, two
   applied writes for one version, a version no write could have made, a
   conflict reported while the expected version was current, a stale read
   after a newer completed write: each is an anomaly.
2. **docs/semantics.md section 7** on the chain of values: epoch fence (the record's
   epoch never decreases), monotone publication (within an epoch, and under the
   ``monotone`` policy across epochs), checkpoint monotonicity (cut never
   decreases), no relabeling (a published cut is at most what every member had
   certified before the publication became visible), soundness against the
   ground truth (every event in a published or certified downset had a durable
   outcome before), and lost-response honesty of publisher attempts
   (``published`` only on an acknowledged write of that attempt, ``confirmed``
   only after a read in the attempt showed the claim present).

The cut order here is written independently of ``fencepost.impl.cuts`` (a few
lines over tuples), so a bug there cannot hide itself.
"""

from __future__ import annotations

import json
import os
import time
from bisect import bisect_left, bisect_right
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from itertools import pairwise
from pathlib import Path
from typing import Any, TypeVar

from fencepost.impl.codec import (
    checkpoint_to_json,
    cut_to_json,
    membership_to_json,
    record_to_json,
)
from fencepost.impl.cuts import Cut
from fencepost.impl.merge import MergeSummary
from fencepost.impl.records import Checkpoint, Membership, PublicationRecord
from fencepost.impl.stores import (
    Applied,
    BatchWrite,
    CheckpointApplied,
    CheckpointWrite,
    IndefiniteStoreError,
    PublicationWrite,
    Store,
)

JSON = Any
T = TypeVar("T")
INFINITY = float("inf")


class Status(Enum):
    """How an operation ended, as far as the client could tell."""

    OK = "ok"
    FAIL = "fail"
    INFO = "info"


@dataclass(frozen=True, slots=True)
class Op:
    """One operation: who, what, when (ns), and what came back (wire-form JSON)."""

    index: int
    process: str
    kind: str
    invoke_ns: int
    complete_ns: float  # INFINITY when indefinite (info)
    status: Status
    args: Mapping[str, JSON]
    result: JSON = None


@dataclass(frozen=True, slots=True)
class Anomaly:
    """A property the history breaks: its kind, an explanation, the ops involved."""

    kind: str
    detail: str
    ops: tuple[int, ...] = ()

    def __str__(self) -> str:
        where = f" (ops {', '.join(map(str, self.ops))})" if self.ops else ""
        return f"{self.kind}: {self.detail}{where}"


# --- recording --------------------------------------------------------------------


class JsonlSink:
    """Appends JSON lines to a file with one ``write`` per line (survives kill -9)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)

    def __call__(self, line: Mapping[str, JSON]) -> None:
        os.write(self._fd, (json.dumps(line, separators=(",", ":")) + "\n").encode())

    def close(self) -> None:
        os.close(self._fd)


class RecordingStore:
    """A store that records every call of ``inner`` into ``sink`` (invoke, then complete).

    Definite errors record ``fail``, indefinite errors ``info``; the error is
    re-raised unchanged, so the code under test sees exactly what it would see.
    """

    def __init__(self, inner: Store, process: str, sink: Callable[[Mapping[str, JSON]], None]):
        self.inner = inner
        self.process = process
        self.sink = sink
        self._next = 0

    def _call(
        self,
        kind: str,
        args: dict[str, JSON],
        call: Callable[[], T],
        encode: Callable[[T], JSON],
    ) -> T:
        n = self._next
        self._next += 1
        self.sink(
            {
                "e": "invoke",
                "p": self.process,
                "n": n,
                "kind": kind,
                "args": args,
                "t": time.monotonic_ns(),
            }
        )
        try:
            value = call()
        except IndefiniteStoreError as exc:
            self.sink(
                {
                    "e": "complete",
                    "p": self.process,
                    "n": n,
                    "status": "info",
                    "t": time.monotonic_ns(),
                    "error": str(exc)[:200],
                }
            )
            raise
        except Exception as exc:  # definite, or refused before reaching the store
            self.sink(
                {
                    "e": "complete",
                    "p": self.process,
                    "n": n,
                    "status": "fail",
                    "t": time.monotonic_ns(),
                    "error": f"{type(exc).__name__}: {exc}"[:200],
                }
            )
            raise
        self.sink(
            {
                "e": "complete",
                "p": self.process,
                "n": n,
                "status": "ok",
                "t": time.monotonic_ns(),
                "result": encode(value),
            }
        )
        return value

    def note(self, kind: str, invoke_ns: int, args: Mapping[str, JSON], result: JSON) -> None:
        """Record a completed non-store step (a publisher attempt) with its own interval."""
        n = self._next
        self._next += 1
        self.sink(
            {
                "e": "invoke",
                "p": self.process,
                "n": n,
                "kind": kind,
                "args": dict(args),
                "t": invoke_ns,
            }
        )
        self.sink(
            {
                "e": "complete",
                "p": self.process,
                "n": n,
                "status": "ok",
                "t": time.monotonic_ns(),
                "result": result,
            }
        )

    # --- the Store protocol --------------------------------------------------------

    def create_stream(self, stream: str, membership: Membership) -> PublicationRecord:
        return self.inner.create_stream(stream, membership)  # setup: not part of the history

    def read_publication(self, stream: str) -> PublicationRecord:
        return self._call(
            "read_publication",
            {"stream": stream},
            lambda: self.inner.read_publication(stream),
            record_to_json,
        )

    def write_publication(
        self, stream: str, expected_revision: int, epoch: int, cut: Cut, op_id: str
    ) -> PublicationWrite:
        args = {
            "stream": stream,
            "expected_revision": expected_revision,
            "epoch": epoch,
            "cut": cut_to_json(cut),
            "op_id": op_id,
        }

        def encode(w: PublicationWrite) -> JSON:
            return {"applied": isinstance(w, Applied), "record": record_to_json(w.record)}

        return self._call(
            "write_publication",
            args,
            lambda: self.inner.write_publication(stream, expected_revision, epoch, cut, op_id),
            encode,
        )

    def read_membership(self, stream: str, epoch: int | None = None) -> Membership:
        return self._call(
            "read_membership",
            {"stream": stream, "epoch": epoch},
            lambda: self.inner.read_membership(stream, epoch),
            membership_to_json,
        )

    def write_membership(self, stream: str, membership: Membership) -> None:
        self._call(
            "write_membership",
            {"stream": stream, "membership": membership_to_json(membership)},
            lambda: self.inner.write_membership(stream, membership),
            lambda _: None,
        )

    def read_checkpoint(self, stream: str, epoch: int, partition: str) -> Checkpoint | None:
        return self._call(
            "read_checkpoint",
            {"stream": stream, "epoch": epoch, "partition": partition},
            lambda: self.inner.read_checkpoint(stream, epoch, partition),
            lambda c: None if c is None else checkpoint_to_json(c),
        )

    def read_checkpoints(self, stream: str, epoch: int) -> Sequence[Checkpoint]:
        return self._call(
            "read_checkpoints",
            {"stream": stream, "epoch": epoch},
            lambda: self.inner.read_checkpoints(stream, epoch),
            lambda cs: [checkpoint_to_json(c) for c in cs],
        )

    def read_merge_summary(self, stream: str, epoch: int) -> MergeSummary:
        """Recorded as ``read_merge_summary``; the checker takes no register value from it.

        A summary names no generations, so it is no observation of a checkpoint
        register; what the publisher decides from it is judged on the record's
        chain (no relabeling, soundness) like any decision.
        """
        return self._call(
            "read_merge_summary",
            {"stream": stream, "epoch": epoch},
            lambda: self.inner.read_merge_summary(stream, epoch),
            _summary_json,
        )

    def write_checkpoints(self, stream: str, writes: Sequence[BatchWrite]) -> list[CheckpointWrite]:
        """Recorded as one ``write_checkpoint`` op per write, sharing the batch's interval.

        The batch commits atomically at one point inside its interval, which is
        a point inside each write's interval: the checker's linearizability of
        each checkpoint register holds as for single writes.
        """
        n = self._next
        self._next += len(writes)
        invoked = time.monotonic_ns()
        lines = []
        for i, (expected, checkpoint) in enumerate(writes):
            args = {
                "stream": stream,
                "expected_generation": expected,
                "checkpoint": checkpoint_to_json(checkpoint),
            }
            lines.append(args)
            self.sink(
                {
                    "e": "invoke",
                    "p": self.process,
                    "n": n + i,
                    "kind": "write_checkpoint",
                    "args": args,
                    "t": invoked,
                }
            )
        try:
            results = self.inner.write_checkpoints(stream, writes)
        except IndefiniteStoreError as exc:
            self._complete_all(n, len(lines), "info", error=str(exc)[:200])
            raise
        except Exception as exc:
            self._complete_all(n, len(lines), "fail", error=f"{type(exc).__name__}: {exc}"[:200])
            raise
        done = time.monotonic_ns()
        for i, w in enumerate(results):
            self.sink(
                {
                    "e": "complete",
                    "p": self.process,
                    "n": n + i,
                    "status": "ok",
                    "t": done,
                    "result": _checkpoint_write_json(w),
                }
            )
        return results

    def _complete_all(self, first: int, count: int, status: str, error: str) -> None:
        done = time.monotonic_ns()
        for i in range(count):
            line = {"e": "complete", "p": self.process, "n": first + i, "status": status}
            self.sink({**line, "t": done, "error": error})

    def write_checkpoint(
        self, stream: str, expected_generation: int | None, checkpoint: Checkpoint
    ) -> CheckpointWrite:
        args = {
            "stream": stream,
            "expected_generation": expected_generation,
            "checkpoint": checkpoint_to_json(checkpoint),
        }

        return self._call(
            "write_checkpoint",
            args,
            lambda: self.inner.write_checkpoint(stream, expected_generation, checkpoint),
            _checkpoint_write_json,
        )

    def record_outcome(self, stream: str, event_id: str, outcome: str) -> str:
        return self._call(
            "record_outcome",
            {"stream": stream, "event_id": event_id, "outcome": outcome},
            lambda: self.inner.record_outcome(stream, event_id, outcome),
            _as_json,
        )

    def outcomes(self, stream: str, event_ids: Sequence[str]) -> dict[str, str]:
        return self._call(
            "outcomes",
            {"stream": stream, "event_ids": list(event_ids)},
            lambda: self.inner.outcomes(stream, event_ids),
            dict,
        )

    def close(self) -> None:
        self.inner.close()


def _as_json(value: str) -> JSON:
    return value


def _checkpoint_write_json(w: CheckpointWrite) -> JSON:
    return {
        "applied": isinstance(w, CheckpointApplied),
        "checkpoint": None if w.checkpoint is None else checkpoint_to_json(w.checkpoint),
    }


def _summary_json(summary: MergeSummary) -> JSON:
    return {
        "epoch": summary.epoch,
        "missing": list(summary.missing),
        "wrong_epoch": list(summary.wrong_epoch),
        "wrong_scope": list(summary.wrong_scope),
        "provisional": list(summary.provisional),
        "minimum": None if summary.minimum is None else {"cut": cut_to_json(summary.minimum)},
    }


def load_history(paths: Iterable[str | Path]) -> list[Op]:
    """Pair the invoke/complete lines of every file into ops, ordered by invocation.

    An invocation without a completion (the process was killed) is ``info``.
    A torn last line (killed mid-write) is ignored.
    """
    invokes: dict[tuple[str, int], dict[str, JSON]] = {}
    completes: dict[tuple[str, int], dict[str, JSON]] = {}
    for path in paths:
        for raw in Path(path).read_text().splitlines():
            try:
                line = json.loads(raw)
            except json.JSONDecodeError:
                continue
            key = (str(line["p"]), int(line["n"]))
            (invokes if line["e"] == "invoke" else completes)[key] = line
    rows = []
    for key, inv in invokes.items():
        done = completes.get(key)
        status = Status.INFO if done is None else Status(done["status"])
        complete: float = INFINITY if status is Status.INFO else int(done["t"])  # type: ignore[index]
        rows.append(
            (
                int(inv["t"]),
                key,
                inv,
                status,
                complete,
                None if done is None else done.get("result"),
            )
        )
    rows.sort(key=lambda r: (r[0], r[1]))
    return [
        Op(i, key[0], str(inv["kind"]), t, complete, status, inv["args"], result)
        for i, (t, key, inv, status, complete, result) in enumerate(rows)
    ]


# --- an independent cut order ---------------------------------------------------------


@dataclass(frozen=True, slots=True)
class OrderSpec:
    """An order as the wire describes it: name, kind, exact successor or not."""

    name: str
    kind: str
    successor: bool


def cut_key(order: OrderSpec, cut: JSON) -> tuple[Any, ...]:
    """A sort key whose order is inclusion of downsets (docs/semantics.md section 2)."""
    if cut is None:
        return (0,)
    at, kind = cut["at"], cut["kind"]
    if order.successor:
        return (1, at if kind == "before" else at + 1)
    return (1, at, 0 if kind == "before" else 1)


def cut_leq(order: OrderSpec, a: JSON, b: JSON) -> bool:
    """``D(a)`` is inside ``D(b)``."""
    return cut_key(order, a) <= cut_key(order, b)


def covers(order: OrderSpec, cut: JSON, position: Any) -> bool:
    """``position`` is in ``D(cut)``."""
    if cut is None:
        return False
    return bool(position < cut["at"] or (cut["kind"] == "through" and position == cut["at"]))


@dataclass(frozen=True)
class Context:
    """What the checker needs besides the ops.

    ``memberships[stream][epoch]`` is the membership's wire form. ``events``
    maps (stream, epoch, partition) to the ground truth: every event's id and
    position (all final). ``policy`` is the publishers' cutover policy.
    """

    memberships: Mapping[str, Mapping[int, JSON]]
    events: Mapping[tuple[str, int, str], Sequence[tuple[str, Any]]] = field(default_factory=dict)
    policy: str = "monotone"

    def order(self, stream: str, epoch: int, partition: str | None = None) -> OrderSpec:
        m = self.memberships[stream][epoch]
        name = m["partitions"][partition] if partition else next(iter(m["orders"]))
        o = m["orders"][name]
        return OrderSpec(o["name"], o["kind"], bool(o.get("successor", False)))


# --- the version-conditional register -------------------------------------------------


@dataclass
class _Register:
    """Everything the history says about one register (a record or one checkpoint)."""

    name: str
    observations: list[tuple[int, JSON, Op]] = field(default_factory=list)  # version, value, op
    writes: list[tuple[int, JSON, Op, str]] = field(
        default_factory=list
    )  # expected, value, op, how


@dataclass(frozen=True)
class Chain:
    """The register's versions in order: value, writer-derived bounds, linearization time."""

    values: dict[int, JSON]
    visible_by: dict[int, float]  # the version was certainly in place by this time
    written_after: dict[int, float]  # ...and not before this one


def _record_value(record: JSON) -> tuple[int, JSON]:
    return int(record["revision"]), {
        "epoch": record["epoch"],
        "cut": record["cut"],
        "op_id": record["op_id"],
    }


def _checkpoint_value(cp: JSON | None) -> tuple[int, JSON]:
    if cp is None:
        return 0, None
    return int(cp["generation"]), {k: cp[k] for k in ("cut", "token", "scope", "finality")}


def _registers(ops: Sequence[Op], ctx: Context) -> dict[tuple[Any, ...], _Register]:
    regs: dict[tuple[Any, ...], _Register] = {}

    def reg(key: tuple[Any, ...]) -> _Register:
        if key not in regs:
            regs[key] = _Register("/".join(map(str, key)))
        return regs[key]

    for op in ops:
        a, r = op.args, op.result
        if op.kind == "read_publication" and op.status is Status.OK:
            v, val = _record_value(r)
            reg(("record", a["stream"])).observations.append((v, val, op))
        elif op.kind == "write_publication":
            target = reg(("record", a["stream"]))
            value = {"epoch": a["epoch"], "cut": a["cut"], "op_id": a["op_id"]}
            how = (
                op.status.value
                if op.status is not Status.OK
                else ("applied" if r["applied"] else "conflict")
            )
            target.writes.append((int(a["expected_revision"]), value, op, how))
            if op.status is Status.OK:
                v, val = _record_value(r["record"])
                target.observations.append((v, val, op))
        elif op.kind == "read_checkpoint" and op.status is Status.OK:
            v, val = _checkpoint_value(r)
            reg(("checkpoint", a["stream"], a["epoch"], a["partition"])).observations.append(
                (v, val, op)
            )
        elif op.kind == "read_checkpoints" and op.status is Status.OK:
            found = {c["partition"]: c for c in r}
            members = ctx.memberships.get(a["stream"], {}).get(a["epoch"], {}).get("partitions", {})
            for p in set(members) | set(found):
                v, val = _checkpoint_value(found.get(p))
                reg(("checkpoint", a["stream"], a["epoch"], p)).observations.append((v, val, op))
        elif op.kind == "write_checkpoint":
            cp = a["checkpoint"]
            target = reg(("checkpoint", a["stream"], cp["epoch"], cp["partition"]))
            expected = a["expected_generation"]
            value = {k: cp[k] for k in ("cut", "token", "scope", "finality")}
            how = (
                op.status.value
                if op.status is not Status.OK
                else ("applied" if r["applied"] else "conflict")
            )
            target.writes.append((0 if expected is None else int(expected), value, op, how))
            if op.status is Status.OK:
                v, val = _checkpoint_value(r["checkpoint"])
                target.observations.append((v, val, op))
    return regs


def _check_register(reg: _Register, out: list[Anomaly]) -> Chain:
    """Linearizability of one version-conditional register; see the module docstring."""
    observed = {op.index: version for version, _, op in reg.observations}
    values: dict[int, JSON] = {}
    seen_by: dict[int, Op] = {}
    for version, value, op in reg.observations:
        if version in values and values[version] != value:
            out.append(
                Anomaly(
                    "two_values_one_version",
                    f"{reg.name} version {version} was seen as {values[version]} and as {value}",
                    (seen_by[version].index, op.index),
                )
            )
        values.setdefault(version, value)
        seen_by.setdefault(version, op)
    applied_by: dict[int, Op] = {}
    for expected, _, op, how in reg.writes:
        if how == "conflict":
            current = observed.get(op.index)
            if current == expected:
                out.append(
                    Anomaly(
                        "conflict_while_current",
                        f"{reg.name}: write expecting version {expected} reported a conflict but "
                        "returned that same version as current",
                        (op.index,),
                    )
                )
        if how != "applied":
            continue
        new = expected + 1
        own = observed.get(op.index)
        if own != new:
            out.append(
                Anomaly(
                    "applied_wrong_version",
                    f"{reg.name}: write expecting {expected} was applied as {own}",
                    (op.index,),
                )
            )
        if new in applied_by:
            out.append(
                Anomaly(
                    "two_writes_one_version",
                    f"{reg.name}: two writes were both applied as version {new}",
                    (applied_by[new].index, op.index),
                )
            )
        applied_by.setdefault(new, op)
    by_expected: dict[int, list[tuple[JSON, Op, str]]] = defaultdict(list)
    for expected, value, op, how in reg.writes:
        by_expected[expected].append((value, op, how))
    top = max(values, default=0)
    lo: dict[int, float] = {}
    hi: dict[int, float] = {}
    for v in range(1, top + 1):
        if v in values:
            cands = [
                (op, how)
                for val, op, how in by_expected[v - 1]
                if val == values[v] and how in ("applied", "info")
            ]
            if not cands:
                wrong = [op.index for val, op, _ in by_expected[v - 1] if val == values[v]]
                kind = "failed_write_took_effect" if wrong else "phantom_version"
                out.append(
                    Anomaly(
                        kind,
                        f"{reg.name} version {v} holds {values[v]}, which no write that may have "
                        "applied produced"
                        + (" (a write reported failed or conflicting did)" if wrong else ""),
                        tuple(wrong) or (seen_by[v].index,),
                    )
                )
                lo[v], hi[v] = -INFINITY, INFINITY
                continue
        else:
            cands = [(op, how) for _, op, how in by_expected[v - 1] if how == "info"]
            if not cands:
                out.append(
                    Anomaly(
                        "missing_version",
                        f"{reg.name} reached version {top} but nothing made version {v}",
                    )
                )
                lo[v], hi[v] = -INFINITY, INFINITY
                continue
        applied = [op for op, how in cands if how == "applied"]
        if applied:
            lo[v], hi[v] = float(applied[0].invoke_ns), float(applied[0].complete_ns)
        else:
            lo[v], hi[v] = float(min(op.invoke_ns for op, _ in cands)), INFINITY
    # Reads bound the chain: a read of v completes after t_v and starts before t_{v+1}.
    read_upper: dict[int, tuple[float, int]] = {}
    read_lower: dict[int, tuple[float, int]] = {}
    for version, _, op in reg.observations:
        if applied_by.get(version) is op:
            continue  # the write's own result is its linearization point, not a read
        if op.complete_ns < read_upper.get(version, (INFINITY, -1))[0]:
            read_upper[version] = (op.complete_ns, op.index)
        if op.invoke_ns > read_lower.get(version, (-INFINITY, -1))[0]:
            read_lower[version] = (float(op.invoke_ns), op.index)
    t_prev = -INFINITY
    visible_by: dict[int, float] = {}
    written_after: dict[int, float] = {}
    for v in range(1, top + 1):
        floor = max(lo[v], t_prev + 1)
        before, before_op = read_lower.get(v - 1, (-INFINITY, -1))
        t = max(floor, before + 1)
        ceiling = min(hi[v], read_upper.get(v, (INFINITY, -1))[0])
        if t > ceiling:
            culprits = tuple(i for i in (before_op, read_upper.get(v, (0, -1))[1]) if i >= 0)
            writer = applied_by.get(v)
            out.append(
                Anomaly(
                    "not_linearizable",
                    f"{reg.name}: version {v} must be in place by {ceiling:.0f} ns (its write's "
                    "completion or a read of it) yet after a read that still saw version "
                    f"{v - 1} began at {before:.0f} ns, or after version {v - 1}: a stale read",
                    culprits + ((writer.index,) if writer else ()),
                )
            )
            t = ceiling if ceiling > -INFINITY else t
        t_prev = t
        visible_by[v] = ceiling
        written_after[v] = lo[v]
    values.setdefault(0, None)
    return Chain(values, visible_by, written_after)


# --- docs/semantics.md section 7 on the chains ----------------------------------------------


def check_history(ops: Sequence[Op], ctx: Context) -> list[Anomaly]:
    """Every anomaly of ``ops``: linearizability, then the section 7 properties."""
    out: list[Anomaly] = []
    regs = _registers(ops, ctx)
    chains = {key: _check_register(reg, out) for key, reg in sorted(regs.items(), key=str)}
    outcomes = _outcome_times(ops, out)
    for key, chain in chains.items():
        if key[0] == "record":
            _check_publication_chain(key[1], chain, chains, ctx, outcomes, out)
        else:
            _check_checkpoint_chain(key, chain, ctx, outcomes, out)
    _check_attempts(ops, ctx, out)
    return out


def _outcome_times(ops: Sequence[Op], out: list[Anomaly]) -> dict[tuple[str, str], float]:
    """(stream, event id) -> when its first outcome was certainly durable."""
    durable: dict[tuple[str, str], float] = {}
    first: dict[tuple[str, str], tuple[str, int]] = {}
    for op in ops:
        if op.kind != "record_outcome" or op.status is not Status.OK:
            continue
        key = (op.args["stream"], op.args["event_id"])
        durable[key] = min(durable.get(key, INFINITY), op.complete_ns)
        if key in first and first[key][0] != op.result:
            out.append(
                Anomaly(
                    "outcome_changed",
                    f"event {key[1]!r}: stored outcome {first[key][0]!r} then {op.result!r}",
                    (first[key][1], op.index),
                )
            )
        first.setdefault(key, (op.result, op.index))
    return durable


def _check_publication_chain(
    stream: str,
    chain: Chain,
    chains: Mapping[tuple[Any, ...], Chain],
    ctx: Context,
    outcomes: Mapping[tuple[str, str], float],
    out: list[Anomaly],
) -> None:
    versions = sorted(chain.values)
    for prev, v in pairwise(versions):
        a, b = chain.values[prev], chain.values[v]
        if a is None or b is None:
            continue
        if b["epoch"] < a["epoch"]:
            out.append(
                Anomaly(
                    "epoch_regressed",
                    f"record {stream}: revision {v} has epoch {b['epoch']} after "
                    f"epoch {a['epoch']}",
                )
            )
            continue
        same = b["epoch"] == a["epoch"]
        if same or ctx.policy == "monotone":
            order = ctx.order(stream, b["epoch"])
            try:
                ok = cut_leq(order, a["cut"], b["cut"])
            except TypeError:
                ok = False
            if not ok:
                out.append(
                    Anomaly(
                        "publication_regressed",
                        f"record {stream}: revision {v} publishes {b['cut']} after "
                        f"{a['cut']} (epochs {a['epoch']} -> {b['epoch']})",
                    )
                )
    for v in versions:
        value = chain.values[v]
        if value is None or value["cut"] is None or v == 0:
            continue
        epoch, cut = value["epoch"], value["cut"]
        deadline = chain.visible_by.get(v, INFINITY)
        members = ctx.memberships[stream][epoch]["partitions"]
        for p in sorted(members):
            order = ctx.order(stream, epoch, p)
            cp_chain = chains.get(("checkpoint", stream, epoch, p))
            backed = cp_chain is not None and any(
                cv is not None
                and cp_chain.written_after.get(g, INFINITY) < deadline
                and cut_leq(order, cut, cv["cut"])
                and cv["finality"] == "final"
                for g, cv in cp_chain.values.items()
            )
            if not backed:
                out.append(
                    Anomaly(
                        "unbacked_publication",
                        f"record {stream} revision {v} publishes {cut} in epoch {epoch}, but "
                        f"member {p} had certified no final cut at least that strong before it "
                        "was visible (relabeling or a skipped partition)",
                    )
                )
            _check_sound(
                stream, epoch, p, cut, deadline, f"record {stream} revision {v}", ctx, outcomes, out
            )


def _check_checkpoint_chain(
    key: tuple[Any, ...],
    chain: Chain,
    ctx: Context,
    outcomes: Mapping[tuple[str, str], float],
    out: list[Anomaly],
) -> None:
    _, stream, epoch, partition = key
    order = ctx.order(stream, epoch, partition)
    versions = sorted(v for v in chain.values if chain.values[v] is not None)
    for prev, v in pairwise(versions):
        if not cut_leq(order, chain.values[prev]["cut"], chain.values[v]["cut"]):
            out.append(
                Anomaly(
                    "checkpoint_regressed",
                    f"checkpoint {stream}/{epoch}/{partition}: generation {v} "
                    f"holds {chain.values[v]['cut']} after {chain.values[prev]['cut']}",
                )
            )
    for v in versions:
        value = chain.values[v]
        if value["finality"] == "final" and value["cut"] is not None:
            _check_sound(
                stream,
                epoch,
                partition,
                value["cut"],
                chain.visible_by.get(v, INFINITY),
                f"checkpoint {stream}/{epoch}/{partition} generation {v}",
                ctx,
                outcomes,
                out,
            )


def _check_sound(
    stream: str,
    epoch: int,
    partition: str,
    cut: JSON,
    deadline: float,
    what: str,
    ctx: Context,
    outcomes: Mapping[tuple[str, str], float],
    out: list[Anomaly],
) -> None:
    events = ctx.events.get((stream, epoch, partition))
    if events is None:
        return
    order = ctx.order(stream, epoch, partition)
    missing = [
        eid
        for eid, at in events
        if covers(order, cut, at) and not outcomes.get((stream, eid), INFINITY) < deadline
    ]
    if missing:
        out.append(
            Anomaly(
                "unsound",
                f"{what} covers {cut} of {partition} but events "
                f"{', '.join(missing[:5])}{'...' if len(missing) > 5 else ''} had no "
                "durable outcome before it was visible",
            )
        )


def _check_attempts(ops: Sequence[Op], ctx: Context, out: list[Anomaly]) -> None:
    """Lost-response honesty: published/confirmed only on proof inside the attempt."""
    by_process: dict[str, list[Op]] = defaultdict(list)
    for op in ops:
        by_process[op.process].append(op)
    for process_ops in by_process.values():
        calls = sorted((o for o in process_ops if o.kind != "attempt"), key=lambda o: o.invoke_ns)
        starts = [o.invoke_ns for o in calls]
        # An attempt cut short by kill -9 reported nothing: nothing to hold it to.
        for attempt in (o for o in process_ops if o.kind == "attempt" and o.status is Status.OK):
            # A process makes one call at a time: its calls invoked during the attempt
            # are the attempt's (an indefinite one's completion is "infinitely late").
            inside = calls[
                bisect_left(starts, attempt.invoke_ns) : bisect_right(starts, attempt.complete_ns)
            ]
            outcome, op_id = attempt.result["outcome"], attempt.result["op_id"]
            if outcome == "published":
                acked = [
                    o
                    for o in inside
                    if o.kind == "write_publication"
                    and o.args["op_id"] == op_id
                    and o.status is Status.OK
                    and o.result["applied"]
                ]
                if not acked:
                    out.append(
                        Anomaly(
                            "dishonest_published",
                            f"attempt {op_id} reported published without an acknowledged write",
                            (attempt.index,),
                        )
                    )
            elif outcome == "confirmed":
                writes = [
                    o for o in inside if o.kind == "write_publication" and o.args["op_id"] == op_id
                ]
                proposal = attempt.result["proposal"]
                after = writes[-1].invoke_ns if writes else INFINITY
                stream = attempt.args["stream"]
                shown = [
                    o
                    for o in inside
                    if o.kind == "read_publication"
                    and o.status is Status.OK
                    and o.invoke_ns > after
                    and o.result["epoch"] == attempt.result["epoch"]
                    and cut_leq(ctx.order(stream, o.result["epoch"]), proposal, o.result["cut"])
                ]
                if not writes or not shown:
                    out.append(
                        Anomaly(
                            "dishonest_confirmed",
                            f"attempt {op_id} reported confirmed without an "
                            "authoritative read showing its claim",
                            (attempt.index,),
                        )
                    )
