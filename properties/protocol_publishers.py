"""The publishers' actions: reads, the merge and its decision, conditional writes with
every network outcome, the authoritative reread, a write landing late, a restart.

Each mirrors :mod:`fencepost.model.machine`'s publisher transition of the same
name (docs/semantics.md sections 4 to 6); see
:mod:`fencepost.properties.protocol_actions` for the whole relation.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from fencepost.properties.protocol_logic import NOTHING_CUT, CutT, Logic, Term, rank
from fencepost.properties.protocol_state import (
    CONFIRMED,
    EPOCH_MISMATCH,
    GAVE_UP,
    HAVE_MEMBERSHIP,
    HAVE_RECORD,
    IDLE,
    IN_DOUBT,
    MISSING_CP,
    NO_COVERAGE,
    NO_REASON,
    NONE_OUT,
    PENDING,
    PROPOSING,
    PUBLISHED,
    SCOPE_MISMATCH,
    UNCHANGED,
    UNSUPPORTED,
    WITHHELD,
    View,
)
from fencepost.properties.protocol_terms import Built, Changes, by_cases, set_fields


def _report(
    L: Logic, s: View, w: Term, outcome: int, reason: Term = NO_REASON, just: Term = True
) -> dict[str, Any]:
    """The attempt ends reporting ``outcome``; its claim is kept for published/confirmed."""
    keep = outcome in (PUBLISHED, CONFIRMED)
    return {
        "ph": IDLE,
        "ret": 0,
        "re": 0,
        "rc": NOTHING_CUT,
        "rr": -1,
        "me": s.me(w) if keep else 0,
        "pr": s.pr(w) if keep else NOTHING_CUT,
        "out": outcome,
        "why": reason,
        "just": L.true if just is True else just,
    }


def _holding(L: Logic, s: View, retries: Term) -> dict[str, Any]:
    """The publisher holds the record as read and is about to read the membership."""
    return {
        "ph": HAVE_RECORD,
        "ret": retries,
        "re": s.rec_epoch(),
        "rc": s.rec_cut(),
        "rr": s.rec_rev(),
        "me": 0,
        "pr": NOTHING_CUT,
        "out": NONE_OUT,
        "why": NO_REASON,
        "just": L.true,
    }


NO_ORPHAN = {"oe": 0, "oc": NOTHING_CUT, "orr": 0}


def _unacknowledged(L: Logic, s: View, w: Term, mutant: str | None) -> dict[str, Any]:
    """No acknowledgement: the publisher is in doubt (``blind-success``: reports published)."""
    if mutant == "blind-success":
        return _report(L, s, w, PUBLISHED, just=L.false)
    return {"ph": IN_DOUBT, "rr": -1}


def _written(L: Logic, s: View, epoch: Term, cut: CutT) -> Changes:
    """The store applies a publication write: revision + 1, the observer's history updated,
    and every write still in flight dropped (each named an older revision)."""
    succ = s.succ
    r = rank(L, succ, cut)
    higher = L.Or(epoch > s.pe(), L.And(epoch == s.pe(), r > rank(L, succ, s.pc())))
    pall = L.IfCut(L.And(s.monotone, r > rank(L, succ, s.pall())), cut, s.pall())
    pe, pc = L.If(higher, epoch, s.pe()), L.IfCut(higher, cut, s.pc())

    def drop(name: str, cleared: Any) -> Callable[..., Any]:
        old = s.fields[name]
        if isinstance(cleared, CutT):
            return lambda w: L.IfCut(s.oe(w) != 0, cleared, old(w))
        return lambda w: L.If(s.oe(w) != 0, cleared, old(w))

    return {
        "rec_epoch": lambda: epoch,
        "rec_cut": lambda: cut,
        "rec_rev": lambda: s.rec_rev() + 1,
        "pe": lambda: pe,
        "pc": lambda: pc,
        "pall": lambda: pall,
        "oe": drop("oe", 0),
        "oc": drop("oc", NOTHING_CUT),
        "orr": drop("orr", 0),
    }


def _then(L: Logic, s: View, first: Changes, w: Term, vals: dict[str, Any]) -> Changes:
    """``first``'s changes, then publisher ``w``'s fields set to ``vals`` (on top)."""
    after = s.replace(**first)
    out = dict(first)
    out.update(set_fields(L, after, w, vals))
    return out


def read_record(L: Logic, s: View, prm: dict[str, Any], mutant: str | None) -> Built:
    w = prm["w"]
    guard = L.And(s.ph(w) == IDLE, s.att(w) > 0)
    return guard, set_fields(L, s, w, {"att": s.att(w) - 1, **_holding(L, s, s.pub_retries)})


def read_record_timeout(L: Logic, s: View, prm: dict[str, Any], mutant: str | None) -> Built:
    w = prm["w"]
    guard = L.And(s.timeouts, s.ph(w) == IDLE, s.att(w) > 0)
    return guard, set_fields(L, s, w, {"att": s.att(w) - 1, **_report(L, s, w, GAVE_UP)})


def read_membership(L: Logic, s: View, prm: dict[str, Any], mutant: str | None) -> Built:
    w = prm["w"]
    return s.ph(w) == HAVE_RECORD, set_fields(L, s, w, {"ph": HAVE_MEMBERSHIP, "me": s.E()})


def timeout_in(phase: int) -> Callable[[Logic, View, dict[str, Any], str | None], Built]:
    def build(L: Logic, s: View, prm: dict[str, Any], mutant: str | None) -> Built:
        w = prm["w"]
        return L.And(s.timeouts, s.ph(w) == phase), set_fields(L, s, w, _report(L, s, w, GAVE_UP))

    return build


@dataclass(frozen=True)
class Merge:
    """The merge of one epoch's checkpoint vector: each withheld reason's condition (in
    the documented order, each excluding the earlier ones), the merged cut, and the
    constraints tying the witnesses that define them."""

    reasons: dict[int, Term]
    cut: CutT
    constraints: Term


def merge(L: Logic, s: View, m: Term, prm: dict[str, Any], mutant: str | None) -> Merge:
    """docs/semantics.md section 4 over every partition, as the model's merge (and its
    mutants) computes it. Witnesses: ``p0`` a partition holding the minimum, ``nonempty``
    whether any partition is in the vector, ``src`` (``epoch-blind``) the epoch each
    partition's newest checkpoint comes from, ``p1``/``anythrough`` (``relabel``)."""
    constraints: list[Term] = []
    if mutant == "epoch-blind":
        src = prm["src"]

        def at(p: Term) -> tuple[Term, Term]:
            return p, src(p)

        def newest(p: Term) -> Term:
            later = L.ForAll(
                "E", lambda e: L.Implies(L.And(e > src(p), e <= m), s.stamp(p, e) == 0)
            )
            none = L.ForAll("E", lambda e: L.Implies(L.And(e >= 1, e <= m), s.stamp(p, e) == 0))
            return L.And(
                src(p) >= 0,
                L.Implies(src(p) >= 1, L.And(src(p) <= m, s.stamp(*at(p)) != 0, later)),
                L.Implies(src(p) == 0, none),
            )

        constraints.append(L.ForAll("P", newest))

        def present(p: Term) -> Term:
            return src(p) >= 1

    else:

        def at(p: Term) -> tuple[Term, Term]:
            return p, m

        def present(p: Term) -> Term:
            return s.stamp(p, m) != 0

    def member(p: Term) -> Term:
        return present(p) if mutant == "skip-missing" else L.true

    def cut(p: Term) -> CutT:
        c: CutT = s.cp_cut(*at(p))
        if mutant == "epsilon":
            bumped = CutT(c.half + 2, 0)
            return L.IfCut(L.And(L.Not(s.succ), c.kind == 1), bumped, c)
        return c

    missing = L.false if mutant == "skip-missing" else L.Exists("P", lambda p: L.Not(present(p)))
    epoch_bad = (
        L.false
        if mutant == "epoch-blind"
        else L.Exists("P", lambda p: L.And(member(p), s.stamp(p, m) != m))
    )
    scope_bad = (
        L.false
        if mutant == "scope-blind"
        else L.Exists("P", lambda p: L.And(member(p), L.Not(s.cp_scope(*at(p)))))
    )
    final_bad = (
        L.false
        if mutant == "provisional-ok"
        else L.Exists("P", lambda p: L.And(member(p), L.Not(s.cp_final(*at(p)))))
    )
    p0, nonempty = prm["p0"], prm["nonempty"]
    succ = s.succ
    if mutant == "relabel":
        p1, anythrough = prm["p1"], prm["anythrough"]
        low = cut(p0).half
        constraints.append(
            L.Implies(
                nonempty,
                L.And(
                    member(p0),
                    L.ForAll("P", lambda p: L.Implies(member(p), low <= cut(p).half)),
                    L.Implies(
                        anythrough, L.And(member(p1), cut(p1).half == low, cut(p1).kind == 1)
                    ),
                    L.Implies(
                        L.Not(anythrough),
                        L.ForAll(
                            "P",
                            lambda p: L.Not(L.And(member(p), cut(p).half == low, cut(p).kind == 1)),
                        ),
                    ),
                ),
            )
        )
        merged = CutT(low, L.If(anythrough, 1, 0))
    else:
        mine = cut(p0)

        def not_below(p: Term) -> Term:
            other = cut(p)
            ra, rb = rank(L, succ, mine), rank(L, succ, other)
            return L.Implies(member(p), L.Or(ra < rb, L.And(ra == rb, mine.half <= other.half)))

        constraints.append(L.Implies(nonempty, L.And(member(p0), L.ForAll("P", not_below))))
        merged = mine
    constraints.append(L.Implies(L.Not(nonempty), L.ForAll("P", lambda p: L.Not(member(p)))))
    result = L.IfCut(nonempty, merged, NOTHING_CUT)
    clean = L.Not(L.Or(missing, epoch_bad, scope_bad, final_bad))
    reasons = {
        MISSING_CP: missing,
        EPOCH_MISMATCH: L.And(L.Not(missing), epoch_bad),
        SCOPE_MISMATCH: L.And(L.Not(missing), L.Not(epoch_bad), scope_bad),
        UNSUPPORTED: L.And(L.Not(missing), L.Not(epoch_bad), L.Not(scope_bad), final_bad),
        NO_COVERAGE: L.And(clean, L.CutEq(result, NOTHING_CUT)),
    }
    return Merge(reasons, result, L.And(*constraints))


def _decision(L: Logic, s: View, w: Term, mg: Merge, mutant: str | None) -> tuple[Term, Term]:
    """(the merge gives a cut, the publisher proposes it) for publisher ``w``."""
    gives = L.And(*(L.Not(c) for c in mg.reasons.values()))
    m = s.me(w)
    succ = s.succ
    r_new, r_rec = rank(L, succ, mg.cut), rank(L, succ, s.rc(w))
    across = L.true if mutant == "cutover-regress" else L.Not(L.And(s.monotone, r_new < r_rec))
    return gives, L.If(s.re(w) == m, r_new > r_rec, across)


def read_checkpoints(outcome: str) -> Callable[[Logic, View, dict[str, Any], str | None], Built]:
    def build(L: Logic, s: View, prm: dict[str, Any], mutant: str | None) -> Built:
        w = prm["w"]
        mg = merge(L, s, s.me(w), prm, mutant)
        base = L.And(s.ph(w) == HAVE_MEMBERSHIP, mg.constraints)
        gives, proposes = _decision(L, s, w, mg, mutant)
        if outcome == "withheld":
            why = prm["why"]
            guard = L.And(
                base,
                L.Or(*(why == k for k in mg.reasons)),
                *(L.Implies(why == k, c) for k, c in mg.reasons.items()),
            )
            return guard, set_fields(L, s, w, _report(L, s, w, WITHHELD, why))
        if outcome == "propose":
            vals = {"ph": PROPOSING, "pr": mg.cut, "re": 0, "rc": NOTHING_CUT}
            return L.And(base, gives, proposes), set_fields(L, s, w, vals)
        same = s.re(w) == s.me(w)
        if outcome == "unchanged":
            guard = L.And(base, gives, L.Not(proposes), same)
            return guard, set_fields(L, s, w, _report(L, s, w, UNCHANGED))
        guard = L.And(base, gives, L.Not(proposes), L.Not(same))
        return guard, set_fields(L, s, w, _report(L, s, w, WITHHELD, PENDING))

    return build


def write_publication(outcome: str) -> Callable[[Logic, View, dict[str, Any], str | None], Built]:
    def build(L: Logic, s: View, prm: dict[str, Any], mutant: str | None) -> Built:
        w = prm["w"]
        proposing = s.ph(w) == PROPOSING
        current = s.rr(w) == s.rec_rev()
        if outcome in ("ok", "lost-applied"):
            applied = _written(L, s, s.me(w), s.pr(w))
            if outcome == "ok":
                vals = {**_report(L, s, w, PUBLISHED), **NO_ORPHAN}
                return L.And(proposing, current), _then(L, s, applied, w, vals)
            vals = {**_unacknowledged(L, s, w, mutant), **NO_ORPHAN}
            return L.And(s.lost, proposing, current), _then(L, s, applied, w, vals)
        if outcome == "in-flight":
            vals = {
                **_unacknowledged(L, s, w, mutant),
                "oe": s.me(w),
                "oc": s.pr(w),
                "orr": s.rec_rev(),
            }
            guard = L.And(s.lost, s.in_flight, s.oe(w) == 0, proposing, current)
            return guard, set_fields(L, s, w, vals)
        if outcome == "lost-not-applied":
            return L.And(s.lost, proposing), set_fields(L, s, w, _unacknowledged(L, s, w, mutant))
        # conflict: the revision moved; the attempt rereads and recomputes within budget
        spent = s.ret(w) == 0
        if mutant == "stale-cut-retry":
            retry = {"ret": s.ret(w) - 1, "rr": s.rec_rev()}
        else:
            retry = _holding(L, s, s.ret(w) - 1)
        cases = [(spent, _report(L, s, w, GAVE_UP)), (L.true, retry)]
        return L.And(proposing, L.Not(current)), by_cases(L, s, w, cases)

    return build


def reread_record(L: Logic, s: View, prm: dict[str, Any], mutant: str | None) -> Built:
    w = prm["w"]
    me = s.me(w)
    succ = s.succ
    confirmed = L.And(s.rec_epoch() == me, rank(L, succ, s.rec_cut()) >= rank(L, succ, s.pr(w)))
    spent = s.ret(w) == 0
    cases: list[tuple[Term, dict[str, Any]]] = [
        (confirmed, _report(L, s, w, CONFIRMED)),
        (spent, _report(L, s, w, GAVE_UP)),
    ]
    if mutant == "fence-blind":
        same_epoch = {
            "ph": HAVE_MEMBERSHIP,
            "ret": s.ret(w) - 1,
            "re": me,
            "rc": s.rec_cut(),
            "rr": s.rec_rev(),
            "pr": NOTHING_CUT,
        }
        cases.append((s.rec_epoch() != me, same_epoch))
    cases.append((L.true, _holding(L, s, s.ret(w) - 1)))
    return s.ph(w) == IN_DOUBT, by_cases(L, s, w, cases)


def delayed_write(L: Logic, s: View, prm: dict[str, Any], mutant: str | None) -> Built:
    w = prm["w"]
    guard = L.And(s.oe(w) != 0, s.orr(w) == s.rec_rev())
    return guard, _written(L, s, s.oe(w), s.oc(w))


def restart_publisher(L: Logic, s: View, prm: dict[str, Any], mutant: str | None) -> Built:
    w = prm["w"]
    vals = {
        "ph": IDLE,
        "ret": 0,
        "re": 0,
        "rc": NOTHING_CUT,
        "rr": -1,
        "me": 0,
        "pr": NOTHING_CUT,
        "out": NONE_OUT,
        "why": NO_REASON,
        "just": L.true,
    }
    return L.true, set_fields(L, s, w, vals)
