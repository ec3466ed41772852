"""Talking to a SUT: one channel per worker, over a subprocess's pipes or a thread's queues.

A :class:`Channel` carries whole lines. Whatever the SUT does (crash, hang,
print garbage or a gigabyte without a newline, exit with a bad status) the
channel turns it into a :class:`~fencepost.harness.rules.SutFailure` within the
time limit; it never blocks forever and never lets the harness crash.

Subprocess SUTs run in their own session (process group), so teardown kills
the SUT *and everything it started* with one ``killpg``, then reaps the
leader: no zombie and no stray grandchild survives a run. Where Linux lets us
(``unshare`` from util-linux, root or user namespaces), each SUT process also
runs in a PID namespace of its own (:func:`isolation_prefix`): when it is
killed the kernel kills every process of that namespace, so not even a
descendant that left the session (``setsid``) and cleared its environment
survives. Without namespaces, descendants that kept their environment are still
found by their token (:func:`kill_escaped`); docs/robustness.md says what remains
possible.
"""

from __future__ import annotations

import collections
import contextlib
import errno
import fcntl
import os
import queue
import select
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import traceback
import uuid
from collections.abc import Callable, Sequence
from typing import IO, Protocol

from fencepost.harness.rules import Rule, SutFailure
from fencepost.inputs.jsonlines import (
    MAX_LINE_BYTES,
    LineIO,
    MessageError,
    decode_line,
)

_READ_CHUNK = 1 << 16
_STDERR_TAIL = 4000


#: Seconds a SUT process gets to exit with status 0 after ``shutdown``.
SHUTDOWN_GRACE = 3.0
#: Seconds a process gets from its first ``receive`` to its first line (its answer to hello)
#: unless its factory says otherwise: start-up (an interpreter, a library's import) is paid
#: once per process and may take seconds on a loaded machine, far more than a message needs.
DEFAULT_STARTUP = 60.0


def startup_hang(budget: float, worker: str) -> SutFailure:
    """``sut_hang`` for a process that said nothing within its start-up budget."""
    return SutFailure(
        Rule.SUT_HANG,
        f"no answer to its first message within the start-up budget of {budget:g}s "
        "(--startup-timeout; the per-message --timeout applies after it)",
        worker,
    )


def stray_words(line: str) -> str:
    """What an unasked line is, in words: an answer carrying a request id while none is
    due is an answer written twice (or to a request never sent)."""
    try:
        data = decode_line(line)
    except MessageError:
        return "answers no request (write nothing but answers to stdout; logs go to stderr)"
    if "id" in data and data.get("type") != "call":
        return (
            f"answers request {data['id']!r} while no answer was due: an answer written "
            "twice, or to a request never sent"
        )
    return "answers no request (write nothing but answers to stdout; logs go to stderr)"


def ending_problem(channel: Channel, status: int | None, grace: float) -> tuple[Rule, str] | None:
    """What ending a SUT process after ``shutdown`` says about it, if anything.

    A line nobody asked for, written before it exited (an answer written twice, a log
    line on stdout), is a ``call_pairing`` breach, and it comes first: a SUT that wrote
    its answer twice must be told so, not blamed for how it ended. Otherwise an exit
    status other than 0, or no exit within ``grace``, is a ``shutdown`` breach.
    """
    extra = channel.leftover()
    if extra is not None:
        return (
            Rule.CALL_PAIRING,
            f"a line after its last answer, written while it was shutting down: {extra!r} "
            f"{stray_words(extra)}",
        )
    if status == 0:
        return None
    if status is None:
        return (Rule.SHUTDOWN, f"did not exit within {grace:g}s of shutdown (killed)")
    return (Rule.SHUTDOWN, f"exited with status {status} after shutdown")


class Channel(Protocol):
    """A line-based connection to one SUT worker."""

    @property
    def worker(self) -> str:
        """The worker name this channel serves (used in failures)."""
        ...

    @property
    def pid(self) -> int | None:
        """The SUT process id (None in-process)."""
        ...

    def send(self, line: str, timeout: float) -> None:
        """Write one line (``\\n`` added); :class:`SutFailure` if the SUT is gone or stuck."""
        ...

    def receive(self, timeout: float) -> str:
        """The next line (without ``\\n``); :class:`SutFailure` on EOF, timeout or overlong line."""
        ...

    def unsolicited(self) -> str | None:
        """Output the SUT wrote without being asked (None if none); never blocks."""
        ...

    def close(self, grace: float) -> int | None:
        """End the SUT: wait ``grace`` seconds for it to exit, then kill it and reap it.

        Returns its exit status if it exited by itself, None if it had to be killed.
        What the SUT writes meanwhile is kept for :meth:`leftover`.
        """
        ...

    def leftover(self) -> str | None:
        """After :meth:`close`: the first line the SUT wrote that nobody read (an answer
        written twice, output after shutdown), or None. Its rule is ``call_pairing``, never
        ``shutdown``: the harness must not blame the ending for an extra line."""
        ...

    def stderr_tail(self) -> str:
        """The end of what the SUT logged (for failure reports)."""
        ...


class SutFactory(Protocol):
    """Starts one SUT worker per call; ``close`` releases anything kept in reserve."""

    @property
    def description(self) -> str:
        """How the SUT is run, for reports (the command line, or 'in-process ...')."""
        ...

    def start(self, worker: str) -> Channel: ...

    def close(self) -> None: ...


def _cut_line(buffer: bytearray, worker: str) -> str | None:
    """Take one complete line off ``buffer``; enforce the line limit on what is there."""
    newline = buffer.find(b"\n")
    if newline < 0:
        if len(buffer) > MAX_LINE_BYTES:
            raise SutFailure(
                Rule.LINE_TOO_LONG,
                f"more than {MAX_LINE_BYTES} bytes without a newline "
                f"(starts {bytes(buffer[:60])!r})",
                worker,
            )
        return None
    if newline > MAX_LINE_BYTES:
        raise SutFailure(
            Rule.LINE_TOO_LONG,
            f"a line of {newline} bytes; the limit is {MAX_LINE_BYTES}",
            worker,
        )
    raw = bytes(buffer[:newline])
    del buffer[: newline + 1]
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SutFailure(
            Rule.MESSAGE_SCHEMA, f"a line that is not UTF-8 ({exc.reason}): {raw[:60]!r}", worker
        ) from None


class SubprocessChannel:
    """One SUT worker process, spoken to over non-blocking pipes with deadlines."""

    def __init__(
        self,
        proc: subprocess.Popen[bytes],
        stderr: IO[bytes],
        worker: str,
        token: str = "",
        startup: float = DEFAULT_STARTUP,
    ) -> None:
        assert proc.stdin is not None and proc.stdout is not None
        self._proc = proc
        #: The budget of the first answer (None once a line has arrived).
        self._startup: float | None = startup
        self._token = token
        self._stderr = stderr
        self._worker = worker
        self._in = proc.stdin.fileno()
        self._out = proc.stdout.fileno()
        for fd in (self._in, self._out):
            flags = fcntl.fcntl(fd, fcntl.F_GETFL)
            fcntl.fcntl(fd, fcntl.F_SETFL, flags | os.O_NONBLOCK)
        self._buffer = bytearray()
        self._eof = False
        self._closed = False
        self._tail: str | None = None
        self._leftover: str | None = None
        #: The process and its group are gone (set last by :meth:`close`).
        self.ended = False

    @property
    def worker(self) -> str:
        return self._worker

    @property
    def pid(self) -> int | None:
        return self._proc.pid

    def _exited(self, doing: str) -> SutFailure:
        with contextlib.suppress(subprocess.TimeoutExpired):
            self._proc.wait(timeout=0.5)
        status = self._proc.returncode
        how = "is still running" if status is None else f"exited with status {status}"
        return SutFailure(
            Rule.SUT_CRASH, f"the SUT closed its output ({how}) while {doing}", self._worker
        )

    def send(self, line: str, timeout: float) -> None:
        data = memoryview((line + "\n").encode("utf-8"))
        deadline = time.monotonic() + timeout
        while data:
            try:
                written = os.write(self._in, data)
            except BlockingIOError:
                # The pipe is full: the SUT is not reading. Wait, within the limit.
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise SutFailure(
                        Rule.SUT_HANG,
                        f"the SUT did not read its input for {timeout:g}s",
                        self._worker,
                    ) from None
                _wait(self._in, select.POLLOUT, remaining)
                continue
            except OSError as exc:
                if exc.errno not in (errno.EPIPE, errno.EBADF):
                    raise
                raise self._exited("the harness was writing to it") from None
            data = data[written:]

    def _fill(self, timeout: float) -> bool:
        """Read what is available within ``timeout``; False when nothing came."""
        if not _wait(self._out, select.POLLIN, max(timeout, 0.0)):
            return False
        try:
            chunk = os.read(self._out, _READ_CHUNK)
        except BlockingIOError:
            return False
        if chunk:
            self._buffer += chunk
        else:
            self._eof = True
        return True

    def receive(self, timeout: float) -> str:
        budget = timeout if self._startup is None else max(timeout, self._startup)
        deadline = time.monotonic() + budget
        while True:
            line = _cut_line(self._buffer, self._worker)
            if line is not None:
                self._startup = None
                return line
            if self._eof:
                tail = (
                    f" (unterminated output {bytes(self._buffer[:60])!r})" if self._buffer else ""
                )
                raise self._exited(f"an answer was due{tail}")
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                if self._startup is not None:
                    raise startup_hang(budget, self._worker)
                raise SutFailure(
                    Rule.SUT_HANG, f"no answer within the {timeout:g}s time limit", self._worker
                )
            self._fill(remaining)

    def unsolicited(self) -> str | None:
        while self._fill(0.0) and not self._eof:
            pass
        line = _cut_line(self._buffer, self._worker)
        if line is not None:
            return line
        if self._buffer:
            return bytes(self._buffer[:200]).decode("utf-8", "replace")
        if self._eof:
            raise self._exited("it had nothing to answer")
        return None

    def close(self, grace: float) -> int | None:
        if self._closed:
            return self._proc.returncode
        self._closed = True
        status: int | None = None
        try:
            status = self._await_exit(grace)
        finally:
            # Whatever happened meanwhile (a Ctrl-C included): kill the whole group, the
            # SUT's own children included, then reap the leader; then whatever left the
            # group (a new session) but still carries its token.
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self._proc.pid, signal.SIGKILL)
            self._proc.wait()
            kill_escaped(self._token)
            for stream in (self._proc.stdin, self._proc.stdout):
                if stream is not None:
                    with contextlib.suppress(OSError):
                        stream.close()
            self._tail = self._read_tail()
            self._stderr.close()
            self.ended = True
        return status

    def _await_exit(self, grace: float) -> int | None:
        """Wait up to ``grace`` for the SUT to exit, reading what it writes meanwhile (an
        answer written twice shows up here) into :meth:`leftover`."""
        deadline = time.monotonic() + grace
        # Until it exits; then what it left in the pipe (a descendant may keep the pipe
        # open, so no end of file may ever come).
        while not self._eof:
            if self._proc.poll() is not None:
                while not self._eof and self._fill(0.0):
                    pass
                break
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            self._fill(min(remaining, 0.05))
        try:
            status: int | None = self._proc.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            status = None
        if self._buffer:
            line = bytes(self._buffer[:200]).split(b"\n", 1)[0]
            self._leftover = line.decode("utf-8", "replace")
        return status

    def leftover(self) -> str | None:
        return self._leftover

    def stderr_tail(self) -> str:
        return self._tail if self._tail is not None else self._read_tail()

    def _read_tail(self) -> str:
        try:
            size = self._stderr.seek(0, os.SEEK_END)
            self._stderr.seek(max(0, size - _STDERR_TAIL))
            return self._stderr.read().decode("utf-8", "replace")
        except (OSError, ValueError):
            return ""


def _wait(fd: int, event: int, timeout: float) -> bool:
    """Wait up to ``timeout`` seconds for ``fd`` to be ready; ``poll``, not ``select``,
    so a descriptor numbered above 1023 (a run with many processes) still works."""
    poller = select.poll()
    poller.register(fd, event)
    return bool(poller.poll(max(0, int(timeout * 1000))))


#: The environment variable naming each SUT process's token (its descendants inherit it).
TOKEN_VARIABLE = "FENCEPOST_SUT_TOKEN"


#: The environment variable naming the factory that started a SUT process: every process
#: of one :class:`SubprocessSut` carries the same value, so its ``close`` finds even one
#: started at the instant a Ctrl-C arrived, before it was recorded anywhere.
FAMILY_VARIABLE = "FENCEPOST_SUT_FAMILY"


def kill_escaped(token: str, variable: str = TOKEN_VARIABLE) -> int:
    """Kill every process still carrying ``token`` in its environment; how many were found.

    A SUT runs in a process group of its own, and teardown kills the group. A
    descendant that started a session of its own (``setsid``, a daemon) has left
    the group; it still inherited the token, so it is found through ``/proc``
    (Linux) and killed too. What remains possible is documented in
    docs/conformance.md ("Limits"): a descendant that clears its environment,
    or a system without ``/proc``.
    """
    if not token or not os.path.isdir("/proc"):
        return 0
    marker = f"{variable}={token}".encode()
    found = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as handle:
                environ = handle.read()
        except OSError:
            continue
        if marker in environ.split(b"\0"):
            found += 1
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(int(entry), signal.SIGKILL)
    return found


#: Set to ``none`` to run SUT processes without a PID namespace of their own.
ISOLATION_VARIABLE = "FENCEPOST_SUT_ISOLATION"

_ISOLATION: dict[str, tuple[str, ...]] = {}


def isolation_prefix() -> tuple[str, ...]:
    """The command that runs a SUT process in a PID namespace of its own, or ``()``.

    ``unshare --pid --fork --kill-child``: the SUT becomes process 1 of a new PID
    namespace, and when it dies (the harness kills it) the kernel kills every
    process left in that namespace, whatever session or environment it has.
    Unprivileged users get it through a user namespace (``--user
    --map-root-user``) where the system allows those. Probed once per process
    (one short ``unshare ... true``); ``FENCEPOST_SUT_ISOLATION=none`` turns it off.
    """
    if os.environ.get(ISOLATION_VARIABLE, "").lower() == "none":
        return ()
    if "prefix" not in _ISOLATION:
        _ISOLATION["prefix"] = ()
        unshare = shutil.which("unshare")
        if unshare is not None:
            for extra in ((), ("--user", "--map-root-user")):
                prefix = (unshare, *extra, "--pid", "--fork", "--kill-child", "--")
                try:
                    probe = subprocess.run(
                        [*prefix, "true"],
                        stdin=subprocess.DEVNULL,
                        stdout=subprocess.DEVNULL,
                        stderr=subprocess.DEVNULL,
                        timeout=5,
                        check=False,
                    )
                except (OSError, subprocess.TimeoutExpired):
                    continue
                if probe.returncode == 0:
                    _ISOLATION["prefix"] = prefix
                    break
    return _ISOLATION["prefix"]


def _resolve(program: str, env: dict[str, str]) -> str:
    """``program`` as the path that will run, or :class:`SutFailure` if it cannot start
    (checked here: behind ``unshare`` a missing program would only show as its exit 127)."""
    found = shutil.which(program, path=env.get("PATH")) if os.sep not in program else program
    if found is None or not os.access(found, os.X_OK) or os.path.isdir(found):
        reason = (
            "No such file or directory"
            if found is None or not os.path.exists(found)
            else ("Permission denied")
        )
        raise SutFailure(Rule.SUT_CRASH, f"cannot start {program!r}: {reason}")
    return found


def _spawn(
    argv: Sequence[str], env: dict[str, str] | None, family: str = ""
) -> tuple[subprocess.Popen[bytes], IO[bytes], str]:
    token = uuid.uuid4().hex
    full = dict(os.environ if env is None else env)
    full[TOKEN_VARIABLE] = token
    if family:
        full[FAMILY_VARIABLE] = family
    prefix = isolation_prefix()
    if prefix:
        argv = [_resolve(argv[0], full), *argv[1:]]
    # The stderr file lives as long as the process; its channel closes it.
    stderr = tempfile.TemporaryFile()  # noqa: SIM115
    try:
        proc = subprocess.Popen(
            [*prefix, *argv],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            start_new_session=True,
            env=full,
            bufsize=0,
        )
    except OSError as exc:
        stderr.close()
        raise SutFailure(
            Rule.SUT_CRASH, f"cannot start {' '.join(argv)!r}: {exc.strerror or exc}"
        ) from None
    return proc, stderr, token


def _kill(proc: subprocess.Popen[bytes], token: str) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    kill_escaped(token)
    for stream in (proc.stdin, proc.stdout):
        if stream is not None:
            with contextlib.suppress(OSError):
                stream.close()


class SubprocessSut:
    """Runs the SUT command once per worker, keeping ``prefetch`` processes started ahead.

    Starting an interpreter costs tens of milliseconds; starting the next run's
    processes while the current run talks to its own hides most of it. Every
    process ever started is killed with its group and reaped by :meth:`close`
    or by its channel's ``close``. ``started`` lists their pids (tests use it
    to prove nothing is left behind).
    """

    def __init__(
        self,
        argv: Sequence[str],
        *,
        prefetch: int = 2,
        env: dict[str, str] | None = None,
        startup: float = DEFAULT_STARTUP,
    ) -> None:
        if not argv:
            raise ValueError("the SUT command is empty: give the program to run after --")
        self.argv = tuple(argv)
        #: Seconds each process gets to answer its first message (see :data:`DEFAULT_STARTUP`).
        self.startup = startup
        self.prefetch = prefetch
        self.env = env
        self.started: list[int] = []
        self._spare: collections.deque[tuple[subprocess.Popen[bytes], IO[bytes], str]] = (
            collections.deque()
        )
        #: Every channel handed out and not yet seen ended: what :meth:`close` ends, whoever
        #: holds it (a run interrupted by Ctrl-C included).
        self._channels: list[SubprocessChannel] = []
        self._family = uuid.uuid4().hex

    @property
    def description(self) -> str:
        return " ".join(self.argv)

    def _new(self) -> tuple[subprocess.Popen[bytes], IO[bytes], str]:
        proc, stderr, token = _spawn(self.argv, self.env, self._family)
        self.started.append(proc.pid)
        return proc, stderr, token

    def start(self, worker: str) -> Channel:
        proc, stderr, token = self._spare.popleft() if self._spare else self._new()
        channel = SubprocessChannel(proc, stderr, worker, token, self.startup)
        self._channels = [c for c in self._channels if not c.ended]
        self._channels.append(channel)
        while len(self._spare) < self.prefetch:
            self._spare.append(self._new())
        return channel

    def close(self) -> None:
        """Kill the spare processes, and every other one still running (with its group and
        its escaped descendants), and any process carrying this factory's family mark:
        nothing this factory started outlives it."""
        while self._spare:
            proc, stderr, token = self._spare.popleft()
            _kill(proc, token)
            stderr.close()
        for channel in self._channels:
            channel.close(0.0)  # returns at once for one already ended
        self._channels.clear()
        kill_escaped(self._family, FAMILY_VARIABLE)  # one no list held (a Ctrl-C mid-start)

    def __enter__(self) -> SubprocessSut:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


_EOF = object()


class _QueueIO:
    def __init__(self, inbound: queue.Queue[str | None], outbound: queue.Queue[object]) -> None:
        self._inbound = inbound
        self._outbound = outbound

    def read_line(self) -> str | None:
        return self._inbound.get()

    def write_line(self, line: str) -> None:
        self._outbound.put(line)


class ThreadChannel:
    """A SUT session running in a thread of this process, fed the same lines as a subprocess.

    ``target`` is the session's serve loop: it reads lines from the
    :class:`LineIO` it is given and returns its exit status. An exception in
    it is a crash (its traceback is the "stderr"). The messages are the very
    text lines a subprocess would exchange, so the in-process path checks the
    same wire.
    """

    def __init__(
        self, target: Callable[[LineIO], int], worker: str, startup: float = DEFAULT_STARTUP
    ) -> None:
        self._worker = worker
        self._startup: float | None = startup
        self._inbound: queue.Queue[str | None] = queue.Queue()
        self._outbound: queue.Queue[object] = queue.Queue()
        self._status: int | None = None
        self._log = ""
        self._thread = threading.Thread(
            target=self._run, args=(target,), name=f"sut-{worker}", daemon=True
        )
        self._thread.start()

    def _run(self, target: Callable[[LineIO], int]) -> None:
        try:
            self._status = target(_QueueIO(self._inbound, self._outbound))
        except BaseException:
            self._log = traceback.format_exc()
            self._status = 1
        finally:
            self._outbound.put(_EOF)

    @property
    def worker(self) -> str:
        return self._worker

    @property
    def pid(self) -> int | None:
        return None

    def send(self, line: str, timeout: float) -> None:
        if not self._thread.is_alive():
            raise SutFailure(
                Rule.SUT_CRASH,
                f"the SUT session ended (status {self._status}) before the harness wrote to it",
                self._worker,
            )
        self._inbound.put(line)

    def _check(self, item: object) -> str:
        if item is _EOF:
            raise SutFailure(
                Rule.SUT_CRASH,
                f"the SUT session ended (status {self._status}) while an answer was due",
                self._worker,
            )
        assert isinstance(item, str)
        size = len(item.encode("utf-8", "surrogatepass"))
        if "\n" in item or size > MAX_LINE_BYTES:
            raise SutFailure(
                Rule.LINE_TOO_LONG,
                f"a line of {size} bytes; the limit is {MAX_LINE_BYTES}",
                self._worker,
            )
        return item

    def receive(self, timeout: float) -> str:
        budget = timeout if self._startup is None else max(timeout, self._startup)
        try:
            item = self._outbound.get(timeout=budget)
        except queue.Empty:
            if self._startup is not None:
                raise startup_hang(budget, self._worker) from None
            raise SutFailure(
                Rule.SUT_HANG, f"no answer within the {timeout:g}s time limit", self._worker
            ) from None
        self._startup = None
        return self._check(item)

    def unsolicited(self) -> str | None:
        try:
            item = self._outbound.get_nowait()
        except queue.Empty:
            return None
        if item is _EOF:
            self._outbound.put(_EOF)
        return self._check(item)

    def close(self, grace: float) -> int | None:
        self._inbound.put(None)
        self._thread.join(grace)
        return None if self._thread.is_alive() else self._status

    def leftover(self) -> str | None:
        try:
            line = self.unsolicited()
        except SutFailure:  # it ended: nothing was left behind
            return None
        return None if line is None else line[:200]

    def stderr_tail(self) -> str:
        return self._log[-_STDERR_TAIL:]
