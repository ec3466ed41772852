"""The store backends the contract suite runs against (a pytest plugin of tests/conftest.py).

Every backend is one entry of :data:`STORE_BACKENDS`: a function that, given a
fresh temporary folder, returns a :class:`StoreFactory`. Calling the factory
opens a new handle on the *same* underlying store (a new connection for a
database, the shared object for memory), so the suite can test several writers
and, for durable backends, a close-and-reopen. To add a backend, name it in the
vocabulary (:data:`fencepost.vocabulary.STORE_BACKENDS`) and add one entry here
(docs/changing.md, "A new store backend"); every contract test (``tests/stores/``)
then runs against it through the ``store_factory`` and ``store`` fixtures.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from fencepost.impl.memory import MemoryStore
from fencepost.impl.sqlite import SQLiteStore
from fencepost.impl.stores import Store
from fencepost.vocabulary.backends import STORE_BACKENDS as VOCABULARY_BACKENDS


@dataclass
class StoreFactory:
    """Opens handles on one underlying store; closes them all at teardown."""

    name: str
    durable: bool
    opener: Callable[[], Store]
    handles: list[Store] = field(default_factory=list)
    #: Runs after every handle is closed (PostgreSQL drops the test's schema).
    cleanup: Callable[[], None] | None = None

    def __call__(self) -> Store:
        store = self.opener()
        self.handles.append(store)
        return store

    def close_all(self) -> None:
        for store in self.handles:
            store.close()
        self.handles.clear()
        if self.cleanup is not None:
            self.cleanup()


def _memory(tmp: Path) -> StoreFactory:
    shared = MemoryStore()
    return StoreFactory("memory", durable=False, opener=lambda: shared)


def _sqlite(tmp: Path) -> StoreFactory:
    path = tmp / "contract.db"
    return StoreFactory("sqlite", durable=True, opener=lambda: SQLiteStore(path))


def _postgres(tmp: Path) -> StoreFactory:
    # A fresh schema of the session's PostgreSQL (FENCEPOST_DATABASE_URL or pgserver);
    # every handle is a new PostgresStore (its own pool) on that schema.
    from pg_server import PostgresUnavailable, drop_schema, fresh_schema, session_dsn

    from fencepost.impl.postgres import PostgresStore

    try:
        dsn = session_dsn()
    except PostgresUnavailable as exc:
        pytest.fail(f"PostgreSQL tests need a PostgreSQL: {exc}", pytrace=False)
    schema = fresh_schema(dsn, "contract")
    return StoreFactory(
        "postgres",
        durable=True,
        opener=lambda: PostgresStore(dsn, schema=schema),
        cleanup=lambda: drop_schema(dsn, schema),
    )


#: backend name -> factory maker. Extend this dict to run the contract on a new backend.
STORE_BACKENDS: dict[str, Callable[[Path], StoreFactory]] = {
    "memory": _memory,
    "sqlite": _sqlite,
    "postgres": _postgres,
}

#: backends whose state does not outlive the store object (no close-and-reopen).
NOT_DURABLE = frozenset(name for name, b in VOCABULARY_BACKENDS.items() if not b.durable)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Deselect (not skip) ``durable``-marked tests on backends that keep nothing.

    A skip would read as a missing service; a memory store has no reopen to test.
    """
    keep: list[pytest.Item] = []
    dropped: list[pytest.Item] = []
    for item in items:
        callspec = getattr(item, "callspec", None)
        backend = callspec.params.get("store_factory") if callspec is not None else None
        if item.get_closest_marker("durable") and backend in NOT_DURABLE:
            dropped.append(item)
        else:
            keep.append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = keep


#: backends that need a real server: their tests carry the ``postgres`` mark.
_MARKS: dict[str, pytest.MarkDecorator] = {"postgres": pytest.mark.postgres}


@pytest.fixture(
    params=[
        pytest.param(name, marks=[_MARKS[name]] if name in _MARKS else [])
        for name in sorted(STORE_BACKENDS)
    ]
)
def store_factory(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[StoreFactory]:
    factory = STORE_BACKENDS[request.param](tmp_path)
    yield factory
    factory.close_all()


@pytest.fixture
def store(store_factory: StoreFactory) -> Store:
    """One handle on a fresh store of the parametrized backend."""
    return store_factory()
