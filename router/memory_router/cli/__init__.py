"""The ``memory-router`` command line, one module per command group.

:func:`build_cli` assembles a fresh root group (built-in commands plus those plugins add
through ``register_commands``); :func:`memory_router._cli.main` runs it. A built-in
command's module is imported only when that command runs (:mod:`._lazy`), so ``--help``
and each command load only what they use.
"""

from __future__ import annotations

import click
import pluggy

from memory_router import __version__, _plugins

from ._app import CliState, CommandError, report_error
from ._lazy import LazyGroup, load_all

__all__ = ["CliState", "CommandError", "build_cli", "load_all", "report_error"]


def build_cli(pm: pluggy.PluginManager | None = None) -> click.Group:
    """The root ``memory-router`` group over plugin manager ``pm`` (a fresh one by default)."""
    pm = pm if pm is not None else _plugins.get_plugin_manager()

    @click.group(cls=LazyGroup, pm=pm, context_settings={"help_option_names": ["-h", "--help"]})
    @click.option(
        "--config",
        "config_path",
        metavar="PATH",
        help="Config file (default: $MEMORY_ROUTER_CONFIG, then the user config file).",
    )
    @click.option("--workspace", metavar="PATH", help="Workspace folder (overrides the config).")
    @click.option("--agent", metavar="ID", help="Agent id (overrides the config's agent_id).")
    @click.option("--traceback", is_flag=True, help="Show the full traceback on errors.")
    @click.version_option(__version__, prog_name="memory-router")
    @click.pass_context
    def cli(
        ctx: click.Context,
        config_path: str | None,
        workspace: str | None,
        agent: str | None,
        traceback: bool,
    ) -> None:
        """Persistent, searchable memory for AI agents: Markdown files are the source of truth."""
        ctx.obj = CliState(
            pm=pm,
            config=config_path,
            workspace=workspace,
            agent=agent,
            traceback=traceback,
            commands=tuple(ctx.command.list_commands(ctx)),  # type: ignore[attr-defined]
        )

    _plugins.register_commands(pm, cli)
    return cli
