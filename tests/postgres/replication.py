"""A PostgreSQL primary and a streaming standby of their own, on loopback, for failover tests.

:class:`ReplicatedPostgres` builds both in a temporary folder with the machine's
PostgreSQL server binaries (the newest ``/usr/lib/postgresql/*/bin`` holding
``initdb`` and ``pg_basebackup``), or the pgserver wheel's where the machine has
none, run as the ``postgres`` user (pgserver's own user without one) when the
tests run as root, because ``initdb`` refuses root:

- the primary: ``initdb`` (once per test process, then copied; trust
  authentication; the sample ``pg_hba.conf`` lets 127.0.0.1 replicate),
  listening on 127.0.0.1 only, ``fsync = on``;
- the standby: ``pg_basebackup -R -X stream`` of the primary (``standby.signal``
  and ``primary_conninfo`` written), connecting as ``application_name=standby1``;
- ``synchronous=True``: the primary waits for that standby
  (``synchronous_standby_names = 'standby1'``, ``synchronous_commit = on``: a commit
  is acknowledged once the standby has flushed it); the standby's own
  ``synchronous_standby_names`` is empty, so once promoted it runs alone instead of
  waiting for a standby it does not have. ``synchronous=False``: asynchronous
  streaming, PostgreSQL's default.

Every step that a test waits for is a condition read from the servers
(``pg_stat_replication``, ``pg_stat_wal_receiver``, the replay LSN,
``pg_is_in_recovery()``), polled until it holds or a generous deadline passes (a
deadline only turns a hang into a failure naming what did not happen).
"""

from __future__ import annotations

import atexit
import contextlib
import os
import pwd
import re
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg

from fencepost.impl.postgres_schema import quote_ident

#: The standby's name on the primary (its WAL receiver's application_name).
STANDBY_NAME = "standby1"
#: Seconds any one awaited condition may take before the test fails naming it.
WAIT_SECONDS = 120.0


def wait_for(what: str, condition: Callable[[], bool], seconds: float = WAIT_SECONDS) -> None:
    """Poll ``condition`` until it holds; fail naming ``what`` if ``seconds`` pass first."""
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"waited {seconds:g}s and this never happened: {what}")
        time.sleep(0.01)


def server_binaries() -> Path:
    """The machine's newest PostgreSQL server binaries, else the pgserver wheel's."""

    def version(path: Path) -> tuple[int, ...]:
        return tuple(int(n) for n in re.findall(r"\d+", path.parent.name)) or (0,)

    found = [
        b
        for b in Path("/usr/lib/postgresql").glob("*/bin")
        if (b / "initdb").exists() and (b / "pg_basebackup").exists() and (b / "postgres").exists()
    ]
    if found:
        return max(found, key=version)
    try:
        from pgserver._commands import POSTGRES_BIN_PATH
    except ImportError:
        raise AssertionError(
            "no PostgreSQL server binaries: install the machine's server (initdb, "
            "pg_basebackup under /usr/lib/postgresql/N/bin) or the test extras "
            "(pip install -e '.[test]', which bring pgserver's)"
        ) from None
    return Path(POSTGRES_BIN_PATH)


def server_user() -> str | None:
    """Who runs the servers: None (ourselves) unless we are root, whom ``initdb`` refuses."""
    if os.geteuid() != 0:
        return None
    try:
        pwd.getpwnam("postgres")
        return "postgres"
    except KeyError:
        from pgserver.utils import ensure_user_exists

        ensure_user_exists("pgserver")
        return "pgserver"


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


_TEMPLATES: dict[tuple[Path, str | None], Path] = {}


def initialized(bin: Path, user: str | None) -> Path:
    """A fresh ``initdb`` data folder, made once per test process and copied by each
    cluster: ``initdb`` costs seconds of CPU on a busy machine, a copy a fraction of one."""
    key = (bin, user)
    if key not in _TEMPLATES:
        folder = Path(tempfile.mkdtemp(prefix="fencepost-initdb-"))
        atexit.register(shutil.rmtree, folder, True)
        os.chmod(folder, 0o755)
        if user is not None:
            shutil.chown(folder, user, user)
        data = folder / "data"
        args = ["-D", str(data), "--auth=trust", "-U", "postgres", "-N", "-E", "UTF8"]
        done = subprocess.run(
            [str(bin / "initdb"), *args],
            capture_output=True,
            text=True,
            user=user,
            timeout=WAIT_SECONDS,
            check=False,
        )
        if done.returncode != 0:
            raise AssertionError(f"initdb exited {done.returncode}: {done.stderr.strip()}")
        _TEMPLATES[key] = data
    return _TEMPLATES[key]


class Node:
    """One server: its data folder, its port on 127.0.0.1, and how to stop or kill it."""

    def __init__(self, cluster: ReplicatedPostgres, name: str) -> None:
        self.cluster = cluster
        self.name = name
        self.data = cluster.folder / name
        self.port = free_port()

    @property
    def dsn(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def url(self, schema: str) -> str:
        """The store location of ``schema`` on this server (``open_store`` form)."""
        return f"{self.dsn}?fencepost_schema={schema}"

    def configure(self, lines: str) -> None:
        """Append settings to ``postgresql.auto.conf`` (read last: these win)."""
        with (self.data / "postgresql.auto.conf").open("a") as f:
            f.write(lines)

    def start(self) -> None:
        log = str(self.cluster.folder / f"{self.name}.log")
        self.cluster.run("pg_ctl", "-D", str(self.data), "-w", "-t", "120", "-l", log, "start")

    def promote(self) -> None:
        """``pg_ctl promote -w``: returns once the server left recovery (checked too)."""
        self.cluster.run("pg_ctl", "-D", str(self.data), "-w", "-t", "120", "promote")
        wait_for(
            f"{self.name} left recovery after promotion",
            lambda: not self.scalar("SELECT pg_is_in_recovery()"),
        )

    def postmaster_pid(self) -> int | None:
        try:
            return int((self.data / "postmaster.pid").read_text().splitlines()[0])
        except (OSError, ValueError, IndexError):
            return None

    def kill(self) -> None:
        """SIGKILL the postmaster and every backend at once: a crash, nothing flushed.

        The postmaster is stopped first (SIGSTOP) so that it cannot fork a backend
        between the listing of its children and their killing.
        """
        pid = self.postmaster_pid()
        if pid is None or not self._ours(pid):
            return
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGSTOP)
        children = subprocess.run(
            ["pgrep", "-P", str(pid)], capture_output=True, text=True, check=False
        ).stdout.split()
        for target in [pid, *map(int, children)]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(target, signal.SIGKILL)
        wait_for(f"{self.name}'s processes gone after SIGKILL", lambda: _gone([pid, *children]))

    def _ours(self, pid: int) -> bool:
        """``pid`` is this node's postmaster (not a stale pid file's number, reused)."""
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            return False
        return str(self.data).encode() in command and not _gone([pid])

    def running(self) -> bool:
        pid = self.postmaster_pid()
        return pid is not None and self._ours(pid)

    def stop(self) -> None:
        self.cluster.run(
            "pg_ctl", "-D", str(self.data), "-w", "-m", "immediate", "stop", check=False
        )

    def connect(self, *, autocommit: bool = True) -> psycopg.Connection[Any]:
        return psycopg.connect(self.dsn, autocommit=autocommit, connect_timeout=10)

    def scalar(self, sql: str, params: tuple[object, ...] = ()) -> Any:
        with self.connect() as conn:
            row = conn.execute(sql, params).fetchone()
        assert row is not None
        return row[0]

    def record(self, schema: str, stream: str) -> tuple[int, str]:
        """The stream's publication revision and op_id as stored here (a plain read, no
        migration: it works on a standby in recovery too)."""
        with self.connect() as conn:
            row = conn.execute(
                f"SELECT revision, convert_from(op_id, 'UTF8') FROM {quote_ident(schema)}"
                ".publications WHERE stream = %s",
                (stream.encode(),),
            ).fetchone()
        assert row is not None, f"no publication record of {stream!r} on {self.name}"
        return int(row[0]), str(row[1])


def _gone(pids: list[int | str]) -> bool:
    for pid in pids:
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            continue
        try:  # a zombie (nobody reaps orphans in some containers) is gone too
            if Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1].startswith("Z"):
                continue
        except (OSError, IndexError):
            continue
        return False
    return True


class ReplicatedPostgres:
    """A primary and a streaming standby (see the module docstring); ``destroy()`` ends both."""

    def __init__(self, *, synchronous: bool) -> None:
        self.synchronous = synchronous
        self.bin = server_binaries()
        self.user = server_user()
        self.folder = Path(tempfile.mkdtemp(prefix="fencepost-failover-"))
        os.chmod(self.folder, 0o755)
        if self.user is not None:
            shutil.chown(self.folder, self.user, self.user)
        self.primary = Node(self, "primary")
        self.standby = Node(self, "standby")
        #: Seconds each step of :meth:`start` took.
        self.timings: dict[str, float] = {}

    def _timed(self, step: str, started: float) -> float:
        now = time.monotonic()
        self.timings[step] = round(now - started, 2)
        return now

    def run(self, exe: str, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [str(self.bin / exe), *args],
            capture_output=True,
            text=True,
            user=self.user,
            timeout=WAIT_SECONDS,
            check=False,
        )
        if check and done.returncode != 0:
            raise AssertionError(
                f"{exe} {' '.join(args)} exited {done.returncode}: {done.stderr.strip()}"
            )
        return done

    @property
    def version(self) -> str:
        return self.run("postgres", "--version").stdout.strip()

    def start(self) -> None:
        """initdb the primary, start it, clone the standby and start it streaming."""
        p, s = self.primary, self.standby
        t = time.monotonic()
        template = initialized(self.bin, self.user)
        copied = subprocess.run(
            ["cp", "-a", str(template), str(p.data)], user=self.user, capture_output=True, text=True
        )
        assert copied.returncode == 0, copied.stderr
        sync = f"'{STANDBY_NAME}'" if self.synchronous else "''"
        p.configure(
            f"listen_addresses = '127.0.0.1'\nport = {p.port}\n"
            f"unix_socket_directories = '{self.folder}'\nfsync = on\nmax_connections = 60\n"
            f"wal_level = replica\nmax_wal_senders = 4\nwal_keep_size = '256MB'\n"
            f"synchronous_standby_names = {sync}\nsynchronous_commit = on\n"
        )
        p.start()
        t = self._timed("initdb and start the primary", t)
        self.run(
            "pg_basebackup",
            "-d",
            f"host=127.0.0.1 port={p.port} user=postgres",
            "-D",
            str(s.data),
            "-R",
            "-X",
            "stream",
            "-c",
            "fast",
            "--no-sync",
        )
        s.configure(
            f"port = {s.port}\nsynchronous_standby_names = ''\nhot_standby = on\n"
            f"primary_conninfo = 'host=127.0.0.1 port={p.port} user=postgres "
            f"application_name={STANDBY_NAME}'\n"
        )
        t = self._timed("pg_basebackup", t)
        s.start()
        wait_for("the standby streaming from the primary", self.streaming)
        self._timed("start the standby, streaming", t)

    def streaming(self) -> bool:
        """The primary shows the standby streaming (and synchronous when it should be)."""
        with self.primary.connect() as conn:
            rows = conn.execute(
                "SELECT state, sync_state FROM pg_stat_replication WHERE application_name = %s",
                (STANDBY_NAME,),
            ).fetchall()
        want = "sync" if self.synchronous else "async"
        return any(state == "streaming" and sync == want for state, sync in rows)

    def wait_replayed(self) -> None:
        """Wait until the standby has replayed everything the primary had written just now."""
        target = self.primary.scalar("SELECT pg_current_wal_lsn()::text")
        wait_for(
            f"the standby replayed the primary's WAL up to {target}",
            lambda: bool(
                self.standby.scalar("SELECT pg_last_wal_replay_lsn() >= %s::pg_lsn", (target,))
            ),
        )

    def cut_replication(self) -> None:
        """Stop the standby's WAL receiver and wait until nothing flows any more.

        ``primary_conninfo`` is emptied and the configuration reloaded: the standby
        ends its WAL receiver and starts none; the primary's WAL sender goes with
        it. From then on the standby holds what it had received, and the primary
        goes on committing (asynchronous replication does not wait).
        """
        with self.standby.connect() as conn:
            conn.execute("ALTER SYSTEM SET primary_conninfo = ''")
            conn.execute("SELECT pg_reload_conf()")
        wait_for(
            "the standby's WAL receiver stopped",
            lambda: self.standby.scalar("SELECT count(*) FROM pg_stat_wal_receiver") == 0,
        )
        wait_for(
            "the primary's WAL sender to the standby gone",
            lambda: self.primary.scalar("SELECT count(*) FROM pg_stat_replication") == 0,
        )

    def destroy(self) -> None:
        for node in (self.primary, self.standby):
            if node.running():
                node.stop()
            if node.running():
                node.kill()
        shutil.rmtree(self.folder, ignore_errors=True)
