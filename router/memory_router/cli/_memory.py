"""``index``, ``search`` and ``get``: building the index and reading from it."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import click

from memory_router import _types
from memory_router._config.commandline import command
from memory_router._config.config import load_config
from memory_router._routing.indexlock import INDEX_WAIT_S
from memory_router._search.explain import below_min_score_line
from memory_router._types import FileText, SyncReport
from memory_router._workspace.checks import MEMORY_FILES, check_workspace, memory_file_exists
from memory_router.service import ServiceUnreachable, find_server

from ._app import EXIT_ERROR, CliState, CommandError, echo_json, read_argument, state
from ._explain import print_explained

if TYPE_CHECKING:
    from memory_router._router import Router


@click.command()
@click.option("--force", is_flag=True, help="Rebuild every index from scratch.")
@click.option(
    "--backend",
    "backends",
    multiple=True,
    metavar="NAME",
    help=(
        "Sync this backend (repeatable; default: the chain's first, and the next ones while"
        " the one before fails; all when standby is hot)."
    ),
)
@click.option(
    "--wait",
    type=click.FloatRange(min=0),
    default=INDEX_WAIT_S,
    show_default=True,
    metavar="SECONDS",
    help="How long to wait for another process that is indexing the same agent.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the sync reports as JSON.")
@click.pass_context
def index(
    ctx: click.Context, force: bool, backends: tuple[str, ...], wait: float, as_json: bool
) -> None:
    """Bring the index in line with the workspace's Markdown files.

    One process indexes an agent at a time: a second one waits for the first (up to
    --wait seconds), then finds the index up to date instead of building it again.
    """
    router = state(ctx).router()
    with progress_bar(enabled=not as_json) as progress:
        reports = router.sync(
            force=force, backends=backends or None, progress=progress, wait_s=wait
        )
    if as_json:
        echo_json([r.to_dict() for r in reports])
    else:
        for report in reports:
            click.echo(sync_summary(report))
    for warning in dict.fromkeys(w for r in reports for w in r.warnings):
        click.echo(f"Warning: {warning}", err=True)
    indexed = [r for r in reports if not r.errors]  # a failed sync counted no files
    if indexed and not any(r.added + r.updated + r.unchanged for r in indexed):
        click.echo(
            f"Warning: no memory files in {router.config.workspace_path}"
            f" (looked for {MEMORY_FILES}).",
            err=True,
        )
    failed = [(r, e) for r in reports for e in r.errors]
    for report, error in failed:
        seconds = report.duration_ms / 1000
        click.echo(
            f"Error: {report.backend}: {' '.join(error.split())} (after {seconds:.1f} s)", err=True
        )
        hint = state(ctx).paste(report.hint)
        if hint:
            click.echo(f"Hint: {' '.join(hint.split())}", err=True)
    if failed:
        ctx.exit(EXIT_ERROR)


def sync_summary(report: SyncReport) -> str:
    """One line for a backend's sync: file counts, chunks, embeddings, time."""
    line = (
        f"{report.backend}: {report.added} added, {report.updated} updated, "
        f"{report.removed} removed, {report.unchanged} unchanged · {report.chunks} chunks"
    )
    if report.embedded or report.cache_hits:
        line += f" · {report.embedded} embedded, {report.cache_hits} from cache"
    if report.full_rebuild:
        line += " · full rebuild" + (f" ({report.reason})" if report.reason else "")
    line += f" · {report.duration_ms / 1000:.1f} s"
    if report.errors:
        line += f" · {len(report.errors)} error(s)"
    return line


@contextmanager
def progress_bar(*, enabled: bool) -> Iterator[_types.Progress]:
    """A :class:`~memory_router.Progress` that draws a rich bar on stderr when it is a terminal.

    The bar shows the step (``indexing`` files, ``embedding`` chunks), done/total, the rate
    per second and the time left; a new label starts a fresh rate.
    """
    from ._progress import rich_progress  # rich is imported only when a bar is drawn

    with rich_progress(enabled=enabled) as report:
        yield report


@click.command()
@click.argument("query", nargs=-1, required=True)
@click.option("-n", "--max-results", type=click.IntRange(min=1), help="At most this many hits.")
@click.option(
    "--min-score", type=click.FloatRange(0.0, 1.0), help="Drop hits scoring below this (0–1)."
)
@click.option("--mode", help="A backend-specific search mode (e.g. qmd's query or vsearch).")
@click.option("--json", "as_json", is_flag=True, help="Print the whole response as JSON.")
@click.option("--local", is_flag=True, help="Search in this process even when a server is running.")
@click.option(
    "--explain", is_flag=True, help="Show each hit's score factors and why candidates were dropped."
)
@click.option(
    "--source",
    "sources",
    multiple=True,
    type=click.Choice(["memory", "sessions"]),
    help="Only hits from this source (repeatable); searches in this process.",
)
@click.option(
    "--category",
    type=click.Choice(["preference", "fact", "decision", "entity", "other"]),
    help="Only entries of this category; searches in this process.",
)
@click.pass_context
def search(
    ctx: click.Context,
    query: tuple[str, ...],
    max_results: int | None,
    min_score: float | None,
    mode: str | None,
    as_json: bool,
    local: bool,
    explain: bool,
    sources: tuple[str, ...],
    category: str | None,
) -> None:
    """Search memory for QUERY: its words, quoted or not ('-' reads it from stdin).

    When ``memory-router serve`` runs for this agent and workspace, its warm router
    answers; otherwise (or with ``--local``) this process searches.
    """
    text = read_argument(" ".join(query))
    options: dict[str, Any] = {"max_results": max_results, "min_score": min_score, "mode": mode}
    filters: dict[str, Any] = {"sources": sources or None, "category": category}
    if explain:  # the explanation is computed here: a server does not send it
        explain_here(state(ctx), text, {**options, **filters}, as_json=as_json)
        return
    here = local or sources or category  # a server's search takes no filters
    answer = None if here else remote_search(state(ctx), text, options)
    if answer is None:
        router = state(ctx).router(require_workspace=False)  # answers with a note instead
        answer = router.search(
            text,
            **options,
            **filters,
            # OpenClaw's CLI session key: a direct chat, so citations=auto decorates hits.
            session_key=cli_session_key(router.config.agent_id),
        ).to_dict()
    if as_json:
        echo_json(answer)
    else:
        print_response(answer, paste=state(ctx).paste)


def cli_session_key(agent_id: str) -> str:
    return f"agent:{agent_id}:cli:direct:memory-search"


def remote_search(cli: CliState, query: str, options: dict[str, Any]) -> dict[str, Any] | None:
    """The running server's answer, or ``None`` when no server runs or it does not answer."""
    config = load_config(cli.config, overrides=cli.overrides())
    client = find_server(config)
    if client is None:
        return None
    try:
        return client.search(query, **options, session_key=cli_session_key(config.agent_id))
    except ServiceUnreachable as error:
        click.echo(f"Note: {error.message}; searching in this process.", err=True)
        return None


def print_response(
    response: dict[str, Any], paste: Callable[[str | None], str | None] = lambda hint: hint
) -> None:
    """Hits as ``<score> <path>:<start>-<end>``, the snippet and a blank line; then who
    answered. ``paste`` renders the commands in hints (:meth:`CliState.paste`)."""
    if not response["results"]:
        click.echo("No matches.")
    for hit in response["results"]:
        click.echo(f"{hit['score']:.3f} {hit['path']}:{hit['start_line']}-{hit['end_line']}")
        click.echo(hit["snippet"].rstrip("\n"))
        click.echo()
    if response.get("below_min_score"):
        click.echo(below_min_score_line(response["below_min_score"]))
    provider = (
        f"{response['provider']} {response['model'] or ''}".strip()
        if response["provider"]
        else "keyword only"
    )
    click.echo(
        f"Answered by {response['backend']} (mode {response['mode']}, embeddings: {provider})."
    )
    for label, key in (("Fallback", "fallback"), ("Embedding fallback", "provider_fallback")):
        event = response[key]
        if event is not None:
            click.echo(f"{label}: {event['from']} failed: {event['reason']}")
            if event.get("hint"):
                click.echo(f"  Hint: {paste(event['hint'])}")
    for note in response.get("notes") or ():  # stale or degraded answers say so
        click.echo(f"Note: {' '.join(str(note).split())}", err=True)


@click.command()
@click.argument("path")
@click.option(
    "--from", "from_line", type=click.IntRange(min=1), help="First line to read (1-based)."
)
@click.option("--lines", type=click.IntRange(min=1), help="How many lines to read.")
@click.option("--json", "as_json", is_flag=True, help="Print {path, text, from_line, lines}.")
@click.pass_context
def get(
    ctx: click.Context, path: str, from_line: int | None, lines: int | None, as_json: bool
) -> None:
    """Print lines of a memory file (workspace-relative PATH, Markdown only)."""
    router = state(ctx).router()
    text = router.get(path, from_line=from_line, lines=lines)
    if as_json:  # agents get OpenClaw's answer for a missing file: {path, text: ""}
        echo_json(text.to_dict())
        return
    if not text.text:
        explain_empty(router, path, text)
    click.echo(text.text, nl=not text.text.endswith("\n") and bool(text.text))


def explain_empty(router: Router, path: str, text: FileText) -> None:
    """Raise the error behind an empty ``get``: no workspace, no such file, or a first line
    (``--from`` or a citation's) past the file's end. Returns when the file is simply empty."""
    check_workspace(router.config)  # a missing workspace is the reason, not a missing file
    if not memory_file_exists(router.config, path):
        raise CommandError(
            f"{path} does not exist in the workspace {router.config.workspace_path}",
            hint=f"`{command(router.config, 'search', 'WORDS')}` shows the paths that exist",
        )
    total = line_count(router.get(text.path).text)
    if text.from_line > max(total, 1):
        raise CommandError(
            f"{text.path} has only {total} line(s); line {text.from_line} is past its end",
            hint=f"pick --from between 1 and {total}" if total else "the file is empty",
        )


def line_count(text: str) -> int:
    """Lines in ``text`` as an editor counts them (a final newline ends the last line)."""
    return text.count("\n") + (0 if not text or text.endswith("\n") else 1)


def explain_here(cli: CliState, text: str, options: dict[str, Any], *, as_json: bool) -> None:
    """``search --explain``: search in this process and show every score's factors."""
    router = cli.router(require_workspace=False)
    response = router.search(
        text, **options, session_key=cli_session_key(router.config.agent_id), explain=True
    )
    if as_json:
        echo_json(response.to_dict())
    else:
        print_explained(response)
