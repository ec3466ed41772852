"""Counterexamples to induction, told in domain words, and looked for among reachable states.

When a consecution obligation is refuted, Z3's model is a state satisfying
every lemma from which one action breaks one lemma. :func:`render_cti` decodes
it into a small concrete state (partitions and their checkpoints, events, the
record, publishers and their writes in flight, readers) and names the action,
its participants and the broken lemma, with the values the action leaves.
:func:`search_reachable` then asks whether such a break happens for real: it
explores the executable model with the same mutant within the default bounds,
checking the broken lemma in every reachable state, and reports the shortest
path that breaks it, or that none within the bounds does (then the lemma may
need strengthening, or the state is a CTI only).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from fencepost.model.config import default_config
from fencepost.model.state import PUBLISHER_PHASES, READER_PHASES, State
from fencepost.properties.protocol_lemmas import ALL_BY_NAME
from fencepost.properties.protocol_logic import NOTHING_HALF, CutT
from fencepost.properties.protocol_proof import Outcome
from fencepost.properties.protocol_relation import Encoder, model_value
from fencepost.properties.protocol_state import OUTCOMES, REASONS, View

_DECISIONS = {0: "settle", 1: "written", 2: "retry", 3: "gave up (not applied)", 4: "lost race"}
# The phases in the model's words (the relation numbers them as the model does).
_PUB_PHASES = PUBLISHER_PHASES
_READER_PHASES = READER_PHASES
#: At most this many epochs, and elements of a sort, are shown.
_SHOW = 6


def cut_text(half: Any, kind: Any) -> str:
    """A cut in coordinate units: ``nothing``, ``before 1``, ``through 0.5``."""
    if (half, kind) == (NOTHING_HALF, 0):
        return "nothing"
    if isinstance(half, int) and kind in (0, 1) and half >= 0:
        x = str(half // 2) if half % 2 == 0 else f"{half / 2:g}"
        return f"{'before' if kind == 0 else 'through'} {x}"
    return f"(half {half}, kind {kind})"


@dataclass
class Decoded:
    """Z3's model read back: element names and a reader of any term."""

    model: Any
    names: dict[str, dict[str, str]]
    elements: dict[str, list[Any]]

    def val(self, term: Any) -> Any:
        return model_value(self.model, term)

    def cut(self, c: CutT) -> str:
        return cut_text(self.val(c.half), self.val(c.kind))

    def name(self, sort: str, term: Any) -> str:
        got = str(self.model.eval(term, model_completion=True))
        return self.names[sort].get(got, got)


def decode(outcome: Outcome, sorts: dict[str, Any]) -> Decoded:
    model = outcome.model
    names: dict[str, dict[str, str]] = {}
    elements: dict[str, list[Any]] = {}
    for sort, z3sort in sorts.items():
        if sort == "E":
            continue
        universe = model.get_universe(z3sort) or []
        elements[sort] = list(universe)
        table: dict[str, str] = {}
        for n, e in enumerate(universe):
            if sort == "P":
                table[str(e)] = "ABCDEFGH"[n] if n < 8 else f"P{n + 1}"
            elif sort == "W":
                table[str(e)] = f"p{n + 1}"
            elif sort == "R":
                table[str(e)] = f"r{n + 1}"
            else:
                table[str(e)] = f"e{n + 1}"
        names[sort] = table
    return Decoded(model, names, elements)


def describe_state(d: Decoded, s: View, protocol: str) -> list[str]:
    """The state's lines in domain words (the elements Z3 used, a few epochs); the record
    and publishers only where publishers run, readers only where readers run."""
    publishers = protocol != "ingest"
    readers = protocol != "publication"
    out = []
    epoch = d.val(s.E())
    succ, monotone = d.val(s.succ), d.val(s.monotone)
    order = "an order with an exact successor" if succ else "a dense order"
    policy = "monotone" if monotone else "reset"
    out.append(
        f"configuration: {order}, policy {policy}, publisher retries {d.val(s.pub_retries)}, "
        f"reader retries {d.val(s.reader_retries)}"
    )
    if publishers:
        out.append(
            f"membership epoch {epoch}; record: epoch {d.val(s.rec_epoch())}, "
            f"{d.cut(s.rec_cut())}, revision {d.val(s.rec_rev())}; observer: highest epoch "
            f"{d.val(s.pe())}, {d.cut(s.pc())} in it, {d.cut(s.pall())} ever"
        )
    else:
        out.append(f"membership epoch {epoch}")
    epochs = range(1, min(epoch, _SHOW) + 1) if isinstance(epoch, int) else range(1, 2)
    for p in d.elements.get("P", [])[:_SHOW]:
        pname = d.name("P", p)
        cps = []
        for e in epochs:
            stamp = d.val(s.stamp(p, e))
            if stamp == 0:
                cps.append(f"epoch {e}: none")
                continue
            flags = []
            if not d.val(s.cp_final(p, e)):
                flags.append("provisional")
            if not d.val(s.cp_scope(p, e)):
                flags.append("another scope")
            if stamp != e:
                flags.append(f"stamped epoch {stamp}")
            extra = f" [{', '.join(flags)}]" if flags else ""
            cps.append(
                f"epoch {e}: {d.cut(s.cp_cut(p, e))} (generation {d.val(s.gen(p, e))}, token "
                f"{d.val(s.cp_tok(p, e))}, peak {d.cut(s.peak(p, e))}){extra}"
            )
        events: list[str] = []
        for v in d.elements.get("V", []):
            if d.name("P", s.part(v)) != pname:
                continue
            pos = d.val(s.pos(v))
            where = cut_text(pos, 1).removeprefix("through ") if isinstance(pos, int) else pos
            state = ("final" if d.val(s.final(v)) else "not final") + (
                ", outcome durable" if d.val(s.durable(v)) else ", no outcome"
            )
            events.append(
                f"{d.name('V', v)} at {where} from epoch {d.val(s.since(v))} "
                f"(key {d.val(s.key(v))}; {state})"
            )
        out.append(f"partition {pname}: checkpoints {'; '.join(cps) or 'none'}")
        if events:
            out.append(f"  events of {pname}: {'; '.join(events[:_SHOW])}")
    for w in d.elements.get("W", [])[:_SHOW] if publishers else []:
        ph = d.val(s.ph(w))
        phase = _PUB_PHASES[ph] if isinstance(ph, int) and 0 <= ph < len(_PUB_PHASES) else ph
        line = f"publisher {d.name('W', w)}: {phase}"
        if ph in (1, 2):
            line += (
                f"; read record epoch {d.val(s.re(w))} {d.cut(s.rc(w))} at revision "
                f"{d.val(s.rr(w))}"
            )
        elif ph == 3:
            line += f"; holds revision {d.val(s.rr(w))}"
        if ph in (2, 3, 4) or d.val(s.out(w)) in (1, 2):
            line += f"; membership epoch {d.val(s.me(w))}; proposal {d.cut(s.pr(w))}"
        out_code, why = d.val(s.out(w)), d.val(s.why(w))
        if isinstance(out_code, int) and 0 < out_code < len(OUTCOMES):
            reason = REASONS[why] if isinstance(why, int) and 0 < why < len(REASONS) else ""
            line += f"; reported {OUTCOMES[out_code]}{f' ({reason})' if reason else ''}"
            line += "" if d.val(s.just(w)) else " WITHOUT grounds"
        if d.val(s.oe(w)) != 0:
            line += (
                f"; its write (epoch {d.val(s.oe(w))}, {d.cut(s.oc(w))}) on revision "
                f"{d.val(s.orr(w))} is in flight"
            )
        out.append(line)
    for r in d.elements.get("R", [])[:_SHOW] if readers else []:
        ph = d.val(s.rph(r))
        phase = _READER_PHASES[ph] if isinstance(ph, int) and 0 <= ph < len(_READER_PHASES) else ph
        pending = [d.name("V", v) for v in d.elements.get("V", []) if d.val(s.pend(r, v))]
        out.append(
            f"reader {d.name('R', r)} of {d.name('P', s.rpart(r))}: {phase} in epoch "
            f"{d.val(s.rep(r))}; holds {d.cut(s.rb(r))} (token {d.val(s.rbt(r))}, expects "
            f"generation {d.val(s.rexp(r))}); claim {d.cut(s.rcl(r))}; token {d.val(s.rtok(r))}"
            f"; retries left {d.val(s.rret(r))}"
            + ("; closing the pass" if d.val(s.rclose(r)) else "")
            + (f"; page pending: {', '.join(pending)}" if pending else "")
        )
    return out


def _participants(d: Decoded, params: dict[str, Any]) -> str:
    shown = []
    for name, value in params.items():
        if callable(value) or (isinstance(value, CutT) and name not in ("c", "claim")):
            continue
        if isinstance(value, CutT):
            shown.append(f"{name}={d.cut(value)}")
            continue
        sort = value.sort().name() if hasattr(value, "sort") else ""
        key = {"Partition": "P", "Publisher": "W", "Reader": "R", "Event": "V"}.get(sort)
        if key is not None:
            shown.append(f"{name}={d.name(key, value)}")
        elif name == "why":
            code = d.val(value)
            known = isinstance(code, int) and 0 < code < len(REASONS)
            shown.append(f"reason {REASONS[code] if known else code}")
        elif name == "dec":
            code = d.val(value)
            shown.append(f"decision {_DECISIONS.get(code, code)}")
        elif name in ("start", "end", "overlapping", "nonempty", "claimed"):
            shown.append(f"{name}={d.val(value)}")
    return ", ".join(shown)


def render_cti(outcome: Outcome, sorts: dict[str, Any]) -> str:
    """A refuted consecution (or initiation/safety) obligation in domain words."""
    ob = outcome.obligation
    lemma = ALL_BY_NAME[ob.lemma]
    d = decode(outcome, sorts)
    assert outcome.pre is not None
    lines = []
    if ob.action is None:
        lines.append(f"a state that satisfies the invariant but not {ob.lemma}:")
    else:
        who = _participants(d, outcome.params)
        lines.append(
            f"action {ob.action} ({who}) from this state, which satisfies every lemma, "
            f"breaks {'property' if lemma.property else 'lemma'} {ob.lemma} -- {lemma.doc}:"
        )
    before = describe_state(d, outcome.pre, ob.protocol)
    lines.extend(f"  before: {x}" for x in before)
    if outcome.post is not None:
        after = describe_state(d, outcome.post, ob.protocol)
        changed = [a for a, b in zip(after, before, strict=True) if a != b]
        lines.extend(f"  after:  {x}" for x in changed or ["(no visible change)"])
    return "\n".join(lines)


# ---------------------------------------------------------------------------- reachability

_PART = {"publication": "publication", "ingest": "ingest", "composed": "composed"}


@dataclass(frozen=True)
class Reachability:
    """Whether a lemma breaks in a reachable state of the model, within the default bounds."""

    reachable: bool
    steps: int
    last: str
    states: int

    def __str__(self) -> str:
        if self.reachable:
            return (
                f"reachable within the default bounds ({self.steps} steps; the last: {self.last})"
            )
        return (
            f"not reachable within the default bounds ({self.states:,} states explored): the "
            "lemma may need strengthening, or the state is a counterexample to induction only"
        )


def search_reachable(
    protocol: str,
    mutant: str | None,
    lemma_name: str,
    action: str | None = None,
    max_states: int = 300_000,
) -> Reachability:
    """Explore the model (``mutant`` on) breadth first within the default bounds until a
    transition of ``action`` (any action when ``None`` or not one of the model's) leads
    from a state satisfying ``lemma_name`` to one breaking it: the shortest such path."""
    from collections import deque

    from fencepost.model.canonical import canonical_key
    from fencepost.model.machine import initial, successors
    from fencepost.properties.protocol_actions import ACTIONS_BY_NAME
    from fencepost.properties.protocol_relation import witness

    config = default_config(_PART[protocol], mutant=mutant)
    start = initial(config)
    enc = Encoder(start)
    lemma = ALL_BY_NAME[lemma_name]
    if action is not None and not ACTIONS_BY_NAME[action].in_model:
        action = None
    kind = None if action is None else action.split(":")[0]

    def holds(state: State) -> bool:
        return bool(lemma.formula(enc.L, enc.view(state)))

    seen = {canonical_key(start)}
    queue: deque[tuple[State, int]] = deque([(start, 0)])
    while queue and len(seen) < max_states:
        state, depth = queue.popleft()
        before: bool | None = None
        for a, nxt in successors(state):
            key = canonical_key(nxt)
            if action is None or (a.kind == kind and witness(enc, state, a, nxt)[0] == action):
                if before is None:
                    before = holds(state)
                if before and not holds(nxt):
                    return Reachability(True, depth + 1, a.describe(), len(seen))
            if key not in seen:
                seen.add(key)
                queue.append((nxt, depth + 1))
    return Reachability(False, 0, "", len(seen))


def cached(fn: Callable[..., Reachability]) -> Callable[..., Reachability]:
    memo: dict[tuple[Any, ...], Reachability] = {}

    def wrapped(*args: Any) -> Reachability:
        if args not in memo:
            memo[args] = fn(*args)
        return memo[args]

    return wrapped
