"""Start-up stays light: importing the package, discovering every plugin and building the
CLI import none of the heavy dependencies; a backend or provider loads them when used.
``import memory_router`` imports its names on first access, ``--help`` imports no command
module (nor config parsing, SQLite or HTTP), and a command imports only its own.

Speed targets (``--help`` ≤ 150 ms, keyword-only ``search`` ≤ 250 ms on an idle machine)
are measured by ``bench/bench_startup.py``; these tests guard the imports that make them.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

import click
import pytest

from memory_router.cli import build_cli, load_all
from memory_router.cli._lazy import COMMANDS

HEAVY = ("numpy", "httpx", "tenacity", "lancedb", "lance", "pyarrow", "mcp", "onnxruntime", "rich",
         "watchdog", "sqlite_vec", "tokenizers", "memory_router_qmd._backend",
         "memory_router_sqlite._backend")  # fmt: skip

DISCOVER = """
import json, sys
import memory_router.kit
from memory_router import _plugins
from memory_router.cli import build_cli
pm = memory_router.kit.get_plugin_manager()
backends, providers = _plugins.backend_specs(pm), _plugins.provider_specs(pm)
build_cli(pm)
print(json.dumps({
    "heavy": [m for m in json.loads(sys.argv[1]) if m in sys.modules],
    "plugins": sorted(name for name, _ in pm.list_name_plugin()),
    "backends": sorted(backends), "providers": sorted(providers),
}))
"""


def run_python(code: str, *args: str, cwd: Path | None = None) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORY_ROUTER_")}
    out = subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
        env=env,
        cwd=cwd,
    )
    return out.stdout


def test_discovering_every_plugin_imports_no_heavy_dependency() -> None:
    found = json.loads(run_python(DISCOVER, json.dumps(HEAVY)))
    assert found["heavy"] == [], (
        "loading the memory_router entry points imported heavy modules; keep a plugin's"
        " top-level module light and import them inside its factory (docs/plugins.md)"
    )
    # Every entry point of the group was loaded (so plugins added later are checked too).
    group = {ep.name for ep in entry_points(group="memory_router")}
    assert group <= set(found["plugins"])
    assert {"sqlite", "qmd", "lancedb"} <= set(found["backends"])
    assert {"minilm", "minilm-int8", "openai"} <= set(found["providers"])


# Not needed to print `--help`: command modules, the router, config parsing, value types,
# the SQLite drivers, HTTP (beside HEAVY).
NOT_FOR_HELP = ("memory_router.cli._memory", "memory_router.cli._bench", "memory_router._router",
                "memory_router._config.config", "memory_router._types",
                "memory_router._workspace.snapshot",
                "memory_router.service", "tomllib", "sqlite3", "_sqlite3", "sqlean",
                "http.client", "importlib.metadata", "concurrent.futures", "statistics",
                "random", "logging")  # fmt: skip

HELP = """
import contextlib, io, json, sys
from memory_router._cli import main
out = io.StringIO()
with contextlib.redirect_stdout(out):
    try:
        main(["--help"])
    except SystemExit:
        pass
print(json.dumps({"loaded": [m for m in json.loads(sys.argv[1]) if m in sys.modules],
                  "help": out.getvalue()}))
"""


def test_help_lists_every_command_without_importing_one() -> None:
    found = json.loads(run_python(HELP, json.dumps(HEAVY + NOT_FOR_HELP)))
    assert found["loaded"] == []
    listed = {line.split()[0] for line in found["help"].split("Commands:")[1].splitlines() if line}
    assert set(COMMANDS) | {"serve", "mcp", "health", "watch"} <= listed


def test_import_memory_router_imports_nothing_else_until_a_name_is_used() -> None:
    code = """
import json, sys
def ours():
    return sorted(m for m in sys.modules if m.startswith("memory_router"))
import memory_router
top = ours()
import memory_router.kit, memory_router.agent
public = ours()
from memory_router import Router, hookimpl
print(json.dumps({"top": top, "public": public, "router": "memory_router._router" in sys.modules}))
"""
    found = json.loads(run_python(code))
    light = ["memory_router", "memory_router._util", "memory_router._util.lazy"]
    assert found == {
        "top": light,
        "public": sorted([*light, "memory_router.agent", "memory_router.kit"]),
        "router": True,
    }


@pytest.mark.slow
def test_a_fallback_logged_by_the_router_stays_off_a_cli_stderr(tmp_path: Path) -> None:
    # The core's logger (and its NullHandler) is made when something is first logged, not
    # at import (a search that logs nothing imports no `logging`); without the NullHandler,
    # Python's last-resort handler would print the fallback's warning on stderr.
    (tmp_path / "workspace").mkdir()
    (tmp_path / "workspace" / "MEMORY.md").write_text("# Notes\n\nDeploys run on Tuesdays.\n")
    config = tmp_path / "config.toml"
    config.write_text(
        f'workspace = "{tmp_path / "workspace"}"\nstate_dir = "{tmp_path / "state"}"\n'
        '[embedding]\nprovider = "none"\n[router]\nchain = ["qmd", "sqlite"]\n'
        '[backends.qmd]\ncommand = "/nonexistent/qmd/dist/cli/qmd.js"\n'
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORY_ROUTER_")}
    search = subprocess.run(
        [sys.executable, "-m", "memory_router", "--config", str(config), "search", "deploys"],
        capture_output=True, text=True, timeout=120, env=env, check=False,
    )  # fmt: skip
    assert search.returncode == 0, search.stderr
    assert "Answered by sqlite" in search.stdout  # it fell back (and logged that it did)
    assert "fell back" not in search.stderr, search.stderr


def command_modules() -> dict[str, click.Command]:
    """Every command defined at the top of a ``memory_router.cli`` module, subcommands out."""
    import importlib
    import pkgutil

    import memory_router.cli as package

    defined: dict[str, click.Command] = {}
    for info in pkgutil.iter_modules(package.__path__):
        module = importlib.import_module(f"{package.__name__}.{info.name}")
        for value in vars(module).values():
            if isinstance(value, click.Command) and value.name:
                defined[value.name] = value
    nested = {
        name for cmd in defined.values() if isinstance(cmd, click.Group) for name in cmd.commands
    }
    return {name: cmd for name, cmd in defined.items() if name not in nested}


def test_the_command_table_matches_the_real_commands() -> None:
    defined = command_modules()
    assert set(COMMANDS) == set(defined)
    for name, (module, short) in COMMANDS.items():
        command = defined[name]
        assert command.callback is not None
        assert command.callback.__module__ == f"memory_router.cli{module}", name
        assert short == " ".join((command.help or "").split("\n\n")[0].split()), name


def test_help_from_the_table_is_the_help_of_the_loaded_commands() -> None:
    def rendered(group: click.Group) -> str:
        with click.Context(group, info_name="memory-router", terminal_width=80) as ctx:
            return group.get_help(ctx)

    lazy = build_cli()
    before = rendered(lazy)
    loaded = build_cli()
    assert set(load_all(loaded)) >= set(COMMANDS)
    assert rendered(loaded) == before
    # The column is as wide as the longest name (import-openclaw), whatever that is.
    assert re.search(r"\n  search +Search memory for QUERY", before), before


def test_a_mistyped_command_is_matched_against_every_command() -> None:
    from click.testing import CliRunner

    result = CliRunner().invoke(build_cli(), ["serch", "deploys"])
    assert result.exit_code == 2
    assert "No such command 'serch'" in result.output
    if hasattr(click.exceptions, "NoSuchCommand"):  # click ≥ 8.4 suggests
        assert "'search'" in result.output


@pytest.mark.slow
def test_keyword_only_search_never_loads_numpy(tmp_path: Path) -> None:
    workspace = tmp_path / "workspace"
    (workspace / "memory").mkdir(parents=True)
    (workspace / "MEMORY.md").write_text("# Notes\n\nDeploys run on Tuesdays.\n")
    config = tmp_path / "config.toml"
    config.write_text(
        f'workspace = "{workspace}"\nstate_dir = "{tmp_path / "state"}"\n'
        '[embedding]\nprovider = "none"\n'
    )
    code = """
import io, json, sys, contextlib
from memory_router._cli import main
out = io.StringIO()
with contextlib.redirect_stdout(out):
    try:
        main(["--config", sys.argv[1], "search", "deploys"])
    except SystemExit:
        pass
print(json.dumps({"heavy": [m for m in json.loads(sys.argv[2]) if m in sys.modules],
                  "out": out.getvalue()}))
"""
    heavy = [m for m in HEAVY if m not in ("memory_router_sqlite._backend", "sqlite_vec")]
    # Nor HTTP (no server runs), migration, redaction (no transcripts), another command, a
    # thread pool or a child process (nothing waits on either), logging (nothing is logged).
    heavy += [
        "http.client",
        "concurrent.futures",
        "subprocess",
        "logging",
        "memory_router._migrate.migration",
        "memory_router._workspace.redact",
        "memory_router.cli._bench",
    ]
    found = json.loads(run_python(code, str(config), json.dumps(heavy)))
    assert "MEMORY.md" in found["out"]
    assert found["heavy"] == []


def test_lazy_exports_still_reach_every_public_name() -> None:
    import memory_router_lancedb
    import memory_router_llama
    import memory_router_minilm
    import memory_router_qmd
    import memory_router_sqlite
    import memory_router_watch

    for module in (memory_router_lancedb, memory_router_llama, memory_router_minilm,
                   memory_router_qmd, memory_router_sqlite, memory_router_watch):  # fmt: skip
        for name in module.__all__:
            assert getattr(module, name) is not None, (module.__name__, name)
    with pytest.raises(AttributeError, match="no_such_name"):
        getattr(memory_router_qmd, "no_such_name")  # noqa: B009 - the lazy __getattr__
