"""A loopback TCP proxy between a PostgreSQL client and server that loses responses on cue.

It listens on 127.0.0.1 (never elsewhere) and forwards every connection to the
upstream server (a TCP address or a Unix socket path). A one-shot :class:`Cut`
rule watches client-to-server bytes for a marker (a write's unique op_id, which
psycopg sends as a parameter of the statement) and then:

- ``after_commit``: forwards the message, waits until the server has answered
  (its ReadyForQuery: in autocommit the write has committed), swallows the
  answer, runs ``hook`` and closes both sides: the write happened, the reply is lost;
- ``before_send``: drops the message, runs ``hook`` and closes both sides: the
  server never saw the write, and the client cannot tell this from the first case;
- ``black_hole``: forwards the message and then stops forwarding the answer
  while keeping the connection open: the client waits until its own timeout.

``close_idle()`` closes every connection while nothing is in flight (a server
restart, an idle timeout), to show the client discards such connections before
sending anything.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum


class Mode(Enum):
    AFTER_COMMIT = "after_commit"
    BEFORE_SEND = "before_send"
    BLACK_HOLE = "black_hole"


@dataclass
class Cut:
    """Cut the connection that carries ``marker``, once."""

    marker: bytes
    mode: Mode
    hook: Callable[[], object] | None = None
    fired: threading.Event = field(default_factory=threading.Event)


class _Pair:
    def __init__(self, proxy: Proxy, client: socket.socket, server: socket.socket) -> None:
        self.proxy = proxy
        self.client = client
        self.server = server
        self.swallow = threading.Event()  # drop server->client bytes from now on
        self.answered = threading.Event()  # the server sent ReadyForQuery while swallowing
        self.closed = False
        self.lock = threading.Lock()

    def close(self) -> None:
        with self.lock:
            if self.closed:
                return
            self.closed = True
        for sock in (self.client, self.server):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()

    def client_to_server(self) -> None:
        try:
            while True:
                data = self.client.recv(65536)
                if not data:
                    break
                rule = self.proxy.take_rule(data)
                if rule is None:
                    self.server.sendall(data)
                    continue
                if rule.mode is Mode.BEFORE_SEND:
                    self._finish(rule)
                    return
                self.swallow.set()
                self.server.sendall(data)
                if rule.mode is Mode.BLACK_HOLE:
                    rule.fired.set()
                    continue
                self.answered.wait(10)
                self._finish(rule)
                return
        except OSError:
            pass
        self.close()

    def _finish(self, rule: Cut) -> None:
        if rule.hook is not None:
            rule.hook()
        rule.fired.set()
        self.close()

    def server_to_client(self) -> None:
        try:
            while True:
                data = self.server.recv(65536)
                if not data:
                    break
                if self.swallow.is_set():
                    # ReadyForQuery ('Z', length 5, status) ends the server's answer.
                    if b"Z\x00\x00\x00\x05" in data:
                        self.answered.set()
                    continue
                self.client.sendall(data)
        except OSError:
            pass
        if not self.swallow.is_set():
            self.close()


class Proxy:
    """Forwards 127.0.0.1:``port`` to ``upstream``; see the module docstring."""

    def __init__(self, upstream: tuple[str, int] | str) -> None:
        self.upstream = upstream
        self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(64)
        self.port: int = self.listener.getsockname()[1]
        self._rules: list[Cut] = []
        self._pairs: list[_Pair] = []
        self._lock = threading.Lock()
        self._stopped = False
        self.connections = 0
        threading.Thread(target=self._accept, daemon=True).start()

    def _connect_upstream(self) -> socket.socket:
        if isinstance(self.upstream, str):
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.connect(self.upstream)
        else:
            sock = socket.create_connection(self.upstream)
        return sock

    def _accept(self) -> None:
        while not self._stopped:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            try:
                server = self._connect_upstream()
            except OSError:
                client.close()
                continue
            pair = _Pair(self, client, server)
            with self._lock:
                self._pairs.append(pair)
                self.connections += 1
            threading.Thread(target=pair.client_to_server, daemon=True).start()
            threading.Thread(target=pair.server_to_client, daemon=True).start()

    def cut(self, marker: str | bytes, mode: Mode, hook: Callable[[], object] | None = None) -> Cut:
        """Arm a one-shot cut on the next client message containing ``marker``."""
        rule = Cut(marker.encode() if isinstance(marker, str) else marker, mode, hook)
        with self._lock:
            self._rules.append(rule)
        return rule

    def take_rule(self, data: bytes) -> Cut | None:
        with self._lock:
            for rule in self._rules:
                if rule.marker in data:
                    self._rules.remove(rule)
                    return rule
        return None

    def close_idle(self) -> None:
        """Close every connection now (call only while the client is idle)."""
        with self._lock:
            pairs, self._pairs = self._pairs, []
        for pair in pairs:
            pair.close()
        time.sleep(0.05)

    def refuse(self) -> None:
        """Stop accepting: new connections are refused (the server is unreachable)."""
        self._stopped = True
        with contextlib.suppress(OSError):
            self.listener.shutdown(socket.SHUT_RDWR)  # wakes the blocked accept()
        self.listener.close()

    def close(self) -> None:
        self.refuse()
        self.close_idle()
