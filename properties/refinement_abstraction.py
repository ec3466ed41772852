"""The abstraction function: the implementation's durable state as a model state.

After every step the store's state (membership epochs, the publication record,
every checkpoint, durable outcomes) is read through an observer connection and
mapped onto the model's state; ground truth (positions, source finality, moved
events) is the harness's. Where they differ, a ``state-*`` finding names the
difference; on the abstracted state every invariant of docs/semantics.md
section 7 is evaluated (an ``invariant`` finding), and so is every invariant on
the model's own state (a ``model-*`` finding: a broken model is reported as
such, never blamed on the implementation).
"""

from __future__ import annotations

from collections.abc import Callable

from fencepost.impl.records import Checkpoint, Finality
from fencepost.model.cuts import NOTHING as MODEL_NOTHING
from fencepost.model.invariants import INVARIANTS
from fencepost.model.state import MISSING, History, Record, State
from fencepost.model.state import Checkpoint as MCheckpoint
from fencepost.properties.coordinates import token_to_model
from fencepost.properties.refinement_base import EPOCHS, MachineBase
from fencepost.properties.refinement_report import Finding


class Abstraction(MachineBase):
    """Maps the store's durable state onto the model's and judges section 7 on it."""

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
        token = token_to_model(cp.token)
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
