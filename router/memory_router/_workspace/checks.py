"""The workspace checks: the one place that says whether a workspace can be used."""

from __future__ import annotations

import errno
import os
import shlex
import stat
from pathlib import Path

from .._config.config import Config
from .._exceptions import ConfigError
from .files import split_citation

MEMORY_FILES = "MEMORY.md, memory.md or memory/**/*.md"


def check_workspace(config: Config) -> Path:
    """The workspace folder, or a :class:`ConfigError` when it is missing or unreadable.

    Syncing a workspace that is not there (a typo, an unmounted volume) would look like
    every memory file was deleted and empty the index; this refuses first. The one
    workspace check: every door (each CLI command that uses memory, ``Router.from_config``
    and the router's operations, ``serve``, ``mcp``, ``watch`` and the tools they serve)
    goes through it, and nothing ever creates a missing workspace.
    """
    path = config.workspace_path
    try:  # one stat, and the hints written only when they are needed: a check per search
        info = os.stat(path)
    except OSError as error:
        if error.errno not in (errno.ENOENT, errno.ENOTDIR, errno.ELOOP):
            raise _unreadable(config, path, error) from error
        where, fix = _workspace_origin(config)
        raise ConfigError(
            f"the workspace {path} does not exist; nothing was indexed or removed",
            path=where,
            key="workspace",
            hint=f"create it (mkdir -p {shlex.quote(str(path))}), mount it, or {fix}",
        ) from None
    if not stat.S_ISDIR(info.st_mode):
        where, fix = _workspace_origin(config)
        raise ConfigError(
            f"the workspace {path} is not a folder", path=where, key="workspace", hint=fix
        )
    try:  # opening it is what proves it readable; one entry is enough
        with os.scandir(path) as entries:
            next(entries, None)
    except OSError as error:
        raise _unreadable(config, path, error) from error
    return path


def _unreadable(config: Config, path: Path, error: OSError) -> ConfigError:
    where, fix = _workspace_origin(config)
    return ConfigError(
        f"the workspace {path} cannot be read ({error.strerror or error});"
        " nothing was indexed or removed",
        path=where,
        key="workspace",
        hint=f"make it readable (chmod u+rx {shlex.quote(str(path))}) or {fix}",
    )


def _workspace_origin(config: Config) -> tuple[str | None, str]:
    """Who set ``workspace`` (the file, a variable, ``--workspace``) and how to fix it there."""
    origin = config.origin("workspace")
    if origin == "<overrides>":  # --workspace (or workspace= in code): not the file's fault
        return None, "pass --workspace with a folder that exists"
    if origin is not None:  # "<env NAME>"
        name = origin.removeprefix("<env ").removesuffix(">")
        return origin, f"fix or unset ${name}"
    if config.file:
        return config.file, f"fix `workspace` in {config.file} or pass --workspace PATH"
    return None, "pass --workspace PATH or set `workspace` in the config file"


def memory_file_exists(config: Config, path: str) -> bool:
    """Whether ``path`` (as :meth:`Router.get` took it, a citation too) names a file that is
    there."""
    bare = str(split_citation(path)[0])
    target = Path(os.path.normpath(config.workspace_path / bare.strip().replace("\\", "/")))
    return target.is_file()
