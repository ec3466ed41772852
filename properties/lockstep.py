"""Deterministic interleaving of real workers at store-call granularity.

A :class:`Worker` runs one piece of production code (a
:meth:`~fencepost.impl.publisher.Publisher.attempt`, a
:meth:`~fencepost.impl.reader.PartitionReader.run_pass`) in its own thread,
over :data:`GATED_STORE` and :data:`GATED_PROVIDER`. Every store or provider
call the code makes is handed to the controlling thread as a :class:`Call`
and the worker blocks until the controller answers it with a :class:`Reply`
(a value to return or an exception to raise). The controller decides the
answer: it performs the call on the worker's own store connection, performs
it and then reports the response as lost, drops it, or raises
:class:`~fencepost.impl.faults.Crash` to stop the process at that boundary.

Guarantees, which make runs reproducible call for call:

- only one thread runs at a time: the controller waits while a worker runs,
  and a worker runs only between receiving a reply and posting its next call
  (or finishing);
- every store call the production code makes is visible to the controller,
  in program order, before it takes effect;
- a worker that never calls back within :data:`TIMEOUT` seconds is reported as
  hung (a :class:`LockstepError`), never waited on forever.

This is the one scheduler that drives fencepost's *Python objects* call by call:
the refinement check (:mod:`fencepost.properties.refinement`) and the scenario
runner on the implementation (:mod:`fencepost.scenarios.impl_runner`) both use
it. The conformance harness has a scheduler of its own
(:mod:`fencepost.harness.schedule`, :mod:`fencepost.harness.runner`), and the
two cannot be one: the harness drives *processes* in any language through the
JSON-lines protocol, with the stores played by the judge side, and it must not
import the implementation (the judge never borrows from the judged); this one
runs the production classes on real stores (memory, SQLite, PostgreSQL) so that
their durable state can be compared with the model's. fencepost's own
implementation is also driven through the harness's scheduler, over the wire
(``fencepost sut``), like any other implementation.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import cast

from fencepost.impl.cuts import Cut
from fencepost.impl.merge import MergeSummary
from fencepost.impl.provider import Page
from fencepost.impl.records import Checkpoint, Membership, PublicationRecord
from fencepost.impl.stores import CheckpointWrite, PublicationWrite, Store

#: Seconds the controller waits for a worker to reach its next call or finish.
TIMEOUT = 30.0


class LockstepError(RuntimeError):
    """The harness lost control of a worker: it hung, or a call came from outside a worker."""


@dataclass(frozen=True, slots=True)
class Call:
    """A store or provider call a worker wants to make: the method name and its arguments."""

    op: str
    args: tuple[object, ...]

    def __str__(self) -> str:
        shown = ", ".join(_short(a) for a in self.args)
        return f"{self.op}({shown})"


def _short(value: object) -> str:
    if isinstance(value, Cut):
        return str(value)
    if isinstance(value, Checkpoint):
        return (
            f"Checkpoint({value.partition}, {value.cut}, token={value.token!r}, "
            f"epoch={value.epoch}, {value.finality.value})"
        )
    return repr(value)


@dataclass(frozen=True, slots=True)
class Reply:
    """The controller's answer to a :class:`Call`: return ``value`` or raise ``error``."""

    value: object = None
    error: BaseException | None = None


@dataclass(frozen=True, slots=True)
class Finished:
    """A worker's target returned ``value`` or raised ``error``."""

    value: object = None
    error: BaseException | None = None


_CURRENT = threading.local()


class Worker:
    """One simulated process: ``target`` runs in a thread whose every store call waits.

    ``connection`` is the store this process talks to; the controller performs
    the worker's calls on it. Creating a worker starts it and returns once it
    has posted its first call (or finished): :attr:`pending` or
    :attr:`finished` says which.
    """

    def __init__(self, name: str, connection: Store, target: Callable[[], object]) -> None:
        self.name = name
        self.connection = connection
        self._target = target
        self._to_controller: queue.Queue[Call | Finished] = queue.Queue()
        self._to_worker: queue.Queue[Reply] = queue.Queue()
        self.pending: Call | None = None
        self.finished: Finished | None = None
        #: Every call answered so far, in order, with the answer given.
        self.history: list[tuple[Call, Reply]] = []
        self._thread = threading.Thread(target=self._run, name=f"lockstep:{name}", daemon=True)
        self._thread.start()
        self._await()

    # --- worker side ---------------------------------------------------------------

    def _run(self) -> None:
        _CURRENT.worker = self
        try:
            value = self._target()
        except BaseException as exc:  # a Crash, or whatever the production code raised
            self._to_controller.put(Finished(error=exc))
        else:
            self._to_controller.put(Finished(value=value))

    def call(self, op: str, args: tuple[object, ...]) -> object:
        """Post a call and block until the controller answers it (worker thread only)."""
        self._to_controller.put(Call(op, args))
        reply = self._to_worker.get()
        if reply.error is not None:
            raise reply.error
        return reply.value

    # --- controller side -----------------------------------------------------------

    def _await(self) -> None:
        try:
            item = self._to_controller.get(timeout=TIMEOUT)
        except queue.Empty:
            raise LockstepError(
                f"worker {self.name} neither called the store nor finished within {TIMEOUT}s"
            ) from None
        if isinstance(item, Finished):
            self.finished = item
            self._thread.join(timeout=TIMEOUT)
        else:
            self.pending = item

    def reply(self, reply: Reply) -> None:
        """Answer the pending call and wait until the worker posts its next call or finishes."""
        call = self.pending
        if call is None:
            raise LockstepError(f"worker {self.name} has no pending call to answer")
        self.pending = None
        self.history.append((call, reply))
        self._to_worker.put(reply)
        self._await()

    def perform(self, call: Call) -> object:
        """Run ``call`` on this worker's connection (in the controller's thread)."""
        method: Callable[..., object] = getattr(self.connection, call.op)
        return method(*call.args)

    @property
    def running(self) -> bool:
        return self.finished is None


def _worker() -> Worker:
    worker = getattr(_CURRENT, "worker", None)
    if not isinstance(worker, Worker):
        raise LockstepError("a gated store or provider was called outside a lockstep worker")
    return worker


class GatedStore:
    """The store every lockstep worker uses: each call waits for the controller's answer.

    It implements the calls the publisher and the partition reader make (the
    publisher and checkpointer levels of the conformance protocol). A publisher
    over it reads the whole checkpoint vector (``read_checkpoints``); over
    :class:`SummaryGatedStore` it reads the store's merge summary instead.
    """

    def read_publication(self, stream: str) -> PublicationRecord:
        return cast(PublicationRecord, _worker().call("read_publication", (stream,)))

    def read_membership(self, stream: str, epoch: int | None = None) -> Membership:
        return cast(Membership, _worker().call("read_membership", (stream, epoch)))

    def read_checkpoints(self, stream: str, epoch: int) -> Sequence[Checkpoint]:
        return cast(Sequence[Checkpoint], _worker().call("read_checkpoints", (stream, epoch)))

    def write_publication(
        self, stream: str, expected_revision: int, epoch: int, cut: Cut, op_id: str
    ) -> PublicationWrite:
        args = (stream, expected_revision, epoch, cut, op_id)
        return cast(PublicationWrite, _worker().call("write_publication", args))

    def read_checkpoint(self, stream: str, epoch: int, partition: str) -> Checkpoint | None:
        args = (stream, epoch, partition)
        return cast(Checkpoint | None, _worker().call("read_checkpoint", args))

    def write_checkpoint(
        self, stream: str, expected_generation: int | None, checkpoint: Checkpoint
    ) -> CheckpointWrite:
        args = (stream, expected_generation, checkpoint)
        return cast(CheckpointWrite, _worker().call("write_checkpoint", args))

    def record_outcome(self, stream: str, event_id: str, outcome: str) -> str:
        return cast(str, _worker().call("record_outcome", (stream, event_id, outcome)))

    def outcomes(self, stream: str, event_ids: Sequence[str]) -> dict[str, str]:
        args = (stream, tuple(event_ids))
        return cast(dict[str, str], _worker().call("outcomes", args))


class SummaryGatedStore(GatedStore):
    """A :class:`GatedStore` that also offers ``read_merge_summary``: production publishers
    over it take the summary path (one atomic read standing for ``read_checkpoints``)."""

    def read_merge_summary(self, stream: str, epoch: int) -> MergeSummary:
        return cast(MergeSummary, _worker().call("read_merge_summary", (stream, epoch)))


class GatedProvider:
    """The provider every lockstep reader uses: the controller chooses each page."""

    def fetch_page(self, partition: str, token: str | None) -> Page:
        return cast(Page, _worker().call("fetch_page", (partition, token)))


#: Shared, stateless: calls are routed to the worker whose thread makes them.
GATED_STORE = GatedStore()
GATED_SUMMARY_STORE = SummaryGatedStore()
GATED_PROVIDER = GatedProvider()
