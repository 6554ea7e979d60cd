"""Allow-listed reads of memory files (``get`` / ``memory_get``, reference §1.13)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from memory_router import Config, InvalidInput
from memory_router._config.config import EntriesConfig
from memory_router._workspace.files import read_memory_file

BODY = "line 1\nline 2\nline 3\nline 4\n"


def write(path: Path, text: str = BODY) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    workspace = tmp_path / "ws"
    write(workspace / "MEMORY.md")
    write(workspace / "memory" / "2026-01-01.md")
    write(workspace / "memory" / "deep" / "x.md")
    write(workspace / "README.md")
    write(workspace / "memory" / "notes.txt")
    write(tmp_path / "secret.md", "do not read\n")
    return workspace


def config_for(ws: Path, *extra: Path, entries: str = "memory/entries.md") -> Config:
    return Config(
        workspace=str(ws),
        extra_paths=tuple(str(p) for p in extra),
        entries=EntriesConfig(path=entries),
    )


def refused(config: Config, path: str, fragment: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        read_memory_file(config, path)
    assert caught.value.key == "path"
    assert fragment in caught.value.message


def test_reads_memory_files(ws: Path) -> None:
    config = config_for(ws)
    assert read_memory_file(config, "MEMORY.md").text == BODY
    got = read_memory_file(config, "memory/deep/x.md")
    assert (got.path, got.text) == ("memory/deep/x.md", BODY)
    assert (
        read_memory_file(config, "./memory/../memory/2026-01-01.md").path == "memory/2026-01-01.md"
    )
    assert read_memory_file(config, "memory\\deep\\x.md").text == BODY  # backslashes separate


def test_missing_memory_file_reads_as_empty(ws: Path) -> None:
    config = config_for(ws)
    assert read_memory_file(config, "memory/nope.md").text == ""
    assert read_memory_file(config, "memory/no/such/dir.md").text == ""
    assert read_memory_file(config, "DREAMS.md").text == ""


def test_slicing_is_one_based(ws: Path) -> None:
    config = config_for(ws)
    assert read_memory_file(config, "MEMORY.md", from_line=2, lines=2).text == "line 2\nline 3"
    assert read_memory_file(config, "MEMORY.md", from_line=3).text == "line 3\nline 4\n"
    assert read_memory_file(config, "MEMORY.md", lines=1).text == "line 1"
    assert read_memory_file(config, "MEMORY.md", from_line=99).text == ""
    got = read_memory_file(config, "MEMORY.md", from_line=2, lines=5)
    assert (got.from_line, got.lines) == (2, 5)


@pytest.mark.parametrize(
    ("kwargs", "key"),
    [
        ({"from_line": 0}, "from_line"),
        ({"lines": 0}, "lines"),
        ({"from_line": -3}, "from_line"),
        ({"lines": True}, "lines"),
        ({"from_line": 1.5}, "from_line"),
    ],
)
def test_bad_line_arguments(ws: Path, kwargs: dict[str, object], key: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        read_memory_file(config_for(ws), "MEMORY.md", **kwargs)  # type: ignore[arg-type]
    assert caught.value.key == key


def test_traversal_outside_the_workspace_is_refused(ws: Path) -> None:
    config = config_for(ws)
    refused(config, "../secret.md", "not a memory file")
    refused(config, "memory/../../secret.md", "not a memory file")
    refused(config, "memory/../README.md", "not a memory file")
    refused(config, "README.md", "not a memory file")


def test_absolute_paths_are_refused(ws: Path) -> None:
    refused(config_for(ws), str(ws / "MEMORY.md"), "absolute")
    refused(config_for(ws), "~/MEMORY.md", "absolute")


def test_non_markdown_nul_and_empty_paths_are_refused(ws: Path) -> None:
    config = config_for(ws)
    refused(config, "memory/notes.txt", ".md")
    refused(config, "memory/a.md\x00.txt", "NUL")
    with pytest.raises(InvalidInput):
        read_memory_file(config, "  ")


def test_session_transcripts_are_not_readable(ws: Path) -> None:
    refused(config_for(ws), "sessions/abc.jsonl", "session transcripts")


def test_symlinked_file_is_refused(ws: Path, tmp_path: Path) -> None:
    (ws / "memory" / "link.md").symlink_to(tmp_path / "secret.md")
    refused(config_for(ws), "memory/link.md", "symbolic link")
    (ws / "memory" / "dangling.md").symlink_to(tmp_path / "nowhere.md")
    refused(config_for(ws), "memory/dangling.md", "symbolic link")


def test_symlinked_directory_is_refused(ws: Path, tmp_path: Path) -> None:
    write(tmp_path / "elsewhere" / "x.md", "outside\n")
    (ws / "memory" / "linked").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    refused(config_for(ws), "memory/linked/x.md", "symbolic link")


def test_symlinked_memory_dir_is_refused(tmp_path: Path) -> None:
    ws = tmp_path / "ws2"
    write(tmp_path / "real" / "a.md")
    ws.mkdir()
    (ws / "memory").symlink_to(tmp_path / "real", target_is_directory=True)
    refused(config_for(ws), "memory/a.md", "symbolic link")


def test_fifo_and_directories_are_refused_without_blocking(ws: Path) -> None:
    os.mkfifo(ws / "memory" / "pipe.md")
    refused(config_for(ws), "memory/pipe.md", "regular file")
    (ws / "memory" / "dir.md").mkdir()
    refused(config_for(ws), "memory/dir.md", "regular file")


def test_extra_paths_directory_and_file(ws: Path, tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    write(notes / "a.md", "note a\n")
    write(notes / "sub" / "b.md", "note b\n")
    single = write(tmp_path / "single.md", "single\n")
    write(tmp_path / "sibling.md", "sibling\n")
    config = config_for(ws, notes, single)
    assert read_memory_file(config, "../notes/a.md").text == "note a\n"
    assert read_memory_file(config, "../notes/sub/b.md").text == "note b\n"
    assert read_memory_file(config, "../single.md").text == "single\n"
    assert read_memory_file(config, "../notes/missing.md").text == ""
    refused(config, "../sibling.md", "not a memory file")
    refused(config, "../notes/../secret.md", "not a memory file")


def test_extra_path_inside_the_workspace(ws: Path) -> None:
    write(ws / "docs" / "guide.md", "guide\n")
    config = config_for(ws, ws / "docs")
    assert read_memory_file(config, "docs/guide.md").text == "guide\n"


def test_symlinked_extra_path_and_links_inside_it_are_refused(ws: Path, tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    write(notes / "a.md")
    (tmp_path / "notes-link").symlink_to(notes, target_is_directory=True)
    (notes / "inner-link.md").symlink_to(tmp_path / "secret.md")
    refused(config_for(ws, tmp_path / "notes-link"), "../notes-link/a.md", "not a memory file")
    refused(config_for(ws, notes), "../notes/inner-link.md", "symbolic link")


def test_journal_outside_memory_dir_is_readable(ws: Path) -> None:
    write(ws / "journal.md", "- entry\n")
    assert read_memory_file(config_for(ws, entries="journal.md"), "journal.md").text == "- entry\n"
    refused(config_for(ws), "journal.md", "not a memory file")


def test_invalid_utf8_is_read_as_indexing_reads_it_not_an_error(ws: Path) -> None:
    (ws / "memory" / "bytes.md").write_bytes(b"caf\xe9\n")
    assert read_memory_file(config_for(ws), "memory/bytes.md").text == "café\n"
    (ws / "memory" / "broken.md").write_bytes("naïve ".encode() + b"\xff\n")
    assert read_memory_file(config_for(ws), "memory/broken.md").text == "naïve \ufffd\n"


def test_a_binary_file_is_refused(ws: Path) -> None:
    (ws / "memory" / "image.md").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    refused(config_for(ws), "memory/image.md", "looks binary")


def test_a_search_citation_reads_the_lines_it_names(ws: Path) -> None:
    """An agent can pass a search result's citation straight back: ``path#La-Lb``."""
    config = config_for(ws)
    ranged = read_memory_file(config, "memory/2026-01-01.md#L2-L3")
    assert (ranged.path, ranged.text, ranged.from_line, ranged.lines) == (
        "memory/2026-01-01.md",
        "line 2\nline 3",
        2,
        2,
    )
    assert read_memory_file(config, "MEMORY.md#L4").text == "line 4"
    # The location as `memory-router search` prints a hit: path:first-last.
    assert read_memory_file(config, "memory/2026-01-01.md:2-3").text == ranged.text
    assert read_memory_file(config, "MEMORY.md:4").text == "line 4"
    # The citation is checked like any path: it cannot reach outside the memory files.
    with pytest.raises(InvalidInput, match="not a memory file"):
        read_memory_file(config, "../secret.md#L1-L2")
    with pytest.raises(InvalidInput, match="is empty") as empty:
        read_memory_file(config, "MEMORY.md#L3-L2")
    assert "#L<first>-L<last>" in (empty.value.hint or "")
    with pytest.raises(InvalidInput, match="from_line / lines were given too"):
        read_memory_file(config, "MEMORY.md#L1-L2", from_line=1)
