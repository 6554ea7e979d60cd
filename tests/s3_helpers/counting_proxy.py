"""A loopback HTTP proxy in front of an S3 server that records every request, and can
hold some back.

Requests are forwarded unchanged (the ``Host`` header too, so SigV4 signatures still
match) and answered with the server's response; :attr:`CountingProxy.requests` lists
``(method, path)`` of each, which lets a test count a query's object-store round trips.
:attr:`CountingProxy.delay` holds chosen requests back before forwarding them: a slow
link for data reads while listings answer at once, or (``math.inf``) a store that never
answers some requests; held requests are dropped unanswered when the proxy closes.
"""

from __future__ import annotations

import http.client
import math
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any
from urllib.parse import urlsplit

_HOP = {"transfer-encoding", "connection", "content-length", "keep-alive"}


def no_delay(method: str, path: str) -> float:
    return 0.0


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client that gave up on a held request closed its connection


class CountingProxy:
    """``with CountingProxy(endpoint) as proxy:`` — ``proxy.endpoint`` forwards to it."""

    def __init__(self, upstream: str) -> None:
        parts = urlsplit(upstream)
        self.requests: list[tuple[str, str]] = []
        # Seconds to hold ``(method, path)`` back before forwarding it (``math.inf``:
        # until the proxy closes, unanswered); may be replaced at any time.
        self.delay: Callable[[str, str], float] = no_delay
        self.closing = threading.Event()
        self._lock = threading.Lock()
        handler = _handler(self, parts.hostname or "127.0.0.1", parts.port or 80)
        self._server = _Server(("127.0.0.1", 0), handler)
        self.endpoint = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> CountingProxy:
        self._thread.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.closing.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=10)

    def record(self, method: str, path: str) -> None:
        with self._lock:
            self.requests.append((method, path))

    def hold(self, method: str, path: str) -> bool:
        """Wait as :attr:`delay` says; ``False`` when the proxy closed meanwhile."""
        seconds = self.delay(method, path)
        if seconds <= 0:
            return True
        self.closing.wait(None if math.isinf(seconds) else seconds)
        return not self.closing.is_set()

    def since(self, start: int) -> list[tuple[str, str]]:
        with self._lock:
            return self.requests[start:]


def _handler(proxy: CountingProxy, host: str, port: int) -> type[BaseHTTPRequestHandler]:
    class Forward(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: object) -> None:
            pass

        def forward(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else None
            proxy.record(self.command, self.path)
            if not proxy.hold(self.command, self.path):
                self.close_connection = True
                return
            upstream = http.client.HTTPConnection(host, port, timeout=60)
            try:
                upstream.request(self.command, self.path, body=body, headers=dict(self.headers))
                response = upstream.getresponse()
                data = response.read()
            finally:
                upstream.close()
            self.send_response(response.status)
            for name, value in response.getheaders():
                if name.lower() not in _HOP:
                    self.send_header(name, value)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(data)

        do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = forward

    return Forward
