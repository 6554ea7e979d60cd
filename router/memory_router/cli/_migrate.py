"""``migrate`` (copy an index between backends, verified) and ``config from-openclaw``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from memory_router import BackendError, EmbeddingError, Router
from memory_router._config.openclaw import (
    convert,
    openclaw_config_path,
    openclaw_state_dir,
    read_openclaw,
    to_toml,
)
from memory_router._migrate.checkpoint import Checkpoint
from memory_router._migrate.migration import MigrationReport, interrupted
from memory_router._migrate.migration import migrate as migrate_index
from memory_router._migrate.verify import VerifyReport

from ._app import EXIT_ERROR, EXIT_INTERRUPTED, CommandError, echo_json, state
from ._memory import progress_bar

DEFAULT_QUERIES = 20


@click.command()
@click.option("--from", "source", metavar="NAME", help="Source backend (a configured name).")
@click.option(
    "--from-path",
    "source_path",
    metavar="PATH",
    help="Source index file instead: ours, OpenClaw 2026.9's"
    " agents/<id>/agent/openclaw-agent.sqlite or its older memory/<agent>.sqlite.",
)
@click.option("--to", "target", metavar="NAME", help="Target backend (default: the chain's first).")
@click.option(
    "--to-path",
    "target_path",
    metavar="PATH",
    help="Target index file instead (SQLite, the seed schema; created when missing).",
)
@click.option("--resume", is_flag=True, help="Continue a killed migration from its checkpoint.")
@click.option(
    "--verify",
    type=click.IntRange(min=0),
    is_flag=False,
    flag_value=DEFAULT_QUERIES,
    default=None,
    metavar="[N]",
    help=f"Then run N corpus queries on both sides and compare (N = {DEFAULT_QUERIES}).",
)
@click.option(
    "--queries",
    type=click.Path(exists=True, dir_okay=False),
    metavar="FILE",
    help="More verify queries, one per line.",
)
@click.option(
    "--min-overlap",
    type=click.FloatRange(0.0, 1.0),
    metavar="X",
    help="Exit with status 1 when the verify top-10 overlap is below X.",
)
@click.option("--verify-only", is_flag=True, help="Compare source and target, copy nothing.")
@click.option(
    "--batch-size",
    type=click.IntRange(min=1),
    default=None,
    help="Chunks per batch (default: what the target writes best).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.pass_context
def migrate(
    ctx: click.Context,
    source: str | None,
    source_path: str | None,
    target: str | None,
    target_path: str | None,
    resume: bool,
    verify: int | None,
    queries: str | None,
    min_overlap: float | None,
    verify_only: bool,
    batch_size: int | None,
    as_json: bool,
) -> None:
    """Copy the index of one backend (or an index file) into another.

    Vectors are reused when the index fingerprints match, and re-embedded through the
    embedding cache when they do not. The target is built beside its live index and
    switched over when complete.
    """
    _check_endpoints(source, source_path, target, target_path)
    asked = _read_queries(queries)
    if verify is None and (asked or min_overlap is not None or verify_only):
        verify = DEFAULT_QUERIES
    router = state(ctx).router()
    into = None if target_path else target or router.config.router.chain[0]
    report = _migrate_or_explain(
        router,
        into,
        target_path,
        resume,
        bar=not as_json,
        source=source,
        source_path=source_path,
        verify=verify,
        queries=asked,
        copy=not verify_only,
        batch_size=batch_size,
    )
    if as_json:
        echo_json(report.to_dict())
    else:
        _print_report(report)
    if not _overlap_holds(report, min_overlap):
        ctx.exit(EXIT_ERROR)


def _check_endpoints(
    source: str | None, source_path: str | None, target: str | None, target_path: str | None
) -> None:
    if (source is None) == (source_path is None):
        raise click.UsageError("give exactly one of --from NAME and --from-path PATH")
    if target is not None and target_path is not None:
        raise click.UsageError("give at most one of --to NAME and --to-path PATH")


def _overlap_holds(report: MigrationReport, min_overlap: float | None) -> bool:
    """False, saying so, when the verification's overlap is below ``--min-overlap``."""
    checked = report.verify
    if checked is not None and min_overlap is not None and checked.overlap < min_overlap:
        click.echo(
            f"Error: verification failed: top-{checked.k} overlap {checked.overlap:.3f}"
            f" is below --min-overlap {min_overlap}",
            err=True,
        )
        return False
    return True


def _migrate_or_explain(
    router: Router,
    into: str | None,
    target_path: str | None,
    resume: bool,
    *,
    bar: bool,
    **options: Any,
) -> MigrationReport:
    """:func:`memory_router.migrate` under a progress bar; when Ctrl-C or a failing store or
    provider stops a copy it kept, the way to continue it is said."""
    before = interrupted(router, into, target_path)
    try:
        with progress_bar(enabled=bar) as progress:
            return migrate_index(
                router, into, target_path=target_path, resume=resume, progress=progress, **options
            )
    except KeyboardInterrupt:
        click.echo("Interrupted.", err=True)
        left = _resume_hint(router, into, target_path, before, resume)
        if left:
            click.echo(f"Hint: {left}", err=True)
        raise click.exceptions.Exit(EXIT_INTERRUPTED) from None
    except (BackendError, EmbeddingError) as error:  # a store or provider failed mid-copy
        left = _resume_hint(router, into, target_path, before, resume)
        if left:
            error.hint = f"{error.hint}; then {left}" if error.hint else left
        raise


def _resume_hint(
    router: Router,
    target: str | None,
    target_path: str | None,
    before: Checkpoint | None,
    resume: bool,
) -> str | None:
    """How to continue a migration that stopped with its copy kept, or ``None`` — also
    when this run, not resuming, failed before its copy began (the checkpoint there is
    an earlier run's, and this run would have started clean)."""
    saved = interrupted(router, target, target_path)
    if saved is None or (saved == before and not resume):
        return None
    return (
        f"run the same command with --resume to continue where it stopped ({saved.done} of"
        f" {saved.total} chunks are written)"
    )


def _read_queries(path: str | None) -> list[str]:
    if path is None:
        return []
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise CommandError(f"cannot read {path}: {error}") from None
    return [line.strip() for line in text.splitlines() if line.strip()]


def _print_report(report: MigrationReport) -> None:
    if report.mode != "none":
        click.echo(f"{report.source} -> {report.target}: {report.mode} ({report.reason})")
        line = f"  {report.chunks} chunks · {report.written} written"
        if report.resumed:
            line += f" · {report.skipped} already written before the interruption"
        line += f" · {report.embedded} embedded, {report.cache_hits} from cache"
        if report.seeded:
            line += f" · {report.seeded} vectors handed to the embedding cache"
        click.echo(line + f" · {report.duration_ms / 1000:.1f} s")
    if report.verify is not None:
        _print_verify(report.verify)


def _print_verify(checked: VerifyReport) -> None:
    click.echo(
        f"verify: {checked.queries} queries · top-{checked.k} overlap {checked.overlap:.3f}"
        f" · same top hit {checked.top_hit_share:.0%}"
        f" · {checked.source_chunks} -> {checked.target_chunks} chunks"
    )
    for diff in checked.worst:
        click.echo(
            f"  {diff.overlap:.2f} {diff.query!r}: {diff.source_top or '-'}"
            f" vs {diff.target_top or '-'}"
        )


@click.group()
def config() -> None:
    """Work with configuration files."""


@config.command("from-openclaw")
@click.argument("path", type=click.Path(dir_okay=False), required=False)
@click.option(
    "--agent-id",
    "agent",
    metavar="ID",
    help="The agent whose settings to convert (default: OpenClaw's default agent).",
)
@click.option(
    "--state-dir",
    metavar="PATH",
    help="OpenClaw's state folder (default: $OPENCLAW_STATE_DIR, else ~/.openclaw).",
)
@click.option("-o", "--output", metavar="FILE", help="Write the TOML here instead of stdout.")
def from_openclaw(
    path: str | None, agent: str | None, state_dir: str | None, output: str | None
) -> None:
    """Turn PATH (an openclaw.json) into this project's TOML, naming what is not carried over.

    Without PATH, the config OpenClaw reads: $OPENCLAW_CONFIG_PATH, else
    openclaw.json in its state folder. Both the 2026.9 layout and the older one are read.
    """
    source = Path(path) if path else openclaw_config_path(openclaw_state_dir(state_dir))
    conversion = convert(read_openclaw(source), agent=agent, state_dir=state_dir)
    text = to_toml(conversion, origin=str(source))
    if output is None:
        click.echo(text, nl=False)
    else:
        if Path(output).exists():
            raise CommandError(f"{output} exists", hint="choose another file or remove it first")
        Path(output).write_text(text, encoding="utf-8")
        click.echo(f"Wrote {output}.", err=True)
    for note in conversion.notes:
        click.echo(f"note: {note}", err=True)
    for key, why in conversion.dropped:
        click.echo(f"not carried over: {key}: {why}", err=True)
