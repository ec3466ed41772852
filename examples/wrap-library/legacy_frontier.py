"""legacy_frontier: an EXISTING library publishing merged frontiers (it knows nothing of fencepost).

It stands for code you already have and do not want to rewrite: its own types
(a ``Position`` is a value plus ``inclusive``, not fencepost's ``before``/``through``
cut; ``None`` is "nothing yet"), its own storage interface (:class:`Store`, which
raises :class:`Conflict` and :class:`Lost`), its own results (:class:`Outcome`).
docs/wrapping.md shows how ``adapter.py`` puts it behind fencepost's conformance
protocol without changing a line of it, and examples/wrap-http puts the same
library behind an HTTP service.

What it decides follows docs/semantics.md: positions compare by the set of
events they cover (section 2), a merge is the lowest member position or a
reason to withhold (section 4), a publication moves the record only forward
within an epoch and past the old claim at a cutover under ``monotone``
(sections 5 and 6), a lost write is settled by reading the record back, never
assumed. Cost: a merge is linear in the checkpoints; one publication makes at
most ``3 + 2 * retries`` store calls.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class Order:
    """How positions of a partition are ordered: integers (``discrete``: each has a
    successor, so "up to 5 inclusive" is "up to 6 exclusive") or strings."""

    name: str
    numeric: bool
    discrete: bool = False


@dataclass(frozen=True)
class Position:
    """Everything below ``value`` (``inclusive``: and at it) is covered."""

    value: int | str
    inclusive: bool


def _rank(order: Order, p: Position) -> tuple[int | str, int]:
    if order.numeric and order.discrete and p.inclusive:
        assert isinstance(p.value, int)
        return (p.value + 1, 0)
    return (p.value, 1 if p.inclusive else 0)


def compare(order: Order, a: Position | None, b: Position | None) -> int:
    """-1, 0 or 1 as ``a`` covers less than, the same as or more than ``b``."""
    if a is None or b is None:
        return (a is not None) - (b is not None)
    ra, rb = _rank(order, a), _rank(order, b)
    return (ra > rb) - (ra < rb)


@dataclass(frozen=True)
class Checkpoint:
    partition: str
    position: Position | None
    final: bool
    scope: str
    epoch: int


@dataclass(frozen=True)
class Membership:
    epoch: int
    scope: str
    partitions: dict[str, str]  # partition -> the name of its order
    orders: dict[str, Order]


class Withheld(Exception):
    """No frontier can be claimed; ``reason`` is one of docs/semantics.md section 4."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def merge(membership: Membership, checkpoints: list[Checkpoint]) -> Position:
    """The lowest member position, or :class:`Withheld`. Non-members are ignored;
    two checkpoints for one member are a ValueError (the caller's data is wrong)."""
    vector: dict[str, Checkpoint] = {}
    for cp in checkpoints:
        if cp.partition in membership.partitions:
            if cp.partition in vector:
                raise ValueError(f"two checkpoints for member {cp.partition}")
            vector[cp.partition] = cp
    if len(vector) < len(membership.partitions):
        raise Withheld("missing_checkpoint")
    if any(cp.epoch != membership.epoch for cp in vector.values()):
        raise Withheld("epoch_mismatch")
    if any(cp.scope != membership.scope for cp in vector.values()):
        raise Withheld("scope_mismatch")
    if not all(cp.final for cp in vector.values()):
        raise Withheld("unsupported_finality")
    if len(set(membership.partitions.values())) > 1:
        raise Withheld("incomparable")
    positions = [cp.position for cp in vector.values()]
    if not positions or any(p is None for p in positions):
        raise Withheld("no_coverage")  # no member, or one that covers nothing yet
    order = membership.orders[next(iter(membership.partitions.values()))]
    lowest = positions[0]
    for p in positions[1:]:
        assert p is not None and lowest is not None
        c = compare(order, p, lowest)
        tie_lower = isinstance(p.value, int) and isinstance(lowest.value, int)
        if c < 0 or (c == 0 and tie_lower and p.value < lowest.value):  # type: ignore[operator]
            lowest = p
    assert lowest is not None
    return lowest


@dataclass(frozen=True)
class Record:
    """The published claim: ``position`` of ``epoch``, at ``revision`` of the store."""

    epoch: int
    position: Position | None
    revision: int
    op_id: str | None


class Conflict(Exception):
    """The store's revision moved: ``current`` is the record now stored."""

    def __init__(self, current: Record) -> None:
        super().__init__("conflict")
        self.current = current


class Lost(Exception):
    """The store's answer was lost: a write may or may not have been applied."""


class Store(Protocol):
    """Where the library keeps and reads its state (a database, a service...)."""

    def read_publication(self, stream: str) -> Record: ...
    def read_membership(self, stream: str) -> Membership: ...
    def read_checkpoints(self, stream: str, epoch: int) -> list[Checkpoint]: ...
    def write_publication(
        self, stream: str, expected_revision: int, epoch: int, position: Position, op_id: str
    ) -> Record: ...


@dataclass(frozen=True)
class Outcome:
    """``kind``: published, confirmed, unchanged, withheld (with ``reason``), gave_up."""

    kind: str
    epoch: int | None
    position: Position | None
    reason: str | None = None


class GiveUp(Exception):
    pass


class Publisher:
    """Publication attempts against one :class:`Store`; ``retries`` conflicts and lost
    answers are tolerated per attempt before it gives up (honestly: it then reports
    the latest record it was shown, never what it tried to write)."""

    def __init__(self, store: Store, retries: int = 4) -> None:
        self.store = store
        self.retries = retries

    def publish(self, stream: str, policy: str, op_id: str) -> Outcome:
        """One attempt. ``policy``: ``monotone`` or ``reset`` (docs/semantics.md 6).
        ``op_id`` must name this attempt alone; retries inside it reuse it."""
        attempt = _Attempt(self, stream, policy, op_id)
        try:
            return attempt.run()
        except GiveUp:
            shown = attempt.shown
            if shown is None:
                return Outcome("gave_up", None, None)
            return Outcome("gave_up", shown.epoch, shown.position)


class _Attempt:
    def __init__(self, publisher: Publisher, stream: str, policy: str, op_id: str) -> None:
        self.store = publisher.store
        self.budget = publisher.retries
        self.stream, self.policy, self.op_id = stream, policy, op_id
        self.shown: Record | None = None  # the latest record this attempt was shown

    def trouble(self) -> None:
        self.budget -= 1
        if self.budget < 0:
            raise GiveUp()

    def show(self, record: Record) -> Record:
        self.shown = record
        return record

    def read_record(self) -> Record:
        while True:
            try:
                return self.show(self.store.read_publication(self.stream))
            except Lost:
                self.trouble()

    def read_membership(self) -> Membership:
        while True:
            try:
                return self.store.read_membership(self.stream)
            except Lost:
                self.trouble()

    def read_checkpoints(self, epoch: int) -> list[Checkpoint]:
        while True:
            try:
                return self.store.read_checkpoints(self.stream, epoch)
            except Lost:
                self.trouble()

    def stay(self, kind: str, reason: str | None = None) -> Outcome:
        assert self.shown is not None
        return Outcome(kind, self.shown.epoch, self.shown.position, reason)

    def run(self) -> Outcome:
        record = self.read_record()
        while True:
            membership = self.read_membership()
            if membership.epoch < record.epoch:
                return self.stay("withheld", "epoch_mismatch")  # never go back an epoch
            try:
                position = merge(membership, self.read_checkpoints(membership.epoch))
            except Withheld as withheld:
                return self.stay("withheld", withheld.reason)
            order = membership.orders[next(iter(membership.partitions.values()))]
            behind = compare(order, position, record.position)
            if membership.epoch == record.epoch and behind <= 0:
                return self.stay("unchanged")
            if membership.epoch > record.epoch and self.policy == "monotone" and behind < 0:
                return self.stay("withheld", "cutover_pending")
            try:
                self.show(
                    self.store.write_publication(
                        self.stream, record.revision, membership.epoch, position, self.op_id
                    )
                )
                return Outcome("published", membership.epoch, position)
            except Conflict as conflict:  # decide again from the record now stored
                record = self.show(conflict.current)
                self.trouble()
            except Lost:  # applied or not: read it back, never assume
                self.trouble()
                record = self.read_record()
                if (
                    record.epoch == membership.epoch
                    and compare(order, record.position, position) >= 0
                ):
                    return Outcome("confirmed", membership.epoch, position)
