"""``status`` and ``plugins``: what the router and the plugin manager know."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import click

from memory_router import _plugins
from memory_router._types import BackendStatus, BreakerState, EmbeddingStatus, RouterStatus

from ._app import EXIT_ERROR, CommandError, echo_json, state
from ._ops import show_agents


@click.command()
@click.option("--deep", is_flag=True, help="Also probe: run a backend check and embed a query.")
@click.option("--json", "as_json", is_flag=True, help="Print the whole status as JSON.")
@click.option(
    "--all-agents", is_flag=True, help="List every agent under the state dir (as `agents`)."
)
@click.pass_context
def status(ctx: click.Context, deep: bool, as_json: bool, all_agents: bool) -> None:
    """Show backends, breakers, the embedding provider and source counts.

    Exits 1 when the workspace cannot be read (``workspace_error`` in the JSON) or no
    backend of the chain can answer (``can_answer``).
    """
    if all_agents:
        show_agents(ctx, as_json=as_json)
        return
    cli = state(ctx)
    result = cli.router(require_workspace=False).status(deep=deep)
    if as_json:
        echo_json(result.to_dict())
    else:
        for line in status_lines(result):
            click.echo(line)
    if result.workspace_error:
        CommandError(result.workspace_error, hint=cli.paste(result.workspace_hint)).show()
    if not result.can_answer:
        CommandError(
            "no backend of the chain can answer",
            hint=f"`{cli.command('doctor')}` says why and how to fix it"
            f" (`{cli.command('doctor', '--fix')}` repairs what is safe to repair)",
        ).show()
    if result.workspace_error or not result.can_answer:
        ctx.exit(EXIT_ERROR)


def status_lines(result: RouterStatus) -> Iterator[str]:
    """The human status report, modelled on ``openclaw memory status``."""
    yield f"Memory ({result.agent_id})"
    yield f"Workspace: {result.workspace}"
    if result.workspace_error:  # what is indexed below was built before: it is kept
        yield "  Warning: it cannot be read (see below); searches answer from the index as it was"
    yield f"Chain: {' → '.join(result.chain)} (fallback: {result.fallback_policy})"
    counts = ", ".join(f"{n} {src}" for src, n in sorted(result.sources.items()))
    yield f"Sources: {counts} file(s) on disk" if counts else "Sources: no memory files on disk"
    for warning in result.file_warnings:
        yield f"  Warning: {warning}"
    for backend in result.backends:
        yield from _backend_lines(backend, result.breakers.get(backend.name))
    breakers = ", ".join(
        f"{name} {b.state}" + (f" ({b.failures} failures)" if b.failures else "")
        for name, b in result.breakers.items()
    )
    seen = result.breakers_seen_at
    when = f" (recorded {seen.isoformat(timespec='seconds')})" if seen else ""
    yield f"Breakers: {breakers or 'none'}{when}"
    last = result.last_fallback
    yield (
        f"Last fallback: {last.from_} at {last.at.isoformat(timespec='seconds')}: {last.reason}"
        if last
        else "Last fallback: none"
    )
    yield from _embedding_lines(result.embedding)


def _backend_lines(backend: BackendStatus, breaker: BreakerState | None) -> Iterator[str]:
    """A backend that is up but whose breaker is open is skipped by searches: say so, and
    why (the failure another process recorded; this process's own backend never saw it)."""
    tripped = breaker is not None and breaker.state != "closed"
    health = "available" if backend.available else "unavailable"
    if backend.available and breaker is not None and breaker.state == "open":
        health = "skipped by searches (breaker open)"
    elif backend.available and tripped:
        health = "available (breaker half-open: the next search probes it)"
    yield (f"Backend {backend.name}: {health} · {backend.files} files · {backend.chunks} chunks")
    if backend.error:
        yield f"  Error: {' '.join(backend.error.split())}"
    if tripped and breaker is not None and breaker.last_error:
        yield f"  Last failure: {' '.join(breaker.last_error.split())}"
    for key, value in sorted(backend.details.items()):
        yield f"  {key}: {_short(value)}"


def _embedding_lines(info: EmbeddingStatus) -> Iterator[str]:
    if not info.available:
        yield f"Embeddings: unavailable (requested {info.requested}): {info.error}"
        return
    provider = info.provider or "none"
    yield f"Embeddings: {provider} (requested: {info.requested}) · mode {info.mode}"
    if info.model:
        yield f"  Model: {info.model}"
    if info.unavailable_reason:
        yield f"  Unavailable: {info.unavailable_reason}"
    if info.fallback is not None:
        yield f"  Fallback: from {info.fallback.from_}: {info.fallback.reason}"
        if info.fallback.hint:
            yield f"    Hint: {info.fallback.hint}"
    if info.cache_entries is not None:
        yield f"  Cache: {info.cache_entries} entries"
    if info.probe == "ok":
        yield f"  Probe: ok ({info.dims} dims, {info.latency_ms or 0:.0f} ms)"
    elif info.probe:
        yield f"  Probe: {info.probe}: {info.error}"


def _short(value: Any, limit: int = 120) -> str:
    text = " ".join(str(value).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print the plugin list as JSON.")
@click.pass_context
def plugins(ctx: click.Context, as_json: bool) -> None:
    """List loaded plugins, the hooks they implement, and the backends and providers they add."""
    pm = state(ctx).pm
    rows = _plugins.plugin_list(pm)
    if as_json:
        echo_json(rows)
        return
    for row in rows:
        dist = f"  ({row['distribution']} {row['version']})" if row["version"] else ""
        click.echo(f"{row['name']}  {', '.join(row['hooks']) or '(no hooks)'}{dist}")
    backends = _plugins.backend_specs(pm)
    providers = _plugins.provider_specs(pm)
    click.echo(f"Backends: {', '.join(sorted(backends)) or 'none'}")
    click.echo(f"Embedding providers: {', '.join(sorted(providers)) or 'none'}")
