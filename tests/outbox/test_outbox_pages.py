"""The outbox provider's page and claim logic and its tokens, without a database.

:func:`build_page` turns the decided rows after a position into a page and its
claim. The property test paginates random outboxes through it the way the SQL
does (keyset on ``(xid, id)``, only rows below xmin) while xmin advances and
transactions commit out of order, and checks the reader's promise: every claim
is covered by rows delivered so far, and every decided row is delivered exactly
once. The same harness run with a provider that claims from the greatest xid
seen fails it (teeth).
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fencepost.impl.cuts import Cut, Endpoint
from fencepost.impl.errors import InvalidValue
from fencepost.impl.provider import Claim, Page
from fencepost.impl.providers.postgres_outbox import (
    XID8_MAX,
    XID8_ORDER,
    OutboxError,
    OutboxEvent,
    OutboxRow,
    Position,
    build_page,
    decode_token,
    encode_token,
    resume_token,
)

EPOCH_EDGE = 2**32  # xid8 of epoch 1, xid 0: the 32-bit xid wrapped here


def rows(*pairs: tuple[int, int]) -> list[OutboxRow]:
    return [OutboxRow(x, str(i)) for x, i in pairs]


# --- tokens -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "position",
    [
        Position(0, None),
        Position(3, "1"),
        Position(EPOCH_EDGE - 1, "42"),
        Position(EPOCH_EDGE, "43"),
        Position(EPOCH_EDGE + 1, None),
        Position(XID8_MAX, "9223372036854775807"),
        Position(5 << 32 | 7, 'a:b/"c" é \U0001f600'),
    ],
)
def test_tokens_round_trip_every_xid8_and_any_id(position: Position) -> None:
    token = encode_token("orders.outbox_p0", position)
    assert token.startswith("pgo1.") and token.isascii()
    assert decode_token("orders.outbox_p0", token) == position


@pytest.mark.parametrize(
    "token",
    [
        "",
        "o3s1",
        "pgo1.",
        "pgo1.!!!",
        "pgo1." + base64.urlsafe_b64encode(b"not json").decode(),
        "pgo1." + base64.urlsafe_b64encode(b'["p","-1",null]').decode(),
        "pgo1." + base64.urlsafe_b64encode(b'["p","18446744073709551616",null]').decode(),
        "pgo1." + base64.urlsafe_b64encode(b'["p",5,null]').decode(),
        "pgo1." + base64.urlsafe_b64encode(b'["p","5",7]').decode(),
        "pgo1." + base64.urlsafe_b64encode(b'["p","5"]').decode(),
        "pgo1." + base64.urlsafe_b64encode(b'{"p": 1}').decode(),
    ],
)
def test_damaged_tokens_are_refused(token: str) -> None:
    with pytest.raises(InvalidValue, match="token"):
        decode_token("p", token)


def test_a_token_is_refused_for_another_partition() -> None:
    token = encode_token("a", Position(10, "1"))
    with pytest.raises(InvalidValue, match="issued for partition 'a', not 'b'"):
        decode_token("b", token)


def test_resume_from_a_cut_alone_skips_only_what_the_cut_covers() -> None:
    token = resume_token("p", Cut.before(EPOCH_EDGE + 5))
    assert token is not None
    assert decode_token("p", token) == Position(EPOCH_EDGE + 5, None)
    assert resume_token("p", Cut.nothing()) is None
    with pytest.raises(InvalidValue):
        resume_token("p", Cut.through(5))  # this provider never certifies through
    with pytest.raises(InvalidValue):
        resume_token("p", Cut.before(-1))


# --- one page -----------------------------------------------------------------------------


def test_a_page_that_reaches_the_end_claims_before_xmin() -> None:
    page = build_page("p", 30, rows((10, 1), (10, 2), (20, 3)), page_size=5)
    assert [e.id for e in page.events] == ["p:1", "p:2", "p:3"]
    assert [e.at for e in page.events] == [10, 10, 20]
    assert page.claim == Claim(Cut.before(30), final=True)
    assert page.next_token is not None
    assert decode_token("p", page.next_token) == Position(20, "3")


def test_a_full_page_claims_before_the_first_row_it_did_not_deliver() -> None:
    # the page stops inside transaction 10: nothing of 10 is covered
    inside = build_page("p", 50, rows((10, 1), (10, 2), (10, 3)), page_size=2)
    assert len(inside.events) == 2 and inside.claim == Claim(Cut.before(10), True)
    # the page stops at a transaction's edge: all of 10 is covered, nothing of 20
    edge = build_page("p", 50, rows((10, 1), (10, 2), (20, 3)), page_size=2)
    assert edge.claim == Claim(Cut.before(20), True)
    assert XID8_ORDER.has_successor  # before 20 == through 19: an exact integer order


def test_an_empty_page_still_claims_and_keeps_the_position() -> None:
    page = build_page("p", 77, [], page_size=10)
    assert page == Page((), None, Claim(Cut.before(77), True))


def test_events_carry_partition_row_and_values() -> None:
    page = build_page("p", 9, [OutboxRow(4, "7", (("payload", {"k": 1}),))], page_size=3)
    (event,) = page.events
    assert isinstance(event, OutboxEvent)
    assert (event.partition, event.row_id, event.value("payload")) == ("p", "7", {"k": 1})
    with pytest.raises(KeyError, match="not fetched"):
        event.value("other")


@pytest.mark.parametrize(
    ("found", "problem"),
    [
        (rows((10, 1), (30, 2)), "outside the decided"),  # a row at xmin: undecided
        (rows((10, 1), (40, 2)), "outside the decided"),  # above xmin
        (rows((20, 1), (10, 2)), "outside the decided"),  # out of xid order
        (rows((1, 1), (2, 2), (3, 3), (4, 4)), "rows for a page of 2"),
    ],
)
def test_rows_the_claim_cannot_rest_on_are_refused(found: list[OutboxRow], problem: str) -> None:
    with pytest.raises(OutboxError, match=problem):
        build_page("p", 30, found, page_size=2)


# --- pagination under out-of-order commits (property) ------------------------------------------


Pager = Callable[[str, int, Sequence[OutboxRow], int], Page]


def greatest_seen_page(partition: str, xmin: int, found: Sequence[OutboxRow], size: int) -> Page:
    """Broken: claims through the greatest xid it delivered (observed, not final)."""
    page = build_page(partition, xmin, found, size)
    if not page.events:
        return page
    return Page(page.events, page.next_token, Claim(Cut.through(page.events[-1].at), True))


def past_xmin_page(partition: str, xmin: int, found: Sequence[OutboxRow], size: int) -> Page:
    """Broken: delivers visible rows at or above xmin, so its position passes running ones."""
    delivered = found[:size]
    events = tuple(OutboxEvent(f"p:{r.row_id}", r.xid, partition, r.row_id) for r in delivered)
    token = None
    if delivered:
        token = encode_token(partition, Position(delivered[-1].xid, delivered[-1].row_id))
    claim_at = min(xmin, found[size].xid) if len(found) > size else xmin
    return Page(events, token, Claim(Cut.before(claim_at), True))


def paginate(
    transactions: list[tuple[int, int]],
    commit_order: list[int],
    size: int,
    pager: Pager,
    below_xmin: bool = True,
) -> list[str]:
    """Commit transactions in ``commit_order``, reading pages after each commit.

    ``transactions``: (xid, rows). Mirrors the SQL: a page holds the committed
    rows after the position (below xmin unless ``below_xmin`` is False), in
    (xid, id) order, plus one. Returns the problems found: a claim covering an
    undelivered row, a row delivered twice, or a committed row never delivered.
    """
    ids = {}
    next_id = 1
    for xid, count in transactions:
        ids[xid] = list(range(next_id, next_id + count))
        next_id += count
    committed: set[int] = set()
    delivered: list[tuple[int, int]] = []
    position: tuple[int, int] | None = None
    problems = []
    for step in [*commit_order, None]:
        if step is not None:
            committed.add(step)
        running = [x for x, _ in transactions if x not in committed]
        xmin = min(running) if running else max(x for x, _ in transactions) + 1
        while True:
            decided = sorted(
                (x, i)
                for x in committed
                if x < xmin or not below_xmin
                for i in ids[x]
                if position is None or (x, i) > position
            )
            page = pager("p", xmin, [OutboxRow(x, str(i)) for x, i in decided[: size + 1]], size)
            for event in page.events:
                assert isinstance(event, OutboxEvent) and type(event.at) is int
                delivered.append((event.at, int(event.row_id)))
            if page.claim is not None:
                cut = page.claim.cut
                assert type(cut.at) is int
                through = cut.endpoint is Endpoint.THROUGH
                for x in ids:
                    if x <= cut.at if through else x < cut.at:
                        missing = [i for i in ids[x] if (x, i) not in delivered]
                        if missing:
                            problems.append(f"claim {cut} covers undelivered rows {missing}")
            if page.next_token is None:
                break
            last = decode_token("p", page.next_token)
            assert last.row_id is not None
            position = (last.xid, int(last.row_id))
    if len(delivered) != len(set(delivered)):
        problems.append("a row delivered twice")
    expected = {(x, i) for x in ids for i in ids[x]}
    if set(delivered) != expected:
        problems.append(f"rows never delivered: {sorted(expected - set(delivered))}")
    return problems


outboxes = st.lists(st.integers(1, 4), min_size=1, max_size=7).flatmap(
    lambda counts: st.tuples(
        st.just([(100 + 3 * k, c) for k, c in enumerate(counts)]),
        st.permutations([100 + 3 * k for k in range(len(counts))]),
        st.integers(1, 4),
    )
)


@settings(max_examples=300)
@given(outboxes)
def test_snapshot_claims_never_cover_an_undelivered_row_and_skip_nothing(
    case: tuple[list[tuple[int, int]], list[int], int],
) -> None:
    transactions, order, size = case
    assert paginate(transactions, order, size, build_page) == []


def test_teeth_claiming_through_the_greatest_xid_seen_is_caught() -> None:
    # A page stops inside transaction 100: through 100 covers its third row, unread.
    found = paginate([(100, 3)], [100], 2, greatest_seen_page)
    assert any("covers undelivered rows [3]" in p for p in found), found


def test_teeth_a_position_past_a_running_transaction_is_caught() -> None:
    # 103 commits and is read while 100 runs; 100's row then sorts below the position.
    found = paginate([(100, 1), (103, 1)], [103, 100], 2, past_xmin_page, below_xmin=False)
    assert "rows never delivered: [(100, 1)]" in found, found
    assert any("covers undelivered rows [1]" in p for p in found), found
