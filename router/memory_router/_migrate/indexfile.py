"""Reading an index file that no configured backend owns (``migrate --from-path``).

Two layouts are read, both opened read-only (a migration never changes its source):

* the seed schema (OpenClaw's builtin index until 2026.7, ``memory/<agent>.sqlite``, ref
  §1.5, which the SQLite backend keeps): ``meta`` with ``memory_index_meta_v1``,
  ``files``, ``chunks`` with the embedding as a JSON array (OpenClaw) or a float32 BLOB
  (ours), and ``embedding_cache``;
* OpenClaw 2026.9's agent database (``agents/<id>/agent/openclaw-agent.sqlite``, ref §12),
  which holds the same rows in tables prefixed ``memory_`` (``memory_index_meta``,
  ``memory_index_chunks``, ``memory_embedding_cache``; vectors as float32 BLOBs) beside the
  agent's sessions and transcripts.

OpenClaw names some embedding providers differently: its fingerprint is translated to
ours (:data:`OPENCLAW_PROVIDERS`), so a matching model is recognised as one.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import sqlite3
import struct
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, cast

from .._exceptions import InvalidInput, NotFound
from .._types import Category, Chunk, Entry

META_KEY = "memory_index_meta_v1"
_HINT = (
    "give --from-path an index file: OpenClaw 2026.9's agents/<id>/agent/openclaw-agent.sqlite,"
    " OpenClaw's older memory/<agent>.sqlite, or one written by --to-path"
)
SEED_SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE chunks (id TEXT PRIMARY KEY, path TEXT NOT NULL,
  source TEXT NOT NULL DEFAULT 'memory', start_line INTEGER NOT NULL,
  end_line INTEGER NOT NULL, hash TEXT NOT NULL, model TEXT NOT NULL, text TEXT NOT NULL,
  embedding BLOB NOT NULL, updated_at INTEGER NOT NULL);
"""
"""The seed schema's tables a search needs (ref §1.5); the backend adds FTS and vectors."""
OPENCLAW_PROVIDERS = {"openai-compatible": "openai"}
"""OpenClaw's provider id -> ours, where they differ (its OpenAI-compatible one is our openai)."""


@dataclass(frozen=True, slots=True)
class Layout:
    """The table names of one index layout."""

    meta: str
    chunks: str
    cache: str


SEED = Layout(meta="meta", chunks="chunks", cache="embedding_cache")
AGENT_DB = Layout(
    meta="memory_index_meta", chunks="memory_index_chunks", cache="memory_embedding_cache"
)


def vector_of(value: Any, dims: int | None = None) -> tuple[float, ...] | None:
    """A stored embedding as a tuple; ``None`` when empty. A BLOB is float32 (ours), or
    little-endian float64 when it holds exactly ``dims`` of those (OpenClaw 2026.9's)."""
    if isinstance(value, bytes | bytearray | memoryview):
        raw = bytes(value)
        if dims and len(raw) == dims * 8:
            return struct.unpack(f"<{dims}d", raw)
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
    """An index file (either layout) opened read-only: its fingerprint, chunks, cache rows."""

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
        self.layout = AGENT_DB if {AGENT_DB.meta, AGENT_DB.chunks} <= tables else SEED
        missing = {self.layout.meta, self.layout.chunks} - tables
        if missing:
            raise InvalidInput(
                f"{self.path} has no {' or '.join(sorted(missing))} table: not a memory index",
                key="from_path",
                hint=_HINT,
            )
        self._tables = tables

    def index_fingerprint(self) -> dict[str, Any] | None:
        """The stored ``memory_index_meta_v1`` JSON (without ``ftsTokenizer``), if readable,
        with OpenClaw's provider ids as ours."""
        row = self._db.execute(
            f"SELECT value FROM {self.layout.meta} WHERE key = ?", (META_KEY,)
        ).fetchone()
        try:
            meta = json.loads(row[0]) if row else None
        except (TypeError, ValueError):
            return None
        if not isinstance(meta, dict):
            return None
        meta.pop("ftsTokenizer", None)
        if self.is_openclaw(meta):
            provider = meta.get("provider")
            meta["provider"] = OPENCLAW_PROVIDERS.get(str(provider), provider)
        return meta

    def _dims(self) -> int | None:
        meta = self.index_fingerprint() or {}
        dims = meta.get("vectorDims")
        return dims if isinstance(dims, int) and dims > 0 else None

    def is_openclaw(self, meta: dict[str, Any]) -> bool:
        """Whether OpenClaw wrote the file (ours record the ``chunker`` version)."""
        return self.layout is AGENT_DB or "chunker" not in meta

    def count(self) -> int:
        return int(self._db.execute(f"SELECT COUNT(*) FROM {self.layout.chunks}").fetchone()[0])

    def export_chunks(self) -> Iterator[Chunk]:
        """Every chunk by id, with its embedding and (our own files) its entry metadata."""
        entries = "entries" in self._tables
        columns = "e.entry_id, e.importance, e.category, e.created_at, e.text" if entries else ""
        join = " LEFT JOIN entries e ON e.chunk_id = c.id" if entries else ""
        sql = (
            "SELECT c.id, c.path, c.source, c.start_line, c.end_line, c.text, c.hash, c.model,"
            f" c.embedding{', ' + columns if columns else ''} FROM {self.layout.chunks} c{join}"
            " ORDER BY c.id"
        )
        dims = self._dims()
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
                embedding=vector_of(row[8], dims),
                entry=_entry(row[9:]) if entries else None,
            )

    def cached_vectors(self, provider: str, model: str) -> Iterator[tuple[str, tuple[float, ...]]]:
        """``(text hash, vector)`` from the file's own embedding cache for one model (our
        provider id: OpenClaw's names for it are read too)."""
        if self.layout.cache not in self._tables:
            return
        names = [provider, *(k for k, v in OPENCLAW_PROVIDERS.items() if v == provider)]
        marks = ", ".join("?" * len(names))
        rows = self._db.execute(
            f"SELECT hash, embedding, dims FROM {self.layout.cache}"
            f" WHERE provider IN ({marks}) AND model = ?",
            (*names, model),
        )
        for text_hash, value, dims in rows:
            vector = vector_of(value, dims)
            if vector is not None:
                yield text_hash, vector

    def copy_to(self, target: Path) -> None:
        """A copy the SQLite backend can open (for ``--verify``): the file itself in the
        seed schema; for an agent database, its memory rows written in the seed schema."""
        if self.layout is SEED:
            for suffix in ("", "-wal"):
                if Path(f"{self.path}{suffix}").exists():
                    shutil.copyfile(f"{self.path}{suffix}", f"{target}{suffix}")
            return
        with contextlib.closing(sqlite3.connect(target)) as out, out:
            out.executescript(SEED_SCHEMA)
            out.executemany(
                "INSERT INTO meta VALUES (?, ?)",
                self._db.execute(f"SELECT key, value FROM {self.layout.meta}"),
            )
            out.executemany(
                "INSERT INTO chunks VALUES (?,?,?,?,?,?,?,?,?,0)",
                (
                    (c.id, c.path, c.source, c.start_line, c.end_line, c.hash, c.model, c.text,
                     struct.pack(f"{len(c.embedding)}f", *c.embedding) if c.embedding else b"")
                    for c in self.export_chunks()
                ),
            )  # fmt: skip

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
