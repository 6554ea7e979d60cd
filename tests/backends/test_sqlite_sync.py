"""SQLite backend sync: incremental by hash, pruning, progress, fingerprint rebuilds.

The failed-rebuild test injects the fault through a real seam: an embedding provider,
registered as a plugin, that raises after a number of texts.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import os
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from memory_router import BackendError, EmbeddingError, Router, hookimpl, testing
from memory_router.kit import ProviderContext, ProviderSpec, SearchRequest
from memory_router.testing import HashingEmbedder, publish_chunks


def files(n: int, prefix: str = "note") -> dict[str, str]:
    return {
        f"memory/{prefix}-{i:04d}.md": f"# {prefix} {i}\n\nfact number {i} about topic{i % 7}\n"
        for i in range(n)
    }


def make(tmp_path: Path, workspace: Path, **kwargs: Any) -> Router:
    config = testing.router_config(tmp_path, workspace, backend="sqlite", **kwargs)
    return Router.from_config(config, plugins=[testing, FlakyPlugin])


class FlakyEmbedder(HashingEmbedder):
    """Embeds like the hashing embedder, then fails once ``budget`` texts are used up."""

    id = "flaky"
    model = "flaky-384"
    budget = 0

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        if len(texts) > FlakyEmbedder.budget:
            raise EmbeddingError("flaky provider: out of budget", provider=self.id)
        FlakyEmbedder.budget -= len(texts)
        return super().embed_documents(texts)


class FlakyPlugin:
    @staticmethod
    @hookimpl
    def register_embedding_providers(register: Callable[[ProviderSpec], None]) -> None:
        def factory(context: ProviderContext, model: str) -> FlakyEmbedder:
            return FlakyEmbedder()

        register(ProviderSpec(name="flaky", factory=factory))


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    return testing.write_workspace(tmp_path / "ws", files(12))


def test_incremental_sync_touches_only_what_changed(tmp_path: Path, workspace: Path) -> None:
    with make(tmp_path, workspace, embedding="hash") as router:
        first = router.sync()[0]
        assert (first.added, first.full_rebuild, first.reason) == (12, True, "no index yet")
        assert first.embedded == 12
        (workspace / "memory/note-0001.md").write_text("# changed\n\nbrand new words\n")
        (workspace / "memory/note-0002.md").unlink()
        (workspace / "memory/extra.md").write_text("# extra\n\nanother file\n")
        calls: list[tuple[int, int, str]] = []

        def progress(*, done: int, total: int, label: str) -> None:
            calls.append((done, total, label))

        report = router.sync(progress=progress)[0]
        assert (report.added, report.updated, report.removed, report.unchanged) == (1, 1, 1, 10)
        assert not report.full_rebuild
        assert report.embedded == 2  # only the two new chunk texts
        assert report.chunks == 12
        # With an embedder the count is in chunks (the CLI shows chunks/s and an ETA).
        assert {label for *_, label in calls} == {"embedding"}
        assert calls[-1] == (2, 2, "embedding")
        hits = router.search("brand new words").results
        assert hits[0].path == "memory/note-0001.md"
        assert router.status().backends[0].files == 12


def test_fingerprint_change_rebuilds(tmp_path: Path, workspace: Path) -> None:
    with make(tmp_path, workspace) as router:
        router.sync()
    with make(tmp_path, workspace, chunking={"tokens": 100, "overlap": 40}) as router:
        report = router.sync()[0]
        assert report.full_rebuild
        assert report.reason == "fingerprint changed: chunkTokens"
        assert router.sync()[0].full_rebuild is False
    settings = {"fts_tokenizer": "trigram"}
    with make(tmp_path, workspace, settings=settings, chunking={"tokens": 100, "overlap": 40}) as r:
        assert r.sync()[0].reason == "fingerprint changed: ftsTokenizer"
        assert r.search("topic3").results


def test_stemming_and_structure_changes_rebuild(tmp_path: Path, workspace: Path) -> None:
    with make(tmp_path, workspace) as router:  # default: porter stemming, curated structure
        router.sync()
    with make(tmp_path, workspace, chunking={"structure": "off"}) as router:
        assert router.sync()[0].reason == "fingerprint changed: chunkStructure"
    settings = {"fts_tokenizer": "unicode61"}
    with make(tmp_path, workspace, settings=settings, chunking={"structure": "off"}) as router:
        assert router.sync()[0].reason == "fingerprint changed: ftsTokenizer"


def test_force_rebuilds_and_keeps_results(tmp_path: Path, workspace: Path) -> None:
    with make(tmp_path, workspace, embedding="hash") as router:
        router.sync()
        before = [h.chunk_id for h in router.search("fact number 5").results]
        report = router.sync(force=True)[0]
        assert (report.full_rebuild, report.reason, report.added) == (True, "forced", 12)
        assert report.cache_hits == 12
        assert report.embedded == 0
        assert [h.chunk_id for h in router.search("fact number 5").results] == before


@pytest.mark.slow
def test_failed_rebuild_keeps_the_old_index(tmp_path: Path) -> None:
    workspace = testing.write_workspace(tmp_path / "ws", files(700))
    with make(tmp_path, workspace, embedding="hash") as router:
        assert router.sync()[0].chunks == 700
    FlakyEmbedder.budget = 600  # the first group of 500 files succeeds, the second fails
    with make(tmp_path, workspace, embedding="flaky") as router:
        report = router.sync()[0]
        assert report.errors == ("flaky provider: out of budget",)
        assert FlakyEmbedder.budget == 100  # proof the rebuild got midway
        status = router.status().backends[0]
        assert (status.files, status.chunks) == (700, 700)
    leftovers = [p.name for p in (tmp_path / "state/agents/main").iterdir() if ".tmp-" in p.name]
    assert leftovers == []
    with make(tmp_path, workspace, embedding="hash") as router:
        hits = router.search("fact number 650").results
        assert hits[0].path == "memory/note-0650.md"
        assert router.sync()[0].full_rebuild is False


def test_sessions_and_journal_entries_carry_metadata(tmp_path: Path, workspace: Path) -> None:
    with make(tmp_path, workspace, embedding="hash") as router:
        entry = router.store(
            "Prefers aisle seats on long flights", importance=0.9, category="preference"
        )
        hits = router.search("aisle seats flights").results
        assert hits[0].entry is not None
        assert hits[0].entry.id == entry.id
        assert hits[0].entry.importance == pytest.approx(0.9)
        assert hits[0].entry.category == "preference"


def test_a_repeated_chunk_id_is_written_once(tmp_path: Path, workspace: Path) -> None:
    with make(tmp_path, workspace, embedding="hash") as router:
        router.sync()
        backend = router.backend("sqlite")
        chunks = list(backend.export_chunks())
        again = dataclasses.replace(chunks[0], id="dup", path="memory/dup.md")
        fingerprint = router.fingerprint().to_dict()
        assert publish_chunks(backend, [*chunks, again, again], fingerprint=fingerprint) == 13
        chunk = chunks[0]
        rows = [c for c in backend.export_chunks() if c.id == "dup"]
        assert len(rows) == 1
        assert rows[0].embedding == chunk.embedding
        hits = (
            router.backend("sqlite")
            .search(SearchRequest(query=chunk.text, max_results=20, min_score=0, candidates=20))
            .hits
        )
        assert sum(1 for h in hits if h.chunk_id == "dup") == 1


def test_a_staged_copy_raises_no_driver_error(tmp_path: Path, workspace: Path) -> None:
    """A value the driver refuses is a BackendError of the backend, not a sqlite3 error,
    and the live index is untouched."""
    with make(tmp_path, workspace, embedding="hash") as router:
        router.sync()
        backend = router.backend("sqlite")
        chunks = list(backend.export_chunks())
        odd = dataclasses.replace(chunks[0], id="odd", text=object())  # type: ignore[arg-type]
        with pytest.raises(BackendError, match="sqlite migrate failed") as raised:
            publish_chunks(backend, [*chunks, odd], fingerprint=router.fingerprint().to_dict())
        assert type(raised.value) is BackendError  # one bad value: the file is fine
        assert not list(tmp_path.glob("state/**/*.migrating*"))  # discarded
        assert len(list(backend.export_chunks())) == len(chunks)


def test_an_interrupted_swap_and_stale_temp_files_are_recovered(
    tmp_path: Path, workspace: Path
) -> None:
    with make(tmp_path, workspace) as router:
        router.sync()
    db = tmp_path / "state/agents/main/memory.sqlite"
    # A process killed between "move the live index aside" and "move the new one in":
    db.rename(db.with_name("memory.sqlite.backup-0123"))
    stale = db.with_name("memory.sqlite.tmp-dead")
    stale.write_bytes(b"half-written")
    fresh = db.with_name("memory.sqlite.tmp-live")
    fresh.write_bytes(b"another process is rebuilding")
    # While a rebuild holds the index lock, its temporary file is left alone (whatever its age).
    with _lock_held(db.with_name("memory.sqlite.lock")):
        with make(tmp_path, workspace, sync={"on_search": False}) as router:
            assert router.search("topic5").results[0].path == "memory/note-0005.md"
        assert db.exists()
        assert stale.exists()
        assert fresh.exists()
    assert not list(db.parent.glob("*.backup-*"))
    # Once nobody holds it, the next open removes every leftover, however young.
    with make(tmp_path, workspace, sync={"on_search": False}) as router:
        assert router.search("topic5").results
    assert not stale.exists()
    assert not fresh.exists()


@contextlib.contextmanager
def _lock_held(path: Path) -> Iterator[None]:
    """Hold ``path`` the way a rebuilding process does (flock on its own descriptor)."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def test_a_rebuild_by_another_process_is_followed(tmp_path: Path, workspace: Path) -> None:
    with make(tmp_path, workspace) as reader, make(tmp_path, workspace) as writer:
        reader.sync()
        assert reader.search("topic5").results[0].path == "memory/note-0005.md"
        (workspace / "memory/note-0005.md").write_text("# moved\n\nnothing about that topic\n")
        (workspace / "memory/fresh.md").write_text("# fresh\n\ntopic5 lives here now\n")
        assert writer.sync(force=True)[0].full_rebuild  # swaps a new file into place
        hits = (
            reader.backend("sqlite")
            .search(SearchRequest(query="topic5", max_results=5, min_score=0, candidates=5))
            .hits
        )
        assert [h.path for h in hits] == ["memory/fresh.md"]
        assert reader.sync()[0].added == 0  # its writer follows the new file too
