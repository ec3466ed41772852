"""Shared pieces of the outbox tests: new outboxes, broken providers, and the oracle.

The oracle (:func:`uncovered`) reads the outbox tables and the store directly:
it never asks the provider what it delivered. The broken providers are the
classic mistakes, each on the same real SQL as the real provider except for
the one thing it gets wrong; the tests show the oracle catching every one.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from typing import Any

import psycopg
from psycopg import sql

from fencepost.impl.cuts import Cut, Endpoint
from fencepost.impl.provider import Claim, Page
from fencepost.impl.providers.outbox_load import Layout, create_outbox
from fencepost.impl.providers.postgres_outbox import (
    OutboxEvent,
    Position,
    PostgresOutbox,
    decode_token,
    encode_token,
)
from fencepost.impl.stores import OutcomeStore


def new_outbox(dsn: str, partitions: int = 1, layout: str = "tables") -> Layout:
    """A fresh schema holding an outbox (tables ``outbox_t0``... or hash partitions)."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        return create_outbox(conn, f"ob_{uuid.uuid4().hex[:10]}", partitions, layout)


def insert(conn: psycopg.Connection[Any], relation: str, payload: str = "x") -> tuple[int, int]:
    """Insert one row in ``conn``'s transaction; returns (id, xid8)."""
    row = conn.execute(
        sql.SQL("INSERT INTO {} (writer, payload) VALUES (0, %s) RETURNING id, xid::text").format(
            sql.SQL(relation)
        ),
        (payload,),
    ).fetchone()
    assert row is not None
    return int(row[0]), int(row[1])


def rows_in(dsn: str, relations: Mapping[str, str]) -> dict[str, int]:
    """Every row in the tables now: event id -> xid8 (what committed transactions left)."""
    found: dict[str, int] = {}
    with psycopg.connect(dsn, autocommit=True) as conn:
        for partition, relation in relations.items():
            query = sql.SQL("SELECT id::text, xid::text FROM {}").format(sql.SQL(relation))
            for row_id, xid in conn.execute(query):
                found[f"{partition}:{row_id}"] = int(xid)
    return found


def uncovered(
    store: OutcomeStore, stream: str, dsn: str, relations: Mapping[str, str], cut: Cut
) -> list[str]:
    """Rows whose xid is in D(cut) that have no durable outcome: must always be empty."""
    if cut.is_nothing:
        return []
    assert type(cut.at) is int
    through = cut.endpoint is Endpoint.THROUGH
    ids = [
        i for i, x in rows_in(dsn, relations).items() if (x <= cut.at if through else x < cut.at)
    ]
    outcomes = store.outcomes(stream, ids) if ids else {}
    return sorted(i for i in ids if i not in outcomes)


# --- broken providers (teeth) -------------------------------------------------------------


class _Variant(PostgresOutbox):
    """Runs ``statement`` (xmin first, then rows) for a page; subclasses decide the claim."""

    def _fetch(
        self, partition: str, token: str | None, bounded: bool
    ) -> tuple[int, list[tuple[int, str]], Position | None]:
        position = None if token is None else decode_token(partition, token)
        relation = sql.SQL(self.tables[partition].qualified)
        after = sql.SQL("")
        params: dict[str, object] = {"limit": self.page_size + 1}
        if position is not None:
            after = sql.SQL(" AND (xid, id) > (%(xid)s::xid8, %(id)s::bigint)")
            params.update(xid=str(position.xid), id=position.row_id)
        below = (
            sql.SQL(" AND xid < pg_snapshot_xmin(pg_current_snapshot())")
            if bounded
            else sql.SQL("")
        )
        query = sql.SQL(
            "SELECT pg_snapshot_xmin(pg_current_snapshot())::text, xid::text, id::text FROM {} "
            "WHERE true{}{} ORDER BY xid, id LIMIT %(limit)s"
        ).format(relation, below, after)
        conn = self._connection()
        with conn.transaction():
            xmin_row = conn.execute("SELECT pg_snapshot_xmin(pg_current_snapshot())::text")
            xmin = int(next(iter(xmin_row))[0])
            found = [(int(x), str(i)) for _, x, i in conn.execute(query, params)]
        return xmin, found, position

    def _page(self, partition: str, found: list[tuple[int, str]], claim: Cut) -> Page:
        delivered = found[: self.page_size]
        events = tuple(OutboxEvent(f"{partition}:{i}", x, partition, i) for x, i in delivered)
        token = None
        if delivered:
            token = encode_token(partition, Position(delivered[-1][0], delivered[-1][1]))
        return Page(events, token, Claim(claim, True))


class GreatestSeenOutbox(_Variant):
    """The classic mistake: every visible row, and a claim through the greatest xid seen."""

    def fetch_page(self, partition: str, token: str | None) -> Page:
        _, found, position = self._fetch(partition, token, bounded=False)
        delivered = found[: self.page_size]
        if not delivered:
            return Page(
                (), None, None if position is None else Claim(Cut.through(position.xid), True)
            )
        return self._page(partition, found, Cut.through(delivered[-1][0]))


class PastXminOutbox(_Variant):
    """Right claim (before xmin), wrong page: its position moves past running transactions."""

    def fetch_page(self, partition: str, token: str | None) -> Page:
        xmin, found, _ = self._fetch(partition, token, bounded=False)
        claim = min(xmin, found[self.page_size][0]) if len(found) > self.page_size else xmin
        return self._page(partition, found, Cut.before(claim))


class LateClaimOutbox(_Variant):
    """Right page, claim from a later snapshot: ``between()`` runs after the page is read."""

    def __init__(self, *args: Any, between: Callable[[], None], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.between = between

    def fetch_page(self, partition: str, token: str | None) -> Page:
        _, found, _ = self._fetch(partition, token, bounded=True)
        self.between()
        xmin = self.snapshot_xmin()  # another transaction: a later snapshot
        claim = min(xmin, found[self.page_size][0]) if len(found) > self.page_size else xmin
        return self._page(partition, found, Cut.before(claim))
