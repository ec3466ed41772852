"""The PostgreSQL outbox provider on a real server: claims from the snapshot, exactly.

Scenarios that decide the claim are arranged explicitly (a lower xid held open
while a higher one commits), on a private server where no other session holds
a transaction id, so ``xmin`` and every claim are known to the integer. Each
broken provider (greatest xid seen, a position past a running transaction, a
claim read from a later snapshot) runs the same scenario through the same
reader and is caught by the same oracle.
"""

from __future__ import annotations

import logging
import re
import uuid
from collections.abc import Iterator

import psycopg
import pytest
from outbox_support import (
    GreatestSeenOutbox,
    LateClaimOutbox,
    PastXminOutbox,
    insert,
    new_outbox,
    rows_in,
    uncovered,
)
from pg_server import RestartablePostgres, drop_schema
from psycopg import sql

from fencepost.impl.cuts import Cut
from fencepost.impl.errors import InvalidValue
from fencepost.impl.memory import MemoryStore
from fencepost.impl.provider import Claim, ProviderTimeout
from fencepost.impl.providers.postgres_outbox import (
    XID8_MAX,
    XID8_ORDER,
    OutboxError,
    Position,
    PostgresOutbox,
    encode_token,
)
from fencepost.impl.publisher import Outcome, Publisher
from fencepost.impl.reader import PartitionReader

pytestmark = pytest.mark.postgres

STREAM = "outbox"


@pytest.fixture
def scratch(pg_dsn: str) -> Iterator[list[str]]:
    """Schemas a test makes on the shared server; dropped when it ends."""
    made: list[str] = []
    yield made
    for schema in made:
        drop_schema(pg_dsn, schema)


@pytest.fixture(scope="module")
def private_pg() -> Iterator[str]:
    """A PostgreSQL of this module's own: no other session holds an xid, so xmin is exact."""
    server = RestartablePostgres()
    server.start()
    try:
        yield server.dsn
    finally:
        server.destroy()


def only(layout_relations: dict[str, str]) -> tuple[str, str]:
    ((partition, relation),) = layout_relations.items()
    return partition, relation


# --- the claim, exactly ----------------------------------------------------------------------


def test_a_running_lower_xid_holds_the_claim_exactly(private_pg: str) -> None:
    layout = new_outbox(private_pg)
    partition, relation = only(layout.relations)
    outbox = PostgresOutbox(private_pg, layout.relations)
    with psycopg.connect(private_pg) as held, psycopg.connect(private_pg) as later:
        held_id, held_xid = insert(held, relation, "held")
        later_id, later_xid = insert(later, relation, "later")
        later.commit()
        assert held_id < later_id and held_xid < later_xid
        page = outbox.fetch_page(partition, None)
        # later's row is visible, but its xid is above xmin: not delivered, not claimed
        assert page.events == ()
        assert page.claim == Claim(Cut.before(held_xid), final=True)
        assert page.next_token is None
        (holder,) = outbox.holders()
        assert (holder.kind, int(holder.xid), holder.who) == (
            "backend",
            held_xid & 0xFFFFFFFF,
            str(held.info.backend_pid),
        )
        held.commit()
    page = outbox.fetch_page(partition, None)
    assert [(e.id, e.at) for e in page.events] == [
        (f"{partition}:{held_id}", held_xid),
        (f"{partition}:{later_id}", later_xid),
    ]
    assert page.claim == Claim(Cut.before(later_xid + 1), final=True)
    assert outbox.snapshot_xmin() == later_xid + 1
    assert page.next_token is not None
    after = outbox.fetch_page(partition, page.next_token)
    assert after.events == () and after.next_token is None
    assert after.claim == Claim(Cut.before(later_xid + 1), final=True)
    outbox.close()


def test_keyset_pages_stop_inside_and_at_the_edge_of_a_transaction(private_pg: str) -> None:
    layout = new_outbox(private_pg)
    partition, relation = only(layout.relations)
    with psycopg.connect(private_pg) as conn:
        first = [insert(conn, relation) for _ in range(5)]
        conn.commit()
        second = [insert(conn, relation) for _ in range(2)]
        conn.commit()
    a, b = first[0][1], second[0][1]
    assert {x for _, x in first} == {a} and {x for _, x in second} == {b}  # one xid per txn
    outbox = PostgresOutbox(private_pg, layout.relations, page_size=2)
    seen, claims, token = [], [], None
    while True:
        page = outbox.fetch_page(partition, token)
        seen += [e.id for e in page.events]
        claims.append(page.claim)
        if page.next_token is None:
            break
        token = page.next_token
    assert seen == [f"{partition}:{i}" for i, _ in first + second]
    assert claims == [
        Claim(Cut.before(a), True),  # stopped inside transaction a
        Claim(Cut.before(a), True),
        Claim(Cut.before(b), True),  # stopped at a's edge: all of a, nothing of b
        Claim(Cut.before(b + 1), True),  # the end: the snapshot's xmin
        Claim(Cut.before(b + 1), True),  # an empty page still claims
    ]
    outbox.close()


def test_rolled_back_rows_never_appear_and_the_claim_passes_them(private_pg: str) -> None:
    layout = new_outbox(private_pg)
    partition, relation = only(layout.relations)
    with psycopg.connect(private_pg) as conn:
        _, aborted = insert(conn, relation, "rolled back")
        conn.rollback()
        kept_id, kept = insert(conn, relation, "kept")
        conn.commit()
    assert aborted < kept
    page = PostgresOutbox(private_pg, layout.relations).fetch_page(partition, None)
    assert [e.id for e in page.events] == [f"{partition}:{kept_id}"]
    assert page.claim == Claim(Cut.before(kept + 1), True)


def test_an_idle_partition_advances_with_the_cluster(private_pg: str) -> None:
    layout = new_outbox(private_pg, partitions=2)
    (_, busy_rel), (idle, _) = layout.relations.items()
    outbox = PostgresOutbox(private_pg, layout.relations)
    before = outbox.fetch_page(idle, None).claim
    with psycopg.connect(private_pg) as conn:
        _, xid = insert(conn, busy_rel)
        conn.commit()
    after = outbox.fetch_page(idle, None)
    assert before is not None and after.claim == Claim(Cut.before(xid + 1), True)
    assert after.events == () and before == Claim(Cut.before(xid), True)


def test_hash_partitions_share_one_order_and_one_transaction_one_coordinate(
    private_pg: str,
) -> None:
    layout = new_outbox(private_pg, partitions=3, layout="hash")
    (parent,) = layout.targets
    assert PostgresOutbox.partitions_of(private_pg, parent) == layout.relations
    with psycopg.connect(private_pg) as conn:
        xids = {insert(conn, parent)[1] for _ in range(12)}
        conn.commit()
    (xid,) = xids
    outbox = PostgresOutbox(private_pg, layout.relations)
    assert outbox.membership().orders == {XID8_ORDER.name: XID8_ORDER}
    pages = [outbox.fetch_page(p, None) for p in layout.relations]
    assert sum(len(p.events) for p in pages) == 12
    assert {e.at for p in pages for e in p.events} == {xid}
    assert {p.claim for p in pages} == {Claim(Cut.before(xid + 1), True)}


# --- reader, publisher and the oracle, with and without the mistakes ---------------------


def late_commit_through_reader(
    dsn: str, make: type[PostgresOutbox] | None = None, late_claim: bool = False
) -> tuple[list[list[str]], Cut]:
    """Hold a lower xid open, commit a higher one, ingest, commit the lower one, ingest.

    Returns the oracle's findings after every pass (rows covered by the
    published frontier without an outcome) and the final published cut.
    """
    layout = new_outbox(dsn)
    partition, relation = only(layout.relations)
    store = MemoryStore()
    found: list[list[str]] = []
    with psycopg.connect(dsn) as held, psycopg.connect(dsn) as later:
        insert(held, relation, "held")
        insert(later, relation, "later")
        later.commit()
        outbox: PostgresOutbox
        if late_claim:
            outbox = LateClaimOutbox(dsn, layout.relations, between=held.commit)
        else:
            outbox = (make or PostgresOutbox)(dsn, layout.relations)
        membership = outbox.membership()
        store.create_stream(STREAM, membership)
        reader = PartitionReader(
            store, outbox, STREAM, partition, 1, membership.scope, XID8_ORDER, lambda e: "done"
        )
        publisher = Publisher(store, STREAM, "test")

        def ingest() -> None:
            reader.run_pass()
            publisher.attempt()
            cut = store.read_publication(STREAM).cut
            found.append(uncovered(store, STREAM, dsn, layout.relations, cut))

        ingest()
        if not late_claim:
            held.commit()
        ingest()
        ingest()
    return found, store.read_publication(STREAM).cut


def test_fencepost_covers_the_late_commit_and_never_overstates(private_pg: str) -> None:
    found, cut = late_commit_through_reader(private_pg)
    assert found == [[], [], []]
    assert not cut.is_nothing


@pytest.mark.parametrize("broken", [GreatestSeenOutbox, PastXminOutbox])
def test_teeth_a_poller_past_the_running_transaction_loses_its_row(
    private_pg: str, broken: type[PostgresOutbox]
) -> None:
    found, _ = late_commit_through_reader(private_pg, broken)
    # the held row: covered by the published frontier, never delivered, after every pass
    assert found[0] == [] and found[1] and found[1] == found[2], found


def test_teeth_a_claim_from_a_later_snapshot_overstates(private_pg: str) -> None:
    found, _ = late_commit_through_reader(private_pg, late_claim=True)
    assert len(found[0]) == 2, found  # both rows covered, neither delivered


# --- start-up checks and failures --------------------------------------------------------


def plain_table(dsn: str, columns: str, made: list[str]) -> str:
    schema = f"ob_{uuid.uuid4().hex[:10]}"
    made.append(schema)
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
        conn.execute(
            sql.SQL("CREATE TABLE {}.t ({})").format(sql.Identifier(schema), sql.SQL(columns))
        )
    return f"{schema}.t"


@pytest.mark.parametrize(
    ("columns", "problem"),
    [
        ("id bigint", "has no column 'xid'; add it: ALTER TABLE"),
        ("id bigint, xid bigint", "is bigint, not xid8"),
        ("id bigint, xid xid8", "has default none; it must be DEFAULT pg_current_xact_id()"),
        ("id bigint, xid xid8 DEFAULT '5'::xid8", "it must be DEFAULT pg_current_xact_id()"),
        ("xid xid8 DEFAULT pg_current_xact_id()", "has no column 'id'"),
        ("id bigint, xid xid8 DEFAULT pg_current_xact_id()", "has no column(s) 'payload'"),
    ],
)
def test_a_table_that_cannot_carry_the_claim_is_refused(
    pg_dsn: str, scratch: list[str], columns: str, problem: str
) -> None:
    table = plain_table(pg_dsn, columns, scratch)
    with pytest.raises(OutboxError, match=re.escape(problem)):
        PostgresOutbox(pg_dsn, [table], columns=["payload"])


def test_missing_relations_and_bad_urls_are_named(pg_dsn: str, scratch: list[str]) -> None:
    with pytest.raises(OutboxError, match=r"'nowhere\.nothing' does not exist"):
        PostgresOutbox(pg_dsn, ["nowhere.nothing"])
    with pytest.raises(OutboxError, match=r"cannot connect to .*port=1"):
        PostgresOutbox("postgresql://postgres@127.0.0.1:1/x", ["t"], connect_timeout=2)
    plain = plain_table(
        pg_dsn, "id bigint, xid xid8 NOT NULL DEFAULT pg_current_xact_id()", scratch
    )
    with pytest.raises(OutboxError, match="not a partitioned table") as refused:
        PostgresOutbox.partitions_of(pg_dsn, plain)
    # The refusal names the mapping to pass instead, and that mapping works.
    assert f"{{'main': {plain!r}}}" in str(refused.value)
    assert PostgresOutbox(pg_dsn, {"main": plain}, columns=[]).membership().partitions
    with pytest.raises(ValueError, match="page_size"):
        PostgresOutbox(pg_dsn, ["t"], page_size=0)


def test_a_trigger_filled_column_is_accepted_on_request_and_unindexed_tables_warned(
    pg_dsn: str, scratch: list[str], caplog: pytest.LogCaptureFixture
) -> None:
    table = plain_table(pg_dsn, "id bigint, xid xid8 NOT NULL", scratch)
    with pytest.raises(OutboxError, match="check_xid_default=False"):
        PostgresOutbox(pg_dsn, [table])
    with caplog.at_level(logging.WARNING, logger="fencepost.outbox"):
        outbox = PostgresOutbox(pg_dsn, [table], check_xid_default=False)
    assert "has no index on (xid, id)" in caplog.text
    assert outbox.fetch_page(table, None).events == ()
    outbox.close()


def test_row_level_security_that_hides_rows_is_refused(private_pg: str) -> None:
    layout = new_outbox(private_pg)
    ((_, relation),) = layout.relations.items()
    role = f"reader_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(private_pg, autocommit=True) as admin:
        admin.execute(sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(role)))
        admin.execute(
            sql.SQL("GRANT USAGE ON SCHEMA {} TO {}").format(
                sql.Identifier(layout.schema), sql.Identifier(role)
            )
        )
        admin.execute(
            sql.SQL("GRANT SELECT ON {} TO {}").format(sql.SQL(relation), sql.Identifier(role))
        )
        as_reader = private_pg.replace("postgres@", f"{role}@")
        PostgresOutbox(as_reader, [relation]).close()  # no policy yet: fine
        admin.execute(sql.SQL("ALTER TABLE {} ENABLE ROW LEVEL SECURITY").format(sql.SQL(relation)))
        with pytest.raises(OutboxError, match="row-level security applies to this role"):
            PostgresOutbox(as_reader, [relation])
        PostgresOutbox(private_pg, [relation]).close()  # a superuser bypasses it


def test_tokens_of_another_partition_or_history_are_refused(
    pg_dsn: str, scratch: list[str]
) -> None:
    layout = new_outbox(pg_dsn, partitions=2)
    scratch.append(layout.schema)
    first, second = layout.relations
    outbox = PostgresOutbox(pg_dsn, layout.relations)
    with pytest.raises(InvalidValue, match="not a partition"):
        outbox.fetch_page("elsewhere", None)
    with pytest.raises(InvalidValue, match="issued for partition"):
        outbox.fetch_page(second, encode_token(first, Position(3, "1")))
    future = encode_token(first, Position(XID8_MAX - 7, "1"))
    with pytest.raises(OutboxError, match="another transaction history"):
        outbox.fetch_page(first, future)
    outbox.close()


def test_a_dropped_connection_is_a_timeout_and_the_next_fetch_reconnects(
    pg_dsn: str, scratch: list[str]
) -> None:
    layout = new_outbox(pg_dsn)
    scratch.append(layout.schema)
    partition, relation = only(layout.relations)
    outbox = PostgresOutbox(pg_dsn, layout.relations)
    assert outbox.fetch_page(partition, None).events == ()
    assert outbox._conn is not None
    pid = outbox._conn.info.backend_pid
    with psycopg.connect(pg_dsn, autocommit=True) as admin:
        admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
        with psycopg.connect(pg_dsn) as conn:
            insert(conn, relation)
    with pytest.raises(ProviderTimeout):
        outbox.fetch_page(partition, None)
    assert len(rows_in(pg_dsn, layout.relations)) == 1
    # the reader refetches after a timeout: the next fetch works on a new connection
    page = outbox.fetch_page(partition, None)
    assert outbox._conn is not None and outbox._conn.info.backend_pid != pid
    assert page.claim is not None and page.claim.final
    outbox.close()


def test_the_published_frontier_of_two_partitions_is_their_minimum(private_pg: str) -> None:
    layout = new_outbox(private_pg, partitions=2)
    (p0, r0), (p1, r1) = layout.relations.items()
    outbox = PostgresOutbox(private_pg, layout.relations)
    store = MemoryStore()
    membership = outbox.membership()
    store.create_stream(STREAM, membership)
    readers = {
        p: PartitionReader(
            store, outbox, STREAM, p, 1, membership.scope, XID8_ORDER, lambda e: "ok"
        )
        for p in (p0, p1)
    }
    with psycopg.connect(private_pg) as conn:
        insert(conn, r0)
        insert(conn, r1)
        conn.commit()
    readers[p0].run_pass()
    with psycopg.connect(private_pg) as conn:
        _, xid = insert(conn, r0)
        conn.commit()
    readers[p1].run_pass()  # p1 reads a later snapshot: its claim is higher
    result = Publisher(store, STREAM, "t").attempt()
    assert result.outcome is Outcome.PUBLISHED
    p0_cut = store.read_checkpoint(STREAM, 1, p0)
    p1_cut = store.read_checkpoint(STREAM, 1, p1)
    assert p0_cut is not None and p1_cut is not None
    assert result.cut == p0_cut.cut == Cut.before(xid)
    assert p1_cut.cut == Cut.before(xid + 1)
    assert uncovered(store, STREAM, private_pg, layout.relations, Cut.before(xid)) == []
