"""The LanceDB backend: chunks and entries on a local folder or S3-compatible storage."""

from __future__ import annotations

import functools
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from memory_router import (
    BackendStatus,
    EmbeddingError,
    EntryMatch,
    Hit,
    MemoryRouterError,
    Progress,
    SyncReport,
    Unsupported,
    no_progress,
)
from memory_router.kit import (
    Backend,
    BackendContext,
    BackendResult,
    Chunk,
    EntryRequest,
    SearchRequest,
    Snapshot,
    Staging,
    SyncTally,
    fuse_chunks,
    keyword_chunks,
    wait_future,
)

from . import _housekeeping, _recall, _search, _transfer, _vectors
from ._lance import on_thread, unwritable_folder
from ._search import Row, Scope
from ._settings import LanceSettings, is_remote, mask_uri
from ._staging import LanceStaging
from ._store import LanceStore, Pointer, Tables
from ._sync import settled, sync_generation
from ._vectors import VectorCache
from ._warm import FtsWarmth

if TYPE_CHECKING:
    from concurrent.futures import Future


@dataclass(frozen=True, slots=True)
class Ready:
    """What one search reads from memory: the generation's tables, the search's scope
    (``None`` when its filters exclude everything), whether that table has an FTS index
    (then held whole in LanceDB's cache), and the chunks' vectors and rows when held."""

    tables: Tables
    scope: Scope | None
    has_fts: bool
    loaded: _vectors.Loaded | None


class LanceBackend(Backend):
    """Chunks and entries in LanceDB tables (see the package docstring)."""

    def __init__(self, context: BackendContext) -> None:
        super().__init__(context)
        self.settings: LanceSettings = context.settings or LanceSettings()
        uri = self.settings.resolved_uri(context.config)
        if not is_remote(uri):
            try:
                Path(uri).mkdir(parents=True, exist_ok=True)
            except OSError as error:
                raise unwritable_folder(uri, error, backend=self.name) from None
        self.store = LanceStore(self.settings, uri, name=self.name, shown_uri=mask_uri(uri))
        self.journal = Path(context.config.entries.path).as_posix()
        self._vectors = VectorCache()
        self._fts = FtsWarmth(_housekeeping.FTS_INDEX)

    # -- sync ---------------------------------------------------------------------------

    def sync(
        self, snapshot: Snapshot, *, force: bool = False, progress: Progress = no_progress
    ) -> SyncReport:
        tally = SyncTally(self.name, self.context.embedder)
        chunks = None if force else self._settled(snapshot)
        if chunks is not None:
            tally.unchanged = len(snapshot.documents)
            return tally.report(chunks=chunks, reason=None)
        with self.store.writing("sync"):
            reason, written = self.store.guard(
                "sync",
                lambda: sync_generation(
                    self.store,
                    snapshot,
                    self.context.embedder,
                    tally,
                    force=force,
                    progress=progress,
                    journal=self.journal,
                ),
                long=True,
            )
            pointer = self.store.guard("sync", self.store.pointer)
            tables = (
                self.store.guard("sync", lambda: self.store.tables(pointer.generation))
                if pointer
                else None
            )
            notes = self._maintain(tables, written, rebuilt=reason is not None)
            chunks = self.store.guard("sync", lambda: tables.chunks.count_rows()) if tables else 0
        return tally.report(chunks=chunks, reason=reason, errors=notes)

    def _settled(self, snapshot: Snapshot) -> int | None:
        """:func:`~._sync.settled` while reads go through pylance (a store read only);
        ``None`` when there is something to write, or the light read failed (the sync
        then reads through lancedb, which reports the store's own error, if any)."""
        if not self.store.light:
            return None
        try:
            found: int | None = self.store.guard(
                "sync", lambda: settled(self.store, snapshot, journal=self.journal)
            )
        except MemoryRouterError:
            self.store.drop_light()
            return None
        return found

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
        with self.store.writing("optimize"):
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
        light = self.store.light
        try:
            return self._search_once(request)
        except MemoryRouterError:
            if not light:
                raise
        # A read through pylance failed (say a format it cannot read): lancedb answers,
        # or reports the store's own error.
        self.store.drop_light()
        return self._search_once(request)

    def _search_once(self, request: SearchRequest) -> BackendResult:
        pointer = self._pointer()
        if pointer is None:
            return BackendResult(hits=(), mode="hybrid", notes=("the store is not built yet",))
        # Embedding is no object-store call: a slow provider must not use up the store's
        # deadline, nor mark a store that answers as unreachable.
        query_vector, note = self._embedded(pointer, request.query)
        ready = self._ready(pointer, request, vectors=query_vector is not None)
        return self.store.guard(  # type: ignore[no-any-return]
            "search", lambda: self._search(ready, request, query_vector, note)
        )

    def _ready(self, pointer: Pointer, request: SearchRequest, *, vectors: bool) -> Ready:
        """What the search reads from memory, loaded first when it is not held yet.

        A first load (the tables opened, the FTS index read whole, the chunks' vectors
        and rows) reads a big table's every byte: on object storage it may outlast one
        call's deadline, so it is long work, going on while the store answers the probe;
        a search waiting for another's load waits the same way, instead of using up its
        deadline and marking an answering store unreachable. Finding it all held already
        is one short call.
        """
        check = functools.partial(self._prepared, pointer, request, vectors=vectors)
        held: Ready | None = self.store.guard("search", lambda: check(load=False))
        if held is not None:
            return held
        ready: Ready = self.store.guard("search", lambda: check(load=True), long=True)
        return ready

    def _prepared(
        self, pointer: Pointer, request: SearchRequest, *, vectors: bool, load: bool
    ) -> Ready | None:
        """The search's :class:`Ready`, loading what it lacks when ``load``; else
        ``None`` unless all of it is held (then it reads no index or data object)."""
        generation = pointer.generation
        tables = self.store.read_tables(generation) if load else self.store.opened(generation)
        if tables is None:
            return None
        scope = _search.scope(tables, request.sources, request.category)
        if scope is None:
            return Ready(tables, None, has_fts=False, loaded=None)
        has_fts = _housekeeping.has_fts(scope.table)
        version = int(scope.table.version)
        if has_fts and not self._fts.warm(scope.table, version):
            if not load:
                return None
            self._fts.ensure(scope.table)
        # ``auto`` prefers the vectors in memory while they fit, ANN index or not: exact,
        # and on object storage an ANN query fetches its ``refine_factor × k``
        # candidates' vectors row by row (about 190 requests a query at 100k chunks).
        if not (vectors and scope.chunks and self.settings.vector_search != "lance"):
            return Ready(tables, scope, has_fts=has_fts, loaded=None)
        if load:
            budget = self.settings.memory_budget_mb * 2**20
            loaded = self._vectors.load(generation, tables.chunks, budget)
            return Ready(tables, scope, has_fts=has_fts, loaded=loaded)
        known, loaded = self._vectors.held(generation, version)
        return Ready(tables, scope, has_fts=has_fts, loaded=loaded) if known else None

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
        ready: Ready,
        request: SearchRequest,
        query_vector: Any,
        note: tuple[str, ...],
    ) -> BackendResult:
        tables, scope, loaded = ready.tables, ready.scope, ready.loaded
        if scope is None:
            return self._result(tables, [], mode="hybrid", relaxed=None)
        if query_vector is None:
            rows = self._keyword(scope, request, None) if ready.has_fts else {}
            hits = keyword_chunks(
                rows, query=request.query, backend=self.name, explain=request.explain
            )
            return self._result(tables, hits, mode="keyword", relaxed=None, notes=note)
        keyword_leg: Future[dict[str, Row]] | None = None
        hybrid = self.context.config.query.hybrid
        if hybrid.enabled and ready.has_fts:  # beside the vector leg (LanceDB releases the GIL)
            keyword_leg = on_thread(self._keyword, scope, request, loaded)
        vector = self._vector_rows(scope, loaded, query_vector, request)
        if keyword_leg is None:
            hits = [self._hit(r, vector_score=r.score) for r in vector.values()]
            return self._result(tables, hits, mode="vector", relaxed=None)
        keyword = wait_future(keyword_leg)
        hits = merge(keyword, vector, request, self.context, self.name)
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
        return LanceStaging.open(self.store, fingerprint, resume=resume)


def merge(
    keyword: Mapping[str, Row],
    vector: Mapping[str, Row],
    request: SearchRequest,
    context: BackendContext,
    backend: str,
) -> list[Hit]:
    """The two legs fused exactly as the built-in backend fuses them (``query.hybrid.fusion``)."""
    model = context.embedder.model if context.embedder is not None else None
    hybrid = context.config.query.hybrid
    return fuse_chunks(
        hybrid, vector, keyword, query=request.query, model=model, backend=backend,
        explain=request.explain,
    )  # fmt: skip
