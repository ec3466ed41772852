"""Hypothesis strategies for the values of docs/semantics.md, for testing your own code.

For users who test their own Python implementation against fencepost's judge
(:mod:`fencepost.judge`): every strategy draws the judge's values
(:mod:`fencepost.judge.values`), and :func:`wire` turns any of them into the JSON
of docs/conformance-protocol.md ("Values"), ready for your own parser.

- :func:`orders`: integer orders with or without an exact successor, string orders;
- :func:`coordinates` of an order: small clustered values, so that cuts meet at
  one coordinate often (where ``before x`` and ``through x`` differ), huge
  integers and strings above U+FFFF included;
- :func:`cuts` of an order: ``nothing``, ``before x``, ``through x``;
- :func:`memberships`: an epoch, a scope, members over one or more orders;
- :func:`checkpoint_vectors`: one checkpoint per member (or none), valid for the
  membership, or with ``faults`` also missing, provisional, other-scope or
  other-epoch checkpoints (each merge reason of docs/semantics.md section 4 is
  reachable);
- :func:`merge_cases`: a membership with a checkpoint vector, as ``(membership,
  checkpoints)``.

Example (your merge against the judge's; docs/pytest.md has it whole)::

    from hypothesis import given
    from fencepost.judge.merge import merge
    from fencepost.testing import strategies as fs

    @given(fs.merge_cases())
    def test_my_merge_agrees_with_the_judge(case):
        membership, checkpoints = case
        mine = my_merge(fs.wire(membership), fs.wire(checkpoints))  # your code, wire form in
        assert same_verdict(mine, merge(membership, checkpoints))  # a Cut or a Withheld

Every strategy shrinks towards few members, small coordinates and valid values.
"""

from __future__ import annotations

from collections.abc import Sequence

from hypothesis import strategies as st

from fencepost.judge.values import (
    Checkpoint,
    Coordinate,
    Cut,
    Finality,
    Membership,
    Order,
    OrderKind,
    Record,
)
from fencepost.judge.wire import (
    JSON,
    checkpoint_to_json,
    cut_to_json,
    membership_to_json,
    record_to_json,
)

#: Integers near each other (cuts meet at one coordinate often), and huge ones.
_INTEGERS = st.one_of(
    st.integers(-2, 6),
    st.sampled_from([2**63 - 1, 2**63, -(2**63), 10**40]),
)
#: Strings that order by code point: the empty string, NUL, above U+FFFF.
_STRINGS = st.one_of(
    st.sampled_from(["", "a", "ab", "b", "a\x00", "\uffee", "\U0001f600"]),
    st.text(alphabet="ab\x00\uffee\U0001f600", max_size=3),
)


def orders(name: str | None = None) -> st.SearchStrategy[Order]:
    """An order: integers with an exact successor (offsets), dense integers, or strings."""
    names = st.just(name) if name is not None else st.sampled_from(["offsets", "millis", "keys"])
    return st.one_of(
        st.builds(Order.integer, names, st.booleans()),
        st.builds(Order.string, names),
    )


def coordinates(order: Order) -> st.SearchStrategy[Coordinate]:
    """A coordinate of ``order`` (see the module docstring for the mix)."""
    if order.kind is OrderKind.INTEGER:
        return _INTEGERS
    return _STRINGS


def cuts(order: Order, *, nothing: bool = True) -> st.SearchStrategy[Cut]:
    """A cut of ``order``: ``before x`` or ``through x``, and ``nothing`` unless told not to."""
    at = coordinates(order)
    drawn = st.one_of(st.builds(Cut.before, at), st.builds(Cut.through, at))
    return st.one_of(st.just(Cut.nothing()), drawn) if nothing else drawn


@st.composite
def memberships(
    draw: st.DrawFn,
    *,
    min_members: int = 1,
    max_members: int = 4,
    orders_per_membership: int = 1,
) -> Membership:
    """A membership: epoch 1-5, scope ``q1``, members ``A``, ``B``, ... over up to
    ``orders_per_membership`` orders (two or more make incomparable members possible)."""
    if not 1 <= min_members <= max_members:
        raise ValueError("1 <= min_members <= max_members")
    count = draw(st.integers(min_members, max_members))
    kinds = draw(
        st.lists(orders(), min_size=1, max_size=max(1, orders_per_membership), unique_by=str)
    )
    named = {f"o{i}": _renamed(order, f"o{i}") for i, order in enumerate(kinds)}
    members = [chr(ord("A") + i) for i in range(count)]
    partitions = {m: draw(st.sampled_from(sorted(named))) for m in members}
    epoch = draw(st.integers(1, 5))
    return Membership(epoch, "q1", partitions, named)


def _renamed(order: Order, name: str) -> Order:
    return Order(name, order.kind, order.successor)


@st.composite
def checkpoint_vectors(
    draw: st.DrawFn, membership: Membership, *, faults: bool = False
) -> tuple[Checkpoint, ...]:
    """One checkpoint per member of ``membership``, in member order.

    Valid ones (final, this epoch, this scope, a cut of the member's order); with
    ``faults``, members may also have none, or a provisional, other-scope or
    other-epoch checkpoint: the merge must withhold for each.
    """
    out = []
    for partition in sorted(membership.partitions):
        order = membership.order_of(partition)
        fault = draw(
            st.sampled_from(["none", "missing", "provisional", "scope", "epoch"])
            if faults
            else st.just("none")
        )
        if fault == "missing":
            continue
        epoch = membership.epoch
        if fault == "epoch":
            epoch = draw(st.integers(0, epoch + 1).filter(lambda e: e != membership.epoch))
        out.append(
            Checkpoint(
                partition=partition,
                cut=draw(cuts(order)),
                token=draw(st.one_of(st.none(), st.text(alphabet="tk-0123", max_size=6))),
                generation=draw(st.integers(1, 9)),
                scope="q2" if fault == "scope" else membership.scope,
                epoch=epoch,
                finality=Finality.PROVISIONAL if fault == "provisional" else Finality.FINAL,
            )
        )
    return tuple(out)


@st.composite
def merge_cases(
    draw: st.DrawFn, *, faults: bool = True, max_members: int = 4, orders_per_membership: int = 1
) -> tuple[Membership, tuple[Checkpoint, ...]]:
    """A membership and a checkpoint vector for it (see :func:`checkpoint_vectors`)."""
    membership = draw(
        memberships(max_members=max_members, orders_per_membership=orders_per_membership)
    )
    return membership, draw(checkpoint_vectors(membership, faults=faults))


@st.composite
def records(draw: st.DrawFn, order: Order | None = None) -> Record:
    """A publication record ``(epoch, cut, revision, op_id)`` on ``order`` (drawn if None)."""
    chosen = order if order is not None else draw(orders())
    return Record(
        epoch=draw(st.integers(0, 5)),
        cut=draw(cuts(chosen)),
        revision=draw(st.integers(0, 50)),
        op_id=draw(st.one_of(st.none(), st.text(alphabet="w12-", min_size=1, max_size=6))),
    )


def wire(value: Cut | Membership | Checkpoint | Record | Sequence[Checkpoint]) -> JSON:
    """``value`` in the wire form of docs/conformance-protocol.md (a vector: a JSON array)."""
    if isinstance(value, Cut):
        return cut_to_json(value)
    if isinstance(value, Membership):
        return membership_to_json(value)
    if isinstance(value, Checkpoint):
        return checkpoint_to_json(value)
    if isinstance(value, Record):
        return record_to_json(value)
    return [checkpoint_to_json(c) for c in value]
