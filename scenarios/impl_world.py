"""The world a scenario runs in on the implementation: a real store, the ground truth,
the scripted provider, and the judge looking at every change.

:class:`ImplWorld` holds one run's durable state (a real
:class:`~fencepost.impl.stores.Store`: memory or SQLite), the scenario's ground
truth (which events the source finalized), the pages the provider serves, and
the environment's misconfigurations. Every call a worker makes reaches it
through :meth:`ImplWorld.perform`, and every accepted write is handed, as the
judge's values, to :mod:`fencepost.judge` (docs/semantics.md section 7): the
same judgements the conformance harness and the history checker make, so a
property means one thing on every target. Nothing here reads cuts itself: the
world only says which facts each judgement gets.

- **publication writes**: the record before and after, the policy, the new
  epoch's membership, and per member the strongest valid final checkpoint it
  ever stored in that epoch;
- **checkpoint writes** by readers under test: the checkpoint replaced (and
  whether the environment planted it), whether the provider issued the token,
  the strongest final claim the provider delivered, the ground truth;
- **soundness** after every step: the record against the ground truth;
- **an attempt's end**: everything the attempt was told (an
  :class:`~fencepost.judge.decide.AttemptLog` the runner fills from the calls it
  answered), against the outcome it reported;
- **an ingest pass's end**: what it reported against what the store holds.

Cost per step: O(P x E) for soundness (P members, E events each); a write is
judged in O(P) or O(E).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

from fencepost.impl.cuts import Cut as ImplCut
from fencepost.impl.provider import Claim, Event, Page, ProviderTimeout
from fencepost.impl.records import Checkpoint, Finality, PublicationRecord
from fencepost.impl.stores import (
    Applied,
    CheckpointApplied,
    CheckpointWrite,
    PublicationWrite,
    Store,
)
from fencepost.judge import values as jv
from fencepost.judge.cuts import compare, covers
from fencepost.judge.decide import AttemptLog, Reported, judge_outcome
from fencepost.judge.properties import (
    CheckpointContext,
    EventFact,
    Finding,
    judge_checkpoint_write,
    judge_ingest_report,
    judge_publication_write,
    judge_soundness,
)
from fencepost.scenarios.convert import (
    to_impl_cut,
    to_impl_membership,
    to_judge_checkpoint,
    to_judge_cut,
    to_judge_record,
)
from fencepost.scenarios.outcome import Breach, ScenarioRuntimeError
from fencepost.scenarios.spec import (
    Scenario,
    Step,
    format_cut,
)

#: The terminal outcome every event handed to a reader gets (and the environment records).
OUTCOME_TEXT = "processed"


@dataclass(frozen=True, slots=True)
class PageDef:
    """A page the provider serves for one token: event ids, the next token, the claim."""

    events: tuple[str, ...]
    next: str | None
    claim: Claim | None


class ImplWorld:
    """One run's durable state, ground truth and provider, judged after every change."""

    def __init__(self, scenario: Scenario, store: Store) -> None:
        self.sc = scenario
        self.store = store
        self.final: set[str] = {
            ev.id for events in scenario.truth.values() for ev in events if ev.final
        }
        self.epoch_index = 0
        #: The epoch whose membership is durable (a record naming a later one is unsound).
        self.durable_epoch = scenario.epochs[0].epoch
        #: Keys whose stored checkpoint the environment planted (a misconfiguration).
        self.injected: set[tuple[int, str]] = set()
        #: Misfiled checkpoints (stamped with the previous epoch) read in place of a key's row.
        self.misfiled: dict[tuple[int, str], Checkpoint] = {}
        self.pages: dict[tuple[int, str, str | None], PageDef] = {}
        self.page_losses: dict[tuple[int, str, str | None], int] = {}
        self.delivered: dict[tuple[int, str], set[str]] = {}
        #: Tokens the provider issued per (epoch, partition): those of served pages.
        self.issued: dict[tuple[int, str], set[str]] = {}
        #: The strongest final claim delivered per (epoch, partition), as the judge reads it.
        self.final_claims: dict[tuple[int, str], jv.Cut] = {}
        #: The strongest valid final checkpoint ever stored per (epoch, partition).
        self.certified: dict[tuple[int, str], jv.Cut] = {}
        #: op_id -> the worker that first wrote with it (attribution of the record).
        self.writers: dict[str, str] = {}
        self.breach: Breach | None = None
        self.step: Step | None = None

    @property
    def epoch(self) -> int:
        return self.sc.epochs[self.epoch_index].epoch

    # -- findings --------------------------------------------------------------------

    def found(self, findings: Sequence[Finding]) -> None:
        """Keep the first broken property (the run stops there)."""
        if findings and self.breach is None:
            prop, message = findings[0]
            step = self.step
            self.breach = Breach(
                prop.value, message, step.index if step else 0, step.line if step else 0
            )

    def _order(self, epoch: int) -> jv.Order:
        """The order of ``epoch``'s first member (a scenario with incomparable orders never
        publishes, so the judgements of a write need only one)."""
        members = self.sc.epoch_def(epoch).members
        return self.sc.orders[members[sorted(members)[0]]] if members else _ANY_ORDER

    def _facts(self, epoch: int, partition: str) -> tuple[EventFact, ...]:
        events = self.sc.events(epoch, partition)
        durable = self.store.outcomes(self.sc.stream, [ev.id for ev in events]) if events else {}
        return tuple(
            EventFact(ev.id, ev.at, ev.id in self.final, ev.id in durable) for ev in events
        )

    def judge_soundness(self) -> None:
        record = to_judge_record(self.store.read_publication(self.sc.stream))
        if record.cut.is_nothing:
            return
        known = {e.epoch for e in self.sc.epochs}
        membership = (
            self.sc.membership(record.epoch)
            if record.epoch in known and record.epoch <= self.durable_epoch
            else None
        )
        events = {}
        if membership is not None:
            events = {p: self._facts(record.epoch, p) for p in membership.partitions}
        self.found(judge_soundness(record, membership, events))

    def judge_attempt(self, log: AttemptLog, reported: Reported) -> None:
        self.found(judge_outcome(self._order(self.epoch), log, reported))

    def judge_ingest(self, epoch: int, partition: str, reported: ImplCut) -> None:
        stored = self.read_checkpoint(epoch, partition)
        holds = jv.NOTHING if stored is None else to_judge_cut(stored.cut)
        order = self.sc.order_of(epoch, partition)
        self.found(judge_ingest_report(order, epoch, partition, to_judge_cut(reported), holds))

    # -- judged writes ---------------------------------------------------------------

    def write_publication(
        self, expected: int, epoch: int, cut: ImplCut, op_id: str
    ) -> PublicationWrite:
        old = self.store.read_publication(self.sc.stream)
        result = self.store.write_publication(self.sc.stream, expected, epoch, cut, op_id)
        if isinstance(result, Applied):
            new = to_judge_record(result.record)
            known = {e.epoch for e in self.sc.epochs}
            membership = self.sc.membership(new.epoch) if new.epoch in known else None
            certified = {}
            if membership is not None:
                for partition in membership.partitions:
                    best = self.certified.get((new.epoch, partition))
                    if best is not None:
                        certified[partition] = best
            self.found(
                judge_publication_write(
                    self._order(new.epoch if new.epoch in known else self.epoch),
                    to_judge_record(old),
                    new,
                    self.sc.policy,
                    membership,
                    certified,
                )
            )
        return result

    def write_checkpoint(
        self,
        expected: int | None,
        checkpoint: Checkpoint,
        labels: tuple[str, int] | None,
        injected: bool = False,
    ) -> CheckpointWrite:
        """Store ``checkpoint`` conditionally; judge it when a reader under test wrote it.

        ``labels`` is the (partition, epoch) of the ingest pass that wrote it (None:
        the environment wrote it, as an honest reader or, ``injected``, as a
        misconfiguration).
        """
        key = (checkpoint.epoch, checkpoint.partition)
        old = self.store.read_checkpoint(self.sc.stream, *key)
        result = self.store.write_checkpoint(self.sc.stream, expected, checkpoint)
        if not isinstance(result, CheckpointApplied):
            return result
        written = result.checkpoint
        previous_injected = key in self.injected
        self.misfiled.pop(key, None)
        if injected:
            self.injected.add(key)
        else:
            self.injected.discard(key)
        if labels is not None:
            partition, epoch = labels
            where = CheckpointContext(
                epoch=epoch,
                partition=partition,
                scope=self.sc.scope,
                previous=None if old is None else to_judge_checkpoint(old),
                previous_trusted=not previous_injected,
                token_issued=written.token is None
                or written.token in self.issued.get((epoch, partition), set())
                or (old is not None and written.token == old.token),
                final_claim=self.final_claims.get((epoch, partition)),
                events=self._facts(epoch, partition),
            )
            self.found(
                judge_checkpoint_write(
                    self.sc.order_of(epoch, partition), where, to_judge_checkpoint(written)
                )
            )
        if (
            not injected
            and written.finality is Finality.FINAL
            and written.scope == self.sc.scope
            and written.epoch in {e.epoch for e in self.sc.epochs}
            and written.partition in self.sc.epoch_def(written.epoch).members
        ):
            self._strongest(self.certified, key, to_judge_cut(written.cut))
        return result

    def _strongest(
        self, table: dict[tuple[int, str], jv.Cut], key: tuple[int, str], cut: jv.Cut
    ) -> None:
        order = self.sc.order_of(*key)
        best = table.get(key)
        if best is None or compare(order, cut, best) > 0:
            table[key] = cut

    def read_checkpoint(self, epoch: int, partition: str) -> Checkpoint | None:
        misfiled = self.misfiled.get((epoch, partition))
        if misfiled is not None:
            return misfiled
        return self.store.read_checkpoint(self.sc.stream, epoch, partition)

    def read_checkpoints(self, epoch: int) -> list[Checkpoint]:
        rows = {c.partition: c for c in self.store.read_checkpoints(self.sc.stream, epoch)}
        for (e, partition), misfiled in self.misfiled.items():
            if e == epoch:
                rows[partition] = misfiled
        return [rows[p] for p in sorted(rows)]

    def record_publication_writer(self, op_id: str, worker: str) -> None:
        self.writers.setdefault(op_id, worker)  # spent even if the write is never applied

    # -- the provider ----------------------------------------------------------------

    def page(self, epoch: int, partition: str, token: str | None) -> Page:
        """The page served for ``token``; an empty page with no claim when none is scripted.

        Raises :class:`ProviderTimeout` while the scenario makes this token's
        fetches time out, and :class:`ScenarioRuntimeError` when a final claim
        would be untrue (the environment is honest: only the system under test
        may be wrong).
        """
        key = (epoch, partition, token)
        losses = self.page_losses.get(key, 0)
        if losses:
            self.page_losses[key] = losses - 1
            raise ProviderTimeout(
                f"scripted: the source timed out serving {partition} at {token!r}"
            )
        definition = self.pages.get(key)
        if definition is None:
            return Page((), None, None)
        truth = {ev.id: ev for ev in self.sc.events(epoch, partition)}
        events = tuple(Event(i, truth[i].at) for i in definition.events)
        seen = self.delivered.setdefault((epoch, partition), set())
        seen.update(definition.events)
        if definition.next is not None:
            self.issued.setdefault((epoch, partition), set()).add(definition.next)
        claim = definition.claim
        if claim is not None and claim.final:
            judged = to_judge_cut(claim.cut)
            order = self.sc.order_of(epoch, partition)
            for ev in truth.values():
                if not covers(order, judged, ev.at):
                    continue
                if ev.id not in self.final:
                    raise ScenarioRuntimeError(
                        f"the provider's final claim {format_cut(judged)} for {partition} "
                        f"covers {ev.id}, which the source has not finalized; finalize it first "
                        "or make the claim non-final (final = false)"
                    )
                if ev.id not in seen:
                    raise ScenarioRuntimeError(
                        f"the provider's final claim {format_cut(judged)} for {partition} "
                        f"covers {ev.id}, which no page has delivered; serve it on a page first"
                    )
            self._strongest(self.final_claims, (epoch, partition), judged)
        return Page(events, definition.next, claim)

    # -- the environment ---------------------------------------------------------------

    def certify(self, partition: str, cut: jv.Cut) -> str:
        """An honest reader certifies ``cut`` in the current epoch (its downset settled)."""
        epoch = self.epoch
        order = self.sc.order_of(epoch, partition)
        stored = self.read_checkpoint(epoch, partition)
        if stored is not None and compare(order, cut, to_judge_cut(stored.cut)) <= 0:
            raise ScenarioRuntimeError(
                f"certify {partition} {format_cut(cut)}: the stored checkpoint is already "
                f"{format_cut(to_judge_cut(stored.cut))}; an honest reader only certifies a cut "
                "ahead of it"
            )
        for ev in self.sc.events(epoch, partition):
            if covers(order, cut, ev.at):
                self.final.add(ev.id)
                self.store.record_outcome(self.sc.stream, ev.id, OUTCOME_TEXT)
        raw = self.store.read_checkpoint(self.sc.stream, epoch, partition)
        checkpoint = Checkpoint(
            partition,
            to_impl_cut(cut),
            None if raw is None else raw.token,
            1 if raw is None else raw.generation + 1,
            self.sc.scope,
            epoch,
            Finality.FINAL,
        )
        result = self.write_checkpoint(None if raw is None else raw.generation, checkpoint, None)
        assert isinstance(result, CheckpointApplied)
        return (
            f"an honest reader certifies {partition} {format_cut(cut)} in epoch {epoch} "
            f"(generation {result.checkpoint.generation})"
        )

    def misconfigure(self, partition: str, kind: str, cut: jv.Cut) -> str:
        """An operator stores a provisional, wrong-scope or previous-epoch checkpoint."""
        epoch = self.epoch
        raw = self.store.read_checkpoint(self.sc.stream, epoch, partition)
        base = Checkpoint(
            partition,
            to_impl_cut(cut),
            "misconfigured",
            1 if raw is None else raw.generation + 1,
            self.sc.scope,
            epoch,
            Finality.FINAL,
        )
        if kind == "wrong_epoch":
            previous = self.sc.epochs[self.epoch_index - 1].epoch
            self.misfiled[(epoch, partition)] = dataclasses.replace(
                base, epoch=previous, generation=1 if raw is None else raw.generation
            )
            return (
                f"an operator misfiles {partition}'s checkpoint of epoch {previous} "
                f"({format_cut(cut)}) as its checkpoint of epoch {epoch}"
            )
        if kind == "provisional":
            bad = dataclasses.replace(base, finality=Finality.PROVISIONAL)
        else:
            bad = dataclasses.replace(base, scope=f"not-{self.sc.scope}")
        self.write_checkpoint(None if raw is None else raw.generation, bad, None, injected=True)
        return (
            f"an operator stores a {kind.replace('_', ' ')} checkpoint {partition} "
            f"{format_cut(cut)} in epoch {epoch}"
        )

    def reshard(self, epoch: int) -> str:
        self.store.write_membership(self.sc.stream, to_impl_membership(self.sc.membership(epoch)))
        self.epoch_index += 1
        self.durable_epoch = epoch
        return f"the membership of epoch {epoch} becomes durable"

    def publication(self) -> PublicationRecord:
        return self.store.read_publication(self.sc.stream)


_ANY_ORDER = jv.Order.integer("none", False)
