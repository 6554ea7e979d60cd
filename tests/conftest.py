"""Fixtures shared by every test: an isolated environment, workspaces and config files.

Every test runs with the ``MEMORY_ROUTER_*`` variables cleared and ``XDG_CONFIG_HOME``
pointing into its own temporary folder, so a developer's own config or plugin settings
never leak in. Configs written by :func:`write_config` keep all state under ``tmp_path``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from pathlib import Path

import pytest

SAMPLE_WORKSPACE: Mapping[str, str] = {
    "MEMORY.md": (
        "# Memory\n\n"
        "## Preferences\n"
        "- Prefers green tea over coffee in the morning.\n"
        "- Writes Python with full type annotations.\n\n"
        "## People\n"
        "- Priya Raman leads the billing team.\n"
    ),
    "memory/2026-11-01.md": (
        "# 2026-11-01\n\n"
        "Booked flights to Lisbon for the conference in March.\n"
        "The hotel is in Alfama, near the tram line.\n"
    ),
    "memory/2026-11-02.md": (
        "# 2026-11-02\n\n"
        "The flaky CI job failed because tests depended on the local timezone.\n"
        "Fixed it by freezing the clock to UTC in the fixtures.\n"
    ),
}

WorkspaceWriter = Callable[..., Path]
ConfigWriter = Callable[..., Path]


@pytest.fixture(autouse=True)
def isolated_env(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Clear ``MEMORY_ROUTER_*`` variables and hide the user's config directory.

    QMD backends stay keyword-only unless a test gives them a model: the offline MiniLM
    (``[backends.qmd.models] offline``, on by default) would embed every test corpus.
    """
    for name in list(os.environ):
        if name.startswith("MEMORY_ROUTER_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path_factory.mktemp("xdg-config")))
    monkeypatch.setenv("MEMORY_ROUTER_BACKENDS__QMD__MODELS__OFFLINE", "false")


@pytest.fixture
def write_workspace(tmp_path: Path) -> WorkspaceWriter:
    """``write_workspace(files=None, *, root=None) -> Path``: a workspace of Markdown files.

    ``files`` maps workspace-relative paths to text (default :data:`SAMPLE_WORKSPACE`);
    ``root`` defaults to ``tmp_path / "workspace"``. Calling it again adds or overwrites files.
    """

    def write(files: Mapping[str, str] | None = None, *, root: Path | None = None) -> Path:
        root = root if root is not None else tmp_path / "workspace"
        root.mkdir(parents=True, exist_ok=True)
        for relative, text in (SAMPLE_WORKSPACE if files is None else files).items():
            target = root / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
        return root

    return write


@pytest.fixture
def write_config(tmp_path: Path) -> ConfigWriter:
    """``write_config(body="", *, workspace=None, name="memory-router.toml") -> Path``.

    Writes a TOML config whose ``state_dir`` is ``tmp_path / "state"`` and whose
    ``workspace`` is ``workspace`` (default ``tmp_path / "workspace"``), followed by
    ``body`` (more keys and tables).
    """

    def write(
        body: str = "", *, workspace: Path | None = None, name: str = "memory-router.toml"
    ) -> Path:
        workspace = workspace if workspace is not None else tmp_path / "workspace"
        head = (
            f"workspace = {json.dumps(str(workspace))}\n"
            f"state_dir = {json.dumps(str(tmp_path / 'state'))}\n"
        )
        path = tmp_path / name
        path.write_text(head + body, encoding="utf-8")
        return path

    return write
