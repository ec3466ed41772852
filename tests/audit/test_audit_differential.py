"""The audit against an independent brute-force checker of the whole store, on generated
histories of the record and the checkpoints: whole, rotated, misfiled, corrupted.

Histories come from :func:`fencepost.audit.synth.simulate_store` (real concurrency in
simulated time, every call taking effect at a point inside its interval, lost
responses); :func:`~fencepost.audit.synth.rotate` deletes the segments written up to a
time, as ``LogWriter(keep=N)`` does, and the log's knowledge then starts there;
:func:`~fencepost.audit.synth.misfile` answers one checkpoint read with another
partition's checkpoint or one no write made; :func:`~fencepost.audit.synth.corrupt`
edits one call. The brute-force checker (:mod:`fencepost.audit.brute_store`) decides
by the definition, all registers as one object, with calls the log lost allowed
anywhere before the first call invoked after the start.

The audit must never raise a false alarm, and must catch every violation except
those only a call invoked before the start shows (such a call's answer constrains
nothing in the audit: it may predate the deleted calls). The run prints the figures.

Teeth: judging the kept segments as if the log were whole (the old verdict) raises
false alarms; an audit that does not check answers against the key asked misses
misfiled checkpoints.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import replace

import pytest

from fencepost.audit import brute_store, run, synth
from fencepost.audit.ops import INF
from fencepost.audit.stream import StreamAudit
from fencepost.audit.verdict import LINEARIZABILITY

CASES = 1200
VARIANTS = ("whole", "rotated", "misfiled", "rotated+misfiled", "corrupt", "rotated+corrupt")


def generated(seed: int, count: int) -> list[tuple[str, synth.StoreHistory]]:
    rng = random.Random(seed)
    out = []
    for i in range(count):
        h = synth.simulate_store(rng, clients=rng.randrange(1, 4), ops=rng.randrange(2, 8))
        variant = VARIANTS[i % len(VARIANTS)]
        if "rotated" in variant:
            times = sorted({int(t) for t in h.logged.values() if t != INF})
            h = synth.rotate(h, rng.choice(times))
        if "misfiled" in variant:
            h = synth.misfile(h, rng)
        if "corrupt" in variant:
            h = synth.StoreHistory(synth.corrupt(h.ops, rng), h.start, h.held, h.logged)
        out.append((variant, h))
    return out


def audited(h: synth.StoreHistory, *, start: int | None) -> bool:
    ops = [replace(op, index=i) for i, op in enumerate(h.ops)]
    report = run.audit_ops(ops, start=start)
    return not any(v.property == LINEARIZABILITY for v in report.violations)


def straddles(h: synth.StoreHistory) -> bool:
    return h.start is not None and any(op.t0 <= h.start for op in h.ops)


def tally(
    cases: list[tuple[str, synth.StoreHistory]], *, honour_start: bool = True
) -> Counter[str]:
    figures: Counter[str] = Counter()
    for variant, h in cases:
        truth = brute_store.linearizable(h.ops, held=h.held, start=h.start)
        verdict = audited(h, start=h.start if honour_start else None)
        figures["linearizable" if truth else "violations"] += 1
        if verdict and not truth:
            figures["missed, before the start" if straddles(h) else "missed"] += 1
        elif truth and not verdict:
            figures[f"false alarms ({variant})"] += 1
            figures["false alarms"] += 1
        else:
            figures["agreed"] += 1
    return figures


def test_the_audit_agrees_with_brute_force_on_the_whole_store() -> None:
    cases = generated(2022, CASES)
    figures = tally(cases)
    print(f"\ndifferential over {CASES} histories:", dict(sorted(figures.items())))
    assert figures["false alarms"] == 0, figures
    assert figures["missed"] == 0, figures
    # Both verdicts are well represented, rotated logs and misfiled answers included.
    assert figures["violations"] > CASES // 8 and figures["linearizable"] > CASES // 2
    assert figures["agreed"] >= CASES * 0.97


def test_teeth_kept_segments_judged_as_a_whole_log_raise_false_alarms() -> None:
    cases = [c for c in generated(2022, CASES) if c[1].start is not None]
    figures = tally(cases, honour_start=False)
    assert figures["false alarms"] > 0, figures


def test_teeth_an_audit_that_does_not_check_the_key_misses_misfiled_answers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(StreamAudit, "_misfiled", lambda self, cp, epoch, partition, op: False)
    cases = [c for c in generated(2022, CASES // 2) if "misfiled" in c[0]]
    figures = tally(cases)
    assert figures["missed"] > 0, figures
