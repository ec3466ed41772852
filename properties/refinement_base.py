"""The refinement machine's shared state: bounds, per-process bookkeeping, model helpers.

:class:`MachineBase` holds what every side of the lockstep machine reads and
writes (the model state, the implementation's processes, the trace) and the
helpers they share: finding the model transition that stands for an
implementation call, advancing the model, failing an example with every
finding. The publisher side (:mod:`fencepost.properties.refinement_publishers`),
the reader side (:mod:`fencepost.properties.refinement_readers`) and the
abstraction (:mod:`fencepost.properties.refinement_abstraction`) extend it;
:mod:`fencepost.properties.refinement_machine` puts them together with the
Hypothesis rules.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import ClassVar, Protocol

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine

from fencepost.impl.provider import Event
from fencepost.impl.publisher import Outcome, Policy, Publisher, PublishResult
from fencepost.impl.reader import PartitionReader
from fencepost.impl.records import Membership
from fencepost.impl.stores import IndefiniteStoreError, Store
from fencepost.model.config import ModelConfig
from fencepost.model.cuts import Cut as MCut
from fencepost.model.cuts import rank
from fencepost.model.machine import successors
from fencepost.model.state import Action, Context, History, State
from fencepost.properties.backends import StoreBackend
from fencepost.properties.coordinates import Coordinates
from fencepost.properties.lockstep import GATED_SUMMARY_STORE, Call, Reply, Worker
from fencepost.properties.refinement_report import (
    Finding,
    RefinementFailure,
    RunStats,
    coverage_key,
)

Move = tuple[Action, State]


class Planted(Protocol):
    """A known bug planted into the implementation (an entry of the mutant catalog).

    ``publisher`` / ``reader`` replace the production classes for the run;
    ``shows_as`` names the refinement findings that expose it.
    """

    @property
    def name(self) -> str: ...
    @property
    def publisher(self) -> type[Publisher]: ...
    @property
    def reader(self) -> type[PartitionReader]: ...
    @property
    def shows_as(self) -> frozenset[str]: ...


# --- bounds of the lockstep run ----------------------------------------------------

#: Publisher processes running at once; crashed ones are replaced by spare model publishers.
PUBLISHER_SLOTS = 2
SPARE_PUBLISHERS = 2
PARTITIONS = 2
#: Reader processes per partition; each drives a model reader, and moves on to a spare
#: one when the model's pass budget of its reader is spent.
READERS_PER_PARTITION = 2
SPARE_READERS = 2
EPOCHS = 3
RETRIES = 1
#: Default rule invocations per example (Hypothesis ``stateful_step_count``).
DEFAULT_STEPS = 50

SCOPE = "q1"
OUTCOME = "processed"

#: Own-event layouts per partition (coordinate units); several events share a coordinate.
DENSE_LAYOUTS: tuple[tuple[float, ...], ...] = ((0, 0, 0.5), (0, 0.5, 1), (0, 1, 1.5))
SUCCESSOR_LAYOUTS: tuple[tuple[float, ...], ...] = ((0, 0, 1), (0, 1, 1), (0, 0, 0))

#: What happens to a write's response, drawn for each write: "ack" (no fault) first and
#: most often, so shrinking removes faults that are not needed.
PUBLICATION_FAULTS = ("ack", "ack", "lose_after", "lose_before", "in_flight")
#: A running publisher is offered this many plain calls per crash.
CALLS_PER_CRASH = 4
CHECKPOINT_FAULTS = ("ack", "ack", "lose_after", "lose_before")

END_PASS = "end the pass: an empty last page without a next token"

#: A publisher's read of its epoch's checkpoints: the whole vector, or the store's merge
#: summary of it (one atomic read of the same durable state: fencepost.impl.merge). Either
#: stands for the model's ``read_checkpoints``; the decision made from it is then compared.
CHECKPOINT_READS = ("read_checkpoints", "read_merge_summary")


# --- per-process bookkeeping ---------------------------------------------------------


@dataclass
class Attempt:
    """What the gate told one publication attempt, to judge what it may report."""

    acknowledged: tuple[int, MCut] | None = None
    lost: tuple[int, MCut] | None = None
    shown: bool = False


@dataclass(frozen=True, slots=True)
class Report:
    """A publisher's last reported outcome, as the invariants read it."""

    outcome: str
    reason: str
    justified: bool
    epoch: int
    proposal: MCut


@dataclass
class PublisherSlot:
    """One publisher process: its connection, the impl object, the model publisher it drives.

    ``worker`` is the running attempt (None between attempts); after a crash
    the slot drives the next spare model publisher with a fresh process.
    """

    slot: int
    model: int
    connection: Store
    publisher: Publisher
    worker: Worker | None = None
    attempt: Attempt = field(default_factory=Attempt)
    #: The durable state its last attempt started from, and whether that attempt gave up.
    trigger: object = None
    again: bool = False


@dataclass
class ReaderSlot:
    """One reader process of a partition and the model reader (``index``) it drives.

    ``worker`` is the running pass; ``revoked`` whether a reshard revoked it
    (it is ended at its next fetch); ``page`` the event ids of the last page
    served; ``epoch`` the pass's epoch.
    """

    partition: int
    slot: int
    index: int
    connection: Store
    worker: Worker | None = None
    revoked: bool = False
    page: tuple[str, ...] = ()
    epoch: int = 0


@dataclass(frozen=True, slots=True)
class Held:
    """A publication write whose response timed out while it was still in flight."""

    model: int
    call: Call


def handle_event(event: Event) -> str:
    return OUTCOME


def describe_result(result: PublishResult) -> str:
    if result.outcome is Outcome.WITHHELD and result.reason is not None:
        return f"withheld ({result.reason.value})"
    if result.outcome in (Outcome.PUBLISHED, Outcome.CONFIRMED):
        return f"{result.outcome.value} (epoch {result.epoch}, {result.cut})"
    return str(result.outcome.value)


# --- the shared state -----------------------------------------------------------------


class MachineBase(RuleBasedStateMachine):
    """State and helpers shared by every side of the refinement machine.

    Subclasses made by :func:`fencepost.properties.refinement_machine.refinement_machine`
    fix the backend, the implementation classes (production or a planted
    mutant) and the counters.
    """

    backend: ClassVar[StoreBackend]
    mutant: ClassVar[Planted | None] = None
    stats: ClassVar[RunStats]

    # Set by setup (fencepost.properties.refinement_machine.RefinementMachine.setup).
    config: ModelConfig
    model: State
    ctx: Context
    _coords: Coordinates
    _policy: Policy
    _stream: str
    _publisher_cls: type[Publisher]
    _reader_cls: type[PartitionReader]
    _env: Store
    _observer: Store
    _pubs: list[PublisherSlot]
    _spares: list[int]
    _readers: list[list[ReaderSlot]]
    _spare_readers: list[list[int]]
    _held: list[Held]
    _reports: dict[int, Report]
    _history: History
    _peaks: list[list[MCut]]

    def __init__(self) -> None:
        super().__init__()
        self._ready = False
        self._trace: list[str] = []
        self._current = "setup"
        self._kinds: set[str] = set()
        self._connections: list[Store] = []

    def _connect(self) -> Store:
        store = self.backend.connect()
        self._connections.append(store)
        return store

    def _reconnect(self, old: Store) -> Store:
        self.backend.release(old)
        with contextlib.suppress(ValueError):
            self._connections.remove(old)
        return self._connect()

    def _membership(self, epoch: int) -> Membership:
        order = self._coords.order
        return Membership(
            epoch, SCOPE, {p: order.name for p in self.ctx.partition_names}, {order.name: order}
        )

    def _new_publisher(self, model: int) -> Publisher:
        return self._publisher_cls(
            GATED_SUMMARY_STORE,  # production publishers decide from the store's summary
            self._stream,
            self.ctx.publisher_names[model],
            policy=self._policy,
            max_retries=RETRIES,
        )

    # ------------------------------------------------------------------ model helpers
    def _moves(self, kind: str, actor: str | None = None) -> list[Move]:
        return [
            (a, s)
            for a, s in successors(self.model)
            if a.kind == kind and (actor is None or a.actor == actor)
        ]

    def _one(self, kind: str, actor: str, keep: Callable[[Action], bool] = bool) -> Move | None:
        found = [(a, s) for a, s in self._moves(kind, actor) if keep(a)]
        if len(found) > 1:
            shown = "; ".join(a.describe() for a, _ in found)
            raise AssertionError(f"harness: several model moves match {kind} of {actor}: {shown}")
        return found[0] if found else None

    def _advance(self, move: Move, note: str = "") -> None:
        action, state = move
        self.model = state
        key = coverage_key(action)
        self._kinds.add(key)
        self.stats.coverage[key] += 1
        self._trace.append(f"model: {action.describe()}{note}")

    def _rank(self, cut: MCut) -> int:
        return rank(cut, self.config.successor)

    def _step(self, what: str) -> None:
        self.stats.steps += 1
        self._current = what
        self._trace.append(f"step: {what}")

    # ------------------------------------------------------------------ failing
    def _fail(self, name: str, message: str, land: Worker | None = None) -> None:
        """Stop the example: the mismatch, plus what the durable state shows now.

        With ``land``, a write the worker is about to make (one the model would
        not make) is applied first, so the report also names the section-7
        invariants it breaks. Invariant findings come before state differences.
        """
        findings = [Finding("mismatch", name, message)]
        pending = None if land is None else land.pending
        if land is not None and pending is not None and pending.op.startswith("write_"):
            with contextlib.suppress(Exception):
                land.perform(pending)
                self._trace.append("impl: the write is applied anyway, to see what it breaks")
        with contextlib.suppress(Exception):
            judged = self._judge()
            findings.extend(sorted(judged, key=lambda f: f.kind != "invariant"))
        raise RefinementFailure(self._current, findings, self._trace)

    def _release_write(
        self, worker: Worker, call: Call, fault: str, applied_type: type
    ) -> tuple[str, Reply]:
        """Release a conditional write under ``fault``; the outcome in the model's words.

        ``ack``: the store runs it and the caller sees the reply (``ok`` or
        ``conflict``); ``lose_after``: the store runs it and the reply is lost
        (``lost-applied`` or ``lost-not-applied``, by what the store did);
        ``lose_before``: the request is lost before the store, so nothing is applied.
        ``applied_type`` is the store's reply type for an applied write.
        """
        lost = IndefiniteStoreError(f"injected: the response to {call} was lost")
        if fault not in ("ack", "lose_after"):
            return "lost-not-applied", Reply(error=lost)
        written = worker.perform(call)
        applied = isinstance(written, applied_type)
        self._trace.append(f"impl: the store {'applies' if applied else 'refuses'} it")
        if fault == "ack":
            return ("ok" if applied else "conflict"), Reply(written)
        return ("lost-applied" if applied else "lost-not-applied"), Reply(error=lost)

    def _pick(self, data: st.DataObject, label: str, options: Sequence[str]) -> int:
        return list(options).index(data.draw(st.sampled_from(options), label=label))

    def _judge(self) -> list[Finding]:
        """Every finding on the current state (the abstraction side implements it)."""
        raise NotImplementedError
