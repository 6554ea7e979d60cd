"""Exact vector search over the live vectors held in memory (``vector_search = "auto"``).

LanceDB's brute-force search reads every vector from storage for each query. While the
chunks' vectors (and rows) fit ``memory_budget_mb``, this process keeps them in memory
instead (:class:`~memory_router.kit.NearestVectors`): exact cosine scores, no bytes read
per query (most of all on object storage). Past the budget
LanceDB searches (with its ANN index once built).

The copy follows the table's version, so other writers' commits are seen as soon as
LanceDB's read consistency lets the version through. A new version is read
incrementally: a row id names an immutable row of a data file, so the rows whose ids
are still live are kept, and only new ids are taken from the store (at 100k chunks a
listing of ~0.4 MB instead of ~180 MB); when most ids are new (a compaction rewrote the
files) everything is read again. (This relies on LanceDB's default row ids, which are row
addresses: a table created with stable row ids — the ``new_table_enable_stable_row_ids``
storage option — keeps an id across an update, and would need ``vector_search = "lance"``.)
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

import numpy as np

from memory_router.kit import NearestVectors, vectors_footprint

from ._light import LightTable
from ._search import COLUMNS, Row

_READ = [*COLUMNS, "vector"]


@dataclass(frozen=True, slots=True)
class Loaded:
    key: tuple[str, int]  # generation, table version
    rows: list[dict[str, Any]]
    row_ids: np.ndarray  # LanceDB row id of each of ``rows``
    sources: np.ndarray
    nearest: NearestVectors
    positions: dict[int, int]  # row id → index in ``rows``

    def row_at(self, row_id: int, score: float) -> Row | None:
        """The row ``row_id`` as a :class:`Row` scored ``score`` (``None`` if unknown)."""
        at = self.positions.get(row_id)
        return None if at is None else _row(self.rows[at], score)

    def current(self, table: Any) -> bool:
        return int(table.version) == self.key[1]


def _loaded(key: tuple[str, int], data: Any, dims: int) -> Loaded:
    """A :class:`Loaded` from rows read with their row ids."""
    vectors = data.column("vector").combine_chunks()
    # The list values by hand: ``flatten()`` would import ``pyarrow.compute`` (~50 ms of a
    # one-shot search); a fixed-size list's values start at ``offset × dims``.
    values = vectors.values.slice(vectors.offset * dims, len(vectors) * dims)
    flat = values.to_numpy(zero_copy_only=False).astype(np.float32, copy=False)
    matrix = flat.reshape(len(vectors), dims) if len(vectors) else flat.reshape(0, dims)
    row_ids = np.asarray(data.column("_rowid").to_pylist(), dtype=np.uint64)
    return Loaded(
        key,
        data.select(COLUMNS).to_pylist(),
        row_ids,
        np.asarray(data.column("source").to_pylist(), dtype=str),
        NearestVectors(np.nan_to_num(matrix)),
        {int(r): i for i, r in enumerate(row_ids)},
    )


def _refreshed(old: Loaded, table: Any, key: tuple[str, int], count: int) -> Loaded | None:
    """``old`` brought to the table's version by reading only new rows; ``None`` when
    most rows are new (reading everything is then as cheap)."""
    live = np.asarray(_row_ids(table, count), dtype=np.uint64)
    kept = np.isin(live, old.row_ids)
    fresh = live[~kept]
    if len(fresh) * 2 > len(live):
        return None
    keep = np.asarray([old.positions[int(r)] for r in live[kept]], dtype=np.int64)
    dims = old.nearest.dims
    new = None
    if len(fresh):
        new = _loaded(key, _take(table, [int(r) for r in fresh]), dims)
    rows = [old.rows[k] for k in keep] + (new.rows if new else [])
    row_ids = np.concatenate([old.row_ids[keep], *([new.row_ids] if new else [])])
    return Loaded(
        key,
        rows,
        row_ids,
        np.concatenate([old.sources[keep], *([new.sources] if new else [])]),
        NearestVectors(
            np.concatenate([old.nearest.matrix[keep], *([new.nearest.matrix] if new else [])])
        ),
        {int(r): i for i, r in enumerate(row_ids)},
    )


def _read_all(table: Any, count: int) -> Any:
    """Every row's :data:`_READ` columns and row id, as Arrow."""
    if isinstance(table, LightTable):
        return table.scan(_READ, row_ids=True)
    return table.search().select(_READ).with_row_id(True).limit(max(count, 1)).to_arrow()


def _row_ids(table: Any, count: int) -> list[int]:
    """Every live row's id."""
    if isinstance(table, LightTable):
        ids: list[int] = table.scan([], row_ids=True).column("_rowid").to_pylist()
        return ids
    listing = table.search().select(["start_line"]).with_row_id(True).limit(max(count, 1))
    found: list[int] = listing.to_arrow().column("_rowid").to_pylist()
    return found


def _take(table: Any, row_ids: list[int]) -> Any:
    """The rows ``row_ids`` (:data:`_READ` and row id), as Arrow."""
    if isinstance(table, LightTable):
        return table.take(row_ids, _READ)
    return table.take_row_ids(row_ids).with_row_id().select(_READ).to_arrow()


def fits(count: int, dims: int, budget_bytes: int) -> bool:
    """Whether ``count`` rows with ``dims``-d vectors fit ``budget_bytes`` in memory
    (the vectors, their compact copy from 20k rows, and ~600 bytes of row each)."""
    return vectors_footprint(count, dims) + count * 600 <= budget_bytes


class VectorCache:
    """One table's vectors in memory, keyed by generation and table version."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loaded: Loaded | None = None
        self._too_big: tuple[str, int] | None = None  # the version that did not fit

    def held(self, generation: str, version: int) -> tuple[bool, Loaded | None]:
        """Whether :meth:`load` would answer for ``version`` without reading (the vectors
        are held, or known not to fit), and the vectors held (no call, no lock)."""
        key = (generation, version)
        loaded = self._loaded
        if loaded is not None and loaded.key == key:
            return True, loaded
        return self._too_big == key, None

    def load(self, generation: str, table: Any, budget_bytes: int) -> Loaded | None:
        """The vectors, or ``None`` when they would not fit ``budget_bytes`` (or a commit
        came in while they were read: the next query reads that version)."""
        version = int(table.version)
        key = (generation, version)
        known, loaded = self.held(generation, version)
        if known:
            return loaded
        with self._lock:
            old = self._loaded
            if old is not None and old.key == key:
                return old
            count = int(table.count_rows())
            dims = int(table.schema.field("vector").type.list_size)
            if not fits(count, dims, budget_bytes):
                self._loaded, self._too_big = None, key
                return None
            found = None
            if old is not None and old.key[0] == generation and old.nearest.dims == dims:
                found = _refreshed(old, table, key, count)
            if found is None:
                found = _loaded(key, _read_all(table, count), dims)
            if int(table.version) != version:  # read across two versions: not kept
                return None
            self._loaded = found
            return found


def top(
    loaded: Loaded, query: Any, *, sources: tuple[str, ...] | None, limit: int
) -> dict[str, Row]:
    """The ``limit`` nearest chunks by cosine (:class:`~memory_router.kit.NearestVectors`)."""
    if not loaded.rows:
        return {}
    allowed = np.isin(loaded.sources, list(sources)) if sources else None
    found = {}
    for i, score in loaded.nearest.top(query, limit, allowed):
        r = loaded.rows[i]
        found[r["id"]] = _row(r, score)
    return found


def _row(r: dict[str, Any], score: float) -> Row:
    return Row(
        r["id"], r["path"], r["source"], int(r["start_line"]), int(r["end_line"]), r["text"], score
    )
