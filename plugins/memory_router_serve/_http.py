"""The HTTP side of ``serve``: the JSON API beside MCP's ``/mcp``, behind one guard.

Routes (``docs/serve.md``): ``POST /search``, ``GET /get``, ``POST /store``,
``POST /recall``, ``POST /forget``, ``GET /entries``, ``DELETE /entries/{id}``,
``POST /context``, ``POST /capture``, ``GET /status``, ``GET /health``, ``GET /metrics``,
and MCP's streamable HTTP at ``/mcp``.
:class:`Guard` runs before every route: Host and Origin validation (DNS rebinding, as the
MCP specification asks) and the bearer token; ``/health`` needs no token.
"""

from __future__ import annotations

import hmac
import inspect
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from http import HTTPStatus
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.datastructures import Headers
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response

from memory_router import InvalidInput, MemoryRouterError, NotFound
from memory_router.agent import capture, recall_block

from ._requests import ApiError, Field, query_fields, read_body, read_fields
from ._service import Service
from ._shapes import dumps

log = logging.getLogger("memory_router.serve")
LOOPBACK_HOSTS = ("127.0.0.1:*", "localhost:*", "[::1]:*")
LOOPBACK_ORIGINS = ("http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*")
OPEN_PATHS = frozenset({"/health"})
MCP_PATH = "/mcp"
ROUTES_HINT = (
    "the routes are POST /search, GET /get, POST /store, POST /recall, POST /forget,"
    " GET /entries, DELETE /entries/{id}, POST /context, POST /capture, GET /status,"
    " GET /health, GET /metrics and /mcp (docs/serve.md)"
)
SEARCH_FIELDS = (
    Field("query", "query", "string", required=True),
    Field("maxResults", "max_results", "integer"),
    Field("max_results", "max_results", "integer"),
    Field("minScore", "min_score", "number"),
    Field("min_score", "min_score", "number"),
    Field("mode", "mode", "string"),
    Field("sessionKey", "session_key", "string"),
    Field("session_key", "session_key", "string"),
)
GET_FIELDS = (
    Field("path", "path", "string", required=True),
    Field("from", "from_line", "integer"),
    Field("lines", "lines", "integer"),
)
STORE_FIELDS = (
    Field("text", "text", "string", required=True),
    Field("importance", "importance", "number"),
    Field("category", "category", "category"),
    Field("force", "force", "boolean"),
)
RECALL_FIELDS = (
    Field("query", "query", "string", required=True),
    Field("category", "category", "category"),
    Field("limit", "limit", "integer"),
)
FORGET_FIELDS = (Field("id", "entry_id", "string"), Field("query", "query", "string"))
CONTEXT_FIELDS = (
    Field("prompt", "prompt", "string", required=True),
    Field("sessionKey", "session_key", "string"),
)
CAPTURE_FIELDS = (
    Field("messages", "messages", "messages", required=True),
    Field("conversationId", "conversation_id", "string", required=True),
)


def json_response(
    value: Any, status: int = 200, headers: Mapping[str, str] | None = None
) -> Response:
    return Response(dumps(value), status, headers=headers, media_type="application/json")


def error_response(
    status: int, message: str, hint: str | None = None, headers: Mapping[str, str] | None = None
) -> Response:
    body: dict[str, Any] = {"error": message}
    if hint:
        body["hint"] = hint
    extra = {"WWW-Authenticate": "Bearer"} if status == 401 else {}
    return json_response(body, status, {**extra, **(headers or {})})


async def http_error(request: Request, error: Exception) -> Response:
    """Starlette's own errors (no such route 404, wrong method 405) as ``{"error", "hint"}``,
    like every other error of the API; a 405 keeps its ``Allow`` header."""
    assert isinstance(error, HTTPException)
    headers = dict(error.headers or {})
    where = f"{request.method} {request.url.path}"
    if error.status_code == 404:
        return error_response(404, f"no route {where}", ROUTES_HINT, headers)
    if error.status_code == 405:
        allowed = headers.get("allow") or headers.get("Allow") or ""
        return error_response(405, f"{where} is not allowed", f"use {allowed}", headers)
    return error_response(error.status_code, f"{where}: {error.detail}", None, headers)


def status_of(error: MemoryRouterError) -> int:
    """400 for the caller's mistake, 404 for what is not there, 503 for the rest: a
    backend down, a workspace gone, a setting to fix are the server's state, not a bug."""
    if isinstance(error, InvalidInput):
        return 400
    if isinstance(error, NotFound):
        return 404
    return 503


def _matches(value: str, allowed: tuple[str, ...]) -> bool:
    """``value`` is listed, or matches a ``base:*`` (any port) entry."""
    return any(value == a or (a.endswith(":*") and value.startswith(a[:-1])) for a in allowed)


class Guard:
    """ASGI middleware: Host/Origin validation and the bearer token, before any route.

    A request for one of ``app``'s fixed JSON routes (:func:`fixed_routes`) is then
    answered by its handler here, without Starlette's middleware and route matching
    (about 40 µs of the HTTP layer's ~110 µs a request, bench/NOTES.md); everything
    else (``/mcp``, paths with parameters, HEAD, 404 and 405 answers) goes to ``app``.
    """

    def __init__(
        self,
        app: Any,
        *,
        token: str | None,
        hosts: tuple[str, ...] | None,
        origins: tuple[str, ...],
    ) -> None:
        self.app = app
        self.token = token
        self.hosts = hosts
        self.origins = origins
        self.fixed = fixed_routes(app)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        refusal = self.refusal(scope)
        if refusal is not None:
            await refusal(scope, receive, send)
            return
        handler = self.fixed.get((scope["method"], scope["path"]))
        if handler is not None:
            response = await handler(Request(scope, receive, send))
            await response(scope, receive, send)
            return
        if scope["path"] == MCP_PATH:  # the SDK answers a few errors in plain text
            send = json_rpc_errors(send)
        await self.app(scope, receive, send)

    def refusal(self, scope: Any) -> Response | None:
        headers = Headers(scope=scope)
        host = headers.get("host", "")
        if self.hosts is not None and not _matches(host, self.hosts):
            return error_response(
                421, f"Host {host!r} is not allowed", "add it to [serve] allowed_hosts"
            )
        origin = headers.get("origin")
        if origin and not _matches(origin, self.origins):
            return error_response(
                403, f"Origin {origin!r} is not allowed", "add it to [serve] allowed_origins"
            )
        if self.token and scope["path"] not in OPEN_PATHS:
            given = headers.get("authorization", "")
            scheme, _, credential = given.partition(" ")
            expected = self.token.encode("utf-8")
            if scheme.lower() != "bearer" or not hmac.compare_digest(
                credential.strip().encode("utf-8", "replace"), expected
            ):
                return error_response(401, "missing or wrong bearer token")
        return None


def json_rpc_errors(send: Any) -> Any:
    """``send``, turning an error answer that is not JSON (the SDK's "Invalid Content-Type
    header", "Request body too large") into a JSON-RPC error, as ``/mcp`` answers others."""
    held: dict[str, Any] = {}

    async def wrapped(message: Any) -> None:
        if message["type"] == "http.response.start":
            kind = Headers(raw=message["headers"]).get("content-type", "")
            if message["status"] >= 400 and "json" not in kind:
                held.update(start=message, body=b"")
                return
        elif message["type"] == "http.response.body" and "start" in held:
            held["body"] += message.get("body", b"")
            if message.get("more_body"):
                return
            start = held.pop("start")
            text = held["body"].decode("utf-8", "replace").strip()
            error = {"code": -32600, "message": text or HTTPStatus(start["status"]).phrase}
            body = dumps({"jsonrpc": "2.0", "id": None, "error": error})
            headers = [
                (k, v)
                for k, v in start["headers"]
                if k.lower() not in (b"content-type", b"content-length")
            ]
            headers += [
                (b"content-type", b"application/json"),
                (b"content-length", b"%d" % len(body)),
            ]
            await send({**start, "headers": headers})
            await send({"type": "http.response.body", "body": body})
            return
        await send(message)

    return wrapped


Handler = Callable[[Request], Awaitable[Response]]


def fixed_routes(app: Any) -> dict[tuple[str, str], Handler]:
    """``(method, path)`` → handler for each route of ``app`` (a Starlette app) with a
    fixed path and a request handler (:func:`endpoint`), read from its route table, so a
    route is declared once (:func:`add_routes`); HEAD and ``/mcp`` are left out."""
    fixed: dict[tuple[str, str], Handler] = {}
    for route in getattr(app, "routes", ()):
        handler = getattr(route, "endpoint", None)
        if route.path == MCP_PATH or "{" in route.path or not inspect.iscoroutinefunction(handler):
            continue
        for method in route.methods - {"HEAD"}:
            fixed[(method, route.path)] = handler
    return fixed


def endpoint(work: Callable[[Request], Awaitable[Any]]) -> Handler:
    """A route: ``work``'s value as JSON; errors as ``{"error", "hint"}`` with a status."""

    async def handle(request: Request) -> Response:
        try:
            value = await work(request)
        except ApiError as error:
            return error_response(error.status, error.message, error.hint)
        except MemoryRouterError as error:
            return error_response(status_of(error), error.message, error.hint)
        except Exception as error:  # a bug: logged with its traceback, one line to the client
            log.exception("unexpected error on %s %s", request.method, request.url.path)
            return error_response(500, f"unexpected {type(error).__name__}: {error}")
        if isinstance(value, Response):
            return value
        return json_response(value)

    return handle


def add_routes(server: Any, service: Service, *, limit: int) -> None:
    """Register the JSON API on ``server`` (an :class:`MCPServer`) as custom routes; each
    reads its input through :mod:`._requests` (typed fields, bounded bodies)."""
    route = server.custom_route

    async def body(request: Request, fields: tuple[Field, ...]) -> dict[str, Any]:
        return read_fields(await read_body(request, limit), fields)

    async def search(request: Request) -> Any:
        options = await body(request, SEARCH_FIELDS)
        response = await service.search_async(**options)
        return response.to_dict()

    async def get(request: Request) -> Any:
        options = query_fields(request, GET_FIELDS)
        text = await run_in_threadpool(lambda: service.get(**options))
        return text.to_dict()

    async def store(request: Request) -> Any:
        options = await body(request, STORE_FIELDS)
        result = await run_in_threadpool(lambda: service.remember(**options))
        answer = {
            **result.entry.to_dict(),
            "action": result.action,
            "similarity": result.similarity,
            "redacted": list(result.redacted),
        }
        return json_response(answer, 201 if result.action == "created" else 200)

    async def recall(request: Request) -> Any:
        options = await body(request, RECALL_FIELDS)
        return (await run_in_threadpool(lambda: service.recall(**options))).to_dict()

    async def forget_query(request: Request) -> Any:
        options = await body(request, FORGET_FIELDS)
        return (await run_in_threadpool(lambda: service.forget_entry(**options))).to_dict()

    async def entries(request: Request) -> Any:
        found = await run_in_threadpool(service.router.entries)
        return [e.to_dict() for e in found]

    async def forget(request: Request) -> Any:
        entry_id = request.path_params["entry_id"]
        return (await run_in_threadpool(lambda: service.forget(entry_id))).to_dict()

    route("/search", methods=["POST"])(endpoint(search))
    route("/get", methods=["GET"])(endpoint(get))
    route("/store", methods=["POST"])(endpoint(store))
    route("/recall", methods=["POST"])(endpoint(recall))
    route("/forget", methods=["POST"])(endpoint(forget_query))
    route("/entries", methods=["GET"])(endpoint(entries))
    route("/entries/{entry_id}", methods=["DELETE"])(endpoint(forget))
    _helper_routes(route, service, limit=limit)
    _ops_routes(route, service)


def _helper_routes(route: Any, service: Service, *, limit: int) -> None:
    async def context(request: Request) -> Any:
        options = read_fields(await read_body(request, limit), CONTEXT_FIELDS)
        block = await run_in_threadpool(lambda: recall_block(service.router, **options))
        return {"block": block.text, "count": len(block.hits), "notes": list(block.notes)}

    async def capture_route(request: Request) -> Any:
        options = read_fields(await read_body(request, limit), CAPTURE_FIELDS)
        result = await run_in_threadpool(lambda: capture(service.router, **options))
        return result.to_dict()

    route("/context", methods=["POST"])(endpoint(context))
    route("/capture", methods=["POST"])(endpoint(capture_route))


def _ops_routes(route: Any, service: Service) -> None:
    async def status(request: Request) -> Any:
        result = (await run_in_threadpool(service.status)).to_dict()
        result["server"] = {
            "watcher": service.watcher_stats(),
            "uptime_s": round(time.time() - service.started_at, 3),
        }
        return result

    async def health(request: Request) -> Any:
        report = await run_in_threadpool(service.health)
        return json_response(report, 200 if report["ok"] else 503)

    async def metrics(request: Request) -> Any:
        status = await run_in_threadpool(service.router.status)
        text = service.metrics.render({n: b.state for n, b in status.breakers.items()})
        return Response(text, media_type="text/plain; version=0.0.4; charset=utf-8")

    route("/status", methods=["GET"])(endpoint(status))
    route("/health", methods=["GET"])(endpoint(health))
    route("/metrics", methods=["GET"])(endpoint(metrics))
