"""``memory-router migrate`` and ``memory-router config from-openclaw`` as a user runs them."""

from __future__ import annotations

import json
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from memory_router import testing
from memory_router.cli import build_cli
from memory_router.kit import get_plugin_manager


def run(args: Sequence[str]) -> Result:
    return CliRunner().invoke(build_cli(get_plugin_manager(plugins=[testing])), list(args))


@pytest.fixture
def setup(write_workspace, write_config) -> tuple[Path, Path]:  # type: ignore[no-untyped-def]
    """A config with the hash embedder, its index built and copied to ``old.sqlite``."""
    workspace = write_workspace()
    config = write_config('[embedding]\nprovider = "hash"\n', workspace=workspace)
    assert run(["--config", str(config), "index"]).exit_code == 0
    old = config.parent / "old.sqlite"
    shutil.copyfile(config.parent / "state" / "agents" / "main" / "memory.sqlite", old)
    return config, old


def test_migrate_prints_the_mode_counts_and_verify_summary(setup: tuple[Path, Path]) -> None:
    config, old = setup
    result = run(["--config", str(config), "migrate", "--from-path", str(old), "--verify", "5"])
    assert result.exit_code == 0, result.output
    assert "-> sqlite: reuse (fingerprints match: vectors copied)" in result.output
    assert "0 embedded, 0 from cache" in result.output
    assert "top-10 overlap 1.000 · same top hit 100%" in result.output
    as_json = run(["--config", str(config), "migrate", "--from-path", str(old), "--json"])
    report = json.loads(as_json.output)
    assert (report["mode"], report["embedded"], report["verify"]) == ("reuse", 0, None)


def test_min_overlap_sets_the_exit_code(setup: tuple[Path, Path], tmp_path: Path) -> None:
    config, old = setup
    queries = tmp_path / "queries.txt"
    queries.write_text("green tea\nLisbon conference\n\nflaky CI timezone\n")
    args = ["--config", str(config), "migrate", "--from-path", str(old), "--queries", str(queries)]
    assert run([*args, "--min-overlap", "1.0"]).exit_code == 0
    with sqlite3.connect(old) as db:  # change the source: the target no longer agrees
        # Both tables, so the index stays consistent (a lone chunks delete is damage).
        db.execute("DELETE FROM chunks WHERE path LIKE 'memory/%'")
        db.execute("DELETE FROM chunks_fts WHERE path LIKE 'memory/%'")
    db.close()
    failed = run([*args, "--verify-only", "--min-overlap", "0.99"])
    assert failed.exit_code == 1
    assert "Error: verification failed: top-10 overlap" in failed.output
    assert "is below --min-overlap 0.99" in failed.output


def test_qmd_as_a_source_is_refused_with_the_way_forward(setup: tuple[Path, Path]) -> None:
    config, _ = setup
    result = run(["--config", str(config), "migrate", "--from", "qmd", "--to", "sqlite"])
    assert result.exit_code == 1
    assert "Error: backend 'qmd' cannot be migrated from" in result.output
    assert "Hint: migrate from the Markdown instead" in result.output


def test_an_unknown_target_is_refused_with_the_installed_backends(
    setup: tuple[Path, Path],
) -> None:
    config, _ = setup
    result = run(["--config", str(config), "migrate", "--from", "sqlite", "--to", "nope"])
    assert result.exit_code == 1
    assert "Error: no backend named 'nope'" in result.output
    assert "Hint: use one of: " in result.output
    assert "sqlite" in result.output.split("Hint:")[1]


def test_migrate_needs_exactly_one_source(setup: tuple[Path, Path]) -> None:
    config, old = setup
    result = run(["--config", str(config), "migrate"])
    assert result.exit_code == 2
    assert "exactly one of --from NAME and --from-path PATH" in result.output
    resume = run(["--config", str(config), "migrate", "--from-path", str(old), "--resume"])
    assert resume.exit_code == 1
    assert "no interrupted migration into 'sqlite' to resume" in resume.output


def test_config_from_openclaw_writes_toml_and_names_the_keys_left(tmp_path: Path) -> None:
    source = tmp_path / "openclaw.json"
    source.write_text(
        "{ agents: { defaults: { memorySearch: { provider: 'local', chunking: { tokens: 256 },"
        " remote: { batch: { enabled: true } }, whatever: 1, } } },"
        " memory: { backend: 'builtin' } }"
    )
    out = tmp_path / "memory-router.toml"
    result = run(["config", "from-openclaw", str(source), "-o", str(out)])
    assert result.exit_code == 0, result.output
    text = out.read_text()
    assert 'provider = "local"' in text
    assert "[chunking]\ntokens = 256" in text
    assert 'chain = ["sqlite"]' in text
    assert "not carried over: agents.defaults.memorySearch.whatever: unknown key" in result.output
    assert "remote.batch.enabled: provider batch APIs are not supported" in result.output
    again = run(["config", "from-openclaw", str(source), "-o", str(out)])
    assert again.exit_code == 1
    assert "exists" in again.output
    broken = tmp_path / "broken.json"
    broken.write_text("{ agents: ")
    bad = run(["config", "from-openclaw", str(broken)])
    assert bad.exit_code == 1
    assert "is not valid JSON5: unexpected end of text at line 1" in bad.output


def test_migrate_into_an_index_file_with_to_path(setup: tuple[Path, Path]) -> None:
    config, old = setup
    backup = config.parent / "backup.sqlite"
    result = run(["--config", str(config), "migrate", "--from", "sqlite", "--to-path", str(backup)])
    assert result.exit_code == 0, result.output
    assert f"-> file:{backup.resolve()}: reuse" in result.output
    back = run(["--config", str(config), "migrate", "--from-path", str(backup), "--verify", "5"])
    assert "top-10 overlap 1.000" in back.output, back.output
    both = run(["--config", str(config), "migrate", "--from-path", str(old), "--to", "sqlite",
                "--to-path", str(backup)])  # fmt: skip
    assert both.exit_code == 2
    assert "give at most one of --to NAME and --to-path PATH" in both.output
    folder = run(["--config", str(config), "migrate", "--from", "sqlite", "--to-path",
                  str(config.parent)])  # fmt: skip
    assert folder.exit_code == 1
    assert "is a folder, not an index file" in folder.output
    assert "Hint: give --to-path the file to write" in folder.output


@pytest.mark.slow
def test_an_interrupted_migration_says_how_to_continue_and_doctor_shows_it(
    write_workspace: Callable[..., Path],
    write_config: Callable[..., Path],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Keyword-only first, then a (slow) provider: the migration re-embeds batch by batch,
    # so Ctrl-C surely lands while it copies.
    write_workspace()
    keyword = write_config('[embedding]\nprovider = "none"\n')
    assert run(["--config", str(keyword), "index"]).exit_code == 0
    config = write_config('[embedding]\nprovider = "slow"\n', name="slow.toml")
    monkeypatch.setenv("MEMORY_ROUTER_PLUGIN_MODULES", "slow_embedder_plugin")
    monkeypatch.setenv("PYTHONPATH", str(Path(__file__).resolve().parents[2]))
    monkeypatch.setenv("SLOW_EMBED_S", "2")
    backup = config.parent / "backup.sqlite"
    args = [sys.executable, "-m", "memory_router", "--config", str(config), "migrate"]
    args += ["--from", "sqlite", "--to-path", str(backup), "--batch-size", "1"]
    checkpoints = config.parent / "state/agents/main/migrations"
    child = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not any(
            json.loads(p.read_text()).get("done") for p in checkpoints.glob("*.json")
        ):
            time.sleep(0.05)
        child.send_signal(signal.SIGINT)  # embedding its second batch for 2 s
        _, err = child.communicate(timeout=60)
    finally:
        child.kill()
    assert child.returncode == 130
    assert err.splitlines()[-2:] == [
        "Interrupted.",
        "Hint: run the same command with --resume to continue where it stopped (1 of 5"
        " chunks are written)",
    ]
    monkeypatch.setenv("SLOW_EMBED_S", "0")
    doctor = [sys.executable, "-m", "memory_router", "--config", str(config), "doctor"]
    found = subprocess.run(doctor, capture_output=True, text=True, timeout=120)
    assert found.returncode == 1
    lines = found.stdout.splitlines()
    at = lines.index(
        f"✗ migration into file:{backup}: unfinished: from sqlite (re-embed), 1 of 5 chunks"
        " written (interrupted); its copy is kept beside the live index"
    )
    assert lines[at + 1] == (
        f"    fix: memory-router --config {config} migrate --from sqlite --to-path {backup}"
        " --resume (without --resume it starts clean)"
    )
    resumed = subprocess.run([*args, "--resume"], capture_output=True, text=True, timeout=120)
    assert resumed.returncode == 0, resumed.stderr
    assert "4 written · 1 already written before the interruption" in resumed.stdout
    after = subprocess.run(doctor, capture_output=True, text=True, timeout=120)
    assert "migration into" not in after.stdout
