"""The scenario format: one TOML file per scenario, read and validated with file:line errors.

A scenario is a named, documented schedule with expected outcomes. It says, in
domain words, what the world is (orders, the membership of every epoch, every
partition's ground-truth events with their positions and finality), what happens
step by step (honest readers certify cuts, an operator misconfigures a
checkpoint, the source finalizes events, the membership changes, the provider
serves pages, ingest passes and publication attempts run with lost responses,
pauses between calls, crashes), and what must be true after each step (the
attempt's outcome, the publication record, the checkpoints). Every runner (the
model, the implementation, a SUT through the conformance harness) also checks
the properties of docs/semantics.md section 7 after every step.

A file's name carries its verdict: ``...-ok.toml`` is a schedule the correct
protocol passes; ``...-bad.toml`` replays the schedule of a known bug
(``variant``) and names in ``[broken]`` the property that must be caught.
docs are in ``scenarios/README.md`` (the library's index) and in
:data:`FORMAT_HELP` below.

Everything is validated before anything runs: unknown fields, wrong types, NaN,
huge numbers, a partition that is not a member when a step names it, a worker
left paused, a cut that does not fit its order. Errors are
:class:`ScenarioError`: ``file:line: field: problem``.
"""

from __future__ import annotations

import dataclasses
import difflib
import importlib.resources
import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path as FilePath
from types import MappingProxyType

from fencepost.inputs.limits import InputProblem, parse_toml, read_capped
from fencepost.inputs.tomllines import LineIndex, Path, format_path, index_lines
from fencepost.judge.merge import WithheldReason
from fencepost.judge.values import NOTHING, BadValue, Coordinate, Cut, Endpoint, Membership, Order

# ---------------------------------------------------------------------------
# Vocabulary

#: The properties of docs/semantics.md section 7 (``checkpoint_truth`` is the ingest
#: guarantee: a stored final checkpoint is true about the ground truth).
PROPERTIES: tuple[str, ...] = (
    "soundness",
    "monotone_publication",
    "no_relabeling",
    "epoch_fence",
    "checkpoint_monotonicity",
    "checkpoint_truth",
    "lost_response_honesty",
)

#: Names a ``[broken]`` table may accept: the properties plus the conformance
#: harness's two extra judgements of a SUT's claims and outcomes.
RULE_NAMES: tuple[str, ...] = (*PROPERTIES, "certified_support", "honest_outcome")

#: Known bugs a ``-bad`` scenario can run as its ``variant``; each runner maps the
#: name to its own broken variant (a model mutant, an implementation subclass, a
#: harness mutant SUT). The same names as the model's and the harness's catalogs.
VARIANTS: dict[str, str] = {
    "relabel": "publishes through x where the minimum is before x (the coordinates matched)",
    "skip-missing": "skips members without a checkpoint instead of withholding",
    "blind-success": "reports published when the write's response was lost",
    "confirm-revision": "after a lost write, reads a moved revision as proof the claim is present",
    "stale-cut-retry": "retries a conflicting write with its old cut, without recomputing",
    "epoch-blind": "reads every checkpoint as the current epoch's",
    "provisional-ok": "trusts provisional checkpoints and non-final claims as final",
    "scope-blind": "accepts checkpoints certified for another query scope",
    "overwrite": "a checkpoint write that lost its generation race overwrites the newer one",
    "cutover-regress": "moves the record to a new epoch with a lower cut under monotone",
    "fence-blind": "after a lost response shows a newer epoch, retries in the old epoch",
    "max-observed": "certifies the greatest event observed instead of the provider's claim",
}

TARGETS: tuple[str, ...] = ("model", "impl", "sut")

PUBLISHER_OPS: tuple[str, ...] = (
    "read_publication",
    "read_membership",
    "read_checkpoints",
    "write_publication",
)
READER_OPS: tuple[str, ...] = (
    "read_checkpoint",
    "fetch_page",
    "record_outcome",
    "write_checkpoint",
)
#: Calls whose lost response may come after the call was applied.
WRITE_OPS = frozenset({"write_publication", "write_checkpoint", "record_outcome"})

#: How one call is answered: ``ok``; ``lost`` (not applied, response lost; a fetch
#: times out); ``applied_lost`` (applied, then the response lost; writes only).
MODES: tuple[str, ...] = ("ok", "lost", "applied_lost")

OUTCOMES: tuple[str, ...] = ("published", "confirmed", "unchanged", "withheld", "gave_up")
REASONS: tuple[str, ...] = tuple(r.value for r in WithheldReason)
MISCONFIGURATIONS: tuple[str, ...] = ("provisional", "wrong_scope", "wrong_epoch")
POLICIES: tuple[str, ...] = ("monotone", "reset")

_MAX_EPOCH = 1_000_000
_MAX_COUNT = 1_000_000
_MAX_RETRIES = 20
_MAX_NTH = 100
_MAX_STEPS = 500

# ---------------------------------------------------------------------------
# Errors


class ScenarioError(ValueError):
    """A scenario file that cannot be read or trusted, with its place.

    ``file`` and ``line`` locate the mistake (``line`` is None when the whole
    file is at fault); ``field`` is the dotted path of the offending field as
    the author writes it (``steps[3].expect``).
    """

    def __init__(self, file: str, line: int | None, field: str, problem: str) -> None:
        self.file = file
        self.line = line
        self.field = field
        self.problem = problem
        super().__init__(str(self))

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line is not None else self.file
        return (
            f"{where}: {self.field}: {self.problem}" if self.field else f"{where}: {self.problem}"
        )


# ---------------------------------------------------------------------------
# The scenario as plain data


@dataclass(frozen=True, slots=True)
class EventDef:
    """One ground-truth event: id, position, and whether the source finalized it at the start."""

    id: str
    at: Coordinate
    final: bool


@dataclass(frozen=True, slots=True)
class EpochDef:
    """One membership epoch: its members and the name of each member's order."""

    epoch: int
    members: Mapping[str, str]
    line: int


@dataclass(frozen=True, slots=True)
class Pause:
    """Stop the request just before its ``nth`` call of ``op`` (counted from the request start)."""

    op: str
    nth: int

    def __str__(self) -> str:
        return f"before {self.op}" + (f" #{self.nth}" if self.nth > 1 else "")


@dataclass(frozen=True, slots=True)
class Certify:
    """An honest reader certifies ``cut`` for ``partition`` in the current epoch.

    The events of its downset become final with durable outcomes as it does (the
    ingest guarantee, assumed): the environment step of the publication model.
    """

    partition: str
    cut: Cut


@dataclass(frozen=True, slots=True)
class Misconfigure:
    """An operator stores a bad checkpoint: provisional, another scope, or the previous epoch's."""

    partition: str
    kind: str
    cut: Cut


@dataclass(frozen=True, slots=True)
class Finalize:
    """The source finalizes these events."""

    events: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Reshard:
    """The membership of ``epoch`` (the next declared one) becomes durable."""

    epoch: int


@dataclass(frozen=True, slots=True)
class Serve:
    """From now on the provider answers a fetch of ``token`` (None: the start) with this page.

    ``claim``/``final``: the source's coverage claim with the page, if any;
    ``lost``: the next that many fetches of this token time out first.
    """

    partition: str
    token: str | None
    events: tuple[str, ...]
    next: str | None
    claim: Cut | None
    final: bool
    lost: int


@dataclass(frozen=True, slots=True)
class Publish:
    """Publisher ``publisher`` starts one publication attempt."""

    publisher: str
    faults: Mapping[str, tuple[str, ...]]
    pause: Pause | None


@dataclass(frozen=True, slots=True)
class Ingest:
    """Reader ``reader`` starts one ingest pass of ``partition`` in the current epoch."""

    reader: str
    partition: str
    faults: Mapping[str, tuple[str, ...]]
    pause: Pause | None
    max_pages: int | None


@dataclass(frozen=True, slots=True)
class Resume:
    """The paused request of ``worker`` goes on (until it ends or reaches ``pause``)."""

    worker: str
    pause: Pause | None


@dataclass(frozen=True, slots=True)
class Crash:
    """The paused process ``worker`` dies before its pending call; it restarts with no memory."""

    worker: str


Action = Certify | Misconfigure | Finalize | Reshard | Serve | Publish | Ingest | Resume | Crash


@dataclass(frozen=True, slots=True)
class AttemptExpect:
    """The expected end of a publication attempt; None fields are not checked.

    ``cut`` is the public claim the attempt reports (the record it last knew
    authoritatively); ``writer`` the worker whose op_id the record carries after
    it (attribution: only a matching op_id proves who wrote it).
    """

    outcome: str | None = None
    reason: str | None = None
    epoch: int | None = None
    cut: Cut | None = None


@dataclass(frozen=True, slots=True)
class RecordExpect:
    """The expected publication record after the step; None fields are not checked."""

    epoch: int | None = None
    cut: Cut | None = None
    revision: int | None = None
    writer: str | None = None


@dataclass(frozen=True, slots=True)
class Expectations:
    """What must be true after one step.

    ``checkpoints`` maps members of the current epoch to their stored cut (None:
    no checkpoint stored); ``generations`` to their stored generation.
    """

    attempt: AttemptExpect | None = None
    ingest: Cut | None = None
    record: RecordExpect | None = None
    checkpoints: Mapping[str, Cut | None] = field(default_factory=dict)
    generations: Mapping[str, int] = field(default_factory=dict)

    @property
    def empty(self) -> bool:
        return (
            self.attempt is None
            and self.ingest is None
            and self.record is None
            and not self.checkpoints
            and not self.generations
        )


@dataclass(frozen=True, slots=True)
class Step:
    """One step: its 1-based index, its line, what happens, what must hold after it.

    ``epoch`` is the current membership epoch when the step runs (static: only
    reshard steps change it).
    """

    index: int
    line: int
    action: Action
    expect: Expectations
    epoch: int

    @property
    def kind(self) -> str:
        return _KIND_OF[type(self.action)]


@dataclass(frozen=True, slots=True)
class Broken:
    """What a ``-bad`` scenario's variant must be caught breaking (and optionally where)."""

    property: str
    accept: tuple[str, ...]
    step: int | None
    line: int

    def accepts(self, rule: str) -> bool:
        return rule == self.property or rule in self.accept


@dataclass(frozen=True)
class Scenario:
    """One validated scenario (see the module docstring and :data:`FORMAT_HELP`)."""

    name: str
    origin: str
    description: str
    source: str
    properties: tuple[str, ...]
    policy: str
    stream: str
    scope: str
    max_retries: int
    variant: str | None
    not_on: Mapping[str, str]
    orders: Mapping[str, Order]
    epochs: tuple[EpochDef, ...]
    truth: Mapping[tuple[int, str], tuple[EventDef, ...]]
    steps: tuple[Step, ...]
    broken: Broken | None
    publishers: tuple[str, ...]
    readers: tuple[str, ...]

    @property
    def verdict(self) -> str:
        """``ok`` (the correct protocol passes) or ``bad`` (the variant must be caught)."""
        return "bad" if self.broken is not None else "ok"

    def epoch_def(self, epoch: int) -> EpochDef:
        for e in self.epochs:
            if e.epoch == epoch:
                return e
        raise KeyError(epoch)

    def membership(self, epoch: int) -> Membership:
        """The durable membership of ``epoch`` as the implementation stores it."""
        members = self.epoch_def(epoch).members
        used = {name: self.orders[name] for name in sorted(set(members.values()))}
        return Membership(epoch, self.scope, dict(members), used)

    def events(self, epoch: int, partition: str) -> tuple[EventDef, ...]:
        """The ground truth of (epoch, partition), in position order."""
        return self.truth.get((epoch, partition), ())

    def order_of(self, epoch: int, partition: str) -> Order:
        return self.orders[self.epoch_def(epoch).members[partition]]

    def event(self, epoch: int, event_id: str) -> tuple[str, EventDef] | None:
        """The member of ``epoch`` holding ``event_id`` and the event, if any."""
        for (e, partition), events in self.truth.items():
            if e != epoch:
                continue
            for ev in events:
                if ev.id == event_id:
                    return partition, ev
        return None

    @property
    def single_order(self) -> Order | None:
        """The one order every member of every epoch uses, if there is one."""
        names = {n for e in self.epochs for n in e.members.values()}
        if len(names) == 1:
            return self.orders[names.pop()]
        if not names and len(self.orders) == 1:
            return next(iter(self.orders.values()))
        return None


_KIND_OF: dict[type, str] = {
    Certify: "certify",
    Misconfigure: "misconfigure",
    Finalize: "finalize",
    Reshard: "reshard",
    Serve: "serve",
    Publish: "publish",
    Ingest: "ingest",
    Resume: "resume",
    Crash: "crash",
}

# ---------------------------------------------------------------------------
# Values


def format_cut(cut: Cut | None) -> str:
    """A cut as scenario files write it: ``nothing``, ``before 100``, ``through k7``."""
    if cut is None or cut.endpoint is Endpoint.NOTHING:
        return "nothing" if cut is not None else "none"
    return f"{cut.endpoint.value} {cut.at}"


_INT = re.compile(r"-?[0-9]+")


def parse_cut(text: object, order: Order) -> Cut:
    """Parse ``nothing``, ``before X`` or ``through X`` against ``order``.

    On an integer order ``X`` is a decimal integer of any size; on a string
    order it is the rest of the text, verbatim. Raises :class:`ValueError`
    with the problem.
    """
    if type(text) is not str:
        raise ValueError(f"a cut is a string like 'before 100' or 'nothing', got {_shown(text)}")
    if text == "nothing":
        return NOTHING
    kind, sep, rest = text.partition(" ")
    if kind not in ("before", "through") or not sep or not rest:
        raise ValueError(f"a cut is 'nothing', 'before X' or 'through X', got {text!r}")
    at: Coordinate
    if order.kind == "integer":
        if not _INT.fullmatch(rest):
            raise ValueError(
                f"order {order.name!r} is an integer order; {rest!r} is not an integer"
            )
        try:
            at = int(rest)
        except ValueError:
            raise ValueError(f"the coordinate {rest[:20]}... has too many digits") from None
    else:
        at = rest
    try:
        order.validate(at, "cut.at")
    except BadValue as exc:
        raise ValueError(exc.problem) from None
    return Cut(Endpoint(kind), at)


def _shown(value: object) -> str:
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if isinstance(value, float):
        if math.isnan(value):
            return "nan (not a number)"
        if math.isinf(value):
            return f"{value} (infinity)"
        return f"the float {value!r}"
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, int):
        text = str(value)
        return text if len(text) <= 24 else f"{text[:20]}... ({len(text)} digits)"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


# ---------------------------------------------------------------------------
# Reading TOML


class _Node:
    """One table of the document: typed getters that name the place of every mistake."""

    def __init__(
        self,
        loader: _Loader,
        path: Path,
        data: Mapping[str, object],
        allowed: Iterable[str] | None,
    ) -> None:
        self.loader = loader
        self.path = path
        self.data = data
        if allowed is None:  # the caller checks the keys itself
            return
        allowed = tuple(allowed)
        for key in data:
            if key not in allowed:
                close = difflib.get_close_matches(key, allowed, n=1, cutoff=0.6)
                hint = f"; did you mean {close[0]!r}?" if close else ""
                raise loader.error(
                    (*path, key),
                    f"unknown field (allowed here: {', '.join(allowed)}){hint}",
                )

    def error(self, key: str | int | None, problem: str) -> ScenarioError:
        return self.loader.error(self.path if key is None else (*self.path, key), problem)

    def has(self, key: str) -> bool:
        return key in self.data

    def raw(self, key: str) -> object:
        return self.data.get(key)

    def text(self, key: str, default: str | None = None) -> str:
        value = self.data.get(key)
        if value is None:
            if default is not None:
                return default
            raise self.error(None, f"{key!r} is required")
        if type(value) is not str or not value.strip():
            raise self.error(key, f"a non-empty string is required, got {_shown(value)}")
        return value

    def opt_text(self, key: str) -> str | None:
        if key not in self.data:
            return None
        return self.text(key)

    def integer(self, key: str, low: int, high: int, default: int | None = None) -> int:
        value = self.data.get(key)
        if value is None:
            if default is not None:
                return default
            raise self.error(None, f"{key!r} is required")
        return self.loader.integer((*self.path, key), value, low, high)

    def opt_integer(self, key: str, low: int, high: int) -> int | None:
        if key not in self.data:
            return None
        return self.integer(key, low, high)

    def boolean(self, key: str, default: bool) -> bool:
        value = self.data.get(key, default)
        if type(value) is not bool:
            raise self.error(key, f"true or false is required, got {_shown(value)}")
        return value

    def texts(self, key: str, *, required: bool = False) -> tuple[str, ...]:
        value = self.data.get(key)
        if value is None:
            if required:
                raise self.error(None, f"{key!r} is required")
            return ()
        if not isinstance(value, list):
            raise self.error(key, f"an array of strings is required, got {_shown(value)}")
        out = []
        for i, item in enumerate(value):
            if type(item) is not str or not item:
                raise self.error(
                    key, f"item {i + 1}: a non-empty string is required, got {_shown(item)}"
                )
            out.append(item)
        return tuple(out)

    def table(self, key: str, allowed: Iterable[str], *, required: bool = False) -> _Node | None:
        value = self.data.get(key)
        if value is None:
            if required:
                raise self.error(None, f"the table {key!r} is required")
            return None
        if not isinstance(value, dict):
            raise self.error(key, f"a table is required, got {_shown(value)}")
        return _Node(self.loader, (*self.path, key), value, allowed)

    def mapping(self, key: str) -> dict[str, object]:
        """A table with free keys (partition names, op names)."""
        value = self.data.get(key)
        if value is None:
            return {}
        if not isinstance(value, dict):
            raise self.error(key, f"a table is required, got {_shown(value)}")
        return dict(value)

    def tables(self, key: str, allowed: Iterable[str] | None) -> list[_Node]:
        value = self.data.get(key)
        if value is None:
            return []
        if not isinstance(value, list):
            raise self.error(
                key, f"an array of tables ([[{key}]]) is required, got {_shown(value)}"
            )
        allowed = None if allowed is None else tuple(allowed)
        out = []
        for i, item in enumerate(value):
            if not isinstance(item, dict):
                raise self.error(key, f"entry {i + 1} must be a table, got {_shown(item)}")
            out.append(_Node(self.loader, (*self.path, key, i), item, allowed))
        return out


_TOP = (
    "name",
    "description",
    "source",
    "properties",
    "policy",
    "stream",
    "scope",
    "max_retries",
    "variant",
    "not_on",
    "orders",
    "epochs",
    "truth",
    "steps",
    "broken",
)
_STEP_COMMON = ("do", "expect", "record", "checkpoints", "generations")
_STEP_FIELDS: dict[str, tuple[str, ...]] = {
    "certify": ("partition", "cut"),
    "misconfigure": ("partition", "kind", "cut"),
    "finalize": ("events",),
    "reshard": ("epoch",),
    "serve": ("partition", "token", "events", "next", "claim", "final", "lost"),
    "publish": ("publisher", "faults", "pause_before", "pause_nth"),
    "ingest": ("reader", "partition", "faults", "pause_before", "pause_nth", "max_pages"),
    "resume": ("worker", "pause_before", "pause_nth"),
    "crash": ("worker",),
}


class _Loader:
    def __init__(self, text: str, origin: str, stem: str) -> None:
        self.text = text
        self.origin = origin
        self.stem = stem
        self.lines: LineIndex = index_lines(text)

    def error(self, path: Path, problem: str) -> ScenarioError:
        return ScenarioError(self.origin, self.lines.line_of(path), format_path(path), problem)

    def line(self, path: Path) -> int:
        return self.lines.line_of(path)

    def integer(self, path: Path, value: object, low: int, high: int) -> int:
        if type(value) is not int:
            raise self.error(path, f"an integer is required, got {_shown(value)}")
        if not low <= value <= high:
            raise self.error(
                path, f"{_shown(value)} is out of range: it must be between {low} and {high}"
            )
        return value

    # -- the document ------------------------------------------------------------------

    def load(self) -> Scenario:
        try:
            data = parse_toml(self.text)
        except InputProblem as exc:
            raise ScenarioError(self.origin, exc.line, "", exc.reason) from None
        top = _Node(self, (), data, _TOP)
        name = top.text("name")
        if name != self.stem:
            raise top.error("name", f"the name {name!r} must equal the file name {self.stem!r}")
        if not (name.endswith("-ok") or name.endswith("-bad")):
            raise top.error(
                "name",
                "a scenario's name carries its verdict: end it in '-ok' (the correct protocol "
                "passes) or '-bad' (a recorded failing history that must be caught)",
            )
        description = top.text("description")
        source = top.text("source")
        properties = top.texts("properties")
        for i, prop in enumerate(properties):
            if prop not in PROPERTIES:
                raise top.error(
                    "properties", f"item {i + 1}: {prop!r} is not one of {', '.join(PROPERTIES)}"
                )
        policy = top.text("policy", "monotone")
        if policy not in POLICIES:
            raise top.error("policy", f"'monotone' or 'reset', got {policy!r}")
        stream = top.text("stream", "s")
        scope = top.text("scope", "q1")
        max_retries = top.integer("max_retries", 0, _MAX_RETRIES, 3)
        variant = top.opt_text("variant")
        if variant is not None and variant not in VARIANTS:
            close = difflib.get_close_matches(variant, VARIANTS, n=1, cutoff=0.5)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise top.error(
                "variant", f"unknown bug {variant!r} (known: {', '.join(VARIANTS)}){hint}"
            )
        not_on = self._not_on(top)
        orders = self._orders(top)
        epochs = self._epochs(top, orders)
        truth = self._truth(top, orders, epochs)
        broken = self._broken(top)
        if name.endswith("-bad"):
            if broken is None:
                raise top.error(
                    None, "a '-bad' scenario needs a [broken] table naming the property"
                )
            if variant is None:
                raise top.error(
                    None, "a '-bad' scenario names the known bug it replays: variant = ..."
                )
        else:
            if broken is not None:
                raise top.error("broken", "only '-bad' scenarios have a [broken] table")
            if variant is not None:
                raise top.error("variant", "only '-bad' scenarios run a buggy variant")
        draft = Scenario(
            name=name,
            origin=self.origin,
            description=description,
            source=source,
            properties=properties,
            policy=policy,
            stream=stream,
            scope=scope,
            max_retries=max_retries,
            variant=variant,
            not_on=MappingProxyType(not_on),
            orders=MappingProxyType(orders),
            epochs=epochs,
            truth=MappingProxyType(truth),
            steps=(),
            broken=broken,
            publishers=(),
            readers=(),
        )
        steps, publishers, readers = _Steps(self, top, draft).read()
        if broken is not None and broken.step is not None and broken.step > len(steps):
            raise self.error(("broken", "step"), f"there are only {len(steps)} steps")
        return dataclasses.replace(draft, steps=steps, publishers=publishers, readers=readers)

    def _not_on(self, top: _Node) -> dict[str, str]:
        out: dict[str, str] = {}
        for key, value in top.mapping("not_on").items():
            if key not in TARGETS:
                raise self.error(("not_on", key), f"unknown target (targets: {', '.join(TARGETS)})")
            if type(value) is not str or not value.strip():
                raise self.error(
                    ("not_on", key), "say why the scenario cannot run there (a string)"
                )
            out[key] = value
        return out

    def _orders(self, top: _Node) -> dict[str, Order]:
        raw = top.mapping("orders")
        if not raw:
            raise top.error(None, "declare at least one order: [orders.NAME] kind = ...")
        orders: dict[str, Order] = {}
        node = top.table("orders", list(raw))
        assert node is not None
        for name in raw:
            entry = node.table(name, ("kind", "successor"), required=True)
            assert entry is not None
            kind = entry.text("kind")
            if kind == "integer":
                if not entry.has("successor"):
                    raise entry.error(
                        None,
                        "an integer order must say successor = true (offsets: through x is "
                        "before x+1) or false (timestamps: events may sit between integers)",
                    )
                orders[name] = Order.integer(name, entry.boolean("successor", False))
            elif kind == "string":
                if entry.has("successor") and entry.raw("successor") is not False:
                    raise entry.error("successor", "a string order has no exact successor")
                orders[name] = Order.string(name)
            else:
                raise entry.error("kind", f"'integer' or 'string', got {_shown(kind)}")
        return orders

    def _epochs(self, top: _Node, orders: Mapping[str, Order]) -> tuple[EpochDef, ...]:
        nodes = top.tables("epochs", ("epoch", "members"))
        if not nodes:
            raise top.error(None, "declare the membership: [[epochs]] epoch = 1, members = {...}")
        out: list[EpochDef] = []
        for node in nodes:
            epoch = node.integer("epoch", 1, _MAX_EPOCH)
            if out and epoch <= out[-1].epoch:
                raise node.error(
                    "epoch", f"epochs strictly increase; {epoch} follows {out[-1].epoch}"
                )
            members: dict[str, str] = {}
            for partition, order_name in node.mapping("members").items():
                if type(order_name) is not str or order_name not in orders:
                    raise node.error(
                        "members",
                        f"member {partition!r} names order {_shown(order_name)}, which is not "
                        f"declared (orders: {', '.join(orders)})",
                    )
                members[partition] = order_name
            out.append(EpochDef(epoch, MappingProxyType(members), node.loader.line(node.path)))
        return tuple(out)

    def _truth(
        self, top: _Node, orders: Mapping[str, Order], epochs: tuple[EpochDef, ...]
    ) -> dict[tuple[int, str], tuple[EventDef, ...]]:
        by_key: dict[tuple[int, str], list[EventDef]] = {}
        positions: dict[str, Coordinate] = {}
        finality: dict[str, bool] = {}
        declared = {e.epoch: e for e in epochs}
        for node in top.tables("truth", ("partition", "epochs", "events")):
            partition = node.text("partition")
            if node.has("epochs"):
                raw = node.raw("epochs")
                if not isinstance(raw, list) or not raw:
                    raise node.error("epochs", "a non-empty array of epoch numbers is required")
                block_epochs = [self.integer((*node.path, "epochs"), e, 1, _MAX_EPOCH) for e in raw]
            else:
                block_epochs = [e.epoch for e in epochs if partition in e.members]
                if not block_epochs:
                    raise node.error("partition", f"{partition!r} is not a member of any epoch")
            for e in block_epochs:
                if e not in declared:
                    raise node.error("epochs", f"epoch {e} is not declared in [[epochs]]")
                if partition not in declared[e].members:
                    raise node.error("partition", f"{partition!r} is not a member of epoch {e}")
            raw_events = node.raw("events")
            if not isinstance(raw_events, list):
                raise node.error(
                    None, "'events' is required: an array of { id = ..., at = ..., final = ... }"
                )
            for i, raw_event in enumerate(raw_events):
                where = (*node.path, "events")
                if not isinstance(raw_event, dict):
                    raise self.error(
                        where,
                        f"event {i + 1}: an inline table {{ id = ..., at = ... }} is required",
                    )
                for key in raw_event:
                    if key not in ("id", "at", "final"):
                        raise self.error(
                            where, f"event {i + 1}: unknown field {key!r} (allowed: id, at, final)"
                        )
                event_id = raw_event.get("id")
                if type(event_id) is not str or not event_id:
                    raise self.error(
                        where,
                        f"event {i + 1}: id must be a non-empty string, got {_shown(event_id)}",
                    )
                final = raw_event.get("final", True)
                if type(final) is not bool:
                    raise self.error(
                        where,
                        f"event {event_id!r}: final must be true or false, got {_shown(final)}",
                    )
                at = raw_event.get("at")
                for e in block_epochs:
                    order = orders[declared[e].members[partition]]
                    try:
                        order.validate(at, "at")
                    except BadValue as exc:
                        raise self.error(
                            where, f"event {event_id!r}: position {_shown(at)}: {exc.problem}"
                        ) from None
                assert type(at) is int or type(at) is str
                known_final = finality.setdefault(event_id, final)
                if known_final != final:
                    raise self.error(
                        where,
                        f"event {event_id!r} is final = {str(known_final).lower()} elsewhere; "
                        "finality belongs to the event (finalize it with a step instead)",
                    )
                known = positions.setdefault(event_id, at)
                if known != at:
                    raise self.error(
                        where,
                        f"event {event_id!r} is at {known!r} elsewhere; an event keeps its "
                        "position (give a moved copy a new id)",
                    )
                for e in block_epochs:
                    by_key.setdefault((e, partition), []).append(EventDef(event_id, at, final))
        owner: dict[tuple[int, str], str] = {}
        out: dict[tuple[int, str], tuple[EventDef, ...]] = {}
        for (e, partition), events in by_key.items():
            for ev in events:
                other = owner.setdefault((e, ev.id), partition)
                if other != partition:
                    raise top.error(
                        "truth",
                        f"event {ev.id!r} belongs to both {other!r} and {partition!r} in epoch {e}",
                    )
            # Counted once (linear): ids.count(i) per id was quadratic in the events.
            dup = sorted(i for i, n in Counter(ev.id for ev in events).items() if n > 1)
            if dup:
                raise top.error(
                    "truth", f"event {dup[0]!r} is listed twice for {partition!r} in epoch {e}"
                )
            out[(e, partition)] = tuple(sorted(events, key=lambda ev: (_sort_key(ev.at), ev.id)))
        return out

    def _broken(self, top: _Node) -> Broken | None:
        node = top.table("broken", ("property", "accept", "step"))
        if node is None:
            return None
        prop = node.text("property")
        if prop not in RULE_NAMES:
            raise node.error("property", f"{prop!r} is not one of {', '.join(RULE_NAMES)}")
        accept = node.texts("accept")
        for item in accept:
            if item not in RULE_NAMES:
                raise node.error("accept", f"{item!r} is not one of {', '.join(RULE_NAMES)}")
        step = node.opt_integer("step", 1, _MAX_STEPS)
        return Broken(prop, accept, step, self.line(node.path))


def _sort_key(at: Coordinate) -> tuple[int, int | str]:
    return (0, at) if isinstance(at, int) else (1, at)


class _Steps:
    """Reads ``[[steps]]`` while simulating what is static: the epoch, who is paused."""

    def __init__(self, loader: _Loader, top: _Node, scenario: Scenario) -> None:
        self.loader = loader
        self.top = top
        self.sc = scenario
        self.epoch_index = 0
        self.paused: dict[str, tuple[str, int]] = {}  # worker -> (kind, step index)
        self.roles: dict[str, str] = {}
        self.ingesting: dict[str, tuple[str, int]] = {}  # reader -> (partition, epoch) of its pass

    @property
    def epoch(self) -> int:
        return self.sc.epochs[self.epoch_index].epoch

    def read(self) -> tuple[tuple[Step, ...], tuple[str, ...], tuple[str, ...]]:
        nodes = self.top.tables("steps", None)  # each step's keys are checked for its kind
        if not nodes:
            raise self.top.error(None, "a scenario needs [[steps]]")
        if len(nodes) > _MAX_STEPS:
            raise self.top.error("steps", f"at most {_MAX_STEPS} steps")
        steps = []
        for i, node in enumerate(nodes, start=1):
            steps.append(self._step(i, node))
        for worker, (kind, index) in self.paused.items():
            raise self.loader.error(
                ("steps", index - 1),
                f"{kind} {worker!r} is left paused at the end; add a resume or crash step",
            )
        publishers = tuple(w for w, r in self.roles.items() if r == "publisher")
        readers = tuple(w for w, r in self.roles.items() if r == "reader")
        return tuple(steps), publishers, readers

    def _step(self, index: int, node: _Node) -> Step:
        do = node.text("do")
        if do not in _STEP_FIELDS:
            close = difflib.get_close_matches(do, _STEP_FIELDS, n=1, cutoff=0.5)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise node.error("do", f"unknown step {do!r} (steps: {', '.join(_STEP_FIELDS)}){hint}")
        own = _STEP_FIELDS[do]
        for key in node.data:
            if key not in _STEP_COMMON and key not in own:
                close = difflib.get_close_matches(key, (*own, *_STEP_COMMON), n=1, cutoff=0.6)
                hint = f"; did you mean {close[0]!r}?" if close else ""
                raise node.error(
                    key,
                    f"a {do!r} step has no field {key!r} (its fields: "
                    f"{', '.join((*own, *_STEP_COMMON[1:]))}){hint}",
                )
        epoch_before = self.epoch
        action = getattr(self, f"_{do}")(node)
        ends: str | None = None  # "publisher"/"reader" when this step ends a request
        if isinstance(action, Publish | Ingest | Resume):
            worker = (
                action.publisher
                if isinstance(action, Publish)
                else action.reader
                if isinstance(action, Ingest)
                else action.worker
            )
            role = self.roles[worker]
            if action.pause is not None:
                self.paused[worker] = (role, index)
            else:
                ends = role
        expect = self._expect(node, ends)
        return Step(index, self.loader.line(node.path), action, expect, epoch_before)

    # -- helpers -------------------------------------------------------------------------

    def _member(self, node: _Node, key: str = "partition") -> str:
        partition = node.text(key)
        members = self.sc.epoch_def(self.epoch).members
        if partition not in members:
            raise node.error(
                key,
                f"{partition!r} is not a member of epoch {self.epoch} (members: "
                f"{', '.join(sorted(members)) or 'none'})",
            )
        return partition

    def _cut(self, node: _Node, key: str, order: Order) -> Cut:
        try:
            return parse_cut(node.raw(key), order)
        except ValueError as exc:
            raise node.error(key, str(exc)) from None

    def _role(self, node: _Node, key: str, role: str) -> str:
        worker = node.text(key)
        known = self.roles.setdefault(worker, role)
        if known != role:
            raise node.error(
                key, f"{worker!r} is a {known}; a worker is a publisher or a reader, not both"
            )
        return worker

    def _idle(self, node: _Node, key: str, worker: str) -> None:
        if worker in self.paused:
            kind, at = self.paused[worker]
            raise node.error(
                key,
                f"{kind} {worker!r} is paused since step {at}; resume or crash it first",
            )

    def _faults(self, node: _Node, ops: tuple[str, ...]) -> Mapping[str, tuple[str, ...]]:
        out: dict[str, tuple[str, ...]] = {}
        for op, modes in node.mapping("faults").items():
            if op not in ops:
                raise node.error(
                    "faults", f"{op!r} is not a call of this worker (calls: {', '.join(ops)})"
                )
            if not isinstance(modes, list) or not modes:
                raise node.error(
                    "faults",
                    f"faults.{op}: an array of modes, one per successive {op} call "
                    f"({', '.join(MODES)}), is required",
                )
            seq = []
            for mode in modes:
                if mode not in MODES:
                    raise node.error(
                        "faults", f"faults.{op}: {_shown(mode)} is not one of {', '.join(MODES)}"
                    )
                if mode == "applied_lost" and op not in WRITE_OPS:
                    raise node.error(
                        "faults",
                        f"faults.{op}: a read is never applied; use 'lost' for a lost read",
                    )
                seq.append(mode)
            out[op] = tuple(seq)
        return MappingProxyType(out)

    def _pause(self, node: _Node, ops: tuple[str, ...]) -> Pause | None:
        if not node.has("pause_before"):
            if node.has("pause_nth"):
                raise node.error("pause_nth", "pause_nth needs pause_before")
            return None
        op = node.text("pause_before")
        if op not in ops:
            raise node.error(
                "pause_before", f"{op!r} is not a call of this worker (calls: {', '.join(ops)})"
            )
        return Pause(op, node.integer("pause_nth", 1, _MAX_NTH, 1))

    # -- step kinds ----------------------------------------------------------------------

    def _certify(self, node: _Node) -> Certify:
        partition = self._member(node)
        return Certify(partition, self._cut(node, "cut", self.sc.order_of(self.epoch, partition)))

    def _misconfigure(self, node: _Node) -> Misconfigure:
        partition = self._member(node)
        kind = node.text("kind")
        if kind not in MISCONFIGURATIONS:
            raise node.error("kind", f"one of {', '.join(MISCONFIGURATIONS)}, got {kind!r}")
        if kind == "wrong_epoch" and self.epoch_index == 0:
            raise node.error("kind", "a checkpoint of the previous epoch needs a previous epoch")
        cut = self._cut(node, "cut", self.sc.order_of(self.epoch, partition))
        if cut.is_nothing:
            raise node.error("cut", "a misconfigured checkpoint claims some coverage; give a cut")
        return Misconfigure(partition, kind, cut)

    def _finalize(self, node: _Node) -> Finalize:
        ids = node.texts("events", required=True)
        for event_id in ids:
            if self.sc.event(self.epoch, event_id) is None:
                raise node.error(
                    "events", f"{event_id!r} is not an event of any member in epoch {self.epoch}"
                )
        return Finalize(ids)

    def _reshard(self, node: _Node) -> Reshard:
        epoch = node.integer("epoch", 1, _MAX_EPOCH)
        if self.epoch_index + 1 >= len(self.sc.epochs):
            raise node.error("epoch", f"no epoch is declared after epoch {self.epoch}")
        nxt = self.sc.epochs[self.epoch_index + 1].epoch
        if epoch != nxt:
            raise node.error("epoch", f"the next declared epoch is {nxt}, not {epoch}")
        self.epoch_index += 1
        return Reshard(epoch)

    def _serve(self, node: _Node) -> Serve:
        partition = self._member(node)
        known = {ev.id for ev in self.sc.events(self.epoch, partition)}
        events = node.texts("events")
        for event_id in events:
            if event_id not in known:
                raise node.error(
                    "events", f"{event_id!r} is not an event of {partition!r} in epoch {self.epoch}"
                )
        claim = None
        if node.has("claim"):
            claim = self._cut(node, "claim", self.sc.order_of(self.epoch, partition))
            if claim.is_nothing:
                raise node.error("claim", "leave the claim out for a page without one")
        elif node.has("final"):
            raise node.error("final", "final says whether the page's claim is final; give a claim")
        return Serve(
            partition,
            node.opt_text("token"),
            events,
            node.opt_text("next"),
            claim,
            node.boolean("final", True),
            node.integer("lost", 0, _MAX_NTH, 0),
        )

    def _publish(self, node: _Node) -> Publish:
        worker = self._role(node, "publisher", "publisher")
        self._idle(node, "publisher", worker)
        return Publish(worker, self._faults(node, PUBLISHER_OPS), self._pause(node, PUBLISHER_OPS))

    def _ingest(self, node: _Node) -> Ingest:
        worker = self._role(node, "reader", "reader")
        self._idle(node, "reader", worker)
        partition = self._member(node)
        self.ingesting[worker] = (partition, self.epoch)
        return Ingest(
            worker,
            partition,
            self._faults(node, READER_OPS),
            self._pause(node, READER_OPS),
            node.opt_integer("max_pages", 1, _MAX_COUNT),
        )

    def _resume(self, node: _Node) -> Resume:
        worker = node.text("worker")
        if worker not in self.paused:
            raise node.error(
                "worker", f"{worker!r} is not paused; only a paused request can resume"
            )
        role = self.roles[worker]
        ops = PUBLISHER_OPS if role == "publisher" else READER_OPS
        del self.paused[worker]
        return Resume(worker, self._pause(node, ops))

    def _crash(self, node: _Node) -> Crash:
        worker = node.text("worker")
        if worker not in self.paused:
            raise node.error(
                "worker", f"{worker!r} is not paused; a crash happens at a pause point"
            )
        del self.paused[worker]
        return Crash(worker)

    # -- expectations --------------------------------------------------------------------

    def _record_order(self, node: _Node, key: str, epoch: int | None) -> Order:
        """The order record cuts of ``epoch`` (default: the current one) are written in."""
        e = self.epoch if epoch is None else epoch
        try:
            members = self.sc.epoch_def(e).members
        except KeyError:
            raise node.error(key, f"epoch {e} is not declared") from None
        kinds = {self.sc.orders[n].kind for n in members.values()}
        if len(kinds) > 1:
            raise node.error(
                key,
                f"the members of epoch {e} have orders of different kinds; no record cut "
                "other than 'nothing' can be written for them",
            )
        if members:
            return self.sc.orders[next(iter(members.values()))]
        return next(iter(self.sc.orders.values()))

    def _record_cut(self, node: _Node, key: str, epoch: int | None) -> Cut:
        if node.raw(key) == "nothing":
            return NOTHING
        return self._cut(node, key, self._record_order(node, key, epoch))

    def _expect(self, node: _Node, ends: str | None) -> Expectations:
        attempt: AttemptExpect | None = None
        ingest: Cut | None = None
        exp = node.table("expect", ("outcome", "reason", "epoch", "cut"))
        if exp is not None:
            if ends is None:
                raise node.error(
                    "expect",
                    "expect describes how a request ends, and no request ends at this step "
                    "(a paused request ends at the step that resumes it)",
                )
            if ends == "publisher":
                outcome = exp.opt_text("outcome")
                if outcome is not None and outcome not in OUTCOMES:
                    raise exp.error("outcome", f"one of {', '.join(OUTCOMES)}, got {outcome!r}")
                reason = exp.opt_text("reason")
                if reason is not None:
                    if reason not in REASONS:
                        raise exp.error("reason", f"one of {', '.join(REASONS)}, got {reason!r}")
                    if outcome not in (None, "withheld"):
                        raise exp.error("reason", "only a withheld attempt has a reason")
                epoch = exp.opt_integer("epoch", 1, _MAX_EPOCH)
                cut = None
                if exp.has("cut"):
                    cut = self._record_cut(exp, "cut", epoch)
                attempt = AttemptExpect(outcome, reason, epoch, cut)
            else:
                for key in ("outcome", "reason", "epoch"):
                    if exp.has(key):
                        raise exp.error(
                            key, "an ingest pass ends with the cut it certified; expect cut only"
                        )
                if not exp.has("cut"):
                    raise exp.error(None, "expect the cut the ingest pass ends with")
                ingest = self._cut(exp, "cut", self._pass_order(node))
        record: RecordExpect | None = None
        rec = node.table("record", ("epoch", "cut", "revision", "writer"))
        if rec is not None:
            epoch = rec.opt_integer("epoch", 1, _MAX_EPOCH)
            cut = self._record_cut(rec, "cut", epoch) if rec.has("cut") else None
            writer = rec.opt_text("writer")
            record = RecordExpect(epoch, cut, rec.opt_integer("revision", 0, _MAX_COUNT), writer)
        checkpoints: dict[str, Cut | None] = {}
        members = self.sc.epoch_def(self.epoch).members
        for partition, text in node.mapping("checkpoints").items():
            if partition not in members:
                raise node.error(
                    "checkpoints", f"{partition!r} is not a member of epoch {self.epoch}"
                )
            if text == "none":
                checkpoints[partition] = None
                continue
            try:
                checkpoints[partition] = parse_cut(text, self.sc.order_of(self.epoch, partition))
            except ValueError as exc:
                raise node.error(
                    "checkpoints", f"{partition}: {exc} (or 'none': no checkpoint)"
                ) from None
        generations: dict[str, int] = {}
        for partition, value in node.mapping("generations").items():
            if partition not in members:
                raise node.error(
                    "generations", f"{partition!r} is not a member of epoch {self.epoch}"
                )
            generations[partition] = self.loader.integer(
                ("steps", node.path[1], "generations", partition), value, 1, _MAX_COUNT
            )
        return Expectations(
            attempt, ingest, record, MappingProxyType(checkpoints), MappingProxyType(generations)
        )

    def _pass_order(self, node: _Node) -> Order:
        """The order of the ingest pass ending at this step (its own or its resumed one)."""
        worker = node.text("reader") if node.has("reader") else node.text("worker")
        partition, epoch = self.ingesting[worker]
        return self.sc.order_of(epoch, partition)


# ---------------------------------------------------------------------------
# Entry points


def load_text(text: str, origin: str, stem: str | None = None) -> Scenario:
    """Validate one scenario's TOML ``text``; ``origin`` names it in errors.

    ``stem`` is the file name without ``.toml`` (the scenario's name must equal
    it); by default the last component of ``origin``.
    """
    if stem is None:
        stem = FilePath(origin).name.removesuffix(".toml")
    return _Loader(text, origin, stem).load()


def load_file(path: FilePath | str) -> Scenario:
    """Read and validate one scenario file; :class:`ScenarioError` names file and line."""
    path = FilePath(path)
    try:
        raw = read_capped(path)
    except OSError as exc:
        raise ScenarioError(str(path), None, "", f"cannot read the file: {exc.strerror}") from None
    except InputProblem as exc:
        raise ScenarioError(str(path), None, "", exc.reason) from None
    return _decode(raw, str(path), path.name.removesuffix(".toml"))


def _decode(raw: bytes, origin: str, stem: str) -> Scenario:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise ScenarioError(origin, line, "", "the file is not UTF-8 text") from None
    return load_text(text, origin, stem)


def shipped_names() -> tuple[str, ...]:
    """The names of the scenarios shipped as package data of ``fencepost.scenarios``."""
    root = importlib.resources.files("fencepost.scenarios")
    return tuple(
        sorted(
            entry.name.removesuffix(".toml")
            for entry in root.iterdir()
            if entry.name.endswith(".toml") and entry.is_file()
        )
    )


def load_shipped(name: str) -> Scenario:
    """Load the shipped scenario ``name``."""
    names = shipped_names()
    if name not in names:
        close = difflib.get_close_matches(name, names, n=1, cutoff=0.5)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise ScenarioError(name, None, "", f"no shipped scenario of that name{hint}")
    resource = importlib.resources.files("fencepost.scenarios") / f"{name}.toml"
    return _decode(resource.read_bytes(), f"scenarios/{name}.toml", name)


def load_shipped_all() -> list[Scenario]:
    return [load_shipped(name) for name in shipped_names()]


def scenario_files(paths: Sequence[FilePath | str]) -> list[FilePath]:
    """The scenario files named by ``paths``: files as given, folders' ``*.toml`` sorted.

    Raises :class:`ScenarioError` for a path that does not exist or a folder
    without scenario files.
    """
    out: list[FilePath] = []
    for given in paths:
        path = FilePath(given)
        if path.is_dir():
            found = sorted(p for p in path.glob("*.toml") if p.is_file())
            if not found:
                raise ScenarioError(
                    str(path), None, "", "the folder holds no *.toml scenario files"
                )
            out.extend(found)
        elif path.is_file():
            if path.suffix != ".toml":
                raise ScenarioError(str(path), None, "", "a scenario file ends in .toml")
            out.append(path)
        elif path.exists():
            raise ScenarioError(
                str(path), None, "", "not a regular file or folder (a device or a pipe?)"
            )
        else:
            raise ScenarioError(str(path), None, "", "no such file or folder")
    return out


#: A short guide to the format, printed by ``fencepost scenarios --format-help``.
FORMAT_HELP = """\
A scenario is one TOML file, NAME-ok.toml or NAME-bad.toml (name = the file name):

  name, description, source        what it shows and where it comes from (citation)
  properties = [...]               the section-7 properties it exercises (all are checked)
  policy = "monotone" | "reset"    cutover policy; stream, scope, max_retries (default 3)
  variant = "relabel"              -bad only: the known bug the schedule runs against
  not_on = { model = "why" }       targets that cannot express it, and why
  [orders.NAME] kind = "integer", successor = true|false   (or kind = "string")
  [[epochs]] epoch = 1, members = { A = "NAME", ... }
  [[truth]] partition = "A", epochs = [1, 2] (default: all its epochs),
            events = [{ id = "a1", at = 100, final = true }, ...]
  [[steps]] do = ...:
    certify       partition, cut             an honest reader certifies a true cut
    misconfigure  partition, kind, cut       provisional | wrong_scope | wrong_epoch
    finalize      events = [ids]             the source finalizes events
    reshard       epoch                      the next epoch's membership becomes durable
    serve         partition, token?, events, next?, claim?, final?, lost?   a provider page
    publish       publisher, faults?, pause_before?, pause_nth?
    ingest        reader, partition, faults?, pause_before?, pause_nth?, max_pages?
    resume        worker, pause_before?, pause_nth?
    crash         worker                     a paused process dies; it restarts empty
    faults = { write_publication = ["applied_lost", "ok"] }  one mode per successive call:
             ok | lost (not applied, response lost) | applied_lost (writes only)
    expect = { outcome, reason, epoch, cut }   how the request ending here ends
    record = { epoch, cut, revision, writer }  the publication record after the step
    checkpoints = { A = "before 100", B = "none" }, generations = { A = 2 }
  [broken] property = "no_relabeling", accept = [...], step = N    -bad only
Cuts are written "nothing", "before X" or "through X".
"""
