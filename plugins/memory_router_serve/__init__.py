"""``memory-router serve`` and ``memory-router mcp``: the router as a service agents call.

``serve`` keeps one router warm and serves MCP (streamable HTTP at ``/mcp``) and an HTTP
JSON API; ``mcp`` serves the same tools over stdio for agent hosts that spawn it.
Registered through the ``register_commands`` hook like any third-party plugin; ``mcp``,
``starlette`` and ``uvicorn`` (the ``mcp`` extra) are imported only when a command runs.
"""

from __future__ import annotations

import json
from typing import Any

import click

from memory_router import hookimpl

__all__ = ["register_commands"]


@hookimpl
def register_commands(cli: click.Group) -> None:
    @cli.command()
    @click.option(
        "--host", default=None, metavar="HOST", help="Bind address (default: [serve] host)."
    )
    @click.option(
        "--port", type=click.IntRange(0, 65535), default=None, help="Port; 0 picks a free one."
    )
    @click.option("--no-watch", is_flag=True, help="Do not watch the workspace for changes.")
    @click.option("--poll", is_flag=True, help="Poll the file system instead of using inotify.")
    @click.pass_context
    def serve(
        ctx: click.Context, host: str | None, port: int | None, no_watch: bool, poll: bool
    ) -> None:
        """Serve MCP (at /mcp) and the HTTP JSON API with the router kept warm."""
        from ._server import serve_http, setup_logging

        setup_logging()
        router = ctx.find_root().obj.router()
        settings = router.config.serve
        serve_http(
            router,
            host=host or settings.host,
            port=settings.port if port is None else port,
            watch=settings.watch and not no_watch,
            poll=poll,
        )

    @cli.command()
    @click.option("--no-watch", is_flag=True, help="Do not watch the workspace for changes.")
    @click.option("--poll", is_flag=True, help="Poll the file system instead of using inotify.")
    @click.pass_context
    def mcp(ctx: click.Context, no_watch: bool, poll: bool) -> None:
        """Serve the memory tools over MCP on stdin/stdout (for agent hosts that spawn it)."""
        from ._server import serve_stdio, setup_logging

        setup_logging("WARNING")
        router = ctx.find_root().obj.router()
        serve_stdio(router, watch=router.config.serve.watch and not no_watch, poll=poll)

    @cli.command()
    @click.option("--url", help="The server's URL (default: the running server's, if any).")
    @click.option("--json", "as_json", is_flag=True, help="Print the health report as JSON.")
    @click.pass_context
    def health(ctx: click.Context, url: str | None, as_json: bool) -> None:
        """Exit 0 when the running server has a backend that can answer (for health checks)."""
        from ._probe import probe_health

        report = probe_health(ctx.find_root().obj, url)
        if as_json:
            click.echo(json.dumps(report, indent=2))
        else:
            click.echo(health_line(report))
        if not report.get("ok"):
            ctx.exit(1)


def health_line(report: dict[str, Any]) -> str:
    backends = report.get("backends") or {}
    parts = [f"{name} {'ready' if b.get('ready') else 'down'}" for name, b in backends.items()]
    return f"{report.get('status', 'unknown')}" + (f": {', '.join(parts)}" if parts else "")
