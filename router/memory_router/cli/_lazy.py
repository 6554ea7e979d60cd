"""The built-in commands, imported only when one runs (or its own ``--help`` is asked).

``memory-router --help`` lists every command with its short help from :data:`COMMANDS`
without importing a command module (nor the router, config parsing, SQLite…); a test
checks the table against the real commands. Plugin commands are added as usual.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping

import click

from ._app import RootGroup

COMMANDS: Mapping[str, tuple[str, str]] = {
    # name: (module defining the command as an attribute of that name, first help paragraph)
    "agents": (
        "._ops",
        "List the agents found under the state dir with their index sizes and health.",
    ),
    "bench": (
        "._bench",
        "Measure retrieval quality and speed on a judged dataset (LoCoMo or BEIR layout).",
    ),
    "capture": (
        "._agent",
        "Store the user MESSAGES worth keeping as entries ('-': a JSON array or text on stdin).",
    ),
    "config": ("._migrate", "Work with configuration files."),
    "context": (
        "._agent",
        "Print the <relevant-memories> block for PROMPT ('-' reads it from stdin).",
    ),
    "doctor": (
        "._ops",
        "Check config, workspace, state dir, embeddings and every backend; say how to fix each ✗.",
    ),
    "entries": ("._entries", "List the journaled entries, oldest first."),
    "flush": (
        "._agent",
        "Say whether the pre-compaction memory flush is due, and print its prompts.",
    ),
    "forget": (
        "._entries",
        "Remove the entry called ID (or the one entry matching --query) from the journal.",
    ),
    "get": ("._memory", "Print lines of a memory file (workspace-relative PATH, Markdown only)."),
    "import-openclaw": (
        "._openclaw",
        "Bring an OpenClaw agent over: config, workspace, transcripts and index, then verify.",
    ),
    "index": ("._memory", "Bring the index in line with the workspace's Markdown files."),
    "migrate": ("._migrate", "Copy the index of one backend (or an index file) into another."),
    "plugins": (
        "._info",
        "List loaded plugins, the hooks they implement, and the backends and providers they add.",
    ),
    "recall": (
        "._entries",
        "Entries (only) most similar to QUERY, weighted by importance and recency.",
    ),
    "reset": (
        "._ops",
        "Delete derived state (indexes) so the next `index` rebuilds it; never touches Markdown.",
    ),
    "search": (
        "._memory",
        "Search memory for QUERY: its words, quoted or not ('-' reads it from stdin).",
    ),
    "status": ("._info", "Show backends, breakers, the embedding provider and source counts."),
    "store": (
        "._entries",
        "Journal TEXT as a new entry ('-' reads it from stdin); indexed on the next sync.",
    ),
}


class LazyGroup(RootGroup):
    """The root group with :data:`COMMANDS` loaded on first use; added commands win."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*self.commands, *COMMANDS})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in COMMANDS:
            module = importlib.import_module(COMMANDS[cmd_name][0], __package__)
            self.add_command(getattr(module, cmd_name.replace("-", "_")), cmd_name)
        return super().get_command(ctx, cmd_name)

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        try:
            return super().resolve_command(ctx, args)
        except click.UsageError as error:
            # click (≥ 8.4) suggests only among loaded commands: offer every command.
            unknown = getattr(click.exceptions, "NoSuchCommand", None)
            if unknown is None or not isinstance(error, unknown):
                raise
            names = self.list_commands(ctx)
            raise unknown(error.command_name, possibilities=names, ctx=ctx) from None

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """As click's, with a stand-in carrying the table's help for a command not loaded."""
        rows = [(name, self._listed(ctx, name)) for name in self.list_commands(ctx)]
        shown = [(name, command) for name, command in rows if not command.hidden]
        if not shown:
            return
        limit = formatter.width - 6 - max(len(name) for name, _ in shown)
        with formatter.section("Commands"):
            formatter.write_dl([(name, cmd.get_short_help_str(limit)) for name, cmd in shown])

    def _listed(self, ctx: click.Context, name: str) -> click.Command:
        if name in self.commands:
            return self.commands[name]
        return click.Command(name, help=COMMANDS[name][1])


def load_all(group: click.Group) -> dict[str, click.Command]:
    """Every command of ``group`` by name, importing lazy ones (for docs and tests)."""
    ctx = click.Context(group)
    found = ((name, group.get_command(ctx, name)) for name in group.list_commands(ctx))
    return {name: command for name, command in found if command is not None}
