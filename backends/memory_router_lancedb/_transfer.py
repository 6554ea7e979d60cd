"""Entries by chunk id, and chunks out of and into the store (for ``migrate``)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, cast

from memory_router import Category, Chunk, Entry

from ._store import LanceStore, Tables, in_list
from ._sync import Indexer

BATCH = 500


def _entry(row: Mapping[str, Any]) -> Entry:
    created = row["created_at"]
    if isinstance(created, datetime) and created.tzinfo is None:
        created = created.replace(tzinfo=UTC)
    return Entry(
        id=row["id"],
        text=row["text"],
        importance=float(row["importance"]),
        category=cast(Category, row["category"]),
        created_at=created,
    )


def entries_by_chunk(table: Any, chunk_ids: list[str]) -> dict[str, Entry]:
    """The entries of these chunks, keyed by chunk id."""
    columns = ["id", "chunk_id", "text", "importance", "category", "created_at"]
    rows = (
        table.search()
        .where(in_list("chunk_id", chunk_ids))
        .select(columns)
        .limit(len(chunk_ids) * 2)
        .to_arrow()
        .to_pylist()
    )
    return {r["chunk_id"]: _entry(r) for r in rows}


def export_chunks(store: LanceStore, tables: Tables) -> Iterator[Chunk]:
    """Every chunk with its embedding (``None`` in keyword-only stores) and entry, sorted
    by chunk id (a stable order, so a resumed migration can skip by position)."""
    entries = {r["chunk_id"]: _entry(r) for r in tables.entries.to_arrow().to_pylist()}
    vector = "vector" in tables.chunks.schema.names
    data = tables.chunks.to_arrow().sort_by("id")
    for batch in data.to_batches(max_chunksize=BATCH):
        for r in batch.to_pylist():
            embedding = tuple(float(x) for x in r["vector"]) if vector and r["vector"] else None
            yield Chunk(
                id=r["id"],
                path=r["path"],
                source="sessions" if r["source"] == "sessions" else "memory",
                start_line=int(r["start_line"]),
                end_line=int(r["end_line"]),
                text=r["text"],
                hash=r["hash"],
                model=r["model"],
                embedding=embedding,
                entry=entries.get(r["id"]),
            )


def normalised(fingerprint: Mapping[str, Any]) -> dict[str, Any]:
    value: dict[str, Any] = json.loads(json.dumps(dict(fingerprint), sort_keys=True))
    return value


def import_chunks(
    store: LanceStore, chunks: Iterable[Chunk], *, fingerprint: Mapping[str, Any], journal: str
) -> int:
    """Upsert ``chunks`` (by id) into the live generation, creating one when there is none.

    Files get no ``files`` rows, so the next sync re-checks them against the workspace;
    it reuses the imported vectors of chunks whose id (text, lines, model) is unchanged.
    Vectors of another size than the store's are dropped.
    """
    pointer = store.pointer(fresh=True)
    if pointer is None:
        wanted = normalised(fingerprint)
        dims = wanted.get("vectorDims")
        tables = store.new_generation(int(dims) if dims else None)
        store.switch(tables, wanted, int(dims) if dims else None)
    else:
        tables = store.tables(pointer.generation)
    written = 0
    batch: list[Chunk] = []
    for chunk in chunks:
        batch.append(chunk)
        if len(batch) >= BATCH:
            written += write_batch(store, tables, batch)
            batch = []
    if batch:
        written += write_batch(store, tables, batch)
    return written


def write_batch(store: LanceStore, tables: Tables, batch: Sequence[Chunk]) -> int:
    """Upsert ``batch`` with its embeddings (and entries) into ``tables``."""
    dims = tables.chunks.schema.field("vector").type.list_size if _has_vector(tables) else None
    unique = list({c.id: c for c in batch}.values())
    vectors = [
        list(c.embedding) if c.embedding is not None and len(c.embedding) == dims else None
        for c in unique
    ]
    Indexer(store, tables, None, journal="").write_chunks(unique, vectors, paths=None)
    return len(unique)


def _has_vector(tables: Tables) -> bool:
    return "vector" in tables.chunks.schema.names
