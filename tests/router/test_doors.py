"""Every door checks the workspace (issue 21, item 1): a missing workspace is never created
and never empties the index, whichever way in.

The doors are enumerated, not listed by hand: every command of the real CLI (built-ins
and plugins) and every public method of :class:`Router` must be classified below, so a
command or method added later fails here until someone decides what it does with a
missing workspace. Each door runs against a real index whose workspace was renamed away;
the SQLite file's bytes and chunk count must be the same afterwards, and the workspace
must still be missing. The HTTP routes and MCP tools: ``tests/plugins/test_serve_doors.py``.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from memory_router import ConfigError, Router, migrate
from memory_router.cli import build_cli, load_all

WORKSPACE = {
    "MEMORY.md": "# Memory\n\n- Prefers green tea over coffee in the morning.\n",
    "memory/2026-11-01.md": "# 2026-11-01\n\nBooked flights to Lisbon for the conference.\n",
    "memory/entries.md": "# Memory entries\n\n- tea is green <!-- mr:id=e-000000000001 -->\n",
}
MISSING = "does not exist"

REFUSES = "refuses"  # exit 1, `Error: the workspace … does not exist`
REPORTS = "reports"  # diagnoses it: exit 1, the error in its report
NOTES = "notes"  # answers from the index as it was, with a `Note:` saying why

CLI_DOORS: dict[str, tuple[tuple[str, ...], str]] = {
    "capture": (("--conversation", "c1", "remember: I prefer green tea"), REFUSES),
    "context": (("what do I drink in the morning",), NOTES),
    "doctor": ((), REPORTS),
    "entries": ((), REFUSES),
    "flush": (("--session", "s", "--tokens", "90", "--window", "100"), REFUSES),
    "forget": (("--query", "tea is green"), REFUSES),
    "get": (("MEMORY.md",), REFUSES),
    "index": ((), REFUSES),
    "mcp": (("--no-watch",), REFUSES),
    "migrate": (("--from", "sqlite", "--to", "lancedb"), REFUSES),
    "recall": (("tea",), REFUSES),
    "search": (("green tea",), NOTES),
    "serve": (("--port", "0", "--no-watch"), REFUSES),
    "status": ((), REPORTS),
    "store": (("I prefer green tea",), REFUSES),
    "watch": (("--for", "1"), REFUSES),
}
"""Commands that use memory: the arguments to call them with, and what they must do."""

NOT_MEMORY: dict[str, tuple[tuple[str, ...] | None, str]] = {
    "agents": ((), "lists the agents under the state dir"),
    "bench": (None, "indexes its own datasets in temporary workspaces"),
    "config": (("from-openclaw", "--help"), "converts config files"),
    "import-openclaw": (
        None,
        "reads an OpenClaw install, not the configured workspace; the router it builds"
        " refuses a missing OpenClaw workspace like every other",
    ),
    "health": ((), "asks a running server over HTTP"),
    "plugins": ((), "lists the plugins"),
    "reset": (None, "deletes derived state on purpose, never Markdown (asks first)"),
}
"""Commands that never read or write the workspace (``None``: not run here)."""

ROUTER_DOORS: dict[str, tuple[Callable[[Router], Any], str]] = {
    "entries": (lambda r: r.entries(), REFUSES),
    "forget": (lambda r: r.forget("e-000000000001"), REFUSES),
    "forget_entry": (lambda r: r.forget_entry(query="tea is green"), REFUSES),
    "get": (lambda r: r.get("MEMORY.md"), REFUSES),
    "recall": (lambda r: r.recall("tea"), REFUSES),
    "remember": (lambda r: r.remember("I prefer green tea"), REFUSES),
    "search": (lambda r: r.search("green tea"), NOTES),
    "snapshot": (lambda r: r.snapshot(), REFUSES),
    "store": (lambda r: r.store("I prefer green tea"), REFUSES),
    "sync": (lambda r: r.sync(), REFUSES),
}
ROUTER_NOT_DOORS = {
    "backend": "builds a backend; reads no memory",
    "breakers": "the breakers' states",
    "check_backend_names": "checks names against the installed backends",
    "check_workspace": "the check itself",
    "close": "closes backends",
    "embedding_setup": "builds the embedder",
    "fingerprint": "the index fingerprint of the config",
    "from_config": "checked in test_from_config_refuses_a_missing_workspace",
    "status": "reports the workspace error (status.workspace_error)",
    "unset_secret": "reads the config",
}


@dataclass(frozen=True)
class Setup:
    config: Path
    workspace: Path
    index: Path


def index_state(index: Path) -> tuple[str, int]:
    """The index file's bytes (hashed) and its chunk count."""
    with sqlite3.connect(index) as db:
        chunks = db.execute("SELECT count(*) FROM chunks").fetchone()[0]
    db.close()
    return hashlib.sha256(index.read_bytes()).hexdigest(), chunks


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> Setup:
    """An indexed keyword-only SQLite workspace, then renamed away (an unmounted volume)."""
    root = tmp_path_factory.mktemp("doors")
    workspace = root / "workspace"
    for name, text in WORKSPACE.items():
        (workspace / name).parent.mkdir(parents=True, exist_ok=True)
        (workspace / name).write_text(text, encoding="utf-8")
    config = root / "memory-router.toml"
    config.write_text(
        f"workspace = {json.dumps(str(workspace))}\nstate_dir = {json.dumps(str(root / 'state'))}\n"
        '[embedding]\nprovider = "none"\n[query]\nmin_score = 0.0\n',
        encoding="utf-8",
    )
    assert cli(config, "index").returncode == 0
    workspace.rename(root / "unmounted")
    return Setup(config, workspace, root / "state/agents/main/memory.sqlite")


def cli(config: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The CLI as a user runs it, global options after the command as typed."""
    return subprocess.run(
        [sys.executable, "-m", "memory_router", args[0], "--config", str(config), *args[1:]],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**_env(), "HF_HUB_OFFLINE": "1"},
    )


def _env() -> dict[str, str]:
    import os

    return {k: v for k, v in os.environ.items() if not k.startswith("MEMORY_ROUTER_")}


def test_every_cli_command_is_classified() -> None:
    commands = set(load_all(build_cli()))
    unclassified = commands - set(CLI_DOORS) - set(NOT_MEMORY)
    assert not unclassified, f"say what {sorted(unclassified)} do with a missing workspace"
    assert not (set(CLI_DOORS) | set(NOT_MEMORY)) - commands  # no stale names


@pytest.mark.parametrize("name", sorted(CLI_DOORS))
def test_a_cli_door_never_creates_the_workspace_nor_touches_the_index(
    setup: Setup, name: str
) -> None:
    before = index_state(setup.index)
    args, behaviour = CLI_DOORS[name]
    result = cli(setup.config, name, *args)
    assert "Traceback" not in result.stderr
    if behaviour == REFUSES:
        assert result.returncode == 1, result.stdout + result.stderr
        assert result.stderr.startswith("Error: "), result.stderr
        assert MISSING in result.stderr.splitlines()[0]
        assert "Hint: create it" in result.stderr
    elif behaviour == REPORTS:
        assert result.returncode == 1
        assert MISSING in result.stdout + result.stderr
    else:  # the index as it was answers, and says why it may be stale
        assert result.returncode == 0, result.stderr
        notes = [line for line in result.stderr.splitlines() if line.startswith("Note: ")]
        assert any(MISSING in note for note in notes), result.stderr
    assert not setup.workspace.exists()
    assert index_state(setup.index) == before


@pytest.mark.parametrize("name", sorted(n for n, (args, _) in NOT_MEMORY.items() if args))
def test_a_command_that_needs_no_workspace_leaves_both_alone(setup: Setup, name: str) -> None:
    before = index_state(setup.index)
    args = NOT_MEMORY[name][0] or ()
    result = cli(setup.config, name, *args)
    assert "Traceback" not in result.stderr
    assert MISSING not in result.stderr
    assert not setup.workspace.exists()
    assert index_state(setup.index) == before


def test_every_router_method_is_classified() -> None:
    public = {
        name
        for name, value in inspect.getmembers(Router)
        if not name.startswith("_") and callable(value)
    }
    unclassified = public - set(ROUTER_DOORS) - set(ROUTER_NOT_DOORS)
    assert not unclassified, f"say what Router.{sorted(unclassified)} do without a workspace"
    assert not (set(ROUTER_DOORS) | set(ROUTER_NOT_DOORS)) - public


def test_from_config_refuses_a_missing_workspace(setup: Setup) -> None:
    with pytest.raises(ConfigError, match=MISSING) as caught:
        Router.from_config(setup.config)
    assert caught.value.key == "workspace"
    assert "create it" in str(caught.value.hint)
    assert not setup.workspace.exists()


# The library's functions of a router (not methods, so not enumerated above).
FUNCTION_DOORS: dict[str, tuple[Callable[[Router], Any], str]] = {
    "migrate": (lambda r: migrate(r, "lancedb", source="sqlite"), REFUSES),
}


@pytest.mark.parametrize("name", sorted({**ROUTER_DOORS, **FUNCTION_DOORS}))
def test_a_router_door_never_creates_the_workspace_nor_touches_the_index(
    setup: Setup, name: str
) -> None:
    before = index_state(setup.index)
    call, behaviour = {**ROUTER_DOORS, **FUNCTION_DOORS}[name]
    with Router.from_config(setup.config, require_workspace=False) as router:
        if behaviour == NOTES:
            response = call(router)
            assert response.results  # the index as it was
            assert any(MISSING in note for note in response.notes)
        else:
            with pytest.raises(ConfigError, match=MISSING):
                call(router)
    assert not setup.workspace.exists()
    assert index_state(setup.index) == before
