"""Chunks out of an index, and a staged copy filled with them (for ``migrate``)."""

from __future__ import annotations

import contextlib
import json
import struct
import time
from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, cast

from memory_router import BackendUnavailable, Category, Entry
from memory_router.kit import Chunk, Staging

from ._db import Connection, ensure_vec, table_exists, transaction, write_meta
from ._store import Store, remove_db
from ._sync import INSERT_CHUNK, chunk_values
from ._vectors import decode


def export_chunks(conn: Connection) -> Iterator[Chunk]:
    """Every chunk by id, its embedding (``None`` in keyword-only indexes) and entry metadata."""
    cursor = conn.execute(
        "SELECT c.id, c.path, c.source, c.start_line, c.end_line, c.text, c.hash, c.model,"
        " c.embedding, e.entry_id, e.importance, e.category, e.created_at, e.text"
        " FROM chunks c LEFT JOIN entries e ON e.chunk_id = c.id ORDER BY c.id"
    )
    for r in cursor:
        embedding = _floats(r[8])
        entry = None
        if r[9] is not None:
            entry = Entry(
                id=r[9],
                text=r[13],
                importance=float(r[10]),
                category=cast(Category, r[11]),
                created_at=datetime.fromisoformat(r[12]),
            )
        yield Chunk(
            id=r[0],
            path=r[1],
            source="sessions" if r[2] == "sessions" else "memory",
            start_line=int(r[3]),
            end_line=int(r[4]),
            text=r[5],
            hash=r[6],
            model=r[7],
            embedding=embedding,
            entry=entry,
        )


def _floats(value: Any) -> tuple[float, ...] | None:
    """A stored embedding as a tuple: float32 BLOBs unpacked in one call, JSON decoded."""
    if isinstance(value, bytes) and value and not len(value) % 4:
        floats: tuple[float, ...] = struct.unpack(f"{len(value) // 4}f", value)
        return floats
    vector = decode(value)
    return tuple(vector.tolist()) if vector is not None else None


class SqliteStaging(Staging):
    """A migrated index built in ``<index>.migrating`` and swapped in by :meth:`publish`.

    Each :meth:`write` is one transaction of plain row inserts (a kill leaves whole
    batches only); the keyword and vector indexes are built once, by :meth:`publish`, from
    the rows. The copy is not the live index, so it is written without fsyncs
    (``synchronous = OFF``, a rollback journal): a kill loses nothing the OS has, and
    :meth:`publish` makes it durable before the switch.
    """

    batch_size = 5000

    def __init__(self, live: Store, path: Path, fingerprint: Mapping[str, Any]) -> None:
        self.live = live
        self.path = path
        self.fingerprint = dict(fingerprint)
        self.store = Store(
            path,
            live.driver,
            tokenizer=live.tokenizer,
            busy_timeout_ms=live.busy_timeout_ms,
            name=live.name,
            indexed=False,
        )
        if self.store.damage is not None:
            self.store.close()
            raise BackendUnavailable(
                f"the interrupted migration's copy {path} is damaged ({self.store.damage})",
                backend=live.name,
                hint="run the migration again without --resume to start clean",
            )
        # A rollback journal, not WAL: bulk appends are written once instead of twice.
        self.store.writer.execute("PRAGMA journal_mode = DELETE")
        self.store.writer.execute("PRAGMA synchronous = OFF")

    def write(self, chunks: Sequence[Chunk]) -> None:
        now = int(time.time() * 1000)
        rows = [_row(c, now) for c in chunks]
        entries = [_entry_row(c) for c in chunks if c.entry is not None]
        with self._translating(), self.store.write_lock, transaction(self.store.writer) as conn:
            conn.executemany(INSERT_CHUNK, rows)
            conn.executemany(
                "INSERT OR REPLACE INTO entries (chunk_id, entry_id, importance, category,"
                " created_at, text) VALUES (?,?,?,?,?,?)",
                entries,
            )

    def count(self) -> int:
        with self._translating():
            return int(self.store.writer.execute("SELECT COUNT(*) FROM chunks").fetchone()[0])

    def publish(self) -> None:
        conn = self.store.writer
        meta = json.loads(json.dumps({**self.fingerprint, "ftsTokenizer": self.store.tokenizer}))
        with self._translating():
            conn.execute("PRAGMA synchronous = FULL")  # this commit makes the whole copy durable
            with transaction(conn):
                build_indexes(conn, self.store, meta.get("vectorDims"))
                write_meta(conn, meta)
            conn.execute("PRAGMA journal_mode = WAL")
            self.store.close()
            with self.live.write_lock:
                self.live.replace_with(self.path)

    def discard(self) -> None:
        with self._translating():
            self.store.close()
            remove_db(self.path)

    def _translating(self) -> contextlib.AbstractContextManager[None]:
        # The copy's own errors: reopening it (a resume) checks it, so nothing is flagged.
        return self.store.translating("migrate", heal=False)

    def close(self) -> None:
        self.store.close()


def _row(chunk: Chunk, now: int) -> tuple[Any, ...]:
    vector = chunk.embedding
    blob = struct.pack(f"{len(vector)}f", *vector) if vector else b""  # float32 BLOB
    return chunk_values(chunk, blob, now)


def _entry_row(chunk: Chunk) -> tuple[Any, ...]:
    entry = chunk.entry
    assert entry is not None
    created = entry.created_at.isoformat()
    return (chunk.id, entry.id, entry.importance, entry.category, created, entry.text)


def build_indexes(conn: Connection, store: Store, dims: Any) -> None:
    """Fill ``chunks_fts`` and ``chunks_vec`` from the ``chunks`` rows (in one statement
    each, replacing whatever they held): vectors of ``dims`` floats only."""
    if table_exists(conn, "chunks_fts"):
        conn.execute("DELETE FROM chunks_fts")
        conn.execute(
            "INSERT INTO chunks_fts (text, id, path, source, model, start_line, end_line)"
            " SELECT text, id, path, source, model, start_line, end_line FROM chunks"
        )
    if not dims:
        row = conn.execute(
            "SELECT length(embedding) FROM chunks WHERE length(embedding) > 0 LIMIT 1"
        ).fetchone()
        dims = row[0] // 4 if row else None
    if store.driver.vector_path is None or not dims:
        return
    ensure_vec(conn, int(dims))
    conn.execute("DELETE FROM chunks_vec")
    conn.execute(
        "INSERT INTO chunks_vec (id, embedding) SELECT id, embedding FROM chunks"
        " WHERE length(embedding) = ?",
        (int(dims) * 4,),
    )
