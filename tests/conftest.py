"""Fixtures shared by every test: an isolated environment, workspaces and config files.

Every test runs with the ``MEMORY_ROUTER_*`` variables cleared and ``XDG_CONFIG_HOME``
pointing into its own temporary folder, so a developer's own config or plugin settings
never leak in. Configs written by :func:`write_config` keep all state under ``tmp_path``.

Tests marked ``qmd`` (the real QMD CLI) or ``llama`` (llama-cpp-python) skip with the
reason and the install command when the tool is missing, except under ``CI=true``:
CI installs both (``make test``), so there a missing tool fails the test instead.
"""

from __future__ import annotations

import functools
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


def _qmd_missing() -> str:
    from qmd_fakes.helpers import qmd_missing  # imports the QMD backend: only when asked

    return qmd_missing()


def _llama_missing() -> str:
    try:
        import llama_cpp  # noqa: F401  (a broken build fails here too, not only a missing one)
    except Exception as error:
        return (
            f"llama-cpp-python cannot be imported ({type(error).__name__}: {error}); "
            "install the `local` extra: pip install -e '.[local]' (make test does)"
        )
    return ""


#: marker → a probe returning why the tool is missing, or "" when it is there.
NEEDS: Mapping[str, Callable[[], str]] = {"qmd": _qmd_missing, "llama": _llama_missing}


@functools.cache
def missing(marker: str) -> str:
    """Why the tool a marker needs is missing here ("" when present), probed once a run."""
    return NEEDS[marker]()


def on_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def pytest_runtest_setup(item: pytest.Item) -> None:
    """Skip (locally) or fail (under CI) a test whose marked tool is missing."""
    for marker in NEEDS:
        if item.get_closest_marker(marker) is None or not (why := missing(marker)):
            continue
        if on_ci():
            pytest.fail(
                f"{why}. CI={os.environ['CI']}: CI installs every tool the tests need, "
                "so a missing one is a failure, not a skip",
                pytrace=False,
            )
        pytest.skip(why)


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
