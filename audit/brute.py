"""A brute-force linearizability checker for small publication-register histories.

Written apart from :mod:`fencepost.audit.register`, to be simple rather than
fast, so the two can be compared (tests/audit/test_crosscheck.py): for every
subset of the indefinite operations, for every permutation of the operations
kept, the history is linearizable iff some permutation respects real time
(``A.t1 < B.t0`` puts A first) and replays the register's sequential
specification (docs/semantics.md section 5) returning what every operation
returned.

Only the publication record is modelled: ``create_stream``, ``read_publication``
and ``write_publication``. Cost: O(2^I x n! x n) for n operations of which I are
indefinite; keep n at 8 or below.
"""

from __future__ import annotations

from itertools import combinations, permutations

from fencepost.audit.ops import Op, Status
from fencepost.judge.values import NOTHING, Record


def _step(state: Record | None, op: Op) -> tuple[bool, Record | None]:
    """Apply ``op`` to ``state``: (did it return what it returned, the new state)."""
    answered = op.status is not Status.INDEFINITE
    if op.kind == "create_stream":
        if state is None:
            state = Record(op.args["membership"].epoch, NOTHING, 0, None)
        return (not answered or op.result == state), state
    if op.kind == "read_publication":
        return state is not None and op.result == state, state
    assert op.kind == "write_publication"
    if state is None:
        return not answered, state
    a = op.args
    if state.revision == a["expected_revision"]:
        new = Record(a["epoch"], a["cut"], state.revision + 1, a["op_id"])
        if op.status is Status.OK:
            return op.result == new, new
        if op.status is Status.INDEFINITE:
            return True, new
        return False, state  # a conflict while the expected revision was current
    if op.status is Status.CONFLICT:
        return op.result == state, state
    return op.status is Status.INDEFINITE, state


def linearizable(ops: list[Op]) -> bool:
    """True iff the history ``ops`` (one stream, starting before its creation) is linearizable."""
    kept = [op for op in ops if op.status is not Status.ERROR]
    definite = [op for op in kept if op.status is not Status.INDEFINITE]
    maybe = [op for op in kept if op.status is Status.INDEFINITE]
    for k in range(len(maybe) + 1):
        for chosen in combinations(maybe, k):
            for order in permutations(definite + list(chosen)):
                if _legal(list(order)):
                    return True
    return False


def _legal(order: list[Op]) -> bool:
    for i, a in enumerate(order):
        for b in order[:i]:
            if a.t1 < b.t0:  # a completed before b was invoked, yet b comes first
                return False
    state: Record | None = None
    for op in order:
        ok, state = _step(state, op)
        if not ok:
            return False
    return True
