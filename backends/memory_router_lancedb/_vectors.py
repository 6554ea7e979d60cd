"""Exact vector search over the live vectors held in memory (``vector_search = "auto"``).

LanceDB's brute-force search reads every vector from storage for each query. While the
chunks' vectors (and rows) fit ``memory_budget_mb``, this process keeps them in one
float32 matrix instead — reloaded when the table's version changes, so other writers'
commits are seen as soon as LanceDB's read consistency lets the version through — and
answers with one
matrix product: the same exact cosine scores, far fewer bytes per query (most of all on
object storage). Past the budget, or with an ANN index, LanceDB searches.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

import numpy as np

from ._search import COLUMNS, Row


@dataclass(frozen=True, slots=True)
class Loaded:
    key: tuple[str, int]  # generation, table version
    rows: list[dict[str, Any]]
    positions: dict[int, int]  # LanceDB row id (of this version) → index in ``rows``
    sources: np.ndarray
    matrix: np.ndarray

    def row_at(self, row_id: int, score: float) -> Row | None:
        """The row ``row_id`` as a :class:`Row` scored ``score`` (``None`` if unknown)."""
        at = self.positions.get(row_id)
        return None if at is None else _row(self.rows[at], score)

    def current(self, table: Any) -> bool:
        return int(table.version) == self.key[1]


class VectorCache:
    """One table's vectors in memory, keyed by generation and table version."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loaded: Loaded | None = None
        self._too_big: tuple[str, int] | None = None  # the version that did not fit

    def load(self, generation: str, table: Any, budget_bytes: int) -> Loaded | None:
        """The vectors, or ``None`` when they would not fit ``budget_bytes``."""
        version = int(table.version)
        key = (generation, version)
        loaded = self._loaded
        if loaded is not None and loaded.key == key:
            return loaded
        if self._too_big == key:
            return None
        with self._lock:
            if self._loaded is not None and self._loaded.key == key:
                return self._loaded
            count = int(table.count_rows())
            dims = int(table.schema.field("vector").type.list_size)
            if count * (dims * 4 + 600) > budget_bytes:  # vectors plus ~600 bytes of row
                self._loaded, self._too_big = None, key
                return None
            scan = table.search().select([*COLUMNS, "vector"]).with_row_id(True)
            data = scan.limit(max(count, 1)).to_arrow()
            if int(table.version) != version:  # a commit came in between: read it next time
                return None
            vectors = data.column("vector").combine_chunks()
            flat = vectors.flatten().to_numpy(zero_copy_only=False).astype(np.float32, copy=False)
            matrix = flat.reshape(len(vectors), dims) if len(vectors) else flat.reshape(0, dims)
            rows = data.select(COLUMNS).to_pylist()
            self._loaded = Loaded(
                key,
                rows,
                {int(r): i for i, r in enumerate(data.column("_rowid").to_pylist())},
                np.asarray(data.column("source").to_pylist(), dtype=str),
                np.nan_to_num(matrix),
            )
            return self._loaded


def top(
    loaded: Loaded, query: Any, *, sources: tuple[str, ...] | None, limit: int
) -> dict[str, Row]:
    """The ``limit`` nearest chunks by exact cosine (vectors are unit length)."""
    if not loaded.rows:
        return {}
    scores = loaded.matrix @ np.asarray(query, dtype=np.float32)
    if sources:
        scores = np.where(np.isin(loaded.sources, list(sources)), scores, -np.inf)
    k = min(limit, len(scores))
    best = np.argpartition(-scores, k - 1)[:k]
    best = best[np.argsort(-scores[best])]
    found = {}
    for i in best:
        if np.isfinite(scores[i]):
            r = loaded.rows[int(i)]
            found[r["id"]] = _row(r, float(scores[i]))
    return found


def _row(r: dict[str, Any], score: float) -> Row:
    return Row(
        r["id"], r["path"], r["source"], int(r["start_line"]), int(r["end_line"]), r["text"], score
    )
