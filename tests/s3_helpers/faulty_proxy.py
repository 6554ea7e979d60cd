"""A loopback TCP proxy in front of the S3 server that can stop answering or go away.

``forward`` passes bytes both ways; ``hang()`` keeps every connection (and accepts new
ones) but never answers again, like a server whose disk or network froze; ``stop()``
closes everything, so new connections are refused. Threads are daemons and ``stop()``
ends them, so a test never waits on the proxy.
"""

from __future__ import annotations

import contextlib
import socket
import threading


class FaultyProxy:
    def __init__(self, target_port: int) -> None:
        self.target = ("127.0.0.1", target_port)
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self.listener.getsockname()[1]
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self.answering = True
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True, name="faulty-proxy").start()

    def hang(self) -> None:
        """Accept and read everything from now on, answer nothing."""
        self.answering = False

    def stop(self) -> None:
        """Close the listener and every connection: connections are refused from now on."""
        self.answering = False
        with self._lock:
            sockets, self._sockets = [self.listener, *self._sockets], []
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()

    def _keep(self, sock: socket.socket) -> None:
        with self._lock:
            self._sockets.append(sock)

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return  # stopped
            self._keep(client)
            if not self.answering:
                threading.Thread(target=self._pipe, args=(client, None), daemon=True).start()
                continue
            upstream = socket.create_connection(self.target, timeout=10)
            upstream.settimeout(None)
            self._keep(upstream)
            for pair in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=pair, daemon=True).start()

    def _pipe(self, source: socket.socket, sink: socket.socket | None) -> None:
        """Copy ``source`` to ``sink`` while answering; afterwards read and drop. The end
        of one side ends the other while answering (a closed keep-alive connection)."""
        while True:
            try:
                data = source.recv(65536)
            except OSError:
                data = b""
            if not data:
                if sink is not None and self.answering:
                    with contextlib.suppress(OSError):
                        sink.shutdown(socket.SHUT_RDWR)
                return
            if sink is not None and self.answering:
                with contextlib.suppress(OSError):
                    sink.sendall(data)
