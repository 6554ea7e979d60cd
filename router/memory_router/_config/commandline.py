"""The command to run, as a person pastes it: the one place printed commands are rendered.

A fix line that says ``memory-router index`` runs against whatever config the shell finds,
which need not be the one the printing process used (``--config``, ``--agent``,
``--workspace``, or the same given as overrides to ``Router.from_config``). :func:`command`
renders a command with the global options that make it use the same config file, agent
and workspace; :func:`pasteable` adds them to the commands a text mentions (a backend's
hint, say). Options that would change nothing (the file the shell would find anyway, the
agent and workspace that file gives) are left out, so the usual case stays short.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable
from pathlib import Path

from .._exceptions import ConfigError
from .config import Config, find_config_file, load_config

PROGRAM = "memory-router"


def global_options(config: Config) -> list[str]:
    """``--config``, ``--agent`` and ``--workspace`` as a command typed in this environment
    needs them to use ``config``'s file, agent and workspace (``[]`` when it needs none)."""
    options: list[str] = []
    if config.file is not None and _found_file() != Path(config.file):
        options += ["--config", config.file]
    try:
        plain = load_config(config.file)  # what the command gets without the other options
    except ConfigError:
        plain = None
    if plain is None or plain.agent_id != config.agent_id:
        options += ["--agent", config.agent_id]
    if plain is None or plain.workspace_path != config.workspace_path:
        options += ["--workspace", str(config.workspace_path)]
    return options


def _found_file() -> Path | None:
    try:
        found = find_config_file()
    except ConfigError:
        return None
    return found.resolve() if found is not None else None


def command(config: Config, *args: str) -> str:
    """``memory-router <global options> <args>``, quoted for a POSIX shell."""
    return shlex.join([PROGRAM, *global_options(config), *args])


def pasteable(text: str, config: Config, commands: Iterable[str]) -> str:
    """``text`` with the global options :func:`global_options` gives inserted into each
    ``memory-router <command>`` it mentions (``commands``: the command names)."""
    names = sorted(set(commands), key=len, reverse=True)
    options = global_options(config)
    if not options or not names or PROGRAM not in text:
        return text
    mention = re.compile(
        rf"(?<![\w./-]){re.escape(PROGRAM)}(?= (?:{'|'.join(map(re.escape, names))})(?![\w-]))"
    )
    return mention.sub(lambda _: shlex.join([PROGRAM, *options]), text)
