"""The built-in SQLite backend: FTS5 BM25 + sqlite-vec (or numpy) vectors, hybrid merge."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import replace
from datetime import datetime
from typing import Any, cast

from memory_router import (
    BackendStatus,
    Category,
    EmbeddingError,
    Entry,
    Hit,
    MemoryRouterError,
    NotFound,
    Progress,
    SyncReport,
    no_progress,
)
from memory_router.kit import (
    Backend,
    BackendContext,
    BackendResult,
    Chunk,
    SearchRequest,
    Snapshot,
    Staging,
    SyncTally,
    fuse_chunks,
    fuse_nearest,
    keyword_chunks,
    vectors_footprint,
)

from . import _search
from ._damage import remove_index_files
from ._db import choose_driver, read_meta, table_exists, vec_dims
from ._impact import Postings
from ._parallel import alone, searching
from ._search import Halves, Row, Scope
from ._settings import SqliteSettings
from ._store import Store, remove_db
from ._sync import sync_store
from ._transfer import SqliteStaging, export_chunks
from ._vectors import Matrix

FTS_ONLY = "fts-only"


class SqliteBackend(Backend):
    """One SQLite file per agent with OpenClaw's schema (see the package docstring)."""

    def __init__(self, context: BackendContext) -> None:
        super().__init__(context)
        self.settings: SqliteSettings = context.settings or SqliteSettings()
        self.path = context.config.expand(self.settings.path)
        self.driver = choose_driver(
            vector=self.settings.vector, extension_path=self.settings.extension_path
        )
        self.store = Store(
            self.path,
            self.driver,
            tokenizer=self.settings.fts_tokenizer,
            busy_timeout_ms=self.settings.busy_timeout_ms,
            name=self.name,
        )
        self._warm = False  # whether a search ran: the next one may use the postings

    @property
    def model(self) -> str:
        embedder = self.context.embedder
        return embedder.model if embedder is not None else FTS_ONLY

    # -- sync ---------------------------------------------------------------------------

    def sync(
        self, snapshot: Snapshot, *, force: bool = False, progress: Progress = no_progress
    ) -> SyncReport:
        tally = SyncTally(self.name, self.context.embedder)
        with self.store.translating("sync"):
            self.store.heal()
            chunks, reason = sync_store(
                self.store,
                snapshot,
                tally,
                embedder=self.context.embedder,
                force=force,
                progress=progress,
            )
        # A healed file was rebuilt from nothing: say why, rather than "no index yet".
        return tally.report(chunks=chunks, reason=self.store.take_healed() or reason)

    # -- search -------------------------------------------------------------------------

    def search(self, request: SearchRequest) -> BackendResult:
        with self.store.translating("search"), searching(), self.store.reader() as conn:
            # A large index ranks an OR of keywords from postings in memory from its
            # second search on (a process that searches once, as the CLI does, never
            # fetches them); other queries in two halves side by side while no other
            # search runs in this process (then the other core is free; see ._parallel).
            middle = self.store.fts_middle(conn)
            postings = self.store.postings if middle is not None and self._warm else None
            self._warm = True
            if middle is None or not alone():
                result = self._search(conn, request, None, postings)
            else:
                with self.store.reader() as other:
                    result = self._search(conn, request, Halves(middle, other), postings)
        self.store.postings.fetch_asked()  # after the answer, not beside it
        if self.store.read_only is None:
            return result
        note = f"{self.name}: {self.store.read_only[0]}: answered from the index as it is"
        return replace(result, notes=(*result.notes, note))

    def _scope(
        self, conn: Any, request: SearchRequest, halves: Halves | None, postings: Postings | None
    ) -> Scope:
        return Scope(
            model=self.model,
            filter_model=self.store.models(conn) != {self.model},
            rows=self.store.rows_sql(conn),
            sources=request.sources,
            limit=request.candidates,
            trigram=self.settings.fts_tokenizer == "trigram",
            halves=halves,
            postings=postings,
        )

    def _search(
        self,
        conn: Any,
        request: SearchRequest,
        halves: Halves | None,
        postings: Postings | None = None,
    ) -> BackendResult:
        scope = self._scope(conn, request, halves, postings)
        has_fts = table_exists(conn, "chunks_fts")
        if self.context.embedder is None or request.mode == "keyword":
            if not has_fts:
                return BackendResult(hits=(), mode="keyword", notes=("FTS5 is unavailable",))
            return self._keyword_only(conn, scope, request)
        try:
            query_vector = self.context.embedder.embed_query(request.query)
        except EmbeddingError as error:
            result = self._keyword_only(conn, scope, request) if has_fts else None
            note = f"query embedding failed, keyword-only answer: {error.message}"
            return BackendResult(hits=result.hits if result else (), mode="keyword", notes=(note,))
        hybrid = self.context.config.query.hybrid
        if not hybrid.enabled or not has_fts or request.mode == "vector":
            vector = self._vector_leg(conn, scope, query_vector, {})
            only = [self._hit(r, vector_score=r.score) for r in vector.values()]
            return BackendResult(hits=tuple(self._with_entries(conn, only)), mode="vector")
        return BackendResult(
            hits=tuple(self._with_entries(conn, self._fused(conn, scope, request, query_vector))),
            mode="hybrid",
            relaxed_min_score=hybrid.text_weight,
        )

    def _fused(
        self, conn: Any, scope: Scope, request: SearchRequest, query_vector: Any
    ) -> list[Hit]:
        """The hybrid search's legs fused. With the vectors in memory the vector leg is
        fused on its scores, and only the rows of the vector candidates kept that the
        keyword leg did not find are read (most are not kept: 76 of 80 read for nothing
        at 100k chunks with the bench's hashing vectors)."""
        hybrid = self.context.config.query.hybrid
        keyword_side = _search.keyword_or if hybrid.keyword_query == "or" else _search.keyword_and
        keyword = keyword_side(conn, scope, request.query)
        model = self.context.embedder.model if self.context.embedder else None
        matrix = self._in_memory(conn, query_vector)
        if matrix is None:
            vector = self._vector_leg(conn, scope, query_vector, keyword)
            return fuse_chunks(
                hybrid, vector, keyword, query=request.query, model=model, backend=self.name,
                limit=request.candidates, explain=request.explain,
            )  # fmt: skip
        nearest = {n.id: n for n in matrix.top(query_vector, scope.limit, scope.sources)}
        return fuse_nearest(
            hybrid,
            {i: n.score for i, n in nearest.items()},
            keyword,
            read=lambda ids: _search.vector_details(conn, [nearest[i] for i in ids], {}),
            query=request.query,
            model=model,
            backend=self.name,
            limit=request.candidates,
            explain=request.explain,
        )

    def _in_memory(self, conn: Any, query_vector: Any) -> Matrix | None:
        """The vectors in memory when the vector leg scans them (``None``: sqlite-vec KNN
        answers it, or the query is the zero vector)."""
        if not query_vector.any() or self._use_vec(conn, len(query_vector)):
            return None
        return self.store.matrix(conn, self.model)

    def _vector_leg(
        self, conn: Any, scope: Scope, query_vector: Any, known: Mapping[str, Row]
    ) -> dict[str, Row]:
        """The vector leg (empty for a zero vector); rows in ``known`` are not read again."""
        if not query_vector.any():
            return {}
        use_vec = self._use_vec(conn, len(query_vector))
        matrix = None if use_vec else self.store.matrix(conn, self.model)
        return _search.vector_rows(
            conn, scope, query_vector, use_vec=use_vec, matrix=matrix, known=known
        )

    def _use_vec(self, conn: Any, dims: int) -> bool:
        """Whether to answer the vector side with sqlite-vec KNN (see :class:`SqliteSettings`)."""
        mode = self.settings.vector_search
        if mode == "memory" or not self.store.vec_ready(conn, dims):
            return False
        if mode == "sqlite-vec":
            return True
        needed = vectors_footprint(self.store.vector_count(conn, self.model), dims)
        return needed > self.settings.memory_budget_mb * 2**20

    def _keyword_only(self, conn: Any, scope: Scope, request: SearchRequest) -> BackendResult:
        query = request.query
        if self.context.config.query.keyword_mode == "reference":
            # OpenClaw's scores and its relaxation (every hit kept when none passes).
            rows = _search.keyword_reference(conn, scope, query)
            hits = [self._hit(r, text_score=r.score) for r in rows.values()][: scope.limit]
            return BackendResult(
                hits=tuple(self._with_entries(conn, hits)), mode="keyword", relaxed_min_score=0.0
            )
        rows = _search.keyword_or(conn, scope, query)
        found = keyword_chunks(rows, query=query, backend=self.name, explain=request.explain)
        hits = found[: scope.limit]
        return BackendResult(hits=tuple(self._with_entries(conn, hits)), mode="keyword")

    def _hit(
        self, row: Row, *, vector_score: float | None = None, text_score: float | None = None
    ) -> Hit:
        return row.hit(self.name, row.score, vector_score, text_score)

    def _with_entries(self, conn: Any, hits: list[Hit]) -> list[Hit]:
        """``hits`` with the entries (importance, category) of the chunks that are entries;
        an index without entries is not asked about 80 chunk ids (a fortieth of a warm
        search)."""
        ids = [h.chunk_id for h in hits if h.chunk_id]
        if not ids or conn.execute("SELECT 1 FROM entries LIMIT 1").fetchone() is None:
            return hits
        marks = ",".join("?" * len(ids))
        entries = {
            r[0]: Entry(
                id=r[1],
                text=r[5],
                importance=float(r[2]),
                category=cast(Category, r[3]),
                created_at=datetime.fromisoformat(r[4]),
            )
            for r in conn.execute(
                "SELECT chunk_id, entry_id, importance, category, created_at, text FROM entries"
                f" WHERE chunk_id IN ({marks})",
                ids,
            )
        }
        if not entries:
            return hits
        return [_attach(h, entries.get(h.chunk_id or "")) for h in hits]

    # -- status, close, transfer --------------------------------------------------------

    def status(self, *, deep: bool = False) -> BackendStatus:
        """Counts, and with ``deep`` the driver, vector path and meta. A damaged file is
        unavailable with the way out (``message; hint``), as is any other failure."""
        try:
            with self.store.translating("status"), self.store.reader() as conn:
                files = int(conn.execute("SELECT COUNT(*) FROM files").fetchone()[0])
                chunks = int(conn.execute("SELECT COUNT(*) FROM chunks").fetchone()[0])
                details = self._details(conn) if deep else {"path": str(self.path)}
        except MemoryRouterError as error:
            shown = f"{error.message}; {error.hint}" if error.hint else error.message
            return BackendStatus(name=self.name, available=False, error=shown)
        if self.store.read_only is not None:
            details["read_only"] = f"{self.store.read_only[0]} ({self.store.read_only[1]})"
        return BackendStatus(
            name=self.name, available=True, files=files, chunks=chunks, details=details
        )

    def _details(self, conn: Any) -> dict[str, Any]:
        dims = vec_dims(conn)
        if self.driver.vector_path is None:
            vector, why = "numpy", f"sqlite-vec not used: {self.driver.reason}"
        elif self.context.embedder is None:
            vector, why = "none", "keyword-only mode (no embedding provider)"
        elif dims is None:
            vector, why = "numpy", "sqlite-vec loaded, but chunks_vec is not built yet"
        elif not self._use_vec(conn, dims):
            vector = "numpy"
            why = (
                f"vector_search = {self.settings.vector_search!r}: the vectors fit"
                f" memory_budget_mb = {self.settings.memory_budget_mb} (sqlite-vec kept in sync)"
            )
        else:
            vector, why = "sqlite-vec", f"{self.driver.reason} ({self.driver.vector_path})"
        return {
            "path": str(self.path),
            "driver": self.driver.name,
            "vector": vector,
            "vector_reason": why,
            "vector_dims": dims,
            "fts": self.store.fts_error or f"fts5 ({self.settings.fts_tokenizer})",
            "schema_version": int(conn.execute("PRAGMA user_version").fetchone()[0]),
            "meta": read_meta(conn),
            "model": self.model,
        }

    def close(self) -> None:
        self.store.close()

    def reset(self) -> list[str]:
        self.store.close()
        with self.store.translating("reset", heal=False):
            return [str(p) for p in remove_index_files(self.path)]

    def export_chunks(self) -> Iterator[Chunk]:
        with self.store.translating("export"), self.store.reader() as conn:
            yield from export_chunks(conn)

    def index_fingerprint(self) -> Mapping[str, Any] | None:
        with self.store.translating("fingerprint"), self.store.reader() as conn:
            meta = read_meta(conn)
        if meta is not None:
            meta.pop("ftsTokenizer", None)
        return meta

    def stage(self, *, fingerprint: Mapping[str, Any], resume: bool) -> Staging:
        path = self.path.with_name(f"{self.path.name}.migrating")
        if resume and not path.exists():
            raise NotFound(f"no interrupted migration into {path}", key=str(path))
        with self.store.translating("staging", heal=False):  # errors of the copy's file
            if not resume:
                remove_db(path)
            return SqliteStaging(self.store, path, fingerprint)


def _attach(hit: Hit, entry: Entry | None) -> Hit:
    return hit if entry is None else replace(hit, entry=entry)
