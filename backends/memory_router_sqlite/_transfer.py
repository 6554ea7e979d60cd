"""Chunks out of and into an index, with their vectors (for ``migrate``)."""

from __future__ import annotations

import json
import struct
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from memory_router import BackendUnavailable, Category, Entry
from memory_router.kit import Chunk, Staging

from ._db import Connection, ensure_vec, read_meta, table_exists, transaction, write_meta
from ._store import Store, remove_db
from ._sync import INSERT_CHUNK, Indexer, chunk_values
from ._vectors import decode

if TYPE_CHECKING:
    from ._vectors import Vector

BATCH = 500


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


def import_chunks(store: Store, chunks: Iterable[Chunk], *, fingerprint: Mapping[str, Any]) -> int:
    """Write ``chunks`` (replacing rows with the same id); returns how many were written.

    Files get no ``files`` rows, so the next sync re-checks them against the workspace
    (through the embedding cache). The fingerprint is stored when the index has none.
    """
    written = 0
    with store.write_lock:
        conn = store.writer
        indexer = Indexer(conn, None, None, vector=store.driver.vector_path is not None)
        batch: list[Chunk] = []
        for chunk in chunks:
            batch.append(chunk)
            if len(batch) >= BATCH:
                written += _write(conn, indexer, batch)
                batch = []
        if batch:
            written += _write(conn, indexer, batch)
        store.changed()
        if read_meta(conn) is None:
            meta = json.loads(json.dumps({**dict(fingerprint), "ftsTokenizer": store.tokenizer}))
            with transaction(conn):
                write_meta(conn, meta)
    return written


def _write(conn: Connection, indexer: Indexer, batch: list[Chunk]) -> int:
    vectors: list[Vector | None] = [
        decode_tuple(c.embedding) if c.embedding is not None else None for c in batch
    ]
    with transaction(conn):
        marks = ",".join("?" * len(batch))
        ids = [c.id for c in batch]
        existing = [r[0] for r in conn.execute(f"SELECT id FROM chunks WHERE id IN ({marks})", ids)]
        for chunk_id in existing:
            indexer.delete_chunk(chunk_id)
        indexer.write_chunks(batch, vectors)
    return len(batch)


def decode_tuple(values: tuple[float, ...]) -> Vector | None:
    import numpy as np

    return np.asarray(values, dtype=np.float32) if values else None


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
        with self.store.write_lock, transaction(self.store.writer) as conn:
            conn.executemany(INSERT_CHUNK, rows)
            conn.executemany(
                "INSERT OR REPLACE INTO entries (chunk_id, entry_id, importance, category,"
                " created_at, text) VALUES (?,?,?,?,?,?)",
                entries,
            )

    def count(self) -> int:
        return int(self.store.writer.execute("SELECT COUNT(*) FROM chunks").fetchone()[0])

    def publish(self) -> None:
        conn = self.store.writer
        meta = json.loads(json.dumps({**self.fingerprint, "ftsTokenizer": self.store.tokenizer}))
        conn.execute("PRAGMA synchronous = FULL")  # this commit makes the whole copy durable
        with transaction(conn):
            build_indexes(conn, self.store, meta.get("vectorDims"))
            write_meta(conn, meta)
        conn.execute("PRAGMA journal_mode = WAL")
        self.store.close()
        with self.live.write_lock:
            self.live.replace_with(self.path)

    def discard(self) -> None:
        self.store.close()
        remove_db(self.path)

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
