"""Read-only facts from QMD's index file: documents per collection, vectors present, and
how rare a keyword is.

QMD's ``status`` command prints text only, so status reads its SQLite file directly
(read-only, short busy timeout); a missing or locked file reads as empty.
"""

from __future__ import annotations

import sqlite3
import urllib.parse
from collections.abc import Sequence
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True, slots=True, kw_only=True)
class IndexStats:
    """``documents`` per collection (active only) and the number of embedded chunks."""

    documents: dict[str, int] = field(default_factory=dict)
    vectors: int = 0
    error: str | None = None


def read_stats(path: Path) -> IndexStats:
    """What the index at ``path`` holds now."""
    if not path.is_file():
        return IndexStats(error="no index yet")
    try:
        uri = f"file:{urllib.parse.quote(str(path))}?mode=ro"
        with closing(sqlite3.connect(uri, uri=True, timeout=1.0)) as db:
            rows = db.execute(
                "SELECT collection, COUNT(*) FROM documents WHERE active = 1 GROUP BY collection"
            ).fetchall()
            vectors = _count_vectors(db)
    except sqlite3.Error as error:
        return IndexStats(error=f"cannot read the QMD index: {error}")
    return IndexStats(documents={str(c): int(n) for c, n in rows}, vectors=vectors)


def _count_vectors(db: sqlite3.Connection) -> int:
    try:
        return int(db.execute("SELECT COUNT(*) FROM content_vectors").fetchone()[0])
    except sqlite3.OperationalError:  # created by the first embed
        return 0


PRIOR_NOTES = 10
"""Imaginary notes holding no keyword, so a small index cannot call a word common."""


def keyword_weights(path: Path, keywords: Sequence[str]) -> dict[str, float] | None:
    """How much each keyword says (0–1), or ``None`` when the index cannot be read.

    ``1 - df / (N + 10)``: ``df`` notes of the ``N`` indexed hold the keyword (a prefix of
    a ``porter`` token, as QMD's ``lex`` search matches it). A word in no note weighs 1,
    one in every note of a large index almost 0 (a name in every session of a diary), and
    in a small index every word stays near 1 (its counts prove little).
    """
    if not keywords or not path.is_file():
        return None
    try:
        uri = f"file:{urllib.parse.quote(str(path))}?mode=ro"
        with closing(sqlite3.connect(uri, uri=True, timeout=1.0)) as db:
            total = int(db.execute("SELECT COUNT(*) FROM documents WHERE active = 1").fetchone()[0])
            counts = {k: _frequency(db, k) for k in keywords}
    except sqlite3.Error:
        return None
    return {k: max(0.0, 1.0 - df / (total + PRIOR_NOTES)) for k, df in counts.items()}


def _frequency(db: sqlite3.Connection, keyword: str) -> int:
    phrase = '"' + keyword.replace('"', " ") + '"*'
    try:
        row = db.execute(
            "SELECT COUNT(*) FROM documents_fts WHERE documents_fts MATCH ?", (phrase,)
        ).fetchone()
    except sqlite3.OperationalError:  # a keyword FTS5 cannot parse: count it as absent
        return 0
    return int(row[0])
