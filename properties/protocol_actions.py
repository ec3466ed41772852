"""The protocol's transition relation: every action of the executable model, as formulas.

Each :class:`Action` is one kind of transition of :mod:`fencepost.model.machine`
(its name is the model's action kind, with the outcome when outcomes are
separate actions), with its parameters (which partition, publisher, reader,
event, cut, page...), its guard, and the fields it rewrites; every other field
keeps its value. ``build(L, s, prm, mutant)`` returns ``(guard, changes)``
over the state ``s``; the state after is ``s.replace(**changes)``. With
``mutant`` set to a model mutant's name, the action bends the same rule the
model's mutant bends (:mod:`fencepost.model.mutants`).

The relation is the model's: tests/proofs evaluate it on every transition of
the default exploration and ask Z3 for successors of reachable states to
replay in the model. Two kinds of action exist only here, marked
``in_model=False``: ``restart_publisher`` and ``restart_reader``, a process
that crashes between two calls and comes back with no memory (its write in
flight still travels). The model represents a crash by a process that takes
no further step beside a fresh one; restarting in place covers that and more.

The relation is unbounded: no limit on partitions, publishers, readers,
events, epochs, revisions, generations, attempts or retries, and a page may
deliver any number of events. The model's bounds (page size, coordinates,
budgets) are the explorer's; tests add them when they ask Z3 for successors
of a model state (:func:`fencepost.properties.protocol_relation.z3_successors`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fencepost.properties.protocol_logic import Logic, Term, candidate, covers, rank
from fencepost.properties.protocol_publishers import (
    delayed_write,
    read_checkpoints,
    read_membership,
    read_record,
    read_record_timeout,
    reread_record,
    restart_publisher,
    timeout_in,
    write_publication,
)
from fencepost.properties.protocol_readers import (
    GAVE_UP_UNAPPLIED,
    LOST_RACE,
    RETRY,
    SETTLE,
    WRITTEN,
    end_pass,
    fetch_page,
    read_checkpoint,
    record_outcomes,
    reread_checkpoint,
    restart_reader,
    write_checkpoint,
)
from fencepost.properties.protocol_state import HAVE_MEMBERSHIP, HAVE_RECORD, IN_DOUBT, View
from fencepost.properties.protocol_terms import (
    COMPOSED,
    INGEST,
    PROTOCOLS,
    PUBLICATION,
    Action,
    Built,
    Param,
    accepted,
    in_view,
    point_update,
    settled,
    store_checkpoint,
    true_cut,
)

__all__ = [
    "ACTIONS",
    "ACTIONS_BY_NAME",
    "COMPOSED",
    "GAVE_UP_UNAPPLIED",
    "INGEST",
    "LOST_RACE",
    "PROTOCOLS",
    "PUBLICATION",
    "RETRY",
    "SETTLE",
    "WRITTEN",
    "Action",
    "Param",
    "accepted",
    "actions_of",
    "in_view",
    "settled",
    "true_cut",
]


def _certify(L: Logic, s: View, prm: dict[str, Any], mutant: str | None) -> Built:
    p, c, e = prm["p"], prm["c"], s.E()
    guard = L.And(candidate(L, c), rank(L, s.succ, c) > rank(L, s.succ, s.cp_cut(p, e)))

    def made_true(old: Callable[..., Any]) -> Callable[..., Any]:
        return lambda v: L.Or(old(v), L.And(in_view(L, s, v, p, e), covers(L, c, s.pos(v))))

    changes = store_checkpoint(L, s, p, e, c, 0, e, L.true, L.true)
    changes["final"] = made_true(s.final)
    changes["durable"] = made_true(s.durable)
    return guard, changes


def _bad(kind: str) -> Callable[[Logic, View, dict[str, Any], str | None], Built]:
    def build(L: Logic, s: View, prm: dict[str, Any], mutant: str | None) -> Built:
        p, c, v0, e = prm["p"], prm["c"], prm["v0"], s.E()
        current = rank(L, s.succ, s.cp_cut(p, e))
        rc = rank(L, s.succ, c)
        guard = L.And(
            s.consts[f"bad_{kind}"],
            s.stamp(p, e) == 0,
            e >= 2 if kind == "epoch" else L.true,
            candidate(L, c),
            rc > current,
            # c is not true: an event of its downset is not settled ...
            in_view(L, s, v0, p, e),
            covers(L, c, s.pos(v0)),
            L.Not(settled(L, s, v0)),
            # ... and it is the least such cut: every candidate between is true.
            L.ForAllCuts(
                lambda c2: L.Implies(
                    L.And(rank(L, s.succ, c2) < rc, rank(L, s.succ, c2) > current),
                    true_cut(L, s, c2, p, e),
                )
            ),
        )
        stamp = e - 1 if kind == "epoch" else e
        scope = L.false if kind == "scope" else L.true
        final = L.false if kind == "provisional" else L.true
        return guard, store_checkpoint(L, s, p, e, c, 0, stamp, scope, final)

    return build


def _finalize(L: Logic, s: View, prm: dict[str, Any], mutant: str | None) -> Built:
    v = prm["v"]
    guard = L.And(
        s.since(v) <= s.E(),
        L.Not(s.final(v)),
        L.ForAll(
            "V",
            lambda w: L.Implies(
                L.And(s.part(w) == s.part(v), s.since(w) == s.since(v), s.key(w) < s.key(v)),
                s.final(w),
            ),
        ),
    )
    return guard, {"final": point_update(L, s.final, (v,), L.true)}


def _reshard(L: Logic, s: View, prm: dict[str, Any], mutant: str | None) -> Built:
    q, newpos, newkey = prm["q"], prm["newpos"], prm["newkey"]
    e = s.E()
    nxt = e + 1

    def moved(v: Term) -> Term:
        return s.since(v) == nxt

    def placed(v: Term) -> Term:
        def against_old(w: Term) -> Term:
            return L.Implies(
                L.And(s.part(w) == q, s.since(w) <= e),
                L.And(
                    L.Implies(s.pos(w) <= newpos(v), s.key(w) < newkey(v)),
                    L.Implies(s.pos(w) > newpos(v), s.key(w) > newkey(v)),
                ),
            )

        def against_moved(w: Term) -> Term:
            return L.Implies(
                L.And(moved(w), L.Not(w == v)),
                L.And(
                    newkey(w) != newkey(v), L.Implies(newpos(w) < newpos(v), newkey(w) < newkey(v))
                ),
            )

        return L.And(
            newpos(v) >= 0,
            L.Implies(s.succ, L.Even(newpos(v))),
            newkey(v) > 0,
            L.ForAll("V", against_old),
            L.ForAll("V", against_moved),
        )

    guard = L.ForAll("V", lambda v: L.Implies(moved(v), placed(v)))

    def where(old: Callable[..., Any], new: Callable[[Term], Term]) -> Callable[..., Any]:
        return lambda v: L.If(moved(v), new(v), old(v))

    return guard, {
        "E": lambda: nxt,
        "part": where(s.part, lambda v: q),
        "pos": where(s.pos, newpos),
        "key": where(s.key, newkey),
        "final": where(s.final, lambda v: L.false),
        "durable": where(s.durable, lambda v: L.false),
    }


_W = (Param("w", "W"),)
_R = (Param("r", "R"),)
_MERGE = (
    Param("p0", "P"),
    Param("nonempty", "Bool"),
    Param("p1", "P"),
    Param("anythrough", "Bool"),
    Param("src", "P->Int"),
)
_PUB = (PUBLICATION, COMPOSED)
_ING = (INGEST, COMPOSED)
_ALL = PROTOCOLS


ACTIONS: tuple[Action, ...] = (
    Action(
        "certify",
        "ingest certifies a true cut above the stored one (its events become final with "
        "durable outcomes): the publication part's environment",
        (PUBLICATION,),
        (Param("p", "P"), Param("c", "Cut")),
        _certify,
    ),
    *(
        Action(
            f"bad_checkpoint:{kind}",
            f"a faulty writer stores a {kind} first checkpoint at the least untrue cut",
            (PUBLICATION,),
            (Param("p", "P"), Param("c", "Cut"), Param("v0", "V")),
            _bad(kind),
        )
        for kind in ("provisional", "scope", "epoch")
    ),
    Action(
        "finalize",
        "the source finalizes the next event of a batch (own events, or one reshard's)",
        _ING,
        (Param("v", "V"),),
        _finalize,
    ),
    Action(
        "reshard",
        "the membership moves to the next epoch; the events scheduled for it move into "
        "one partition, at any positions (below old checkpoints included)",
        _ALL,
        (Param("q", "P"), Param("newpos", "V->Int"), Param("newkey", "V->Real")),
        _reshard,
    ),
    Action(
        "read_publication",
        "a publisher starts an attempt: reads the record",
        _PUB,
        _W,
        read_record,
    ),
    Action(
        "read_publication:timeout",
        "a publisher's first read times out: it gives up",
        _PUB,
        _W,
        read_record_timeout,
    ),
    Action("read_membership", "a publisher reads the membership", _PUB, _W, read_membership),
    Action(
        "read_membership:timeout",
        "the membership read times out: it gives up",
        _PUB,
        _W,
        timeout_in(HAVE_RECORD),
    ),
    Action(
        "read_checkpoints:withheld",
        "a publisher merges the checkpoints and withholds (missing, epoch, scope, finality, "
        "no coverage)",
        _PUB,
        (*_W, *_MERGE, Param("why", "Int")),
        read_checkpoints("withheld"),
    ),
    Action(
        "read_checkpoints:propose",
        "a publisher merges the checkpoints and proposes the cut",
        _PUB,
        (*_W, *_MERGE),
        read_checkpoints("propose"),
    ),
    Action(
        "read_checkpoints:unchanged",
        "the merged cut is not ahead of the record in its epoch: unchanged",
        _PUB,
        (*_W, *_MERGE),
        read_checkpoints("unchanged"),
    ),
    Action(
        "read_checkpoints:cutover_pending",
        "a newer epoch's merged cut is below the record under the monotone policy: withheld",
        _PUB,
        (*_W, *_MERGE),
        read_checkpoints("cutover_pending"),
    ),
    Action(
        "read_checkpoints:timeout",
        "the checkpoints read times out: it gives up",
        _PUB,
        _W,
        timeout_in(HAVE_MEMBERSHIP),
    ),
    Action(
        "write_publication:ok",
        "the conditional write is applied and acknowledged",
        _PUB,
        _W,
        write_publication("ok"),
    ),
    Action(
        "write_publication:lost-applied",
        "the write is applied and its response is lost",
        _PUB,
        _W,
        write_publication("lost-applied"),
    ),
    Action(
        "write_publication:in-flight",
        "the response times out while the write is still in flight",
        _PUB,
        _W,
        write_publication("in-flight"),
    ),
    Action(
        "write_publication:conflict",
        "the revision moved: conflict; the attempt rereads and recomputes (or gives up)",
        _PUB,
        _W,
        write_publication("conflict"),
    ),
    Action(
        "write_publication:lost-not-applied",
        "the write is not applied and its response is lost",
        _PUB,
        _W,
        write_publication("lost-not-applied"),
    ),
    Action(
        "read_publication:authoritative",
        "after a lost response: the authoritative reread confirms, retries, cuts over or gives up",
        _PUB,
        _W,
        reread_record,
    ),
    Action(
        "read_publication:authoritative-timeout",
        "the authoritative reread times out: it gives up",
        _PUB,
        _W,
        timeout_in(IN_DOUBT),
    ),
    Action(
        "delayed_write",
        "a write in flight reaches the store while its revision is current",
        _PUB,
        _W,
        delayed_write,
    ),
    Action(
        "restart_publisher",
        "a publisher crashes between two calls and restarts with no memory",
        _PUB,
        _W,
        restart_publisher,
        in_model=False,
    ),
    Action(
        "read_checkpoint",
        "a reader starts a pass: reads its checkpoint",
        _ING,
        _R,
        read_checkpoint,
    ),
    Action(
        "fetch_page",
        "the provider answers a page: events from the token (maybe repeating the last), a "
        "final claim it made true, or none",
        _ING,
        (
            *_R,
            Param("start", "Real"),
            Param("end", "Real"),
            Param("overlapping", "Bool"),
            Param("v0", "V"),
            Param("nonempty", "Bool"),
            Param("v1", "V"),
            Param("claim", "Cut"),
            Param("claimed", "Bool"),
            Param("vmax", "V"),
        ),
        fetch_page,
    ),
    Action(
        "record_outcomes",
        "the reader records the page's outcomes durably",
        _ING,
        _R,
        record_outcomes,
    ),
    *(
        Action(
            f"write_checkpoint:{outcome}",
            f"a checkpoint write (a claim, a rewrite, a retry or the closing progress write): "
            f"{what}",
            _ING,
            _R,
            write_checkpoint(outcome),
        )
        for outcome, what in (
            ("ok", "applied and acknowledged"),
            ("lost-applied", "applied, the response lost"),
            ("conflict", "a newer generation is stored"),
            ("lost-not-applied", "not applied, the response lost"),
        )
    ),
    Action(
        "read_checkpoint:reread",
        "the reader rereads its checkpoint after a lost response (or after giving up)",
        _ING,
        (*_R, Param("dec", "Int")),
        reread_checkpoint,
    ),
    Action("end_pass", "the pass ends with nothing to write", _ING, _R, end_pass),
    Action(
        "restart_reader",
        "a reader crashes between two calls and restarts with no memory",
        _ING,
        _R,
        restart_reader,
        in_model=False,
    ),
)

ACTIONS_BY_NAME = {a.name: a for a in ACTIONS}


def actions_of(protocol: str) -> list[Action]:
    """The actions of ``protocol`` (publication, ingest or composed)."""
    return [a for a in ACTIONS if protocol in a.protocols]
