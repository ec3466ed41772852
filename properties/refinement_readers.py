"""The refinement machine's reader side: each ingest pass's store calls against the model.

A pass is served one page at a time: the provider *is* the model (a page the
model's provider may give), the page's outcomes are recorded together (the
model records a page in one step), and the checkpoint write its final claim
leads to is released with a drawn fault. After each release the pass's next
call must be one the model's reader allows.
"""

from __future__ import annotations

from hypothesis import strategies as st

from fencepost.impl.provider import Claim, Event, Page
from fencepost.impl.records import Checkpoint, Finality
from fencepost.impl.stores import CheckpointApplied, IndefiniteStoreError
from fencepost.model.state import FETCHED, IDLE, READER_PHASES, READING, Action
from fencepost.model.state import Reader as MReader
from fencepost.properties.coordinates import token_to_model
from fencepost.properties.lockstep import GATED_PROVIDER, GATED_STORE, Call, Reply, Worker
from fencepost.properties.refinement_base import (
    END_PASS,
    SCOPE,
    MachineBase,
    Move,
    ReaderSlot,
    handle_event,
)


class ReaderSide(MachineBase):
    """Ingest passes in lockstep with the model's readers."""

    def _readers_that_can_act(self) -> list[ReaderSlot]:
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

    def _reader_state(self, s: ReaderSlot) -> MReader:
        return self.model.partitions[s.partition].readers[s.index]

    def _use_spare_reader(self, s: ReaderSlot) -> None:
        """Between passes, a slot whose model reader has no pass left drives a spare one."""
        spares = self._spare_readers[s.partition]
        if self._reader_state(s).passes_left == 0 and spares:
            s.index = spares.pop(0)

    def _start_pass(self, s: ReaderSlot, name: str) -> bool:
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
            handle_event,
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

    def _impl_page(self, s: ReaderSlot, epoch: int, action: Action) -> Page:
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

    def _serve_page(self, s: ReaderSlot, name: str, call: Call, data: st.DataObject) -> None:
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
        if token_to_model(token) != reader.token:
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

    def _end_pass(self, s: ReaderSlot, name: str) -> None:
        """Answer the pass's fetch with an empty last page (no next token): the pass ends."""
        worker = s.worker
        assert worker is not None
        if self._reader_state(s).phase == READING:
            self._advance_reader(self._one("end_pass", name), name, "end its pass")
        self._trace.append(f"impl: reader {name}'s pass is ended with an empty last page")
        worker.reply(Reply(Page((), None, None)))
        self._expect_reader(s, name)

    def _record_outcomes(self, s: ReaderSlot, name: str) -> None:
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

    def _release_checkpoint_write(self, s: ReaderSlot, name: str, call: Call, fault: str) -> None:
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
            token = token_to_model(checkpoint.token)
            self._resync(s, name, -1 if token is None else token)
        self._expect_reader(s, name)

    def _resync(self, s: ReaderSlot, name: str, own: int) -> None:
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

    def _expect_reader(self, s: ReaderSlot, name: str) -> None:
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

    def _expect_checkpoint_write(self, s: ReaderSlot, name: str, call: Call, ahead: bool) -> None:
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
            token_to_model(cp.token),
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
