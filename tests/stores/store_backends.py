"""The handle factory the store contract suite is parametrized with (see conftest.py)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from fencepost.impl.stores import Store


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
