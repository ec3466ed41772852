"""Between the judge's values, in which scenarios are written, and the implementation's.

A scenario file is read into :mod:`fencepost.judge.values` (the specification's
reading of cuts and orders). The implementation runner hands the implementation
its own values and reads the store back into the judge's, so that what the
scenario expects is compared, and judged, by the judge alone.

Cost: O(size of the value).
"""

from __future__ import annotations

from fencepost.impl import cuts as impl_cuts
from fencepost.impl import orders as impl_orders
from fencepost.impl import records as impl_records
from fencepost.judge import values as judge


def to_impl_cut(cut: judge.Cut) -> impl_cuts.Cut:
    return impl_cuts.Cut(impl_cuts.Endpoint(cut.endpoint.value), cut.at)


def to_judge_cut(cut: impl_cuts.Cut) -> judge.Cut:
    return judge.Cut(judge.Endpoint(cut.endpoint.value), cut.at)


def to_impl_order(order: judge.Order) -> impl_orders.Order:
    if order.kind is judge.OrderKind.INTEGER:
        return impl_orders.IntegerOrder(order.name, order.successor)
    return impl_orders.StringOrder(order.name)


def to_impl_membership(membership: judge.Membership) -> impl_records.Membership:
    return impl_records.Membership(
        membership.epoch,
        membership.scope,
        dict(membership.partitions),
        {name: to_impl_order(order) for name, order in membership.orders.items()},
    )


def to_judge_checkpoint(checkpoint: impl_records.Checkpoint) -> judge.Checkpoint:
    return judge.Checkpoint(
        checkpoint.partition,
        to_judge_cut(checkpoint.cut),
        checkpoint.token,
        checkpoint.generation,
        checkpoint.scope,
        checkpoint.epoch,
        judge.Finality(checkpoint.finality.value),
    )


def to_judge_record(record: impl_records.PublicationRecord) -> judge.Record:
    return judge.Record(record.epoch, to_judge_cut(record.cut), record.revision, record.op_id)


def to_judge_membership(membership: impl_records.Membership) -> judge.Membership:
    return judge.Membership(
        membership.epoch,
        membership.scope,
        dict(membership.partitions),
        {name: to_judge_order(order) for name, order in membership.orders.items()},
    )


def to_judge_order(order: impl_orders.Order) -> judge.Order:
    if order.kind == "integer":
        return judge.Order.integer(order.name, order.has_successor)
    return judge.Order.string(order.name)
