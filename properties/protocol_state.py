"""The protocol's state in the formula language, and the map from the executable model.

:data:`FIELDS` is the vocabulary: every variable of the executable model's
state (:mod:`fencepost.model.state`) as a function over the element sorts --
partitions ``P``, publishers ``W``, readers ``R``, events ``V`` -- and epochs.
Nothing is bounded: any number of partitions, publishers, readers, events,
epochs, revisions, generations and retries. What is left out is what no
transition or invariant reads: the record's ``op_id``, a publisher's attempt
counter, event names.

Two representations share one interface (:class:`View`): Z3 functions
(:func:`z3_state`), and tables encoding a concrete model state
(:func:`encode`). A provider token is a *threshold* on event keys: the events
of the partition's list below it have been traversed (``-1`` is no token yet,
the implementation's ``None``). An event's key orders the list as the model
does: by position, then by the event's number (own events first, then each
reshard's batch in order).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, NamedTuple

import z3

from fencepost.model.config import ModelConfig
from fencepost.model.state import NO_TOKEN, State
from fencepost.properties.protocol_logic import (
    EPOCH,
    NOTHING_CUT,
    CutT,
    PyLogic,
    Term,
    Z3Logic,
)

# Publisher and reader phases, outcomes and reasons: the model's values as integers.
IDLE, HAVE_RECORD, HAVE_MEMBERSHIP, PROPOSING, IN_DOUBT = range(5)
R_IDLE, READING, FETCHED, WRITING, REREADING, SETTLING = range(6)
OUTCOMES = ("", "published", "confirmed", "unchanged", "withheld", "gave_up")
NONE_OUT, PUBLISHED, CONFIRMED, UNCHANGED, WITHHELD, GAVE_UP = range(6)
REASONS = (
    "",
    "missing_checkpoint",
    "epoch_mismatch",
    "scope_mismatch",
    "unsupported_finality",
    "no_coverage",
    "cutover_pending",
)
NO_REASON, MISSING_CP, EPOCH_MISMATCH, SCOPE_MISMATCH, UNSUPPORTED, NO_COVERAGE, PENDING = range(7)

#: An event's key is ``position * KEY_SPREAD + number + 1``: ordered as the model's
#: provider lists events, and stable when a reshard inserts events below.
KEY_SPREAD = 64


class Field(NamedTuple):
    """A state variable: its arguments' sorts and its value (Int, Real, Bool, Cut or P)."""

    name: str
    args: tuple[str, ...]
    value: str
    doc: str


FIELDS: tuple[Field, ...] = (
    Field("E", (), "Int", "the current membership epoch"),
    Field("rec_epoch", (), "Int", "the publication record's epoch"),
    Field("rec_cut", (), "Cut", "the publication record's cut"),
    Field("rec_rev", (), "Int", "the publication record's revision"),
    Field("pe", (), "Int", "observer: the highest epoch ever published"),
    Field("pc", (), "Cut", "observer: the highest cut published in that epoch"),
    Field("pall", (), "Cut", "observer: the highest cut ever published (monotone policy)"),
    Field("stamp", ("P", EPOCH), "Int", "the epoch stamped on the checkpoint (0: none)"),
    Field("cp_cut", ("P", EPOCH), "Cut", "the checkpoint's cut"),
    Field("cp_tok", ("P", EPOCH), "Real", "the checkpoint's token"),
    Field("cp_scope", ("P", EPOCH), "Bool", "the checkpoint is for the stream's query scope"),
    Field("cp_final", ("P", EPOCH), "Bool", "the checkpoint's claim is final"),
    Field("gen", ("P", EPOCH), "Int", "the checkpoint's generation (0: none)"),
    Field("peak", ("P", EPOCH), "Cut", "observer: the highest cut ever stored there"),
    Field("part", ("V",), "P", "the partition the event belongs to"),
    Field("pos", ("V",), "Int", "the event's position (half units)"),
    Field("since", ("V",), "Int", "the epoch from which it belongs to its partition"),
    Field("key", ("V",), "Real", "the event's place in its partition's list"),
    Field("final", ("V",), "Bool", "the source finalized the event"),
    Field("durable", ("V",), "Bool", "its terminal outcome is durable"),
    Field("ph", ("W",), "Int", "the publisher's phase"),
    Field("att", ("W",), "Int", "publication attempts left"),
    Field("ret", ("W",), "Int", "retries left in the attempt"),
    Field("re", ("W",), "Int", "the epoch of the record it read"),
    Field("rc", ("W",), "Cut", "the cut of the record it read"),
    Field("rr", ("W",), "Int", "the revision it read (-1: none)"),
    Field("me", ("W",), "Int", "the membership epoch it read (and proposes in)"),
    Field("pr", ("W",), "Cut", "the cut it proposes (or reported)"),
    Field("out", ("W",), "Int", "the outcome it reported"),
    Field("why", ("W",), "Int", "the reason it reported"),
    Field("just", ("W",), "Bool", "observer: the environment justified the report"),
    Field("oe", ("W",), "Int", "the epoch of its write in flight (0: none)"),
    Field("oc", ("W",), "Cut", "the cut of its write in flight"),
    Field("orr", ("W",), "Int", "the revision its write in flight names"),
    Field("rpart", ("R",), "P", "the partition the reader ingests"),
    Field("rph", ("R",), "Int", "the reader's phase"),
    Field("rpass", ("R",), "Int", "passes left"),
    Field("rep", ("R",), "Int", "the epoch of its pass (0: idle)"),
    Field("rb", ("R",), "Cut", "the cut stored under the generation it expects"),
    Field("rcl", ("R",), "Cut", "its best final claim"),
    Field("rtok", ("R",), "Real", "its provider token"),
    Field("pend", ("R", "V"), "Bool", "the event is on the page it holds, unrecorded"),
    Field("rbt", ("R",), "Real", "the token of the checkpoint it holds"),
    Field("rret", ("R",), "Int", "writes left for its claim after the first"),
    Field("rclose", ("R",), "Bool", "its write under way closes the pass"),
    Field("rexp", ("R",), "Int", "the generation its next write names (-1: idle)"),
)
FIELD_BY_NAME = {f.name: f for f in FIELDS}

#: The configuration: fixed in a run, universally quantified in the proof.
CONSTANTS: tuple[tuple[str, str, str], ...] = (
    ("succ", "Bool", "the order has an exact successor"),
    ("monotone", "Bool", "the cutover policy is monotone"),
    ("save_progress", "Bool", "readers make the closing progress write"),
    ("lost", "Bool", "write responses may be lost"),
    ("in_flight", "Bool", "a timed-out publication write may land later"),
    ("timeouts", "Bool", "publisher reads may time out"),
    ("overlap", "Bool", "a page may repeat the previous page's last event"),
    ("bad_provisional", "Bool", "the environment may store a provisional first checkpoint"),
    ("bad_scope", "Bool", "... one certified for another scope"),
    ("bad_epoch", "Bool", "... one stamped with the previous epoch"),
    ("pub_retries", "Int", "a publication attempt's retry budget"),
    ("reader_retries", "Int", "a reader's retry budget per claim"),
)


class View:
    """A state: each field a callable over its arguments, each constant a term.

    ``replace`` gives the state after a transition: the same callables except
    the ones an action rewrites.
    """

    def __init__(self, fields: dict[str, Callable[..., Any]], consts: dict[str, Term]) -> None:
        self.fields = fields
        self.consts = consts

    def __getattr__(self, name: str) -> Any:
        fields = self.__dict__.get("fields", {})
        if name in fields:
            return fields[name]
        consts = self.__dict__.get("consts", {})
        if name in consts:
            return consts[name]
        raise AttributeError(name)

    def replace(self, **changes: Callable[..., Any]) -> View:
        unknown = set(changes) - set(self.fields)
        if unknown:
            raise KeyError(f"no state field named {sorted(unknown)}")
        return View({**self.fields, **changes}, self.consts)


# ---------------------------------------------------------------------------- Z3


def _z3_sort(L: Z3Logic, value: str) -> Any:
    builtin = {"Int": z3.IntSort, "Real": z3.RealSort, "Bool": z3.BoolSort}
    return builtin[value]() if value in builtin else L.sorts[value]


def z3_state(L: Z3Logic, prefix: str = "") -> View:
    """A symbolic state: every field an uninterpreted function, every constant free."""
    fields: dict[str, Callable[..., Any]] = {}
    for f in FIELDS:
        arg_sorts = [L.sorts[a] for a in f.args]
        if f.value == "Cut":
            h = _declare(f"{prefix}{f.name}.half", arg_sorts, z3.IntSort())
            k = _declare(f"{prefix}{f.name}.kind", arg_sorts, z3.IntSort())
            fields[f.name] = _cut_fn(h, k)
        else:
            fields[f.name] = _fn(_declare(prefix + f.name, arg_sorts, _z3_sort(L, f.value)))
    consts = {
        name: (z3.Bool if kind == "Bool" else z3.Int)(f"{prefix}{name}")
        for name, kind, _ in CONSTANTS
    }
    return View(fields, consts)


def _declare(name: str, args: list[Any], value: Any) -> Any:
    if not args:
        return z3.Const(name, value)
    return z3.Function(name, *args, value)


def _fn(decl: Any) -> Callable[..., Any]:
    if isinstance(decl, z3.FuncDeclRef):
        return lambda *a: decl(*a)
    return lambda: decl


def _cut_fn(h: Any, k: Any) -> Callable[..., CutT]:
    if isinstance(h, z3.FuncDeclRef):
        return lambda *a: CutT(h(*a), k(*a))
    return lambda: CutT(h, k)


# ---------------------------------------------------------------------------- tables


Tables = dict[str, dict[tuple[Any, ...], Any]]

#: What a field holds where a table has no entry (outside the encoded domain).
DEFAULTS: dict[str, Any] = {
    "stamp": 0,
    "cp_cut": NOTHING_CUT,
    "cp_tok": Fraction(0),
    "cp_scope": False,
    "cp_final": False,
    "gen": 0,
    "peak": NOTHING_CUT,
    "pend": False,
}


def table_view(tables: Tables, consts: dict[str, Term]) -> View:
    """A concrete state over ``tables`` (field -> argument tuple -> value)."""
    fields: dict[str, Callable[..., Any]] = {}
    for f in FIELDS:
        table = tables[f.name]
        default = DEFAULTS.get(f.name)
        fields[f.name] = _lookup(table, default)
    return View(fields, consts)


def _lookup(table: dict[tuple[Any, ...], Any], default: Any) -> Callable[..., Any]:
    def get(*args: Any) -> Any:
        return table.get(args, default)

    return get


@dataclass(frozen=True)
class Universe:
    """The finite domains of one configuration: its elements and epochs."""

    config: ModelConfig
    partitions: tuple[int, ...]
    publishers: tuple[int, ...]
    readers: tuple[tuple[int, int], ...]
    events: tuple[tuple[Any, ...], ...]
    epochs: tuple[int, ...]

    def logic(self) -> PyLogic:
        """The Python meaning of formulas over this universe."""
        cuts = [CutT(2 * x, kind) for x in range(self.config.coordinates) for kind in (0, 1)]
        return PyLogic(
            {
                "P": self.partitions,
                "W": self.publishers,
                "R": self.readers,
                "V": self.events,
                EPOCH: self.epochs,
            },
            cuts,
        )


def universe(config: ModelConfig, state: State) -> Universe:
    """The elements of ``config``'s states: own events of every partition, and the events
    each reshard moves (``("moved", epoch, k)``), present or still to come."""
    ctx = state.context
    parts = tuple(range(config.partitions))
    events: list[tuple[Any, ...]] = [("own", i, k) for i in parts for k in range(ctx.n_own)]
    events += [("moved", e, k) for e in range(2, config.epochs + 1) for k in range(ctx.n_moved)]
    return Universe(
        config,
        parts,
        tuple(range(len(state.publishers))),
        tuple((i, j) for i in parts for j in range(len(state.partitions[i].readers))),
        tuple(events),
        tuple(range(config.epochs + 2)),
    )


def constants(config: ModelConfig) -> dict[str, Term]:
    """The configuration's constants as plain values."""
    return {
        "succ": config.successor,
        "monotone": config.policy == "monotone",
        "save_progress": config.save_progress,
        "lost": config.lost_responses,
        "in_flight": config.in_flight,
        "timeouts": config.read_timeouts,
        "overlap": config.overlap,
        "bad_provisional": "provisional" in config.bad_checkpoints,
        "bad_scope": "scope" in config.bad_checkpoints,
        "bad_epoch": "epoch" in config.bad_checkpoints,
        "pub_retries": config.retries,
        "reader_retries": config.reader_retries or 0,
    }


def _cut(c: Any) -> CutT:
    return CutT(c.half, c.kind)


def event_element(state: State, i: int, idx: int) -> tuple[Any, ...]:
    """The element standing for event number ``idx`` of partition ``i``."""
    ctx = state.context
    if idx < ctx.n_own:
        return ("own", i, idx)
    batch, k = divmod(idx - ctx.n_own, ctx.n_moved)
    return ("moved", state.partitions[i].truth.moved[batch], k)


def event_key(half: int, idx: int) -> Fraction:
    """The key of event number ``idx`` at ``half`` (see :data:`KEY_SPREAD`)."""
    return Fraction(half * KEY_SPREAD + idx + 1)


def threshold(state: State, i: int, epoch: int, token: int) -> Fraction:
    """The threshold standing for a model token: below it, the first ``token`` events."""
    if token == NO_TOKEN:
        return Fraction(-1)
    if token <= 0:
        return Fraction(0)
    ctx = state.context
    view = ctx.view(state.partitions[i].truth.moved, epoch)
    idx = view[token - 1]
    return event_key(ctx.half_of(idx), idx) + Fraction(1, 2)


def encode(state: State, uni: Universe | None = None) -> Tables:
    """The tables of a model state (every field at every point of its universe)."""
    ctx = state.context
    cfg = ctx.config
    uni = uni or universe(cfg, state)
    t: Tables = {f.name: {} for f in FIELDS}
    rec, hist = state.record, state.history
    t["E"][()] = state.epoch
    t["rec_epoch"][()] = rec.epoch
    t["rec_cut"][()] = _cut(rec.cut)
    t["rec_rev"][()] = rec.revision
    t["pe"][()] = hist.peak_epoch
    t["pc"][()] = _cut(hist.peak_cut)
    t["pall"][()] = _cut(hist.peak_all)
    for i, part in enumerate(state.partitions):
        for e in uni.epochs:
            key = (i, e)
            if not 1 <= e <= cfg.epochs:
                for name in ("stamp", "cp_cut", "cp_tok", "cp_scope", "cp_final", "gen", "peak"):
                    t[name][key] = DEFAULTS[name]
                continue
            cp = part.checkpoints[e - 1]
            t["stamp"][key] = cp.epoch
            t["cp_cut"][key] = _cut(cp.cut)
            t["cp_tok"][key] = threshold(state, i, e, cp.token) if cp.epoch else Fraction(0)
            t["cp_scope"][key] = cp.scope == cfg.scope
            t["cp_final"][key] = cp.final
            t["gen"][key] = part.generations[e - 1]
            t["peak"][key] = _cut(part.peaks[e - 1])
    placed: set[tuple[Any, ...]] = set()
    for i, part in enumerate(state.partitions):
        truth = part.truth
        n = ctx.n_own + len(truth.moved) * ctx.n_moved
        for idx in range(n):
            v = event_element(state, i, idx)
            placed.add(v)
            half = ctx.half_of(idx)
            t["part"][(v,)] = i
            t["pos"][(v,)] = half
            t["since"][(v,)] = 1 if idx < ctx.n_own else v[1]
            t["key"][(v,)] = event_key(half, idx)
            t["final"][(v,)] = bool(truth.final >> idx & 1)
            t["durable"][(v,)] = bool(truth.durable >> idx & 1)
    for v in uni.events:
        if v not in placed:  # an event a later reshard moves: nowhere yet
            t["part"][(v,)] = 0
            t["pos"][(v,)] = 0
            t["since"][(v,)] = v[1]
            t["key"][(v,)] = Fraction(1)
            t["final"][(v,)] = False
            t["durable"][(v,)] = False
    for k, pub in enumerate(state.publishers):
        w = (k,)
        t["ph"][w] = pub.phase
        t["att"][w] = pub.attempts_left
        t["ret"][w] = pub.retries_left
        t["re"][w] = pub.rec_epoch
        t["rc"][w] = _cut(pub.rec_cut)
        t["rr"][w] = pub.rec_revision
        t["me"][w] = pub.mem_epoch
        t["pr"][w] = _cut(pub.proposal)
        t["out"][w] = OUTCOMES.index(pub.outcome)
        t["why"][w] = REASONS.index(pub.reason)
        t["just"][w] = pub.justified
        t["oe"][w] = pub.orphan_epoch
        t["oc"][w] = _cut(pub.orphan_cut)
        t["orr"][w] = pub.orphan_revision
    for i, part in enumerate(state.partitions):
        for j, reader in enumerate(part.readers):
            r = ((i, j),)
            t["rpart"][r] = i
            t["rph"][r] = reader.phase
            t["rpass"][r] = reader.passes_left
            t["rep"][r] = reader.epoch
            t["rb"][r] = _cut(reader.base)
            t["rcl"][r] = _cut(reader.claim)
            t["rtok"][r] = threshold(state, i, reader.epoch, reader.token)
            t["rbt"][r] = threshold(state, i, reader.epoch, reader.base_token)
            t["rret"][r] = reader.retries_left
            t["rclose"][r] = reader.closing
            t["rexp"][r] = reader.expected
            for idx in range(reader.pending.bit_length()):
                if reader.pending >> idx & 1:
                    t["pend"][((i, j), event_element(state, i, idx))] = True
    return t


def view_of(state: State, uni: Universe | None = None) -> tuple[PyLogic, View]:
    """The Python meaning and the concrete state of a model state."""
    uni = uni or universe(state.context.config, state)
    return uni.logic(), table_view(encode(state, uni), constants(state.context.config))


# ---------------------------------------------------------------------------- reading back


def tables_of_view(L: PyLogic, s: View, uni: Universe, only: Iterable[str] | None = None) -> Tables:
    """Every field (or those in ``only``) of a concrete view at every point of ``uni``."""
    wanted = None if only is None else set(only)
    out: Tables = {}
    domains: dict[str, Iterable[Any]] = {
        "P": uni.partitions,
        "W": uni.publishers,
        "R": uni.readers,
        "V": uni.events,
        EPOCH: uni.epochs,
    }
    for f in FIELDS:
        if wanted is not None and f.name not in wanted:
            continue
        fn = s.fields[f.name]
        table: dict[tuple[Any, ...], Any] = {}
        points: list[tuple[Any, ...]] = [()]
        for a in f.args:
            points = [(*p, x) for p in points for x in domains[a]]
        for p in points:
            table[p] = fn(*p)
        out[f.name] = table
    return out


def normalize(tables: Tables) -> dict[str, Any]:
    """A comparable form of a state: tokens as counts of the events below them, keys
    dropped (a reshard may order tied new events either way), defaults made explicit."""
    part = tables["part"]
    since = tables["since"]
    key = tables["key"]

    def count(i: Any, epoch: Any, token: Any) -> int:
        if token < 0:
            return NO_TOKEN
        return sum(
            1 for (v,), p in part.items() if p == i and since[(v,)] <= epoch and key[(v,)] < token
        )

    out: dict[str, Any] = {}
    for name, table in tables.items():
        if name == "key":
            continue
        if name == "cp_tok":
            out[name] = {
                (i, e): count(i, e, tok) if tables["stamp"].get((i, e), 0) else 0
                for (i, e), tok in table.items()
            }
        elif name in ("rtok", "rbt"):
            out[name] = {
                (r,): count(tables["rpart"][(r,)], tables["rep"][(r,)], tok)
                for (r,), tok in table.items()
            }
        elif name == "pend":
            out[name] = {k: v for k, v in table.items() if v}
        else:
            out[name] = dict(table)
    return out
