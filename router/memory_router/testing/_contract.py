"""The backend contract suite: behaviour every backend must show through a real :class:`Router`.

Subclass :class:`BackendContract` in a test module (its name must start with ``Test``) and
set :attr:`~BackendContract.backend` (and optionally :attr:`~BackendContract.embedding`
or :meth:`~BackendContract.backend_settings`). Each test builds its own workspace and
state folder in ``tmp_path``; nothing here knows a backend's internals::

    class TestSqliteContract(BackendContract):
        backend = "sqlite"
        embedding = "hash"
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from memory_router import Hit, Router, SearchResponse, Unsupported
from memory_router.kit import Backend, SearchRequest

from . import _helpers

FILES = {
    "MEMORY.md": "# Long-term memory\n\nThe user prefers green tea over coffee in the morning.\n",
    "memory/2026-01-05.md": (
        "# Standup\n\nDecided to migrate the billing service to PostgreSQL next quarter.\n"
        "Alice owns the migration runbook.\n"
    ),
    "memory/2026-01-06.md": (
        "# Trip\n\nBooked a flight to Lisbon for the conference on distributed systems.\n"
    ),
    "memory/projects/garden.md": (
        "# Garden\n\nPlanted heirloom tomatoes and basil along the south fence.\n"
    ),
}

RouterFactory = Callable[..., Router]


class BackendContract:
    """Tests every backend must pass. Subclasses set :attr:`backend` and friends."""

    backend: str = ""
    """The backend's registered name; the chain is ``[backend]``."""
    embedding: str = "none"
    """``"none"`` for keyword-only mode, ``"hash"`` for the hashing embedder."""

    def backend_settings(self, tmp_path: Path) -> dict[str, Any]:
        """The ``[backends.<name>]`` table; override to point the backend somewhere."""
        return {}

    @pytest.fixture
    def workspace(self, tmp_path: Path) -> Path:
        return _helpers.write_workspace(tmp_path / "workspace", FILES)

    @pytest.fixture
    def make_router(self, tmp_path: Path) -> Iterator[RouterFactory]:
        routers: list[Router] = []

        def make(workspace: Path, **query: Any) -> Router:
            config = _helpers.router_config(
                tmp_path,
                workspace,
                backend=self.backend,
                embedding=self.embedding,
                settings=self.backend_settings(tmp_path),
                query={"min_score": 0.0, **query},
            )
            router = Router.from_config(config, plugins=[_helpers])
            routers.append(router)
            return router

        yield make
        for router in routers:
            router.close()

    # -- helpers ------------------------------------------------------------------------

    @staticmethod
    def paths(response: SearchResponse) -> list[str]:
        return [hit.path for hit in response.results]

    @staticmethod
    def containing(response: SearchResponse, word: str) -> list[Hit]:
        return [h for h in response.results if word.lower() in h.snippet.lower()]

    # -- the contract -------------------------------------------------------------------

    def test_exact_phrase_ranks_its_chunk_first(
        self, make_router: RouterFactory, workspace: Path
    ) -> None:
        router = make_router(workspace)
        reports = router.sync()
        assert not reports[0].errors, reports[0].errors
        response = router.search("heirloom tomatoes basil")
        assert response.backend == self.backend
        assert self.paths(response)[0] == "memory/projects/garden.md"
        top = response.results[0]
        assert top.start_line <= 3 <= top.end_line
        assert 0.0 < top.score <= 1.0

    def test_resync_is_idempotent(self, make_router: RouterFactory, workspace: Path) -> None:
        router = make_router(workspace)
        first = router.sync()[0]
        second = router.sync()[0]
        assert first.added == len(FILES)
        assert (second.added, second.updated, second.removed) == (0, 0, 0)
        assert second.unchanged == len(FILES)
        assert second.chunks == first.chunks > 0

    def test_editing_a_file_replaces_its_chunks(
        self, make_router: RouterFactory, workspace: Path
    ) -> None:
        router = make_router(workspace)
        router.sync()
        assert self.containing(router.search("Lisbon conference"), "lisbon")
        (workspace / "memory/2026-01-06.md").write_text(
            "# Trip\n\nCancelled the trip; joining the Reykjavik workshop remotely instead.\n",
            encoding="utf-8",
        )
        report = router.sync()[0]
        assert report.updated == 1
        assert not self.containing(router.search("Lisbon conference"), "lisbon")
        assert self.paths(router.search("Reykjavik workshop"))[0] == "memory/2026-01-06.md"

    def test_deleting_a_file_removes_its_chunks(
        self, make_router: RouterFactory, workspace: Path
    ) -> None:
        router = make_router(workspace)
        router.sync()
        (workspace / "memory/2026-01-05.md").unlink()
        report = router.sync()[0]
        assert report.removed == 1
        assert not self.containing(router.search("billing PostgreSQL migration"), "billing")
        assert router.status().backends[0].files == len(FILES) - 1

    def test_status_counts_match_the_workspace(
        self, make_router: RouterFactory, workspace: Path
    ) -> None:
        router = make_router(workspace)
        router.sync()
        status = router.status(deep=True).backends[0]
        assert status.available, status.error
        assert status.files == len(FILES)
        assert status.chunks >= len(FILES)

    def test_close_releases_files(
        self, make_router: RouterFactory, workspace: Path, tmp_path: Path
    ) -> None:
        router = make_router(workspace)
        router.sync()
        router.search("green tea")
        state = tmp_path / "state"
        router.close()
        assert _open_files_under(state) == []
        moved = state.rename(tmp_path / "state-moved")
        assert moved.is_dir()

    def test_stored_entries_are_searchable_and_forgettable(
        self, make_router: RouterFactory, workspace: Path
    ) -> None:
        router = make_router(workspace)
        router.sync()
        # (No password in it: a secret would be masked before it is stored.)
        entry = router.store(
            "The office wifi network is called cobalt-harbor-42", importance=0.9, category="fact"
        )
        # A sidecar syncs in the background while searches go on: sync explicitly.
        router.sync()
        found = self.containing(router.search("office wifi network"), "cobalt")
        assert found, "a stored entry must be searchable after the next sync"
        assert found[0].entry is None or found[0].entry.id == entry.id
        router.forget(entry.id)
        router.sync()
        assert not self.containing(router.search("office wifi network"), "cobalt")

    def test_a_staged_copy_replaces_the_index_when_published(
        self, make_router: RouterFactory, workspace: Path
    ) -> None:
        """What ``migrate`` relies on (skipped for a backend without :meth:`Backend.stage`):
        the live index answers until :meth:`Staging.publish`; a batch written again is
        held once; the published copy is the index, and the next sync catches up."""
        router = make_router(workspace)
        router.sync()
        backend = router.backend(self.backend)
        try:
            chunks = list(backend.export_chunks())
            staging = backend.stage(fingerprint=router.fingerprint().to_dict(), resume=False)
        except Unsupported as error:
            pytest.skip(f"no staging: {error.message}")
        kept = [c for c in chunks if c.path != "memory/2026-01-06.md"]
        staging.write(kept[:2])
        staging.write(kept)  # a resumed migration writes its last batch again
        assert staging.count() == len(kept)
        assert "memory/2026-01-06.md" in raw_paths(backend, "Lisbon conference")
        staging.publish()
        staging.close()
        assert sorted(c.id for c in backend.export_chunks()) == sorted(c.id for c in kept)
        assert "memory/2026-01-06.md" not in raw_paths(backend, "Lisbon conference")
        assert raw_paths(backend, "heirloom tomatoes basil")[0] == "memory/projects/garden.md"
        report = router.sync()[0]
        assert report.added + report.updated + report.unchanged == len(FILES)
        assert "memory/2026-01-06.md" in raw_paths(backend, "Lisbon conference")

    @pytest.mark.parametrize(
        "query",
        ['"', "NEAR(a b", "a AND OR NOT", "*", "-x ^y", "((", "\x00\x01\x7f", "  ", "é" * 5000],
    )
    def test_odd_queries_never_raise(
        self, make_router: RouterFactory, workspace: Path, query: str
    ) -> None:
        router = make_router(workspace)
        router.sync()
        response = router.search(query)
        assert isinstance(response.results, tuple)


def raw_paths(backend: Backend, query: str) -> list[str]:
    """The paths of the backend's own answer (no router shaping, no sync before it)."""
    request = SearchRequest(query=query, max_results=10, min_score=0.0, candidates=10)
    return [hit.path for hit in backend.search(request).hits]


def _open_files_under(folder: Path) -> list[str]:
    """Paths under ``folder`` this process still has open (Linux ``/proc``; else none)."""
    fd_dir = Path("/proc/self/fd")
    if not fd_dir.is_dir():
        return []
    prefix = str(folder.resolve())
    found = []
    for fd in os.listdir(fd_dir):
        try:
            target = os.readlink(fd_dir / fd)
        except OSError:
            continue
        if target.startswith(prefix):
            found.append(target)
    return found
