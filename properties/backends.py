"""Where the implementation's durable state lives during a refinement run.

A :class:`StoreBackend` opens a connection per implementation process over one
database: memory (one shared store), SQLite (a file, a connection per process,
reopened after a crash) or PostgreSQL (a throwaway schema per run, dropped
afterwards, so a run never leaves its streams in the user's database).
:func:`open_backend` gives the backend of a run by name.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from fencepost.impl.memory import MemoryStore
from fencepost.impl.stores import Store
from fencepost.vocabulary.backends import STORE_BACKENDS


@dataclass(frozen=True)
class StoreBackend:
    """Where the implementation's durable state lives during a run.

    ``connect()`` opens a new process's connection to the run's one database
    (a restarted publisher gets a new one); ``release(store)`` closes such a
    connection, never the durable state; ``close()`` ends the run's database.
    Each example uses its own stream, so examples never see each other.
    """

    name: str
    connect: Callable[[], Store]
    release: Callable[[Store], None]
    close: Callable[[], None]


def memory_backend() -> StoreBackend:
    """One :class:`MemoryStore` shared by every process (a restart keeps its state)."""
    store = MemoryStore()
    return StoreBackend("memory", lambda: store, lambda _: None, store.close)


def sqlite_backend(path: Path) -> StoreBackend:
    """A SQLite file; every process opens its own connection, reopened after a crash."""
    from fencepost.impl.sqlite import SQLiteStore

    return StoreBackend("sqlite", lambda: SQLiteStore(path), lambda s: s.close(), lambda: None)


def shared_backend(name: str, store_factory: Callable[[], Store]) -> StoreBackend:
    """One thread-safe store, opened by ``store_factory`` on first use, for every process.

    The hook for PostgreSQL: pass ``lambda: PostgresStore(dsn, schema=...)``
    (tests/pg_server.py gives the DSN). Its pool already gives each call its
    own connection, so a restarted publisher shares it too.
    """
    opened: list[Store] = []

    def connect() -> Store:
        if not opened:
            opened.append(store_factory())
        return opened[0]

    def close() -> None:
        for store in opened:
            store.close()
        opened.clear()

    return StoreBackend(name, connect, lambda _: None, close)


def postgres_backend(store_factory: Callable[[], Store]) -> StoreBackend:
    """PostgreSQL through ``store_factory`` (a :class:`~fencepost.impl.postgres.PostgresStore`)."""
    return shared_backend("postgres", store_factory)


#: The backends the refinement check runs on: the vocabulary's (each has a branch below).
BACKENDS: tuple[str, ...] = tuple(STORE_BACKENDS)


@contextlib.contextmanager
def open_backend(name: str, database_url: str | None = None) -> Iterator[StoreBackend]:
    """The backend ``name`` for one run (a temporary SQLite file, removed afterwards)."""
    if name == "memory":
        backend = memory_backend()
        try:
            yield backend
        finally:
            backend.close()
    elif name == "sqlite":
        folder = tempfile.mkdtemp(prefix="fencepost-refinement-")
        backend = sqlite_backend(Path(folder) / "refinement.db")
        try:
            yield backend
        finally:
            backend.close()
            shutil.rmtree(folder, ignore_errors=True)
    elif name == "postgres":
        from fencepost.impl.postgres import PostgresStore

        # A throwaway schema: a run never leaves its streams in the user's database.
        schema = f"fencepost_refinement_{uuid.uuid4().hex[:12]}"
        opened: list[PostgresStore] = []

        def connect() -> Store:
            store = PostgresStore(database_url, schema=schema)
            opened.append(store)
            return store

        backend = postgres_backend(connect)
        try:
            yield backend
        finally:
            backend.close()
            if opened:
                _drop_schema(opened[0].dsn, schema)
    else:
        raise ValueError(f"unknown backend {name!r}; choose one of {', '.join(BACKENDS)}")


def _drop_schema(dsn: str, schema: str) -> None:
    import psycopg
    from psycopg import sql

    with psycopg.connect(dsn, autocommit=True, connect_timeout=10) as conn:
        conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))
