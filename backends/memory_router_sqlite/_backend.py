"""The built-in SQLite backend: FTS5 BM25 + sqlite-vec (or numpy) vectors, hybrid merge."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import replace
from datetime import datetime
from typing import Any, cast

from memory_router import (
    Backend,
    BackendContext,
    BackendResult,
    BackendStatus,
    Category,
    Chunk,
    EmbeddingError,
    Entry,
    Hit,
    MemoryRouterError,
    NotFound,
    Progress,
    SearchRequest,
    Snapshot,
    Staging,
    SyncReport,
    fuse_chunks,
    keyword_chunks,
    no_progress,
)

from . import _search
from ._damage import is_corruption, remove_index_files
from ._db import choose_driver, read_meta, table_exists, translate, vec_dims
from ._search import Row, Scope
from ._settings import SqliteSettings
from ._store import Store, remove_db
from ._sync import sync_store
from ._transfer import SqliteStaging, export_chunks, import_chunks

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

    @property
    def model(self) -> str:
        embedder = self.context.embedder
        return embedder.model if embedder is not None else FTS_ONLY

    # -- sync ---------------------------------------------------------------------------

    def sync(
        self, snapshot: Snapshot, *, force: bool = False, progress: Progress = no_progress
    ) -> SyncReport:
        try:
            self.store.heal()
            report = sync_store(
                self.store,
                snapshot,
                embedder=self.context.embedder,
                force=force,
                progress=progress,
            )
        except MemoryRouterError:
            raise
        except Exception as error:  # sqlite3/sqlean errors and OSError from the swap
            raise self._translate(error, "sync") from error
        healed = self.store.take_healed()
        return replace(report, reason=healed, full_rebuild=True) if healed else report

    def _translate(self, error: Exception, doing: str) -> MemoryRouterError:
        """``error`` translated; a corrupt file is flagged so the next sync heals it."""
        if is_corruption(error):
            self.store.flag_damaged(f"{doing} failed: {error}")
            return self.store.damaged_error()
        return translate(error, backend=self.name, doing=doing)

    # -- search -------------------------------------------------------------------------

    def search(self, request: SearchRequest) -> BackendResult:
        try:
            with self.store.reader() as conn:
                return self._search(conn, request)
        except MemoryRouterError:
            raise
        except Exception as error:
            raise self._translate(error, "search") from error

    def _scope(self, conn: Any, request: SearchRequest) -> Scope:
        return Scope(
            model=self.model,
            filter_model=self.store.models(conn) != {self.model},
            sources=request.sources,
            limit=request.candidates,
            trigram=self.settings.fts_tokenizer == "trigram",
        )

    def _search(self, conn: Any, request: SearchRequest) -> BackendResult:
        scope = self._scope(conn, request)
        has_fts = table_exists(conn, "chunks_fts")
        if self.context.embedder is None or request.mode == "keyword":
            if not has_fts:
                return BackendResult(hits=(), mode="keyword", notes=("FTS5 is unavailable",))
            return self._keyword_only(conn, scope, request.query)
        try:
            query_vector = self.context.embedder.embed_query(request.query)
        except EmbeddingError as error:
            result = self._keyword_only(conn, scope, request.query) if has_fts else None
            note = f"query embedding failed, keyword-only answer: {error.message}"
            return BackendResult(hits=result.hits if result else (), mode="keyword", notes=(note,))
        hybrid = self.context.config.query.hybrid
        vector: dict[str, Row] = {}
        if query_vector.any():
            use_vec = self._use_vec(conn, len(query_vector))
            matrix = None if use_vec else self.store.matrix(conn, self.model)
            vector = _search.vector_rows(conn, scope, query_vector, use_vec=use_vec, matrix=matrix)
        if not hybrid.enabled or not has_fts or request.mode == "vector":
            only = [self._hit(r, vector_score=r.score) for r in vector.values()]
            return BackendResult(hits=tuple(self._with_entries(conn, only)), mode="vector")
        keyword_side = _search.keyword_or if hybrid.keyword_query == "or" else _search.keyword_and
        keyword = keyword_side(conn, scope, request.query)
        hits = fuse_chunks(
            hybrid,
            vector,
            keyword,
            query=request.query,
            model=self.context.embedder.model,
            backend=self.name,
        )
        return BackendResult(
            hits=tuple(self._with_entries(conn, hits[: request.candidates])),
            mode="hybrid",
            relaxed_min_score=hybrid.text_weight,
        )

    def _use_vec(self, conn: Any, dims: int) -> bool:
        """Whether to answer the vector side with sqlite-vec KNN (see :class:`SqliteSettings`)."""
        mode = self.settings.vector_search
        if mode == "memory" or not self.store.vec_ready(conn, dims):
            return False
        if mode == "sqlite-vec":
            return True
        needed = self.store.vector_count(conn, self.model) * dims * 4
        return needed > self.settings.memory_budget_mb * 2**20

    def _keyword_only(self, conn: Any, scope: Scope, query: str) -> BackendResult:
        if self.context.config.query.keyword_mode == "reference":
            # OpenClaw's scores and its relaxation (every hit kept when none passes).
            rows = _search.keyword_reference(conn, scope, query)
            hits = [self._hit(r, text_score=r.score) for r in rows.values()][: scope.limit]
            return BackendResult(
                hits=tuple(self._with_entries(conn, hits)), mode="keyword", relaxed_min_score=0.0
            )
        rows = _search.keyword_or(conn, scope, query)
        hits = keyword_chunks(rows, query=query, backend=self.name)[: scope.limit]
        return BackendResult(hits=tuple(self._with_entries(conn, hits)), mode="keyword")

    def _hit(
        self, row: Row, *, vector_score: float | None = None, text_score: float | None = None
    ) -> Hit:
        return row.hit(self.name, row.score, vector_score, text_score)

    def _with_entries(self, conn: Any, hits: list[Hit]) -> list[Hit]:
        ids = [h.chunk_id for h in hits if h.chunk_id]
        if not ids:
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
        if self.store.damage is not None:
            error = self.store.damaged_error()
            return BackendStatus(
                name=self.name, available=False, error=f"{error.message}; {error.hint}"
            )
        try:
            with self.store.reader() as conn:
                files = int(conn.execute("SELECT COUNT(*) FROM files").fetchone()[0])
                chunks = int(conn.execute("SELECT COUNT(*) FROM chunks").fetchone()[0])
                details = self._details(conn) if deep else {"path": str(self.path)}
        except MemoryRouterError as error:
            return BackendStatus(name=self.name, available=False, error=error.message)
        except Exception as error:
            message = translate(error, backend=self.name, doing="status").message
            return BackendStatus(name=self.name, available=False, error=message)
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
        return [str(p) for p in remove_index_files(self.path)]

    def export_chunks(self) -> Iterator[Chunk]:
        with self.store.reader() as conn:
            yield from export_chunks(conn)

    def import_chunks(self, chunks: Iterable[Chunk], *, fingerprint: Mapping[str, Any]) -> int:
        try:
            self.store.heal()
            return import_chunks(self.store, chunks, fingerprint=fingerprint)
        except MemoryRouterError:
            raise
        except Exception as error:
            raise translate(error, backend=self.name, doing="import") from error

    def index_fingerprint(self) -> Mapping[str, Any] | None:
        with self.store.reader() as conn:
            meta = read_meta(conn)
        if meta is not None:
            meta.pop("ftsTokenizer", None)
        return meta

    def stage(self, *, fingerprint: Mapping[str, Any], resume: bool) -> Staging:
        path = self.path.with_name(f"{self.path.name}.migrating")
        if resume and not path.exists():
            raise NotFound(f"no interrupted migration into {path}", key=str(path))
        if not resume:
            remove_db(path)
        try:
            return SqliteStaging(self.store, path, fingerprint)
        except MemoryRouterError:
            raise
        except Exception as error:
            raise translate(error, backend=self.name, doing="staging") from error


def _attach(hit: Hit, entry: Entry | None) -> Hit:
    return hit if entry is None else replace(hit, entry=entry)
