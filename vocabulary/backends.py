"""The store backends: where checkpoints and the publication record live.

Each backend has one opener (:data:`fencepost.impl.open.OPENERS`, by URL
scheme), one entry in the store contract suite (tests/store_backends.py) and one
refinement backend (:func:`fencepost.properties.backends.open_backend`);
``in_scenarios`` says whether the scenario runner drives it (it needs a store it
can create per scenario without a server). tests/vocabulary/test_totality.py
fails while a backend lacks a home. Cost: constants only.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType


@dataclass(frozen=True, slots=True)
class BackendName:
    """One store backend: its name, the URL schemes that open it, whether it keeps
    anything across a close (``durable``) and whether the scenario runner drives it."""

    name: str
    schemes: tuple[str, ...]
    durable: bool
    in_scenarios: bool
    summary: str


#: name -> the backend, in the order the command line lists them.
STORE_BACKENDS: Mapping[str, BackendName] = MappingProxyType(
    {
        b.name: b
        for b in (
            BackendName("memory", ("memory",), False, True, "in this process only; kept nowhere"),
            BackendName("sqlite", ("sqlite",), True, True, "one SQLite file (WAL), one machine"),
            BackendName(
                "postgres",
                ("postgresql", "postgres"),
                True,
                False,
                "PostgreSQL, for publishers on many machines",
            ),
        )
    }
)
