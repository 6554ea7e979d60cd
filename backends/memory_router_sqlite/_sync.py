"""Bringing the index in line with a workspace snapshot (ref §1.6).

Incremental by content hash: unchanged files are skipped, changed files have their rows
replaced, vanished files are pruned. A fingerprint mismatch (or ``force``) rebuilds the
whole index into ``<db>.tmp-<uuid>`` and swaps it in atomically; if the rebuild fails the
live index is untouched and the temporary file is removed.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from memory_router import Progress
from memory_router.kit import (
    Chunk,
    Document,
    Embedder,
    Snapshot,
    SyncTally,
    prefetch,
    rebuild_reason,
)

from ._db import Connection, ensure_vec, read_meta, table_exists, transaction, write_meta
from ._store import Store, remove_db
from ._vectors import encode

if TYPE_CHECKING:
    from ._vectors import Vector

GROUP_CHUNKS = 512  # chunks embedded and written per transaction
GROUP_FILES = 500


def wanted_meta(snapshot: Snapshot, tokenizer: str) -> dict[str, Any]:
    """The fingerprint to store: the snapshot's plus the FTS tokenizer, JSON-normalised."""
    meta = {**dict(snapshot.fingerprint), "ftsTokenizer": tokenizer}
    value: dict[str, Any] = json.loads(json.dumps(meta, sort_keys=True))
    return value


Group = list[tuple[Document, list[Chunk]]]
Batch = tuple[Group, Group]
"""Documents to write and embed, and documents to adopt (see :meth:`Indexer._groups`)."""


class Stopped(Exception):
    """Raised on the embedding thread once the writing thread stopped early."""


class Meter:
    """Progress of a sync: files written, or (with an embedder) chunks embedded.

    The chunk total is known only once every file is chunked; until then it is estimated
    from the chunks per file so far, so the bar's rate and ETA are meaningful early.
    """

    def __init__(self, files: int, progress: Progress, *, chunks: bool) -> None:
        self.files = files
        self.progress = progress
        self.by_chunks = chunks
        self.files_chunked = self.chunks_seen = self.chunks_done = self.files_done = 0
        self.stop = threading.Event()

    def total(self) -> int:
        if not self.files_chunked or self.files_chunked >= self.files:
            return self.chunks_seen
        return round(self.chunks_seen / self.files_chunked * self.files)

    def report(self) -> None:
        if self.by_chunks:
            self.progress(done=self.chunks_done, total=self.total(), label="embedding")
        else:
            self.progress(done=self.files_done, total=self.files, label="indexing")

    def chunked(self, count: int) -> None:
        self.files_chunked += 1
        self.chunks_seen += count

    def embedding(self, *, done: int, total: int, label: str) -> None:
        """The embedder's per-call progress, shifted by the chunks of earlier groups."""
        if self.stop.is_set():
            raise Stopped("the sync stopped: the rest of this group is not embedded")
        self.progress(done=self.chunks_done + done, total=max(self.total(), total), label=label)

    def embedded(self, count: int) -> None:
        self.chunks_done += count

    def wrote(self, files: int) -> None:
        self.files_done += files
        self.report()


INSERT_CHUNK = (
    "INSERT OR REPLACE INTO chunks (id, path, source, start_line, end_line, hash, model, text,"
    " embedding, updated_at) VALUES (?,?,?,?,?,?,?,?,?,?)"
)


def chunk_values(chunk: Chunk, blob: bytes, now: int) -> tuple[Any, ...]:
    """The ``chunks`` row of ``chunk`` for :data:`INSERT_CHUNK` (``blob``: its float32 vector)."""
    return (
        chunk.id,
        chunk.path,
        chunk.source,
        chunk.start_line,
        chunk.end_line,
        chunk.hash,
        chunk.model,
        chunk.text,
        blob,
        now,
    )


class Indexer:
    """Writes documents' chunks (with vectors when an embedder is given) into one database."""

    def __init__(
        self,
        conn: Connection,
        snapshot: Snapshot | None,
        embedder: Embedder | None,
        *,
        vector: bool,
    ) -> None:
        self.conn = conn
        self.snapshot = snapshot
        self.embedder = embedder
        self.vector = vector
        self.dims: int | None = None
        self.has_fts = table_exists(conn, "chunks_fts")
        self._written: set[str] = set()

    def stored_files(self) -> dict[str, str]:
        return {p: h for p, h in self.conn.execute("SELECT path, hash FROM files")}

    def run(self, snapshot: Snapshot, counts: SyncTally, progress: Progress) -> None:
        """Index the changed files of ``snapshot``: chunking, embedding and writing overlap."""
        stored = self.stored_files()
        changed = [d for d in snapshot.documents if stored.get(d.path) != d.hash]
        counts.unchanged = len(snapshot.documents) - len(changed)
        meter = Meter(len(changed), progress, chunks=self.embedder is not None)
        meter.report()
        adoptable = {p: ids for p, ids in self.orphans().items() if p not in stored}
        # Thread 1 reads and chunks files, thread 2 embeds, this thread writes (SQLite).
        batches = self._groups(snapshot, changed, meter, adoptable)
        # Set when this thread stops early (Ctrl-C, a failed write): the embedding thread
        # then ends at its next batch instead of embedding the rest of its group.
        chunked = prefetch(batches, depth=2, name="chunking", cancel=meter.stop)
        embedded = prefetch(
            ((b, self._embed(b, meter)) for b in chunked), name="embedding", cancel=meter.stop
        )
        for batch, vectors in embedded:
            self._write(batch, vectors, stored, counts)
            meter.wrote(len(batch[0]) + len(batch[1]))
        live = {d.path for d in snapshot.documents}
        gone = [p for p in stored if p not in live]
        if gone:
            with transaction(self.conn):
                for path in gone:
                    self.delete_path(path)
            counts.removed = len(gone)

    def orphans(self) -> dict[str, set[str]]:
        """Chunk ids by path for paths without a ``files`` row (what ``migrate`` leaves)."""
        found: dict[str, set[str]] = {}
        rows = self.conn.execute(
            "SELECT path, id FROM chunks WHERE path NOT IN (SELECT path FROM files)"
        )
        for path, chunk_id in rows:
            found.setdefault(path, set()).add(chunk_id)
        return found

    @staticmethod
    def _groups(
        snapshot: Snapshot,
        changed: list[Document],
        meter: Meter,
        adoptable: dict[str, set[str]],
    ) -> Iterator[Batch]:
        """Changed documents with their chunks, about :data:`GROUP_CHUNKS` chunks a group.

        A document whose chunks are all indexed already without a ``files`` row (the state
        ``migrate`` leaves) is *adopted*: its file row is written, nothing is embedded.
        """
        group: Group = []
        adopted: Group = []
        size = 0
        for doc in changed:
            chunks = snapshot.chunks(doc)
            if chunks and adoptable.get(doc.path) == {c.id for c in chunks}:
                adopted.append((doc, chunks))
            else:
                group.append((doc, chunks))
                size += len(chunks)
                meter.chunked(len(chunks))
            if size >= GROUP_CHUNKS or len(group) + len(adopted) >= GROUP_FILES:
                yield group, adopted
                group, adopted, size = [], [], 0
        if group or adopted:
            yield group, adopted

    def _write(
        self,
        batch: Batch,
        vectors: list[Vector | None],
        stored: dict[str, str],
        counts: SyncTally,
    ) -> None:
        group, adopted = batch
        with transaction(self.conn):
            for doc, _ in adopted:
                self.write_file(doc)
                counts.unchanged += 1
            at = 0
            for doc, doc_chunks in group:
                if doc.path in stored:
                    self.delete_path(doc.path)
                    counts.updated += 1
                else:
                    counts.added += 1
                self.write_chunks(doc_chunks, vectors[at : at + len(doc_chunks)])
                at += len(doc_chunks)
                self.write_file(doc)
        for doc, _ in (*group, *adopted):
            if self.snapshot is not None:
                self.snapshot.release(doc)

    def _embed(self, batch: Batch, meter: Meter) -> list[Vector | None]:
        texts = [c.text for _, chunks in batch[0] for c in chunks]
        if self.embedder is None or not texts:
            return [None] * len(texts)
        vectors: list[Vector | None] = list(
            self.embedder.embed_documents(texts, progress=meter.embedding)
        )
        meter.embedded(len(texts))
        return vectors

    def write_chunks(self, chunks: Sequence[Chunk], vectors: Sequence[Vector | None]) -> None:
        now = int(time.time() * 1000)
        for chunk, vector in zip(chunks, vectors, strict=True):
            if chunk.id in self._written:  # a repeated id (e.g. a hand-copied journal item)
                self.delete_chunk(chunk.id)
            self._written.add(chunk.id)
            self.conn.execute(INSERT_CHUNK, chunk_values(chunk, encode(vector), now))
            self._write_fts(chunk)
            if vector is not None and self.vector and len(vector):
                self._write_vec(chunk.id, vector)
            if chunk.entry is not None:
                entry = chunk.entry
                self.conn.execute(
                    "INSERT OR REPLACE INTO entries (chunk_id, entry_id, importance, category,"
                    " created_at, text) VALUES (?,?,?,?,?,?)",
                    (
                        chunk.id,
                        entry.id,
                        entry.importance,
                        entry.category,
                        entry.created_at.isoformat(),
                        entry.text,
                    ),
                )

    def _write_fts(self, chunk: Chunk) -> None:
        if not self.has_fts:
            return
        self.conn.execute(
            "INSERT INTO chunks_fts (text, id, path, source, model, start_line, end_line)"
            " VALUES (?,?,?,?,?,?,?)",
            (
                chunk.text,
                chunk.id,
                chunk.path,
                chunk.source,
                chunk.model,
                chunk.start_line,
                chunk.end_line,
            ),
        )

    def _write_vec(self, chunk_id: str, vector: Vector) -> None:
        if self.dims != len(vector):
            ensure_vec(self.conn, len(vector))
            self.dims = len(vector)
        # No delete first: callers removed the file's (or the chunk's) old rows already.
        self.conn.execute(
            "INSERT INTO chunks_vec (id, embedding) VALUES (?, ?)", (chunk_id, encode(vector))
        )

    def write_file(self, doc: Document) -> None:
        self.conn.execute(
            "INSERT OR REPLACE INTO files (path, source, hash, mtime, size) VALUES (?,?,?,?,?)",
            (doc.path, doc.source, doc.hash, int(doc.mtime * 1000), doc.size),
        )

    def delete_chunk(self, chunk_id: str) -> None:
        """Remove one chunk's rows (a repeated id: see :meth:`write_chunks`)."""
        if table_exists(self.conn, "chunks_vec"):
            self.conn.execute("DELETE FROM chunks_vec WHERE id = ?", (chunk_id,))
        if table_exists(self.conn, "chunks_fts"):
            self.conn.execute("DELETE FROM chunks_fts WHERE id = ?", (chunk_id,))
        self.conn.execute("DELETE FROM entries WHERE chunk_id = ?", (chunk_id,))
        self.conn.execute("DELETE FROM chunks WHERE id = ?", (chunk_id,))

    def delete_path(self, path: str) -> None:
        """Remove a file's rows from every table."""
        ids = [r[0] for r in self.conn.execute("SELECT id FROM chunks WHERE path = ?", (path,))]
        if ids and table_exists(self.conn, "chunks_vec"):
            for start in range(0, len(ids), 500):
                part = ids[start : start + 500]
                marks = ",".join("?" * len(part))
                self.conn.execute(f"DELETE FROM chunks_vec WHERE id IN ({marks})", part)
                self.conn.execute(f"DELETE FROM entries WHERE chunk_id IN ({marks})", part)
        if table_exists(self.conn, "chunks_fts"):
            self.conn.execute("DELETE FROM chunks_fts WHERE path = ?", (path,))
        self.conn.execute("DELETE FROM chunks WHERE path = ?", (path,))
        self.conn.execute("DELETE FROM files WHERE path = ?", (path,))


def sync_store(
    store: Store,
    snapshot: Snapshot,
    counts: SyncTally,
    *,
    embedder: Embedder | None,
    force: bool,
    progress: Progress,
) -> tuple[int, str | None]:
    """Sync ``snapshot`` into ``store`` (see the module docstring), counting into
    ``counts``; returns the chunks the index holds and why it was rebuilt whole (``None``:
    an incremental sync, see :func:`rebuild_reason`)."""
    wanted = wanted_meta(snapshot, store.tokenizer)
    vector = store.driver.vector_path is not None
    store.follow_swaps()
    with store.write_lock:
        store.changed()
        reason = rebuild_reason(read_meta(store.writer), wanted, force=force)
        if reason is None:
            indexer = Indexer(store.writer, snapshot, embedder, vector=vector)
            indexer.run(snapshot, counts, progress)
            with transaction(store.writer):
                write_meta(store.writer, _with_dims(wanted, indexer.dims, store.writer))
        else:
            old = {r[0] for r in store.writer.execute("SELECT path FROM files")}
            _rebuild(store, snapshot, embedder, wanted, counts, progress, vector=vector)
            counts.removed = len(old - {d.path for d in snapshot.documents})
        chunks = int(store.writer.execute("SELECT COUNT(*) FROM chunks").fetchone()[0])
        store.changed()
    return chunks, reason


def _with_dims(wanted: dict[str, Any], dims: int | None, conn: Connection) -> dict[str, Any]:
    """``wanted`` with ``vectorDims`` filled from the vectors written (or kept from before)."""
    if wanted.get("vectorDims") is not None:
        return wanted
    if dims is None:
        dims = (read_meta(conn) or {}).get("vectorDims")
    return {**wanted, "vectorDims": dims}


def _rebuild(
    store: Store,
    snapshot: Snapshot,
    embedder: Embedder | None,
    wanted: dict[str, Any],
    counts: SyncTally,
    progress: Progress,
    *,
    vector: bool,
) -> None:
    with store.rebuilding():
        temp = store.temp_path()
        try:
            conn = store.open(temp)
            try:
                indexer = Indexer(conn, snapshot, embedder, vector=vector)
                indexer.run(snapshot, counts, progress)
                with transaction(conn):
                    write_meta(conn, _with_dims(wanted, indexer.dims, conn))
            finally:
                conn.close()
            store.replace_with(temp)
        except BaseException:
            remove_db(temp)
            raise
