"""Bringing the store in line with a workspace snapshot.

Incremental by file hash: changed files have their chunks upserted and their stale chunks
deleted in one ``merge_insert`` commit per group of files; vanished files are deleted. A
fingerprint mismatch (or ``force``) rebuilds into a new generation and switches to it only
when the rebuild succeeded; on failure the new tables are dropped and the live ones stay.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from memory_router import Progress
from memory_router.kit import Chunk, Document, Embedder, Snapshot, SyncTally, rebuild_reason

from . import _housekeeping, _schema
from ._lance import with_retries
from ._store import LanceStore, Tables, in_list, quote, upsert

GROUP_CHUNKS = 512
GROUP_FILES = 200
ADOPT_ROWS = 20_000  # files rows written per commit when adopting migrated chunks


def wanted_fingerprint(snapshot: Snapshot) -> dict[str, Any]:
    value: dict[str, Any] = json.loads(json.dumps(dict(snapshot.fingerprint), sort_keys=True))
    return value


class Indexer:
    """Writes documents' chunks (with vectors when an embedder is given) into one generation."""

    def __init__(
        self,
        store: LanceStore,
        tables: Tables,
        embedder: Embedder | None,
        *,
        journal: str,
        empty: bool = False,
    ) -> None:
        self.store = store
        # A new generation's tables only ever get this process's rows, each id once:
        # plain appends, no merge against what is there (which grows with the table).
        self.empty = empty
        self.tables = tables
        self.embedder = embedder
        self.journal = journal
        self.vector = "vector" in tables.chunks.schema.names
        self.chunks_written = 0

    def stored_files(self) -> dict[str, str]:
        data = self.tables.files.to_arrow().select(["path", "hash"]).to_pydict()
        return dict(zip(data["path"], data["hash"], strict=True))

    def changed(self, snapshot: Snapshot, stored: dict[str, str]) -> list[Document]:
        """The documents whose chunks are to be written (new, edited, or a journal behind)."""
        return [
            d
            for d in snapshot.documents
            if stored.get(d.path) != d.hash or self._journal_behind(snapshot, d)
        ]

    def run(self, snapshot: Snapshot, counts: SyncTally, progress: Progress) -> None:
        stored = self.stored_files()
        changed = self.changed(snapshot, stored)
        counts.unchanged = len(snapshot.documents) - len(changed)
        changed = self._adopt(snapshot, changed, stored, counts)
        progress(done=0, total=len(changed), label="indexing")
        group: list[tuple[Document, list[Chunk]]] = []
        size = done = 0
        for doc in changed:
            group.append((doc, snapshot.chunks(doc)))
            size += len(group[-1][1])
            if size >= GROUP_CHUNKS or len(group) >= GROUP_FILES:
                done += self._flush(snapshot, group, stored, counts)
                progress(done=done, total=len(changed), label="indexing")
                group, size = [], 0
        if group:
            done += self._flush(snapshot, group, stored, counts)
            progress(done=done, total=len(changed), label="indexing")
        live = {d.path for d in snapshot.documents}
        gone = [p for p in stored if p not in live]
        if gone:
            self.delete_paths(gone)
            counts.removed = len(gone)

    def _adopt(
        self, snapshot: Snapshot, changed: list[Document], stored: dict[str, str], counts: SyncTally
    ) -> list[Document]:
        """Record the files whose chunks are all in the table already (what ``migrate``
        leaves: chunks without ``files`` rows); only their ``files`` rows are written,
        nothing is embedded or rewritten. Returns the documents still to index."""
        if all(d.path in stored for d in changed):
            return changed
        orphans = self.orphans(stored)
        adopted: list[Document] = []
        rest: list[Document] = []
        for doc in changed:
            found = orphans.get(doc.path)
            chunks = snapshot.chunks(doc) if found else []
            if (
                chunks
                and found == {c.id for c in chunks}
                and not self._journal_behind(snapshot, doc)
            ):
                adopted.append(doc)
                snapshot.release(doc)
            else:
                rest.append(doc)
        for start in range(0, len(adopted), ADOPT_ROWS):
            self.write_files(adopted[start : start + ADOPT_ROWS])
        counts.unchanged += len(adopted)
        return rest

    def orphans(self, stored: dict[str, str]) -> dict[str, set[str]]:
        """Chunk ids by path for paths without a ``files`` row."""
        data = self.tables.chunks.search().select(["path", "id"]).limit(None).to_arrow().to_pydict()
        found: dict[str, set[str]] = {}
        for path, chunk_id in zip(data["path"], data["id"], strict=True):
            if path not in stored:
                found.setdefault(path, set()).add(chunk_id)
        return found

    def _journal_behind(self, snapshot: Snapshot, doc: Document) -> bool:
        """Whether the journal's rows lag its recorded hash.

        Two processes syncing two versions of the journal at once can commit the older
        chunks after the newer ``files`` row (the tables are committed one by one); the
        entry count tells, and the journal is then written again.
        """
        if doc.kind != "journal":
            return False
        wanted = len(snapshot.chunks(doc))
        return int(self.tables.entries.count_rows(f"path = {quote(doc.path)}")) != wanted

    def _flush(
        self,
        snapshot: Snapshot,
        group: list[tuple[Document, list[Chunk]]],
        stored: dict[str, str],
        counts: SyncTally,
    ) -> int:
        chunks = list({c.id: c for _, cs in group for c in cs}.values())
        vectors = self._embed(chunks)
        paths = [doc.path for doc, _ in group]
        self.write_chunks(chunks, vectors, paths=paths)
        for doc, _ in group:
            if doc.path in stored:
                counts.updated += 1
            else:
                counts.added += 1
        self.chunks_written += len(chunks)
        self.write_files([doc for doc, _ in group])
        for doc, _ in group:
            snapshot.release(doc)
        return len(group)

    def _embed(self, chunks: list[Chunk]) -> list[Sequence[float] | None]:
        """Vectors for ``chunks``: kept from rows with the same id (same text, lines and
        model, e.g. imported by a migration), embedded (through the cache) otherwise."""
        if self.embedder is None or not self.vector or not chunks:
            return [None] * len(chunks)
        kept = self._stored_vectors([c.id for c in chunks])
        missing = [c for c in chunks if c.id not in kept]
        fresh = self.embedder.embed_documents([c.text for c in missing]) if missing else []
        found = {c.id: list(map(float, v)) for c, v in zip(missing, fresh, strict=True)}
        return [kept.get(c.id) or found[c.id] for c in chunks]

    def _stored_vectors(self, ids: list[str]) -> dict[str, Sequence[float]]:
        if self.empty:
            return {}
        rows = (
            self.tables.chunks.search()
            .where(in_list("id", ids))
            .select(["id", "vector"])
            .limit(len(ids))
            .to_arrow()
            .to_pylist()
        )
        return {r["id"]: r["vector"] for r in rows if r["vector"] is not None}

    def write_chunks(
        self,
        chunks: Sequence[Chunk],
        vectors: Sequence[Sequence[float] | None],
        *,
        paths: Sequence[str] | None,
    ) -> None:
        """Upsert ``chunks`` and their entries; other rows of ``paths`` are deleted."""
        stale = in_list("path", list(paths)) if paths else None
        now = datetime.now(UTC)
        rows = [_chunk_row(c, v, now, self.vector) for c, v in zip(chunks, vectors, strict=True)]
        self._write(self.tables.chunks, "id", rows, stale)
        entries = [
            entry_row(c, v, self.vector)
            for c, v in zip(chunks, vectors, strict=True)
            if c.entry is not None
        ]
        if entries or (paths and self.journal in paths):
            self._write(self.tables.entries, "id", _unique(entries), stale)

    def write_files(self, docs: Sequence[Document]) -> None:
        rows = [
            {
                "path": d.path,
                "source": d.source,
                "hash": d.hash,
                "mtime": int(d.mtime * 1000),
                "size": d.size,
            }
            for d in docs
        ]
        self._write(self.tables.files, "path", rows, None)

    def delete_paths(self, paths: list[str]) -> None:
        for start in range(0, len(paths), 500):
            condition = in_list("path", paths[start : start + 500])
            for table in (self.tables.chunks, self.tables.entries, self.tables.files):
                self._delete(table, condition)

    def _delete(self, table: Any, condition: str) -> None:
        with_retries(lambda: table.delete(condition), attempts=self.store.settings.write_retries)

    def _write(self, table: Any, key: str, rows: list[dict[str, Any]], stale: str | None) -> None:
        attempts = self.store.settings.write_retries
        if not rows:
            if stale is not None:
                self._delete(table, stale)
            return
        data = _schema._pa().Table.from_pylist(rows, schema=table.schema)
        if self.empty:
            with_retries(lambda: table.add(data), attempts=attempts)
        else:
            with_retries(lambda: upsert(table, key, data, stale=stale), attempts=attempts)
        self.store.writes_since_optimize += 1


def _chunk_row(
    chunk: Chunk, vector: Sequence[float] | None, now: datetime, with_vector: bool
) -> dict[str, Any]:
    row: dict[str, Any] = {
        "id": chunk.id,
        "path": chunk.path,
        "source": chunk.source,
        "start_line": chunk.start_line,
        "end_line": chunk.end_line,
        "text": chunk.text,
        "hash": chunk.hash,
        "model": chunk.model,
        "updated_at": now,
    }
    if with_vector:
        row["vector"] = vector
    return row


def entry_row(chunk: Chunk, vector: Sequence[float] | None, with_vector: bool) -> dict[str, Any]:
    entry = chunk.entry
    assert entry is not None
    row: dict[str, Any] = {
        "id": entry.id,
        "chunk_id": chunk.id,
        "text": entry.text,
        "importance": entry.importance,
        "category": entry.category,
        "created_at": entry.created_at,
        "path": chunk.path,
        "start_line": chunk.start_line,
        "end_line": chunk.end_line,
    }
    if with_vector:
        row["vector"] = vector
    return row


def _unique(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return list({r["id"]: r for r in rows}.values())


def sync_generation(
    store: LanceStore,
    snapshot: Snapshot,
    embedder: Embedder | None,
    counts: SyncTally,
    *,
    force: bool,
    progress: Progress,
    journal: str,
) -> tuple[str | None, int]:
    """Sync ``snapshot`` into the live generation, or rebuild into a new one, counting
    into ``counts``. Returns why the whole index was rebuilt (``None``: incremental, see
    :func:`rebuild_reason`) and how many chunks were written."""
    wanted = wanted_fingerprint(snapshot)
    pointer = store.pointer(fresh=True)
    live = _live_tables(store, pointer.generation) if pointer else None
    reason = rebuild_reason(pointer.fingerprint if pointer else None, wanted, force=force)
    if live is None and reason is None:
        reason = "live tables are missing"
    if reason is None and live is not None:
        indexer = Indexer(store, live, embedder, journal=journal)
        indexer.run(snapshot, counts, progress)
        return None, indexer.chunks_written
    dims = _dims(wanted, embedder)
    fresh = store.new_generation(dims)
    indexer = Indexer(store, fresh, embedder, journal=journal, empty=True)
    try:
        indexer.run(snapshot, counts, progress)
        store.switch(fresh, wanted, dims)
    except BaseException:
        store.drop_generation(fresh.generation)
        raise
    old = set(live_paths(live)) if live is not None else set()
    counts.removed = len(old - {d.path for d in snapshot.documents})
    store.prune(fresh.generation)
    return reason, indexer.chunks_written


def settled(store: LanceStore, snapshot: Snapshot, *, journal: str) -> int | None:
    """The live generation's chunk count when a sync of ``snapshot`` would write nothing
    (same fingerprint and files, every FTS index built); else ``None``. Only reads, through
    :meth:`LanceStore.read_tables`: a one-shot search's sync then needs no lancedb."""
    pointer = store.pointer(fresh=True)
    wanted = wanted_fingerprint(snapshot)
    if pointer is None or rebuild_reason(pointer.fingerprint, wanted, force=False) is not None:
        return None
    tables = store.read_tables(pointer.generation)
    indexer = Indexer(store, tables, None, journal=journal)
    stored = indexer.stored_files()
    if set(stored) != {d.path for d in snapshot.documents} or indexer.changed(snapshot, stored):
        return None
    for table in (tables.chunks, tables.entries):  # what after_sync would build
        if not _housekeeping.has_fts(table) and table.count_rows() > 0:
            return None
    return int(tables.chunks.count_rows())


def _live_tables(store: LanceStore, generation: str) -> Tables | None:
    try:
        return store.tables(generation)
    except (ValueError, FileNotFoundError, OSError):
        return None


def live_paths(tables: Tables) -> list[str]:
    paths: list[str] = tables.files.to_arrow().column("path").to_pylist()
    return paths


def _dims(wanted: dict[str, Any], embedder: Embedder | None) -> int | None:
    if embedder is None:
        return None
    dims = wanted.get("vectorDims") or embedder.dims
    return int(dims) if dims else len(embedder.embed_query("dimension probe"))
