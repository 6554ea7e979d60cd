"""Running the servers: ``serve`` (HTTP: MCP + JSON API, uvicorn) and ``mcp`` (stdio).

Both keep one :class:`Service` warm, log to stderr, and shut down cleanly on SIGTERM or
SIGINT: the HTTP server stops accepting, the watcher stops, the router closes its backends
(and their child processes), and the server file is removed.
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import sys
import threading
from typing import Any

from memory_router import Config, ConfigError, MemoryRouterError, Router
from memory_router.service import publish_server, withdraw_server

from ._service import Service
from ._writes import joined_protocol

log = logging.getLogger("memory_router.serve")


def setup_logging(level: str = "INFO") -> None:
    """One format on stderr for ours, uvicorn's and the SDK's loggers (stdout stays clean)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access", "mcp"):
        logging.getLogger(name).handlers[:] = []
        logging.getLogger(name).propagate = True


def missing_extra(error: ImportError) -> MemoryRouterError:
    return MemoryRouterError(
        f"the server needs the mcp extra ({error.name or error} is not installed)",
        hint="pip install 'memory-router[mcp]'",
    )


def check_bind(config: Config, host: str) -> str | None:
    """The token to require; a non-loopback ``host`` without one is a configuration error."""
    token = config.serve.token.resolve() if config.serve.token else None
    if token is None and config.serve.token is not None:
        raise ConfigError(
            f"[serve] token is set ({config.serve.token.describe()}) but empty",
            path=config.file or "<defaults>",
            table="serve",
            key="token",
        )
    loopback = type(config.serve)(host=host).loopback
    if not loopback and token is None:
        raise ConfigError(
            f"binding to {host} needs a bearer token",
            path=config.file or "<defaults>",
            table="serve",
            key="token",
        )
    return token


def build_app(service: Service, host: str, token: str | None) -> Any:
    """The ASGI app: MCP at ``/mcp`` plus the JSON API, wrapped in the :class:`Guard`."""
    from mcp.server.transport_security import TransportSecuritySettings
    from starlette.exceptions import HTTPException

    from ._http import LOOPBACK_HOSTS, LOOPBACK_ORIGINS, Guard, add_routes, http_error
    from ._mcp import build_mcp_server

    settings = service.router.config.serve
    server = build_mcp_server(service)
    add_routes(server, service, limit=settings.max_body_bytes)
    app = server.streamable_http_app(
        max_request_body_size=settings.max_body_bytes,
        # The Guard below validates Host and Origin for every route, /mcp included.
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        host=host,
    )
    app.add_exception_handler(HTTPException, http_error)  # 404 and 405 as JSON too
    app.router.redirect_slashes = False  # `/entries/` is a 404 with a hint, not a bare 307
    loopback = settings.loopback if host == settings.host else type(settings)(host=host).loopback
    hosts: tuple[str, ...] | None = tuple(settings.allowed_hosts)
    origins = tuple(settings.allowed_origins)
    if loopback:
        hosts = (*LOOPBACK_HOSTS, *(hosts or ()))
        origins = (*LOOPBACK_ORIGINS, *origins)
    elif not hosts:
        hosts = None  # any Host: a wildcard bind with no names configured; the token guards it
    return Guard(app, token=token, hosts=hosts, origins=origins)


class Stopped(Exception):
    """Raised by the SIGTERM handler to unwind into the clean-up code."""


def _on_sigterm(*_: Any) -> None:
    raise Stopped


def serve_http(router: Router, *, host: str, port: int, watch: bool, poll: bool) -> None:
    """Run ``serve`` until SIGTERM or SIGINT."""
    try:
        import uvicorn
    except ImportError as error:
        raise missing_extra(error) from None
    token = check_bind(router.config, host)
    sock = _bind(host, port)
    service = Service(router, watch=watch, poll=poll)
    # uvicorn handles both signals while it runs and re-raises them when it returns: this
    # handler (and SIGINT's KeyboardInterrupt) then unwinds into the clean-up below.
    previous = signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        service.start()
        server = uvicorn.Server(
            uvicorn.Config(
                build_app(service, host, token),
                log_config=None,
                access_log=False,
                # Nothing reads X-Forwarded-* (a middleware layer per request), and a
                # `server: uvicorn` header is one more line for every client to parse.
                proxy_headers=False,
                server_header=False,
                http=joined_protocol(),  # an answer in one write, not headers then body
                lifespan="on",
                timeout_graceful_shutdown=5,
            )
        )
        url = _url(host, sock.getsockname()[1])
        threading.Thread(
            target=_announce, args=(server, router.config, url), daemon=True, name="serve-ready"
        ).start()
        server.run(sockets=[sock])
    except (Stopped, KeyboardInterrupt):
        pass
    finally:
        signal.signal(signal.SIGTERM, previous)
        withdraw_server(router.config)
        service.close()
        sock.close()
        log.info("stopped")


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP, not the default 0: the accepted connections inherit it, and asyncio
    # turns Nagle's algorithm off (TCP_NODELAY) only on sockets that say they are TCP.
    # With it on, an answer's body waited for the client's delayed ACK of its headers:
    # ~40 ms per request whatever the request.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as error:
        sock.close()
        raise MemoryRouterError(
            f"cannot listen on {host}:{port}: {error.strerror or error}",
            hint="another server may be running; pick another [serve] port or --port 0",
        ) from None
    sock.set_inheritable(True)
    return sock


def _url(host: str, port: int) -> str:
    if host in ("0.0.0.0", "::"):
        host = "127.0.0.1"
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def _announce(server: Any, config: Config, url: str) -> None:
    """Once uvicorn listens: publish the server file, then print the readiness line."""
    while not server.started:
        if server.should_exit:
            return
        threading.Event().wait(0.05)
    publish_server(config, url)
    log.info("ready: %s (MCP at %s/mcp)", url, url)
    print(f"memory-router: ready {url}", file=sys.stderr, flush=True)


def serve_stdio(router: Router, *, watch: bool, poll: bool) -> None:
    """Run the MCP server on stdin/stdout until the client closes it or a signal arrives."""
    try:
        import anyio

        from ._mcp import build_mcp_server
        from ._stdio import run_stdio
    except ImportError as error:
        raise missing_extra(error) from None

    service = Service(router, watch=watch, poll=poll)

    def stop_now(*_: Any) -> None:
        # The stdio transport reads stdin in a worker thread that no cancellation reaches,
        # so unwinding would wait for the host to close stdin: clean up and leave instead.
        service.close()
        log.info("stopped")
        logging.shutdown()
        os._exit(0)

    previous = {sig: signal.signal(sig, stop_now) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        service.start()
        server = build_mcp_server(service)
        log.info("ready: MCP on stdio")
        anyio.run(run_stdio, server)  # returns when the host closes stdin
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        service.close()
        log.info("stopped")
