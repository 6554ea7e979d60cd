"""``import-openclaw``: one OpenClaw agent's memory brought over and verified."""

from __future__ import annotations

from pathlib import Path

import click

from memory_router._config.config import default_config_path
from memory_router._migrate.openclaw import ImportReport
from memory_router._migrate.openclaw import import_openclaw as run_import

from ._app import echo_json, state
from ._memory import progress_bar


@click.command("import-openclaw")
@click.argument("state_dir", required=False, metavar="[STATE_DIR]")
@click.option(
    "--agent-id",
    "agent",
    metavar="ID",
    help="The OpenClaw agent (default: its default one).",
)
@click.option(
    "-o",
    "--output",
    metavar="FILE",
    help="Where to write the config (default: --config, else the user config file).",
)
@click.option("--state-dir", "our_state", metavar="PATH", help="memory-router's state_dir.")
@click.option(
    "--verify",
    type=click.IntRange(min=0),
    default=20,
    show_default=True,
    metavar="N",
    help="Sample queries run on OpenClaw's index and ours (0: none).",
)
@click.option("--force", is_flag=True, help="Replace the config file when it exists.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.pass_context
def import_openclaw(
    ctx: click.Context,
    state_dir: str | None,
    agent: str | None,
    output: str | None,
    our_state: str | None,
    verify: int,
    force: bool,
    as_json: bool,
) -> None:
    """Bring an OpenClaw agent over: config, workspace, transcripts and index, then verify.

    STATE_DIR is OpenClaw's state folder (default: $OPENCLAW_STATE_DIR, else ~/.openclaw);
    its config is $OPENCLAW_CONFIG_PATH or STATE_DIR/openclaw.json. Nothing there is
    changed. The report lists what moved and what was not carried, with why.
    """
    cli = state(ctx)
    target = Path(output or cli.config or default_config_path()).expanduser()
    with progress_bar(enabled=not as_json) as progress:
        report = run_import(
            state_dir,
            output=target,
            agent=agent,
            our_state_dir=our_state,
            verify=verify or None,
            force=force,
            plugin_manager=cli.pm,
            progress=progress,
        )
    if as_json:
        echo_json(report.to_dict())
    else:
        _print(report)


def _print(report: ImportReport) -> None:
    click.echo(f"OpenClaw {report.layout} at {report.state_dir}, agent {report.agent!r}:")
    click.echo(f"  config     -> {report.config_file}")
    click.echo(f"  workspace  -> {report.workspace} (used in place)")
    moved = report.transcripts
    if moved is not None:
        line = f"  transcripts -> {moved.folder}: {moved.sessions} sessions, {moved.events} events"
        click.echo(line + (f", {moved.archives} archives" if moved.archives else ""))
    done = report.migration
    if done is not None:
        click.echo(
            f"  index      -> {done.target}: {done.mode} ({done.reason}); {done.chunks} chunks,"
            f" {done.seeded} vectors reused, {done.embedded} texts embedded"
        )
        if done.verify is not None:
            checked = done.verify
            click.echo(
                f"  verify     : {checked.queries} queries, top-{checked.k} overlap"
                f" {checked.overlap:.3f}, same top hit {checked.top_hit_share:.0%}"
            )
    else:
        click.echo(f"  index      -> built from the Markdown: {report.indexed_chunks} chunks")
    for note in report.notes:
        click.echo(f"  note: {note}")
    for key, why in report.not_carried:
        click.echo(f"  not carried: {key}: {why}")
    if report.other_agents:
        others = ", ".join(report.other_agents)
        click.echo(f"  other agents, not imported: {others} (run again with --agent-id)")
