"""Reading an index file that no configured backend owns (``migrate --from-path``).

The file has the seed schema (OpenClaw's builtin index, ref §1.5, which the SQLite
backend keeps): ``meta`` with ``memory_index_meta_v1``, ``files``, ``chunks`` with the
embedding as a JSON array (OpenClaw) or a float32 BLOB (ours), and ``embedding_cache``.
It is opened read-only: a migration never changes its source.
"""

from __future__ import annotations

import json
import sqlite3
import struct
import urllib.parse
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any, cast

from .._exceptions import InvalidInput, NotFound
from .._types import Category, Chunk, Entry

META_KEY = "memory_index_meta_v1"
_HINT = "give --from-path an index file of the seed schema (OpenClaw's memory/<agent>.sqlite)"


def vector_of(value: Any) -> tuple[float, ...] | None:
    """A stored embedding (float32 BLOB or JSON array) as a tuple; ``None`` when empty."""
    if isinstance(value, bytes | bytearray | memoryview):
        raw = bytes(value)
        if not raw or len(raw) % 4:
            return None
        return struct.unpack(f"{len(raw) // 4}f", raw)  # float32, native order
    if isinstance(value, str) and value.strip():
        try:
            parsed = json.loads(value)
        except ValueError:
            return None
        if isinstance(parsed, list) and parsed and all(isinstance(x, int | float) for x in parsed):
            return tuple(float(x) for x in parsed)
    return None


class IndexFile:
    """A seed-schema SQLite index opened read-only: its fingerprint, chunks and cache rows."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path).expanduser().resolve()
        self.name = f"file:{self.path}"
        if not self.path.is_file():
            raise NotFound(f"no index file at {self.path}", key="from_path", hint=_HINT)
        uri = f"file:{urllib.parse.quote(str(self.path))}?mode=ro"
        try:
            self._db = sqlite3.connect(uri, uri=True, check_same_thread=False)
            tables = {r[0] for r in self._db.execute("SELECT name FROM sqlite_master")}
        except sqlite3.DatabaseError as error:
            raise InvalidInput(
                f"{self.path} is not a readable SQLite index: {error}", key="from_path", hint=_HINT
            ) from None
        missing = {"meta", "chunks"} - tables
        if missing:
            raise InvalidInput(
                f"{self.path} has no {' or '.join(sorted(missing))} table: not a memory index",
                key="from_path",
                hint=_HINT,
            )
        self._tables = tables

    def index_fingerprint(self) -> dict[str, Any] | None:
        """The stored ``memory_index_meta_v1`` JSON (without ``ftsTokenizer``), if readable."""
        row = self._db.execute("SELECT value FROM meta WHERE key = ?", (META_KEY,)).fetchone()
        try:
            meta = json.loads(row[0]) if row else None
        except (TypeError, ValueError):
            return None
        if not isinstance(meta, dict):
            return None
        meta.pop("ftsTokenizer", None)
        return meta

    def count(self) -> int:
        return int(self._db.execute("SELECT COUNT(*) FROM chunks").fetchone()[0])

    def export_chunks(self) -> Iterator[Chunk]:
        """Every chunk by id, with its embedding and (our own files) its entry metadata."""
        entries = "entries" in self._tables
        columns = "e.entry_id, e.importance, e.category, e.created_at, e.text" if entries else ""
        join = " LEFT JOIN entries e ON e.chunk_id = c.id" if entries else ""
        sql = (
            "SELECT c.id, c.path, c.source, c.start_line, c.end_line, c.text, c.hash, c.model,"
            f" c.embedding{', ' + columns if columns else ''} FROM chunks c{join} ORDER BY c.id"
        )
        for row in self._db.execute(sql):
            yield Chunk(
                id=row[0],
                path=row[1],
                source="sessions" if row[2] == "sessions" else "memory",
                start_line=int(row[3]),
                end_line=int(row[4]),
                text=row[5],
                hash=row[6],
                model=row[7],
                embedding=vector_of(row[8]),
                entry=_entry(row[9:]) if entries else None,
            )

    def cached_vectors(self, provider: str, model: str) -> Iterator[tuple[str, tuple[float, ...]]]:
        """``(text hash, vector)`` from the file's own ``embedding_cache`` for one model."""
        if "embedding_cache" not in self._tables:
            return
        rows = self._db.execute(
            "SELECT hash, embedding FROM embedding_cache WHERE provider = ? AND model = ?",
            (provider, model),
        )
        for text_hash, value in rows:
            vector = vector_of(value)
            if vector is not None:
                yield text_hash, vector

    def close(self) -> None:
        self._db.close()


def _entry(values: tuple[Any, ...]) -> Entry | None:
    if values[0] is None:
        return None
    return Entry(
        id=values[0],
        importance=float(values[1]),
        category=cast(Category, values[2]),
        created_at=datetime.fromisoformat(values[3]),
        text=values[4],
    )
