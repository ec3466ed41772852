"""Refinement check: the production implementation, step for step inside the formal model.

A Hypothesis :class:`~hypothesis.stateful.RuleBasedStateMachine` runs the
model's ``composed`` configuration (ingest and publication together,
:mod:`fencepost.model.machine`) and the implementation
(:class:`~fencepost.impl.publisher.Publisher`,
:class:`~fencepost.impl.reader.PartitionReader` and a real store) in lockstep.
Entry point: :func:`run_refinement`; backends: :func:`memory_backend`,
:func:`sqlite_backend`, :func:`postgres_backend` (any store factory).

**How the two are driven.** Every publication attempt and every ingest pass
runs in its own thread over a gated store (:mod:`fencepost.properties.lockstep`):
each store call it makes waits until a rule releases exactly that call, so
only one thread runs at a time and a run is reproducible call for call. The
controller performs a released call on that process's own store connection
and takes the one model transition that stands for it: a publisher's
``read_publication`` / ``read_membership`` / ``read_checkpoints`` (or
``read_merge_summary``, the store's atomic summary of the same vector) /
``write_publication``, a reader's ``read_checkpoint`` / ``fetch_page`` /
``record_outcomes`` / ``write_checkpoint``. The provider *is* the model: a
``fetch_page`` is answered with a page the model's provider may give at that
point (Hypothesis draws among all of them: several events at one coordinate,
empty pages, pages overlapping the previous one, final claims of both endpoint
kinds, non-final claims, no claim), translated to the implementation's events
and order (:class:`Coordinates`: integers with an exact successor, dense
integers, strings). Environment steps are model steps: the source finalizing
an event, and a reshard (a new membership epoch, written to the store first,
that moves an event into a partition below what it certified before).

**Rules.** ``publisher_step`` releases one store call of one publisher, or
crashes its process before the call (:class:`~fencepost.impl.faults.Crash`
raised into its thread; a SQLite connection is reopened from the file; the
restarted process drives a spare model publisher, the crashed one taking no
further step, as the model treats a stopped process). ``reader_step`` serves a
pass one page: a new pass first reads its checkpoint; the page's outcomes are
recorded and the checkpoint write its final claim leads to is released in the
same step (nothing durable happens in between; late retries arise from two
readers' passes interleaving page by page). ``source_finalizes``,
``reshard``, ``deliver_in_flight`` (a timed-out publication write reaching the
store late, or never). Faults are drawn per write: acknowledged, response lost
after the write applied, lost before, or (publication) still in flight.

**What is compared after every step** (the abstraction function maps the
implementation's durable state onto the model's state; they must agree):

- the current membership epoch, and every epoch's membership (all partitions,
  the stream's scope, the run's order);
- the publication record: epoch, cut (exactly, endpoint kind included),
  revision, and the writer named by its op_id (op_id counters differ: the
  implementation counts writes, the model attempts);
- for every (partition, epoch): whether a checkpoint is stored and then its
  cut, token, scope, epoch, finality and generation;
- the set of events with a durable terminal outcome.

**What must hold after every step:** every invariant of docs/semantics.md section 7
(:data:`fencepost.model.invariants.INVARIANTS`) evaluated on the *abstracted
implementation state*: ground truth (positions, source finality, moved
events) is the harness's, durable outcomes, checkpoints and the record are the
store's, and the observer memory (the record's and each checkpoint's peaks) is
kept from the store's own history. For ``lost_response_honesty`` each reported
outcome is judged from what the gate told that attempt: ``published`` needs an
acknowledged write, ``confirmed`` a record read after the lost response that
showed the claim. The model's own state is checked too (a broken model is
reported as such, never blamed on the implementation).

**Per call**, the implementation must do what the model allows in the same
interleaving: the next store call of a publisher or reader, its arguments
(the cut proposed, the revision or generation expected, the token fetched
from and written), the store's answer (applied or conflict), and every
attempt's reported outcome (published, confirmed, unchanged, withheld with its
reason, gave_up, with the claim). A difference stops the example with a
:class:`RefinementFailure` naming it, plus any invariant the store's state now
breaks.

**Bookkeeping where the implementation is finer or coarser than the model**
(equivalent on durable state):

- after a conflict, or an authoritative read that sends the attempt round
  again, the implementation rereads the record while the model keeps the
  record it was just given: the reread is released in the same step;
- the model's reader records a page's outcomes in one step, the
  implementation one event at a time: they are released together;
- after a checkpoint write the implementation's pass goes on from its own
  token holding the checkpoint now stored; the model's reader starts a new
  pass, reads that checkpoint and re-traverses (claim-less pages whose
  outcomes are durable) up to the same token. Where that is impossible (the
  stored token is ahead, the membership epoch moved on, the model reader's
  budget is spent) the pass is ended at its next fetch with an empty last page.

**Implementation settings fixed because the model has no transition for
them** (named in the report): readers run with ``max_retries=0`` (no
immediate rewrite after losing a generation race: the model's reader ends its
pass instead), ``save_progress=False`` (no token-only checkpoint writes), one
:class:`PartitionReader` per pass (no resuming past the stored token), and no
read timeouts are injected (the model's publisher gives up on one, the
implementation's retries).

**Steering** (what keeps 50 steps interesting; it narrows nothing the model
allows): a publisher starts an attempt when what it reads changed since its
last one or that one gave up; slots are drawn among those able to act; pages
with a final claim are offered twice; some events may be final from the start;
a reshard comes once the epoch has a published claim and ends the old epoch's
passes; Hypothesis' target phase climbs the number of distinct kinds of
transitions and the record's epoch.
"""

from __future__ import annotations

import contextlib
import itertools
import re
import shutil
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from hypothesis import HealthCheck, Phase, settings, target
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st
from hypothesis.control import currently_in_test_context
from hypothesis.reporting import with_reporter
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from fencepost.impl.cuts import NOTHING as IMPL_NOTHING
from fencepost.impl.cuts import Cut, Endpoint
from fencepost.impl.faults import Crash
from fencepost.impl.memory import MemoryStore
from fencepost.impl.orders import Coordinate, IntegerOrder, Order, StringOrder
from fencepost.impl.provider import Claim, Event, Page
from fencepost.impl.publisher import Outcome, Policy, Publisher, PublishResult
from fencepost.impl.reader import PartitionReader
from fencepost.impl.records import Checkpoint, Finality, Membership, PublicationRecord
from fencepost.impl.stores import Applied, CheckpointApplied, IndefiniteStoreError, Store
from fencepost.model.config import ModelConfig
from fencepost.model.cuts import BEFORE, THROUGH, rank
from fencepost.model.cuts import NOTHING as MODEL_NOTHING
from fencepost.model.cuts import Cut as MCut
from fencepost.model.invariants import INVARIANTS
from fencepost.model.machine import initial, successors
from fencepost.model.state import (
    FETCHED,
    HAVE_MEMBERSHIP,
    HAVE_RECORD,
    IDLE,
    IN_DOUBT,
    MISSING,
    PROPOSING,
    PUBLISHER_PHASES,
    READER_PHASES,
    READING,
    Action,
    History,
    Record,
    State,
)
from fencepost.model.state import Checkpoint as MCheckpoint
from fencepost.model.state import Publisher as MPublisher
from fencepost.model.state import Reader as MReader
from fencepost.mutants import CATALOG, Variant
from fencepost.properties.lockstep import (
    GATED_PROVIDER,
    GATED_STORE,
    GATED_SUMMARY_STORE,
    Call,
    Reply,
    Worker,
)

Move = tuple[Action, State]

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


# --- coordinates -------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Coordinates:
    """The map between model coordinates (half units) and one implementation order.

    ``offsets``: integers with an exact successor; model coordinate ``x`` is
    ``x`` (events sit on integers only). ``millis``: integers without a
    successor; model half unit ``h`` is ``h``, so an event half-way between two
    claim coordinates sits on an odd number. ``keys``: strings by code point;
    ``x`` is ``"0x"`` and ``x + 0.5`` is ``"0x5"`` (``"00" < "005" < "01"``).
    """

    kind: str
    order: Order

    @property
    def successor(self) -> bool:
        return self.order.has_successor

    def to_impl(self, half: int) -> Coordinate:
        if self.kind == "offsets":
            return half // 2
        if self.kind == "millis":
            return half
        return f"{half // 2:02d}" + ("5" if half % 2 else "")

    def to_model(self, at: Coordinate) -> int | None:
        if self.kind == "keys":
            if not isinstance(at, str):
                return None
            found = re.fullmatch(r"(\d\d)(5?)", at)
            if found is None:
                return None
            return 2 * int(found.group(1)) + (1 if found.group(2) else 0)
        if not isinstance(at, int):
            return None
        return 2 * at if self.kind == "offsets" else at

    def cut_to_impl(self, cut: MCut) -> Cut:
        if cut == MODEL_NOTHING:
            return IMPL_NOTHING
        at = self.to_impl(cut.half)
        return Cut.through(at) if cut.kind == THROUGH else Cut.before(at)

    def cut_to_model(self, cut: Cut) -> MCut | None:
        """The model cut for an implementation cut; None if it names no model coordinate."""
        if cut.endpoint is Endpoint.NOTHING:
            return MODEL_NOTHING
        assert cut.at is not None
        half = self.to_model(cut.at)
        if half is None:
            return None
        return MCut(half, THROUGH if cut.endpoint is Endpoint.THROUGH else BEFORE)


ORDERS: dict[str, Coordinates] = {
    "offsets": Coordinates("offsets", IntegerOrder("offsets", successor_exact=True)),
    "millis": Coordinates("millis", IntegerOrder("millis", successor_exact=False)),
    "keys": Coordinates("keys", StringOrder("keys")),
}


def _token_to_model(token: str | None) -> int | None:
    """The model's provider cursor for an implementation token (None: not one we issued)."""
    if token is None:
        return 0
    return int(token) if token.isdigit() else None


# --- backends ----------------------------------------------------------------------


@dataclass(frozen=True)
class StoreBackend:
    """Where the implementation's durable state lives during a run.

    ``connect()`` opens a new process's connection to the run's one database
    (a restarted publisher gets a new one); ``release(store)`` closes such a
    connection, never the durable state; ``close()`` ends the run's database.
    Each example uses its own stream, so examples never see each other.
    """

    name: str
    connect: Callable[[], Store]
    release: Callable[[Store], None]
    close: Callable[[], None]


def memory_backend() -> StoreBackend:
    """One :class:`MemoryStore` shared by every process (a restart keeps its state)."""
    store = MemoryStore()
    return StoreBackend("memory", lambda: store, lambda _: None, store.close)


def sqlite_backend(path: Path) -> StoreBackend:
    """A SQLite file; every process opens its own connection, reopened after a crash."""
    from fencepost.impl.sqlite import SQLiteStore

    return StoreBackend("sqlite", lambda: SQLiteStore(path), lambda s: s.close(), lambda: None)


def shared_backend(name: str, store_factory: Callable[[], Store]) -> StoreBackend:
    """One thread-safe store, opened by ``store_factory`` on first use, for every process.

    The hook for PostgreSQL: pass ``lambda: PostgresStore(dsn, schema=...)``
    (tests/pg_server.py gives the DSN). Its pool already gives each call its
    own connection, so a restarted publisher shares it too.
    """
    opened: list[Store] = []

    def connect() -> Store:
        if not opened:
            opened.append(store_factory())
        return opened[0]

    def close() -> None:
        for store in opened:
            store.close()
        opened.clear()

    return StoreBackend(name, connect, lambda _: None, close)


def postgres_backend(store_factory: Callable[[], Store]) -> StoreBackend:
    """PostgreSQL through ``store_factory`` (a :class:`~fencepost.impl.postgres.PostgresStore`)."""
    return shared_backend("postgres", store_factory)


# --- findings ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Finding:
    """One thing wrong at a step.

    ``kind`` is ``invariant`` (a docs/semantics.md section 7 property broken on the
    implementation's durable state), ``mismatch`` (the implementation did
    something the model does not allow here, or its durable state differs
    from the model's), or ``model`` (the model itself broke an invariant).
    ``name`` is the invariant's name or the mismatch category:
    ``publisher-protocol``, ``publisher-decision`` (what an attempt did after
    reading the checkpoints), ``publisher-settlement`` (after a write: its
    answer, a lost response, a conflict), ``reader-protocol``,
    ``reader-certify`` (checkpoint writes), ``store-fencing`` (the store
    applied or refused a conditional write against the model),
    ``state-record``, ``state-checkpoints``, ``state-outcomes``,
    ``state-membership`` (the abstraction disagrees), ``impl-error``.
    """

    kind: str
    name: str
    message: str

    def __str__(self) -> str:
        return f"[{self.name}] {self.message}"


class RefinementFailure(AssertionError):
    """The implementation left the model's behaviour or broke a section-7 invariant."""

    def __init__(self, step: str, findings: Sequence[Finding], trace: Sequence[str]) -> None:
        self.step = step
        self.findings = tuple(findings)
        self.trace = tuple(trace)
        lines = [f"refinement check failed after: {step}"]
        lines.extend(f"  - {f}" for f in self.findings)
        lines.append("what the run did (model steps and implementation calls):")
        lines.extend(f"  {n}. {t}" for n, t in enumerate(self.trace, 1))
        super().__init__("\n".join(lines))


@dataclass
class RunStats:
    """Counts of one run, shared by every example of the machine class.

    ``coverage`` counts what the runs exercised, keyed by :func:`coverage_key`
    (model transitions, with their outcome) plus the harness's own events
    (``publisher crash``, ``reader resync``).
    """

    examples: int = 0
    steps: int = 0
    streams: Iterator[int] = field(default_factory=itertools.count)
    coverage: Counter[str] = field(default_factory=Counter)


def coverage_key(action: Action) -> str:
    """A model transition's kind with the choice that matters: outcome, decision, claim."""
    kind = action.kind
    if kind == "read_publication":
        return f"{kind}:{action.detail}" if action.detail else kind
    if kind == "read_checkpoints":
        return f"{kind}:{action.detail}"
    if kind in ("write_publication", "write_checkpoint"):
        return f"{kind}:{action.outcome}"
    if kind == "fetch_page" and action.page is not None:
        page = action.page
        shape = "empty" if page.start == page.end else "overlap" if page.overlap else "new"
        return f"{kind}:{shape}:{page.claim_kind or 'no claim'}"
    if kind == "reshard":
        return f"{kind}:epoch {action.epoch}"
    return kind


# --- per-process bookkeeping ---------------------------------------------------------


@dataclass
class _Attempt:
    """What the gate told one publication attempt, to judge what it may report."""

    acknowledged: tuple[int, MCut] | None = None
    lost: tuple[int, MCut] | None = None
    shown: bool = False


@dataclass(frozen=True, slots=True)
class _Report:
    """A publisher's last reported outcome, as the invariants read it."""

    outcome: str
    reason: str
    justified: bool
    epoch: int
    proposal: MCut


@dataclass
class _PublisherSlot:
    """One publisher process: its connection, the impl object, the model publisher it drives.

    ``worker`` is the running attempt (None between attempts); after a crash
    the slot drives the next spare model publisher with a fresh process.
    """

    slot: int
    model: int
    connection: Store
    publisher: Publisher
    worker: Worker | None = None
    attempt: _Attempt = field(default_factory=_Attempt)
    #: The durable state its last attempt started from, and whether that attempt gave up.
    trigger: object = None
    again: bool = False


@dataclass
class _ReaderSlot:
    """One reader process of a partition and the model reader (``index``) it drives.

    ``worker`` is the running pass; ``lockstep`` whether the model reader
    stands where the pass is (else the pass is ended at its next fetch);
    ``page`` the event ids of the last page served; ``epoch`` the pass's epoch.
    """

    partition: int
    slot: int
    index: int
    connection: Store
    worker: Worker | None = None
    lockstep: bool = True
    page: tuple[str, ...] = ()
    epoch: int = 0


@dataclass(frozen=True, slots=True)
class _Held:
    """A publication write whose response timed out while it was still in flight."""

    model: int
    call: Call


def _handle(event: Event) -> str:
    return OUTCOME


def _describe_result(result: PublishResult) -> str:
    if result.outcome is Outcome.WITHHELD and result.reason is not None:
        return f"withheld ({result.reason.value})"
    if result.outcome in (Outcome.PUBLISHED, Outcome.CONFIRMED):
        return f"{result.outcome.value} (epoch {result.epoch}, {result.cut})"
    return str(result.outcome.value)


# --- the machine ---------------------------------------------------------------------


class RefinementMachine(RuleBasedStateMachine):
    """The model and the implementation in lockstep; see the module docstring.

    Subclasses made by :func:`refinement_machine` fix the backend, the
    implementation classes (production or a planted mutant) and the counters.
    """

    backend: ClassVar[StoreBackend]
    mutant: ClassVar[Variant | None] = None
    stats: ClassVar[RunStats]

    def __init__(self) -> None:
        super().__init__()
        self._ready = False
        self._trace: list[str] = []
        self._current = "setup"
        self._kinds: set[str] = set()
        self._connections: list[Store] = []

    # ------------------------------------------------------------------ setup
    @initialize(
        order=st.sampled_from(tuple(ORDERS)),
        policy=st.sampled_from(("monotone", "reset")),
        layout=st.integers(0, 2),
        finalized=st.integers(0, 3),
    )
    def setup(self, order: str, policy: str, layout: int, finalized: int) -> None:
        """A fresh stream; ``finalized`` own events of each partition are final from the start.

        (The source finalized them before the run: it saves the environment
        steps every interesting interleaving would otherwise need first.)
        """
        self.stats.examples += 1
        self._coords = ORDERS[order]
        layouts = SUCCESSOR_LAYOUTS if self._coords.successor else DENSE_LAYOUTS
        self.config = ModelConfig(
            part="composed",
            partitions=PARTITIONS,
            publishers=PUBLISHER_SLOTS + SPARE_PUBLISHERS,
            readers=READERS_PER_PARTITION + SPARE_READERS,
            coordinates=2,
            events_per_partition=3,
            moved_events=1,
            epochs=EPOCHS,
            lost_responses=True,
            in_flight=True,
            read_timeouts=False,
            policy=policy,
            successor=self._coords.successor,
            attempts=6,
            retries=RETRIES,
            passes=6,
            page_size=2,
            overlap=True,
            bad_checkpoints=(),
            positions=layouts[layout],
            moved_positions=(0,),
            scope=SCOPE,
            mutant=None,
        )
        self.model = initial(self.config)
        self.ctx = self.model.context
        for _ in range(finalized):
            for pname in self.ctx.partition_names:
                for move in self._moves("finalize"):
                    if move[0].partition == pname:
                        self.model = move[1]
                        break
        self._policy = Policy(policy)
        self._stream = f"refine-{next(self.stats.streams)}"
        self._publisher_cls = Publisher if self.mutant is None else self.mutant.publisher
        self._reader_cls = PartitionReader if self.mutant is None else self.mutant.reader
        self._env = self._connect()
        self._observer = self._connect()
        self._env.create_stream(self._stream, self._membership(1))
        self._pubs = [
            _PublisherSlot(k, k, self._connect(), self._new_publisher(k))
            for k in range(PUBLISHER_SLOTS)
        ]
        self._spares = list(range(PUBLISHER_SLOTS, PUBLISHER_SLOTS + SPARE_PUBLISHERS))
        self._readers = [
            [_ReaderSlot(i, j, j, self._connect()) for j in range(READERS_PER_PARTITION)]
            for i in range(PARTITIONS)
        ]
        total = READERS_PER_PARTITION + SPARE_READERS
        self._spare_readers = [list(range(READERS_PER_PARTITION, total)) for _ in range(PARTITIONS)]
        self._held: list[_Held] = []
        self._reports: dict[int, _Report] = {}
        self._history = History(1, MODEL_NOTHING, MODEL_NOTHING)
        self._peaks = [[MODEL_NOTHING] * EPOCHS for _ in range(PARTITIONS)]
        self._trace.append(
            f"setup: order {order} ({'exact successor' if self._coords.successor else 'dense'}), "
            f"policy {policy}, events per partition at {layouts[layout]} ({finalized} of them "
            f"final from the start), stream {self._stream}"
        )
        self._ready = True

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

    def teardown(self) -> None:
        if not self._ready:
            return
        if currently_in_test_context():
            # Steer generation towards examples that take many kinds of transitions
            # (publishing, lost responses, cutovers, late retries...): Hypothesis'
            # target phase.
            target(float(len(self._kinds)), label="distinct kinds of model transitions")
            target(float(self.model.record.epoch), label="epoch of the publication record")
        workers = [s.worker for s in self._pubs] + [r.worker for row in self._readers for r in row]
        for worker in workers:
            if worker is not None and worker.pending is not None:
                with contextlib.suppress(Exception):
                    worker.reply(Reply(error=Crash("the example ended")))
        for store in self._connections:
            with contextlib.suppress(Exception):
                self.backend.release(store)
        self._connections.clear()

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

    # ================================================================== rules
    def _durable_key(self) -> object:
        """What a publication attempt reads, as the model holds it."""
        parts = tuple((p.checkpoints, p.generations) for p in self.model.partitions)
        return (self.model.epoch, self.model.record, parts)

    def _publisher_can_act(self, s: _PublisherSlot) -> bool:
        """A running attempt, or one worth starting: what it reads changed, or the last gave up."""
        if s.worker is not None:
            return True
        pub = self.model.publishers[s.model]
        if pub.phase != IDLE or pub.attempts_left == 0:
            return False
        return s.again or s.trigger != self._durable_key()

    def _pick(self, data: st.DataObject, label: str, options: Sequence[str]) -> int:
        return list(options).index(data.draw(st.sampled_from(options), label=label))

    @precondition(lambda self: self._ready and any(self._publisher_can_act(s) for s in self._pubs))
    @rule(data=st.data())
    def publisher_step(self, data: st.DataObject) -> None:
        """Release the next store call of a publisher, or crash its process before it.

        A publisher starts an attempt when what it reads changed since its last
        one, or that one gave up (a publisher triggered by checkpoint changes).
        A write's fault is drawn when the write is released: acknowledged, its
        response lost after or before it is applied, or timed out while the
        write is still in flight. A crash (while spare model publishers last)
        kills the process before its pending call; a fresh one replaces it.
        """
        ready = [s for s in self._pubs if self._publisher_can_act(s)]
        choices: list[tuple[str, _PublisherSlot]] = [
            (self.ctx.publisher_names[s.model], s) for s in ready for _ in range(CALLS_PER_CRASH)
        ]
        if self._spares:
            choices.extend(
                (f"crash {self.ctx.publisher_names[s.model]}", s)
                for s in ready
                if s.worker is not None
            )
        label, s = choices[self._pick(data, "publisher", [c[0] for c in choices])]
        if label.startswith("crash "):
            self._crash_publisher(s)
            return
        name = self.ctx.publisher_names[s.model]
        self._step(f"publisher {name} (slot {s.slot}) makes its next store call")
        if s.worker is None:
            s.trigger, s.again = self._durable_key(), False
            s.attempt = _Attempt()
            self._reports.pop(s.model, None)
            s.worker = Worker(name, s.connection, s.publisher.attempt)
            if s.worker.pending is None:
                self._fail(
                    "publisher-protocol",
                    f"publisher {name}'s attempt ended without reading the publication record",
                )
        self._release_publisher(s, data)

    def _crash_publisher(self, s: _PublisherSlot) -> None:
        """The publisher process dies before its pending store call; a fresh one replaces it."""
        name = self.ctx.publisher_names[s.model]
        self._step(f"publisher {name} (slot {s.slot}) crashes")
        worker = s.worker
        assert worker is not None and worker.pending is not None
        self._trace.append(f"impl: publisher {name} dies before {worker.pending}")
        worker.reply(Reply(error=Crash(f"publisher {name} killed before a store call")))
        if worker.finished is None or not isinstance(worker.finished.error, Crash):
            self._fail(
                "publisher-protocol",
                f"publisher {name} did not stop when its process was killed "
                f"(it went on to {worker.pending}); production code must never catch Crash",
            )
        self.stats.coverage["publisher crash"] += 1
        s.worker, s.trigger, s.again = None, None, False
        s.model = self._spares.pop(0)
        s.connection = self._reconnect(s.connection)
        s.publisher = self._new_publisher(s.model)
        self._trace.append(
            f"impl: a new publisher process {self.ctx.publisher_names[s.model]} starts "
            f"on a {'reopened' if self.backend.name == 'sqlite' else 'fresh'} connection"
        )

    @precondition(lambda self: self._ready and bool(self._held))
    @rule(data=st.data())
    def deliver_in_flight(self, data: st.DataObject) -> None:
        """The store finally receives a publication write whose response had timed out."""
        labels = [
            f"the store receives publisher {self.ctx.publisher_names[h.model]}'s delayed {h.call}"
            for h in self._held
        ]
        label = data.draw(st.sampled_from(labels), label="delayed write")
        held = self._held.pop(labels.index(label))
        self._step(label)
        name = self.ctx.publisher_names[held.model]
        stream, expected, epoch, cut, op_id = held.call.args
        assert isinstance(stream, str) and isinstance(expected, int) and isinstance(epoch, int)
        assert isinstance(cut, Cut) and isinstance(op_id, str)
        written = self._env.write_publication(stream, expected, epoch, cut, op_id)
        pub = self.model.publishers[held.model]
        live = (
            pub.orphan_epoch != 0
            and pub.orphan_revision == expected
            and self.model.record.revision == expected
        )
        if isinstance(written, Applied):
            self._trace.append(f"impl: the store applies it (revision {written.record.revision})")
            move = self._one("delayed_write", name) if live else None
            if move is None:
                self._fail(
                    "store-fencing",
                    f"the store applied publisher {name}'s delayed write on revision {expected}, "
                    f"but the model's record is at revision {self.model.record.revision}: "
                    "a write naming an old revision must lose",
                )
            else:
                self._advance(move)
        else:
            self._trace.append(
                f"impl: the store refuses it (revision moved to {written.record.revision})"
            )
            if live:
                self._fail(
                    "store-fencing",
                    f"the store refused publisher {name}'s delayed write (epoch {epoch}, {cut}) "
                    f"on revision {expected}, which the model's record still has",
                )

    def _readers_that_can_act(self) -> list[_ReaderSlot]:
        """Slots with a pass running or able to start one (moving on to a spare model reader)."""
        out = []
        for row in self._readers:
            for s in row:
                if s.worker is None:
                    self._use_spare_reader(s)
                    reader = self._reader_state(s)
                    if reader.phase != IDLE or reader.passes_left == 0:
                        continue
                out.append(s)
        return out

    @precondition(lambda self: self._ready and bool(self._readers_that_can_act()))
    @rule(data=st.data())
    def reader_step(self, data: st.DataObject) -> None:
        """One page of an ingest pass (a new pass first reads its checkpoint).

        The page's outcomes are recorded, and the checkpoint write its final
        claim leads to is released (its fault drawn then) in the same step: nothing
        durable happens in between, and late retries still arise from passes
        of two readers interleaving page by page.
        """
        # The first reader of each partition comes up twice as often: passes make
        # progress, and the second still interleaves with it for late retries.
        ready = [s for s in self._readers_that_can_act() for _ in range(2 - min(s.slot, 1))]
        names = [self.ctx.reader_names[s.partition][s.index] for s in ready]
        s = ready[self._pick(data, "reader", names)]
        name = self.ctx.reader_names[s.partition][s.index]
        self._step(f"reader {name} reads on")
        if s.worker is None and not self._start_pass(s, name):
            return
        worker = s.worker
        assert worker is not None and worker.pending is not None
        self._serve_page(s, name, worker.pending, data)
        if worker.pending is not None and worker.pending.op == "write_checkpoint":
            fault = data.draw(st.sampled_from(CHECKPOINT_FAULTS), label=f"{name}'s write")
            self._release_checkpoint_write(s, name, worker.pending, fault)

    @precondition(lambda self: self._ready and bool(self._moves("finalize")))
    @rule(data=st.data())
    def source_finalizes(self, data: st.DataObject) -> None:
        """The source finalizes the next event of a partition (its provider claims may grow)."""
        moves = self._moves("finalize")
        labels = [a.describe() for a, _ in moves]
        label = data.draw(st.sampled_from(labels), label="finalize")
        self._step(label)
        self._advance(moves[labels.index(label)])

    @precondition(
        lambda self: (
            self._ready
            and self.model.epoch < EPOCHS
            and self.model.record.epoch == self.model.epoch
            and self.model.record.cut != MODEL_NOTHING
        )
    )
    @rule(data=st.data())
    def reshard(self, data: st.DataObject) -> None:
        """A new membership epoch, durable first; a reshard moves events into one partition.

        Enabled once the current epoch has a published claim: the state the
        cutover rule and the epoch fence are about. Every ingest pass of the old
        epoch stops (as a rebalance revokes partitions); readers start new
        passes in the new epoch.
        """
        moves = self._moves("reshard")
        labels = [a.describe() for a, _ in moves]
        label = data.draw(st.sampled_from(labels), label="reshard")
        self._step(label)
        epoch = self.model.epoch + 1
        self._env.write_membership(self._stream, self._membership(epoch))
        self._trace.append(f"impl: the membership of epoch {epoch} is written")
        self._advance(moves[labels.index(label)])
        for row in self._readers:
            for s in row:
                worker = s.worker
                if worker is not None and worker.pending is not None:
                    name = self.ctx.reader_names[s.partition][s.index]
                    if worker.pending.op != "fetch_page":
                        self._fail(
                            "reader-protocol", f"reader {name} is stopped at {worker.pending}"
                        )
                    self._end_pass(s, name)

    # ================================================================== publishers
    def _release_publisher(self, s: _PublisherSlot, data: st.DataObject) -> None:
        worker = s.worker
        assert worker is not None and worker.pending is not None
        call = worker.pending
        name = self.ctx.publisher_names[s.model]
        pub = self.model.publishers[s.model]
        before = pub.phase
        category = "publisher-protocol"
        self._trace.append(f"impl: publisher {name} calls {call}")
        if call.op == "read_publication" and pub.phase in (IDLE, IN_DOUBT):
            doubt = pub.phase == IN_DOUBT
            move = self._one(
                "read_publication",
                name,
                lambda a: (
                    a.outcome == "ok" and (a.detail or "").startswith("authoritative") == doubt
                ),
            )
            record = worker.perform(call)
            assert isinstance(record, PublicationRecord)
            if doubt:
                category = "publisher-settlement"
                self._judge_read_after_loss(s, record)
            self._advance_or_fail(move, name, call)
            worker.reply(Reply(record))
            assert move is not None
            if move[0].detail in ("authoritative:retry", "authoritative:cutover"):
                self._reread(s, name)
        elif call.op == "read_membership" and pub.phase == HAVE_RECORD:
            if call.args[1:] != (None,):
                self._fail(
                    "publisher-protocol",
                    f"publisher {name} reads the membership of epoch {call.args[1]}, "
                    "not the current one",
                )
            move = self._one("read_membership", name, lambda a: a.outcome == "ok")
            self._advance_or_fail(move, name, call)
            worker.reply(Reply(worker.perform(call)))
        elif call.op in CHECKPOINT_READS and pub.phase == HAVE_MEMBERSHIP:
            if call.args[1] != pub.mem_epoch:
                self._fail(
                    "publisher-protocol",
                    f"publisher {name} reads the checkpoints of epoch {call.args[1]} after "
                    f"reading the membership of epoch {pub.mem_epoch}",
                )
            move = self._one("read_checkpoints", name, lambda a: a.outcome == "ok")
            category = "publisher-decision"
            self._advance_or_fail(move, name, call)
            self.stats.coverage[f"impl {call.op}"] += 1
            worker.reply(Reply(worker.perform(call)))
        elif call.op == "write_publication" and pub.phase == PROPOSING:
            category = "publisher-settlement"
            fault = data.draw(st.sampled_from(PUBLICATION_FAULTS), label=f"{name}'s write")
            self._release_publication_write(s, name, call, fault)
        else:
            self._fail(
                "publisher-protocol",
                f"publisher {name} calls {call} but the model's publisher "
                f"({PUBLISHER_PHASES[pub.phase]}) {self._expected_publisher_call(pub.phase)}",
            )
        self._expect_publisher(s, name, category, before)

    def _advance_or_fail(self, move: Move | None, name: str, call: Call) -> None:
        if move is None:
            self._fail(
                "publisher-protocol",
                f"the model allows publisher {name} no transition for {call} here",
            )
        else:
            self._advance(move)

    @staticmethod
    def _expected_publisher_call(phase: int) -> str:
        return {
            IDLE: "has finished its attempt",
            HAVE_RECORD: "reads the membership next",
            HAVE_MEMBERSHIP: "reads the checkpoints next",
            PROPOSING: "writes its proposal next",
            IN_DOUBT: "rereads the record (authoritative read) next",
        }[phase]

    def _judge_read_after_loss(self, s: _PublisherSlot, record: PublicationRecord) -> None:
        lost = s.attempt.lost
        cut = self._coords.cut_to_model(record.cut)
        if (
            lost is not None
            and cut is not None
            and record.epoch == lost[0]
            and self._rank(cut) >= self._rank(lost[1])
        ):
            s.attempt.shown = True

    def _reread(self, s: _PublisherSlot, name: str) -> None:
        """Release the record reread the implementation makes before starting over."""
        worker = s.worker
        assert worker is not None
        call = worker.pending
        if call is None or call.op != "read_publication":
            return  # judged by _expect_publisher
        pub = self.model.publishers[s.model]
        record = worker.perform(call)
        assert isinstance(record, PublicationRecord)
        held = (pub.rec_epoch, pub.rec_cut, pub.rec_revision)
        got = (record.epoch, self._coords.cut_to_model(record.cut), record.revision)
        self._trace.append(f"impl: publisher {name} rereads the record before starting over")
        if got != held:
            self._fail(
                "publisher-protocol",
                f"publisher {name} reread the record as (epoch {record.epoch}, {record.cut}, "
                f"revision {record.revision}) but the record it was just given is "
                f"(epoch {held[0]}, {held[1]}, revision {held[2]})",
            )
        worker.reply(Reply(record))

    def _release_publication_write(
        self, s: _PublisherSlot, name: str, call: Call, fault: str
    ) -> None:
        worker = s.worker
        assert worker is not None
        _, expected, epoch, cut, _ = call.args
        assert isinstance(epoch, int) and isinstance(cut, Cut)
        offered = {a.outcome for a, _ in self._moves("write_publication", name)}
        if fault == "in_flight" and "in-flight" not in offered:
            fault = "lose_before"
        lost = IndefiniteStoreError(f"injected: the response to {call} was lost")
        reply: Reply
        if fault in ("ack", "lose_after"):
            written = worker.perform(call)
            applied = isinstance(written, Applied)
            if fault == "ack":
                outcome = "ok" if applied else "conflict"
                reply = Reply(written)
            else:
                outcome = "lost-applied" if applied else "lost-not-applied"
                reply = Reply(error=lost)
            self._trace.append(f"impl: the store {'applies' if applied else 'refuses'} it")
        elif fault == "lose_before":
            outcome, reply = "lost-not-applied", Reply(error=lost)
        else:
            self._held.append(_Held(s.model, call))
            outcome, reply = "in-flight", Reply(error=lost)
        mcut = self._coords.cut_to_model(cut)
        assert mcut is not None  # checked against the proposal before the call was released
        if fault == "ack" and outcome == "ok":
            s.attempt.acknowledged = (epoch, mcut)
        elif fault != "ack":
            s.attempt.lost, s.attempt.shown = (epoch, mcut), False
        move = self._one("write_publication", name, lambda a: a.outcome == outcome)
        if move is None:
            pub = self.model.publishers[s.model]
            self._fail(
                "store-fencing",
                f"the store {'applied' if outcome in ('ok', 'lost-applied') else 'refused'} "
                f"publisher {name}'s write on revision {expected}; in the model the publisher "
                f"read revision {pub.rec_revision} and the record is at revision "
                f"{self.model.record.revision}",
            )
        else:
            self._advance(move)
        worker.reply(reply)
        if outcome == "conflict" and self.model.publishers[s.model].phase == HAVE_RECORD:
            self._reread(s, name)

    def _expect_publisher(self, s: _PublisherSlot, name: str, category: str, before: int) -> None:
        """After a release: the implementation's next call or outcome must be the model's."""
        worker = s.worker
        assert worker is not None
        pub = self.model.publishers[s.model]
        if worker.finished is not None:
            s.worker = None
            finished = worker.finished
            if not isinstance(finished.value, PublishResult):
                self._fail("impl-error", f"publisher {name}'s attempt raised {finished.error!r}")
            result = finished.value
            assert isinstance(result, PublishResult)
            self._trace.append(f"impl: publisher {name} reports {_describe_result(result)}")
            self._reports[s.model] = self._report(s, result)
            s.again = result.outcome is Outcome.GAVE_UP
            if pub.phase != IDLE or before == IDLE:
                self._fail(
                    category,
                    f"publisher {name} reported {_describe_result(result)} but the model's "
                    f"publisher ({PUBLISHER_PHASES[pub.phase]}) "
                    f"{self._expected_publisher_call(pub.phase)}",
                )
            problem = self._compare_outcome(name, pub, result)
            if problem:
                self._fail(category, problem)
            return
        call = worker.pending
        assert call is not None
        wanted = {
            HAVE_RECORD: "read_membership",
            HAVE_MEMBERSHIP: "read_checkpoints",
            PROPOSING: "write_publication",
            IN_DOUBT: "read_publication",
        }.get(pub.phase)
        if pub.phase == IDLE:
            shown = pub.outcome + (f" ({pub.reason})" if pub.reason else "")
            self._fail(
                category,
                f"publisher {name} goes on to {call} but the model's publisher reports {shown}",
                land=worker,
            )
        elif call.op != wanted and not (wanted in CHECKPOINT_READS and call.op in CHECKPOINT_READS):
            self._fail(
                category,
                f"publisher {name} goes on to {call} but the model's publisher "
                f"({PUBLISHER_PHASES[pub.phase]}) {self._expected_publisher_call(pub.phase)}",
                land=worker,
            )
        elif pub.phase == PROPOSING:
            _, expected, epoch, cut, op_id = call.args
            assert isinstance(cut, Cut) and isinstance(op_id, str)
            got = (expected, epoch, self._coords.cut_to_model(cut))
            want = (pub.rec_revision, pub.mem_epoch, pub.proposal)
            if got != want:
                self._fail(
                    category,
                    f"publisher {name} writes (epoch {epoch}, {cut}) on revision {expected}; "
                    f"the model's publisher proposes (epoch {pub.mem_epoch}, "
                    f"{self._coords.cut_to_impl(pub.proposal)}) on revision {pub.rec_revision}",
                    land=worker,
                )
            if op_id.rsplit("-", 1)[0] != name:
                self._fail(
                    category, f"publisher {name} writes under another worker's op_id {op_id!r}"
                )

    def _report(self, s: _PublisherSlot, result: PublishResult) -> _Report:
        reason = result.reason.value if result.reason is not None else ""
        outcome = result.outcome.value
        epoch = result.epoch or 0
        claim = self._coords.cut_to_model(result.cut) if result.cut is not None else None
        proposal = self._coords.cut_to_model(result.proposal) if result.proposal else None
        if result.outcome is Outcome.PUBLISHED:
            justified = claim is not None and s.attempt.acknowledged == (epoch, claim)
            return _Report(outcome, reason, justified, epoch, claim or MODEL_NOTHING)
        if result.outcome is Outcome.CONFIRMED:
            return _Report(outcome, reason, s.attempt.shown, epoch, proposal or MODEL_NOTHING)
        return _Report(outcome, reason, True, 0, MODEL_NOTHING)

    def _compare_outcome(self, name: str, pub: MPublisher, result: PublishResult) -> str | None:
        got = result.outcome.value
        want = pub.outcome + (f" ({pub.reason})" if pub.reason else "")
        said = _describe_result(result)
        if got != pub.outcome:
            return f"publisher {name} reported {said}; the model's publisher reports {want}"
        if result.outcome is Outcome.WITHHELD:
            reason = result.reason.value if result.reason is not None else ""
            if reason != pub.reason:
                return f"publisher {name} reported {said}; the model's publisher reports {want}"
        if result.outcome is Outcome.PUBLISHED:
            claim = None if result.cut is None else self._coords.cut_to_model(result.cut)
            if (result.epoch, claim) != (pub.mem_epoch, pub.proposal):
                return (
                    f"publisher {name} reported {said}; the model's publisher published "
                    f"(epoch {pub.mem_epoch}, {self._coords.cut_to_impl(pub.proposal)})"
                )
        if result.outcome is Outcome.CONFIRMED:
            proposal = (
                None if result.proposal is None else self._coords.cut_to_model(result.proposal)
            )
            if (result.epoch, proposal) != (pub.mem_epoch, pub.proposal):
                return (
                    f"publisher {name} reported {said} for its proposal {result.proposal}; the "
                    f"model's publisher confirmed (epoch {pub.mem_epoch}, "
                    f"{self._coords.cut_to_impl(pub.proposal)})"
                )
        return None

    # ================================================================== readers
    def _reader_state(self, s: _ReaderSlot) -> MReader:
        return self.model.partitions[s.partition].readers[s.index]

    def _use_spare_reader(self, s: _ReaderSlot) -> None:
        """Between passes, a slot whose model reader has no pass left drives a spare one."""
        spares = self._spare_readers[s.partition]
        if self._reader_state(s).passes_left == 0 and spares:
            s.index = spares.pop(0)

    def _start_pass(self, s: _ReaderSlot, name: str) -> bool:
        """A new pass (a fresh PartitionReader) in the current epoch: it reads its checkpoint."""
        reader = self._reader_state(s)
        if reader.phase != IDLE or reader.passes_left == 0:
            self._trace.append(f"(reader {name} has no pass left)")
            return False
        pname = self.ctx.partition_names[s.partition]
        epoch = self.model.epoch
        impl_reader = self._reader_cls(
            GATED_STORE,
            GATED_PROVIDER,
            self._stream,
            pname,
            epoch,
            SCOPE,
            self._coords.order,
            _handle,
            max_retries=0,
            save_progress=False,
        )
        worker = Worker(name, s.connection, impl_reader.run_pass)
        s.worker, s.lockstep, s.page, s.epoch = worker, True, (), epoch
        call = worker.pending
        if call is None or call.op != "read_checkpoint":
            self._fail(
                "reader-protocol",
                f"reader {name} began its pass with {call or 'nothing'}, not by reading its "
                "checkpoint",
            )
        assert call is not None
        if call.args != (self._stream, epoch, pname):
            self._fail("reader-protocol", f"reader {name} reads the wrong checkpoint: {call}")
        self._trace.append(f"impl: reader {name} starts a pass in epoch {epoch}: {call}")
        move = self._one("read_checkpoint", name)
        if move is None:
            self._fail("reader-protocol", f"the model's reader {name} cannot start a pass here")
        else:
            self._advance(move)
        worker.reply(Reply(worker.perform(call)))
        self._expect_reader(s, name)
        return s.worker is not None

    def _impl_page(self, s: _ReaderSlot, epoch: int, action: Action) -> Page:
        page = action.page
        assert page is not None
        truth = self.model.partitions[s.partition].truth
        view = self.ctx.view(truth.moved, epoch)
        events = tuple(
            Event(
                self.ctx.event_name(s.partition, idx),
                self._coords.to_impl(self.ctx.half_of(idx)),
            )
            for idx in view[page.start : page.end]
        )
        claim = (
            None
            if page.claim_kind == ""
            else Claim(self._coords.cut_to_impl(page.claim), page.claim_kind == "final")
        )
        return Page(events, str(page.end), claim)

    def _serve_page(self, s: _ReaderSlot, name: str, call: Call, data: st.DataObject) -> None:
        worker = s.worker
        assert worker is not None
        partition, token = call.args
        pname = self.ctx.partition_names[s.partition]
        reader = self._reader_state(s)
        if partition != pname:
            self._fail("reader-protocol", f"reader {name} of {pname} fetches from {partition!r}")
        if not s.lockstep:
            self._end_pass(s, name)
            return
        assert token is None or isinstance(token, str)
        if _token_to_model(token) != reader.token:
            self._fail(
                "reader-protocol",
                f"reader {name} fetches from token {token!r} but its traversal is at "
                f"{reader.token} (the model's provider cursor)",
            )
        # Every page the model's provider may give, those with a final claim twice
        # (they are what lets ingest progress), and the end of the pass.
        options: list[Move | None] = [
            move
            for move in self._moves("fetch_page", name)
            for _ in range(
                2 if move[0].page is not None and move[0].page.claim_kind == "final" else 1
            )
        ]
        if self._moves("end_pass", name):
            options.append(None)
        labels = [END_PASS if o is None else o[0].describe() for o in options]
        chosen = options[self._pick(data, f"page for {name}", labels)]
        if chosen is None:
            self._end_pass(s, name)
            return
        action, state = chosen
        page = self._impl_page(s, reader.epoch, action)
        s.page = tuple(e.id for e in page.events)
        self._advance((action, state))
        worker.reply(Reply(page))
        self._record_outcomes(s, name)
        self._expect_reader(s, name)

    def _end_pass(self, s: _ReaderSlot, name: str) -> None:
        """Answer the pass's fetch with an empty last page (no next token): the pass ends."""
        worker = s.worker
        assert worker is not None
        if self._reader_state(s).phase == READING:
            self._advance_reader(self._one("end_pass", name), name, "end its pass")
        self._trace.append(f"impl: reader {name}'s pass is ended with an empty last page")
        worker.reply(Reply(Page((), None, None)))
        self._expect_reader(s, name)

    def _record_outcomes(self, s: _ReaderSlot, name: str) -> None:
        """Release the page's outcome writes together: the model records a page in one step."""
        worker = s.worker
        assert worker is not None
        recorded = []
        while worker.pending is not None and worker.pending.op == "record_outcome":
            call = worker.pending
            _, event_id, _ = call.args
            if event_id not in s.page:
                self._fail(
                    "reader-protocol",
                    f"reader {name} records an outcome for {event_id}, which is not on the "
                    f"page it was given ({', '.join(s.page) or 'no events'})",
                )
            worker.reply(Reply(worker.perform(call)))
            recorded.append(str(event_id))
        if recorded:
            self._trace.append(f"impl: reader {name} records outcomes of {', '.join(recorded)}")
        if self._reader_state(s).phase == FETCHED:
            move = self._one("record_outcomes", name)
            self._advance_reader(move, name, "record the page's outcomes")

    def _advance_reader(self, move: Move | None, name: str, what: str) -> None:
        if move is None:
            self._fail("reader-protocol", f"the model's reader {name} cannot {what} here")
        else:
            self._advance(move)

    def _release_checkpoint_write(self, s: _ReaderSlot, name: str, call: Call, fault: str) -> None:
        worker = s.worker
        assert worker is not None
        _, expected, checkpoint = call.args
        assert isinstance(checkpoint, Checkpoint)
        self._trace.append(f"impl: reader {name} calls {call}")
        lost = IndefiniteStoreError(f"injected: the response to {call} was lost")
        reply: Reply
        if fault in ("ack", "lose_after"):
            written = worker.perform(call)
            applied = isinstance(written, CheckpointApplied)
            if fault == "ack":
                outcome = "ok" if applied else "conflict"
                reply = Reply(written)
            else:
                outcome = "lost-applied" if applied else "lost-not-applied"
                reply = Reply(error=lost)
            self._trace.append(f"impl: the store {'applies' if applied else 'refuses'} it")
        else:
            outcome, reply = "lost-not-applied", Reply(error=lost)
        move = self._one("write_checkpoint", name, lambda a: a.outcome == outcome)
        if move is None:
            pname = self.ctx.partition_names[s.partition]
            stored = self.model.partitions[s.partition].generations[checkpoint.epoch - 1]
            self._fail(
                "store-fencing",
                f"the store {'applied' if outcome in ('ok', 'lost-applied') else 'refused'} "
                f"reader {name}'s checkpoint write expecting generation {expected} of "
                f"{pname} in epoch {checkpoint.epoch}; the model's stored generation is {stored}",
            )
        else:
            self._advance(move)
        worker.reply(reply)
        while worker.pending is not None and worker.pending.op == "read_checkpoint":
            reread = worker.pending
            self._trace.append(f"impl: reader {name} rereads its checkpoint: {reread}")
            worker.reply(Reply(worker.perform(reread)))
        if worker.finished is None:
            token = _token_to_model(checkpoint.token)
            self._resync(s, name, -1 if token is None else token)
        self._expect_reader(s, name)

    def _resync(self, s: _ReaderSlot, name: str, own: int) -> None:
        """Bring the model's reader to where the implementation's pass goes on.

        The implementation's pass holds the checkpoint now stored (what it wrote,
        or the newer one it lost to) and continues from its own token ``own``.
        The model's reader starts a new pass (reads that checkpoint) and
        re-traverses, with claim-less pages whose outcomes are already durable,
        up to ``own``. If it cannot, the pass is ended at its next fetch.
        """
        reader = self._reader_state(s)
        start = self._one("read_checkpoint", name)
        if (
            reader.phase != IDLE
            or reader.passes_left == 0
            or start is None
            or start[0].epoch != s.epoch
        ):
            # The model's reader starts passes in the current epoch only.
            s.lockstep = False
            return
        self.stats.coverage["reader resync"] += 1
        self._advance(start, " (bookkeeping: the pass goes on from the stored checkpoint)")
        reader = self._reader_state(s)
        while reader.token < own:
            want = (reader.token, min(reader.token + self.config.page_size, own), "")
            ghost = next(
                (
                    move
                    for move in self._moves("fetch_page", name)
                    if move[0].page is not None
                    and (move[0].page.start, move[0].page.end, move[0].page.claim_kind) == want
                ),
                None,
            )
            if ghost is None:
                break
            self._advance(ghost, " (bookkeeping: events the implementation's pass already holds)")
            if self._reader_state(s).phase == FETCHED:
                self._advance_reader(self._one("record_outcomes", name), name, "record")
            reader = self._reader_state(s)
        s.lockstep = reader.token == own

    def _expect_reader(self, s: _ReaderSlot, name: str) -> None:
        """After a release: the pass's next call must be one the model's reader allows."""
        worker = s.worker
        assert worker is not None
        reader = self._reader_state(s)
        if worker.finished is not None:
            s.worker = None
            if worker.finished.error is not None:
                self._fail("impl-error", f"reader {name}'s pass raised {worker.finished.error!r}")
            if reader.phase != IDLE:
                self._fail(
                    "reader-protocol",
                    f"reader {name}'s pass ended but the model's reader is "
                    f"{READER_PHASES[reader.phase]}",
                )
            self._trace.append(
                f"impl: reader {name}'s pass ends, returning {worker.finished.value}"
            )
            return
        call = worker.pending
        assert call is not None
        ahead = reader.phase == READING and self._rank(reader.claim) > self._rank(reader.base)
        if call.op == "fetch_page":
            if s.lockstep and ahead:
                self._fail(
                    "reader-certify",
                    f"reader {name} was given the final claim "
                    f"{self._coords.cut_to_impl(reader.claim)} ahead of its checkpoint's "
                    f"{self._coords.cut_to_impl(reader.base)} and fetches on without certifying it",
                )
        elif call.op == "write_checkpoint":
            self._expect_checkpoint_write(s, name, call, ahead)
        else:
            self._fail(
                "reader-protocol",
                f"reader {name} goes on to {call} but the model's reader "
                f"({READER_PHASES[reader.phase]}) fetches or certifies next",
            )

    def _expect_checkpoint_write(self, s: _ReaderSlot, name: str, call: Call, ahead: bool) -> None:
        _, expected, cp = call.args
        assert isinstance(cp, Checkpoint)
        reader = self._reader_state(s)
        wrote = f"writes checkpoint {cp.cut} (token {cp.token!r}) expecting generation {expected}"
        if not s.lockstep or not ahead:
            state = "its pass ended" if reader.phase == IDLE else "it holds no new final claim"
            self._fail(
                "reader-certify",
                f"reader {name} {wrote}, but the model's reader has nothing to certify ({state})",
                land=s.worker,
            )
        got = (
            self._coords.cut_to_model(cp.cut),
            _token_to_model(cp.token),
            expected or 0,
            cp.epoch,
            cp.scope,
            cp.finality,
            cp.partition,
        )
        want = (
            reader.claim,
            reader.token,
            reader.expected,
            reader.epoch,
            SCOPE,
            Finality.FINAL,
            self.ctx.partition_names[s.partition],
        )
        if got != want:
            self._fail(
                "reader-certify",
                f"reader {name} {wrote} in epoch {cp.epoch} ({cp.finality.value}, scope "
                f"{cp.scope!r}); the model's reader certifies "
                f"{self._coords.cut_to_impl(reader.claim)} (token {reader.token}) expecting "
                f"generation {reader.expected} in epoch {reader.epoch}",
                land=s.worker,
            )

    # ================================================================== abstraction
    @invariant()
    def implementation_refines_model(self) -> None:
        """The abstracted durable state equals the model's; section 7 holds on it."""
        if not self._ready:
            return
        findings = self._judge()
        if findings:
            raise RefinementFailure(self._current, findings, self._trace)

    def _judge(self) -> list[Finding]:
        abstract, findings = self._abstract()
        if abstract is not None:
            for inv in INVARIANTS:
                message = inv.check(abstract)
                if message is not None:
                    findings.append(Finding("invariant", inv.name, message))
        for inv in INVARIANTS:
            message = inv.check(self.model)
            if message is not None:
                findings.append(Finding("model", f"model-{inv.name}", message))
        return findings

    def _abstract(self) -> tuple[State | None, list[Finding]]:
        """The implementation's durable state as a model state, and where it differs.

        Ground truth (event positions, source finality, which events a reshard
        moved) is the harness's; everything the store holds is the store's.
        """
        obs, stream, coords, model = self._observer, self._stream, self._coords, self.model
        findings: list[Finding] = []

        def differ(name: str, message: str) -> None:
            findings.append(Finding("mismatch", name, message))

        epoch = obs.read_membership(stream).epoch
        if epoch != model.epoch:
            differ(
                "state-membership",
                f"the store's current membership epoch is {epoch}, the model's {model.epoch}",
            )
        for e in range(1, epoch + 1):
            stored = obs.read_membership(stream, e)
            if stored != self._membership(e):
                differ("state-membership", f"the store's membership of epoch {e} is {stored}")
        impl_record = obs.read_publication(stream)
        cut = coords.cut_to_model(impl_record.cut)
        writer = None if impl_record.op_id is None else impl_record.op_id.rsplit("-", 1)[0]
        model_writer = None if model.record.op_id is None else model.record.op_id.rsplit("-", 1)[0]
        record = Record(
            impl_record.epoch, cut or MODEL_NOTHING, impl_record.revision, impl_record.op_id
        )
        if (impl_record.epoch, cut, impl_record.revision, writer) != (
            model.record.epoch,
            model.record.cut,
            model.record.revision,
            model_writer,
        ):
            differ(
                "state-record",
                f"the store's record is (epoch {impl_record.epoch}, {impl_record.cut}, revision "
                f"{impl_record.revision}, written by {writer}); the model's is (epoch "
                f"{model.record.epoch}, {coords.cut_to_impl(model.record.cut)}, revision "
                f"{model.record.revision}, written by {model_writer})",
            )
        usable = cut is not None
        history = self._observe(record) if usable else self._history
        partitions = []
        by_epoch = {
            e: {c.partition: c for c in obs.read_checkpoints(stream, e)}
            for e in range(1, EPOCHS + 1)
        }
        names = [
            self.ctx.event_name(i, idx)
            for i, part in enumerate(model.partitions)
            for idx in self.ctx.view(part.truth.moved, EPOCHS)
        ]
        durable_ids = set(obs.outcomes(stream, names))
        for i, part in enumerate(model.partitions):
            pname = self.ctx.partition_names[i]
            checkpoints: list[MCheckpoint] = []
            generations: list[int] = []
            for e in range(1, EPOCHS + 1):
                cp = by_epoch[e].get(pname)
                mcp, generation = self._abstract_checkpoint(cp, e, pname, differ)
                usable = usable and mcp is not None
                checkpoints.append(mcp or MISSING)
                generations.append(generation)
                want = part.checkpoints[e - 1], part.generations[e - 1]
                if (mcp, generation) != want and mcp is not None:
                    differ(
                        "state-checkpoints",
                        f"checkpoint {pname} in epoch {e}: the store holds "
                        f"{self._show_checkpoint(mcp, generation)}; the model holds "
                        f"{self._show_checkpoint(*want)}",
                    )
            durable = 0
            for idx in self.ctx.view(part.truth.moved, EPOCHS):
                if self.ctx.event_name(i, idx) in durable_ids:
                    durable |= 1 << idx
            if durable != part.truth.durable:
                differ(
                    "state-outcomes",
                    f"partition {pname}: the store has durable outcomes for "
                    f"{self._events(i, durable)}; the model for "
                    f"{self._events(i, part.truth.durable)}",
                )
            peaks = self._peaks[i]
            for e0, mcp in enumerate(checkpoints):
                if self._rank(mcp.cut) > self._rank(peaks[e0]):
                    peaks[e0] = mcp.cut
            partitions.append(
                part._replace(
                    truth=part.truth._replace(durable=durable),
                    checkpoints=tuple(checkpoints),
                    generations=tuple(generations),
                    peaks=tuple(peaks),
                )
            )
        if not usable:
            return None, findings
        publishers = list(model.publishers)
        for k, rep in self._reports.items():
            publishers[k] = publishers[k]._replace(
                outcome=rep.outcome,
                reason=rep.reason,
                justified=rep.justified,
                mem_epoch=rep.epoch,
                proposal=rep.proposal,
            )
        abstract = model._replace(
            epoch=epoch,
            partitions=tuple(partitions),
            record=record,
            publishers=tuple(publishers),
            history=history,
        )
        return abstract, findings

    def _abstract_checkpoint(
        self, cp: Checkpoint | None, epoch: int, pname: str, differ: Callable[[str, str], None]
    ) -> tuple[MCheckpoint | None, int]:
        if cp is None:
            return MISSING, 0
        cut = self._coords.cut_to_model(cp.cut)
        token = _token_to_model(cp.token)
        if cut is None or token is None:
            differ(
                "state-checkpoints",
                f"checkpoint {pname} in epoch {epoch} holds {cp.cut} with token {cp.token!r}, "
                "which name no coordinate or provider cursor of this run",
            )
            return None, cp.generation
        return MCheckpoint(cut, token, cp.scope, cp.epoch, cp.finality is Finality.FINAL), (
            cp.generation
        )

    def _show_checkpoint(self, cp: MCheckpoint, generation: int) -> str:
        if cp.epoch == 0:
            return "no checkpoint"
        finality = "final" if cp.final else "provisional"
        return (
            f"{self._coords.cut_to_impl(cp.cut)} (token {cp.token}, generation {generation}, "
            f"{finality}, scope {cp.scope!r}, epoch {cp.epoch})"
        )

    def _events(self, partition: int, mask: int) -> str:
        names = [
            self.ctx.event_name(partition, idx)
            for idx in range(mask.bit_length())
            if mask >> idx & 1
        ]
        return ", ".join(names) or "no events"

    def _observe(self, record: Record) -> History:
        """Observer memory of the store's record, updated exactly as the model's on each write."""
        h = self._history
        r = self._rank(record.cut)
        if record.epoch > h.peak_epoch or (
            record.epoch == h.peak_epoch and r > self._rank(h.peak_cut)
        ):
            peak_epoch, peak_cut = record.epoch, record.cut
        else:
            peak_epoch, peak_cut = h.peak_epoch, h.peak_cut
        peak_all = h.peak_all
        if self.config.policy == "monotone" and r > self._rank(peak_all):
            peak_all = record.cut
        self._history = History(peak_epoch, peak_cut, peak_all)
        return self._history


def refinement_machine(
    backend: StoreBackend,
    *,
    mutant: Variant | None = None,
    stats: RunStats | None = None,
) -> type[RefinementMachine]:
    """A :class:`RefinementMachine` class over ``backend``, with ``mutant`` planted if given."""
    suffix = "" if mutant is None else "_" + mutant.name.replace("-", "_")
    attributes: dict[str, object] = {
        "backend": backend,
        "mutant": mutant,
        "stats": stats if stats is not None else RunStats(),
    }
    return type(f"Refinement_{backend.name}{suffix}", (RefinementMachine,), attributes)


# --- running it ----------------------------------------------------------------------


@dataclass(frozen=True)
class FailureReport:
    """One failing example, after shrinking: its findings, program and trace."""

    findings: tuple[str, ...]
    names: frozenset[str]
    program: str
    trace: tuple[str, ...]


@dataclass(frozen=True)
class RefinementReport:
    """The result of :func:`run_refinement`.

    ``examples`` and ``steps`` count every example the run executed
    (shrinking replays included); ``failures`` holds the shrunk failing
    example, if any, with the Hypothesis program that reproduces it;
    ``coverage`` counts the kinds of transitions the run exercised
    (:func:`coverage_key`).
    """

    backend: str
    examples: int
    steps: int
    seed: int | None
    mutant: str | None
    seconds: float
    failures: tuple[FailureReport, ...]
    coverage: dict[str, int] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        return not self.failures

    @property
    def summary(self) -> str:
        """One line: what ran and the verdict."""
        planted = f" with mutant {self.mutant}" if self.mutant else ""
        verdict = "model and implementation agree" if self.passed else "FAILED"
        return (
            f"{self.backend}{planted}: {self.examples} examples, {self.steps} steps, "
            f"{len(self.coverage)} kinds of transitions, {verdict} ({self.seconds:.1f}s)"
        )

    def details(self, trace_lines: int = 40) -> tuple[str, ...]:
        """One text per failure: the findings, the shrunk program, the end of the trace."""
        out = []
        for failure in self.failures:
            lines = ["findings:", *(f"  {f}" for f in failure.findings)]
            lines += ["program (Hypothesis):", *(f"  {p}" for p in failure.program.splitlines())]
            lines += ["what happened (last steps):"]
            lines += [f"  {t}" for t in failure.trace[-trace_lines:]]
            out.append("\n".join(lines))
        return tuple(out)

    def to_json(self) -> dict[str, object]:
        return {
            "backend": self.backend,
            "examples": self.examples,
            "steps": self.steps,
            "seed": self.seed,
            "mutant": self.mutant,
            "seconds": round(self.seconds, 3),
            "passed": self.passed,
            "coverage": dict(sorted(self.coverage.items())),
            "failures": [
                {"findings": list(f.findings), "program": f.program, "trace": list(f.trace)}
                for f in self.failures
            ],
        }


BACKENDS = ("memory", "sqlite", "postgres")


@contextlib.contextmanager
def open_backend(name: str, database_url: str | None = None) -> Iterator[StoreBackend]:
    """The backend ``name`` for one run (a temporary SQLite file, removed afterwards)."""
    if name == "memory":
        backend = memory_backend()
        try:
            yield backend
        finally:
            backend.close()
    elif name == "sqlite":
        folder = tempfile.mkdtemp(prefix="fencepost-refinement-")
        backend = sqlite_backend(Path(folder) / "refinement.db")
        try:
            yield backend
        finally:
            backend.close()
            shutil.rmtree(folder, ignore_errors=True)
    elif name == "postgres":
        from fencepost.impl.postgres import PostgresStore

        # A throwaway schema: a run never leaves its streams in the user's database.
        schema = f"fencepost_refinement_{uuid.uuid4().hex[:12]}"
        opened: list[PostgresStore] = []

        def connect() -> Store:
            store = PostgresStore(database_url, schema=schema)
            opened.append(store)
            return store

        backend = postgres_backend(connect)
        try:
            yield backend
        finally:
            backend.close()
            if opened:
                _drop_schema(opened[0].dsn, schema)
    else:
        raise ValueError(f"unknown backend {name!r}; choose one of {', '.join(BACKENDS)}")


def _drop_schema(dsn: str, schema: str) -> None:
    import psycopg
    from psycopg import sql

    with psycopg.connect(dsn, autocommit=True, connect_timeout=10) as conn:
        conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))


def refinement_settings(
    examples: int, steps: int = DEFAULT_STEPS, *, shrink: bool = True, derandomize: bool = True
) -> settings:
    """Hypothesis settings for a run: bounded, no example database, deterministic by default."""
    phases = [Phase.explicit, Phase.reuse, Phase.generate, Phase.target]
    if shrink:
        phases.append(Phase.shrink)
    return settings(
        max_examples=examples,
        stateful_step_count=steps,
        deadline=None,
        derandomize=derandomize,
        database=None,
        print_blob=False,
        report_multiple_bugs=False,
        phases=phases,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    )


def run_machine(
    machine: type[RefinementMachine],
    examples: int,
    seed: int | None,
    *,
    steps: int = DEFAULT_STEPS,
    shrink: bool = True,
) -> tuple[FailureReport | None, float]:
    """Run ``machine`` for ``examples`` examples; the shrunk failure, if any, and the seconds."""
    runnable: type[RefinementMachine] = machine
    if seed is not None:
        runnable = hypothesis_seed(seed)(machine)
    started = time.perf_counter()
    failure: FailureReport | None = None
    try:
        with with_reporter(lambda _: None):  # the program comes back on the exception
            run_state_machine_as_test(
                runnable,
                settings=refinement_settings(
                    examples, steps, shrink=shrink, derandomize=seed is None
                ),
            )
    except RefinementFailure as exc:
        notes = [n for n in getattr(exc, "__notes__", ()) if isinstance(n, str)]
        failure = FailureReport(
            tuple(str(f) for f in exc.findings),
            frozenset(f.name for f in exc.findings),
            "\n".join(_program(notes)),
            exc.trace,
        )
    except Exception as exc:  # the harness itself broke: report it, never pass silently
        notes = [n for n in getattr(exc, "__notes__", ()) if isinstance(n, str)]
        finding = Finding("harness", "harness-error", f"{type(exc).__name__}: {exc}")
        failure = FailureReport(
            (str(finding),), frozenset({finding.name}), "\n".join(_program(notes)), ()
        )
    return failure, time.perf_counter() - started


def _program(notes: Sequence[str]) -> list[str]:
    """The Hypothesis program among an exception's notes (without the invariant-check lines)."""
    keep = []
    for note in notes:
        if note.startswith(("Failing test case", "Highest target scores")):
            if note.startswith("Highest"):
                break
            continue
        if note.strip() and not note.endswith(".implementation_refines_model()"):
            keep.append(note)
    return keep


def run_refinement(
    backend: str,
    examples: int,
    seed: int | None,
    *,
    steps: int = DEFAULT_STEPS,
    mutant: str | None = None,
    shrink: bool = True,
    database_url: str | None = None,
) -> RefinementReport:
    """Run the refinement check on ``backend`` (``memory``, ``sqlite`` or ``postgres``).

    ``examples`` Hypothesis examples of at most ``steps`` rules each; ``seed``
    None derandomizes (the same examples every run, for CI), an int seeds the
    search. ``mutant`` plants one entry of :data:`fencepost.mutants.CATALOG` into the
    implementation (the run should then fail). ``database_url`` is the
    PostgreSQL URL (default ``$FENCEPOST_DATABASE_URL``).
    """
    for label, value, low in (("examples", examples, 1), ("steps", steps, 1)):
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise ValueError(f"{label} must be a positive integer, got {value!r}")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
        raise ValueError(f"seed must be an integer or None, got {seed!r}")
    planted = None
    if mutant is not None:
        workers = sorted(n for n, v in CATALOG.items() if v.changes_workers)
        if mutant not in workers:
            raise ValueError(f"unknown mutant {mutant!r}; choose one of {', '.join(workers)}")
        planted = CATALOG[mutant]
    stats = RunStats()
    with open_backend(backend, database_url) as store_backend:
        machine = refinement_machine(store_backend, mutant=planted, stats=stats)
        failure, seconds = run_machine(machine, examples, seed, steps=steps, shrink=shrink)
    return RefinementReport(
        backend,
        stats.examples,
        stats.steps,
        seed,
        mutant,
        seconds,
        () if failure is None else (failure,),
        dict(stats.coverage),
    )
