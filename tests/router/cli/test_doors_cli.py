"""Issue 21, items 9, 11, 12 and 13: loopback means loopback, hints that paste, nothing
skipped silently, global options after the command. Real SQLite files; the CLI in its
own process where output matters.
"""

from __future__ import annotations

import json
import shlex
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from memory_router import ConfigError, Router, load_config
from memory_router._config.agent import ServeConfig, is_loopback
from memory_router._config.commandline import command, global_options, pasteable

ConfigWriter = Callable[..., Path]
WorkspaceWriter = Callable[..., Path]
KEYWORD_ONLY = '[embedding]\nprovider = "none"\n[query]\nmin_score = 0.0\n'


def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "memory_router", *args],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=cwd,
    )


# -- 9. loopback means loopback -------------------------------------------------------------


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.3.4.5", True),
        ("::1", True),
        ("[::1]", True),
        ("localhost", True),
        ("127.attacker.example", False),
        ("127.0.0.1.nip.io", False),
        ("localhost.attacker.example", False),
        ("0.0.0.0", False),
        ("::", False),
        ("::ffff:127.0.0.1", False),
        ("128.0.0.1", False),
        ("", False),
    ],
)
def test_only_loopback_literals_and_localhost_are_loopback(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback
    assert ServeConfig(host=host).loopback is loopback


def test_a_loopback_looking_name_needs_a_token(write_config: ConfigWriter) -> None:
    pytest.importorskip("mcp")
    from memory_router_serve._server import check_bind

    config = load_config(write_config('[serve]\nhost = "127.attacker.example"\n'))
    with pytest.raises(ConfigError, match="needs a bearer token"):
        check_bind(config, config.serve.host)
    assert check_bind(config, "127.0.0.1") is None


# -- 11. hints that paste -------------------------------------------------------------------


def test_commands_carry_the_options_that_matter(
    write_workspace: WorkspaceWriter, write_config: ConfigWriter, tmp_path: Path
) -> None:
    write_workspace()
    path = write_config(KEYWORD_ONLY)
    config = load_config(path)
    assert command(config, "index") == f"memory-router --config {path} index"
    other = load_config(path, overrides={"agent_id": "bob", "workspace": str(tmp_path / "w s")})
    assert global_options(other) == [
        "--config",
        str(path),
        "--agent",
        "bob",
        "--workspace",
        str(tmp_path / "w s"),
    ]
    assert shlex.split(command(other, "get", "a b.md"))[-2:] == ["get", "a b.md"]  # quoted


def test_the_discovered_config_and_its_own_values_are_left_out(
    write_workspace: WorkspaceWriter,
    write_config: ConfigWriter,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    write_workspace()
    path = write_config(KEYWORD_ONLY)
    monkeypatch.setenv("MEMORY_ROUTER_CONFIG", str(path))
    assert command(load_config(), "doctor", "--fix") == "memory-router doctor --fix"


def test_a_hint_from_elsewhere_gets_the_options(
    write_workspace: WorkspaceWriter, write_config: ConfigWriter
) -> None:
    write_workspace()
    path = write_config(KEYWORD_ONLY)
    config = load_config(path, overrides={"agent_id": "bob"})
    hint = "run `memory-router index` (or memory-router doctor --fix); where memory-router runs"
    pasted = pasteable(hint, config, ["index", "doctor"])
    options = f"--config {path} --agent bob"
    assert pasted == (
        f"run `memory-router {options} index` (or memory-router {options} doctor --fix);"
        " where memory-router runs"
    )
    assert pasteable("pip install 'memory-router[mcp]'", config, ["mcp"]).endswith("[mcp]'")


def test_the_fix_doctor_prints_runs_against_the_same_config(
    write_workspace: WorkspaceWriter, write_config: ConfigWriter, tmp_path: Path
) -> None:
    workspace = write_workspace()
    config = write_config(KEYWORD_ONLY, name="elsewhere.toml")
    globals_ = ("--config", str(config), "--agent", "bob")
    assert run(*globals_, "index").returncode == 0
    (workspace / "memory/2026-11-03.md").write_text("# New\n\nA new note about ferns.\n")
    doctor = run(*globals_, "doctor")
    assert doctor.returncode == 1
    fixes = [line.split("fix: ", 1)[1] for line in doctor.stdout.splitlines() if "fix: " in line]
    (fix,) = [f for f in fixes if " index " in f]
    assert fix.startswith(f"memory-router --config {config} --agent bob index")
    pasted = shlex.split(fix)
    assert run(*pasted[1:], cwd=tmp_path.parent).returncode == 0  # from another folder too
    assert run(*globals_, "doctor").returncode == 0


def test_an_error_hint_names_the_config_in_use(
    write_workspace: WorkspaceWriter, write_config: ConfigWriter
) -> None:
    write_workspace()
    config = write_config(KEYWORD_ONLY, name="elsewhere.toml")
    result = run("--config", str(config), "forget", "no-such-id")
    assert result.returncode == 1
    assert f"memory-router --config {config} entries" in result.stderr  # the hint's command


# -- 12. nothing skipped silently -----------------------------------------------------------


def test_links_and_large_notes_are_warned_everywhere(
    write_workspace: WorkspaceWriter, write_config: ConfigWriter, tmp_path: Path
) -> None:
    workspace = write_workspace()
    (tmp_path / "shared.md").write_text("# Shared\n\nA note kept elsewhere.\n")
    (workspace / "memory/linked.md").symlink_to(tmp_path / "shared.md")
    (workspace / "memory/big.md").write_text("# Big\n\n" + "word " * 1000)
    config = write_config(KEYWORD_ONLY + "[sync]\nmax_file_bytes = 2048\n")
    index = run("--config", str(config), "index")
    assert index.returncode == 0
    assert "Warning: memory/linked.md: a symbolic link; not indexed" in index.stderr
    assert "Warning: memory/big.md: 5,007 bytes, over [sync] max_file_bytes" in index.stderr
    status = run("--config", str(config), "status").stdout
    assert "  Warning: memory/linked.md: a symbolic link" in status
    assert "  Warning: memory/big.md: 5,007 bytes, over" in status
    doctor = run("--config", str(config), "doctor")
    assert doctor.returncode == 1
    lines = doctor.stdout.splitlines()
    at = lines.index(next(x for x in lines if x.startswith("✗ memory files:")))
    assert "memory/big.md" in lines[at]
    assert "memory/linked.md" in lines[at]
    assert "replace each link with the note itself" in lines[at + 1]
    assert f"raise [sync] max_file_bytes in {config}" in lines[at + 1]
    with sqlite3.connect(tmp_path / "state/agents/main/memory.sqlite") as db:
        paths = {row[0] for row in db.execute("SELECT path FROM files")}
    db.close()
    assert "memory/big.md" not in paths
    assert "memory/linked.md" not in paths


def test_the_default_limit_is_five_mib(write_config: ConfigWriter) -> None:
    assert load_config(write_config()).sync.max_file_bytes == 5 * 2**20
    with pytest.raises(ConfigError, match="max_file_bytes"):
        load_config(write_config("[sync]\nmax_file_bytes = -1\n"))


def test_a_byte_order_mark_is_not_in_snippets(
    write_workspace: WorkspaceWriter, write_config: ConfigWriter
) -> None:
    workspace = write_workspace({"MEMORY.md": "# Memory\n"})
    (workspace / "memory").mkdir(exist_ok=True)
    (workspace / "memory/bom.md").write_bytes("\ufeffBoiler serviced in March.\n".encode())
    with Router.from_config(write_config(KEYWORD_ONLY)) as router:
        hits = router.search("boiler serviced").results
        text = router.get("memory/bom.md").text
    assert hits[0].snippet.startswith("Boiler serviced")
    assert "\ufeff" not in text


def test_storing_leaves_no_lock_file_among_the_notes(
    write_workspace: WorkspaceWriter, write_config: ConfigWriter
) -> None:
    workspace = write_workspace()
    with Router.from_config(write_config(KEYWORD_ONLY)) as router:
        entry = router.store("The boiler code is 4411")
        router.forget(entry.id)
        router.sync()
    assert sorted(p.name for p in (workspace / "memory").iterdir()) == [
        "2026-11-01.md",
        "2026-11-02.md",
        "entries.md",
    ]


# -- 13. global options after the command ---------------------------------------------------


def test_global_options_work_after_the_command(
    write_workspace: WorkspaceWriter, write_config: ConfigWriter, tmp_path: Path
) -> None:
    write_workspace()
    config = str(write_config(KEYWORD_ONLY))
    assert run("index", "--config", config).returncode == 0
    for args in (
        ("search", "--config", config, "Lisbon"),
        ("search", "Lisbon", "--config", config),
        ("search", f"--config={config}", "--json", "Lisbon"),
        ("--config", "nowhere.toml", "search", "--config", config, "Lisbon"),  # after wins
    ):
        result = run(*args)
        assert result.returncode == 0, (args, result.stderr)
        assert "memory/2026-11-01.md" in result.stdout, args
    other = run("status", "--config", config, "--agent", "bob", "--json")
    assert json.loads(other.stdout)["agent_id"] == "bob"
    literal = run("search", "--config", config, "--", "--config")  # after --, just words
    assert literal.returncode == 0
    nested = run("config", "from-openclaw", "--config", config, "--help")
    assert nested.returncode == 0
    assert "--config" not in run("search", "--help").stdout.split("Options:")[1]  # hidden
