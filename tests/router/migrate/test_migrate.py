"""Migration between two SQLite index files: reuse, re-embed, rebuild, staging, verify."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from memory_router import InvalidInput, NotFound, Progress, Router, migrate
from memory_router._migrate.verify import query_of
from memory_router.kit import SearchRequest
from memory_router.testing import publish_chunks, write_workspace
from migrate_support import (
    CountingEmbedder,
    build_index,
    config_for,
    corpus,
    live_path,
    make_router,
    rows,
)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    return write_workspace(tmp_path / "workspace", corpus(40))


@pytest.fixture
def source(tmp_path: Path, workspace: Path) -> Path:
    """An index of the workspace built with the counting provider, as a separate file."""
    path = build_index(config_for(tmp_path, workspace, "old"), tmp_path / "old.sqlite")
    CountingEmbedder.calls.clear()
    return path


@pytest.fixture
def router(tmp_path: Path, workspace: Path) -> Router:
    with make_router(config_for(tmp_path, workspace, "new")) as router:
        yield router


def test_matching_fingerprints_copy_vectors_with_zero_provider_calls(
    router: Router, source: Path
) -> None:
    report = migrate(router, "sqlite", source_path=source, batch_size=7)
    assert (report.mode, report.embedded, report.written) == ("reuse", 0, 40)
    assert CountingEmbedder.calls == []
    assert rows(live_path(router)) == rows(source)  # same ids, texts and vector bytes
    # The first sync adopts the copied chunks: still no embedding, nothing rewritten.
    (sync,) = router.sync()
    assert (sync.embedded, sync.added, sync.unchanged) == (0, 0, 40)
    assert CountingEmbedder.calls == []
    assert not Path(f"{live_path(router)}.migrating").exists()


def test_a_changed_embedding_space_re_embeds_through_the_cache(
    tmp_path: Path, workspace: Path
) -> None:
    source = build_index(config_for(tmp_path, workspace, "old", "hash"), tmp_path / "old.sqlite")
    with make_router(config_for(tmp_path, workspace, "new")) as router:
        CountingEmbedder.calls.clear()
        report = migrate(router, "sqlite", source_path=source, batch_size=16)
        assert report.mode == "re-embed"
        assert "hash/hash-384 -> counting/count-384" in report.reason
        assert (report.embedded, sum(CountingEmbedder.calls)) == (40, 40)
        copied = rows(live_path(router))
        assert len(copied) == 40
        assert set(copied).isdisjoint(rows(source))  # a new model means new chunk ids
        # Again: every text is in the shared cache now, so nothing reaches the provider.
        again = migrate(router, "sqlite", source_path=source)
        assert (again.embedded, again.cache_hits) == (0, 40)
        assert sum(CountingEmbedder.calls) == 40


def test_changed_chunking_rebuilds_from_the_markdown_with_the_source_vectors(
    tmp_path: Path, workspace: Path, source: Path
) -> None:
    config = config_for(tmp_path, workspace, "new", chunking={"tokens": 30, "overlap": 5})
    with make_router(config) as router:
        report = migrate(router, "sqlite", source_path=source)
        assert report.mode == "rebuild"
        assert "chunkTokens" in report.reason
        assert report.seeded == 40  # the old vectors went to the embedding cache
        assert report.chunks > 40


def test_the_live_index_answers_as_before_until_the_switch(
    tmp_path: Path, workspace: Path, source: Path
) -> None:
    other = write_workspace(tmp_path / "other", {"MEMORY.md": "Only the old index knows kiwis."})
    with make_router(config_for(tmp_path, other, "new")) as before:
        before.sync()
    with make_router(config_for(tmp_path, workspace, "new")) as router:
        live = router.backend("sqlite")
        seen: list[int] = []

        def probe(*, done: int, total: int, label: str) -> None:
            if label == "migrating" and 0 < done < total:
                seen.append(live.status().chunks)
                hits = live.search(
                    SearchRequest(query="kiwis", max_results=3, min_score=0, candidates=3)
                ).hits
                assert [h.snippet for h in hits] == ["Only the old index knows kiwis."]

        migrate(router, "sqlite", source_path=source, batch_size=5, progress=probe)
        assert set(seen) == {1}
        assert len(seen) == 7
        assert live.status().chunks == 40


def test_verify_is_one_on_identical_indexes_and_less_on_a_damaged_target(
    router: Router, source: Path
) -> None:
    report = migrate(router, "sqlite", source_path=source, verify=15)
    assert report.verify is not None
    assert (report.verify.overlap, report.verify.top_hit_share) == (1.0, 1.0)
    assert (report.verify.queries, report.verify.worst) == (15, ())
    # Damage: every chunk gets its neighbour's vector and text (vectors alone no longer move
    # the first hit: a keyword match keeps it on top).
    target = router.backend("sqlite")
    chunks = list(target.export_chunks())
    shifted = [
        c.__class__(
            **{
                **c.to_dict(),
                "entry": None,
                "embedding": chunks[i - 1].embedding,
                "text": chunks[i - 1].text,
            }
        )
        for i, c in enumerate(chunks)
    ]
    publish_chunks(target, shifted, fingerprint=router.fingerprint().to_dict())
    damaged = migrate(router, "sqlite", source_path=source, verify=15, copy=False)
    assert damaged.verify is not None
    assert damaged.verify.overlap < 1.0
    assert damaged.verify.top_hit_share < 1.0
    assert damaged.verify.worst[0].overlap < 1.0


def test_resume_without_an_interrupted_migration_says_so(router: Router, source: Path) -> None:
    with pytest.raises(NotFound, match="no interrupted migration"):
        migrate(router, "sqlite", source_path=source, resume=True)


def test_bad_sources_are_clear_errors(router: Router, tmp_path: Path) -> None:
    with pytest.raises(NotFound, match="no index file"):
        migrate(router, "sqlite", source_path=tmp_path / "missing.sqlite")
    (tmp_path / "notes.txt").write_text("hello")
    with pytest.raises(InvalidInput, match="not a readable SQLite index"):
        migrate(router, "sqlite", source_path=tmp_path / "notes.txt")
    with pytest.raises(InvalidInput, match="same backend"):
        migrate(router, "sqlite", source="sqlite")


class Interrupt(Exception):
    """Raised from a progress callback: the migration stops where it is."""


def stop_after(batches: int) -> Progress:
    def progress(*, done: int, total: int, label: str) -> None:
        if label == "migrating" and done >= batches * 5:
            raise Interrupt

    return progress


def test_a_resumed_migration_refuses_a_source_that_changed_meanwhile(
    router: Router, source: Path
) -> None:
    with pytest.raises(Interrupt):
        migrate(router, "sqlite", source_path=source, batch_size=5, progress=stop_after(3))
    with sqlite3.connect(source) as db:
        first = db.execute("SELECT id FROM chunks ORDER BY id LIMIT 1").fetchone()[0]
        db.execute("DELETE FROM chunks WHERE id = ?", (first,))
    db.close()
    with pytest.raises(InvalidInput, match="the source changed since") as caught:
        migrate(router, "sqlite", source_path=source, resume=True)
    assert caught.value.hint == "run without --resume to start clean"
    # Starting clean discards the interrupted copy and gives the source's chunks exactly.
    report = migrate(router, "sqlite", source_path=source, batch_size=5)
    assert (report.resumed, report.written) == (False, 39)
    assert rows(live_path(router)) == rows(source)


def test_an_interrupted_migration_resumes_where_it_stopped(router: Router, source: Path) -> None:
    with pytest.raises(Interrupt):
        migrate(router, "sqlite", source_path=source, batch_size=5, progress=stop_after(4))
    assert router.backend("sqlite").status().chunks == 0  # nothing visible before the switch
    report = migrate(router, "sqlite", source_path=source, batch_size=5, resume=True)
    assert (report.resumed, report.skipped, report.written) == (True, 20, 20)
    assert rows(live_path(router)) == rows(source)


def test_verify_queries_are_never_drawn_from_binary_junk() -> None:
    assert (
        query_of("# Trip\n\nBooked flights to Lisbon for March")
        == "Trip Booked flights to Lisbon for March"
    )
    assert query_of("\x01\x02 \ufffd\ufffd PK\x03\x04 \x7f\x10 ab\ufffd cd\x05") is None
