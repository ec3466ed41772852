"""Open a store from one string: a file path, ``sqlite:PATH``, ``memory:``, or a URL.

The CLI's ``--db`` and library users go through :func:`open_store`. Opening is
the one thing this module does for a backend: adding one means naming it in the
vocabulary (:data:`fencepost.vocabulary.STORE_BACKENDS`, with its URL schemes)
and its opener in :data:`OPENERS_BY_BACKEND`; the store itself, its contract-suite
entry and its refinement backend move with it (docs/changing.md, "A new store
backend", lists every file; tests/vocabulary/test_totality.py fails until each
has it).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from fencepost.impl.memory import MemoryStore
from fencepost.impl.stores import Store, StoreOpenError
from fencepost.vocabulary.backends import STORE_BACKENDS


def _open_memory(location: str) -> Store:
    if location != "memory:":
        raise StoreOpenError(location, "the in-memory store is spelled exactly 'memory:'")
    return MemoryStore()


def _open_sqlite(location: str) -> Store:
    from fencepost.impl.sqlite import SQLiteStore

    path = location
    for prefix in ("sqlite:///", "sqlite://", "sqlite:"):
        if location.startswith(prefix):
            path = location[len(prefix) :]
            break
    if location.startswith("sqlite:///"):
        path = "/" + path
    if not path:
        raise StoreOpenError(location, "no SQLite file path given")
    parent = Path(path).expanduser().parent
    if not parent.is_dir():
        raise StoreOpenError(path, f"the folder {str(parent)!r} does not exist; create it first")
    return SQLiteStore(Path(path).expanduser())


def _open_postgres(location: str) -> Store:
    from fencepost.impl.postgres import open_postgres

    return open_postgres(location)


#: backend name (a key of the vocabulary's STORE_BACKENDS) -> its opener.
OPENERS_BY_BACKEND: dict[str, Callable[[str], Store]] = {
    "memory": _open_memory,
    "sqlite": _open_sqlite,
    "postgres": _open_postgres,
}

#: URL scheme -> opener, from the vocabulary's schemes of each backend. A string
#: without a known ``scheme:`` prefix is a SQLite path.
OPENERS: dict[str, Callable[[str], Store]] = {
    scheme: OPENERS_BY_BACKEND[backend.name]
    for backend in STORE_BACKENDS.values()
    if backend.name in OPENERS_BY_BACKEND
    for scheme in backend.schemes
}


def scheme_of(location: str) -> str | None:
    """The URL scheme of ``location`` (``postgresql``, ``memory``), None for a plain path."""
    head, sep, _ = location.partition(":")
    if not sep or len(head) < 2 or not head.replace("+", "").replace("-", "").isalnum():
        return None  # a plain path (or a Windows drive letter like C:)
    return head.lower()


def open_store(location: str) -> Store:
    """The store at ``location``; raises :class:`StoreOpenError` naming it when it cannot open.

    ``memory:`` is a fresh :class:`MemoryStore`; ``sqlite:PATH`` or a plain path
    is a :class:`~fencepost.impl.sqlite.SQLiteStore` (created if missing);
    other schemes go to the opener registered in :data:`OPENERS`.
    """
    if type(location) is not str or not location:
        raise StoreOpenError(repr(location), "a store location is a non-empty path or URL")
    scheme = scheme_of(location)
    if scheme is None:
        return _open_sqlite(location)
    opener = OPENERS.get(scheme)
    if opener is None:
        known = ", ".join(f"{s}:" for s in sorted(OPENERS))
        raise StoreOpenError(
            location,
            f"no store backend is registered for {scheme}: URLs (known: {known} "
            "and plain SQLite file paths)",
        )
    return opener(location)
