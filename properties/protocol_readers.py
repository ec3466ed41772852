"""The readers' actions: a pass's checkpoint read, pages, outcome records, checkpoint
writes with every network outcome (a claim, a rewrite after a lost race, a retry, the
closing progress write), rereads, the end of a pass, a restart.

Each mirrors :mod:`fencepost.model.machine`'s production reader (what
``fencepost.impl.reader.PartitionReader`` does); see
:mod:`fencepost.properties.protocol_actions` for the whole relation.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fencepost.properties.protocol_logic import (
    NOTHING_CUT,
    CutT,
    Logic,
    Term,
    candidate,
    covers,
    max_cut,
    rank,
)
from fencepost.properties.protocol_state import (
    FETCHED,
    R_IDLE,
    READING,
    REREADING,
    SETTLING,
    WRITING,
    View,
)
from fencepost.properties.protocol_terms import (
    Built,
    Changes,
    by_cases,
    in_view,
    same_token,
    set_fields,
    store_checkpoint,
)


def _idle_reader(L: Logic) -> dict[str, Any]:
    return {
        "rph": R_IDLE,
        "rep": 0,
        "rb": NOTHING_CUT,
        "rcl": NOTHING_CUT,
        "rtok": 0,
        "rbt": 0,
        "rret": 0,
        "rclose": L.false,
        "rexp": -1,
    }


def _clear_pending(L: Logic, s: View, r: Term) -> Callable[..., Any]:
    return lambda x, v: L.And(x != r, s.pend(x, v))


def _holding_stored(L: Logic, s: View, r: Term) -> dict[str, Any]:
    """The reader goes on paging from its own token, holding what is stored now."""
    p, e = s.rpart(r), s.rep(r)
    return {
        "rph": READING,
        "rb": s.cp_cut(p, e),
        "rcl": s.cp_cut(p, e),
        "rbt": L.If(s.stamp(p, e) != 0, s.cp_tok(p, e), -1),
        "rret": s.reader_retries,
        "rclose": L.false,
        "rexp": s.gen(p, e),
    }


def _reader_changes(
    L: Logic, s: View, r: Term, cases: list[tuple[Term, dict[str, Any]]], idle_when: Term
) -> Changes:
    """The reader's fields by case, its pending page dropped when it ends up idle."""
    out = by_cases(L, s, r, cases)
    old_pend = s.pend
    out["pend"] = lambda x, v: L.And(L.Not(L.And(x == r, idle_when)), old_pend(x, v))
    return out


def read_checkpoint(L: Logic, s: View, prm: dict[str, Any], mutant: str | None) -> Built:
    r = prm["r"]
    p, e = s.rpart(r), s.E()
    token = L.If(s.stamp(p, e) != 0, s.cp_tok(p, e), -1)
    vals = {
        "rph": READING,
        "rpass": s.rpass(r) - 1,
        "rep": e,
        "rb": s.cp_cut(p, e),
        "rcl": s.cp_cut(p, e),
        "rtok": token,
        "rbt": token,
        "rret": s.reader_retries,
        "rclose": L.false,
        "rexp": s.gen(p, e),
    }
    return L.And(s.rph(r) == R_IDLE, s.rpass(r) > 0), set_fields(L, s, r, vals)


def fetch_page(L: Logic, s: View, prm: dict[str, Any], mutant: str | None) -> Built:
    r = prm["r"]
    start, end, overlap, v0 = prm["start"], prm["end"], prm["overlapping"], prm["v0"]
    nonempty, v1, claim, claimed = prm["nonempty"], prm["v1"], prm["claim"], prm["claimed"]
    p, e, t = s.rpart(r), s.rep(r), s.rtok(r)

    def view(v: Term) -> Term:
        return in_view(L, s, v, p, e)

    def delivered(v: Term) -> Term:
        return L.And(view(v), start <= s.key(v), s.key(v) < end)

    last_below = L.ForAll(
        "V", lambda w: L.Implies(L.And(view(w), s.key(w) < t), s.key(w) <= s.key(v0))
    )
    succ = s.succ
    old = s.rcl(r)
    if mutant == "max-observed":
        top = prm["vmax"]
        seen = CutT(s.pos(top), 1)
        claim_ok = L.And(
            L.Implies(
                nonempty,
                L.And(
                    delivered(top),
                    L.ForAll("V", lambda v: L.Implies(delivered(v), s.pos(v) <= s.pos(top))),
                ),
            ),
            L.CutEq(claim, L.IfCut(nonempty, max_cut(L, succ, old, seen), old)),
        )
    else:

        def honest(v: Term) -> Term:
            inside = L.And(view(v), covers(L, claim, s.pos(v)))
            return L.Implies(inside, L.And(s.final(v), s.key(v) < end))

        made = [candidate(L, claim), rank(L, succ, claim) > rank(L, succ, old)]
        if mutant != "provisional-ok":
            made.append(L.ForAll("V", honest))
        claim_ok = L.And(
            L.Implies(claimed, L.And(*made)), L.Implies(L.Not(claimed), L.CutEq(claim, old))
        )
    guard = L.And(
        s.rph(r) == READING,
        end >= t,
        end >= 0,
        L.Implies(L.Not(overlap), start == t),
        L.Implies(
            overlap,
            L.And(s.overlap, view(v0), s.key(v0) < t, last_below, start == s.key(v0)),
        ),
        L.Implies(nonempty, delivered(v1)),
        L.Implies(L.Not(nonempty), L.ForAll("V", lambda v: L.Not(delivered(v)))),
        claim_ok,
    )
    changes = set_fields(
        L, s, r, {"rph": L.If(nonempty, FETCHED, READING), "rcl": claim, "rtok": end}
    )
    old_pend = s.pend
    changes["pend"] = lambda x, v: L.If(x == r, delivered(v), old_pend(x, v))
    return guard, changes


def record_outcomes(L: Logic, s: View, prm: dict[str, Any], mutant: str | None) -> Built:
    r = prm["r"]
    changes = set_fields(L, s, r, {"rph": READING})
    changes["durable"] = lambda v: L.Or(s.durable(v), s.pend(r, v))
    changes["pend"] = _clear_pending(L, s, r)
    return s.rph(r) == FETCHED, changes


def _reader_write_state(L: Logic, s: View, r: Term) -> tuple[Term, Term, Term]:
    """(a write is due, it closes the pass, it is a token-only progress write)."""
    p, e = s.rpart(r), s.rep(r)
    ahead = rank(L, s.succ, s.rcl(r)) > rank(L, s.succ, s.rb(r))
    progress_due = L.And(s.save_progress, L.Not(same_token(L, s, p, e, s.rtok(r), s.rbt(r))))
    reading = s.rph(r) == READING
    due = L.Or(s.rph(r) == WRITING, L.And(reading, L.Or(ahead, progress_due)))
    closing = L.Or(s.rclose(r), L.And(reading, L.Not(ahead)))
    return due, closing, progress_due


def _lost_race(
    L: Logic, s: View, r: Term, closing: Term, mutant: str | None
) -> list[tuple[Term, dict[str, Any]]]:
    """A newer generation is stored: keep it (stronger), rewrite on it (ours still
    strictly ahead, a retry left), or give up and reread (budget spent)."""
    p, e = s.rpart(r), s.rep(r)
    ahead = rank(L, s.succ, s.rcl(r)) > rank(L, s.succ, s.cp_cut(p, e))
    if mutant == "overwrite":
        ahead = L.true
    keep = L.Not(ahead)
    keep_vals = {**_holding_stored(L, s, r), "rclose": L.false}
    settle_idle = L.And(keep, closing)
    return [
        (settle_idle, _idle_reader(L)),
        (keep, keep_vals),
        (s.rret(r) == 0, {"rph": SETTLING, "rclose": closing}),
        (
            L.true,
            {
                "rph": WRITING,
                "rb": s.cp_cut(p, e),
                "rret": s.rret(r) - 1,
                "rexp": s.gen(p, e),
                "rclose": closing,
            },
        ),
    ]


def write_checkpoint(outcome: str) -> Callable[[Logic, View, dict[str, Any], str | None], Built]:
    def build(L: Logic, s: View, prm: dict[str, Any], mutant: str | None) -> Built:
        r = prm["r"]
        p, e = s.rpart(r), s.rep(r)
        due, closing, _ = _reader_write_state(L, s, r)
        current = s.gen(p, e) == s.rexp(r)
        if outcome in ("ok", "lost-applied"):
            stored = store_checkpoint(L, s, p, e, s.rcl(r), s.rtok(r), e, L.true, L.true)
            if outcome == "ok":
                after = s.replace(**stored)
                cases = [(closing, _idle_reader(L)), (L.true, _holding_stored(L, after, r))]
                changes = dict(stored)
                changes.update(_reader_changes(L, after, r, cases, closing))
                return L.And(due, current), changes
            changes = dict(stored)
            changes.update(set_fields(L, s, r, {"rph": REREADING, "rclose": closing}))
            return L.And(s.lost, due, current), changes
        if outcome == "lost-not-applied":
            return L.And(s.lost, due), set_fields(L, s, r, {"rph": REREADING, "rclose": closing})
        cases = _lost_race(L, s, r, closing, mutant)
        return L.And(due, L.Not(current)), _reader_changes(L, s, r, cases, cases[0][0])

    return build


#: The decisions of a reader's reread of its checkpoint.
SETTLE, WRITTEN, RETRY, GAVE_UP_UNAPPLIED, LOST_RACE = range(5)


def reread_checkpoint(L: Logic, s: View, prm: dict[str, Any], mutant: str | None) -> Built:
    r, dec = prm["r"], prm["dec"]
    p, e = s.rpart(r), s.rep(r)
    gen, exp = s.gen(p, e), s.rexp(r)
    closing = s.rclose(r)
    rereading = s.rph(r) == REREADING
    mine = L.And(
        s.stamp(p, e) == e,
        L.CutEq(s.cp_cut(p, e), s.rcl(r)),
        same_token(L, s, p, e, s.cp_tok(p, e), s.rtok(r)),
        s.cp_scope(p, e),
        s.cp_final(p, e),
    )
    written = L.And(gen == exp + 1, mine)
    conds = {
        SETTLE: s.rph(r) == SETTLING,
        WRITTEN: L.And(rereading, written),
        RETRY: L.And(rereading, gen == exp, s.rret(r) > 0),
        GAVE_UP_UNAPPLIED: L.And(rereading, gen == exp, s.rret(r) == 0),
        LOST_RACE: L.And(rereading, gen != exp, L.Not(written)),
    }
    guard = L.And(
        L.Or(*(dec == k for k in conds)), *(L.Implies(dec == k, c) for k, c in conds.items())
    )
    holding = _holding_stored(L, s, r)
    settles = L.Or(dec == SETTLE, dec == WRITTEN)
    race = _lost_race(L, s, r, closing, mutant)
    cases: list[tuple[Term, dict[str, Any]]] = [
        (L.And(settles, closing), _idle_reader(L)),
        (settles, holding),
        (dec == RETRY, {"rph": WRITING, "rret": s.rret(r) - 1}),
        (dec == GAVE_UP_UNAPPLIED, {"rph": SETTLING}),
        *[(L.And(dec == LOST_RACE, c), vals) for c, vals in race],
    ]
    idle = L.Or(L.And(settles, closing), L.And(dec == LOST_RACE, race[0][0]))
    return guard, _reader_changes(L, s, r, cases, idle)


def end_pass(L: Logic, s: View, prm: dict[str, Any], mutant: str | None) -> Built:
    r = prm["r"]
    ahead = rank(L, s.succ, s.rcl(r)) > rank(L, s.succ, s.rb(r))
    _, _, progress_due = _reader_write_state(L, s, r)
    guard = L.And(s.rph(r) == READING, L.Not(ahead), L.Not(progress_due))
    return guard, _reader_changes(L, s, r, [(L.true, _idle_reader(L))], L.true)


def restart_reader(L: Logic, s: View, prm: dict[str, Any], mutant: str | None) -> Built:
    r = prm["r"]
    return L.true, _reader_changes(L, s, r, [(L.true, _idle_reader(L))], L.true)
