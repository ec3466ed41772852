"""The audit's linearizability verdict equals a brute-force checker's on every small history.

Histories come from :func:`fencepost.audit.synth.simulate` (real concurrency in
simulated time, each operation taking effect at a real point inside its interval,
lost responses and failed writes), read on clocks from exact to very coarse (ties
everywhere), and about half of them corrupted by one edit; whether a corrupted one
is still linearizable is the brute-force checker's call (:mod:`fencepost.audit.brute`,
which enumerates permutations and shares no code with the audit's search).

Teeth: an audit that orders a completion before an invocation at the same time (the
field report's 1 ns spacing) disagrees with the brute-force checker on coarse clocks.
"""

from __future__ import annotations

import heapq
import json
import random
from pathlib import Path

import pytest

from fencepost.audit import brute, run, synth
from fencepost.audit.log import op_to_json
from fencepost.audit.ops import Op
from fencepost.audit.stream import StreamAudit
from fencepost.audit.verdict import LINEARIZABILITY

CASES = 1500


def histories(seed: int, count: int) -> list[list[Op]]:
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        h = synth.simulate(rng, clients=rng.randrange(1, 4), ops=rng.randrange(1, 7))
        if rng.random() < 0.5:
            h = synth.coarsen(h, rng.choice([2, 5, 10, 50]))
        if rng.random() < 0.5:
            h = synth.corrupt(h, rng)
        for i, op in enumerate(h):
            op.index = i
        out.append(h)
    return out


def audited(h: list[Op]) -> bool:
    report = run.audit_ops(list(h))
    return not any(v.property == LINEARIZABILITY for v in report.violations)


def save(h: list[Op], path: Path) -> Path:
    """A disagreement as an audit log: ``fencepost audit PATH`` replays it."""
    path.write_text("".join(json.dumps(op_to_json(op)) + "\n" for op in h))
    return path


def test_the_audit_agrees_with_brute_force_on_every_small_history(tmp_path: Path) -> None:
    cases = histories(2024, CASES)
    verdicts = [brute.linearizable(h) for h in cases]
    # Both verdicts are well represented: the cross-check means something.
    assert sum(verdicts) > CASES // 2 and verdicts.count(False) > CASES // 20
    disagree = [i for i, h in enumerate(cases) if audited(h) != verdicts[i]]
    saved = [str(save(cases[i], tmp_path / f"disagree-{i}.log")) for i in disagree[:5]]
    assert disagree == [], f"brute force disagrees; replay with fencepost audit: {saved}"


def test_the_audit_agrees_on_coarse_clocks_of_correct_histories() -> None:
    rng = random.Random(5)
    for _ in range(300):
        h = synth.simulate(rng, clients=3, ops=6, lost=0.2)
        for g in (1, 10, 1000):
            coarse = synth.coarsen(h, g)
            assert brute.linearizable(coarse)
            assert audited(coarse), coarse


class _TiesOrdered(StreamAudit):
    """Broken on purpose: completions at time t come before invocations at t."""

    def _advance(self, t: float, final: bool = False) -> None:
        heap = self._completions
        while heap and (final or heap[0][0] <= t):
            _, _, _, fed = heapq.heappop(heap)
            for register, r in fed:
                register.complete(r)
                self._collect(register)

    def add(self, op: Op) -> None:
        self._advance(op.t0)  # the completions at op.t0 too, before it
        super().add(op)


def test_teeth_an_audit_that_orders_ties_disagrees(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(run, "StreamAudit", _TiesOrdered)
    cases = histories(7, 600)
    assert any(audited(h) != brute.linearizable(h) for h in cases)
