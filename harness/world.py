"""The world the harness plays around the SUT: ground truth, the provider, the stores.

A :class:`WorldSetup` is plain data: the order, the events of every partition in
every membership epoch (several may share one coordinate), how many of them the
source has finalized, which kind of boundary each partition's source claims
(``before`` like Kafka's committed offset, ``through`` like Spanner's
heartbeat), and the workers. A :class:`World` is one run's mutable state built
from it:

- **Ground truth.** Every event of every (epoch, partition), its position, and
  whether the source finalized it. Later epochs are known from the start but
  become durable only when a ``reshard`` step makes them so; a reshard may move
  events into an existing partition *below* its old checkpoint, which is what
  makes an old epoch's checkpoint untrue in the new one.
- **Provider.** Pages are slices of a partition's event log in position order.
  A page's claim covers exactly the events enumerated up to its end; it is
  final only when everything it covers is finalized. Tokens are opaque strings
  the world issues and remembers, so a token from another partition or epoch
  is recognised.
- **Stores.** Lenient, as the protocol asks: the publication record accepts any
  write whose expected revision is current, a checkpoint any write whose
  expected generation is current (storing generation ``expected + 1``),
  outcomes the first value per event id. Keeping them true is the SUT's job;
  :mod:`fencepost.harness.checks` judges every change.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum

from fencepost.judge.cuts import compare, covers
from fencepost.judge.values import (
    NOTHING,
    BadValue,
    Checkpoint,
    Claim,
    Coordinate,
    Cut,
    Event,
    Finality,
    Membership,
    Order,
    Page,
    Record,
)
from fencepost.judge.wire import order_from_json

#: The most workers of one role a world may have: each is a SUT process.
MAX_WORKERS_PER_ROLE = 16


class SetupError(ValueError):
    """A world setup that cannot describe a run; the message names the field and the fix."""


class ClaimStyle(Enum):
    """Which kind of boundary a partition's source states in its claims."""

    BEFORE = "before"
    THROUGH = "through"


@dataclass(frozen=True, slots=True)
class EventSpec:
    """One event of the ground truth: a stable id and its position."""

    id: str
    at: Coordinate


@dataclass(frozen=True, slots=True)
class PartitionSetup:
    """One partition of one epoch.

    ``final`` is how many events (in position order) the source has finalized
    at the start (None: all of them). Once every event is final the source
    vouches for the whole log: ``before end`` when ``end`` is given (a
    heartbeat past the last event), else ``through`` the last event.

    ``order`` names this partition's order when it is not the world's: the same
    kind and successor under another name, so the membership carries two orders
    that cannot be compared (docs/semantics.md section 1) and the merge must
    withhold ``incomparable``. None: the world's order.
    """

    name: str
    events: tuple[EventSpec, ...] = ()
    final: int | None = None
    claims: ClaimStyle = ClaimStyle.THROUGH
    end: Coordinate | None = None
    order: str | None = None


@dataclass(frozen=True, slots=True)
class EpochSetup:
    """The membership of one epoch and its partitions' ground truth."""

    epoch: int
    partitions: tuple[PartitionSetup, ...]


@dataclass(frozen=True, slots=True)
class WorldSetup:
    """Everything a run starts from (plain data; JSON via :meth:`to_json`).

    The first epoch is durable at the start; each ``reshard`` step makes the
    next one durable. ``env_checkpoints`` makes the harness play honest
    partition readers (``advance`` steps write true checkpoints): the publisher
    level checked on its own, with checkpoint advances as environment steps.
    Without it, checkpoints come only from the SUT's readers.
    """

    order: Order
    epochs: tuple[EpochSetup, ...]
    publishers: tuple[str, ...] = ()
    readers: tuple[str, ...] = ()
    policy: str = "monotone"
    page_size: int = 2
    stream: str = "s"
    scope: str = "q1"
    env_checkpoints: bool = False

    def __post_init__(self) -> None:
        _validate(self)

    @property
    def workers(self) -> tuple[str, ...]:
        return self.publishers + self.readers

    @property
    def levels(self) -> frozenset[str]:
        """The protocol levels a SUT must implement to run this world."""
        needed = set()
        if self.publishers:
            needed.add("publisher")
        if self.readers:
            needed.add("checkpointer")
        return frozenset(needed)

    def to_json(self) -> dict[str, object]:
        return {
            "order": self.order.to_json(),
            "epochs": [
                {
                    "epoch": e.epoch,
                    "partitions": [
                        {
                            "name": p.name,
                            "events": [[ev.id, ev.at] for ev in p.events],
                            "final": p.final,
                            "claims": p.claims.value,
                            "end": p.end,
                            **({} if p.order is None else {"order": p.order}),
                        }
                        for p in e.partitions
                    ],
                }
                for e in self.epochs
            ],
            "publishers": list(self.publishers),
            "readers": list(self.readers),
            "policy": self.policy,
            "page_size": self.page_size,
            "stream": self.stream,
            "scope": self.scope,
            "env_checkpoints": self.env_checkpoints,
        }

    @staticmethod
    def from_json(data: object, where: str = "world") -> WorldSetup:
        """Parse :meth:`to_json`'s form; :class:`SetupError` names the field."""
        obj = _obj(data, where)
        allowed = {
            "order",
            "epochs",
            "publishers",
            "readers",
            "policy",
            "page_size",
            "stream",
            "scope",
            "env_checkpoints",
        }
        _known(obj, allowed, where)
        try:
            order = order_from_json(obj.get("order"), f"{where}.order")
        except BadValue as exc:
            raise SetupError(str(exc)) from None
        epochs = []
        for i, raw_epoch in enumerate(_list(obj.get("epochs"), f"{where}.epochs")):
            ew = f"{where}.epochs[{i}]"
            e_obj = _obj(raw_epoch, ew)
            _known(e_obj, {"epoch", "partitions"}, ew)
            parts = []
            for j, raw_p in enumerate(_list(e_obj.get("partitions"), f"{ew}.partitions")):
                pw = f"{ew}.partitions[{j}]"
                p_obj = _obj(raw_p, pw)
                _known(p_obj, {"name", "events", "final", "claims", "end", "order"}, pw)
                events = []
                for k, raw_ev in enumerate(_list(p_obj.get("events", []), f"{pw}.events")):
                    if not isinstance(raw_ev, list) or len(raw_ev) != 2:
                        raise SetupError(f"{pw}.events[{k}]: an event is [id, position]")
                    events.append(EventSpec(raw_ev[0], raw_ev[1]))
                claims = p_obj.get("claims", "through")
                if claims not in ("before", "through"):
                    raise SetupError(f"{pw}.claims: 'before' or 'through', got {claims!r}")
                parts.append(
                    PartitionSetup(
                        name=p_obj.get("name"),  # type: ignore[arg-type]  # validated below
                        events=tuple(events),
                        final=p_obj.get("final"),  # type: ignore[arg-type]
                        claims=ClaimStyle(claims),
                        end=p_obj.get("end"),  # type: ignore[arg-type]
                        order=p_obj.get("order"),  # type: ignore[arg-type]
                    )
                )
            epochs.append(EpochSetup(e_obj.get("epoch"), tuple(parts)))  # type: ignore[arg-type]
        return WorldSetup(
            order=order,
            epochs=tuple(epochs),
            publishers=_names(obj.get("publishers", []), f"{where}.publishers"),
            readers=_names(obj.get("readers", []), f"{where}.readers"),
            policy=obj.get("policy", "monotone"),  # type: ignore[arg-type]
            page_size=obj.get("page_size", 2),  # type: ignore[arg-type]
            stream=obj.get("stream", "s"),  # type: ignore[arg-type]
            scope=obj.get("scope", "q1"),  # type: ignore[arg-type]
            env_checkpoints=obj.get("env_checkpoints", False),  # type: ignore[arg-type]
        )


def _obj(data: object, where: str) -> Mapping[str, object]:
    if not isinstance(data, dict):
        raise SetupError(f"{where}: a JSON object is required")
    return data


def _list(data: object, where: str) -> list[object]:
    if not isinstance(data, list):
        raise SetupError(f"{where}: a list is required")
    return data


def _names(data: object, where: str) -> tuple[str, ...]:
    return tuple(_name(v, f"{where}[{i}]") for i, v in enumerate(_list(data, where)))


def _known(obj: Mapping[str, object], allowed: set[str], where: str) -> None:
    for key in obj:
        if key not in allowed:
            raise SetupError(f"{where}.{key}: unknown field; allowed: {', '.join(sorted(allowed))}")


def _name(value: object, where: str) -> str:
    if type(value) is not str or not value:
        raise SetupError(f"{where}: a non-empty string is required, got {value!r}")
    return value


def _validate(setup: WorldSetup) -> None:
    if not isinstance(setup.order, Order):
        raise SetupError("world.order: an Order is required")
    if not setup.epochs:
        raise SetupError("world.epochs: at least one epoch is required")
    if not setup.publishers and not setup.readers:
        raise SetupError("world: name at least one publisher or reader worker")
    for role in ("publishers", "readers"):
        count = len(getattr(setup, role))
        if count > MAX_WORKERS_PER_ROLE:
            raise SetupError(
                f"world.{role}: at most {MAX_WORKERS_PER_ROLE} workers per role (each is a "
                f"process), got {count}"
            )
    names = [_name(w, "world.workers") for w in setup.workers]
    if len(set(names)) != len(names):
        raise SetupError(f"world: worker names must be unique, got {names}")
    if setup.policy not in ("monotone", "reset"):
        raise SetupError(f"world.policy: 'monotone' or 'reset', got {setup.policy!r}")
    if type(setup.page_size) is not int or setup.page_size < 1:
        raise SetupError(f"world.page_size: a positive integer, got {setup.page_size!r}")
    if type(setup.env_checkpoints) is not bool:
        raise SetupError("world.env_checkpoints: true or false")
    _name(setup.stream, "world.stream")
    _name(setup.scope, "world.scope")
    previous = -1
    positions: dict[str, Coordinate] = {}
    for i, epoch in enumerate(setup.epochs):
        where = f"world.epochs[{i}]"
        if type(epoch.epoch) is not int or epoch.epoch <= previous or epoch.epoch < 1:
            raise SetupError(f"{where}.epoch: epochs are integers >= 1 and strictly increase")
        previous = epoch.epoch
        seen: set[str] = set()
        for j, part in enumerate(epoch.partitions):
            pw = f"{where}.partitions[{j}]"
            name = _name(part.name, f"{pw}.name")
            if name in seen:
                raise SetupError(f"{pw}.name: partition {name!r} appears twice")
            seen.add(name)
            if part.order is not None and (_name(part.order, f"{pw}.order") == setup.order.name):
                raise SetupError(
                    f"{pw}.order: {part.order!r} is the world's order; name another order "
                    "(or leave it out)"
                )
            ids = [ev.id for ev in part.events]
            if len(set(ids)) != len(ids):
                raise SetupError(f"{pw}.events: an event id appears twice in one partition")
            for k, ev in enumerate(part.events):
                _name(ev.id, f"{pw}.events[{k}].id")
                try:
                    setup.order.validate(ev.at, f"{pw}.events[{k}].at")
                except BadValue as exc:
                    raise SetupError(str(exc)) from None
                known = positions.setdefault(ev.id, ev.at)
                if known != ev.at:
                    raise SetupError(
                        f"{pw}.events[{k}]: event {ev.id!r} is at {known!r} in another partition "
                        "or epoch; an event keeps its position (use a new id)"
                    )
            if part.final is not None and (
                type(part.final) is not int or not 0 <= part.final <= len(part.events)
            ):
                raise SetupError(f"{pw}.final: an integer from 0 to {len(part.events)} or null")
            if part.end is not None:
                try:
                    setup.order.validate(part.end, f"{pw}.end")
                except BadValue as exc:
                    raise SetupError(str(exc)) from None
                if any(setup.order.compare(ev.at, part.end) >= 0 for ev in part.events):
                    raise SetupError(f"{pw}.end: must be above every event position")


class PartitionTruth:
    """One (epoch, partition)'s events in position order, and how many are final.

    :meth:`cover` is the exact coverage of a prefix of the log: the strongest
    cut whose downset holds exactly the enumerated events, expressed in the
    source's claim style. Splitting a group of events at one coordinate gives
    ``before x``: a claim covering some of the events at ``x`` but not all is
    impossible to state, so the boundary must stop short of ``x``.
    """

    def __init__(self, epoch: int, setup: PartitionSetup, order: Order) -> None:
        self.epoch = epoch
        self.name = setup.name
        self.order = order
        self.style = setup.claims
        self.end = setup.end
        self.log: tuple[EventSpec, ...] = tuple(
            sorted(setup.events, key=lambda ev: (_sort_key(ev.at), ev.id))
        )
        self.final = len(self.log) if setup.final is None else setup.final
        self._recorded = 0

    def covered(self, cut: Cut) -> int:
        """How many events (a prefix of the log) have their position in ``D(cut)``."""
        low, high = 0, len(self.log)
        while low < high:
            middle = (low + high) // 2
            if covers(self.order, cut, self.log[middle].at):
                low = middle + 1
            else:
                high = middle
        return low

    def recorded(self, outcomes: Mapping[str, str]) -> int:
        """The length of the longest prefix of the log whose events all have an outcome.

        Outcomes are never removed, so the prefix only grows: the scan resumes
        where it stopped last time.
        """
        while self._recorded < len(self.log) and self.log[self._recorded].id in outcomes:
            self._recorded += 1
        return self._recorded

    def cover(self, j: int) -> Cut:
        """The claim covering exactly ``log[:j]`` (``complete`` once ``j`` reaches the end)."""
        n = len(self.log)
        if j >= n:
            return self.complete()
        nxt = self.log[j].at
        if j == 0:
            return Cut.before(nxt) if self.style is ClaimStyle.BEFORE else NOTHING
        prev = self.log[j - 1].at
        if self.order.compare(prev, nxt) == 0 or self.style is ClaimStyle.BEFORE:
            return Cut.before(nxt)
        return Cut.through(prev)

    def complete(self) -> Cut:
        """What the source vouches for once the whole log is final."""
        if self.end is not None:
            return Cut.before(self.end)
        if self.log:
            return Cut.through(self.log[-1].at)
        return NOTHING

    def horizon(self) -> Cut:
        """The strongest cut the source can truthfully call final now."""
        return self.cover(self.final)

    def within(self, cut: Cut) -> list[EventSpec]:
        """The events whose position is in ``D(cut)``."""
        return [ev for ev in self.log if covers(self.order, cut, ev.at)]


def _sort_key(at: Coordinate) -> tuple[int, int | str]:
    return (0, at) if isinstance(at, int) else (1, at)


#: Misconfigurations the environment can plant (an ``inject`` step): remove a member's
#: checkpoint, store one of another scope, a previous epoch's, a provisional one, or a
#: checkpoint of a partition that is no member of the epoch (a retired partition's,
#: which must not pin the frontier: docs/semantics.md section 8).
INJECT_KINDS: tuple[str, ...] = (
    "missing",
    "wrong_scope",
    "wrong_epoch",
    "provisional",
    "non_member",
)

#: The misconfigurations planted in the key of a reader under test (see World.can_inject).
#: A provisional checkpoint planted there is a reader's own progress (see World.inject):
#: resuming from its token is allowed, counting its cut as coverage is not.
READER_INJECT_KINDS: tuple[str, ...] = ("wrong_scope", "wrong_epoch", "provisional")

#: The name a ``non_member`` checkpoint is stored under: a partition no epoch lists.
RETIRED_SUFFIX = "~retired"


@dataclass(frozen=True, slots=True)
class ScriptedPage:
    """A page the provider serves as scripted (schedule step ``serve``): event ids of
    the ground truth, the continuation token, and the claim, if any, untrusted."""

    events: tuple[EventSpec, ...]
    next_token: str | None
    claim: Claim | None


@dataclass
class Stored:
    """A checkpoint in the store and whether the harness put it there as a misconfiguration."""

    checkpoint: Checkpoint
    injected: bool = False


@dataclass
class World:
    """One run's durable state and ground truth (see the module docstring)."""

    setup: WorldSetup
    epoch_index: int = 0
    memberships: dict[int, Membership] = field(default_factory=dict)
    truth: dict[tuple[int, str], PartitionTruth] = field(default_factory=dict)
    record: Record = field(default_factory=lambda: Record(epoch=0))
    checkpoints: dict[tuple[int, str], Stored] = field(default_factory=dict)
    #: The strongest *valid* final checkpoint cut ever stored per key (support for claims).
    certified: dict[tuple[int, str], Cut] = field(default_factory=dict)
    outcomes: dict[str, str] = field(default_factory=dict)
    #: The strongest final claim the provider ever made per key.
    final_claims: dict[tuple[int, str], Cut] = field(default_factory=dict)
    env_progress: dict[tuple[int, str], int] = field(default_factory=dict)
    tokens: dict[str, tuple[int, str, int]] = field(default_factory=dict)
    op_ids: dict[str, tuple[str, int]] = field(default_factory=dict)
    #: Scripted pages per (epoch, partition) and token; a key listed here is served
    #: from its script only.
    script: dict[tuple[int, str], dict[str | None, ScriptedPage]] = field(default_factory=dict)
    #: How many more fetches of a scripted (epoch, partition, token) time out first.
    page_losses: dict[tuple[int, str, str | None], int] = field(default_factory=dict)
    _serial: int = 0

    @staticmethod
    def create(setup: WorldSetup) -> World:
        world = World(setup)
        for epoch in setup.epochs:
            for part in epoch.partitions:
                world.truth[(epoch.epoch, part.name)] = PartitionTruth(
                    epoch.epoch, part, setup.order
                )
        first = setup.epochs[0]
        world.memberships[first.epoch] = world.membership_of(0)
        world.record = Record(epoch=first.epoch)
        return world

    @property
    def order(self) -> Order:
        return self.setup.order

    @property
    def epoch(self) -> int:
        """The current (highest durable) membership epoch."""
        return self.setup.epochs[self.epoch_index].epoch

    @property
    def membership(self) -> Membership:
        return self.memberships[self.epoch]

    def membership_of(self, index: int) -> Membership:
        epoch = self.setup.epochs[index]
        orders = {self.order.name: self.order}
        for p in epoch.partitions:
            if p.order is not None:
                orders[p.order] = dataclasses.replace(self.order, name=p.order)
        return Membership(
            epoch=epoch.epoch,
            scope=self.setup.scope,
            partitions={p.name: p.order or self.order.name for p in epoch.partitions},
            orders=orders,
        )

    def order_of(self, epoch: int, partition: str) -> Order:
        """The order of ``partition`` in ``epoch`` (the world's unless the setup names another)."""
        for e in self.setup.epochs:
            if e.epoch == epoch:
                for p in e.partitions:
                    if p.name == partition and p.order is not None:
                        return dataclasses.replace(self.order, name=p.order)
        return self.order

    def members(self) -> list[str]:
        return sorted(self.membership.partitions)

    # --- provider ----------------------------------------------------------------------

    def token_for(self, epoch: int, partition: str, index: int) -> str:
        self._serial += 1
        token = f"{partition}@{epoch}:{index}#{self._serial}"
        self.tokens[token] = (epoch, partition, index)
        return token

    def page(self, epoch: int, partition: str, index: int, mode: str) -> Page:
        """The page at ``index`` of the partition's log, shaped by ``mode``.

        ``ok``: the next ``page_size`` events and the claim covering everything
        up to the page's end (final only if all of it is finalized);
        ``overlap``: the same but starting one event early (a repeat);
        ``empty``: no events, no claim, a fresh token for the same place;
        ``heartbeat``: no events, a fresh token for the same place, and the final
        claim covering everything enumerated so far (a source's heartbeat);
        ``noclaim``: events without a claim; ``horizon``: events with a final
        claim only up to what is finalized (weaker than the page's end).
        """
        truth = self.truth[(epoch, partition)]
        n = len(truth.log)
        if mode == "empty":
            return Page((), self.token_for(epoch, partition, index), None)
        if mode == "heartbeat":
            covered = truth.cover(min(index, truth.final))
            if covered.is_nothing:
                return Page((), self.token_for(epoch, partition, index), None)
            self._note_final_claim((epoch, partition), covered)
            return Page((), self.token_for(epoch, partition, index), Claim(covered, True))
        start = max(0, index - 1) if mode == "overlap" else index
        end = min(max(index, start) + self.setup.page_size, n)
        events = tuple(Event(ev.id, ev.at) for ev in truth.log[start:end])
        next_token = self.token_for(epoch, partition, end) if end < n else None
        claim: Claim | None = None
        if mode != "noclaim":
            if mode == "horizon":
                cut, final = truth.cover(min(end, truth.final)), True
            else:
                cut = truth.cover(end)
                final = compare(self.order, cut, truth.horizon()) <= 0
            if not cut.is_nothing:
                claim = Claim(cut, final)
                if final:
                    self._note_final_claim((epoch, partition), cut)
        return Page(events, next_token, claim)

    def serve(
        self,
        partition: str,
        token: str | None,
        events: tuple[str, ...],
        next_token: str | None,
        claim: Claim | None,
        lost: int,
    ) -> ScriptedPage:
        """Script the page a fetch of ``token`` gets from now on (current epoch).

        :class:`SetupError` when an event is not in the partition's ground truth
        of this epoch, the claim's cut does not fit the order, or a token is
        already the provider's for another partition or epoch. The claim is not
        checked here: whatever the SUT stores because of it is judged against
        the ground truth like any other checkpoint.
        """
        key = (self.epoch, partition)
        if partition not in self.membership.partitions:
            raise SetupError(f"serve: {partition!r} is not a member of epoch {self.epoch}")
        truth = {ev.id: ev for ev in self.truth[key].log}
        unknown = [e for e in events if e not in truth]
        if unknown:
            raise SetupError(
                f"serve: {', '.join(unknown)} not among {partition}'s events in epoch "
                f"{self.epoch}; a page carries events of the ground truth"
            )
        if claim is not None:
            try:
                claim.cut.validated(self.order, "serve.claim")
            except ValueError as exc:
                raise SetupError(str(exc)) from None
        for name in (token, next_token):
            if name is None:
                continue
            issued = self.tokens.get(name)
            owner = issued[:2] if issued is not None else None
            for other, pages in self.script.items():
                named = set(pages) | {p.next_token for p in pages.values()}
                if other != key and name in named:
                    owner = other
            if owner is not None and owner != key:
                raise SetupError(
                    f"serve: token {name!r} is already the provider's for {owner[1]} in epoch "
                    f"{owner[0]}; use another name"
                )
        page = ScriptedPage(tuple(truth[e] for e in events), next_token, claim)
        self.script.setdefault(key, {})[token] = page
        self.page_losses[(key[0], key[1], token)] = lost
        return page

    def scripted(self, epoch: int, partition: str) -> bool:
        """Whether this partition's pages come from the script (``serve`` steps)."""
        return (epoch, partition) in self.script

    def scripted_page(self, epoch: int, partition: str, token: str | None) -> Page | None:
        """The scripted answer to a fetch of ``token`` (None: this fetch times out).

        A token with no scripted page gets an empty page without claim or
        continuation (the source has nothing more yet). The continuation is
        registered as issued, and a final claim is noted as made.
        """
        losses = self.page_losses.get((epoch, partition, token), 0)
        if losses:
            self.page_losses[(epoch, partition, token)] = losses - 1
            return None
        scripted = self.script[(epoch, partition)].get(token)
        if scripted is None:
            return Page((), None, None)
        if scripted.next_token is not None:
            self.tokens.setdefault(scripted.next_token, (epoch, partition, -1))
        claim = scripted.claim
        if claim is not None and claim.final and not claim.cut.is_nothing:
            self._note_final_claim((epoch, partition), claim.cut)
        events = tuple(Event(ev.id, ev.at) for ev in scripted.events)
        return Page(events, scripted.next_token, claim)

    def _note_final_claim(self, key: tuple[int, str], cut: Cut) -> None:
        best = self.final_claims.get(key)
        if best is None or compare(self.order, cut, best) > 0:
            self.final_claims[key] = cut

    # --- stores -----------------------------------------------------------------------

    def stored(self, epoch: int, partition: str) -> Checkpoint | None:
        entry = self.checkpoints.get((epoch, partition))
        return None if entry is None else entry.checkpoint

    def checkpoints_of(self, epoch: int) -> list[Checkpoint]:
        found = [s.checkpoint for (e, _), s in self.checkpoints.items() if e == epoch]
        return sorted(found, key=lambda c: c.partition)

    def is_valid(self, key: tuple[int, str], checkpoint: Checkpoint) -> bool:
        """A checkpoint that may support a claim: final, of its key's epoch and the scope."""
        return (
            checkpoint.epoch == key[0]
            and checkpoint.partition == key[1]
            and checkpoint.scope == self.setup.scope
            and checkpoint.finality is Finality.FINAL
        )

    def store_checkpoint(
        self, key: tuple[int, str], checkpoint: Checkpoint, injected: bool = False
    ) -> Checkpoint:
        previous = self.stored(*key)
        generation = 1 if previous is None else previous.generation + 1
        stored = dataclasses.replace(checkpoint, generation=generation)
        self.checkpoints[key] = Stored(stored, injected)
        if not injected and self.is_valid(key, stored):
            best = self.certified.get(key)
            if best is None or compare(self.order, stored.cut, best) > 0:
                self.certified[key] = stored.cut
        return stored

    # --- environment steps --------------------------------------------------------------

    def can_advance(self, partition: str) -> bool:
        if not self.setup.env_checkpoints or partition not in self.membership.partitions:
            return False
        truth = self.truth[(self.epoch, partition)]
        return self.env_progress.get((self.epoch, partition), 0) < max(len(truth.log), 1)

    def advance(self, partition: str) -> Checkpoint:
        """An honest reader certifies the partition's next true cut (finalizing as needed)."""
        key = (self.epoch, partition)
        truth = self.truth[key]
        j = self.env_progress.get(key, 0) + 1
        self.env_progress[key] = j
        truth.final = max(truth.final, min(j, len(truth.log)))
        for ev in truth.log[:j]:
            self.outcomes.setdefault(ev.id, "processed")
        cut = truth.cover(j)
        self._note_final_claim(key, cut)
        checkpoint = Checkpoint(
            partition, cut, f"env-{j}", 1, self.setup.scope, self.epoch, Finality.FINAL
        )
        return self.store_checkpoint(key, checkpoint)

    def can_certify(self, partition: str, cut: Cut) -> bool:
        """An honest reader only certifies a cut of the order ahead of the stored one
        (a misconfigured checkpoint it simply replaces); ``nothing`` only as the first
        checkpoint, a resume position that certifies no coverage yet."""
        if partition not in self.membership.partitions:
            return False
        if cut.is_nothing:
            return (self.epoch, partition) not in self.checkpoints
        try:
            cut.validated(self.order, "certify.cut")
        except ValueError:
            return False
        entry = self.checkpoints.get((self.epoch, partition))
        if entry is None or entry.injected:
            return True
        return compare(self.order, cut, entry.checkpoint.cut) > 0

    def certify(self, partition: str, cut: Cut) -> tuple[Stored | None, Checkpoint]:
        """An honest reader certifies exactly ``cut``: the source finalizes the events
        of its downset, their outcomes become durable, the provider's final claim
        is noted and the checkpoint stored. Returns what the store held before and
        the stored checkpoint (for the same judgement as a SUT's write).

        The checkpoint's token is a real resume point: the provider's token for the
        first event past the cut, or, for a scripted partition, the token already
        stored for it (None when there is none), so a SUT reader resuming from it
        is never handed a token the provider did not issue.
        """
        key = (self.epoch, partition)
        truth = self.truth[key]
        covered = truth.covered(cut)
        truth.final = max(truth.final, covered)
        for ev in truth.log[:covered]:
            self.outcomes.setdefault(ev.id, "processed")
        self.env_progress[key] = max(self.env_progress.get(key, 0), covered)
        self._note_final_claim(key, cut)
        before = self.checkpoints.get(key)
        token: str | None = None
        if self.scripted(*key):
            held = None if before is None else before.checkpoint.token
            if held is not None and self.tokens.get(held, (0, "", 0))[:2] == key:
                token = held
        elif covered < len(truth.log):
            token = self.token_for(key[0], partition, covered)
        checkpoint = Checkpoint(
            partition, cut, token, 1, self.setup.scope, self.epoch, Finality.FINAL
        )
        return before, self.store_checkpoint(key, checkpoint)

    def _plant_progress(self, key: tuple[int, str]) -> Checkpoint:
        """A provisional checkpoint in a reader's own key, as a reader's own progress.

        Every finalized event has a durable outcome (the progress was real) and the
        token resumes right after them (a provider token, or None at the end of the
        log), so a reader may resume from it (docs/semantics.md section 8). Its cut
        claims the whole log, more than the source has made final while any event
        is not: a reader that counts it as coverage (certifies it) breaks
        ``checkpoint_truth``. Cost: O(events of the partition).
        """
        truth = self.truth[key]
        done = truth.final
        for ev in truth.log[:done]:
            self.outcomes.setdefault(ev.id, "processed")
        token = self.token_for(key[0], key[1], done) if done < len(truth.log) else None
        progress = Checkpoint(
            key[1], truth.complete(), token, 1, self.setup.scope, key[0], Finality.PROVISIONAL
        )
        return self.store_checkpoint(key, progress, injected=True)

    def can_finalize(self, partition: str) -> bool:
        if partition not in self.membership.partitions:
            return False
        truth = self.truth[(self.epoch, partition)]
        return truth.final < len(truth.log)

    def finalize(self, partition: str) -> EventSpec:
        """The source finalizes the next event of the partition's log."""
        truth = self.truth[(self.epoch, partition)]
        event = truth.log[truth.final]
        truth.final += 1
        return event

    def can_reshard(self) -> bool:
        return self.epoch_index + 1 < len(self.setup.epochs)

    def reshard(self) -> Membership:
        """The next epoch's membership becomes durable (before any of its checkpoints)."""
        self.epoch_index += 1
        self.memberships[self.epoch] = self.membership_of(self.epoch_index)
        return self.membership

    def can_inject(self, partition: str, kind: str) -> bool:
        """Misconfigurations reach the publishers' reads (``env_checkpoints`` worlds), and in
        a world of readers only, a checkpoint of another scope or epoch in a reader's own
        key: its token is another query's or another membership's, never a resume
        position; or a provisional one, planted as a reader's own progress (its token
        is a real resume position, its cut claims more than is certified)."""
        if partition not in self.membership.partitions:
            return False
        if not self.setup.env_checkpoints:
            return bool(self.setup.readers) and kind in READER_INJECT_KINDS
        if kind == "missing":
            return (self.epoch, partition) in self.checkpoints
        if kind == "non_member":
            return (self.epoch, partition + RETIRED_SUFFIX) not in self.checkpoints
        return kind in INJECT_KINDS

    def inject(self, partition: str, kind: str, cut: Cut | None = None) -> Checkpoint | None:
        """Put a misconfigured checkpoint in the store (or remove one: ``missing``).

        Without ``cut`` the injected cut claims the partition's whole log, events
        without outcomes included, so a publisher that trusts it publishes an
        untrue claim, and ``wrong_epoch`` copies the previous epoch's checkpoint
        when there is one (the realistic mistake after a reshard). With ``cut``
        the checkpoint claims exactly that cut (``wrong_epoch``: stamped with the
        previous epoch).
        """
        key = (self.epoch, partition)
        if kind == "missing":
            del self.checkpoints[key]
            return None
        if kind == "non_member":
            # A retired partition's checkpoint, stamped with this epoch and scope, that
            # certified nothing: a merge that does not ignore it withholds no_coverage.
            name = partition + RETIRED_SUFFIX
            retired = Checkpoint(
                name, cut or NOTHING, "retired", 1, self.setup.scope, self.epoch, Finality.FINAL
            )
            return self.store_checkpoint((self.epoch, name), retired, injected=True)
        top = self.truth[key].complete()
        scope, epoch, finality = self.setup.scope, self.epoch, Finality.FINAL
        token: str | None = "misconfigured"
        if kind == "wrong_scope":
            scope = f"not-{self.setup.scope}"
        elif kind == "provisional":
            finality = Finality.PROVISIONAL
            if cut is None and not self.setup.env_checkpoints:
                return self._plant_progress(key)
        else:
            older = None
            if self.epoch_index > 0:
                older = self.stored(self.setup.epochs[self.epoch_index - 1].epoch, partition)
            if older is not None and cut is None:
                top, epoch, token = older.cut, older.epoch, older.token
            elif cut is not None and self.epoch_index > 0:
                epoch = self.setup.epochs[self.epoch_index - 1].epoch
            else:
                epoch = self.epoch - 1
        if cut is not None:
            top = cut.validated(self.order, "inject.cut")
        return self.store_checkpoint(
            key, Checkpoint(partition, top, token, 1, scope, epoch, finality), injected=True
        )
