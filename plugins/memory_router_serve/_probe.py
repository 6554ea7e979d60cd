"""``memory-router health``: ask a running server's ``/health`` (a container health check)."""

from __future__ import annotations

from typing import Any

import httpx

from memory_router import MemoryRouterError, load_config
from memory_router.service import read_server_file

PROBE_TIMEOUT_S = 10.0


def probe_health(cli: Any, url: str | None) -> dict[str, Any]:
    """The server's health report; a server that does not answer is an error."""
    if url is None:
        config = load_config(cli.config, overrides=cli.overrides())
        info = read_server_file(config)
        if info is None:
            raise MemoryRouterError(
                f"no server is running for agent {config.agent_id!r}",
                hint="start one with: memory-router serve",
            )
        url = info.url
    try:
        response = httpx.get(url.rstrip("/") + "/health", timeout=PROBE_TIMEOUT_S)
        report = response.json()
    except (httpx.HTTPError, ValueError) as error:
        raise MemoryRouterError(f"server {url} did not answer /health: {error}") from None
    if not isinstance(report, dict):
        raise MemoryRouterError(f"server {url} answered /health with {report!r}")
    return report
