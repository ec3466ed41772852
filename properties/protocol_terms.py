"""The building blocks of the protocol's transition relation.

:class:`Action` and :class:`Param` describe one kind of transition; the
helpers state domain facts once for every action and lemma (an event in a
partition's list, a settled event, a true cut, an accepted checkpoint, two
tokens naming one place) and build a state's changes (a field rewritten at
one point, fields chosen by case, a checkpoint stored). The actions
themselves are in :mod:`fencepost.properties.protocol_actions` (environment,
and the list), :mod:`fencepost.properties.protocol_publishers` and
:mod:`fencepost.properties.protocol_readers`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from fencepost.properties.protocol_logic import (
    CutT,
    Logic,
    PyLogic,
    Term,
    covers,
    max_cut,
)
from fencepost.properties.protocol_state import View

Changes = dict[str, Callable[..., Any]]
Built = tuple[Term, Changes]

PUBLICATION = "publication"
INGEST = "ingest"
COMPOSED = "composed"
PROTOCOLS = (PUBLICATION, INGEST, COMPOSED)


@dataclass(frozen=True)
class Param:
    """An action parameter: a name and its kind (a sort, ``Int``, ``Real``, ``Bool``,
    ``Cut``, or a function ``V->Int``, ``V->Real``, ``P->Int``)."""

    name: str
    kind: str


@dataclass(frozen=True)
class Action:
    """One kind of transition: where it runs, its parameters and its meaning."""

    name: str
    doc: str
    protocols: tuple[str, ...]
    params: tuple[Param, ...]
    build: Callable[[Logic, View, dict[str, Any], str | None], Built]
    in_model: bool = True


def in_view(L: Logic, s: View, v: Term, p: Term, e: Term) -> Term:
    """Event ``v`` is in partition ``p``'s list in epoch ``e``."""
    return L.And(s.part(v) == p, s.since(v) <= e)


def settled(L: Logic, s: View, v: Term) -> Term:
    """The source finalized ``v`` and its terminal outcome is durable."""
    return L.And(s.final(v), s.durable(v))


def true_cut(L: Logic, s: View, c: CutT, p: Term, e: Term) -> Term:
    """Every event of ``p`` in epoch ``e`` inside ``D(c)`` is settled."""
    return L.ForAll(
        "V",
        lambda v: L.Implies(
            L.And(in_view(L, s, v, p, e), covers(L, c, s.pos(v))), settled(L, s, v)
        ),
    )


def accepted(L: Logic, s: View, p: Term, e: Term) -> Term:
    """A checkpoint of ``(p, e)`` the merge accepts: stamped ``e``, final, the stream's scope."""
    return L.And(s.stamp(p, e) == e, s.cp_final(p, e), s.cp_scope(p, e))


def same_token(L: Logic, s: View, p: Term, e: Term, a: Term, b: Term) -> Term:
    """Two tokens of ``p``'s list in epoch ``e`` name the same place (or both none)."""
    return L.And(
        (a < 0) == (b < 0),
        L.ForAll(
            "V", lambda v: L.Implies(in_view(L, s, v, p, e), (s.key(v) < a) == (s.key(v) < b))
        ),
    )


def point_update(
    L: Logic, old: Callable[..., Any], point: tuple[Term, ...], new: Any
) -> Callable[..., Any]:
    """``old`` with the value at ``point`` replaced by ``new`` (a term or a cut)."""
    if isinstance(L, PyLogic):  # the same meaning, evaluated directly (fast path)
        return lambda *args: new if args == point else old(*args)

    def fn(*args: Term) -> Any:
        here = L.And(*(a == b for a, b in zip(args, point, strict=True)))
        if isinstance(new, CutT):
            return L.IfCut(here, new, old(*args))
        return L.If(here, new, old(*args))

    return fn


def by_cases(L: Logic, s: View, who: Term, cases: list[tuple[Term, dict[str, Any]]]) -> Changes:
    """Per field, the value of the first case whose condition holds (the old value where a
    case leaves a field alone), at the element ``who``."""
    names = {name for _, vals in cases for name in vals}
    out: Changes = {}
    for name in names:
        old = s.fields[name]
        unchanged = old(who)
        value: Any = unchanged
        for cond, vals in reversed(cases):
            new = vals.get(name, unchanged)
            value = L.IfCut(cond, new, value) if isinstance(new, CutT) else L.If(cond, new, value)
        out[name] = point_update(L, old, (who,), value)
    return out


def set_fields(L: Logic, s: View, who: Term, vals: dict[str, Any]) -> Changes:
    return by_cases(L, s, who, [(L.true, vals)])


def store_checkpoint(
    L: Logic,
    s: View,
    p: Term,
    e: Term,
    cut: CutT,
    token: Term,
    stamp: Term,
    scope: Term,
    final: Term,
) -> Changes:
    """The store writes a checkpoint of ``(p, e)`` as the next generation; the observer's
    peak keeps the highest cut ever stored there."""
    pt = (p, e)
    return {
        "stamp": point_update(L, s.stamp, pt, stamp),
        "cp_cut": point_update(L, s.cp_cut, pt, cut),
        "cp_tok": point_update(L, s.cp_tok, pt, token),
        "cp_scope": point_update(L, s.cp_scope, pt, scope),
        "cp_final": point_update(L, s.cp_final, pt, final),
        "gen": point_update(L, s.gen, pt, s.gen(p, e) + 1),
        "peak": point_update(L, s.peak, pt, max_cut(L, s.succ, s.peak(p, e), cut)),
    }
