"""The refinement machine's reader side: each ingest pass's store calls against the model.

Every pass is a :class:`~fencepost.impl.reader.PartitionReader` with its
production settings (``max_retries`` and ``save_progress`` left at their
defaults; the model's reader is configured from them). A pass is served one
page at a time: the provider *is* the model (a page the model's provider may
give), the page's outcomes are recorded together (the model records a page in
one step), and the checkpoint write its final claim leads to is released with
a drawn fault. Every later call of the pass is released by a step of its own,
so other processes may act in between, as in production: a rewrite after a
lost race, a retry after a write the authoritative reread showed not applied,
that reread itself, the reread after the retry budget is spent, and the
token-only progress write that closes a pass. After each release the pass's
next call must be the one the model's reader makes next, with the same
arguments.
"""

from __future__ import annotations

from hypothesis import strategies as st

from fencepost.impl.provider import Claim, Event, Page
from fencepost.impl.records import Checkpoint, Finality
from fencepost.impl.stores import CheckpointApplied
from fencepost.model.state import (
    FETCHED,
    IDLE,
    READER_PHASES,
    READING,
    REREADING,
    SETTLING,
    WRITING,
    Action,
)
from fencepost.model.state import Reader as MReader
from fencepost.properties.coordinates import token_to_model
from fencepost.properties.lockstep import GATED_PROVIDER, GATED_STORE, Call, Reply, Worker
from fencepost.properties.refinement_base import (
    CHECKPOINT_FAULTS,
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

    def _reader_call(self, s: ReaderSlot, name: str, data: st.DataObject) -> None:
        """Release the pass's pending call: a page (and the claim write it leads to), a
        write (a rewrite, a retry or the closing progress write), or a reread."""
        worker = s.worker
        assert worker is not None and worker.pending is not None
        call = worker.pending
        if call.op == "fetch_page":
            self._serve_page(s, name, call, data)
            pending = worker.pending if s.worker is not None else None
            if pending is not None and pending.op == "write_checkpoint":
                self._release_checkpoint_write(s, name, pending, data)
        elif call.op == "write_checkpoint":
            self._release_checkpoint_write(s, name, call, data)
        else:
            self._release_reread(s, name, call)

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
        )
        worker = Worker(name, s.connection, impl_reader.run_pass)
        s.worker, s.revoked, s.page, s.epoch = worker, False, (), epoch
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

    def _can_end(self, name: str) -> bool:
        """The model's reader may end its pass here (plainly, or by its progress write)."""
        return bool(self._moves("end_pass", name)) or any(
            a.detail is not None and a.detail.endswith("; progress")
            for a, _ in self._moves("write_checkpoint", name)
        )

    def _serve_page(self, s: ReaderSlot, name: str, call: Call, data: st.DataObject) -> None:
        worker = s.worker
        assert worker is not None
        partition, token = call.args
        pname = self.ctx.partition_names[s.partition]
        reader = self._reader_state(s)
        if partition != pname:
            self._fail("reader-protocol", f"reader {name} of {pname} fetches from {partition!r}")
        assert token is None or isinstance(token, str)
        if token_to_model(token) != reader.token:
            self._fail(
                "reader-protocol",
                f"reader {name} fetches from token {token!r} but its traversal is at "
                f"{reader.token} (the model's provider cursor)",
            )
        if s.revoked:
            self._end_pass(s, name)
            return
        # Every page the model's provider may give, those with a final claim twice
        # (they are what lets ingest progress), and the end of the pass.
        options: list[Move | None] = [
            move
            for move in self._moves("fetch_page", name)
            for _ in range(
                2 if move[0].page is not None and move[0].page.claim_kind == "final" else 1
            )
        ]
        if self._can_end(name):
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
        """Answer the pass's fetch with an empty last page (no next token): the pass ends.

        Its token moved since the checkpoint it holds: it makes its closing
        progress write next (the model's reader too). Otherwise it ends now.
        """
        worker = s.worker
        assert worker is not None
        if self._reader_state(s).phase == READING:
            plain = self._one("end_pass", name)
            if plain is not None:
                self._advance(plain)
            elif not self._can_end(name):
                self._fail("reader-protocol", f"the model's reader {name} cannot end its pass here")
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

    def _release_checkpoint_write(
        self, s: ReaderSlot, name: str, call: Call, data: st.DataObject
    ) -> None:
        """The write with a drawn fault: acknowledged, response lost after or before it."""
        worker = s.worker
        assert worker is not None
        fault = data.draw(st.sampled_from(CHECKPOINT_FAULTS), label=f"{name}'s write")
        _, expected, checkpoint = call.args
        assert isinstance(checkpoint, Checkpoint)
        self._trace.append(f"impl: reader {name} calls {call}")
        outcome, reply = self._release_write(worker, call, fault, CheckpointApplied)
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
        self._expect_reader(s, name)

    def _release_reread(self, s: ReaderSlot, name: str, call: Call) -> None:
        """The pass rereads its checkpoint: after a lost response, or after giving up."""
        worker = s.worker
        assert worker is not None
        pname = self.ctx.partition_names[s.partition]
        if call.args != (self._stream, s.epoch, pname):
            self._fail("reader-protocol", f"reader {name} rereads the wrong checkpoint: {call}")
        self._trace.append(f"impl: reader {name} rereads its checkpoint: {call}")
        self._advance_reader(self._one("read_checkpoint", name), name, "reread its checkpoint")
        worker.reply(Reply(worker.perform(call)))
        self._expect_reader(s, name)

    def _expect_reader(self, s: ReaderSlot, name: str) -> None:
        """After a release: the pass's next call must be the one the model's reader makes."""
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
        if call.op == "fetch_page" and reader.phase == READING:
            if ahead:
                self._fail(
                    "reader-certify",
                    f"reader {name} was given the final claim "
                    f"{self._coords.cut_to_impl(reader.claim)} ahead of its checkpoint's "
                    f"{self._coords.cut_to_impl(reader.base)} and fetches on without certifying it",
                )
        elif call.op == "write_checkpoint":
            self._expect_checkpoint_write(s, name, call)
        elif call.op == "read_checkpoint" and reader.phase in (REREADING, SETTLING):
            pass
        else:
            self._fail(
                "reader-protocol",
                f"reader {name} goes on to {call} but the model's reader "
                f"({READER_PHASES[reader.phase]}) {self._expected_reader_call(reader)}",
                land=worker,
            )

    @staticmethod
    def _expected_reader_call(reader: MReader) -> str:
        return {
            IDLE: "has ended its pass",
            READING: "fetches or certifies next",
            FETCHED: "records the page's outcomes next",
            WRITING: "writes again next",
            REREADING: "rereads its checkpoint next (its write's response was lost)",
            SETTLING: "rereads its checkpoint next (it gave up writing)",
        }[reader.phase]

    def _expect_checkpoint_write(self, s: ReaderSlot, name: str, call: Call) -> None:
        _, expected, cp = call.args
        assert isinstance(cp, Checkpoint)
        reader = self._reader_state(s)
        wrote = f"writes checkpoint {cp.cut} (token {cp.token!r}) expecting generation {expected}"
        if not self._moves("write_checkpoint", name):
            self._fail(
                "reader-certify",
                f"reader {name} {wrote}, but the model's reader "
                f"({READER_PHASES[reader.phase]}) {self._expected_reader_call(reader)}",
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
