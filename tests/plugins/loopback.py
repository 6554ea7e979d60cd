"""A scriptable loopback HTTP server for the provider tests (real sockets, real HTTP)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Request:
    """One request as the server saw it."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any


@dataclass
class Reply:
    """What the server answers: JSON (``body``) or raw bytes, after ``delay`` seconds."""

    status: int = 200
    body: Any = None
    raw: bytes | None = None
    delay: float = 0.0


Handler = Callable[[Request], Reply]


@dataclass
class LoopbackServer:
    """A threaded HTTP server on 127.0.0.1; ``handler`` decides every answer."""

    handler: Handler
    requests: list[Request] = field(default_factory=list)
    url: str = ""

    def count(self, path_part: str = "") -> int:
        return sum(1 for r in self.requests if path_part in r.path)


def _make_handler(server: LoopbackServer) -> type[BaseHTTPRequestHandler]:
    class _Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # quiet test output
            pass

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length)
            try:
                body = json.loads(raw) if raw else None
            except json.JSONDecodeError:
                body = raw
            request = Request(
                "POST", self.path, {k.lower(): v for k, v in self.headers.items()}, body
            )
            server.requests.append(request)
            reply = server.handler(request)
            if reply.delay:
                time.sleep(reply.delay)
            data = reply.raw if reply.raw is not None else json.dumps(reply.body).encode()
            try:
                self.send_response(reply.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (a timeout test)

    return _Handler


@contextmanager
def serving(handler: Handler) -> Iterator[LoopbackServer]:
    """Run a server on 127.0.0.1 for the ``with`` block; it is shut down afterwards."""
    state = LoopbackServer(handler=handler)
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _make_handler(state))
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05})
    thread.daemon = True
    thread.start()
    state.url = f"http://127.0.0.1:{httpd.server_address[1]}"
    try:
        yield state
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)
