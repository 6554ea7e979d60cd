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
import json
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.datastructures import Headers
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response

from memory_router import BackendError, InvalidInput, MemoryRouterError, NotFound
from memory_router.agent import capture, recall_block

from ._service import Service
from ._shapes import dumps

log = logging.getLogger("memory_router.serve")
LOOPBACK_HOSTS = ("127.0.0.1:*", "localhost:*", "[::1]:*")
LOOPBACK_ORIGINS = ("http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*")
OPEN_PATHS = frozenset({"/health"})
ROUTES_HINT = (
    "the routes are POST /search, GET /get, POST /store, POST /recall, POST /forget,"
    " GET /entries, DELETE /entries/{id}, POST /context, POST /capture, GET /status,"
    " GET /health, GET /metrics and /mcp (docs/serve.md)"
)
SEARCH_FIELDS = {
    "query": "query",
    "maxResults": "max_results",
    "max_results": "max_results",
    "minScore": "min_score",
    "min_score": "min_score",
    "mode": "mode",
    "sessionKey": "session_key",
    "session_key": "session_key",
}


class ApiError(Exception):
    def __init__(self, status: int, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.hint = hint


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
    if isinstance(error, InvalidInput):
        return 400
    if isinstance(error, NotFound):
        return 404
    if isinstance(error, BackendError):
        return 503
    return 500


def _matches(value: str, allowed: tuple[str, ...]) -> bool:
    """``value`` is listed, or matches a ``base:*`` (any port) entry."""
    return any(value == a or (a.endswith(":*") and value.startswith(a[:-1])) for a in allowed)


class Guard:
    """ASGI middleware: Host/Origin validation and the bearer token, before any route."""

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

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        refusal = self.refusal(scope)
        if refusal is not None:
            await refusal(scope, receive, send)
            return
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


Handler = Callable[[Request], Awaitable[Response]]


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


async def read_json(request: Request, limit: int) -> dict[str, Any]:
    """The request's JSON object, at most ``limit`` bytes; 413 or 400 otherwise."""
    declared = request.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > limit:
        raise ApiError(413, f"request body over {limit} bytes")
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            raise ApiError(413, f"request body over {limit} bytes")
    try:
        data = json.loads(bytes(body))
    except ValueError as error:  # also invalid UTF-8
        raise ApiError(400, f"bad JSON: {error}") from None
    if not isinstance(data, dict):
        raise ApiError(400, "the body must be a JSON object")
    return data


def pick(data: Mapping[str, Any], fields: Mapping[str, str]) -> dict[str, Any]:
    unknown = sorted(set(data) - set(fields))
    if unknown:
        raise ApiError(400, f"unknown field {unknown[0]!r}", f"known: {', '.join(sorted(fields))}")
    return {fields[k]: v for k, v in data.items() if v is not None}


def query_int(request: Request, name: str) -> int | None:
    raw = request.query_params.get(name)
    if raw is None or raw == "":
        return None
    try:
        return int(raw)
    except ValueError:
        raise ApiError(400, f"{name} must be a whole number, got {raw!r}") from None


def add_routes(server: Any, service: Service, *, limit: int) -> None:
    """Register the JSON API on ``server`` (an :class:`MCPServer`) as custom routes."""
    route = server.custom_route

    async def search(request: Request) -> Any:
        options = pick(await read_json(request, limit), SEARCH_FIELDS)
        if "query" not in options:
            raise ApiError(400, "query is required")
        response = await run_in_threadpool(lambda: service.search(**options))
        return response.to_dict()

    async def get(request: Request) -> Any:
        path = request.query_params.get("path")
        if not path:
            raise ApiError(400, "path is required (GET /get?path=MEMORY.md&from=1&lines=20)")
        start, lines = query_int(request, "from"), query_int(request, "lines")
        text = await run_in_threadpool(lambda: service.get(path, from_line=start, lines=lines))
        return text.to_dict()

    async def store(request: Request) -> Any:
        options = pick(
            await read_json(request, limit),
            {"text": "text", "importance": "importance", "category": "category", "force": "force"},
        )
        if not isinstance(options.get("text"), str):
            raise ApiError(400, "text is required and must be a string")
        result = await run_in_threadpool(lambda: service.remember(**options))
        body = {**result.entry.to_dict(), "action": result.action, "similarity": result.similarity}
        return json_response(body, 201 if result.action == "created" else 200)

    async def recall(request: Request) -> Any:
        options = pick(
            await read_json(request, limit),
            {"query": "query", "category": "category", "limit": "limit"},
        )
        if not isinstance(options.get("query"), str):
            raise ApiError(400, "query is required and must be a string")
        return (await run_in_threadpool(lambda: service.recall(**options))).to_dict()

    async def forget_query(request: Request) -> Any:
        options = pick(await read_json(request, limit), {"id": "entry_id", "query": "query"})
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
        options = pick(
            await read_json(request, limit), {"prompt": "prompt", "sessionKey": "session_key"}
        )
        prompt = options.pop("prompt", None)
        if not isinstance(prompt, str):
            raise ApiError(400, "prompt is required and must be a string")
        block = await run_in_threadpool(lambda: recall_block(service.router, prompt, **options))
        return {"block": block.text, "count": len(block.hits)}

    async def capture_route(request: Request) -> Any:
        options = pick(
            await read_json(request, limit),
            {"messages": "messages", "conversationId": "conversation_id"},
        )
        messages = options.get("messages")
        if not isinstance(messages, list):
            raise ApiError(400, "messages is required and must be an array")
        conversation = options.get("conversation_id", "")
        result = await run_in_threadpool(
            lambda: capture(service.router, messages, conversation_id=conversation)
        )
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
