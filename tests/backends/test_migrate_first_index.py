"""The first ``index`` after a migration adopts the copied chunks: nothing embedded, no row
rewritten (LanceDB and SQLite targets); a file changed since is still re-indexed."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from memory_router import migrate, testing
from migrate_support import (
    CountingEmbedder,
    build_index,
    config_for,
    corpus,
    lance_router,
    live_path,
    make_router,
)


def lance_chunk_rows(folder: Path) -> dict[str, Any]:
    """Every chunks table of the LanceDB folder: its version and ``(id, updated_at)`` rows."""
    import lancedb

    found: dict[str, Any] = {}
    for table_dir in folder.rglob("chunks_*.lance"):
        table = lancedb.connect(table_dir.parent).open_table(table_dir.name[: -len(".lance")])
        data = table.to_arrow().select(["id", "updated_at"]).to_pydict()
        found[table_dir.name] = (
            table.version,
            sorted(zip(data["id"], data["updated_at"], strict=True)),
        )
    return found


def sqlite_chunk_rows(path: Path) -> list[tuple[str, int]]:
    with sqlite3.connect(path) as db:
        found = sorted(db.execute("SELECT id, updated_at FROM chunks"))
    db.close()
    return found


def edit_one(workspace: Path) -> None:
    first = sorted((workspace / "memory").glob("*.md"))[0]
    first.write_text(first.read_text(encoding="utf-8") + "\nA new line about quartz.\n")


def test_first_index_after_a_migration_to_lancedb_touches_nothing(tmp_path: Path) -> None:
    workspace = testing.write_workspace(tmp_path / "workspace", corpus(30))
    with lance_router(tmp_path, workspace) as router:
        router.sync()
        report = migrate(router, "lancedb", source="sqlite", batch_size=7)
        assert (report.mode, report.written) == ("reuse", 30)
        before = lance_chunk_rows(tmp_path / "lance")
        assert len(before) == 1
        CountingEmbedder.calls.clear()
        (sync,) = router.sync(backends=["lancedb"])
        assert CountingEmbedder.calls == []
        assert (sync.embedded, sync.added, sync.updated, sync.unchanged) == (0, 0, 0, 30)
        assert lance_chunk_rows(tmp_path / "lance") == before  # same version, same rows
        (again,) = router.sync(backends=["lancedb"])  # the files rows are recorded now
        assert (again.added, again.unchanged) == (0, 30)
        edit_one(workspace)
        (changed,) = router.sync(backends=["lancedb"])
        assert (changed.updated, changed.unchanged) == (1, 29)
        assert sum(CountingEmbedder.calls) >= 1


def test_first_index_after_a_migration_to_sqlite_touches_nothing(tmp_path: Path) -> None:
    workspace = testing.write_workspace(tmp_path / "workspace", corpus(30))
    source = build_index(config_for(tmp_path, workspace, "old"), tmp_path / "old.sqlite")
    with make_router(config_for(tmp_path, workspace, "new")) as router:
        migrate(router, "sqlite", source_path=source, batch_size=7)
        before = sqlite_chunk_rows(live_path(router))
        CountingEmbedder.calls.clear()
        (sync,) = router.sync()
        assert CountingEmbedder.calls == []
        assert (sync.embedded, sync.added, sync.updated, sync.unchanged) == (0, 0, 0, 30)
        assert sqlite_chunk_rows(live_path(router)) == before
        edit_one(workspace)
        (changed,) = router.sync()
        assert (changed.updated, changed.unchanged) == (1, 29)
        assert sum(CountingEmbedder.calls) >= 1
