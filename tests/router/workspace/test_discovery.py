"""Which files are memory (reference §1.2), on real directory trees in tmp_path."""

from __future__ import annotations

import hashlib
import os
import time
from pathlib import Path

import pytest

from memory_router import Config
from memory_router._config.config import EntriesConfig
from memory_router._workspace.discovery import (
    IGNORED_DIRS,
    discover,
    is_memory_path,
    list_memory_files,
    relative_path,
)


def write(path: Path, text: str = "note\n") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def rels(workspace: Path, files: list[str]) -> list[str]:
    return [relative_path(workspace, Path(f)) for f in files]


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    workspace = tmp_path / "ws"
    write(workspace / "MEMORY.md")
    write(workspace / "memory.md")
    write(workspace / "memory" / "2026-01-01.md")
    write(workspace / "memory" / "deep" / "er" / "x.md")
    write(workspace / "README.md")  # not a memory file
    write(workspace / "memory" / "notes.txt")  # not Markdown
    write(workspace / "memory" / "upper.MD")  # the extension is case-sensitive
    return workspace


def test_lists_memory_files_sorted(ws: Path) -> None:
    assert rels(ws, list_memory_files(ws, [])) == [
        "MEMORY.md",
        "memory.md",
        "memory/2026-01-01.md",
        "memory/deep/er/x.md",
    ]


def test_missing_workspace_and_extra_paths_are_just_absent(tmp_path: Path) -> None:
    assert list_memory_files(tmp_path / "nope", [tmp_path / "missing", Path("rel/gone")]) == []


def test_symlinked_files_and_directories_are_skipped(ws: Path, tmp_path: Path) -> None:
    outside = write(tmp_path / "outside" / "secret.md")
    (ws / "memory" / "link.md").symlink_to(outside)
    (ws / "memory" / "linkdir").symlink_to(outside.parent, target_is_directory=True)
    (ws / "memory" / "dangling.md").symlink_to(tmp_path / "nowhere.md")
    found = rels(ws, list_memory_files(ws, []))
    assert not any("link" in f or "dangling" in f or "secret" in f for f in found)


def test_symlinked_memory_dir_and_memory_file_are_skipped(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    real = tmp_path / "real"
    write(real / "a.md")
    ws.mkdir()
    (ws / "memory").symlink_to(real, target_is_directory=True)
    (ws / "MEMORY.md").symlink_to(real / "a.md")
    assert list_memory_files(ws, []) == []


def test_symlinked_extra_path_is_skipped(ws: Path, tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    write(notes / "n.md")
    (tmp_path / "notes-link").symlink_to(notes, target_is_directory=True)
    found = rels(ws, list_memory_files(ws, [tmp_path / "notes-link"]))
    assert "../notes-link/n.md" not in found


def test_ignored_directories_are_not_descended(ws: Path) -> None:
    for name in IGNORED_DIRS:
        write(ws / "memory" / name / "hidden.md")
    assert {".git", "node_modules", ".venv", "__pycache__", ".mypy_cache"} <= IGNORED_DIRS
    assert not any("hidden" in f for f in rels(ws, list_memory_files(ws, [])))


def test_fifo_and_directories_named_md_are_skipped(ws: Path) -> None:
    os.mkfifo(ws / "memory" / "pipe.md")
    write(ws / "memory" / "dir.md" / "inner.md")
    found = rels(ws, list_memory_files(ws, []))
    assert "memory/pipe.md" not in found
    assert "memory/dir.md" not in found
    assert "memory/dir.md/inner.md" in found  # a directory is walked whatever its name


def test_extra_paths_directory_and_file_outside_the_workspace(ws: Path, tmp_path: Path) -> None:
    write(tmp_path / "notes" / "a.md")
    write(tmp_path / "notes" / "sub" / "b.md")
    write(tmp_path / "notes" / "c.txt")
    single = write(tmp_path / "single.md")
    not_md = write(tmp_path / "single.txt")
    found = rels(ws, list_memory_files(ws, [tmp_path / "notes", single, not_md]))
    assert "../notes/a.md" in found
    assert "../notes/sub/b.md" in found
    assert "../single.md" in found
    assert not any(f.endswith(".txt") for f in found)


def test_relative_extra_paths_are_relative_to_the_workspace(ws: Path) -> None:
    write(ws / "docs" / "guide.md")
    assert "docs/guide.md" in rels(ws, list_memory_files(ws, [Path("docs")]))


def test_a_file_reached_twice_is_listed_once(ws: Path) -> None:
    found = list_memory_files(ws, [ws / "memory", ws / "memory" / "deep", ws / "MEMORY.md"])
    names = rels(ws, found)
    assert len(names) == len(set(names)) == 4


def test_duplicate_through_a_symlinked_workspace_is_listed_once(tmp_path: Path) -> None:
    real = tmp_path / "real-ws"
    write(real / "memory" / "a.md")
    alias = tmp_path / "alias-ws"
    alias.symlink_to(real, target_is_directory=True)
    # The workspace is reached through a link; the extra path names the same tree directly.
    found = list_memory_files(alias, [real / "memory"])
    assert len(found) == 1


@pytest.mark.parametrize(
    ("rel", "expected"),
    [
        ("MEMORY.md", True),
        ("memory.md", True),
        ("DREAMS.md", True),
        ("memory/a.md", True),
        ("memory/x/y.md", True),
        ("./memory/a.md", True),
        ("README.md", False),
        ("memory", False),
        ("memory/", False),
        ("memoryx/a.md", False),
        ("../memory/a.md", False),
        ("memory/../../etc.md", False),
        ("/memory/a.md", False),
        ("", False),
    ],
)
def test_is_memory_path(rel: str, expected: bool) -> None:
    assert is_memory_path(rel) is expected


def test_relative_path_uses_forward_slashes_and_dotdot(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    assert relative_path(ws, ws / "memory" / "a.md") == "memory/a.md"
    assert relative_path(ws, tmp_path / "notes" / "b.md") == "../notes/b.md"


def test_discover_documents_records(ws: Path, tmp_path: Path) -> None:
    write(ws / "memory" / "entries.md", "# Memory entries\n")
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "raw.md").write_bytes(b"caf\xe9\n")
    config = Config(workspace=str(ws), extra_paths=(str(tmp_path / "notes"),))
    docs = {d.path: d for d in discover(config).documents}
    assert list(docs) == sorted(docs)
    assert docs["memory/entries.md"].kind == "journal"
    assert docs["MEMORY.md"].kind == "markdown"
    assert all(d.source == "memory" for d in docs.values())
    raw = docs["../notes/raw.md"]
    assert raw.abs_path == str(tmp_path / "notes" / "raw.md")
    assert raw.size == 5
    assert raw.mtime == (tmp_path / "notes" / "raw.md").stat().st_mtime
    # Invalid UTF-8 is hashed as decoded with the fallback (cp1252: what gets chunked).
    assert raw.hash == hashlib.sha256("café\n".encode()).hexdigest()
    assert docs["MEMORY.md"].hash == hashlib.sha256(b"note\n").hexdigest()


def test_journal_outside_memory_dir_is_still_discovered(ws: Path) -> None:
    write(ws / "journal.md", "- x\n")
    config = Config(workspace=str(ws), entries=EntriesConfig(path="journal.md"))
    docs = {d.path: d for d in discover(config).documents}
    assert docs["journal.md"].kind == "journal"


def test_known_hashes_are_reused_when_mtime_and_size_match(ws: Path) -> None:
    config = Config(workspace=str(ws))
    docs = discover(config).documents
    known = {d.path: (d.mtime, d.size, "cached-hash") for d in docs}
    again = {d.path: d for d in discover(config, known).documents}
    assert {d.hash for d in again.values()} == {"cached-hash"}
    # A changed size means the file is read and hashed again.
    write(ws / "MEMORY.md", "changed\n")
    again = {d.path: d for d in discover(config, known).documents}
    assert again["MEMORY.md"].hash == hashlib.sha256(b"changed\n").hexdigest()
    assert again["memory.md"].hash == "cached-hash"


def test_a_removed_file_disappears_even_with_a_known_hash(ws: Path) -> None:
    config = Config(workspace=str(ws))
    known = {"MEMORY.md": (0.0, 0, "stale")}
    (ws / "MEMORY.md").unlink()
    assert "MEMORY.md" not in {d.path for d in discover(config, known).documents}


@pytest.mark.slow
def test_ten_thousand_files_are_discovered_quickly(tmp_path: Path) -> None:
    ws = tmp_path / "big"
    for i in range(10_000):
        write(ws / "memory" / f"d{i % 100}" / f"n{i}.md", f"# note {i}\n" + "words " * 50)
    config = Config(workspace=str(ws))
    started = time.perf_counter()
    docs = discover(config).documents
    cold = time.perf_counter() - started
    known = {d.path: (d.mtime, d.size, d.hash) for d in docs}
    started = time.perf_counter()
    again = discover(config, known).documents
    warm = time.perf_counter() - started
    assert len(docs) == 10_000
    assert again == docs
    # Measured ~0.12 s (hashing every file) and ~0.06 s (known hashes); the bounds leave
    # room for a loaded machine while still catching an accidental quadratic walk.
    assert cold < 2.0
    assert warm < 1.0
