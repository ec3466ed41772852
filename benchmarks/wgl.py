"""A BASELINE, NOT A JUDGE: Porcupine's linearizability search (Wing & Gong / Lowe), in Python.

This is the algorithm of Porcupine's ``checkSingle`` (github.com/anishathalye/porcupine,
``checker.go``), transcribed step for step so that ``benchmarks/audit_clients.py`` can
time it beside the audit in the same process, on the same histories:

- the history becomes call and return entries sorted by time, a call before a return
  at the same time (so operations that touch are concurrent, as in the audit);
- the entries form a doubly linked list; the search walks it, and at a call entry tries
  to linearize that operation now (the model's ``step``): if it can and the pair
  (set of linearized operations, new state) is not in the memo cache, it records it,
  pushes (entry, old state), *lifts* the call and its return out of the list, and
  starts again from the head; at a return entry (an operation that must be linearized
  before this point and was not) it backtracks: pops, *unlifts*, and moves on;
- the set of linearized operations is a bitset (here a Python ``int``), cloned at each
  step, and the cache is keyed by (bitset, state), as Porcupine's ``cacheContains``;
- P-compositionality: the operations are partitioned by stream, each checked alone.

An indefinite operation (lost response) returns at the end of the history with an
unknown output, the usual encoding for Porcupine (its step applies the write if the
revision matches and is a no-op otherwise, so "never applied" is the order that puts it
last). A definite error is left out (it took no effect).

The model is the publication record as a revision-conditional register
(docs/semantics.md section 5), the same as :mod:`fencepost.audit.register`'s.
``max_steps`` bounds the search; past it the answer is None (gave up).

Nothing in fencepost imports this module: it exists to measure against.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass

from fencepost.audit.ops import INF, Op, Status
from fencepost.audit.values import record_value, written
from fencepost.judge.values import Record

ABSENT: tuple[int, Hashable] = (-1, None)
State = tuple[int, Hashable]


@dataclass(frozen=True, slots=True)
class Call:
    """One operation as Porcupine sees it: input, output, call and return times."""

    kind: str  # create, read, write
    expected: int  # write: the expected revision
    value: Hashable  # write: the value written; create: the initial value
    output: State | None  # the record answered; None: unknown (indefinite)
    status: Status
    call: float
    ret: float


def step(state: State, c: Call) -> tuple[bool, State]:
    """The register's sequential specification: (accepted, new state)."""
    if c.kind == "create":
        new = (0, c.value) if state == ABSENT else state
        return (c.output is None or c.output == new), new
    if state == ABSENT:
        return c.status is Status.INDEFINITE, state
    if c.kind == "read":
        return (c.output is None or state == c.output), state
    if c.status is Status.OK:
        if state[0] != c.expected:
            return False, state
        new = (c.expected + 1, c.value)
        return new == c.output, new
    if c.status is Status.CONFLICT:
        return state[0] != c.expected and state == c.output, state
    # indefinite: applies iff the revision matches
    if state[0] == c.expected:
        return True, (c.expected + 1, c.value)
    return True, state


def calls(ops: Sequence[Op]) -> list[Call]:
    """The publication record's operations of one stream as Porcupine operations."""
    out: list[Call] = []
    for op in ops:
        if op.status is Status.ERROR:
            continue
        if op.kind == "create_stream":
            m = op.args["membership"]
            init = record_value(Record(m.epoch))
            shown = None if op.status is Status.INDEFINITE else _state(op.result)
            out.append(Call("create", 0, init, shown, op.status, op.t0, op.t1))
        elif op.kind == "read_publication":
            shown = None if op.status is Status.INDEFINITE else _state(op.result)
            out.append(Call("read", 0, None, shown, op.status, op.t0, op.t1))
        elif op.kind == "write_publication":
            a = op.args
            shown = None if op.status is Status.INDEFINITE else _state(op.result)
            value = record_value(written(op))
            out.append(Call("write", a["expected_revision"], value, shown, op.status, op.t0, op.t1))
    return out


def _state(r: Record) -> State:
    return (r.revision, record_value(r))


class GaveUp(Exception):
    """The search took more than ``max_steps`` steps."""


def check_single(history: Sequence[Call], max_steps: int = 10_000_000) -> bool:
    """Porcupine's ``checkSingle``: whether ``history`` is linearizable."""
    n = len(history)
    end = max([c.ret for c in history if c.ret != INF] + [c.call for c in history] + [0]) + 1
    # entries: (time, kind 0 call / 1 return, op id); sorted as Porcupine's byTime
    entries = sorted(
        [(c.call, 0, i) for i, c in enumerate(history)]
        + [(end if c.ret == INF else c.ret, 1, i) for i, c in enumerate(history)]
    )
    # the linked list over entry positions 1..2n, 0 the head sentinel
    size = 2 * n + 1
    nxt = list(range(1, size + 1))
    nxt[-1] = -1
    prv = list(range(-1, size - 1))
    is_call = [False] * size
    op_of = [-1] * size
    match = [-1] * size  # a call's return entry
    ret_at: dict[int, int] = {}
    for pos, (_, kind, i) in enumerate(entries, start=1):
        op_of[pos] = i
        if kind == 0:
            is_call[pos] = True
        else:
            ret_at[i] = pos
    for pos in range(1, size):
        if is_call[pos]:
            match[pos] = ret_at[op_of[pos]]

    def lift(pos: int) -> None:
        nxt[prv[pos]] = nxt[pos]
        if nxt[pos] != -1:
            prv[nxt[pos]] = prv[pos]
        r = match[pos]
        nxt[prv[r]] = nxt[r]
        if nxt[r] != -1:
            prv[nxt[r]] = prv[r]

    def unlift(pos: int) -> None:
        r = match[pos]
        prv_r, nxt_r = prv[r], nxt[r]
        nxt[prv_r] = r
        if nxt_r != -1:
            prv[nxt_r] = r
        p, q = prv[pos], nxt[pos]
        nxt[p] = pos
        if q != -1:
            prv[q] = pos

    linearized = 0
    cache: set[tuple[int, State]] = set()
    stack: list[tuple[int, State]] = []
    state = ABSENT
    entry = nxt[0]
    steps = 0
    while nxt[0] != -1:
        steps += 1
        if steps > max_steps:
            raise GaveUp(f"more than {max_steps:,} steps")
        if is_call[entry]:
            i = op_of[entry]
            ok, new = step(state, history[i])
            if ok:
                bits = linearized | (1 << i)  # Porcupine clones the bitset here
                key = (bits, new)
                if key not in cache:
                    cache.add(key)
                    stack.append((entry, state))
                    state = new
                    linearized = bits
                    lift(entry)
                    entry = nxt[0]
                    continue
            entry = nxt[entry]
        else:
            if not stack:
                return False
            entry, state = stack.pop()
            linearized &= ~(1 << op_of[entry])
            unlift(entry)
            entry = nxt[entry]
    return True


def linearizable(ops: Sequence[Op], max_steps: int = 10_000_000) -> bool:
    """Every stream's publication record linearizable (P-compositionality: one search
    per stream); raises :class:`GaveUp` past ``max_steps`` in one stream."""
    by_stream: dict[str, list[Op]] = {}
    for op in ops:
        by_stream.setdefault(op.stream, []).append(op)
    return all(check_single(calls(s), max_steps) for s in by_stream.values())
