"""Across the 32-bit xid wraparound: xid8 keeps the order, the claim stays exact.

A private server is moved with ``pg_resetwal`` to epoch 5, 40 transaction ids
before the 32-bit counter wraps (after freezing every database, so no stored
row depends on the old numbering). A transaction holds an xid of epoch 5 open
while a later one, in epoch 6, commits: its 32-bit xid is *smaller* than the
held one's, and only the 64-bit ``xid8`` orders them right. The provider must
claim exactly ``before`` the held xid, then deliver both rows in xid8 order,
and the PostgreSQL store must keep a frontier above 2**32 exactly.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator

import psycopg
import pytest
from outbox_support import insert, new_outbox, uncovered
from pg_server import RestartablePostgres
from psycopg import sql

from fencepost.impl.cuts import Cut
from fencepost.impl.memory import MemoryStore
from fencepost.impl.postgres import PostgresStore
from fencepost.impl.provider import Claim
from fencepost.impl.providers.postgres_outbox import XID8_ORDER, PostgresOutbox
from fencepost.impl.publisher import Outcome, Publisher
from fencepost.impl.reader import PartitionReader

pytestmark = pytest.mark.postgres

EPOCH = 5
#: The next 32-bit xid after the reset: 40 before the wrap.
NEXT_XID = 2**32 - 40
#: Transaction ids per pg_xact segment file (32 pages of 8 kB, 4 transactions a byte).
XACTS_PER_SEGMENT = 32 * 8192 * 4


@pytest.fixture(scope="module")
def wrapping_pg() -> Iterator[str]:
    server = RestartablePostgres()
    server.start()
    try:
        with psycopg.connect(server.dsn, autocommit=True) as conn:
            conn.execute("UPDATE pg_database SET datallowconn = true WHERE datname = 'template0'")
        server._pg(
            "vacuumdb", "-h", "127.0.0.1", "-p", str(server.port), "-U", "postgres", "--all",
            "--freeze",
        )  # fmt: skip
        server.stop()
        server._pg(
            "pg_resetwal", "-e", str(EPOCH), "-x", str(NEXT_XID), "-u", str(NEXT_XID - 100),
            "-D", str(server.data),
        )  # fmt: skip
        # the commit-status file for the new xids (the server creates later ones itself)
        segment = server.data / "pg_xact" / f"{NEXT_XID // XACTS_PER_SEGMENT:04X}"
        segment.write_bytes(bytes(XACTS_PER_SEGMENT // 4))
        if server.user is not None:
            shutil.chown(segment, server.user, server.user)
        with (server.data / "postgresql.conf").open("a") as conf:
            conf.write("\nautovacuum = off\n")
        server.start()
        yield server.dsn
    finally:
        server.destroy()


def test_a_late_commit_across_the_wraparound(wrapping_pg: str) -> None:
    dsn = wrapping_pg
    layout = new_outbox(dsn)
    ((partition, relation),) = layout.relations.items()
    outbox = PostgresOutbox(dsn, layout.relations)
    memory = MemoryStore()
    membership = outbox.membership()
    memory.create_stream("outbox", membership)
    reader = PartitionReader(
        memory, outbox, "outbox", partition, 1, membership.scope, XID8_ORDER, lambda e: "ok"
    )
    with psycopg.connect(dsn) as held, psycopg.connect(dsn) as later:
        held_id, held_xid = insert(held, relation, "held, epoch 5")
        with psycopg.connect(dsn, autocommit=True) as burn:
            for _ in range(60):  # each autocommit statement takes and ends one xid
                burn.execute("SELECT pg_current_xact_id()")
        later_id, later_xid = insert(later, relation, "later, epoch 6")
        later.commit()
        assert (held_xid >> 32, later_xid >> 32) == (EPOCH, EPOCH + 1)
        assert held_xid & 0xFFFFFFFF > 2**32 - 40  # the 32-bit xids compare the wrong way
        assert later_xid & 0xFFFFFFFF < 100
        assert held_xid < later_xid

        page = outbox.fetch_page(partition, None)
        assert page.events == () and page.claim == Claim(Cut.before(held_xid), True)
        assert reader.run_pass() == Cut.before(held_xid)
        held.commit()

    page = outbox.fetch_page(partition, None)
    assert [(e.id, e.at) for e in page.events] == [
        (f"{partition}:{held_id}", held_xid),
        (f"{partition}:{later_id}", later_xid),
    ]
    assert page.claim == Claim(Cut.before(later_xid + 1), True)
    assert reader.run_pass() == Cut.before(later_xid + 1)
    assert set(memory.outcomes("outbox", [e.id for e in page.events])) == {
        e.id for e in page.events
    }
    with psycopg.connect(dsn, autocommit=True) as conn:
        rows = conn.execute(
            sql.SQL("SELECT xid::text, xmin::text FROM {} ORDER BY xid").format(sql.SQL(relation))
        ).fetchall()
    # the xid8 column is the epoch and the 32-bit xid the row header carries
    assert [int(x) for x, _ in rows] == [held_xid, later_xid]
    assert [int(x) & 0xFFFFFFFF for x, _ in rows] == [int(m) for _, m in rows]

    # the PostgreSQL store keeps a frontier above 2**32 exactly
    store = PostgresStore(dsn, schema=layout.schema)
    store.create_stream("outbox", membership)
    durable = PartitionReader(
        store, outbox, "outbox", partition, 1, membership.scope, XID8_ORDER, lambda e: "ok"
    )
    certified = durable.run_pass()
    result = Publisher(store, "outbox", "t").attempt()
    assert result.outcome is Outcome.PUBLISHED and result.cut == certified
    published = store.read_publication("outbox").cut
    assert type(published.at) is int and published.at > later_xid and published.at >> 32 == 6
    assert uncovered(store, "outbox", dsn, layout.relations, published) == []
    store.close()
    outbox.close()
