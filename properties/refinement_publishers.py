"""The refinement machine's publisher side: each publisher store call against the model.

Every store call of a publication attempt is released by the controller and
matched with the one model transition that stands for it (read the record,
the membership, the checkpoints; write conditionally with a drawn fault; the
authoritative reread after a lost response). After each release the
implementation's next call, or its reported outcome, must be one the model's
publisher allows in the same interleaving.
"""

from __future__ import annotations

from hypothesis import strategies as st

from fencepost.impl.cuts import Cut
from fencepost.impl.faults import Crash
from fencepost.impl.publisher import Outcome, PublishResult
from fencepost.impl.records import PublicationRecord
from fencepost.impl.stores import Applied, IndefiniteStoreError
from fencepost.model.cuts import NOTHING as MODEL_NOTHING
from fencepost.model.state import (
    HAVE_MEMBERSHIP,
    HAVE_RECORD,
    IDLE,
    IN_DOUBT,
    PROPOSING,
    PUBLISHER_PHASES,
)
from fencepost.model.state import Publisher as MPublisher
from fencepost.properties.lockstep import Call, Reply
from fencepost.properties.refinement_base import (
    CHECKPOINT_READS,
    PUBLICATION_FAULTS,
    Held,
    MachineBase,
    Move,
    PublisherSlot,
    Report,
    describe_result,
)


class PublisherSide(MachineBase):
    """Publisher processes in lockstep with the model's publishers."""

    def _durable_key(self) -> object:
        """What a publication attempt reads, as the model holds it."""
        parts = tuple((p.checkpoints, p.generations) for p in self.model.partitions)
        return (self.model.epoch, self.model.record, parts)

    def _publisher_can_act(self, s: PublisherSlot) -> bool:
        """A running attempt, or one worth starting: what it reads changed, or the last gave up."""
        if s.worker is not None:
            return True
        pub = self.model.publishers[s.model]
        if pub.phase != IDLE or pub.attempts_left == 0:
            return False
        return s.again or s.trigger != self._durable_key()

    def _crash_publisher(self, s: PublisherSlot) -> None:
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

    def _release_publisher(self, s: PublisherSlot, data: st.DataObject) -> None:
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

    def _judge_read_after_loss(self, s: PublisherSlot, record: PublicationRecord) -> None:
        lost = s.attempt.lost
        cut = self._coords.cut_to_model(record.cut)
        if (
            lost is not None
            and cut is not None
            and record.epoch == lost[0]
            and self._rank(cut) >= self._rank(lost[1])
        ):
            s.attempt.shown = True

    def _reread(self, s: PublisherSlot, name: str) -> None:
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
        self, s: PublisherSlot, name: str, call: Call, fault: str
    ) -> None:
        worker = s.worker
        assert worker is not None
        _, expected, epoch, cut, _ = call.args
        assert isinstance(epoch, int) and isinstance(cut, Cut)
        offered = {a.outcome for a, _ in self._moves("write_publication", name)}
        if fault == "in_flight" and "in-flight" not in offered:
            fault = "lose_before"
        if fault == "in_flight":
            self._held.append(Held(s.model, call))
            lost = IndefiniteStoreError(f"injected: the response to {call} was lost")
            outcome, reply = "in-flight", Reply(error=lost)
        else:
            outcome, reply = self._release_write(worker, call, fault, Applied)
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

    def _expect_publisher(self, s: PublisherSlot, name: str, category: str, before: int) -> None:
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
            self._trace.append(f"impl: publisher {name} reports {describe_result(result)}")
            self._reports[s.model] = self._report(s, result)
            s.again = result.outcome is Outcome.GAVE_UP
            if pub.phase != IDLE or before == IDLE:
                self._fail(
                    category,
                    f"publisher {name} reported {describe_result(result)} but the model's "
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

    def _report(self, s: PublisherSlot, result: PublishResult) -> Report:
        reason = result.reason.value if result.reason is not None else ""
        outcome = result.outcome.value
        epoch = result.epoch or 0
        claim = self._coords.cut_to_model(result.cut) if result.cut is not None else None
        proposal = self._coords.cut_to_model(result.proposal) if result.proposal else None
        if result.outcome is Outcome.PUBLISHED:
            justified = claim is not None and s.attempt.acknowledged == (epoch, claim)
            return Report(outcome, reason, justified, epoch, claim or MODEL_NOTHING)
        if result.outcome is Outcome.CONFIRMED:
            return Report(outcome, reason, s.attempt.shown, epoch, proposal or MODEL_NOTHING)
        return Report(outcome, reason, True, 0, MODEL_NOTHING)

    def _compare_outcome(self, name: str, pub: MPublisher, result: PublishResult) -> str | None:
        got = result.outcome.value
        want = pub.outcome + (f" ({pub.reason})" if pub.reason else "")
        said = describe_result(result)
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
