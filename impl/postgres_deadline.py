"""The PostgreSQL store's failure handling: a deadline per operation, and which failures
are definite (the statement never ran: retrying is safe) or indefinite (the reply was
lost: only a reread settles it), and which reads may be retried after a lost connection
(docs/postgres.md, "Failures").
"""

from __future__ import annotations

import heapq
import itertools
import os
import socket
import threading
import time
from contextlib import suppress

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo

# --- the per-operation deadline --------------------------------------------------------


class _Deadlines:
    """Shuts down a connection's socket when its operation outlives its deadline.

    psycopg's blocking calls have no timeout of their own, and a reply that never
    comes (a peer that vanished without a reset) would block a publisher forever.
    Shutting the socket down makes the pending call fail at once, which the store
    reports as indefinite. One daemon thread serves every connection of a store;
    an entry is removed, under the lock, before its connection goes back to the
    pool, so a late expiry can never hit the connection's next user.
    """

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._heap: list[tuple[float, int]] = []
        self._live: dict[int, int] = {}  # ticket -> our duplicate of the socket's fd
        self._tickets = itertools.count()
        self._closed = False
        self._thread: threading.Thread | None = None

    def arm(self, fd: int, seconds: float) -> int:
        with self._cond:
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="fencepost-pg-deadlines", daemon=True
                )
                self._thread.start()
            ticket = next(self._tickets)
            # A duplicate keeps the socket itself (not a number the kernel could reuse
            # for another connection once psycopg closes its fd) until disarmed.
            self._live[ticket] = os.dup(fd)
            due = time.monotonic() + seconds
            # Wake the thread only if this deadline is now the earliest (rarely: all
            # deadlines are the same length ahead), not on every operation.
            wake = not self._heap or due < self._heap[0][0]
            heapq.heappush(self._heap, (due, ticket))
            if wake:
                self._cond.notify()
            return ticket

    def disarm(self, ticket: int) -> None:
        with self._cond:
            fd = self._live.pop(ticket, None)
        if fd is not None:
            os.close(fd)

    def close(self) -> None:
        with self._cond:
            self._closed = True
            for fd in self._live.values():
                os.close(fd)
            self._live.clear()
            self._cond.notify()

    def _run(self) -> None:
        with self._cond:
            while not self._closed:
                while self._heap and self._heap[0][1] not in self._live:
                    heapq.heappop(self._heap)
                if not self._heap:
                    self._cond.wait()
                    continue
                due, ticket = self._heap[0]
                wait = due - time.monotonic()
                if wait > 0:
                    self._cond.wait(wait)
                    continue
                heapq.heappop(self._heap)
                fd = self._live.pop(ticket)
                sock = socket.socket(fileno=fd)  # takes ownership of our duplicate
                with suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
                sock.close()


#: Connection failures that retrying cannot cure: (text libpq puts in the message, what
#: it means). psycopg gives no SQLSTATE for a refused connection, so the text decides.
DEFINITE_CONNECT_FAILURES: tuple[tuple[str, str], ...] = (
    ("does not exist", "the database or the role does not exist"),
    ("password authentication failed", "the password was refused"),
    ("no pg_hba.conf entry", "the server refuses this user, host or database (pg_hba.conf)"),
    ("authentication failed", "authentication failed"),
    ("Connection refused", "nothing listens on that host and port"),
    ("failed to resolve host", "the host name does not resolve"),
    ("could not translate host name", "the host name does not resolve"),
    ("invalid sslmode value", "the sslmode is not one libpq knows"),
    ("does not support SSL", "the server does not support SSL, but the URL requires it"),
    ("invalid connection option", "the URL has an option libpq does not know"),
    ("invalid integer value", "a numeric URL option is not a number"),
)

#: SQLSTATEs of a connection that was lost: connection exceptions, admin/crash shutdown,
#: cannot connect now.
_LOST_CONNECTION = ("08", "57P01", "57P02", "57P03")

#: Seconds (at most) spent retrying a read whose connection was lost (and at most
#: :data:`READ_ATTEMPTS` tries): a read changes nothing, so another try is always safe.
READ_RETRY_SECONDS = 10.0
READ_ATTEMPTS = 4


def redact(dsn: str) -> str:
    """``dsn`` without its password, fit for an error message or a log line."""
    try:
        params = conninfo_to_dict(dsn)
    except psycopg.ProgrammingError:
        return "<unparsable PostgreSQL URL>"
    if "password" in params:
        params["password"] = "***"
    return make_conninfo("", **params)
