"""Read-only facts from QMD's index file: documents per collection, vectors present.

QMD's ``status`` command prints text only, so status reads its SQLite file directly
(read-only, short busy timeout); a missing or locked file reads as empty.
"""

from __future__ import annotations

import sqlite3
import urllib.parse
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
