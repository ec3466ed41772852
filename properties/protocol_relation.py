"""The Z3 relation means the executable model: each model transition, checked against it.

:func:`check_transition` takes a transition of :mod:`fencepost.model.machine`
(a state, an action, the next state), names the relation's action and the
parameters standing for the model's choices (:func:`witness`), and evaluates
the relation's formulas -- the very ones the proof hands Z3 -- on the encoded
states: the guard must hold and the state the action produces must be the
encoded next state, field by field. :func:`z3_successors` goes the other way:
Z3 finds states the relation allows after a model state, to be looked for
among the model's successors. Both ignore what the encoding leaves out (the
record's op_id, the attempt counter) and need the production reader.
"""

from __future__ import annotations

from collections.abc import Iterator
from fractions import Fraction
from typing import Any

import z3

from fencepost.model.cuts import rank as model_rank
from fencepost.model.state import Action as ModelAction
from fencepost.model.state import State
from fencepost.properties.protocol_actions import (
    ACTIONS,
    ACTIONS_BY_NAME,
    GAVE_UP_UNAPPLIED,
    LOST_RACE,
    RETRY,
    SETTLE,
    WRITTEN,
    Action,
)
from fencepost.properties.protocol_logic import EPOCH, CutT, FiniteZ3Logic, Z3Logic
from fencepost.properties.protocol_state import (
    FIELDS,
    REASONS,
    Tables,
    Universe,
    View,
    constants,
    encode,
    event_element,
    normalize,
    table_view,
    tables_of_view,
    universe,
    z3_state,
)
from fencepost.solver import Query

_REREAD = {"settle": SETTLE, "written": WRITTEN, "retry": RETRY}


class Encoder:
    """Encodes the states of one configuration, each once."""

    def __init__(self, state: State) -> None:
        self.config = state.context.config
        if self.config.reader_retries is None and state.context.has_readers:
            raise ValueError(
                "the relation encodes the production reader: set reader_retries in the model "
                "configuration"
            )
        self.uni: Universe = universe(self.config, state)
        self.L = self.uni.logic()
        self.consts = constants(self.config)
        self._cache: dict[int, tuple[State, Tables, View]] = {}

    def _entry(self, state: State) -> tuple[State, Tables, View]:
        got = self._cache.get(id(state))
        if got is not None and got[0] is state:
            return got
        tables = encode(state, self.uni)
        if len(self._cache) > 100_000:
            self._cache.clear()
        entry = (state, tables, table_view(tables, self.consts))
        self._cache[id(state)] = entry
        return entry

    def tables(self, state: State) -> Tables:
        """The encoded tables of ``state`` (cached while it lives)."""
        return self._entry(state)[1]

    def view(self, state: State) -> View:
        """The concrete view of ``state`` (cached while it lives)."""
        return self._entry(state)[2]


def _publisher(state: State, actor: str) -> int:
    return state.context.publisher_names.index(actor)


def _reader(state: State, actor: str) -> tuple[int, int]:
    for i, row in enumerate(state.context.reader_names):
        if actor in row:
            return i, row.index(actor)
    raise KeyError(actor)


def _cut(c: Any) -> CutT:
    return CutT(c.half, c.kind)


def witness(enc: Encoder, pre: State, a: ModelAction, post: State) -> tuple[str, dict[str, Any]]:
    """The relation's action and parameters standing for the model transition."""
    kind = a.kind
    ctx = pre.context
    t_pre, t_post = enc.tables(pre), enc.tables(post)
    some_p = enc.uni.partitions[0]
    some_v = enc.uni.events[0]
    if kind == "certify":
        assert a.partition is not None and a.cut is not None
        return "certify", {"p": ctx.partition_names.index(a.partition), "c": _cut(a.cut)}
    if kind == "bad_checkpoint":
        assert a.partition is not None and a.cut is not None
        p = ctx.partition_names.index(a.partition)
        c = _cut(a.cut)
        v0 = next(
            v
            for v in enc.uni.events
            if t_pre["part"][(v,)] == p
            and t_pre["since"][(v,)] <= pre.epoch
            and (t_pre["pos"][(v,)] < c.half or (c.kind == 1 and t_pre["pos"][(v,)] == c.half))
            and not (t_pre["final"][(v,)] and t_pre["durable"][(v,)])
        )
        return f"bad_checkpoint:{a.detail}", {"p": p, "c": c, "v0": v0}
    if kind == "finalize":
        v = next(v for v in enc.uni.events if t_post["final"][(v,)] != t_pre["final"][(v,)])
        return "finalize", {"v": v}
    if kind == "reshard":
        q = 0 if a.partition is None else ctx.partition_names.index(a.partition)
        pos, key = t_post["pos"], t_post["key"]
        return "reshard", {"q": q, "newpos": lambda v: pos[(v,)], "newkey": lambda v: key[(v,)]}
    if kind in ("read_publication", "read_membership", "read_checkpoints", "write_publication"):
        w = _publisher(pre, a.actor)
        prm: dict[str, Any] = {"w": w}
        authoritative = (a.detail or "").startswith("authoritative")
        if kind == "read_publication":
            name = "read_publication:authoritative" if authoritative else "read_publication"
            if a.outcome == "timeout":
                name += "-timeout" if authoritative else ":timeout"
            return name, prm
        if kind == "read_membership":
            return kind + (":timeout" if a.outcome == "timeout" else ""), prm
        if kind == "write_publication":
            return f"write_publication:{a.outcome}", prm
        if a.outcome == "timeout":
            return "read_checkpoints:timeout", prm
        prm.update(_merge_witness(pre, pre.publishers[w].mem_epoch, some_p))
        if a.detail in ("propose", "unchanged", "cutover_pending"):
            return f"read_checkpoints:{a.detail}", prm
        prm["why"] = REASONS.index(a.detail or "")
        return "read_checkpoints:withheld", prm
    if kind == "delayed_write":
        return "delayed_write", {"w": _publisher(pre, a.actor)}
    r = _reader(pre, a.actor)
    if kind == "read_checkpoint":
        if not (a.detail or "").startswith("authoritative"):
            return "read_checkpoint", {"r": r}
        decision = (a.detail or "").split(":", 1)[1]
        if decision in _REREAD:
            dec = _REREAD[decision]
        elif decision == "gave_up":
            reader = pre.partitions[r[0]].readers[r[1]]
            gen = pre.partitions[r[0]].generations[reader.epoch - 1]
            dec = GAVE_UP_UNAPPLIED if gen == reader.expected else LOST_RACE
        else:
            dec = LOST_RACE
        return "read_checkpoint:reread", {"r": r, "dec": dec}
    if kind == "fetch_page":
        return "fetch_page", _page_witness(enc, pre, a, post, r, some_v)
    if kind == "record_outcomes":
        return "record_outcomes", {"r": r}
    if kind == "write_checkpoint":
        return f"write_checkpoint:{a.outcome}", {"r": r}
    if kind == "end_pass":
        return "end_pass", {"r": r}
    raise ValueError(f"no relation action for the model's {kind!r}")


def _merge_witness(state: State, epoch: int, some_p: int) -> dict[str, Any]:
    succ = state.context.successor
    cuts = [part.checkpoints[epoch - 1].cut for part in state.partitions]
    p0 = min(range(len(cuts)), key=lambda i: (model_rank(cuts[i], succ), cuts[i].half))
    return {
        "p0": p0,
        "nonempty": True,
        "p1": some_p,
        "anythrough": False,
        "src": lambda p: 0,
    }


def _page_witness(
    enc: Encoder, pre: State, a: ModelAction, post: State, r: tuple[int, int], some_v: Any
) -> dict[str, Any]:
    i, j = r
    ctx = pre.context
    page = a.page
    assert page is not None
    reader, after = pre.partitions[i].readers[j], post.partitions[i].readers[j]
    t_pre, t_post = enc.tables(pre), enc.tables(post)
    view = ctx.view(pre.partitions[i].truth.moved, reader.epoch)
    elements = [event_element(pre, i, idx) for idx in view]
    if page.overlap:
        v0 = elements[page.start]
        start = t_pre["key"][(v0,)]
    else:
        v0 = some_v
        start = t_pre["rtok"][(r,)]
    delivered = elements[page.start : page.end]
    return {
        "r": r,
        "start": start,
        "end": t_post["rtok"][(r,)],
        "overlapping": page.overlap,
        "v0": v0,
        "nonempty": bool(delivered),
        "v1": delivered[0] if delivered else some_v,
        "claim": _cut(after.claim),
        "claimed": after.claim != reader.claim,
        "vmax": some_v,
    }


def check_transition(enc: Encoder, pre: State, a: ModelAction, post: State) -> str | None:
    """``None`` when the relation allows the model transition exactly; else what differs."""
    name, prm = witness(enc, pre, a, post)
    action = ACTIONS_BY_NAME[name]
    s = enc.view(pre)
    guard, changes = action.build(enc.L, s, prm, enc.config.mutant)
    if not guard:
        return f"{a.describe()}: the guard of {name} does not hold"
    after = s.replace(**changes)
    want = enc.tables(post)
    before = enc.tables(pre)
    got = tables_of_view(enc.L, after, enc.uni, only=changes)
    for f in FIELDS:
        if f.name in changes:
            if got[f.name] == want[f.name]:
                continue
            diff = _diff(got[f.name], want[f.name])
        elif want[f.name] != before[f.name]:
            diff = f"unchanged by {name}, but the model changed it"
        else:
            continue
        if diff:
            return f"{a.describe()}: {name} gives a different {f.name}: {diff}"
    return None


def _diff(got: dict[Any, Any], want: dict[Any, Any]) -> str:
    for k in sorted(set(got) | set(want), key=repr):
        g, w = got.get(k), want.get(k)
        if g != w and not (g in (None, False) and w in (None, False)):
            return f"at {k}: relation {g!r}, model {w!r}"
    return ""


def transitions(states: list[State]) -> Iterator[tuple[State, ModelAction, State]]:
    """Every transition out of ``states`` (the model's successors)."""
    from fencepost.model.machine import successors

    for state in states:
        for a, nxt in successors(state):
            yield state, a, nxt


# ---------------------------------------------------------------------------- Z3 successors


def z3_successors(state: State, action: Action, limit: int = 8) -> list[dict[str, Any]]:
    """States Z3 finds the relation allows after ``state`` by ``action`` (normalized tables).

    ``state`` is pinned exactly over its finite universe (closed sorts); the
    explorer's bounds of its configuration are added (page size, coordinates of
    claims, where a reshard moves events). Each solution found is blocked and Z3
    asked again, up to ``limit``. Each check is bounded by the ``protocol.successors``
    rlimit (:mod:`fencepost.solver`); an undecided one is an error, never "no more
    successors".
    """
    enc = Encoder(state)
    uni, cfg = enc.uni, enc.config
    base = Z3Logic()
    elems: dict[str, dict[Any, Any]] = {}
    for sort, domain in (
        ("P", uni.partitions),
        ("W", uni.publishers),
        ("R", uni.readers),
        ("V", uni.events),
    ):
        elems[sort] = {x: z3.Const(f"{sort}:{x}", base.sorts[sort]) for x in domain}
    cuts = [CutT(2 * x, k) for x in range(cfg.coordinates) for k in (0, 1)]
    L = FiniteZ3Logic({k: list(v.values()) for k, v in elems.items()}, uni.epochs, cuts)
    L.sorts = base.sorts
    s = z3_state(L)
    solver = Query("protocol.successors")
    for consts in elems.values():
        if len(consts) > 1:
            solver.add(z3.Distinct(*consts.values()))

    def lift(value: Any, kind: str) -> Any:
        if kind in elems:
            return elems[kind][value]
        if kind == "Real":
            return z3.RealVal(str(Fraction(value)))
        if kind == "Bool":
            return z3.BoolVal(bool(value))
        return z3.IntVal(value)

    tables = enc.tables(state)
    domains = {
        "P": uni.partitions,
        "W": uni.publishers,
        "R": uni.readers,
        "V": uni.events,
        EPOCH: uni.epochs,
    }
    for f in FIELDS:
        fn = s.fields[f.name]
        for point, value in _points(tables[f.name], f.args, domains, f.name):
            args = [lift(x, a) for x, a in zip(point, f.args, strict=True)]
            if f.value == "Cut":
                got = fn(*args)
                solver.add(got.half == value.half, got.kind == value.kind)
            else:
                solver.add(fn(*args) == lift(value, f.value))
    for name, value in enc.consts.items():
        solver.add(s.consts[name] == (z3.BoolVal(value) if isinstance(value, bool) else value))
    from fencepost.properties.protocol_proof import _params

    prm = _params(L, action, "succ")
    for p in action.params:  # parameters are elements of the universe
        if p.kind in elems:
            solver.add(z3.Or(*(prm[p.name] == c for c in elems[p.kind].values())))
    guard, changes = action.build(L, s, prm, cfg.mutant)
    solver.add(guard, *_bounds(L, s, action, prm, cfg, elems, uni))
    post = s.replace(**changes)
    found: list[dict[str, Any]] = []
    while len(found) < limit:
        answer = solver.check()
        if answer.unknown:
            raise RuntimeError(f"Z3 could not decide a successor by {action.name}: {answer.detail}")
        if not answer.sat:
            break
        model = answer.model
        got = _read_back(model, post, uni, elems)
        found.append(normalize(got))
        solver.add(z3.Or(*_differs(model, post, uni, elems)))
    return found


def _points(
    table: dict[tuple[Any, ...], Any], args: tuple[str, ...], domains: dict[str, Any], name: str
) -> Iterator[tuple[tuple[Any, ...], Any]]:
    from fencepost.properties.protocol_state import DEFAULTS

    points: list[tuple[Any, ...]] = [()]
    for a in args:
        points = [(*p, x) for p in points for x in domains[a]]
    for p in points:
        yield p, table.get(p, DEFAULTS.get(name))


def _bounds(
    L: Z3Logic,
    s: View,
    action: Action,
    prm: dict[str, Any],
    cfg: Any,
    elems: dict[str, dict[Any, Any]],
    uni: Universe,
) -> list[Any]:
    """The explorer's bounds on one step: page size, claim coordinates, moved positions."""
    out = [s.E() <= cfg.epochs + (0 if action.name != "reshard" else -1)]
    top = 2 * (cfg.coordinates - 1)
    for name in ("c", "claim"):
        if name in prm:
            out.append(prm[name].half <= top)
    if action.name == "fetch_page":
        r, start, end = prm["r"], prm["start"], prm["end"]
        fresh = [
            z3.If(
                z3.And(
                    s.part(v) == s.rpart(r),
                    s.since(v) <= s.rep(r),
                    s.key(v) >= s.rtok(r),
                    s.key(v) < end,
                ),
                1,
                0,
            )
            for v in elems["V"].values()
        ]
        out.append(z3.Sum(*fresh) <= cfg.page_size if fresh else z3.BoolVal(True))
        del start
    if action.name == "reshard":
        moved = sorted(h for h in cfg.moved_halves)
        for v in elems["V"].values():
            out.append(
                z3.Implies(s.since(v) == s.E() + 1, z3.Or(*(prm["newpos"](v) == h for h in moved)))
                if moved
                else z3.BoolVal(True)
            )
    return out


def _read_back(model: Any, post: View, uni: Universe, elems: dict[str, dict[Any, Any]]) -> Tables:
    back = {
        sort: {str(model.eval(c, model_completion=True)): x for x, c in consts.items()}
        for sort, consts in elems.items()
    }
    domains = {
        "P": uni.partitions,
        "W": uni.publishers,
        "R": uni.readers,
        "V": uni.events,
        EPOCH: uni.epochs,
    }
    out: Tables = {}
    for f in FIELDS:
        fn = post.fields[f.name]
        table: dict[tuple[Any, ...], Any] = {}
        points: list[tuple[Any, ...]] = [()]
        for a in f.args:
            points = [(*p, x) for p in points for x in domains[a]]
        for p in points:
            args = [
                elems[a][x] if a in elems else z3.IntVal(x) for x, a in zip(p, f.args, strict=True)
            ]
            value = fn(*args)
            if f.value == "Cut":
                table[p] = CutT(model_value(model, value.half), model_value(model, value.kind))
            elif f.value in elems:
                table[p] = back[f.value][str(model.eval(value, model_completion=True))]
            else:
                table[p] = model_value(model, value)
        out[f.name] = table
    return out


def model_value(model: Any, term: Any) -> Any:
    """``term``'s value in a Z3 model as Python: bool, int, Fraction, or the Z3 value."""
    got = model.eval(term, model_completion=True)
    if z3.is_true(got):
        return True
    if z3.is_false(got):
        return False
    if z3.is_int_value(got):
        return got.as_long()
    if z3.is_rational_value(got):
        return Fraction(got.numerator_as_long(), got.denominator_as_long())
    if z3.is_algebraic_value(got):
        return Fraction(str(got.approx(20)))
    return got


def _differs(model: Any, post: View, uni: Universe, elems: dict[str, dict[Any, Any]]) -> list[Any]:
    """Terms one of which must change value for Z3 to find another successor."""
    out = []
    domains = {
        "P": uni.partitions,
        "W": uni.publishers,
        "R": uni.readers,
        "V": uni.events,
        EPOCH: uni.epochs,
    }
    for f in FIELDS:
        if f.name in ("key", "cp_tok", "rtok", "rbt"):
            continue  # thresholds: many values name one place; compared normalized
        fn = post.fields[f.name]
        points: list[tuple[Any, ...]] = [()]
        for a in f.args:
            points = [(*p, x) for p in points for x in domains[a]]
        for p in points:
            args = [
                elems[a][x] if a in elems else z3.IntVal(x) for x, a in zip(p, f.args, strict=True)
            ]
            value = fn(*args)
            parts = [value.half, value.kind] if f.value == "Cut" else [value]
            for term in parts:
                out.append(term != model.eval(term, model_completion=True))
    return out


def model_actions() -> list[Action]:
    """The relation's actions that stand for model transitions."""
    return [a for a in ACTIONS if a.in_model]
