"""Explicit Arrow schemas of the store's tables.

Every table is written only through ``merge_insert`` on its key, and the key field carries
Lance's primary-key metadata: without it, two processes upserting the same new id at once
both insert it (measured: 110 rows for 60 ids).
"""

from __future__ import annotations

from typing import Any

PRIMARY_KEY = {"lance-schema:unenforced-primary-key": "true"}


def _pa() -> Any:
    import pyarrow

    return pyarrow


def _key(name: str) -> Any:
    pa = _pa()
    return pa.field(name, pa.string(), nullable=False, metadata=PRIMARY_KEY)


def _vector(dims: int | None) -> list[Any]:
    pa = _pa()
    return [] if dims is None else [pa.field("vector", pa.list_(pa.float32(), dims))]


def chunks_schema(dims: int | None) -> Any:
    """``chunks``: one row per chunk of every memory file (entries' chunks included)."""
    pa = _pa()
    return pa.schema(
        [
            _key("id"),
            pa.field("path", pa.string(), nullable=False),
            pa.field("source", pa.string(), nullable=False),
            pa.field("start_line", pa.int32(), nullable=False),
            pa.field("end_line", pa.int32(), nullable=False),
            pa.field("text", pa.string(), nullable=False),
            pa.field("hash", pa.string(), nullable=False),
            pa.field("model", pa.string(), nullable=False),
            *_vector(dims),
            pa.field("updated_at", pa.timestamp("ms", tz="UTC"), nullable=False),
        ]
    )


def entries_schema(dims: int | None) -> Any:
    """``entries``: one row per journaled entry, with its native importance and category."""
    pa = _pa()
    return pa.schema(
        [
            _key("id"),
            pa.field("chunk_id", pa.string(), nullable=False),
            pa.field("text", pa.string(), nullable=False),
            *_vector(dims),
            pa.field("importance", pa.float64(), nullable=False),
            pa.field("category", pa.string(), nullable=False),
            pa.field("created_at", pa.timestamp("ms", tz="UTC"), nullable=False),
            pa.field("path", pa.string(), nullable=False),
            pa.field("start_line", pa.int32(), nullable=False),
            pa.field("end_line", pa.int32(), nullable=False),
        ]
    )


def files_schema() -> Any:
    """``files``: the content hash of each indexed file (what incremental sync compares)."""
    pa = _pa()
    return pa.schema(
        [
            _key("path"),
            pa.field("source", pa.string(), nullable=False),
            pa.field("hash", pa.string(), nullable=False),
            pa.field("mtime", pa.int64(), nullable=False),
            pa.field("size", pa.int64(), nullable=False),
        ]
    )


def meta_schema() -> Any:
    """``meta``: which generation is live and its fingerprint, housekeeping times (JSON)."""
    pa = _pa()
    return pa.schema([_key("key"), pa.field("value", pa.string(), nullable=False)])
