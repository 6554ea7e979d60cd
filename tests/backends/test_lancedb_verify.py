"""SQLite -> LanceDB: verified (overlap reported, not assumed) and resumable."""

from __future__ import annotations

from pathlib import Path

import pytest

from memory_router import Progress, migrate, testing
from migrate_support import CountingEmbedder, corpus, lance_router


class Interrupt(Exception):
    pass


def stop_at(count: int) -> Progress:
    def progress(*, done: int, total: int, label: str) -> None:
        if label == "migrating" and done >= count:
            raise Interrupt

    return progress


def test_sqlite_to_lancedb_is_verified_and_resumes_after_an_interruption(tmp_path: Path) -> None:
    workspace = testing.write_workspace(tmp_path / "workspace", corpus(40))
    with lance_router(tmp_path, workspace) as router:
        router.sync()
        CountingEmbedder.calls.clear()
        with pytest.raises(Interrupt):
            migrate(router, "lancedb", source="sqlite", batch_size=8, progress=stop_at(16))
        assert router.backend("lancedb").status().chunks == 0  # nothing live yet
        report = migrate(router, "lancedb", source="sqlite", batch_size=8, resume=True, verify=12)
        assert (report.mode, report.skipped, report.written, report.embedded) == (
            "reuse",
            16,
            24,
            0,
        )
        lance_ids = [c.id for c in router.backend("lancedb").export_chunks()]
        assert lance_ids == sorted(c.id for c in router.backend("sqlite").export_chunks())
        checked = report.verify
        assert checked is not None
        assert (checked.queries, checked.source_chunks, checked.target_chunks) == (12, 40, 40)
        # Same vectors, same weighted merge: each corpus query finds its own chunk first
        # on both engines; the rest of the top 10 is reported as measured.
        assert checked.top_hit_share == 1.0
        assert 0.5 <= checked.overlap <= 1.0
