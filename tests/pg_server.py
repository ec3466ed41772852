"""A real PostgreSQL for the tests: ``$FENCEPOST_DATABASE_URL``, or a throwaway pgserver.

Registered as a pytest plugin by tests/conftest.py. PostgreSQL tests never skip:
when neither the URL answers nor a throwaway server starts, they FAIL and say
how to fix it.

- :func:`session_dsn`: one DSN per test run (started lazily, stopped at exit; the xdist
  workers of one run share one throwaway server, each test in its own schema).
- fixtures ``pg_dsn`` (session), ``pg_schema`` (a fresh PostgreSQL schema per test,
  dropped afterwards), ``pg_store`` (a :class:`PostgresStore` on that schema).
- :class:`RestartablePostgres`: a private server on its own data folder and TCP
  port that a test may stop, kill -9 and start again (never the machine's server).
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import uuid
import warnings
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from fencepost.impl.postgres import DSN_ENV, PostgresStore
from fencepost.impl.postgres_schema import quote_ident

_SESSION: dict[str, object] = {}


class PostgresUnavailable(RuntimeError):
    """Neither $FENCEPOST_DATABASE_URL nor a throwaway pgserver gave a usable PostgreSQL."""


def _check(dsn: str) -> None:
    with psycopg.connect(dsn, connect_timeout=5, autocommit=True) as conn:
        conn.execute("SELECT 1")


def session_dsn() -> str:
    """The DSN every PostgreSQL test of this process uses (started on first use)."""
    cached = _SESSION.get("dsn")
    if isinstance(cached, str):
        return cached
    url = os.environ.get(DSN_ENV, "")
    if url:
        try:
            _check(url)
        except psycopg.Error as exc:
            raise PostgresUnavailable(
                f"{DSN_ENV} is set but PostgreSQL does not answer there ({exc}). Start the "
                "server (pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main "
                f"start) or unset {DSN_ENV} to use a throwaway pgserver."
            ) from exc
        _SESSION["dsn"] = url
        _SESSION["source"] = "FENCEPOST_DATABASE_URL"
        return url
    try:
        from pgserver.postgres_server import get_server

        folder = _pgserver_folder()
        with warnings.catch_warnings():
            # platformdirs warns that XDG_RUNTIME_DIR is unset (CI): harmless here.
            warnings.simplefilter("ignore")
            server = get_server(folder, cleanup_mode="delete")
        dsn = str(server.get_uri())
        _check(dsn)
    except Exception as exc:
        raise PostgresUnavailable(
            f"{DSN_ENV} is unset and a throwaway pgserver could not start ({exc!r}). Install "
            "the test extras (pip install -e '.[test]') or point FENCEPOST_DATABASE_URL at a "
            "running PostgreSQL."
        ) from exc
    _SESSION["dsn"] = dsn
    _SESSION["source"] = "pgserver"
    _SESSION["server"] = server
    return dsn


def _pgserver_folder() -> str:
    """The throwaway server's data folder: one per test run, shared by its xdist workers.

    Workers of one ``pytest -n`` run share ``PYTEST_XDIST_TESTRUNUID``; pgserver
    starts the server in that folder once (under its own inter-process lock), each
    worker registers as a user, and the last one to exit stops it and deletes the
    folder. Every test still works in a schema of its own (:func:`fresh_schema`), so
    the workers never see each other's tables. Without xdist: a new folder per run.
    """
    run = os.environ.get("PYTEST_XDIST_TESTRUNUID", "")
    if not run.isalnum():
        return tempfile.mkdtemp(prefix="fencepost-pgserver-")
    folder = Path(tempfile.gettempdir()) / f"fencepost-pgserver-{run}"
    folder.mkdir(exist_ok=True)
    return str(folder)


def session_source() -> str:
    """Where the session's PostgreSQL came from: the URL variable or pgserver."""
    session_dsn()
    return str(_SESSION["source"])


def fresh_schema(dsn: str, prefix: str = "t") -> str:
    """A new, unused schema name (created lazily by the store's migrations)."""
    return f"{prefix}_{uuid.uuid4().hex[:12]}"


def drop_schema(dsn: str, schema: str) -> None:
    with psycopg.connect(dsn, autocommit=True, connect_timeout=5) as conn:
        conn.execute(f"DROP SCHEMA IF EXISTS {quote_ident(schema)} CASCADE")


def _unavailable(exc: PostgresUnavailable) -> None:
    pytest.fail(f"PostgreSQL tests need a PostgreSQL: {exc}", pytrace=False)


@pytest.fixture(scope="session")
def pg_dsn() -> str:
    """The session's PostgreSQL DSN; fails (never skips) when there is none."""
    try:
        return session_dsn()
    except PostgresUnavailable as exc:
        _unavailable(exc)
        raise


@pytest.fixture
def pg_schema(pg_dsn: str) -> Iterator[str]:
    """A fresh schema for one test, dropped when it ends."""
    schema = fresh_schema(pg_dsn)
    yield schema
    drop_schema(pg_dsn, schema)


@pytest.fixture
def pg_store(pg_dsn: str, pg_schema: str) -> Iterator[PostgresStore]:
    """A :class:`PostgresStore` on a fresh schema."""
    store = PostgresStore(pg_dsn, schema=pg_schema)
    yield store
    store.close()


def tcp_target(dsn: str) -> tuple[str, int] | str:
    """Where ``dsn`` connects: ``(host, port)`` for TCP or the Unix socket's path."""
    params = conninfo_to_dict(dsn)
    host = str(params.get("host") or "/var/run/postgresql")
    port = int(str(params.get("port") or 5432))
    if host.startswith("/"):
        return os.path.join(host, f".s.PGSQL.{port}")
    return (host, port)


def via(dsn: str, host: str, port: int) -> str:
    """``dsn`` redirected to ``host:port`` over TCP (same user, database, options)."""
    params = conninfo_to_dict(dsn)
    params["host"] = host
    params["port"] = str(port)
    return make_conninfo("", **params)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class RestartablePostgres:
    """A private PostgreSQL on a throwaway data folder, listening on 127.0.0.1:port.

    Built from the binaries the pgserver wheel ships, run as pgserver's system
    user when we are root. ``stop()`` is a clean shutdown, ``kill()`` a kill -9 of
    the postmaster (its children die with it: crash recovery on the next start),
    ``start()`` brings it back on the same port and data.
    """

    def __init__(self) -> None:
        from pgserver._commands import POSTGRES_BIN_PATH

        self.bin = Path(POSTGRES_BIN_PATH)
        self.folder = Path(tempfile.mkdtemp(prefix="fencepost-restartable-"))
        self.data = self.folder / "data"
        self.port = free_port()
        self.user: str | None = None
        os.chmod(self.folder, 0o755)
        if os.geteuid() == 0:
            from pgserver.utils import ensure_user_exists

            ensure_user_exists("pgserver")
            self.user = "pgserver"
            shutil.chown(self.folder, "pgserver", "pgserver")
        self._pg(
            "initdb", "-D", str(self.data), "--auth=trust", "-U", "postgres", "--encoding=UTF8"
        )
        conf = self.data / "postgresql.conf"
        with conf.open("a") as f:
            f.write(
                f"\nlisten_addresses = '127.0.0.1'\nport = {self.port}\n"
                f"unix_socket_directories = '{self.folder}'\nfsync = on\n"
                "max_connections = 60\n"
            )
        atexit.register(self.destroy)

    @property
    def dsn(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def _pg(self, exe: str, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(self.bin / exe), *args],
            check=check,
            capture_output=True,
            text=True,
            user=self.user,
            timeout=60,
        )

    def start(self) -> None:
        self._pg("pg_ctl", "-D", str(self.data), "-w", "-l", str(self.folder / "log"), "start")

    def stop(self) -> None:
        self._pg("pg_ctl", "-D", str(self.data), "-w", "-m", "fast", "stop", check=False)

    def postmaster_pid(self) -> int | None:
        pidfile = self.data / "postmaster.pid"
        try:
            return int(pidfile.read_text().splitlines()[0])
        except (OSError, ValueError, IndexError):
            return None

    def kill(self) -> None:
        """kill -9 the postmaster and its backends: an unclean crash."""
        pid = self.postmaster_pid()
        if pid is None:
            return
        children = subprocess.run(
            ["pgrep", "-P", str(pid)], capture_output=True, text=True, check=False
        ).stdout.split()
        for target in [pid, *map(int, children)]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(target, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                break
            time.sleep(0.05)

    def destroy(self) -> None:
        if self.data.exists():
            self.stop()
            if self.postmaster_pid() is not None:
                self.kill()
        shutil.rmtree(self.folder, ignore_errors=True)
