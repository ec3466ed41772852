"""Real lost responses: a TCP proxy cuts the connection around a real PostgreSQL write.

(a) after the server committed the write but before the client read the reply, and
(b) before the server received it. The client cannot tell the two apart (both are an
IndefiniteStoreError); the Publisher settles each by an authoritative reread, in all
four cases of the Materialize entry (committed or not x another writer advanced or
not). Also: an idle connection the server closed is replaced before anything is sent
(no failure at all), an unreachable server is a definite failure, and a reply that
never comes ends in an indefinite failure after ``op_timeout``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from pg_server import tcp_target, via
from proxy import Mode, Proxy

from fencepost.impl.cuts import Cut
from fencepost.impl.orders import IntegerOrder
from fencepost.impl.postgres import PostgresStore
from fencepost.impl.publisher import Outcome, Publisher
from fencepost.impl.records import Checkpoint, Membership, PublicationRecord
from fencepost.impl.stores import DefiniteStoreError, IndefiniteStoreError

pytestmark = pytest.mark.postgres

OFFSETS = IntegerOrder("offsets", successor_exact=True)
MEMBERSHIP = Membership(1, "q", {"A": "offsets", "B": "offsets"}, {"offsets": OFFSETS})


@dataclass
class Rig:
    direct: PostgresStore  # the truth, and the other writer: not behind the proxy
    proxied: PostgresStore  # the publisher's store, behind the proxy
    proxy: Proxy

    def certify(self, a: Cut, b: Cut) -> None:
        """Move both partitions' checkpoints (as readers would) to ``a`` and ``b``."""
        for partition, cut in (("A", a), ("B", b)):
            current = self.direct.read_checkpoint("s", 1, partition)
            expected = None if current is None else current.generation
            self.direct.write_checkpoint("s", expected, Checkpoint(partition, cut, "t", 1, "q", 1))

    def other_writer_publishes(self, cut: Cut) -> PublicationRecord:
        record = self.direct.read_publication("s")
        self.certify(cut, cut)
        result = Publisher(self.direct, "s", "other").attempt()
        assert result.outcome is Outcome.PUBLISHED and result.cut == cut
        assert result.record is not None and result.record.revision == record.revision + 1
        return result.record


@pytest.fixture
def rig(pg_dsn: str, pg_schema: str) -> Iterator[Rig]:
    proxy = Proxy(tcp_target(pg_dsn))
    direct = PostgresStore(pg_dsn, schema=pg_schema)
    direct.create_stream("s", MEMBERSHIP)
    proxied = PostgresStore(
        via(pg_dsn, "127.0.0.1", proxy.port), schema=pg_schema, op_timeout=3, connect_timeout=3
    )
    yield Rig(direct, proxied, proxy)
    proxied.close()
    direct.close()
    proxy.close()


# --- the store reports what it can know ---------------------------------------------


def test_reply_lost_after_commit_is_indefinite_and_the_write_is_durable(rig: Rig) -> None:
    rule = rig.proxy.cut("w-lost-after", Mode.AFTER_COMMIT)
    with pytest.raises(IndefiniteStoreError, match="may or may not"):
        rig.proxied.write_publication("s", 0, 1, Cut.through(5), "w-lost-after")
    assert rule.fired.is_set()
    assert rig.direct.read_publication("s") == PublicationRecord(
        1, Cut.through(5), 1, "w-lost-after"
    )


def test_write_cut_before_the_server_is_indefinite_and_not_applied(rig: Rig) -> None:
    rule = rig.proxy.cut("w-lost-before", Mode.BEFORE_SEND)
    with pytest.raises(IndefiniteStoreError):
        rig.proxied.write_publication("s", 0, 1, Cut.through(5), "w-lost-before")
    assert rule.fired.is_set()
    assert rig.direct.read_publication("s") == PublicationRecord(1)
    # The store is usable again right away (a new connection through the proxy).
    assert rig.proxied.read_publication("s") == PublicationRecord(1)


def test_lost_checkpoint_write_reply(rig: Rig) -> None:
    rig.proxy.cut("tok-lost", Mode.AFTER_COMMIT)
    with pytest.raises(IndefiniteStoreError):
        rig.proxied.write_checkpoint(
            "s", None, Checkpoint("A", Cut.before(3), "tok-lost", 1, "q", 1)
        )
    stored = rig.direct.read_checkpoint("s", 1, "A")
    assert stored is not None and stored.token == "tok-lost" and stored.generation == 1


def test_reply_that_never_comes_is_indefinite_after_op_timeout(rig: Rig) -> None:
    rule = rig.proxy.cut("w-black-hole", Mode.BLACK_HOLE)
    with pytest.raises(IndefiniteStoreError):
        rig.proxied.write_publication("s", 0, 1, Cut.through(5), "w-black-hole")
    assert rule.fired.is_set()
    # The server did get (and commit) it: only a reread could have told.
    assert rig.direct.read_publication("s").op_id == "w-black-hole"


def test_idle_connection_closed_by_the_server_is_replaced_before_sending(rig: Rig) -> None:
    assert rig.proxied.read_publication("s") == PublicationRecord(1)
    before = rig.proxy.connections
    rig.proxy.close_idle()  # as a server restart would, while the pool is idle
    # Nothing was in flight, so nothing is uncertain: the call just works.
    written = rig.proxied.write_publication("s", 0, 1, Cut.through(2), "w-after-idle-close")
    assert written.record.revision == 1
    assert rig.proxy.connections > before


def test_idle_check_is_what_saves_the_call(rig: Rig, monkeypatch: pytest.MonkeyPatch) -> None:
    """Teeth: without the before-sending check the same situation is an indefinite failure
    (for a write: a read whose connection was lost is retried on another one)."""
    assert rig.proxied.read_publication("s") == PublicationRecord(1)
    rig.proxy.close_idle()
    monkeypatch.setattr(PostgresStore, "_usable", staticmethod(lambda conn: True))
    with pytest.raises(IndefiniteStoreError):
        rig.proxied.write_publication("s", 0, 1, Cut.through(2), "w-stale")


def test_unreachable_server_is_definite(rig: Rig) -> None:
    rig.proxy.refuse()
    rig.proxy.close_idle()
    with pytest.raises(DefiniteStoreError, match="nothing was sent"):
        rig.proxied.write_publication("s", 0, 1, Cut.through(5), "w-refused")
    assert rig.direct.read_publication("s") == PublicationRecord(1)


# --- the publisher resolves all four cases (Materialize #12797 / PR #14046) ---------------


def test_committed_and_nobody_else_advanced_is_confirmed_as_ours(rig: Rig) -> None:
    rig.certify(Cut.through(5), Cut.through(5))
    publisher = Publisher(rig.proxied, "s", "p1")
    rig.proxy.cut("p1-1", Mode.AFTER_COMMIT)
    result = publisher.attempt()
    assert result.outcome is Outcome.CONFIRMED
    assert result.cut == Cut.through(5) and result.attributed
    assert rig.direct.read_publication("s") == PublicationRecord(1, Cut.through(5), 1, "p1-1")


def test_committed_then_another_writer_advanced_is_confirmed_not_ours(rig: Rig) -> None:
    rig.certify(Cut.through(5), Cut.through(5))
    publisher = Publisher(rig.proxied, "s", "p1")
    seen: list[PublicationRecord] = []

    def other() -> None:
        seen.append(rig.direct.read_publication("s"))  # ours committed...
        rig.other_writer_publishes(Cut.through(9))  # ...then another writer moved on

    rig.proxy.cut("p1-1", Mode.AFTER_COMMIT, other)
    result = publisher.attempt()
    assert seen == [PublicationRecord(1, Cut.through(5), 1, "p1-1")]
    assert result.outcome is Outcome.CONFIRMED
    assert result.cut == Cut.through(9) and not result.attributed
    assert rig.direct.read_publication("s").revision == 2


def test_not_committed_and_nobody_else_advanced_is_retried_and_published(rig: Rig) -> None:
    rig.certify(Cut.through(5), Cut.through(5))
    publisher = Publisher(rig.proxied, "s", "p1")
    rig.proxy.cut("p1-1", Mode.BEFORE_SEND)
    result = publisher.attempt()
    assert result.outcome is Outcome.PUBLISHED
    assert result.op_id == "p1-2" and result.attempts == 2
    assert rig.direct.read_publication("s") == PublicationRecord(1, Cut.through(5), 1, "p1-2")


def test_not_committed_but_another_writer_published_the_claim_is_confirmed(rig: Rig) -> None:
    rig.certify(Cut.through(5), Cut.through(5))
    publisher = Publisher(rig.proxied, "s", "p1")
    rig.proxy.cut("p1-1", Mode.BEFORE_SEND, lambda: rig.other_writer_publishes(Cut.through(7)))
    result = publisher.attempt()
    assert result.outcome is Outcome.CONFIRMED
    assert result.cut == Cut.through(7) and not result.attributed
    assert rig.direct.read_publication("s") == PublicationRecord(1, Cut.through(7), 1, "other-1")


def test_not_committed_and_another_writer_is_behind_recomputes_and_publishes(rig: Rig) -> None:
    rig.certify(Cut.through(5), Cut.through(5))
    publisher = Publisher(rig.proxied, "s", "p1")

    def other_behind() -> None:
        # Another writer publishes an older claim (it read older checkpoints)...
        rig.direct.write_publication("s", 0, 1, Cut.through(3), "other-old")
        # ...and the checkpoints move on meanwhile.
        rig.certify(Cut.through(8), Cut.through(8))

    rig.proxy.cut("p1-1", Mode.BEFORE_SEND, other_behind)
    result = publisher.attempt()
    # Behind the proposal: recomputed from the current durable checkpoints, not reused.
    assert result.outcome is Outcome.PUBLISHED and result.cut == Cut.through(8)
    assert rig.direct.read_publication("s") == PublicationRecord(1, Cut.through(8), 2, "p1-2")
