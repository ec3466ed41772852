"""What every benchmark here shares: its own same-run baseline, and honest figures.

The machine is shared and noisy, so a figure alone says little. Each benchmark
runs the raw engine (or the plain algorithm) on the same work in the same run,
alternating the two in rounds, and prints the ratio beside the absolute figure:

- :class:`StatementLog` captures the SQL statements a fencepost store sends
  (through its one execution point), so a baseline can check that it issues
  *the same statements* on the raw driver, not a lighter imitation;
- :func:`rounds` alternates fencepost and baseline runs and returns both series;
- :func:`postgres_dsn` is ``$FENCEPOST_DATABASE_URL`` or a throwaway pgserver.
"""

from __future__ import annotations

import os
import re
import statistics
import tempfile
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

#: The environment variable holding the PostgreSQL URL (as fencepost.impl.postgres.DSN_ENV).
DSN_ENV = "FENCEPOST_DATABASE_URL"

_server: Any = None


def postgres_dsn(given: str | None = None) -> tuple[str, str]:
    """A PostgreSQL URL and a label: ``given``, ``$FENCEPOST_DATABASE_URL`` or a pgserver."""
    global _server
    dsn = given or os.environ.get(DSN_ENV, "")
    if dsn:
        return dsn, dsn.split("@")[-1]
    if _server is None:
        from pgserver.postgres_server import get_server

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # platformdirs: XDG_RUNTIME_DIR unset
            _server = get_server(
                tempfile.mkdtemp(prefix="fencepost-bench-pg-"), cleanup_mode="delete"
            )
    return str(_server.get_uri()), "pgserver (Unix socket)"


def normalised(sql: str) -> str:
    """``sql`` with whitespace runs collapsed: how two statements are compared."""
    return re.sub(r"\s+", " ", sql).strip()


class StatementLog:
    """The statements (normalised text) a store sent while :meth:`capture` was active."""

    def __init__(self) -> None:
        self.statements: list[str] = []

    @contextmanager
    def capture_sqlite(self, store: Any) -> Iterator[None]:
        """Record every ``execute`` of a :class:`~fencepost.impl.sqlite.SQLiteStore`."""
        db = store._db  # the store's one connection: every statement goes through it
        log = self.statements

        class Recording:
            def execute(self, sql: str, params: Sequence[object] = ()) -> Any:
                log.append(normalised(sql))
                return db.execute(sql, params)

            def executemany(self, sql: str, params: Any) -> Any:
                log.append(normalised(sql))
                return db.executemany(sql, params)

        store._db = Recording()
        try:
            yield
        finally:
            store._db = db

    @contextmanager
    def capture_postgres(self) -> Iterator[None]:
        """Record every statement :mod:`fencepost.impl.postgres` sends (through ``_send``)."""
        import fencepost.impl.postgres as pg

        real = pg._send
        log = self.statements

        def recording(conn: Any, query: str, params: object) -> Any:
            log.append(normalised(query))
            return real(conn, query, params)

        pg._send = recording
        try:
            yield
        finally:
            pg._send = real

    def require(self, baseline: Sequence[str], what: str) -> None:
        """Fail unless the baseline issues exactly the statements fencepost sent."""
        sent = [s for s in self.statements if s not in ("BEGIN IMMEDIATE", "COMMIT")]
        mine = [normalised(s) for s in baseline]
        if sorted(set(sent)) != sorted(set(mine)):
            missing = sorted(set(sent) - set(mine))
            extra = sorted(set(mine) - set(sent))
            raise SystemExit(
                f"{what}: the baseline does not issue fencepost's statements.\n"
                f"fencepost only: {missing}\nbaseline only: {extra}"
            )


def rounds(
    ours: Callable[[], float], theirs: Callable[[], float], count: int
) -> tuple[list[float], list[float]]:
    """Run ``ours`` and ``theirs`` alternately ``count`` times each; both series of results."""
    a: list[float] = []
    b: list[float] = []
    for i in range(count):
        if i % 2:
            b.append(theirs())
            a.append(ours())
        else:
            a.append(ours())
            b.append(theirs())
    return a, b


def ratio_line(
    label: str, ours: Sequence[float], theirs: Sequence[float], unit: str, target: str
) -> str:
    """``label: ours (median, min-max) vs baseline: ratio median [min-max] (target)``.

    Higher is better for both figures (rates); the ratio is ours/theirs per round.
    """
    pairs = [a / b for a, b in zip(ours, theirs, strict=True) if b]
    return (
        f"{label}: {statistics.median(ours):,.0f} {unit} "
        f"(min {min(ours):,.0f}, max {max(ours):,.0f}) "
        f"vs baseline {statistics.median(theirs):,.0f} {unit}; "
        f"ratio {statistics.median(pairs):.2f} (rounds {min(pairs):.2f}-{max(pairs):.2f}; {target})"
    )
