"""Chunks out of and into an index, with their vectors (for ``migrate``)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from memory_router import BackendUnavailable, Category, Chunk, Entry, Staging

from ._db import Connection, read_meta, transaction, write_meta
from ._store import Store, remove_db
from ._sync import Indexer
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
        vector = decode(r[8])
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
            embedding=tuple(vector.tolist()) if vector is not None else None,
            entry=entry,
        )


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

    Each :meth:`write` is one transaction, so a kill leaves whole batches only.
    """

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
        )
        if self.store.damage is not None:
            self.store.close()
            raise BackendUnavailable(
                f"the interrupted migration's copy {path} is damaged ({self.store.damage})",
                backend=live.name,
                hint="run the migration again without --resume to start clean",
            )

    def write(self, chunks: Sequence[Chunk]) -> None:
        import_chunks(self.store, chunks, fingerprint=self.fingerprint)

    def count(self) -> int:
        return int(self.store.writer.execute("SELECT COUNT(*) FROM chunks").fetchone()[0])

    def publish(self) -> None:
        conn = self.store.writer
        meta = json.loads(json.dumps({**self.fingerprint, "ftsTokenizer": self.store.tokenizer}))
        with transaction(conn):
            write_meta(conn, meta)
        self.store.close()
        with self.live.write_lock:
            self.live.replace_with(self.path)

    def discard(self) -> None:
        self.store.close()
        remove_db(self.path)

    def close(self) -> None:
        self.store.close()
