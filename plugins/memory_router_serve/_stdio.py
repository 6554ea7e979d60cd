"""MCP over stdio that answers every line, as ``/mcp`` over HTTP does.

The SDK's stdio transport hands a line it cannot read (bad JSON, arguments nested deeper
than its parser allows, not a JSON-RPC message) to the server as an exception, which the
server drops: the client waits for its own timeout. :class:`AnsweringStream` sits between
the transport and the server and answers such a line with a JSON-RPC error instead:
``-32700`` (parse error) when the JSON could not be read, ``-32600`` (invalid request)
otherwise, with the request's ``id`` when it can be found, so the waiting call ends.
"""

from __future__ import annotations

import json
import logging
import re
from types import TracebackType
from typing import Any

from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from mcp_types import INVALID_REQUEST, PARSE_ERROR, ErrorData, JSONRPCError
from pydantic import ValidationError

log = logging.getLogger("memory_router.serve")
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)


async def run_stdio(server: Any) -> None:
    """Serve ``server`` (an :class:`MCPServer`) on stdin/stdout until stdin closes."""
    lowlevel = server._lowlevel_server  # what MCPServer.run_stdio_async runs, with our stream
    async with stdio_server() as (read_stream, write_stream):
        await lowlevel.run(
            AnsweringStream(read_stream, write_stream),
            write_stream,
            lowlevel.create_initialization_options(),
        )


class AnsweringStream:
    """The transport's read side, minus the exceptions: each one is answered on
    ``write_stream`` (see the module docstring) and the next message is read."""

    def __init__(self, inner: Any, write_stream: Any) -> None:
        self._inner = inner
        self._write = write_stream
        self.last_context: Any = None

    async def receive(self) -> SessionMessage:
        while True:
            item = await self._inner.receive()
            self.last_context = getattr(self._inner, "last_context", None)
            if not isinstance(item, Exception):
                return item  # type: ignore[no-any-return]
            await self._write.send(SessionMessage(error_reply(item)))

    def __aiter__(self) -> AnsweringStream:
        return self

    async def __anext__(self) -> SessionMessage:
        import anyio

        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> AnsweringStream:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc_val: BaseException | None,
        exc_tb: TracebackType | None,
    ) -> None:
        await self.aclose()


def error_reply(error: Exception) -> JSONRPCError:
    """The JSON-RPC error answering the line behind ``error`` (the transport's exception)."""
    line = _line_of(error)
    parse = isinstance(error, ValidationError) and any(
        e.get("type") == "json_invalid" for e in error.errors()
    )
    code, what = (PARSE_ERROR, "Parse error") if parse else (INVALID_REQUEST, "Invalid request")
    detail = _detail(error)
    log.warning("answered an unreadable MCP message with %s: %s", code, detail)
    return JSONRPCError(
        jsonrpc="2.0",
        id=request_id(line) if line else None,
        error=ErrorData(code=code, message=f"{what}: {detail}"),
    )


def _detail(error: Exception) -> str:
    """What was wrong, on one line (pydantic's own text is a multi-line dump with URLs)."""
    if isinstance(error, ValidationError):
        found = dict.fromkeys(str(e["msg"]) for e in error.errors(include_url=False))
        text = "; ".join(list(found)[:3])
    else:
        text = str(error) or type(error).__name__
    return " ".join(text.split())[:300]


def _line_of(error: Exception) -> str | None:
    """The raw line a :class:`ValidationError` of ``validate_json`` carries as its input."""
    if not isinstance(error, ValidationError):
        return None
    for item in error.errors():
        value = item.get("input")
        if isinstance(value, str | bytes):
            return value.decode("utf-8", "replace") if isinstance(value, bytes) else value
    return None


def request_id(line: str) -> int | str | None:
    """The ``id`` of the top-level object of JSON ``line``, found without parsing the rest
    (which may be nested too deep to parse, or broken); ``None`` when there is none."""
    level = 0
    at = 0
    while at < len(line):
        char = line[at]
        if char == '"':
            string = _STRING.match(line, at)
            if string is None:
                return None
            at = string.end()
            if level == 1 and string.group() == '"id"':
                return _value_after_colon(line, at)
            continue
        level += 1 if char in "[{" else -1 if char in "]}" else 0
        at += 1
    return None


def _value_after_colon(line: str, at: int) -> int | str | None:
    rest = line[at:].lstrip()
    if not rest.startswith(":"):
        return None
    try:
        value, _ = json.JSONDecoder().raw_decode(rest[1:].lstrip())
    except ValueError:
        return None
    if isinstance(value, bool) or not isinstance(value, int | str):
        return None
    return value
