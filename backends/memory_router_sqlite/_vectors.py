"""Stored embeddings: float32 BLOBs written, BLOBs and the reference's JSON arrays read.

Also the in-process cosine search used while the vectors fit the memory budget (or
sqlite-vec is off or cannot load): the current model's vectors are held in memory
(:class:`Matrix`, rebuilt after each write) and searched by
:class:`~memory_router.kit.NearestVectors`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, TypeAlias

if TYPE_CHECKING:  # numpy loads with the first vector: keyword-only use never needs it
    import numpy as np
    import numpy.typing as npt

    Vector: TypeAlias = npt.NDArray[np.float32]


def encode(vector: Sequence[float] | Vector | None) -> bytes:
    """A vector as a float32 BLOB; an empty BLOB for keyword-only chunks."""
    if vector is None:
        return b""
    import numpy as np

    return np.asarray(vector, dtype=np.float32).tobytes()


def decode(value: Any) -> Vector | None:
    """A stored embedding (float32 BLOB or JSON-text array) as a vector; ``None`` if empty."""
    if value is None:
        return None
    import numpy as np

    if isinstance(value, bytes | bytearray | memoryview):
        raw = bytes(value)
        if not raw or len(raw) % 4:
            return None
        return np.frombuffer(raw, dtype=np.float32).copy()
    if isinstance(value, str):
        try:
            parsed = json.loads(value)
        except ValueError:
            return None
        if isinstance(parsed, list) and parsed:
            try:
                return np.asarray(parsed, dtype=np.float32)
            except (TypeError, ValueError):
                return None
    return None


class Matrix:
    """The current model's vectors in memory, for exact cosine search (see
    :class:`~memory_router.kit.NearestVectors`: a compact copy is scanned first from
    20k rows, and the best candidates rescored exactly).

    Built from ``(id, source, embedding, rowid)`` rows (BLOB or JSON; the row's rowid in
    ``chunks``); rows whose size differs from the first vector's are left out. About
    ``4 × dims`` bytes per chunk (5 × from 20k chunks:
    :func:`~memory_router.kit.vectors_footprint`).
    """

    def __init__(self, rows: Iterable[tuple[str, str, Any, int]]) -> None:
        import numpy as np

        from memory_router.kit import NearestVectors

        ids: list[str] = []
        sources: list[str] = []
        rowids: list[int] = []
        vectors: list[Vector] = []
        for chunk_id, source, blob, rowid in rows:
            vector = decode(blob)
            if vector is None or (vectors and vector.shape != vectors[0].shape):
                continue
            ids.append(chunk_id)
            sources.append(source)
            rowids.append(rowid)
            vectors.append(vector)
        self.ids = ids
        self.rowids = rowids
        self.sources = np.asarray(sources, dtype=object)
        matrix = np.vstack(vectors) if vectors else np.zeros((0, 0), dtype=np.float32)
        self.nearest = NearestVectors(matrix)

    @property
    def dims(self) -> int | None:
        return self.nearest.dims if self.ids else None

    def top(self, query: Vector, limit: int, sources: Sequence[str] | None = None) -> list[Nearest]:
        """The ``limit`` chunks most cosine-similar to ``query``, best first."""
        if not self.ids or self.dims != len(query) or limit <= 0:
            return []
        import numpy as np

        allowed = np.isin(self.sources, list(sources)) if sources else None
        found = self.nearest.top(query, limit, allowed)
        return [Nearest(self.ids[i], self.rowids[i], s) for i, s in found]


class Nearest(NamedTuple):
    """One chunk the vector scan found: its id, its rowid in ``chunks`` when the vectors
    were loaded, and its cosine."""

    id: str
    rowid: int
    score: float
