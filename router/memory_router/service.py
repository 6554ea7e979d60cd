"""The contract between a running ``memory-router serve`` and its clients.

A server publishes itself in ``<state_dir>/agents/<agent_id>/serve.json`` (its URL, pid and
workspace) once it is ready, and removes the file when it stops. :func:`find_server` gives a
:class:`ServiceClient` for the running server of a configuration, or ``None`` (no file, a
dead pid, another workspace). The CLI uses it so that ``search`` answers from the warm
server instead of loading everything in a cold process.
"""

from __future__ import annotations

import json
import os
import urllib.parse
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ._config.config import Config
from ._exceptions import InvalidInput, MemoryRouterError, NotFound, ServiceUnreachable
from ._types import _ToDict

__all__ = [
    "SERVER_FILE",
    "ServerInfo",
    "ServiceClient",
    "ServiceUnreachable",
    "find_server",
    "publish_server",
    "read_server_file",
    "server_file",
    "withdraw_server",
]

SERVER_FILE = "serve.json"


@dataclass(frozen=True, slots=True, kw_only=True)
class ServerInfo(_ToDict):
    """What a running server publishes: where to reach it and what it serves."""

    url: str
    pid: int
    agent_id: str
    workspace: str
    started_at: str


def server_file(config: Config) -> Path:
    """Where the server of ``config``'s agent publishes itself."""
    return config.agent_state_path / SERVER_FILE


def publish_server(config: Config, url: str) -> ServerInfo:
    """Write the server file for this process (atomically: a reader sees all or nothing)."""
    info = ServerInfo(
        url=url,
        pid=os.getpid(),
        agent_id=config.agent_id,
        workspace=str(config.workspace_path),
        started_at=datetime.now(UTC).isoformat(),
    )
    path = server_file(config)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(info.to_dict()), encoding="utf-8")
    os.replace(tmp, path)
    return info


def withdraw_server(config: Config) -> None:
    """Remove the server file if this process wrote it."""
    info = read_server_file(config)
    if info is not None and info.pid == os.getpid():
        server_file(config).unlink(missing_ok=True)


def read_server_file(config: Config) -> ServerInfo | None:
    """The published server of ``config``'s agent, or ``None`` (none, or unreadable)."""
    try:
        data = json.loads(server_file(config).read_text(encoding="utf-8"))
        return ServerInfo(**{k: data[k] for k in ServerInfo.__dataclass_fields__})
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process: alive
    return True


def find_server(config: Config) -> ServiceClient | None:
    """A client for the running server of this agent and workspace, or ``None``."""
    info = read_server_file(config)
    if info is None or not isinstance(info.pid, int) or not _alive(info.pid):
        return None
    if info.agent_id != config.agent_id or info.workspace != str(config.workspace_path):
        return None
    token = config.serve.token.resolve() if config.serve.token else None
    return ServiceClient(info.url, token=token, timeout=config.serve.client_timeout_s)


class ServiceClient:
    """A small synchronous client of the HTTP JSON API (see ``docs/serve.md``)."""

    def __init__(self, url: str, *, token: str | None = None, timeout: float = 30.0) -> None:
        self.url = url.rstrip("/")
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._timeout = timeout
        self._headers = headers

    def request(self, method: str, path: str, *, json_body: Any = None) -> Any:
        """The JSON answer; API errors are raised as :class:`MemoryRouterError` subclasses.

        The standard library's ``http.client``: a CLI process that only asks a running
        server pays for no HTTP library import (httpx alone costs more than the query);
        imported here, since most processes find no server and never use it.
        """
        import http.client

        parts = urllib.parse.urlsplit(self.url)
        body = None if json_body is None else json.dumps(json_body).encode("utf-8")
        headers = {**self._headers, "Accept": "application/json"}
        if body is not None:
            headers["Content-Type"] = "application/json"
        connection = http.client.HTTPConnection(
            parts.hostname or "127.0.0.1", parts.port or 80, timeout=self._timeout
        )
        try:
            connection.request(method, parts.path.rstrip("/") + path, body=body, headers=headers)
            response = connection.getresponse()
            status, raw = response.status, response.read()
        except (OSError, http.client.HTTPException) as error:
            raise ServiceUnreachable(f"server {self.url} did not answer: {error}") from error
        finally:
            connection.close()
        try:
            data = json.loads(raw)
        except ValueError:
            raise ServiceUnreachable(f"server {self.url} answered {status} without JSON") from None
        if status >= 400:
            raise _api_error(status, data)
        return data

    def search(self, query: str, **options: Any) -> dict[str, Any]:
        """``POST /search``: ``options`` are :meth:`Router.search`'s keyword arguments."""
        body = {"query": query, **{k: v for k, v in options.items() if v is not None}}
        result: dict[str, Any] = self.request("POST", "/search", json_body=body)
        return result


def _api_error(status: int, data: Any) -> MemoryRouterError:
    message = data.get("error") if isinstance(data, dict) else None
    hint = data.get("hint") if isinstance(data, dict) else None
    text = str(message or f"server answered {status}")
    if status == 404:
        return NotFound(text, hint=hint)
    if status in (400, 413, 422):
        return InvalidInput(text, hint=hint)
    if status in (401, 403):
        return MemoryRouterError(text, hint=hint or "set [serve] token to the server's token")
    return MemoryRouterError(text, hint=hint)
