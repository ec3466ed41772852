#!/usr/bin/env python3
"""Put an existing HTTP service behind fencepost's conformance protocol.

The service is ``service.py`` (its own endpoints, its own JSON vocabulary, a
storage backend it reaches over HTTP); this adapter changes nothing in it. One
adapter process is one SUT worker:

1. it starts the service as a child process, on 127.0.0.1 and a free port,
   pointed (``--store``) at a small HTTP server of the adapter's own, the
   *store relay*, also on 127.0.0.1; the child's stdin is a lifeline: when the
   adapter ends, however it ends, the service exits;
2. each request of the harness (``compare``, ``merge``, ``publish``) becomes one
   HTTP request to the service, its values translated from the wire's
   vocabulary to the service's and back (docs/wrapping.md, "Mapping the
   concepts"); the service's 400 becomes the protocol's ``error``;
3. while the service handles a ``publish``, each request it makes to its store
   reaches the relay, which turns it into one protocol call to the harness
   (which plays the durable stores, the lost answers and the schedule) and the
   harness's reply into the store's HTTP answer: ``timeout`` is 504, ``conflict``
   is 409. The adapter's main thread waits on the service meanwhile, so the relay
   alone speaks on stdin/stdout: one conversation, in order.

The wire (framing, handshake, request checks, ``reset``, ``shutdown``) is
examples/wire/fencepost_wire.py. Levels: ``algebra`` and ``publisher``; the
service has no partition reader, so ``checkpointer`` is not declared and the
harness skips it. Check it with::

    fencepost conform --levels algebra,publisher -- python3 examples/wrap-http/adapter.py

Cost: two processes per worker (adapter and service) started once, then reused
(``reset``); each message is one request over a kept-alive local connection.
"""

from __future__ import annotations

import http.client
import json
import os
import subprocess
import sys
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "wire"))

from fencepost_wire import (  # noqa: E402
    Calls,
    ProtocolBreak,
    Refuse,
    Shutdown,
    Sut,
    check_fields,
    is_int,
    log,
)

# --- 1. values: the wire's vocabulary <-> the service's ----------------------------------
# wire cut {"at": 5, "kind": "through"}   <-> service position {"value": 5, "inclusive": true}
# wire order {"kind": "integer", "successor": true} <-> {"type": "integer", "discrete": true}
# wire checkpoint "finality": "final"     <-> "final": true (token, generation: not used)
# wire record "op_id"                     <-> "writer"


def order_out(value: Any, path: str) -> dict[str, Any]:
    if isinstance(value, dict) and value.get("kind") == "string":
        o = check_fields(value, path, {"name", "kind"})
        return {"name": o["name"], "type": "string", "discrete": False}
    o = check_fields(value, path, {"name", "kind", "successor"})
    if o["kind"] != "integer" or not isinstance(o["successor"], bool):
        raise Refuse(f"{path}.kind", "must be integer (with a boolean successor) or string")
    return {"name": o["name"], "type": "integer", "discrete": o["successor"]}


def position_out(value: Any, path: str) -> dict[str, Any] | None:
    if value is None:
        return None
    cut = check_fields(value, path, {"at", "kind"})
    if cut["kind"] not in ("before", "through"):
        raise Refuse(f"{path}.kind", f"must be before or through, not {cut['kind']!r}")
    return {"value": cut["at"], "inclusive": cut["kind"] == "through"}


def cut_in(position: Any) -> dict[str, Any] | None:
    if position is None:
        return None
    return {"at": position["value"], "kind": "through" if position["inclusive"] else "before"}


def membership_out(value: Any, path: str) -> dict[str, Any]:
    m = check_fields(value, path, {"epoch", "scope", "partitions", "orders"})
    if not isinstance(m["orders"], dict):
        raise Refuse(f"{path}.orders", "must be an object")
    orders = {n: order_out(o, f"{path}.orders.{n}") for n, o in m["orders"].items()}
    return {
        "epoch": m["epoch"],
        "scope": m["scope"],
        "partitions": m["partitions"],
        "orders": orders,
    }


CHECKPOINT = {"partition", "cut", "token", "generation", "scope", "epoch", "finality"}


def checkpoint_out(value: Any, path: str) -> dict[str, Any]:
    c = check_fields(value, path, CHECKPOINT)
    if c["finality"] not in ("final", "provisional"):
        raise Refuse(f"{path}.finality", "must be final or provisional")
    if not is_int(c["generation"]):
        raise Refuse(f"{path}.generation", "must be an integer")
    return {
        "partition": c["partition"],
        "position": position_out(c["cut"], f"{path}.cut"),
        "final": c["finality"] == "final",
        "scope": c["scope"],
        "epoch": c["epoch"],
    }


def record_out(value: Any) -> dict[str, Any]:
    r = check_fields(value, "reply.record", {"epoch", "cut", "revision", "op_id"})
    return {
        "epoch": r["epoch"],
        "position": position_out(r["cut"], "reply.record.cut"),
        "revision": r["revision"],
        "writer": r["op_id"],
    }


# --- 3. the store relay: the service's storage requests become protocol calls ------------


class Relay:
    """The calls of the ``publish`` in progress (None between requests)."""

    calls: Calls | None = None


def relay_handler(relay: Relay) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True  # header and body leave at once (no 40 ms stalls)

        def do_GET(self) -> None:
            self.serve("GET")

        def do_PUT(self) -> None:
            self.serve("PUT")

        def serve(self, method: str) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length)) if length else None
            url = urllib.parse.urlsplit(self.path)
            parts = url.path.split("/")  # ["", "streams", <stream>, <what>]
            calls = relay.calls
            if calls is None or len(parts) != 4 or parts[1] != "streams":
                return self.answer(404, {"error": f"no {method} {self.path} now"})
            stream, what = urllib.parse.unquote(parts[2]), parts[3]
            try:
                self.forward(calls, method, stream, what, url.query, body)
            except Shutdown:  # the harness said shutdown while the service waited
                os._exit(0)
            except (ProtocolBreak, Refuse) as exc:
                log(f"wrap-http relay: {exc}")
                self.answer(502, {"error": str(exc)})

        def forward(
            self, calls: Calls, method: str, stream: str, what: str, query: str, body: Any
        ) -> None:
            """One storage request as one call; the reply as the store's HTTP answer."""
            if (method, what) == ("GET", "publication"):
                reply = calls.call("read_publication", stream=stream)
                if reply["ok"]:
                    return self.answer(200, record_out(reply.get("record")))
            elif (method, what) == ("GET", "membership"):
                reply = calls.call("read_membership", stream=stream)
                if reply["ok"]:
                    m = membership_out(reply.get("membership"), "reply.membership")
                    return self.answer(200, m)
            elif (method, what) == ("GET", "checkpoints"):
                epoch = int(urllib.parse.parse_qs(query)["epoch"][0])
                reply = calls.call("read_checkpoints", stream=stream, epoch=epoch)
                if reply["ok"]:
                    raw = reply.get("checkpoints") or []
                    vector = [
                        checkpoint_out(c, f"reply.checkpoints[{i}]") for i, c in enumerate(raw)
                    ]
                    return self.answer(200, vector)
            elif (method, what) == ("PUT", "publication"):
                reply = calls.call(
                    "write_publication",
                    stream=stream,
                    expected_revision=body["expected_revision"],
                    epoch=body["epoch"],
                    cut=cut_in(body["position"]),
                    op_id=body["writer"],
                )
                if reply["ok"]:
                    return self.answer(200, record_out(reply.get("record")))
                if reply["error"] == "conflict":  # the revision moved: the current record
                    return self.answer(409, record_out(reply.get("record")))
            else:
                return self.answer(404, {"error": f"no {method} {what}"})
            if reply["error"] == "timeout":  # the answer was lost (a write may be applied)
                return self.answer(504, {"error": "timeout"})
            raise ProtocolBreak(f"{what}: unexpected error {reply['error']!r}")

        def answer(self, status: int, payload: Any) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler


# --- 2. the service, started once per adapter process --------------------------------------


class Service:
    """The child process and one kept-alive connection to it."""

    def __init__(self, relay_url: str) -> None:
        self.child = subprocess.Popen(
            [sys.executable, str(HERE / "service.py"), "--port", "0", "--store", relay_url],
            stdin=subprocess.PIPE,  # the lifeline: closed when this process ends
            stdout=subprocess.PIPE,
        )
        assert self.child.stdout is not None
        first = self.child.stdout.readline().decode().strip()  # listening on http://...:PORT
        if not first.startswith("listening on http://127.0.0.1:"):
            raise SystemExit(f"wrap-http: the service did not start (it said {first!r})")
        self.port = int(first.rsplit(":", 1)[1])
        self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=300)

    def post(self, path: str, body: Any) -> Any:
        """The service's JSON answer; its 400 is the protocol's ``error`` (bad input)."""
        self.conn.request(
            "POST",
            path,
            body=json.dumps(body).encode(),
            headers={"Content-Type": "application/json"},
        )
        response = self.conn.getresponse()
        payload = json.loads(response.read())
        if response.status == 400:
            raise Refuse("request", payload["error"])
        if response.status != 200:
            raise ProtocolBreak(f"the service answered {response.status}: {payload}")
        return payload


relay = Relay()
store = HTTPServer(("127.0.0.1", 0), relay_handler(relay))
threading.Thread(target=store.serve_forever, daemon=True).start()
service = Service(f"http://127.0.0.1:{store.server_address[1]}")

attempts: dict[str, int] = {}  # attempts per worker name in this process (op_ids)
sut = Sut("wrap-http (frontier-service)", on_reset=attempts.clear)  # the service keeps nothing


@sut.handler("compare")
def compare(msg: dict[str, Any], calls: Calls) -> dict[str, Any]:
    body = {
        "order": order_out(msg["order"], "compare.order"),
        "a": position_out(msg["a"], "compare.a"),
        "b": position_out(msg["b"], "compare.b"),
    }
    return {"result": service.post("/v1/compare", body)["comparison"]}


@sut.handler("merge")
def merge(msg: dict[str, Any], calls: Calls) -> dict[str, Any]:
    if not isinstance(msg["checkpoints"], list):
        raise Refuse("merge.checkpoints", "must be a list")
    body = {
        "membership": membership_out(msg["membership"], "merge.membership"),
        "checkpoints": [
            checkpoint_out(c, f"merge.checkpoints[{i}]") for i, c in enumerate(msg["checkpoints"])
        ],
    }
    answer = service.post("/v1/frontier", body)
    if answer["status"] == "withheld":
        return {"withheld": answer["reason"]}
    return {"frontier": cut_in(answer["frontier"])}


@sut.handler("publish")
def publish(msg: dict[str, Any], calls: Calls) -> dict[str, Any]:
    for field in ("worker", "stream"):
        if not isinstance(msg[field], str):
            raise Refuse(f"publish.{field}", "must be a string")
    attempts[msg["worker"]] = attempts.get(msg["worker"], 0) + 1
    op_id = f"{msg['worker']}-{attempts[msg['worker']]}"  # one per attempt, never reused
    stream = urllib.parse.quote(msg["stream"], safe="")
    relay.calls = calls  # the relay speaks for this request while the service works
    try:
        answer = service.post(
            f"/v1/streams/{stream}/publish", {"policy": msg["policy"], "op_id": op_id}
        )
    finally:
        relay.calls = None
    return {
        "outcome": answer["outcome"],
        "epoch": answer["epoch"],
        "cut": cut_in(answer["position"]),
        "reason": answer["reason"],
    }


if __name__ == "__main__":
    sut.run()
