"""The scenario as plain data: its vocabulary, its steps and expectations, and its errors.

A scenario (:class:`Scenario`) is a named, documented schedule with expected
outcomes over a world of orders, memberships and ground-truth events; the
reader of its TOML file is :mod:`fencepost.scenarios.format`, and every runner
(model, implementation, a SUT through the conformance harness) takes these
values. Cuts and orders are the judge's (:mod:`fencepost.judge.values`): the
specification's reading, never the implementation's.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from fencepost.inputs.toml import InputError
from fencepost.inputs.toml import shown as _shown
from fencepost.judge.merge import WithheldReason
from fencepost.judge.values import NOTHING, BadValue, Coordinate, Cut, Endpoint, Membership, Order
from fencepost.mutants import CATALOG

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

#: Known bugs a ``-bad`` scenario can run as its ``variant``: the one catalog's names
#: (:data:`fencepost.mutants.CATALOG`; the model's mutants carry the same names).
VARIANTS: Mapping[str, str] = {name: v.bug for name, v in CATALOG.items()}

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


class ScenarioError(InputError):
    """A scenario file that cannot be read or trusted, with its place.

    ``file`` and ``line`` locate the mistake (``line`` is None when the whole
    file is at fault); ``field`` is the dotted path of the offending field as
    the author writes it (``steps[3].expect``).
    """


def scenario_error(
    origin: str, line: int | None, field: str, problem: str, value: object = None
) -> ScenarioError:
    """The :class:`ScenarioError` the shared TOML reader raises for a scenario file."""
    return ScenarioError(origin, line, field, problem)


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
