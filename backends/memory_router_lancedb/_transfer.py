"""Entries by chunk id, chunks out of the store, and appends to a staged copy (for
``migrate``)."""

from __future__ import annotations

import json
import struct
import time
from collections.abc import Iterator, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, cast

from memory_router import Category, Entry
from memory_router.kit import Chunk

from . import _schema
from ._light import LightTable
from ._store import LanceStore, Tables, in_list
from ._sync import entry_row

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
    if isinstance(table, LightTable):
        found = table.scan(columns, where=in_list("chunk_id", chunk_ids), limit=len(chunk_ids) * 2)
        return {r["chunk_id"]: _entry(r) for r in found.to_pylist()}
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
            embedding = tuple(r["vector"]) if vector and r["vector"] else None
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


def _has_vector(tables: Tables) -> bool:
    return "vector" in tables.chunks.schema.names


def column(table: Any, name: str) -> set[str]:
    """Every value of one string column of ``table``."""
    data = table.search().select([name]).limit(None).to_arrow()
    return set(data.column(name).to_pylist())


def append(tables: Tables, chunks: Sequence[Chunk]) -> None:
    """Append ``chunks`` (ids not in ``tables``) and their entries, one commit per table."""
    if not chunks:
        return
    pa = _schema._pa()
    schema = tables.chunks.schema
    now = int(time.time() * 1000)
    columns: dict[str, Any] = {
        "id": [c.id for c in chunks],
        "path": [c.path for c in chunks],
        "source": [c.source for c in chunks],
        "start_line": [c.start_line for c in chunks],
        "end_line": [c.end_line for c in chunks],
        "text": [c.text for c in chunks],
        "hash": [c.hash for c in chunks],
        "model": [c.model for c in chunks],
        "updated_at": [now] * len(chunks),
    }
    dims = schema.field("vector").type.list_size if _has_vector(tables) else 0
    arrays = [
        vector_array(chunks, dims)
        if field.name == "vector"
        else pa.array(columns[field.name], type=field.type)
        for field in schema
    ]
    tables.chunks.add(pa.Table.from_arrays(arrays, schema=schema))
    entries = [
        entry_row(c, _sized(c.embedding, dims), bool(dims)) for c in chunks if c.entry is not None
    ]
    if entries:
        tables.entries.add(pa.Table.from_pylist(entries, schema=tables.entries.schema))


def vector_array(chunks: Sequence[Chunk], dims: int) -> Any:
    """The chunks' embeddings as a fixed-size list array over one packed float32 buffer;
    null where missing or of another size."""
    import numpy as np

    pa = _schema._pa()
    keep = [c.embedding is not None and len(c.embedding) == dims for c in chunks]
    row = struct.Struct(f"{dims}f")  # packing is ~2x faster than numpy on tuples
    zero = bytes(row.size)
    packed = b"".join(
        row.pack(*c.embedding) if k and c.embedding else zero
        for c, k in zip(chunks, keep, strict=True)
    )
    values = pa.array(np.frombuffer(packed, dtype=np.float32))
    mask = None if all(keep) else pa.array([not k for k in keep])
    return pa.FixedSizeListArray.from_arrays(values, dims, mask=mask)


def _sized(vector: tuple[float, ...] | None, dims: int) -> list[float] | None:
    return list(vector) if vector is not None and len(vector) == dims else None
