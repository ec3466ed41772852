"""The refinement machine: the model and the implementation in lockstep (Hypothesis rules).

:class:`RefinementMachine` combines the publisher side, the reader side and the
abstraction (see :mod:`fencepost.properties.refinement` for the whole design)
with the Hypothesis rules that choose what happens next: a publisher's next
store call or its crash, a page of an ingest pass, the source finalizing an
event, a reshard, a delayed publication write reaching the store.
"""

from __future__ import annotations

import contextlib
import inspect

from hypothesis import strategies as st
from hypothesis import target
from hypothesis.control import currently_in_test_context
from hypothesis.stateful import initialize, invariant, precondition, rule

from fencepost.impl.cuts import Cut
from fencepost.impl.faults import Crash
from fencepost.impl.publisher import Policy, Publisher
from fencepost.impl.reader import PartitionReader
from fencepost.impl.stores import Applied
from fencepost.model.config import ModelConfig
from fencepost.model.cuts import NOTHING as MODEL_NOTHING
from fencepost.model.machine import initial
from fencepost.model.state import History
from fencepost.properties.backends import StoreBackend
from fencepost.properties.coordinates import ORDERS
from fencepost.properties.lockstep import Reply, Worker
from fencepost.properties.refinement_abstraction import Abstraction
from fencepost.properties.refinement_base import (
    CALLS_PER_CRASH,
    DENSE_LAYOUTS,
    EPOCHS,
    PARTITIONS,
    PUBLISHER_SLOTS,
    READERS_PER_PARTITION,
    RETRIES,
    SCOPE,
    SPARE_PUBLISHERS,
    SPARE_READERS,
    SUCCESSOR_LAYOUTS,
    Attempt,
    Held,
    Planted,
    PublisherSlot,
    ReaderSlot,
    Report,
)
from fencepost.properties.refinement_publishers import PublisherSide
from fencepost.properties.refinement_readers import ReaderSide
from fencepost.properties.refinement_report import RefinementFailure, RunStats


class RefinementMachine(PublisherSide, ReaderSide, Abstraction):
    """The model and the implementation in lockstep; see :mod:`fencepost.properties.refinement`.

    Subclasses made by :func:`refinement_machine` fix the backend, the
    implementation classes (production or a planted mutant) and the counters.
    """

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
        self._publisher_cls = Publisher if self.mutant is None else self.mutant.publisher
        self._reader_cls = PartitionReader if self.mutant is None else self.mutant.reader
        # The reader runs with its production settings; the model's reader is that reader.
        # (the production class: a mutant subclass takes the same arguments, often as *args)
        production = inspect.signature(PartitionReader).parameters
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
            reader_retries=production["max_retries"].default,
            save_progress=production["save_progress"].default,
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
        self._env = self._connect()
        self._observer = self._connect()
        self._env.create_stream(self._stream, self._membership(1))
        self._pubs = [
            PublisherSlot(k, k, self._connect(), self._new_publisher(k))
            for k in range(PUBLISHER_SLOTS)
        ]
        self._spares = list(range(PUBLISHER_SLOTS, PUBLISHER_SLOTS + SPARE_PUBLISHERS))
        self._readers = [
            [ReaderSlot(i, j, j, self._connect()) for j in range(READERS_PER_PARTITION)]
            for i in range(PARTITIONS)
        ]
        total = READERS_PER_PARTITION + SPARE_READERS
        self._spare_readers = [list(range(READERS_PER_PARTITION, total)) for _ in range(PARTITIONS)]
        self._held: list[Held] = []
        self._reports: dict[int, Report] = {}
        self._history = History(1, MODEL_NOTHING, MODEL_NOTHING)
        self._peaks = [[MODEL_NOTHING] * EPOCHS for _ in range(PARTITIONS)]
        self._trace.append(
            f"setup: order {order} ({'exact successor' if self._coords.successor else 'dense'}), "
            f"policy {policy}, events per partition at {layouts[layout]} ({finalized} of them "
            f"final from the start), stream {self._stream}"
        )
        self._ready = True

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

    # ================================================================== rules
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
        choices: list[tuple[str, PublisherSlot]] = [
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
            s.attempt = Attempt()
            self._reports.pop(s.model, None)
            s.worker = Worker(name, s.connection, s.publisher.attempt)
            if s.worker.pending is None:
                self._fail(
                    "publisher-protocol",
                    f"publisher {name}'s attempt ended without reading the publication record",
                )
        self._release_publisher(s, data)

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

    @precondition(lambda self: self._ready and bool(self._readers_that_can_act()))
    @rule(data=st.data())
    def reader_step(self, data: st.DataObject) -> None:
        """The next call of an ingest pass (a new pass first reads its checkpoint).

        A page: its outcomes are recorded, and the checkpoint write its final
        claim leads to is released (its fault drawn then) in the same step:
        nothing durable happens in between. Any other call of the pass (a
        rewrite after a lost race, a retry, a reread, the closing progress
        write) is a step of its own, so other processes may act before it, and
        late retries also arise from passes of two readers interleaving.
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
        self._reader_call(s, name, data)

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
        epoch stops (as a rebalance revokes partitions) at its next fetch, after
        settling a write under way; readers start new passes in the new epoch.
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
                    s.revoked = True
                    if worker.pending.op == "fetch_page":
                        self._end_pass(s, self.ctx.reader_names[s.partition][s.index])

    # ================================================================== abstraction
    @invariant()
    def implementation_refines_model(self) -> None:
        """The abstracted durable state equals the model's; section 7 holds on it."""
        if not self._ready:
            return
        findings = self._judge()
        if findings:
            raise RefinementFailure(self._current, findings, self._trace)


def refinement_machine(
    backend: StoreBackend,
    *,
    mutant: Planted | None = None,
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
