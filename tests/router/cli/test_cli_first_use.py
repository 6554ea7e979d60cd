"""What a fresh clone's user trial found (issue: ops fixes), as CLI-level regression tests:
a mistyped workspace must be loud everywhere and lose nothing; binary and non-UTF-8 files
in memory/ are reported, the binary ones left out; ``get --from`` past the end says so.
Real SQLite files, the real CLI in subprocesses where exit codes and stderr matter.
"""

from __future__ import annotations

import json
import random
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest
from test_cli_ops import run_process

pytestmark = pytest.mark.slow

ConfigWriter = Callable[..., Path]
WorkspaceWriter = Callable[..., Path]
KEYWORD_ONLY = '[embedding]\nprovider = "none"\n[query]\nmin_score = 0.0\n'
LATIN_1 = "# Café\n\nRendez-vous chez Renée au café Müller, naïve question.\n".encode("latin-1")


run = run_process  # the CLI as a user runs it: its own process, exit code and stderr


def chunk_paths(config: Path) -> list[str]:
    index = config.parent / "state/agents/main/memory.sqlite"
    with sqlite3.connect(index) as db:
        return sorted({row[0] for row in db.execute("SELECT path FROM chunks")})


@pytest.fixture
def moved(write_workspace: WorkspaceWriter, write_config: ConfigWriter, tmp_path: Path) -> Path:
    """A config indexed over a workspace, then pointed at a folder that does not exist."""
    write_workspace()
    config = write_config(KEYWORD_ONLY)
    assert run("--config", str(config), "index").returncode == 0
    text = config.read_text().replace(str(tmp_path / "workspace"), str(tmp_path / "nope"))
    config.write_text(text)
    return config


# -- a workspace that is not there ---------------------------------------------------------


def test_search_prints_why_its_answer_is_stale_after_the_hits(moved: Path) -> None:
    result = run("--config", str(moved), "search", "Lisbon")
    assert result.returncode == 0
    assert "memory/2026-11-01.md" in result.stdout  # the index built before still answers
    notes = [line for line in result.stderr.splitlines() if line.startswith("Note: ")]
    assert len(notes) == 1, result.stderr
    assert "the workspace" in notes[0]
    assert "nope does not exist" in notes[0]
    assert f"fix `workspace` in {moved}" in notes[0]  # and what to do about it


def test_status_says_the_workspace_is_missing_and_exits_1(moved: Path, tmp_path: Path) -> None:
    result = run("--config", str(moved), "status")
    assert result.returncode == 1
    lines = result.stdout.splitlines()
    assert lines[1] == f"Workspace: {tmp_path / 'nope'}"
    assert lines[2].startswith("  Warning: it cannot be read")
    assert "Sources: no memory files on disk" in lines
    assert "none file(s)" not in result.stdout
    errors = result.stderr.splitlines()
    assert errors[0].startswith("Error: ")
    assert "nope does not exist" in errors[0]
    assert errors[1].startswith("Hint: create it")
    data = json.loads(run("--config", str(moved), "status", "--json").stdout)
    assert "does not exist" in data["workspace_error"]
    assert data["can_answer"] is True  # the old index still answers


def test_get_blames_the_workspace_not_the_file(moved: Path) -> None:
    result = run("--config", str(moved), "get", "memory/2026-11-01.md")
    assert result.returncode == 1
    assert "nope does not exist" in result.stderr
    assert "search WORDS shows the paths" not in result.stderr  # search shows hits there
    assert f"fix `workspace` in {moved}" in result.stderr


def test_doctor_says_to_fix_the_workspace_and_fix_deletes_nothing(moved: Path) -> None:
    result = run("--config", str(moved), "doctor")
    assert result.returncode == 1
    lines = result.stdout.splitlines()
    backend = lines.index(next(x for x in lines if x.startswith("✗ backend sqlite")))
    assert "built for another workspace or other memory paths" in lines[backend]
    assert lines[backend + 1].startswith(f"    fix: fix `workspace` in {moved} or create")
    assert f"then memory-router --config {moved} index --backend sqlite" in lines[backend + 1]
    assert run("--config", str(moved), "doctor", "--fix").returncode == 1
    assert run("--config", str(moved), "index").returncode == 1
    assert chunk_paths(moved) == [  # searches, status, doctor --fix, index: all kept
        "MEMORY.md",
        "memory/2026-11-01.md",
        "memory/2026-11-02.md",
    ]


def test_a_missing_workspace_is_blamed_on_whoever_named_it(
    write_workspace: WorkspaceWriter,
    write_config: ConfigWriter,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    write_workspace()
    config = write_config(KEYWORD_ONLY)  # its own `workspace` is fine
    option = run("--config", str(config), "--workspace", str(tmp_path / "typo"), "index")
    assert option.returncode == 1
    assert "typo does not exist" in option.stderr
    assert str(config) not in option.stderr  # the file is not at fault
    assert "pass --workspace with a folder that exists" in option.stderr
    monkeypatch.setenv("MEMORY_ROUTER_WORKSPACE", f'"{tmp_path / "typo"}"')
    variable = run("--config", str(config), "index")
    assert variable.returncode == 1
    assert "<env MEMORY_ROUTER_WORKSPACE>" in variable.stderr
    assert "fix or unset $MEMORY_ROUTER_WORKSPACE" in variable.stderr


# -- files that are not UTF-8 text ------------------------------------------------------


@pytest.fixture
def odd_files(write_workspace: WorkspaceWriter, write_config: ConfigWriter) -> Path:
    workspace = write_workspace()
    noise = random.Random(7).randbytes(20_000)
    (workspace / "memory/garbage.md").write_bytes(noise)
    (workspace / "memory/latin.md").write_bytes(LATIN_1)
    return write_config(KEYWORD_ONLY)


def test_index_skips_binary_reads_latin_1_and_says_so(odd_files: Path) -> None:
    result = run("--config", str(odd_files), "index")
    assert result.returncode == 0, result.stderr
    assert "4 added" in result.stdout
    warnings = [line for line in result.stderr.splitlines() if line.startswith("Warning: ")]
    assert warnings == [
        "Warning: memory/garbage.md: looks binary (NUL bytes); not indexed",
        "Warning: memory/latin.md: not valid UTF-8; read as Windows-1252 (cp1252)",
    ]
    assert "memory/garbage.md" not in chunk_paths(odd_files)
    found = json.loads(run("--config", str(odd_files), "search", "--json", "Renée").stdout)
    assert [hit["path"] for hit in found["results"]] == ["memory/latin.md"]
    assert "Renée au café Müller" in found["results"][0]["snippet"]
    reports = json.loads(run("--config", str(odd_files), "index", "--json").stdout)
    assert len(reports[0]["warnings"]) == 2


def test_status_doctor_and_get_report_the_odd_files(odd_files: Path) -> None:
    assert run("--config", str(odd_files), "index").returncode == 0
    status = run("--config", str(odd_files), "status").stdout.splitlines()
    assert "Sources: 4 memory file(s) on disk" in status
    assert "  Warning: memory/garbage.md: looks binary (NUL bytes); not indexed" in status
    doctor = run("--config", str(odd_files), "doctor")
    assert doctor.returncode == 1  # a file left out is something to fix
    lines = doctor.stdout.splitlines()
    assert "✗ memory files: memory/garbage.md: looks binary (NUL bytes); not indexed" in lines
    assert any(x.startswith("    fix: move binary files out of the memory folders") for x in lines)
    assert "✓ file encodings: memory/latin.md: not valid UTF-8; read as Windows-1252" in (
        doctor.stdout
    )
    assert any(x.startswith("✓ backend sqlite: 4 files") for x in lines)
    get = run("--config", str(odd_files), "get", "memory/latin.md")
    assert get.stdout.splitlines()[2] == "Rendez-vous chez Renée au café Müller, naïve question."
    binary = run("--config", str(odd_files), "get", "memory/garbage.md")
    assert binary.returncode == 1
    assert "looks binary" in binary.stderr
    assert len(binary.stdout) == 0  # nothing raw reaches the terminal


def test_a_binary_file_already_indexed_leaves_the_index(
    write_workspace: WorkspaceWriter, write_config: ConfigWriter
) -> None:
    workspace = write_workspace()
    config = write_config(KEYWORD_ONLY)
    assert run("--config", str(config), "index").returncode == 0
    (workspace / "memory/2026-11-02.md").write_bytes(b"PK\x03\x04\x00\x00" + bytes(range(256)))
    result = run("--config", str(config), "index")
    assert "1 removed" in result.stdout
    assert "memory/2026-11-02.md" not in chunk_paths(config)


def test_valid_utf_8_with_nul_bytes_is_binary_and_utf_16_is_text(
    write_workspace: WorkspaceWriter, write_config: ConfigWriter
) -> None:
    # A note whose tail a crash zero-filled is valid UTF-8, NULs and all; a Notepad
    # UTF-16 note holds NULs in every ASCII character and is text.
    workspace = write_workspace()
    note = "# Boiler\n\nThe boiler was serviced on 3 March by Kessler Heating.\n"
    (workspace / "memory/zeroed.md").write_bytes(note.encode() + bytes(4096))
    (workspace / "memory/notepad.md").write_bytes(
        "# Notepad\n\nThe quince jam recipe needs lemon peel.\n".encode("utf-16")
    )
    config = write_config(KEYWORD_ONLY)
    result = run("--config", str(config), "index")
    assert result.returncode == 0, result.stderr
    assert "4 added" in result.stdout
    warnings = [line for line in result.stderr.splitlines() if line.startswith("Warning: ")]
    assert warnings == [
        "Warning: memory/notepad.md: UTF-16; read as UTF-16",
        "Warning: memory/zeroed.md: looks binary (NUL bytes); not indexed",
    ]
    assert chunk_paths(config) == [
        "MEMORY.md",
        "memory/2026-11-01.md",
        "memory/2026-11-02.md",
        "memory/notepad.md",
    ]
    found = json.loads(run("--config", str(config), "search", "--json", "quince").stdout)
    assert [hit["path"] for hit in found["results"]] == ["memory/notepad.md"]
    status = run("--config", str(config), "status").stdout.splitlines()
    assert "  Warning: memory/zeroed.md: looks binary (NUL bytes); not indexed" in status
    doctor = run("--config", str(config), "doctor")
    assert doctor.returncode == 1
    assert "✗ memory files: memory/zeroed.md: looks binary (NUL bytes); not indexed" in (
        doctor.stdout.splitlines()
    )


def test_a_failed_index_does_not_claim_the_workspace_is_empty(
    write_workspace: WorkspaceWriter, write_config: ConfigWriter, tmp_path: Path
) -> None:
    write_workspace()
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the index folder should be\n")
    config = write_config(f'{KEYWORD_ONLY}[backends.sqlite]\npath = "{blocked}/memory.sqlite"\n')
    result = run("--config", str(config), "index")
    assert result.returncode == 1
    assert result.stderr.startswith(f"Error: sqlite: cannot write the index folder {blocked}")
    assert "no memory files" not in result.stderr  # the workspace has three


# -- get --from past the end ---------------------------------------------------------------


def test_get_from_past_the_end_says_how_many_lines_there_are(
    write_workspace: WorkspaceWriter, write_config: ConfigWriter
) -> None:
    write_workspace({"memory/x.md": "".join(f"line {n}\n" for n in range(1, 17))})
    config = write_config(KEYWORD_ONLY)
    human = run("--config", str(config), "get", "memory/x.md", "--from", "100")
    assert human.returncode == 1
    assert human.stderr.splitlines() == [
        "Error: memory/x.md has only 16 line(s); line 100 is past its end",
        "Hint: pick --from between 1 and 16",
    ]
    cited = run("--config", str(config), "get", "memory/x.md#L20-L22")
    assert cited.returncode == 1
    assert "memory/x.md has only 16 line(s); line 20 is past its end" in cited.stderr
    last = run("--config", str(config), "get", "memory/x.md", "--from", "16")
    assert (last.returncode, last.stdout) == (0, "line 16\n")
    agent = run("--config", str(config), "get", "memory/x.md", "--from", "100", "--json")
    assert agent.returncode == 0
    assert json.loads(agent.stdout)["text"] == ""  # OpenClaw's shape for agents
