"""Migration into and out of LanceDB: vectors reused, a staged generation, resume."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from memory_router import MemoryRouterError, NotFound, Router, SyncReport, migrate, testing
from memory_router._ops import doctor as _doctor
from memory_router.kit import SearchRequest
from migrate_support import CountingEmbedder, corpus, lance_router

KILN = "# Kiln\n\nThe kiln reached 1240 degrees on the third firing.\n"


def ids(router: Router, name: str) -> list[str]:
    return [c.id for c in router.backend(name).export_chunks()]


def test_sqlite_to_lancedb_and_back_reuses_every_vector(tmp_path: Path) -> None:
    workspace = testing.write_workspace(tmp_path / "workspace", corpus(30))
    with lance_router(tmp_path, workspace) as router:
        router.sync()
        CountingEmbedder.calls.clear()
        report = migrate(router, "lancedb", source="sqlite", batch_size=7)
        assert (report.mode, report.written, report.embedded) == ("reuse", 30, 0)
        lance = router.backend("lancedb")
        exported = list(lance.export_chunks())
        assert [c.id for c in exported] == sorted(c.id for c in exported)  # stable order
        assert ids(router, "lancedb") == sorted(ids(router, "sqlite"))
        assert all(c.embedding is not None and len(c.embedding) == 384 for c in exported)
        assert lance.index_fingerprint() == router.backend("sqlite").index_fingerprint()
        hits = lance.search(
            SearchRequest(query="granite", max_results=5, min_score=0.0, candidates=10)
        ).hits
        assert hits
        CountingEmbedder.calls.clear()  # the search embedded its query
        # The first sync adopts the copied chunks: vectors kept, nothing embedded.
        (sync,) = router.sync(backends=["lancedb"])
        assert sync.embedded == 0
        assert CountingEmbedder.calls == []
        back = migrate(router, "sqlite", source="lancedb")
        assert (back.mode, back.written, back.embedded) == ("reuse", 30, 0)


def test_staging_survives_a_restart_and_discard_leaves_the_live_store(tmp_path: Path) -> None:
    workspace = testing.write_workspace(tmp_path / "workspace", corpus(6))
    with lance_router(tmp_path, workspace) as router:
        router.sync(backends=["sqlite", "lancedb"])
        live = router.backend("lancedb").index_fingerprint()
        chunks = list(router.backend("sqlite").export_chunks())
        staging = router.backend("lancedb").stage(fingerprint=dict(live or {}), resume=False)
        staging.write(chunks[:3])
        staging.write(chunks[:3])  # a batch written again after a kill is written once
    with lance_router(tmp_path, workspace) as router:
        lance = router.backend("lancedb")
        resumed = lance.stage(fingerprint={}, resume=True)
        assert resumed.count() == 3
        resumed.write(chunks[1:4])  # overlaps what the killed run wrote: each id once
        assert resumed.count() == 4
        resumed.discard()
        with pytest.raises(NotFound):
            lance.stage(fingerprint={}, resume=True)
        assert len(ids(router, "lancedb")) == 6  # the live generation never moved


@pytest.mark.slow
def test_a_rebuild_between_migration_batches_keeps_the_copy(tmp_path: Path) -> None:
    # With keep_generations = 1 a rebuild prunes every generation but its own: it must
    # leave the migration's copy alone, or the migration would publish dropped tables.
    workspace = testing.write_workspace(tmp_path / "workspace", corpus(12))
    rebuilt: list[SyncReport] = []
    with lance_router(tmp_path, workspace, keep_generations=1) as router:
        router.sync(backends=["sqlite", "lancedb"])

        def rebuild_midway(*, done: int, total: int, label: str) -> None:
            if label == "migrating" and 0 < done < total and not rebuilt:
                (workspace / "memory" / "kiln.md").write_text(KILN, encoding="utf-8")
                rebuilt.extend(router.sync(backends=["lancedb"], force=True))

        report = migrate(router, "lancedb", source="sqlite", batch_size=4, progress=rebuild_midway)
        assert rebuilt[0].full_rebuild
        assert not rebuilt[0].errors
        assert (report.mode, report.written) == ("reuse", 12)
        assert ids(router, "lancedb") == sorted(ids(router, "sqlite"))  # the copy went live
        (sync,) = router.sync(backends=["lancedb"])  # the file written meanwhile comes in
        assert not sync.errors
        assert (sync.added, sync.embedded) == (1, 0)  # the rebuild embedded it already
        hits = (
            router.backend("lancedb")
            .search(SearchRequest(query="kiln firing", max_results=3, min_score=0.0, candidates=10))
            .hits
        )
        assert hits[0].path == "memory/kiln.md"


class Stop(Exception):
    """Stands for a kill after the first batch (the checkpoint is saved)."""


def stop_after_first_batch(*, done: int, total: int, label: str) -> None:
    if label == "migrating" and done:
        raise Stop


def interrupt(router: Router, target: str, source: str) -> None:
    """Both backends built, then a migration stopped after its first batch of two."""
    router.sync(backends=["sqlite", "lancedb"])
    with pytest.raises(Stop):
        migrate(router, target, source=source, batch_size=2, progress=stop_after_first_batch)


@pytest.mark.slow
def test_a_copy_gone_since_the_interruption_is_explained_and_reset_forgets_it(
    tmp_path: Path,
) -> None:
    workspace = testing.write_workspace(tmp_path / "workspace", corpus(6))
    with lance_router(tmp_path, workspace) as router:
        interrupt(router, "lancedb", "sqlite")
    moved = str(tmp_path / "lance-moved")  # [backends.lancedb] uri changed meanwhile
    with lance_router(tmp_path, workspace, uri=moved) as router:
        with pytest.raises(NotFound) as gone:
            migrate(router, "lancedb", source="sqlite", resume=True)
        assert gone.value.message.endswith(
            "the interrupted migration's copy (2 of 6 chunks written) is gone"
        )
        assert (gone.value.hint or "").startswith("run without --resume to start clean")
    with lance_router(tmp_path, workspace) as router:
        assert [c.name for c in _doctor.checks(router)][-1] == "migration into lancedb"
        removed = _doctor.reset(router, ["lancedb"])  # the copy's tables go too
        assert any(path.endswith("migrations/lancedb.json") for path in removed)
        assert "migration into lancedb" not in [c.name for c in _doctor.checks(router)]
        with pytest.raises(NotFound, match="no interrupted migration into 'lancedb'"):
            migrate(router, "lancedb", source="sqlite", resume=True)
        assert migrate(router, "lancedb", source="sqlite").written == 6


def test_resetting_sqlite_removes_a_migration_copy_and_its_checkpoint(tmp_path: Path) -> None:
    workspace = testing.write_workspace(tmp_path / "workspace", corpus(6))
    with lance_router(tmp_path, workspace) as router:
        interrupt(router, "sqlite", "lancedb")
        index = tmp_path / "state-root/state/agents/main/memory.sqlite"
        assert index.with_name("memory.sqlite.migrating").exists()
        removed = _doctor.reset(router, ["sqlite"])
        assert str(index.with_name("memory.sqlite.migrating")) in removed
        assert not list(index.parent.glob("memory.sqlite.migrating*"))
        assert not list((index.parent / "migrations").glob("*.json"))


@pytest.mark.slow
def test_syncs_on_another_thread_and_a_migration_both_land(tmp_path: Path) -> None:
    # The store's write lock takes turns between them: each forced rebuild and each
    # batch is whole, the copy survives every rebuild's pruning, and the last switch wins.
    workspace = testing.write_workspace(tmp_path / "workspace", corpus(40))
    with lance_router(tmp_path, workspace, keep_generations=1) as router:
        router.sync(backends=["sqlite", "lancedb"])
        migrating = threading.Event()
        done = threading.Event()
        reports: list[SyncReport] = []

        def syncs() -> None:
            migrating.wait(60)
            while not done.is_set():
                reports.extend(router.sync(backends=["lancedb"], force=True))

        def started(*, done: int, total: int, label: str) -> None:
            migrating.set()

        thread = threading.Thread(target=syncs)
        thread.start()
        try:
            report = migrate(router, "lancedb", source="sqlite", batch_size=4, progress=started)
        finally:
            done.set()
            thread.join(120)
        assert reports
        assert [r.errors for r in reports] == [()] * len(reports)
        assert report.written == 40
        exported = ids(router, "lancedb")
        assert exported == sorted(ids(router, "sqlite"))  # whichever switched last: all there
        assert len(exported) == len(set(exported))


def test_a_second_migration_into_the_same_target_is_refused(tmp_path: Path) -> None:
    # Started while the first copies (its progress callback), as a second terminal would:
    # it would otherwise discard the first one's copy and take over its checkpoint.
    workspace = testing.write_workspace(tmp_path / "workspace", corpus(6))
    refused: list[MemoryRouterError] = []
    doctor: list[str] = []
    with lance_router(tmp_path, workspace) as first:
        first.sync(backends=["sqlite", "lancedb"])

        def second_midway(*, done: int, total: int, label: str) -> None:
            if label != "migrating" or not done or refused:
                return
            with lance_router(tmp_path, workspace) as second:
                with pytest.raises(MemoryRouterError) as busy:
                    migrate(second, "lancedb", source="sqlite")
                refused.append(busy.value)
                doctor.extend(_doctor.lines(_doctor.checks(second)))

        report = migrate(first, "lancedb", source="sqlite", batch_size=2, progress=second_midway)
        assert report.written == 6
        assert ids(first, "lancedb") == sorted(ids(first, "sqlite"))
    assert refused[0].message == f"process {os.getpid()} is already migrating into 'lancedb'"
    assert (refused[0].hint or "").startswith("let it finish")
    assert doctor[-1] == (
        f"✓ migration into lancedb: running in process {os.getpid()}: from sqlite (reuse),"
        " 2 of 6 chunks"
    )
