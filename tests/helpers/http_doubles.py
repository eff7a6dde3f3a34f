"""HTTP test doubles on loopback (stdlib only): a scripted OpenAI-compatible stub server
and a fault-injecting proxy in front of a real server.

Both record what they receive, so tests can count attempts, check bodies and see how
many requests were in flight at once. Run `python tests/helpers/http_doubles.py --port P` for an
instant-answer stub server in its own process (benchmarks/bench_openai.py does).
"""

from __future__ import annotations

import http.client
import itertools
import json
import socket
import struct
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    status: int = 200
    body: bytes | dict[str, Any] = b""
    headers: dict[str, str] = field(default_factory=dict)
    stall: float = 0.0  # seconds to wait before answering
    reset: bool = False  # close the connection with a TCP reset instead of answering


@dataclass
class Seen:
    path: str
    body: dict[str, Any]
    headers: dict[str, str]


def completion(text: str, finish: str = "stop", **extra: Any) -> dict[str, Any]:
    choice = {"index": 0, "text": text, "finish_reason": finish, **extra}
    return {"id": "cmpl-1", "object": "text_completion", "choices": [choice],
            "usage": {"completion_tokens": max(1, len(text) // 4)}}  # fmt: skip


def completions(texts: list[str], finish: str = "stop", reverse: bool = False) -> dict[str, Any]:
    """An answer to a list of prompts: one choice per prompt, `index` = its position
    (vLLM's order is not promised: `reverse` checks that clients go by the index)."""
    choices = [{"index": i, "text": t, "finish_reason": finish} for i, t in enumerate(texts)]
    if reverse:
        choices.reverse()
    return {"id": "cmpl-1", "object": "text_completion", "choices": choices,
            "usage": {"completion_tokens": sum(max(1, len(t) // 4) for t in texts)}}  # fmt: skip


def chat(text: str, finish: str = "stop") -> dict[str, Any]:
    message = {"role": "assistant", "content": text}
    return {"id": "chat-1", "object": "chat.completion",
            "choices": [{"index": 0, "message": message, "finish_reason": finish}]}  # fmt: skip


def models(*ids: str) -> dict[str, Any]:
    return {"object": "list", "data": [{"id": i, "object": "model", "owned_by": "stub",
                                        "created": time.time(), "max_model_len": 2048}
                                       for i in ids]}  # fmt: skip


def _send(handler: BaseHTTPRequestHandler, reply: Reply) -> None:
    if reply.stall:
        time.sleep(reply.stall)
    if reply.reset:
        handler.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        handler.close_connection = True
        handler.connection.close()
        return
    data = reply.body if isinstance(reply.body, bytes) else json.dumps(reply.body).encode()
    try:
        handler.send_response(reply.status)
        handler.send_header("content-type", "application/json")
        for name, value in reply.headers.items():
            handler.send_header(name, value)
        handler.send_header("content-length", str(len(data)))
        handler.end_headers()
        handler.wfile.write(data)
    except (BrokenPipeError, ConnectionResetError):  # the client gave up (a stall, a kill)
        handler.close_connection = True


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 256


class _Recorder:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.seen: list[Seen] = []
        self.in_flight = 0
        self.max_in_flight = 0

    def enter(self, seen: Seen) -> None:
        with self.lock:
            self.seen.append(seen)
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)

    def leave(self) -> None:
        with self.lock:
            self.in_flight -= 1


class _Running:
    server: _Server

    def start(self, handler_cls: type[BaseHTTPRequestHandler], port: int = 0) -> None:
        self.server = _Server(("127.0.0.1", port), handler_cls)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def port(self) -> int:
        return int(self.server.server_address[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _read(handler: BaseHTTPRequestHandler) -> tuple[bytes, dict[str, Any]]:
    n = int(handler.headers.get("content-length") or 0)
    raw = handler.rfile.read(n) if n else b""
    try:
        body = json.loads(raw) if raw else {}
    except json.JSONDecodeError:
        body = {}
    return raw, body


class StubServer(_Running, _Recorder):
    """An OpenAI-compatible server whose every answer comes from `respond(seen)`."""

    def __init__(
        self,
        respond: Callable[[Seen], Reply],
        model: str = "stub-model",
        *,
        port: int = 0,
        record: bool = True,
        models_too: bool = False,
    ) -> None:
        _Recorder.__init__(self)
        self.record = record
        self.models_too = models_too  # respond() answers GET /models too
        self.respond = respond
        self.model_list = models(model)
        stub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # no 40 ms delayed-ACK wait per answer

            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                seen = Seen(self.path, {}, {k.lower(): v for k, v in self.headers.items()})
                stub.enter(seen)
                try:
                    if self.path.rstrip("/").endswith("/models"):
                        reply = stub.respond(seen) if stub.models_too else Reply()
                        _send(self, reply if reply.status != 200 else Reply(body=stub.model_list))
                    else:
                        _send(self, Reply(404, {"detail": "Not Found"}))
                finally:
                    stub.leave()

            def do_POST(self) -> None:
                _, body = _read(self)
                seen = Seen(self.path, body, {k.lower(): v for k, v in self.headers.items()})
                stub.enter(seen)
                try:
                    _send(self, stub.respond(seen))
                finally:
                    stub.leave()

        self.start(Handler, port)

    def enter(self, seen: Seen) -> None:
        if self.record:
            super().enter(seen)

    def leave(self) -> None:
        if self.record:
            super().leave()

    def generations(self) -> list[Seen]:
        return [s for s in self.seen if s.path.endswith("completions")]


FAULT_KINDS = ("429", "500", "stall", "malformed", "reset")


class FaultProxy(_Running, _Recorder):
    """Forwards to `upstream` (host, port), but answers request number n (counting from
    0) with a fault when `n % 10` is in `fault_slots` (3 of 10 by default: 30%); the
    faults cycle through 429 + Retry-After, 500, a stall past the client's timeout,
    malformed JSON and a reset connection, so every kind happens in a short run.
    `max_stalls` caps the stalls (each costs the client a whole timeout): past it, the
    cycle skips the stall and the slot gets the next kind. `upstream_ok` records the
    bodies the real server answered with 200."""

    def __init__(
        self,
        upstream: tuple[str, int],
        *,
        fault_slots: tuple[int, ...] = (1, 4, 7),
        stall: float = 5.0,
        retry_after: str = "1",
        max_stalls: int | None = None,
    ) -> None:
        _Recorder.__init__(self)
        self.upstream = upstream
        self.fault_slots = fault_slots
        self.stall = stall
        self.retry_after = retry_after
        self.max_stalls = max_stalls
        self.counter = itertools.count()
        self.kinds = itertools.cycle(FAULT_KINDS)
        self.faults: list[str] = []
        self.upstream_ok: list[dict[str, Any]] = []
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # no 40 ms delayed-ACK wait per answer

            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                proxy.forward(self, "GET", b"", {})

            def do_POST(self) -> None:
                raw, body = _read(self)
                seen = Seen(self.path, body, {k.lower(): v for k, v in self.headers.items()})
                proxy.enter(seen)
                try:
                    fault = proxy.next_fault()
                    if fault is None:
                        proxy.forward(self, "POST", raw, body)
                    else:
                        _send(self, proxy.fault_reply(fault))
                finally:
                    proxy.leave()

        self.start(Handler)

    def next_fault(self) -> str | None:
        with self.lock:
            n = next(self.counter)
            if n % 10 not in self.fault_slots:
                return None
            kind = next(self.kinds)
            if kind == "stall" and self.max_stalls is not None:
                if self.faults.count("stall") >= self.max_stalls:
                    kind = next(self.kinds)
            self.faults.append(kind)
            return kind

    def fault_reply(self, kind: str) -> Reply:
        if kind == "429":
            return Reply(429, {"error": {"message": "slow down"}},
                         headers={"retry-after": self.retry_after})  # fmt: skip
        if kind == "500":
            return Reply(500, {"error": {"message": "internal error"}})
        if kind == "stall":
            return Reply(200, completion("never read"), stall=self.stall)
        if kind == "malformed":
            return Reply(200, b'{"id": "x", "choices": [{"text": "trunc')
        return Reply(reset=True)

    def forward(
        self, handler: BaseHTTPRequestHandler, method: str, raw: bytes, body: dict[str, Any]
    ) -> None:
        conn = http.client.HTTPConnection(*self.upstream, timeout=600)
        try:
            headers = {"content-type": "application/json"} if raw else {}
            conn.request(method, handler.path, body=raw or None, headers=headers)
            response = conn.getresponse()
            data = response.read()
            if response.status == 200 and method == "POST":
                with self.lock:
                    self.upstream_ok.append(body)
            _send(handler, Reply(response.status, data))
        finally:
            conn.close()


def _instant(seen: Seen) -> Reply:
    if seen.path.endswith("/chat/completions"):
        return Reply(body=chat(" positive"))
    prompt = seen.body.get("prompt")
    if isinstance(prompt, list):
        return Reply(body=completions([" positive"] * len(prompt)))
    return Reply(body=completion(" positive"))


if __name__ == "__main__":  # an instant-answer server in its own process (benchmarks)
    import argparse

    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--model", default="stub-model")
    args = parser.parse_args()
    StubServer(_instant, model=args.model, port=args.port, record=False)
    print("ready", flush=True)
    threading.Event().wait()
