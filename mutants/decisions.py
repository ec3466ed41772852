"""Known bugs in what a publication attempt decides from its reads, each written once.

A merge bug is one function with the signature of
:func:`~fencepost.impl.merge.merge`: the algebra level answers ``merge`` with it,
and its publisher (:func:`publisher_with`) decides every attempt with it, through
the one seam :func:`~fencepost.impl.publisher.decide` offers (``merge_rule``).
The other decision bugs subclass
:class:`~fencepost.impl.publisher.Publisher` at ``_decide``. None copies
production code: each computes the production answer on a bent input, or bends
the production answer.

Cost: each rule is the production merge plus O(P) for P members.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Sequence

from fencepost.impl.cuts import Cut, Endpoint, compare_cuts
from fencepost.impl.merge import Withheld, merge
from fencepost.impl.orders import Coordinate, Order
from fencepost.impl.publisher import Policy, Publisher, PublisherStore, _Propose, _Stop, decide
from fencepost.impl.records import Checkpoint, Finality, Membership, PublicationRecord
from fencepost.mutants.variant import MergeRule

# --- merge rules ------------------------------------------------------------------------


def relabel(membership: Membership, checkpoints: Sequence[Checkpoint]) -> Cut | Withheld:
    """``before x`` becomes ``through x`` when another member certified ``through x``:
    the coordinates match, so "it is the same boundary" (cockroach PR #41665)."""
    result = merge(membership, checkpoints)
    if (
        isinstance(result, Cut)
        and result.at is not None
        and result.endpoint is Endpoint.BEFORE
        and any(c.cut.endpoint is Endpoint.THROUGH and c.cut.at == result.at for c in checkpoints)
    ):
        return Cut.through(result.at)
    return result


def skip_missing(membership: Membership, checkpoints: Sequence[Checkpoint]) -> Cut | Withheld:
    """A member without a checkpoint is treated as idle and left out: the minimum is taken
    over the members that reported (FLINK-40094, pingcap/tiflow #12598). With no member
    reporting there is nothing to take a minimum over: ``missing_checkpoint`` as usual."""
    present = {c.partition for c in checkpoints} & set(membership.partitions)
    if not present:
        return merge(membership, checkpoints)
    reporting = Membership(
        membership.epoch,
        membership.scope,
        {p: o for p, o in membership.partitions.items() if p in present},
        membership.orders,
    )
    return merge(reporting, checkpoints)


def incomparable_scalar(
    membership: Membership, checkpoints: Sequence[Checkpoint]
) -> Cut | Withheld:
    """Members on orders of different names are merged as if they shared the first
    member's order: a scalar frontier across incomparable orders instead of withheld
    ``incomparable`` (docs/semantics.md section 4, reason 5). Not in the catalog: the
    conformance harness's test of the incomparable world uses it
    (tests/harness/test_search_power.py)."""
    return merge(_one_order(membership), checkpoints)


def _one_order(membership: Membership) -> Membership:
    """``membership`` with every member on its first member's order."""
    if len(membership.order_names) < 2:
        return membership
    first = membership.partitions[sorted(membership.partitions)[0]]
    return Membership(
        membership.epoch,
        membership.scope,
        dict.fromkeys(membership.partitions, first),
        {first: membership.orders[first]},
    )


def _bump(at: Coordinate) -> Coordinate:
    """A manufactured 'next' coordinate: +1, or the string with a NUL appended."""
    return at + 1 if isinstance(at, int) else at + "\x00"


def epsilon(membership: Membership, checkpoints: Sequence[Checkpoint]) -> Cut | Withheld:
    """``through x`` is normalised to ``before x+1`` on an order without an exact successor
    (a manufactured successor: cockroach #82488, Debezium DBZ-5915)."""
    bent = []
    for c in checkpoints:
        order = _order_of(membership, c.partition)
        if (
            order is not None
            and not order.has_successor
            and c.cut.endpoint is Endpoint.THROUGH
            and c.cut.at is not None
        ):
            c = dataclasses.replace(c, cut=Cut.before(_bump(c.cut.at)))
        bent.append(c)
    return merge(membership, bent)


def epoch_blind(membership: Membership, checkpoints: Sequence[Checkpoint]) -> Cut | Withheld:
    """Every checkpoint is read as the current epoch's: the epoch field is never checked
    (pingcap/tiflow #12598, Materialize #29432)."""
    return merge(membership, [dataclasses.replace(c, epoch=membership.epoch) for c in checkpoints])


def provisional_ok(membership: Membership, checkpoints: Sequence[Checkpoint]) -> Cut | Withheld:
    """A provisional checkpoint is trusted as final ("caught up at this moment";
    apache/beam #37326)."""
    final = [dataclasses.replace(c, finality=Finality.FINAL) for c in checkpoints]
    return merge(membership, final)


def scope_blind(membership: Membership, checkpoints: Sequence[Checkpoint]) -> Cut | Withheld:
    """A checkpoint certified for another query scope is read as this membership's
    (docs/semantics.md section 4: ``scope_mismatch`` is never raised)."""
    return merge(membership, [dataclasses.replace(c, scope=membership.scope) for c in checkpoints])


def reason_order(membership: Membership, checkpoints: Sequence[Checkpoint]) -> Cut | Withheld:
    """Scope is checked before epoch: with both wrong, ``scope_mismatch`` is reported where
    the documented order (docs/semantics.md section 4) says ``epoch_mismatch``."""
    wrong_scope = any(
        c.partition in membership.partitions and c.scope != membership.scope for c in checkpoints
    )
    if not wrong_scope:
        return merge(membership, checkpoints)
    return epoch_blind(membership, checkpoints)


def _order_of(membership: Membership, partition: str) -> Order | None:
    return membership.order_of(partition) if partition in membership.partitions else None


def compare_swapped(order: Order, a: Cut, b: Cut) -> int:
    """``compare`` with before and through read the wrong way round."""
    return compare_cuts(order, _swapped(a), _swapped(b))


def _swapped(cut: Cut) -> Cut:
    if cut.endpoint is Endpoint.BEFORE:
        return Cut(Endpoint.THROUGH, cut.at)
    if cut.endpoint is Endpoint.THROUGH:
        return Cut(Endpoint.BEFORE, cut.at)
    return cut


# --- publishers --------------------------------------------------------------------------


def publisher_with(rule: MergeRule) -> type[Publisher]:
    """The production publisher deciding every attempt with ``rule`` instead of the merge."""

    class RulePublisher(Publisher):
        def _decide(
            self,
            record: PublicationRecord,
            membership: Membership,
            checkpoints: Sequence[Checkpoint],
        ) -> _Propose | _Stop:
            return decide(record, membership, checkpoints, self.policy, rule)

    RulePublisher.__name__ = RulePublisher.__qualname__ = f"Publisher[{rule.__name__}]"
    RulePublisher.__doc__ = f"The publisher deciding with ``{rule.__name__}``: {rule.__doc__}"
    return RulePublisher


class IncomparableScalarPublisher(Publisher):
    """:func:`incomparable_scalar` at the publisher level: the attempt decides as if every
    member shared the first member's order, so it publishes a scalar frontier across
    incomparable orders."""

    def _decide(
        self,
        record: PublicationRecord,
        membership: Membership,
        checkpoints: Sequence[Checkpoint],
    ) -> _Propose | _Stop:
        return decide(record, _one_order(membership), checkpoints, self.policy)


class EpochBlindPublisher(Publisher):
    """epoch-blind at the publisher level: a member keeps the newest checkpoint ever read.

    The store answers ``read_checkpoints`` for one epoch only, so an epoch-blind
    merge alone sees nothing wrong there. The realistic form of the bug is a
    cache keyed by partition alone: the publisher remembers every checkpoint it
    read, and a member without one in the current epoch keeps its older epoch's,
    which :func:`epoch_blind` then reads as current.
    """

    def __init__(
        self,
        store: PublisherStore,
        stream: str,
        worker: str,
        policy: Policy = Policy.MONOTONE,
        max_retries: int = 3,
        log: logging.Logger | None = None,
        *,
        first_op: int = 1,
    ) -> None:
        super().__init__(store, stream, worker, policy, max_retries, log, first_op=first_op)
        self._seen: dict[str, Checkpoint] = {}

    def _decide(
        self, record: PublicationRecord, membership: Membership, checkpoints: Sequence[Checkpoint]
    ) -> _Propose | _Stop:
        for c in checkpoints:
            self._seen[c.partition] = c
        vector = [self._seen[p] for p in sorted(membership.partitions) if p in self._seen]
        return decide(record, membership, vector, self.policy, epoch_blind)


class CutoverRegressPublisher(Publisher):
    """cutover-regress: under ``monotone`` the record cuts over to a new epoch whose merged
    cut is below the record's (docs/semantics.md section 6 applied as ``reset``)."""

    def _decide(
        self, record: PublicationRecord, membership: Membership, checkpoints: Sequence[Checkpoint]
    ) -> _Propose | _Stop:
        return decide(record, membership, checkpoints, Policy.RESET)


class CompareSwapPublisher(Publisher):
    """compare-swap at the publisher level: every comparison of the attempt, in the merge
    and against the record, reads ``before`` as ``through`` and ``through`` as ``before``.

    It decides on the swapped record and checkpoints, which is exactly deciding with
    :func:`compare_swapped`, and swaps the cut it proposes back.
    """

    def _decide(
        self, record: PublicationRecord, membership: Membership, checkpoints: Sequence[Checkpoint]
    ) -> _Propose | _Stop:
        swapped = decide(
            dataclasses.replace(record, cut=_swapped(record.cut)),
            membership,
            [dataclasses.replace(c, cut=_swapped(c.cut)) for c in checkpoints],
            self.policy,
        )
        if isinstance(swapped, _Propose):
            return dataclasses.replace(swapped, cut=_swapped(swapped.cut))
        if swapped.proposal is not None:
            return dataclasses.replace(swapped, proposal=_swapped(swapped.proposal))
        return swapped
