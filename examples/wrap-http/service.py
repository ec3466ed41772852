#!/usr/bin/env python3
"""frontier-service: an EXISTING HTTP service that publishes merged frontiers.

It stands for a service you already run and do not want to change: its own
JSON vocabulary (a ``position`` is ``{"value": 5, "inclusive": true}``, an
order is ``{"name", "type", "discrete"}``), its own endpoints, and a storage
backend it reaches over HTTP (``--store URL``), as services reach a database
or a configuration store. It knows nothing of fencepost. ``adapter.py`` puts
it behind the conformance protocol (docs/wrapping.md).

Its decisions are those of examples/wrap-library/legacy_frontier.py (the
service is that library behind HTTP), so the two examples differ only in how
the existing code is reached.

Endpoints (JSON in, JSON out; 400 with ``{"error": "<path>: <problem>"}`` on bad input):

* ``POST /v1/compare``  ``{"order", "a", "b"}`` -> ``{"comparison": -1 | 0 | 1}``
* ``POST /v1/frontier`` ``{"membership", "checkpoints"}`` ->
  ``{"status": "ok", "frontier": <position>}`` or ``{"status": "withheld", "reason"}``
* ``POST /v1/streams/<stream>/publish`` ``{"policy", "op_id"}`` ->
  ``{"outcome", "epoch", "position", "reason"}``: one publication attempt,
  reading and writing the store.

The store's API (what ``--store`` must serve): ``GET /streams/<s>/publication``,
``GET /streams/<s>/membership``, ``GET /streams/<s>/checkpoints?epoch=N``,
``PUT /streams/<s>/publication`` with ``{"expected_revision", "epoch",
"position", "writer"}``; 409 carries the current record, 504 means the answer
was lost (the write may have been applied).

It listens on 127.0.0.1 only, prints ``listening on http://127.0.0.1:PORT`` as
its first line of stdout, and exits when its stdin closes (the lifeline of a
parent that starts it). Cost: one thread per connection; one kept-alive
connection to the store.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import sys
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "wrap-library"))
import legacy_frontier as lf


class BadInput(ValueError):
    """Answered 400 with the path of the offending field."""


# --- the service's JSON vocabulary <-> the library's types -------------------------------


def need(value: Any, path: str, kind: type | tuple[type, ...]) -> Any:
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
        raise BadInput(f"{path}: has the wrong type")
    return value


def fields(value: Any, path: str, names: set[str]) -> dict[str, Any]:
    """An object with exactly ``names``."""
    need(value, path, dict)
    if set(value) != names:
        odd = sorted(set(value) ^ names)
        raise BadInput(f"{path}.{odd[0]}: missing or unknown field")
    return dict(value)


def order_in(value: Any, path: str) -> lf.Order:
    o = fields(value, path, {"name", "type", "discrete"})
    if o["type"] not in ("integer", "string"):
        raise BadInput(f"{path}.type: integer or string")
    return lf.Order(need(o["name"], f"{path}.name", str), o["type"] == "integer", o["discrete"])


def position_in(value: Any, path: str, order: lf.Order | None) -> lf.Position | None:
    if value is None:
        return None
    p = fields(value, path, {"value", "inclusive"})
    numeric = order.numeric if order is not None else isinstance(p["value"], int)
    need(p["value"], f"{path}.value", int if numeric else str)
    return lf.Position(p["value"], need(p["inclusive"], f"{path}.inclusive", bool))


def position_out(p: lf.Position | None) -> dict[str, Any] | None:
    return None if p is None else {"value": p.value, "inclusive": p.inclusive}


def membership_in(value: Any, path: str) -> lf.Membership:
    m = fields(value, path, {"epoch", "scope", "partitions", "orders"})
    orders = {
        n: order_in(o, f"{path}.orders.{n}") for n, o in need(m["orders"], path, dict).items()
    }
    partitions = need(m["partitions"], f"{path}.partitions", dict)
    for name, order in partitions.items():
        if order not in orders:
            raise BadInput(f"{path}.partitions.{name}: names no order")
    return lf.Membership(
        need(m["epoch"], f"{path}.epoch", int),
        need(m["scope"], f"{path}.scope", str),
        dict(partitions),
        orders,
    )


def checkpoint_in(value: Any, path: str, membership: lf.Membership | None) -> lf.Checkpoint:
    c = fields(value, path, {"partition", "position", "final", "scope", "epoch"})
    name = need(c["partition"], f"{path}.partition", str)
    order = None
    if membership is not None and name in membership.partitions:
        order = membership.orders[membership.partitions[name]]
    return lf.Checkpoint(
        name,
        position_in(c["position"], f"{path}.position", order),
        need(c["final"], f"{path}.final", bool),
        need(c["scope"], f"{path}.scope", str),
        need(c["epoch"], f"{path}.epoch", int),
    )


def record_in(value: Any, path: str) -> lf.Record:
    r = fields(value, path, {"epoch", "position", "revision", "writer"})
    return lf.Record(
        r["epoch"], position_in(r["position"], f"{path}.position", None), r["revision"], r["writer"]
    )


# --- the storage backend, over HTTP ---------------------------------------------------------


class HttpStore:
    """``lf.Store`` over the store's HTTP API, on one kept-alive connection."""

    def __init__(self, url: str) -> None:
        parts = urllib.parse.urlsplit(url)
        self.host, self.port = parts.hostname or "127.0.0.1", parts.port or 80
        self.conn = http.client.HTTPConnection(self.host, self.port, timeout=60)
        self.membership: lf.Membership | None = None  # the last read: orders of checkpoints

    def _request(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        data = None if body is None else json.dumps(body).encode()
        headers = {"Content-Type": "application/json"} if data is not None else {}
        try:
            self.conn.request(method, path, body=data, headers=headers)
            response = self.conn.getresponse()
            text = response.read()
        except (http.client.HTTPException, OSError):
            # No automatic retry: a broken connection is a lost answer (a write may have
            # landed), which the library settles by reading back. The next request
            # opens a new connection.
            self.conn.close()
            raise lf.Lost() from None
        if response.status == 504:
            raise lf.Lost()
        return response.status, json.loads(text) if text else None

    def _ok(self, method: str, path: str, body: Any = None) -> Any:
        status, payload = self._request(method, path, body)
        if status != 200:
            raise RuntimeError(f"store: {method} {path} answered {status}")
        return payload

    def read_publication(self, stream: str) -> lf.Record:
        return record_in(self._ok("GET", f"/streams/{q(stream)}/publication"), "store.record")

    def read_membership(self, stream: str) -> lf.Membership:
        payload = self._ok("GET", f"/streams/{q(stream)}/membership")
        self.membership = membership_in(payload, "store.membership")
        return self.membership

    def read_checkpoints(self, stream: str, epoch: int) -> list[lf.Checkpoint]:
        payload = self._ok("GET", f"/streams/{q(stream)}/checkpoints?epoch={epoch}")
        return [
            checkpoint_in(c, f"store.checkpoints[{i}]", self.membership)
            for i, c in enumerate(payload)
        ]

    def write_publication(
        self, stream: str, expected_revision: int, epoch: int, position: lf.Position, op_id: str
    ) -> lf.Record:
        body = {
            "expected_revision": expected_revision,
            "epoch": epoch,
            "position": position_out(position),
            "writer": op_id,
        }
        status, payload = self._request("PUT", f"/streams/{q(stream)}/publication", body)
        if status == 409:
            raise lf.Conflict(record_in(payload, "store.record"))
        if status != 200:
            raise RuntimeError(f"store: PUT publication answered {status}")
        return record_in(payload, "store.record")


def q(segment: str) -> str:
    return urllib.parse.quote(segment, safe="")


# --- the endpoints ---------------------------------------------------------------------


class Service:
    def __init__(self, store_url: str) -> None:
        self.store = HttpStore(store_url)
        self.lock = threading.Lock()  # one publication at a time on the one connection

    def compare(self, body: Any) -> dict[str, Any]:
        b = fields(body, "body", {"order", "a", "b"})
        order = order_in(b["order"], "order")
        a, c = position_in(b["a"], "a", order), position_in(b["b"], "b", order)
        return {"comparison": lf.compare(order, a, c)}

    def frontier(self, body: Any) -> dict[str, Any]:
        b = fields(body, "body", {"membership", "checkpoints"})
        membership = membership_in(b["membership"], "membership")
        vector = [
            checkpoint_in(c, f"checkpoints[{i}]", membership)
            for i, c in enumerate(need(b["checkpoints"], "checkpoints", list))
        ]
        try:
            return {"status": "ok", "frontier": position_out(lf.merge(membership, vector))}
        except lf.Withheld as withheld:
            return {"status": "withheld", "reason": withheld.reason}
        except ValueError as exc:
            raise BadInput(f"checkpoints: {exc}") from None

    def publish(self, stream: str, body: Any) -> dict[str, Any]:
        b = fields(body, "body", {"policy", "op_id"})
        if b["policy"] not in ("monotone", "reset"):
            raise BadInput("policy: monotone or reset")
        with self.lock:
            outcome = lf.Publisher(self.store).publish(stream, b["policy"], b["op_id"])
        return {
            "outcome": outcome.kind,
            "epoch": outcome.epoch,
            "position": position_out(outcome.position),
            "reason": outcome.reason,
        }


def handler_for(service: Service) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive: one connection per client
        disable_nagle_algorithm = True  # header and body leave at once (no 40 ms stalls)

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            try:
                body = json.loads(self.rfile.read(length) or b"null")
                path = urllib.parse.urlsplit(self.path).path.split("/")
                if path == ["", "v1", "compare"]:
                    self.answer(200, service.compare(body))
                elif path == ["", "v1", "frontier"]:
                    self.answer(200, service.frontier(body))
                elif len(path) == 5 and path[:3] == ["", "v1", "streams"] and path[4] == "publish":
                    self.answer(200, service.publish(urllib.parse.unquote(path[3]), body))
                else:
                    self.answer(404, {"error": f"no endpoint {self.path}"})
            except (BadInput, json.JSONDecodeError) as exc:
                self.answer(400, {"error": str(exc)})
            except Exception as exc:  # the service's own failure: 500, logged
                print(f"frontier-service: {exc!r}", file=sys.stderr, flush=True)
                self.answer(500, {"error": repr(exc)})

        def answer(self, status: int, payload: Any) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:  # quiet: stderr is a log
            pass

    return Handler


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--port", type=int, default=8080, help="0: any free port")
    parser.add_argument("--store", required=True, help="base URL of the storage backend")
    args = parser.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", args.port), handler_for(Service(args.store)))
    server.daemon_threads = True
    print(f"listening on http://127.0.0.1:{server.server_address[1]}", flush=True)

    def lifeline() -> None:  # the parent closed our stdin (or died): stop at once
        sys.stdin.buffer.read()
        os._exit(0)

    threading.Thread(target=lifeline, daemon=True).start()
    server.serve_forever()


if __name__ == "__main__":
    main()
