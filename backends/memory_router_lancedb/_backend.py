"""The LanceDB backend: chunks and entries on a local folder or S3-compatible storage."""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator, Mapping
from concurrent.futures import Future
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from memory_router import (
    Backend,
    BackendContext,
    BackendResult,
    BackendStatus,
    Chunk,
    EmbeddingError,
    EntryMatch,
    EntryRequest,
    Hit,
    MemoryRouterError,
    Progress,
    SearchRequest,
    Snapshot,
    Staging,
    SyncReport,
    Unsupported,
    fuse_chunks,
    no_progress,
)

from . import _housekeeping, _recall, _search, _transfer, _vectors
from ._lance import on_thread
from ._search import Row, Scope
from ._settings import LanceSettings, is_remote, mask_uri
from ._staging import LanceStaging
from ._store import LanceStore, Pointer, Tables
from ._sync import sync_generation
from ._vectors import VectorCache
from ._warm import FtsWarmth


class LanceBackend(Backend):
    """Chunks and entries in LanceDB tables (see the package docstring)."""

    def __init__(self, context: BackendContext) -> None:
        super().__init__(context)
        self.settings: LanceSettings = context.settings or LanceSettings()
        uri = self.settings.resolved_uri(context.config)
        if not is_remote(uri):
            Path(uri).mkdir(parents=True, exist_ok=True)
        self.store = LanceStore(self.settings, uri, name=self.name, shown_uri=mask_uri(uri))
        self.journal = Path(context.config.entries.path).as_posix()
        self._vectors = VectorCache()
        self._fts = FtsWarmth(_housekeeping.FTS_INDEX)

    # -- sync ---------------------------------------------------------------------------

    def sync(
        self, snapshot: Snapshot, *, force: bool = False, progress: Progress = no_progress
    ) -> SyncReport:
        started = time.perf_counter()
        embedder = self.context.embedder
        before = (embedder.embedded, embedder.cache_hits) if embedder else (0, 0)
        with self.store.write_lock:
            counts, reason = self.store.guard(
                "sync",
                lambda: sync_generation(
                    self.store,
                    snapshot,
                    embedder,
                    force=force,
                    progress=progress,
                    journal=self.journal,
                ),
                long=True,
            )
            pointer = self.store.guard("sync", self.store.pointer)
            tables = self.store.tables(pointer.generation) if pointer else None
            notes = self._maintain(tables, counts.chunks_written, rebuilt=reason is not None)
            chunks = self.store.guard("sync", lambda: tables.chunks.count_rows()) if tables else 0
        after = (embedder.embedded, embedder.cache_hits) if embedder else (0, 0)
        return SyncReport(
            backend=self.name,
            added=counts.added,
            updated=counts.updated,
            removed=counts.removed,
            unchanged=counts.unchanged,
            chunks=chunks,
            embedded=after[0] - before[0],
            cache_hits=after[1] - before[1],
            full_rebuild=reason is not None,
            reason=reason,
            duration_ms=(time.perf_counter() - started) * 1000,
            errors=notes,
        )

    def _maintain(self, tables: Tables | None, written: int, *, rebuilt: bool) -> tuple[str, ...]:
        """Indexes and optimize after a sync; a failure here is reported, never raised."""
        if tables is None:
            return ()
        try:
            _housekeeping.after_sync(self.store, tables, written=written, rebuilt=rebuilt)
        except MemoryRouterError as error:
            return (f"housekeeping failed: {error.message}",)
        return ()

    def optimize(self) -> dict[str, Any]:
        """Compact, fold new rows into the indexes and clean old versions now."""
        pointer = self._pointer()
        if pointer is None:
            return {}
        with self.store.write_lock:
            done: dict[str, Any] = self.store.guard(
                "optimize",
                lambda: _housekeeping.optimize(self.store, self.store.tables(pointer.generation)),
                long=True,
            )
            return dict(done)

    # -- search -------------------------------------------------------------------------

    def _pointer(self) -> Pointer | None:
        pointer: Pointer | None = self.store.guard("search", self.store.pointer)
        return pointer

    def search(self, request: SearchRequest) -> BackendResult:
        pointer = self._pointer()
        if pointer is None:
            return BackendResult(hits=(), mode="hybrid", notes=("the store is not built yet",))
        # Embedding is no object-store call: a slow provider must not use up the store's
        # deadline, nor mark a store that answers as unreachable.
        query_vector, note = self._embedded(pointer, request.query)
        return self.store.guard(  # type: ignore[no-any-return]
            "search", lambda: self._search(pointer, request, query_vector, note)
        )

    def _embedded(self, pointer: Pointer, query: str) -> tuple[Any, tuple[str, ...]]:
        """The query's vector (``None`` without one) and a note when embedding failed."""
        embedder = self.context.embedder
        if embedder is None or pointer.dims is None:
            return None, ()
        try:
            return embedder.embed_query(query), ()
        except EmbeddingError as error:
            return None, (f"query embedding failed, keyword-only answer: {error.message}",)

    def _search(
        self,
        pointer: Pointer,
        request: SearchRequest,
        query_vector: Any,
        note: tuple[str, ...],
    ) -> BackendResult:
        tables = self.store.tables(pointer.generation)
        scope = _search.scope(tables, request.sources, request.category)
        if scope is None:
            return self._result(tables, [], mode="hybrid", relaxed=None)
        has_fts = _housekeeping.has_fts(scope.table)
        if has_fts:
            self._fts.ensure(scope.table)
        if query_vector is None:
            rows = self._keyword(scope, request, None) if has_fts else {}
            hits = [self._hit(r, text_score=r.score) for r in rows.values()]
            return self._result(tables, hits, mode="keyword", relaxed=0.0, notes=note)
        loaded = self._loaded_vectors(tables) if scope.chunks else None
        keyword_leg: Future[dict[str, Row]] | None = None
        hybrid = self.context.config.query.hybrid
        if hybrid.enabled and has_fts:  # beside the vector leg (LanceDB releases the GIL)
            keyword_leg = on_thread(self._keyword, scope, request, loaded)
        vector = self._vector_rows(scope, loaded, query_vector, request)
        if keyword_leg is None:
            hits = [self._hit(r, vector_score=r.score) for r in vector.values()]
            return self._result(tables, hits, mode="vector", relaxed=None)
        keyword = keyword_leg.result()
        hits = merge(keyword, vector, request.query, self.context, self.name)
        limit = request.candidates
        return self._result(tables, hits[:limit], mode="hybrid", relaxed=hybrid.text_weight)

    def _keyword(
        self, scope: Scope, request: SearchRequest, loaded: _vectors.Loaded | None
    ) -> dict[str, Row]:
        return _search.keyword_rows(
            scope.table,
            request.query,
            where=scope.where,
            limit=request.candidates,
            known=loaded,
            columns=scope.columns,
        )

    def _loaded_vectors(self, tables: Tables) -> _vectors.Loaded | None:
        """The chunks' vectors and rows in memory, when ``vector_search`` uses them (the
        caller checked the generation has vectors).

        ``auto`` prefers memory while it fits, ANN index or not: exact, and on object
        storage an ANN query fetches its ``refine_factor × k`` candidates' vectors row by
        row (about 190 requests a query at 100k chunks).
        """
        if self.settings.vector_search == "lance":
            return None
        budget = self.settings.memory_budget_mb * 2**20
        return self._vectors.load(tables.generation, tables.chunks, budget)

    def _vector_rows(
        self,
        scope: Scope,
        loaded: _vectors.Loaded | None,
        query_vector: Any,
        request: SearchRequest,
    ) -> dict[str, Row]:
        """Exact search in memory while the vectors fit (``vector_search``), else LanceDB's."""
        if not np.any(query_vector):
            return {}
        limit = request.candidates
        if loaded is not None:
            return _vectors.top(loaded, query_vector, sources=request.sources, limit=limit)
        ann = None
        if scope.chunks and _housekeeping.has_ann(scope.table):
            ann = _search.Ann(self.settings.nprobes, self.settings.refine_factor, self.settings.ef)
        return _search.vector_rows(
            scope.table,
            query_vector,
            where=scope.where,
            limit=limit,
            ann=ann,
            columns=scope.columns,
        )

    def _result(
        self,
        tables: Tables,
        hits: list[Hit],
        *,
        mode: str,
        relaxed: float | None,
        notes: tuple[str, ...] = (),
    ) -> BackendResult:
        return BackendResult(
            hits=tuple(self._with_entries(tables, hits)),
            mode=mode,
            relaxed_min_score=relaxed,
            notes=notes,
        )

    def _hit(
        self, row: Row, *, vector_score: float | None = None, text_score: float | None = None
    ) -> Hit:
        return row.hit(self.name, row.score, vector_score, text_score)

    def _with_entries(self, tables: Tables, hits: list[Hit]) -> list[Hit]:
        ids = [h.chunk_id for h in hits if h.chunk_id and h.path == self.journal]
        if not ids:
            return hits
        entries = _transfer.entries_by_chunk(tables.entries, ids)
        return [replace(h, entry=entries[h.chunk_id]) if h.chunk_id in entries else h for h in hits]

    def recall_entries(self, request: EntryRequest) -> tuple[EntryMatch, ...]:
        """Entries from the ``entries`` table's vectors and native columns."""
        pointer = self._pointer()
        if pointer is None or pointer.dims is None:
            raise Unsupported("the store has no entry vectors yet", backend=self.name)
        tables = self.store.guard("recall", lambda: self.store.tables(pointer.generation))
        found: tuple[EntryMatch, ...] = self.store.guard(
            "recall", lambda: _recall.recall(tables.entries, request)
        )
        return found

    # -- status, close, transfer --------------------------------------------------------

    def status(self, *, deep: bool = False) -> BackendStatus:
        try:
            return _housekeeping.status(self.store, self.name, deep=deep)
        except MemoryRouterError as error:
            details = {"uri": self.store.shown_uri, "hint": error.hint} if error.hint else {}
            return BackendStatus(
                name=self.name, available=False, error=error.message, details=details
            )

    def close(self) -> None:
        self.store.close()

    def reset(self) -> list[str]:
        """Drop every table of the store (on its folder or object-store prefix)."""
        self._vectors = VectorCache()
        return self.store.reset()

    def export_chunks(self) -> Iterator[Chunk]:
        pointer = self._pointer()
        if pointer is None:
            return
        tables = self.store.guard("export", lambda: self.store.tables(pointer.generation))
        with self.store.translating("export"):
            yield from _transfer.export_chunks(self.store, tables)

    def index_fingerprint(self) -> Mapping[str, Any] | None:
        pointer = self._pointer()
        return dict(pointer.fingerprint) if pointer is not None else None

    def stage(self, *, fingerprint: Mapping[str, Any], resume: bool) -> Staging:
        staging: Staging = self.store.guard(
            "migrate", lambda: LanceStaging.open(self.store, fingerprint, resume=resume)
        )
        return staging

    def import_chunks(self, chunks: Iterable[Chunk], *, fingerprint: Mapping[str, Any]) -> int:
        with self.store.write_lock:
            written: int = self.store.guard(
                "import",
                lambda: _transfer.import_chunks(
                    self.store, chunks, fingerprint=fingerprint, journal=self.journal
                ),
                long=True,
            )
            return written


def merge(
    keyword: Mapping[str, Row],
    vector: Mapping[str, Row],
    query: str,
    context: BackendContext,
    backend: str,
) -> list[Hit]:
    """The two legs fused exactly as the built-in backend fuses them (``query.hybrid.fusion``)."""
    model = context.embedder.model if context.embedder is not None else None
    hybrid = context.config.query.hybrid
    return fuse_chunks(hybrid, vector, keyword, query=query, model=model, backend=backend)
