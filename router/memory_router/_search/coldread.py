"""Keyword answers straight from the Markdown while a backend's index is being built.

A cold standby that has never been built cannot answer from its index; chunking the
workspace and loading it into an in-memory FTS5 table takes about a second for a
thousand chunks, so the first query gets a keyword-only (BM25) answer within seconds
while the real index, vectors and all, is built in the background.
"""

from __future__ import annotations

import sqlite3
import threading
from dataclasses import replace

from .._config.config import Config
from .._types import BackendResult, ScoredChunk, SearchRequest
from .._workspace.snapshot import FTS_ONLY, take_snapshot
from .hybrid import keyword_chunks
from .keywords import bm25_to_score, build_or_query, query_keywords

MODE = "keyword-from-markdown"


class MarkdownScan:
    """Every chunk of the workspace in an in-memory FTS5 table, searched with BM25."""

    def __init__(self, config: Config) -> None:
        snapshot = take_snapshot(config, fingerprint={}, model=FTS_ONLY)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(":memory:", check_same_thread=False)
        self._db.execute(
            "CREATE VIRTUAL TABLE chunks USING fts5("
            "text, path UNINDEXED, source UNINDEXED, start_line UNINDEXED, end_line UNINDEXED)"
        )
        rows = (
            (c.text, c.path, c.source, c.start_line, c.end_line)
            for doc in snapshot.documents
            for c in snapshot.chunks(doc)
        )
        with self._db:
            self._db.executemany("INSERT INTO chunks VALUES (?,?,?,?,?)", rows)

    def search(self, request: SearchRequest, *, backend: str) -> BackendResult:
        """BM25 over the OR of the query's keywords, scored as every keyword-only answer
        is (:func:`~memory_router._search.hybrid.keyword_chunks`)."""
        match = build_or_query(query_keywords(request.query))
        if match is None:
            return BackendResult(hits=(), mode=MODE)
        sql = (
            "SELECT rowid, path, source, start_line, end_line, text, bm25(chunks) AS rank"
            " FROM chunks WHERE chunks MATCH ? ORDER BY rank LIMIT ?"
        )
        with self._lock:
            rows = self._db.execute(sql, (match, request.candidates)).fetchall()
        found = {
            str(rowid): ScoredChunk(str(rowid), path, source, start, end, text, bm25_to_score(rank))
            for rowid, path, source, start, end, text, rank in rows
            if request.sources is None or source in request.sources
        }
        hits = keyword_chunks(found, query=request.query, backend=backend, explain=request.explain)
        return BackendResult(hits=tuple(replace(h, chunk_id=None) for h in hits), mode=MODE)

    def close(self) -> None:
        with self._lock:
            self._db.close()
