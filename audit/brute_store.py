"""A brute-force linearizability checker for a stream's record and checkpoints together.

Written apart from :mod:`fencepost.audit.register` and :mod:`fencepost.audit.stream`
(it shares no search and no register code with them), to be simple rather than
fast, so that the audit can be compared with it on small histories
(tests/audit/test_audit_differential.py). It checks the whole store of one
stream as *one* object (the publication record and the checkpoint of every
``(epoch, partition)``), by definition: the history is linearizable iff some
order of the calls, each taking effect between its invocation and its completion
(``A.t1 < B.t0`` puts A first; an indefinite call may take effect any time after
``t0``, or never; a definite error never does), replays the sequential
specification (docs/semantics.md section 5) returning what every call returned.

Where the log starts:

- ``held``: the history holds the stream's creation: before it nothing existed (no
  record, no checkpoint);
- otherwise the store starts in any state, and if ``start`` is given (the log's first
  segments were deleted: every call they held ended by ``start``) calls the log no
  longer holds may have changed any register, any number of times, at any point of
  the order before the first call invoked after ``start``.

A state is the record (absent, or a record) and each checkpoint; a register not yet
seen in an unknown start is *unbound* with a lower bound on its revision or
generation, bound to the first value a call shows (so the search never enumerates
values). The search is a depth-first search over (calls done, state), memoized.

Cost: O(2^n x states) for n calls; keep n at 10 or below.
"""

from __future__ import annotations

from dataclasses import replace
from functools import cache

from fencepost.audit.ops import INF, Op, Status
from fencepost.judge.values import NOTHING, Checkpoint, Record

#: The calls this checker models; others are ignored.
MODELLED = frozenset(
    {
        "create_stream",
        "read_publication",
        "write_publication",
        "read_checkpoint",
        "write_checkpoint",
    }
)

# A register's state: ("v", value) bound to a value (a Record, a Checkpoint, or None: the
# record absent / no checkpoint stored), or ("?", low) unbound: any value whose revision
# (generation) is at least ``low`` (the record: -1 allows absent; a checkpoint: 0 allows none).
Reg = tuple[str, object]
Key = tuple[int, str]
State = tuple[Reg, tuple[tuple[Key, Reg], ...]]


def _level(value: object) -> int:
    """A value's revision or generation: -1 for an absent record, 0 for no checkpoint."""
    if isinstance(value, Record):
        return value.revision
    if isinstance(value, Checkpoint):
        return value.generation
    return -1


def _cp_level(value: object) -> int:
    return 0 if value is None else _level(value)


def _holds(reg: Reg, value: object, level: int) -> list[Reg]:
    """The register bound to ``value`` (of revision/generation ``level``), if it can hold it."""
    kind, held = reg
    if kind == "v":
        return [reg] if held == value else []
    assert isinstance(held, int)
    return [("v", value)] if level >= held else []


def _at(reg: Reg, level: int, cp: bool) -> bool:
    """Can the register be at ``level`` now?"""
    kind, held = reg
    if kind == "v":
        return (_cp_level(held) if cp else _level(held)) == level
    assert isinstance(held, int)
    return level >= held


def _record_after(op: Op, record: Reg) -> list[Reg]:
    answered = op.status in (Status.OK, Status.CONFLICT)
    if op.kind == "create_stream":
        init = Record(op.args["membership"].epoch, NOTHING, 0, None)
        kind, held = record
        options: list[Reg] = []
        if _at(record, -1, False):
            options.append(("v", init))  # it was absent: created now
        if kind == "v" and held is not None:
            options.append(record)  # it existed: unchanged
        elif kind == "?":
            assert isinstance(held, int)
            options.append(("?", max(0, held)))  # it existed, its value not shown yet
        if not answered:
            return options
        return [b for r in options for b in _holds(r, op.result, _level(op.result))]
    if op.kind == "read_publication":
        return _holds(record, op.result, _level(op.result)) if op.result is not None else []
    a = op.args
    new = Record(a["epoch"], a["cut"], a["expected_revision"] + 1, a["op_id"])
    if op.status is Status.CONFLICT:
        if op.result.revision == a["expected_revision"]:
            return []
        return _holds(record, op.result, op.result.revision)
    if not _at(record, a["expected_revision"], False):
        return []
    if op.status is Status.OK and op.result != new:
        return []
    return [("v", new)]


def _checkpoint_after(op: Op, reg: Reg, key: Key) -> list[Reg]:
    if op.kind == "read_checkpoint":
        answer = op.result
        if answer is not None and (answer.epoch, answer.partition) != key:
            return []  # a register only ever holds its own partition's checkpoint
        return _holds(reg, answer, _cp_level(answer))
    cp: Checkpoint = op.args["checkpoint"]
    expected = op.args["expected_generation"] or 0
    stored = replace(cp, generation=expected + 1)
    if op.status is Status.CONFLICT:
        current = op.result
        if current is not None and (current.epoch, current.partition) != key:
            return []
        if _cp_level(current) == expected:
            return []
        return _holds(reg, current, _cp_level(current))
    if not _at(reg, expected, True):
        return []
    if op.status is Status.OK and op.result != stored:
        return []
    return [("v", stored)]


def _key(op: Op) -> Key | None:
    if op.kind == "read_checkpoint":
        return (op.args["epoch"], op.args["partition"])
    if op.kind == "write_checkpoint":
        cp: Checkpoint = op.args["checkpoint"]
        return (cp.epoch, cp.partition)
    return None


def _unbound(reg: Reg, cp: bool) -> Reg:
    """The register after calls the log no longer holds moved it on (if they did)."""
    kind, held = reg
    if kind == "?":
        return reg
    return ("?", (_cp_level(held) if cp else _level(held)) + 1)


def linearizable(ops: list[Op], *, held: bool, start: int | None = None) -> bool:
    """True iff the calls of ``ops`` (one stream) are linearizable from the start described."""
    calls = [op for op in ops if op.kind in MODELLED and op.status is not Status.ERROR]
    n = len(calls)
    definite = 0
    for i, op in enumerate(calls):
        if op.t1 != INF:
            definite |= 1 << i
    before = [0] * n  # calls that must have taken effect before call i may
    for i, a in enumerate(calls):
        for j, b in enumerate(calls):
            if b.t1 < a.t0:
                before[i] |= 1 << j
    late = 0  # calls invoked after the start: no call the log lost may come after them
    for i, op in enumerate(calls):
        if start is None or op.t0 > start:
            late |= 1 << i
    fresh: Reg = ("v", None) if held else ("?", 0)  # a checkpoint not seen yet
    initial: State = (("v", None) if held else ("?", -1), ())
    lost_calls = not held and start is not None

    @cache
    def search(done: int, s: State) -> bool:
        if done & definite == definite:
            return True
        record, items = s
        cps = dict(items)
        if lost_calls and not done & late:
            moved = [(_unbound(record, False), items)]
            moved += [
                (record, tuple(sorted({**cps, k: _unbound(r, True)}.items()))) for k, r in items
            ]
            if any(m != s and search(done, m) for m in moved):
                return True
        for i in range(n):
            bit = 1 << i
            if done & bit or before[i] & definite & ~done:
                continue
            op = calls[i]
            key = _key(op)
            if key is None:
                nexts = [(r, items) for r in _record_after(op, record)]
            else:
                reg = cps.get(key, fresh)
                nexts = [
                    (record, tuple(sorted({**cps, key: r}.items())))
                    for r in _checkpoint_after(op, reg, key)
                ]
            if any(search(done | bit, nxt) for nxt in nexts):
                return True
        return False

    try:
        return search(0, initial)
    finally:
        search.cache_clear()
