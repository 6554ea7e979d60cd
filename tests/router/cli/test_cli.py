"""The ``memory-router`` CLI, through click's runner and as a real subprocess.

Workspaces and state live in ``tmp_path``; the backend is the real SQLite one, in
keyword-only mode (``provider = "none"``) or with the deterministic ``hash`` embedder from
``memory_router.testing``. Plugins defined here reach the CLI through the real hooks.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import click
import pluggy
import pytest
from click.testing import CliRunner, Result

from memory_router import (
    BackendStatus,
    BackendUnavailable,
    InvalidInput,
    Progress,
    SyncReport,
    hookimpl,
    no_progress,
)
from memory_router.cli import build_cli
from memory_router.kit import (
    Backend,
    BackendResult,
    BackendSpec,
    EmbeddingProvider,
    ProviderContext,
    ProviderSpec,
    SearchRequest,
    Snapshot,
    get_plugin_manager,
)

ROOT = Path(__file__).resolve().parents[3]
KEYWORD_ONLY = '[embedding]\nprovider = "none"\n'
HIT_LINE = re.compile(r"^(\d\.\d{3}) (\S+):(\d+)-(\d+)$", re.MULTILINE)


def run(
    args: Sequence[str], *, input: str | None = None, pm: pluggy.PluginManager | None = None
) -> Result:
    """Invoke the CLI in-process, with a fresh plugin manager unless ``pm`` is given."""
    return CliRunner().invoke(build_cli(pm), list(args), input=input)


def run_process(*args: str) -> subprocess.CompletedProcess[str]:
    """``python -m memory_router *args`` in a real subprocess (environment inherited)."""
    return subprocess.run(
        [sys.executable, "-m", "memory_router", *args],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def assert_one_line_error(stderr: str, *fragments: str) -> None:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert lines, "expected an error message on stderr"
    assert lines[0].startswith("Error: "), stderr
    assert all(line.startswith(("Error: ", "Hint: ")) for line in lines), stderr
    assert "Traceback" not in stderr
    for fragment in fragments:
        assert fragment in lines[0], (fragment, stderr)


# -- plugins used by the tests --------------------------------------------------------


class BrokenBackend(Backend):
    """A backend whose sidecar is gone: every call fails as a real crash would."""

    def search(self, request: SearchRequest) -> BackendResult:
        raise BackendUnavailable("sidecar crashed", backend=self.name)

    def sync(
        self, snapshot: Snapshot, *, force: bool = False, progress: Progress = no_progress
    ) -> SyncReport:
        raise BackendUnavailable("sidecar crashed", backend=self.name)

    def status(self, *, deep: bool = False) -> BackendStatus:
        return BackendStatus(name=self.name, available=False, error="sidecar crashed")


class BrokenBackendPlugin:
    @hookimpl
    def register_backends(self, register: Callable[[BackendSpec], None]) -> None:
        register(BackendSpec(name="broken", factory=BrokenBackend, description="always fails"))


class ConstantProvider(EmbeddingProvider):
    id = "constant"
    model = "constant-1"

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        return [[1.0, 0.0] for _ in texts]


class ConstantProviderPlugin:
    @hookimpl
    def register_embedding_providers(self, register: Callable[[ProviderSpec], None]) -> None:
        def factory(context: ProviderContext, model: str) -> EmbeddingProvider:
            return ConstantProvider()

        register(ProviderSpec(name="constant", factory=factory))


class CommandPlugin:
    """Adds commands through ``register_commands``, including ones that fail."""

    @hookimpl
    def register_commands(self, cli: click.Group) -> None:
        @cli.command()
        @click.pass_context
        def hello(ctx: click.Context) -> None:
            """Greets the configured agent."""
            click.echo(f"hello {ctx.find_root().obj.router().config.agent_id}")

        @cli.command()
        def refuse() -> None:
            raise InvalidInput("that will not work\nat all", hint="try something else")

        @cli.command()
        def interrupt() -> None:
            raise KeyboardInterrupt

        @cli.command()
        def crash() -> None:
            raise RuntimeError("boom")


# -- usage and errors ---------------------------------------------------------------


def test_unknown_command_is_a_usage_error() -> None:
    result = run(["frobnicate"])
    assert result.exit_code == 2
    assert "No such command" in result.stderr


def test_unknown_command_in_a_subprocess() -> None:
    proc = run_process("frobnicate")
    assert proc.returncode == 2
    assert "No such command 'frobnicate'" in proc.stderr


def test_bad_option_value_is_a_usage_error(write_config: Callable[..., Path]) -> None:
    config = write_config(KEYWORD_ONLY)
    result = run(["--config", str(config), "store", "x", "--importance", "1.5"])
    assert result.exit_code == 2
    assert "--importance" in result.stderr


def test_malformed_config_names_file_table_and_key(write_config: Callable[..., Path]) -> None:
    config = write_config("[query]\nmax_result = 3\n")
    result = run(["--config", str(config), "status"])
    assert result.exit_code == 1
    assert_one_line_error(result.stderr, str(config), "[query]", "'max_result'", "unknown key")


def test_config_with_a_wrong_type_names_the_key(write_config: Callable[..., Path]) -> None:
    config = write_config('[router]\ntimeout_s = "soon"\n')
    result = run(["--config", str(config), "search", "x"])
    assert result.exit_code == 1
    assert_one_line_error(result.stderr, "[router]", "'timeout_s'", "expected a number")


def test_invalid_toml_is_one_line(write_config: Callable[..., Path]) -> None:
    config = write_config("[query\nmax_results = 3\n")
    proc = run_process("--config", str(config), "entries")
    assert proc.returncode == 1
    assert_one_line_error(proc.stderr, str(config), "not valid TOML")


def test_missing_config_file(tmp_path: Path) -> None:
    result = run(["--config", str(tmp_path / "nope.toml"), "status"])
    assert result.exit_code == 1
    assert_one_line_error(result.stderr, "nope.toml", "config file not found")


def test_traceback_flag_reraises(write_config: Callable[..., Path]) -> None:
    config = write_config("[query]\nmax_result = 3\n")
    result = run(["--traceback", "--config", str(config), "status"])
    assert result.exit_code == 1
    assert type(result.exception).__name__ == "ConfigError"


def test_plugin_command_errors_go_through_the_boundary() -> None:
    pm = get_plugin_manager(plugins=[CommandPlugin()])
    refused = run(["refuse"], pm=pm)
    assert refused.exit_code == 1
    assert refused.stderr == "Error: that will not work at all\nHint: try something else\n"
    interrupted = run(["interrupt"], pm=pm)
    assert interrupted.exit_code == 130
    crashed = run(["crash"], pm=pm)
    assert crashed.exit_code == 1
    assert_one_line_error(crashed.stderr, "unexpected RuntimeError: boom")
    assert "--traceback" in crashed.stderr
    shown = run(["--traceback", "crash"], pm=pm)
    assert isinstance(shown.exception, RuntimeError)


def test_register_commands_adds_a_working_command(
    write_config: Callable[..., Path], write_workspace: Callable[..., Path]
) -> None:
    write_workspace()
    config = write_config(KEYWORD_ONLY)
    pm = get_plugin_manager(plugins=[CommandPlugin()])
    result = run(["--config", str(config), "--agent", "scout", "hello"], pm=pm)
    assert result.exit_code == 0, result.output
    assert result.stdout == "hello scout\n"
    assert "hello" in run(["--help"], pm=pm).stdout


def test_invalid_agent_id(write_config: Callable[..., Path]) -> None:
    config = write_config(KEYWORD_ONLY)
    result = run(["--config", str(config), "--agent", "no spaces!", "status"])
    assert result.exit_code == 1
    assert_one_line_error(result.stderr, "agent_id")


# -- get --------------------------------------------------------------------------------


def test_get_refuses_paths_outside_the_workspace(
    write_config: Callable[..., Path], write_workspace: Callable[..., Path]
) -> None:
    write_workspace()
    config = write_config(KEYWORD_ONLY)
    result = run(["--config", str(config), "get", "../etc/passwd"])
    assert result.exit_code == 1
    assert_one_line_error(result.stderr)
    assert result.stdout == ""
    proc = run_process("--config", str(config), "get", "../etc/passwd")
    assert proc.returncode == 1
    assert_one_line_error(proc.stderr)
    assert "root:" not in proc.stdout


def test_get_lines_and_json(
    write_config: Callable[..., Path], write_workspace: Callable[..., Path]
) -> None:
    write_workspace()
    config = write_config(KEYWORD_ONLY)
    result = run(["--config", str(config), "get", "MEMORY.md", "--from", "3", "--lines", "2"])
    assert result.exit_code == 0, result.output
    assert result.stdout == "## Preferences\n- Prefers green tea over coffee in the morning.\n"
    as_json = run(["--config", str(config), "get", "MEMORY.md", "--lines", "1", "--json"])
    data = json.loads(as_json.stdout)
    assert data["path"] == "MEMORY.md"
    assert data["text"].rstrip("\n") == "# Memory"
    # A search hit's citation is a path too: the lines it names are printed.
    cited = run(["--config", str(config), "get", "MEMORY.md#L3-L4"])
    assert cited.exit_code == 0, cited.output
    assert cited.stdout == result.stdout


def test_workspace_option_is_relative_to_the_working_directory(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    write_config: Callable[..., Path],
    write_workspace: Callable[..., Path],
) -> None:
    other = write_workspace({"MEMORY.md": "# Other workspace\n"}, root=tmp_path / "elsewhere")
    config = write_config(KEYWORD_ONLY, workspace=tmp_path / "missing")
    monkeypatch.chdir(other.parent)
    result = run(["--config", str(config), "--workspace", "elsewhere", "get", "MEMORY.md"])
    assert result.exit_code == 0, result.output
    assert result.stdout == "# Other workspace\n"


# -- index and search -------------------------------------------------------------------


def test_index_and_search_keyword_only(
    write_config: Callable[..., Path], write_workspace: Callable[..., Path]
) -> None:
    write_workspace()
    config = write_config(KEYWORD_ONLY)
    indexed = run(["--config", str(config), "index"])
    assert indexed.exit_code == 0, indexed.output
    assert re.match(
        r"^sqlite: 3 added, 0 updated, 0 removed, 0 unchanged · \d+ chunks", indexed.stdout
    )
    found = run(["--config", str(config), "search", "Lisbon flights", "--min-score", "0"])
    assert found.exit_code == 0, found.output
    hits = HIT_LINE.findall(found.stdout)
    assert hits, found.stdout
    assert hits[0][1] == "memory/2026-11-01.md"
    assert "Booked flights to Lisbon" in found.stdout
    assert "Answered by sqlite (mode " in found.stdout
    assert "keyword only" in found.stdout
    again = run(["--config", str(config), "index"])
    assert re.match(r"^sqlite: 0 added, 0 updated, 0 removed, 3 unchanged", again.stdout)


@pytest.mark.parametrize("name", ["nope", "\x00", "../../outside"])
def test_index_of_an_unknown_backend_is_refused_before_anything_is_made(
    write_config: Callable[..., Path], write_workspace: Callable[..., Path], name: str
) -> None:
    # A NUL used to crash ("unexpected ValueError: embedded null byte") and a path made
    # folders (and lock files) for a backend that does not exist, outside the state dir.
    write_workspace()
    config = write_config(KEYWORD_ONLY)
    before = sorted(p for p in config.parent.rglob("*"))
    result = run(["--config", str(config), "index", "--backend", name])
    assert result.exit_code == 1, result.output
    assert f"Error: no backend named {name!r}" in result.stderr
    assert "Hint: use one of: " in result.stderr
    assert "sqlite" in result.stderr
    assert sorted(p for p in config.parent.rglob("*")) == before


@pytest.mark.slow
def test_index_draws_a_progress_bar_only_on_a_terminal(
    monkeypatch: pytest.MonkeyPatch,
    write_config: Callable[..., Path],
    write_workspace: Callable[..., Path],
) -> None:
    write_workspace()
    config = write_config(KEYWORD_ONLY)
    piped = run_process("--config", str(config), "index")
    assert piped.returncode == 0, piped.stderr
    assert piped.stderr == ""
    # rich treats stderr as a terminal when TTY_COMPATIBLE=1 (its documented override).
    monkeypatch.setenv("TTY_COMPATIBLE", "1")
    monkeypatch.setenv("NO_COLOR", "1")
    drawn = run_process("--config", str(config), "index", "--force")
    assert drawn.returncode == 0, drawn.stderr
    assert "indexing" in drawn.stderr
    assert "3/3" in drawn.stderr
    assert drawn.stdout.startswith("sqlite: 3 added")
    as_json = run_process("--config", str(config), "index", "--json")
    assert as_json.stderr == ""


def test_search_json_shape(
    write_config: Callable[..., Path], write_workspace: Callable[..., Path]
) -> None:
    write_workspace()
    config = write_config(KEYWORD_ONLY)
    result = run(["--config", str(config), "search", "timezone", "--json", "--min-score", "0"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["query"] == "timezone"
    assert data["backend"] == "sqlite"
    assert data["fallback"] is None
    assert data["provider"] is None
    top = data["results"][0]
    assert top["path"] == "memory/2026-11-02.md"
    assert {"start_line", "end_line", "score", "snippet", "source", "backend"} <= set(top)
    assert 0.0 <= top["score"] <= 1.0


def test_search_limits_and_no_matches(
    write_config: Callable[..., Path], write_workspace: Callable[..., Path]
) -> None:
    write_workspace()
    config = write_config(KEYWORD_ONLY)
    many = run(["--config", str(config), "search", "the", "-n", "1", "--min-score", "0", "--json"])
    assert len(json.loads(many.stdout)["results"]) <= 1
    none = run(["--config", str(config), "search", "xylophonequartz"])
    assert none.exit_code == 0, none.output
    assert none.stdout.startswith("No matches.\n")


def test_search_reads_the_query_from_stdin(
    write_config: Callable[..., Path], write_workspace: Callable[..., Path]
) -> None:
    write_workspace()
    config = write_config(KEYWORD_ONLY)
    result = run(["--config", str(config), "search", "-", "--json"], input="Priya billing\n")
    assert json.loads(result.stdout)["query"] == "Priya billing"
    assert json.loads(result.stdout)["results"][0]["path"] == "MEMORY.md"


@pytest.mark.slow
def test_index_and_search_with_the_test_embedder_in_a_subprocess(
    monkeypatch: pytest.MonkeyPatch,
    write_config: Callable[..., Path],
    write_workspace: Callable[..., Path],
) -> None:
    write_workspace()
    config = write_config('[embedding]\nprovider = "hash"\n')
    monkeypatch.setenv("MEMORY_ROUTER_PLUGIN_MODULES", "memory_router.testing")
    indexed = run_process("--config", str(config), "index", "--json")
    assert indexed.returncode == 0, indexed.stderr
    reports = json.loads(indexed.stdout)
    assert [r["backend"] for r in reports] == ["sqlite"]
    assert reports[0]["added"] == 3
    assert reports[0]["embedded"] + reports[0]["cache_hits"] >= reports[0]["chunks"] > 0
    found = run_process("--config", str(config), "search", "Lisbon hotel", "--json")
    assert found.returncode == 0, found.stderr
    data = json.loads(found.stdout)
    assert data["provider"] == "hash"
    assert data["results"][0]["path"] == "memory/2026-11-01.md"
    status = run_process("--config", str(config), "status", "--deep", "--json")
    embedding = json.loads(status.stdout)["embedding"]
    assert (embedding["provider"], embedding["mode"], embedding["probe"]) == (
        "hash",
        "hybrid",
        "ok",
    )


def test_fallback_is_shown_when_the_first_backend_fails(
    write_config: Callable[..., Path], write_workspace: Callable[..., Path]
) -> None:
    write_workspace()
    config = write_config(KEYWORD_ONLY + '[router]\nchain = ["broken", "sqlite"]\n')
    pm = get_plugin_manager(plugins=[BrokenBackendPlugin()])
    result = run(["--config", str(config), "search", "Lisbon", "--min-score", "0"], pm=pm)
    assert result.exit_code == 0, result.output
    assert "Answered by sqlite" in result.stdout
    assert "Fallback: broken failed: index sync failed: sidecar crashed" in result.stdout
    as_json = run(["--config", str(config), "search", "Lisbon", "--json"], pm=pm)
    fallback = json.loads(as_json.stdout)["fallback"]
    assert fallback["from"] == "broken"
    # The first process opened the circuit and recorded it: this one does not ask again.
    assert fallback["reason"] == (
        "circuit open after failures (last: index sync failed: sidecar crashed)"
    )


def test_index_reports_a_failing_backend(
    write_config: Callable[..., Path], write_workspace: Callable[..., Path]
) -> None:
    write_workspace()
    config = write_config(
        KEYWORD_ONLY + '[router]\nchain = ["broken", "sqlite"]\nstandby = "hot"\n'
    )
    pm = get_plugin_manager(plugins=[BrokenBackendPlugin()])
    result = run(["--config", str(config), "index"], pm=pm)
    assert result.exit_code == 1
    assert "Error: broken: sidecar crashed" in result.stderr
    assert re.search(r"^sqlite: 3 added", result.stdout, re.MULTILINE)


# -- entries ---------------------------------------------------------------------------


def test_store_entries_forget_round_trip(
    write_config: Callable[..., Path], write_workspace: Callable[..., Path]
) -> None:
    workspace = write_workspace()
    config = write_config(KEYWORD_ONLY)
    base = ["--config", str(config)]
    stored = run(
        [
            *base,
            "store",
            "Allergic to penicillin",
            "--category",
            "fact",
            "--importance",
            "0.9",
            "--json",
        ]
    )
    assert stored.exit_code == 0, stored.output
    entry = json.loads(stored.stdout)
    assert (entry["text"], entry["category"], entry["importance"]) == (
        "Allergic to penicillin",
        "fact",
        0.9,
    )
    assert (workspace / "memory" / "entries.md").is_file()
    listed = json.loads(run([*base, "entries", "--json"]).stdout)
    assert [e["id"] for e in listed] == [entry["id"]]
    human = run([*base, "entries"]).stdout
    assert entry["id"] in human
    assert "Allergic to penicillin" in human
    found = json.loads(run([*base, "search", "penicillin", "--json", "--min-score", "0"]).stdout)
    assert found["results"][0]["path"] == "memory/entries.md"
    forgot = run([*base, "forget", entry["id"]])
    assert forgot.exit_code == 0, forgot.output
    assert forgot.stdout.startswith(f"Forgot {entry['id']}: Allergic to penicillin")
    assert run([*base, "entries"]).stdout == "No entries.\n"
    again = run([*base, "forget", entry["id"]])
    assert again.exit_code == 1
    assert_one_line_error(again.stderr, entry["id"])


def test_store_reads_text_from_stdin(
    write_config: Callable[..., Path], write_workspace: Callable[..., Path]
) -> None:
    write_workspace()
    config = write_config(KEYWORD_ONLY)
    stored = run(["--config", str(config), "store", "-"], input="Likes window seats\n")
    assert stored.exit_code == 0, stored.output
    assert re.match(r"^Stored \S+ \(other, importance 0\.70\)\.$", stored.stdout)
    assert json.loads(run(["--config", str(config), "entries", "--json"]).stdout)[0]["text"] == (
        "Likes window seats"
    )


# -- status and plugins -------------------------------------------------------------------


def test_status_json_and_human(
    write_config: Callable[..., Path], write_workspace: Callable[..., Path]
) -> None:
    workspace = write_workspace()
    config = write_config(KEYWORD_ONLY)
    run(["--config", str(config), "index"])
    result = run(["--config", str(config), "status", "--json"])
    assert result.exit_code == 0, result.output
    data: dict[str, Any] = json.loads(result.stdout)
    assert data["agent_id"] == "main"
    assert data["workspace"] == str(workspace)
    assert data["chain"] == ["sqlite"]
    assert data["sources"] == {"memory": 3}
    sqlite = data["backends"][0]
    assert (sqlite["name"], sqlite["available"], sqlite["files"]) == ("sqlite", True, 3)
    assert data["breakers"]["sqlite"]["state"] == "closed"
    assert data["embedding"]["mode"] == "keyword-only"
    human = run(["--config", str(config), "status"]).stdout
    assert human.startswith("Memory (main)\n")
    assert f"Workspace: {workspace}\n" in human
    assert "Backend sqlite: available · 3 files" in human
    assert "Embeddings: none (requested: none) · mode keyword-only" in human


def test_status_shows_an_unavailable_backend(
    write_config: Callable[..., Path], write_workspace: Callable[..., Path]
) -> None:
    write_workspace()
    config = write_config(KEYWORD_ONLY + '[router]\nchain = ["broken", "sqlite"]\n')
    pm = get_plugin_manager(plugins=[BrokenBackendPlugin()])
    human = run(["--config", str(config), "status"], pm=pm).stdout
    assert "Chain: broken → sqlite (fallback: next)" in human
    assert "Backend broken: unavailable · 0 files · 0 chunks\n  Error: sidecar crashed" in human


def test_plugins_lists_builtins_and_registered_names() -> None:
    result = run(["plugins", "--json"])
    assert result.exit_code == 0, result.output
    rows = {row["name"]: row for row in json.loads(result.stdout)}
    assert "register_backends" in rows["sqlite"]["hooks"]
    pm = get_plugin_manager(plugins=[BrokenBackendPlugin(), ConstantProviderPlugin()])
    human = run(["plugins"], pm=pm).stdout
    assert re.search(r"^sqlite  ", human, re.MULTILINE)
    backends = re.search(r"^Backends: (.*)$", human, re.MULTILINE)
    providers = re.search(r"^Embedding providers: (.*)$", human, re.MULTILINE)
    assert backends
    assert {"broken", "sqlite"} <= set(backends[1].split(", "))
    assert providers
    assert "constant" in providers[1].split(", ")


def test_plugins_env_limits_entry_points(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMORY_ROUTER_PLUGINS", "sqlite")
    proc = run_process("plugins", "--json")
    assert proc.returncode == 0, proc.stderr
    assert [row["name"] for row in json.loads(proc.stdout)] == ["sqlite"]


def test_a_plugin_that_fails_to_load_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMORY_ROUTER_PLUGIN_MODULES", "memory_router_no_such_plugin")
    proc = run_process("plugins")
    assert proc.returncode == 1
    assert_one_line_error(proc.stderr, "cannot import plugin module", "no_such_plugin")
    shown = run_process("--traceback", "plugins")
    assert shown.returncode == 1
    assert "Traceback (most recent call last)" in shown.stderr
    assert "PluginError" in shown.stderr


def test_a_closed_stdout_stops_quietly() -> None:
    """``memory-router plugins | head -0``: no traceback, no error line, exit 141."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "memory_router", "plugins"],
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
            check=False,
        )
    finally:
        os.close(write_end)
    assert proc.stderr == ""
    assert proc.returncode == 141


def test_version_and_main_entry_point() -> None:
    proc = run_process("--version")
    assert proc.returncode == 0
    assert proc.stdout.startswith("memory-router, version ")


def test_config_discovery_user_file_then_env_then_option(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    write_config: Callable[..., Path],
    write_workspace: Callable[..., Path],
) -> None:
    write_workspace()
    user_dir = Path(os.environ["XDG_CONFIG_HOME"]) / "memory-router"
    user_dir.mkdir(parents=True)
    write_config('agent_id = "from-user"\n' + KEYWORD_ONLY, name="user.toml").rename(
        user_dir / "config.toml"
    )
    assert json.loads(run(["status", "--json"]).stdout)["agent_id"] == "from-user"
    env_file = write_config('agent_id = "from-env"\n' + KEYWORD_ONLY, name="env.toml")
    monkeypatch.setenv("MEMORY_ROUTER_CONFIG", str(env_file))
    assert json.loads(run(["status", "--json"]).stdout)["agent_id"] == "from-env"
    option = write_config('agent_id = "from-option"\n' + KEYWORD_ONLY, name="option.toml")
    result = run(["--config", str(option), "status", "--json"])
    assert json.loads(result.stdout)["agent_id"] == "from-option"


# -- the demo ---------------------------------------------------------------------------

#: question → (the note, words of the answer the first hit must show) or None.
DEMO_EXPECTED: dict[str, tuple[str, str] | None] = {
    "which foods must my pet avoid": ("memory/2026-11-03.md", "allergic to chicken"),
    "upcoming vacation abroad": ("memory/2026-11-01.md", "trip to Lisbon"),
    "how do colleagues share progress each morning": (
        "memory/2026-11-04.md",
        "stand-ups become asynchronous",
    ),
    "why did the tests fail intermittently": ("memory/2026-11-02.md", "Root cause"),
    "quantum chromodynamics on a lattice": None,  # noise: nothing in the notes is about it
}


@pytest.mark.slow
def test_demo_queries_find_their_notes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``make demo``'s searches, on the defaults (MiniLM, default ``min_score``), find the
    intended notes — paraphrases included — and a question about nothing finds nothing."""
    script = (ROOT / "examples" / "demo.sh").read_text(encoding="utf-8")
    assert re.findall(r'^step search "([^"]+)"', script, re.MULTILINE) == list(DEMO_EXPECTED)
    config = str(ROOT / "examples" / "demo.toml")
    monkeypatch.setenv("MEMORY_ROUTER_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    indexed = run_process("--config", config, "index", "--json")
    assert indexed.returncode == 0, indexed.stderr
    assert json.loads(indexed.stdout)[0]["added"] == 7
    for query, expected in DEMO_EXPECTED.items():
        found = run_process("--config", config, "search", query, "-n", "2", "--json")
        assert found.returncode == 0, found.stderr
        data = json.loads(found.stdout)
        assert data["provider"] == "minilm", "the demo needs the offline MiniLM model"
        if expected is None:
            assert data["results"] == [], (query, data["results"])
        else:
            first = data["results"][0]
            assert first["path"] == expected[0], (query, data["results"])
            assert expected[1] in first["snippet"], (query, first)  # the answer, not a neighbour
