"""Operating memory-router as a person: doctor, reset, agents, an honest status, answers that
explain themselves, one indexer per agent. Each test is a CLI-level regression test for
something seen by a new user (issue 13): exit codes and the lines a user reads.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from memory_router import NotFound, Router
from memory_router._ops import doctor as _doctor
from memory_router.cli import build_cli

ConfigWriter = Callable[..., Path]
WorkspaceWriter = Callable[..., Path]
KEYWORD_ONLY = '[embedding]\nprovider = "none"\n'
MISSING_QMD = (
    '[router]\nchain = ["qmd", "sqlite"]\n'
    '[backends.qmd]\ncommand = "/nonexistent/qmd/dist/cli/qmd.js"\n'
)


def run(*args: str, input: str | None = None) -> Result:
    return CliRunner().invoke(build_cli(), list(args), input=input)


def run_process(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "memory_router", *args],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def error_lines(stderr: str) -> list[str]:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert lines, "expected an error on stderr"
    assert lines[0].startswith("Error: "), stderr
    assert "Traceback" not in stderr
    return lines


@pytest.fixture
def hashing(monkeypatch: pytest.MonkeyPatch) -> str:
    """The deterministic test embedder, reachable from the CLI (in process and in children)."""
    monkeypatch.setenv("MEMORY_ROUTER_PLUGIN_MODULES", "memory_router.testing")
    return '[embedding]\nprovider = "hash"\n'


@pytest.fixture
def config(write_workspace: WorkspaceWriter, write_config: ConfigWriter) -> Path:
    write_workspace()
    return write_config(KEYWORD_ONLY)


def index_path(config: Path) -> Path:
    return config.parent / "state/agents/main/memory.sqlite"


# -- honest status -----------------------------------------------------------------------


def test_status_exits_1_when_no_backend_can_answer(config: Path) -> None:
    assert run("--config", str(config), "index").exit_code == 0
    index_path(config).write_bytes(b"this is not a database\n" * 100)
    human = run_process("--config", str(config), "status")
    assert human.returncode == 1
    assert "Backend sqlite: unavailable" in human.stdout
    lines = error_lines(human.stderr)
    assert "no backend of the chain can answer" in lines[0]
    assert lines[1].startswith("Hint: ")
    assert "doctor" in lines[1]
    as_json = run_process("--config", str(config), "status", "--json")
    assert as_json.returncode == 1
    assert json.loads(as_json.stdout)["can_answer"] is False


@pytest.mark.slow
def test_breakers_and_fallbacks_seen_by_one_process_show_in_status_from_another(
    write_workspace: WorkspaceWriter, write_config: ConfigWriter
) -> None:
    write_workspace()
    config = write_config(KEYWORD_ONLY + MISSING_QMD)
    searched = run_process("--config", str(config), "search", "Lisbon", "hotel")
    assert searched.returncode == 0, searched.stderr
    assert "Fallback: qmd failed" in searched.stdout
    status = run_process("--config", str(config), "status", "--json")
    assert status.returncode == 0  # sqlite can answer
    data = json.loads(status.stdout)
    assert data["breakers"]["qmd"]["state"] == "open"
    assert data["breakers"]["qmd"]["opened_at"]
    assert data["last_fallback"]["from"] == "qmd"
    assert "does not exist" in data["last_fallback"]["reason"]
    assert data["breakers_seen_at"]
    human = run_process("--config", str(config), "status")
    assert "Breakers: qmd open (1 failures), sqlite closed (recorded " in human.stdout
    assert "Last fallback: qmd at " in human.stdout


# -- doctor and reset --------------------------------------------------------------------


def test_doctor_on_a_healthy_setup_is_all_checks(config: Path) -> None:
    assert run("--config", str(config), "index").exit_code == 0
    result = run("--config", str(config), "doctor")
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert all(line.startswith("✓ ") for line in lines), result.output
    names = [line.split(":")[0] for line in lines]
    assert names == [
        "✓ config",
        "✓ workspace",
        "✓ state dir",
        "✓ embeddings",
        "✓ backend sqlite",
        "✓ index lock sqlite",
    ]
    assert "3 memory files" in result.output


def test_doctor_finds_a_corrupt_index_and_fix_rebuilds_it(config: Path) -> None:
    assert run("--config", str(config), "index").exit_code == 0
    index_path(config).write_bytes(os.urandom(4096))
    before = run("--config", str(config), "doctor")
    assert before.exit_code == 1
    assert "✗ backend sqlite: " in before.output
    assert "damaged" in before.output
    assert f"    fix: memory-router --config {config} doctor --fix" in before.output
    fixed = run("--config", str(config), "doctor", "--fix")
    assert fixed.exit_code == 0, fixed.output
    assert "Fixed: repaired sqlite: the index was damaged" in fixed.output
    assert "✓ backend sqlite: 3 files" in fixed.output
    assert "✗" not in fixed.output
    assert list(index_path(config).parent.glob("memory.sqlite.damaged-*"))
    found = run("--config", str(config), "search", "Lisbon")
    assert "memory/2026-11-01.md" in found.output


def test_doctor_with_qmd_missing_names_the_install_command(
    write_workspace: WorkspaceWriter, write_config: ConfigWriter
) -> None:
    write_workspace()
    config = write_config(KEYWORD_ONLY + MISSING_QMD)
    result = run("--config", str(config), "doctor", "--fix")
    assert result.exit_code == 1
    assert "✗ backend qmd: " in result.output
    assert "    fix: run `bash scripts/install-qmd.sh`" in result.output
    assert "✓ backend sqlite" in result.output
    data = json.loads(run("--config", str(config), "doctor", "--json").output)
    assert data["ok"] is False
    assert [c["name"] for c in data["checks"] if not c["ok"]] == ["backend qmd"]


def test_reset_deletes_the_index_only_and_the_rebuild_uses_the_cache(
    write_workspace: WorkspaceWriter, write_config: ConfigWriter, hashing: str
) -> None:
    workspace = write_workspace()
    config = write_config(hashing)
    assert run("--config", str(config), "index").exit_code == 0
    markdown = {p: p.read_bytes() for p in workspace.rglob("*.md")}
    refused = run("--config", str(config), "reset", input="n\n")
    assert refused.exit_code == 1
    assert index_path(config).exists()
    result = run("--config", str(config), "reset", "--yes")
    assert result.exit_code == 0, result.output
    assert f"Removed {index_path(config)}" in result.output
    assert not index_path(config).exists()
    assert {p: p.read_bytes() for p in workspace.rglob("*.md")} == markdown
    assert (index_path(config).parent / "embedding-cache.sqlite").exists()
    rebuilt = json.loads(run("--config", str(config), "index", "--json").output)[0]
    assert (rebuilt["added"], rebuilt["embedded"]) == (3, 0)
    bad = run("--config", str(config), "reset", "--backend", "nope", "--yes")
    assert bad.exit_code == 2
    assert "no backend named 'nope' is installed (installed: " in bad.output


@pytest.mark.slow
def test_reset_removes_the_index_of_a_backend_taken_out_of_the_chain(
    write_workspace: WorkspaceWriter, write_config: ConfigWriter, hashing: str
) -> None:
    write_workspace()
    lance = write_config(hashing + '[router]\nchain = ["lancedb"]\n')
    assert run("--config", str(lance), "index").exit_code == 0
    folder = lance.parent / "state/agents/main/lancedb"
    assert any(folder.iterdir())
    config = write_config(hashing)  # the chain is back to SQLite alone
    assert run("--config", str(config), "index").exit_code == 0
    result = run("--config", str(config), "reset", "--backend", "lancedb", "--yes")
    assert result.exit_code == 0, result.output
    assert f"Removed {folder}" in result.output
    assert "not in the chain: nothing will rebuild it" in result.output
    assert not folder.exists()
    assert index_path(config).exists()  # the chain's own index is kept


def test_reset_through_the_library_refuses_an_unknown_name_before_deleting(
    write_workspace: WorkspaceWriter, write_config: ConfigWriter, hashing: str
) -> None:
    # The CLI and the library share one name check (Router.check_backend_names).
    write_workspace()
    config = write_config(hashing)
    assert run("--config", str(config), "index").exit_code == 0
    with Router.from_config(config) as router:
        with pytest.raises(NotFound) as caught:
            _doctor.reset(router, ["sqlite", "nope"])
        assert caught.value.key == "nope"
        assert "sqlite" in str(caught.value.hint)
    assert index_path(config).exists()  # "sqlite" came first and was kept all the same


def test_agents_lists_every_agent_with_size_and_health(
    config: Path,
) -> None:
    for agent in ("alpha", "beta"):
        assert run("--config", str(config), "--agent", agent, "index").exit_code == 0
    listed = run("--config", str(config), "agents")
    assert listed.exit_code == 0
    lines = listed.output.splitlines()
    assert [line.split()[0] for line in lines] == ["alpha", "beta"]
    assert all(" MiB  ok" in line for line in lines)
    data = json.loads(run("--config", str(config), "status", "--all-agents", "--json").output)
    assert [(a["id"], a["healthy"]) for a in data] == [("alpha", True), ("beta", True)]
    assert all(a["index_bytes"] > 0 for a in data)


# -- workspace checks --------------------------------------------------------------------


@pytest.mark.slow
def test_a_missing_workspace_is_an_error_and_keeps_the_index(
    write_workspace: WorkspaceWriter, write_config: ConfigWriter, tmp_path: Path
) -> None:
    write_workspace()
    config = write_config(KEYWORD_ONLY)
    assert run("--config", str(config), "index").exit_code == 0
    (tmp_path / "workspace").rename(tmp_path / "unmounted")
    result = run_process("--config", str(config), "index")
    assert result.returncode == 1
    lines = error_lines(result.stderr)
    assert "does not exist; nothing was indexed or removed" in lines[0]
    assert lines[1].startswith("Hint: create it")
    found = run_process("--config", str(config), "search", "--json", "Lisbon")
    data = json.loads(found.stdout)
    assert data["results"][0]["path"] == "memory/2026-11-01.md"  # the index was kept
    assert any("does not exist" in note for note in data["notes"])


def test_an_empty_workspace_is_a_warning_naming_the_path(
    write_config: ConfigWriter, tmp_path: Path
) -> None:
    (tmp_path / "workspace").mkdir()
    config = write_config(KEYWORD_ONLY)
    result = run_process("--config", str(config), "index")
    assert result.returncode == 0
    assert f"Warning: no memory files in {tmp_path / 'workspace'}" in result.stderr


def test_get_of_a_missing_file_says_so(config: Path) -> None:
    human = run_process("--config", str(config), "get", "memory/2099-01-01.md")
    assert human.returncode == 1
    lines = error_lines(human.stderr)
    assert "memory/2099-01-01.md does not exist in the workspace" in lines[0]
    assert lines[1].startswith("Hint: ")
    agent = run_process("--config", str(config), "get", "memory/2099-01-01.md", "--json")
    assert agent.returncode == 0
    assert json.loads(agent.stdout)["text"] == ""


# -- answers that explain themselves -----------------------------------------------------


def test_hits_under_min_score_are_counted_with_the_best_score(
    write_workspace: WorkspaceWriter, write_config: ConfigWriter, hashing: str
) -> None:
    write_workspace()
    # Vector-only answers: no keyword relaxation lets a weak hit through.
    config = write_config(hashing + "[query.hybrid]\nenabled = false\n")
    result = run("--config", str(config), "search", "Lisbon", "--min-score", "0.99")
    assert result.exit_code == 0
    assert "No matches." in result.output
    line = next(x for x in result.output.splitlines() if "scored below min_score" in x)
    count = int(line.split()[0])
    # Every note is a vector hit and none reaches 0.99; those sharing no word with the
    # query score 0 (they match nothing) and are not counted.
    every = json.loads(
        run("--config", str(config), "search", "Lisbon", "--min-score", "0", "--json").output
    )
    assert count == sum(1 for hit in every["results"] if hit["score"] > 0) >= 1
    assert " hit(s) scored below min_score 0.99 (best 0." in line
    assert "; see them with --min-score 0." in line
    shown = run("--config", str(config), "search", "Lisbon", "--min-score", line.split()[-1])
    assert "No matches." not in shown.output
    assert "memory/" in shown.output
    data = json.loads(
        run("--config", str(config), "search", "Lisbon", "--min-score", "0.99", "--json").output
    )
    assert data["results"] == []
    assert data["below_min_score"]["count"] == count
    assert 0 < data["below_min_score"]["best_score"] < 0.99
    assert data["below_min_score"]["min_score"] == 0.99


def test_a_multi_word_query_needs_no_quotes(config: Path) -> None:
    unquoted = run("--config", str(config), "search", "Lisbon", "hotel", "Alfama", "--json")
    quoted = run("--config", str(config), "search", "Lisbon hotel Alfama", "--json")
    assert unquoted.exit_code == 0
    assert json.loads(unquoted.output)["query"] == "Lisbon hotel Alfama"
    assert json.loads(unquoted.output)["results"] == json.loads(quoted.output)["results"]


# -- one indexer per agent ---------------------------------------------------------------


@contextlib.contextmanager
def indexing_elsewhere(config: Path) -> Iterator[None]:
    """Hold the agent's index lock the way another process's ``index`` does."""
    path = config.parent / "state/agents/main/sqlite/index.lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        os.write(fd, b"4242")
        yield
    finally:
        os.close(fd)


def test_a_search_during_another_index_answers_from_the_existing_index(config: Path) -> None:
    assert run("--config", str(config), "index").exit_code == 0
    (config.parent / "workspace/memory/new.md").write_text("# new\n\nLisbon again\n")
    with indexing_elsewhere(config):
        result = run("--config", str(config), "search", "Lisbon", "--json")
        waited = run("--config", str(config), "index", "--wait", "0.2")
    data = json.loads(result.output)
    assert data["results"][0]["path"] == "memory/2026-11-01.md"
    assert any("process 4242 is already building the sqlite index" in n for n in data["notes"])
    assert not list(index_path(config).parent.glob("memory.sqlite.tmp-*"))
    assert waited.exit_code == 1
    busy = "Error: process 4242 is already building the sqlite index of agent 'main'"
    assert busy in waited.output
    assert "Hint: let it finish" in waited.output


@pytest.mark.slow
def test_two_concurrent_index_processes_build_once(
    write_workspace: WorkspaceWriter, write_config: ConfigWriter, monkeypatch: pytest.MonkeyPatch
) -> None:
    notes = {f"memory/n-{i:03d}.md": f"# n {i}\n\nword{i} and more\n" for i in range(40)}
    write_workspace(notes)
    config = write_config('[embedding]\nprovider = "slow"\n')
    monkeypatch.setenv("MEMORY_ROUTER_PLUGIN_MODULES", "slow_embedder_plugin")
    monkeypatch.setenv("PYTHONPATH", str(Path(__file__).resolve().parents[2]))
    monkeypatch.setenv("SLOW_EMBED_S", "4")
    args = [sys.executable, "-m", "memory_router", "--config", str(config), "index", "--json"]
    state = config.parent / "state/agents/main"
    first = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        # The first process is embedding inside its rebuild (its temporary file exists).
        while not list(state.glob("memory.sqlite.tmp-*")) and time.monotonic() < deadline:
            time.sleep(0.02)
        second = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        out2, err2 = second.communicate(timeout=120)
        out1, err1 = first.communicate(timeout=120)
    finally:
        first.kill()
    assert first.returncode == 0, err1
    assert second.returncode == 0, err2
    built, waited = json.loads(out1)[0], json.loads(out2)[0]
    assert (built["full_rebuild"], built["added"]) == (True, 40)
    assert (waited["full_rebuild"], waited["added"], waited["embedded"]) == (False, 0, 0)
    assert waited["unchanged"] == 40
    assert waited["chunks"] == built["chunks"] == 40
    assert not list(state.glob("memory.sqlite.tmp-*"))


@pytest.mark.slow
@pytest.mark.parametrize("command", ["search", "index"])
def test_ctrl_c_during_a_first_index_build_ends_it_at_once_and_loses_nothing(
    write_workspace: WorkspaceWriter,
    write_config: ConfigWriter,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    command: str,
) -> None:
    # A first `search` builds the index on a thread of its own; Ctrl-C used to unwind the
    # main thread and then wait, closing the index, for the rest of the build (6 min for
    # a 1,500-note workspace). The sync now stops at its next progress report.
    notes = {f"memory/n-{i:03d}.md": f"# n {i}\n\nword{i} and more\n" for i in range(40)}
    write_workspace(notes)
    config = write_config('[embedding]\nprovider = "slow"\n')
    log = tmp_path / "batches.log"
    monkeypatch.setenv("MEMORY_ROUTER_PLUGIN_MODULES", "slow_embedder_plugin")
    paths = [str(Path(__file__).resolve().parents[2]), os.environ.get("PYTHONPATH", "")]
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in paths if p))
    monkeypatch.setenv("SLOW_EMBED_S", "0.5")
    monkeypatch.setenv("SLOW_BATCH_TOKENS", "1")  # one chunk a batch: 40 batches, 20 s
    monkeypatch.setenv("SLOW_EMBED_LOG", str(log))
    args = [sys.executable, "-m", "memory_router", "--config", str(config), command]
    process = subprocess.Popen(
        [*args, *(["word7"] if command == "search" else [])],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while not (log.is_file() and log.read_text()) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert log.is_file(), "the build never started embedding"
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=60)
    finally:
        process.kill()
        process.communicate()
    assert process.returncode == 130, err
    assert "Interrupted." in err
    assert len(log.read_text().split()) < 40  # stopped, not run to the end
    state = config.parent / "state/agents/main"
    assert not list(state.glob("memory.sqlite.tmp-*"))
    monkeypatch.setenv("SLOW_EMBED_S", "0")
    again = subprocess.run(
        [*args[:-1], "index", "--json"], capture_output=True, text=True, timeout=120, check=False
    )
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)[0]["chunks"] == 40


# -- the README's quick start ------------------------------------------------------------

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.slow
def test_the_readme_python_example_runs_as_written(tmp_path: Path) -> None:
    """Pasted into ``.venv/bin/python`` at the repository root, it prints the Lisbon note."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    code = readme.split("```python\n", 1)[1].split("```", 1)[0]
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    ran = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )
    assert ran.returncode == 0, ran.stderr
    assert " memory/2026-11-01.md:" in ran.stdout.splitlines()[0], ran.stdout


def test_the_demo_ends_with_what_to_type_next() -> None:
    script = (ROOT / "examples" / "demo.sh").read_text(encoding="utf-8")
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for line in ("source .venv/bin/activate", "export MEMORY_ROUTER_CONFIG=examples/demo.toml"):
        assert line in script
        assert line in readme
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    demo_install = re.search(
        r"^\$\(DEMO_STAMP\):.*\n\t.*pip install -e '\.\[([^]]*)\]'", makefile, re.M
    )
    assert demo_install is not None
    assert "watch" in demo_install[1].split(",")  # `memory-router watch` works after make demo


# -- every error a user can fix carries a hint --------------------------------------------


def test_a_bogus_mode_is_refused_by_the_backend_that_would_answer(
    config: Path, write_config: ConfigWriter
) -> None:
    bogus = run_process("--config", str(config), "search", "Lisbon", "--mode", "bogus")
    assert bogus.returncode == 1
    lines = error_lines(bogus.stderr)
    assert "sqlite has no search mode 'bogus'" in lines[0]
    assert lines[1] == "Hint: use one of hybrid, keyword, vector, or leave --mode out"
    keyword = run("--config", str(config), "search", "Lisbon", "--mode", "keyword", "--json")
    assert json.loads(keyword.output)["mode"] == "keyword"
    qmd = write_config(KEYWORD_ONLY + MISSING_QMD, name="qmd.toml")
    refused = run("--config", str(qmd), "search", "Lisbon", "--mode", "bogus")
    assert refused.exit_code == 1
    assert "qmd has no search mode 'bogus'" in refused.output
    assert "use one of search, vsearch, query" in refused.output
    assert "Fallback" not in refused.output  # refused, not treated as a backend failure


@pytest.mark.slow
def test_user_fixable_errors_carry_a_hint(
    config: Path, write_config: ConfigWriter, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    missing = run_process("--config", str(tmp_path / "nope.toml"), "status")
    assert error_lines(missing.stderr)[1].startswith("Hint: check the path")
    unknown = run_process("--config", str(config), "forget", "e-does-not-exist")
    assert error_lines(unknown.stderr)[1] == (
        f"Hint: `memory-router --config {config} entries` lists the ids of the stored entries"
    )
    for name in ("OPENAI_API_KEY",):
        monkeypatch.delenv(name, raising=False)
    openai = write_config('[embedding]\nprovider = "openai"\n', name="openai.toml")
    keyless = run_process("--config", str(openai), "index")
    assert keyless.returncode == 1
    hint = next(line for line in keyless.stderr.splitlines() if line.startswith("Hint: "))
    assert "export OPENAI_API_KEY=" in hint
