"""Keyword answers straight from the Markdown while a backend's index is being built.

A cold standby that has never been built cannot answer from its index; chunking the
workspace and loading it into an in-memory FTS5 table takes about a second for a
thousand chunks, so the first query gets a keyword-only (BM25) answer within seconds
while the real index, vectors and all, is built in the background.
"""

from __future__ import annotations

import sqlite3
import threading

from .._config.config import Config
from .._types import BackendResult, Hit, SearchRequest
from .._workspace.snapshot import FTS_ONLY, take_snapshot
from .keywords import bm25_to_score, build_or_query, query_keywords, query_tokens

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
        """BM25 over the OR of the query's keywords (its plain tokens when it has none)."""
        keywords = query_keywords(request.query) or query_tokens(request.query)
        match = build_or_query(keywords)
        if match is None:
            return BackendResult(hits=(), mode=MODE, relaxed_min_score=0.0)
        sql = (
            "SELECT path, source, start_line, end_line, text, bm25(chunks) AS rank FROM chunks"
            " WHERE chunks MATCH ? ORDER BY rank LIMIT ?"
        )
        with self._lock:
            rows = self._db.execute(sql, (match, request.candidates)).fetchall()
        hits = tuple(
            Hit(
                path=path,
                start_line=start,
                end_line=end,
                score=bm25_to_score(rank),
                snippet=text,
                source=source,
                backend=backend,
                text_score=bm25_to_score(rank),
            )
            for path, source, start, end, text, rank in rows
            if request.sources is None or source in request.sources
        )
        return BackendResult(hits=hits, mode=MODE, relaxed_min_score=0.0)

    def close(self) -> None:
        with self._lock:
            self._db.close()
