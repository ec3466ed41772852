"""The harness's oracle: the world's facts handed to the judge after every step.

The judgements themselves live in :mod:`fencepost.judge` (section 7 in
:mod:`fencepost.judge.properties`, outcomes in :mod:`fencepost.judge.decide`),
shared with the scenario runners and the history checker. This module only
says which facts of the harness's :class:`~fencepost.harness.world.World` each
judgement gets:

- **soundness** after every step: the record, its epoch's membership and every
  member's ground truth (position, finalized at the source, outcome recorded);
- **publication writes**: the record before and after, the policy, and per
  member the strongest *valid* final checkpoint it ever stored in the new
  record's epoch (:attr:`World.certified`);
- **checkpoint writes**: the checkpoint replaced (and whether the environment
  planted it as a misconfiguration), whether the provider issued the token for
  that partition and epoch, the provider's strongest final claim, the ground
  truth;
- **publish_ok**: everything the attempt was told (its
  :class:`~fencepost.judge.decide.AttemptLog`, which the runner fills: every
  record shown by a read, a conflict or an acknowledged write, the membership,
  the checkpoints, each write and its answer);
- **ingest_ok**: the checkpoint the store holds.

Cost per step: O(P x E) for soundness (P members, E events each); the others are
O(E) or O(P) for the change they judge.
"""

from __future__ import annotations

from fencepost.harness.protocol import IngestOk, PublishOk
from fencepost.harness.rules import Rule
from fencepost.harness.world import World
from fencepost.judge.cuts import compare
from fencepost.judge.decide import AttemptLog, Reported, judge_outcome
from fencepost.judge.properties import (
    CheckpointContext,
    EventFact,
    Property,
    judge_ingest_report,
    judge_restated_claim,
    judge_soundness,
)
from fencepost.judge.properties import (
    judge_checkpoint_write as _judge_checkpoint_write,
)
from fencepost.judge.properties import (
    judge_publication_write as _judge_publication_write,
)
from fencepost.judge.values import NOTHING, BadValue, Checkpoint, Cut, Order, Record

Finding = tuple[Rule, str]


def _rules(found: list[tuple[Property, str]]) -> list[Finding]:
    return [(Rule(prop.value), message) for prop, message in found]


def _facts(world: World, key: tuple[int, str]) -> tuple[EventFact, ...]:
    truth = world.truth.get(key)
    if truth is None:
        return ()
    return tuple(
        EventFact(ev.id, ev.at, index < truth.final, ev.id in world.outcomes)
        for index, ev in enumerate(truth.log)
    )


def judge_state(world: World, record: Record | None = None) -> list[Finding]:
    """Soundness of the current record (or of ``record``, a hypothetical one) against the
    ground truth."""
    record = world.record if record is None else record
    if record.cut.is_nothing:
        return []
    membership = world.memberships.get(record.epoch)
    events = {}
    if membership is not None:
        for partition in membership.partitions:
            truth = world.truth.get((record.epoch, partition))
            # Fast path: the covered prefix is final and recorded, nothing to report.
            if truth is not None and truth.covered(record.cut) <= min(
                truth.final, truth.recorded(world.outcomes)
            ):
                continue
            events[partition] = _facts(world, (record.epoch, partition))
    return _rules(judge_soundness(record, membership, events))


def judge_publication_write(world: World, old: Record, new: Record, policy: str) -> list[Finding]:
    """An accepted write moved the record from ``old`` to ``new`` (already stored)."""
    membership = world.memberships.get(new.epoch)
    certified = {}
    if membership is not None:
        for partition in membership.partitions:
            best = world.certified.get((new.epoch, partition))
            if best is not None:
                certified[partition] = best
    who = new.op_id if new.op_id is not None else "a writer"
    return _rules(
        _judge_publication_write(world.order, old, new, policy, membership, certified)
        + judge_restated_claim(world.order, old, new, who)
    )


def judge_checkpoint_write(
    world: World,
    key: tuple[int, str],
    previous: Checkpoint | None,
    previous_injected: bool,
    written: Checkpoint,
) -> list[Finding]:
    """An accepted write stored ``written`` under ``key`` (epoch, partition)."""
    epoch, partition = key
    issued = world.tokens.get(written.token) if written.token is not None else None
    where = CheckpointContext(
        epoch=epoch,
        partition=partition,
        scope=world.setup.scope,
        previous=previous,
        previous_trusted=not previous_injected,
        token_issued=issued is not None and issued[:2] == key,
        final_claim=world.final_claims.get(key),
        events=_facts(world, key),
    )
    return _rules(_judge_checkpoint_write(world.order, where, written))


def judge_ingest_ok(
    world: World, key: tuple[int, str], reply: IngestOk, acknowledged: Cut | None = None
) -> list[Finding]:
    """``ingest_ok`` may report what the store holds now, or the greatest checkpoint the
    pass itself wrote and saw acknowledged: another reader may have replaced that one
    since (a misfiled checkpoint is replaced by a pass that starts over, section 8), and
    the pass cannot know without a read that could race again."""
    stored = world.stored(*key)
    holds = stored.cut if stored is not None else NOTHING
    if acknowledged is not None:
        try:
            if compare(world.order, acknowledged, holds) > 0:
                holds = acknowledged
        except BadValue:
            pass
    return _rules(judge_ingest_report(world.order, key[0], key[1], reply.cut, holds))


def judge_publish_ok(order: Order, log: AttemptLog, reply: PublishOk) -> list[Finding]:
    """Judge one attempt's outcome against what the attempt itself was told."""
    reported = Reported(reply.outcome, reply.epoch, reply.cut, reply.reason)
    return _rules(judge_outcome(order, log, reported))
