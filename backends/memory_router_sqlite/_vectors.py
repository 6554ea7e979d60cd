"""Stored embeddings: float32 BLOBs written, BLOBs and the reference's JSON arrays read.

Also the exact in-process cosine search used when sqlite-vec is off or cannot load: the
current model's vectors are held in memory (:class:`Matrix`, rebuilt after each write)
and scored with one matrix product per query.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, TypeAlias

if TYPE_CHECKING:  # numpy loads with the first vector: keyword-only use never needs it
    from concurrent.futures import ThreadPoolExecutor

    import numpy as np
    import numpy.typing as npt

    Vector: TypeAlias = npt.NDArray[np.float32]
SPLIT = 50_000  # rows above which the product is split over two threads


@functools.cache
def _pool() -> ThreadPoolExecutor:
    """Two threads for splitting large products, started on first use (not at import)."""
    from concurrent.futures import ThreadPoolExecutor

    return ThreadPoolExecutor(max_workers=2, thread_name_prefix="sqlite-vectors")


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
    """Unit-normalised vectors of one model held in memory, for exact cosine search.

    Built from ``(id, source, embedding)`` rows (BLOB or JSON); rows whose size differs
    from the first vector's are left out. About ``4 × dims`` bytes per chunk.
    """

    def __init__(self, rows: Iterable[tuple[str, str, Any]]) -> None:
        import numpy as np

        ids: list[str] = []
        sources: list[str] = []
        vectors: list[Vector] = []
        for chunk_id, source, blob in rows:
            vector = decode(blob)
            if vector is None or (vectors and vector.shape != vectors[0].shape):
                continue
            ids.append(chunk_id)
            sources.append(source)
            vectors.append(vector)
        self.ids = ids
        self.sources = np.asarray(sources, dtype=object)
        matrix = np.vstack(vectors) if vectors else np.zeros((0, 0), dtype=np.float32)
        norms = np.linalg.norm(matrix, axis=1, keepdims=True) if vectors else None
        if norms is not None:
            norms[norms < 1e-10] = 1.0
            matrix = matrix / norms
        self.matrix: npt.NDArray[np.float32] = matrix.astype(np.float32, copy=False)

    @property
    def dims(self) -> int | None:
        return int(self.matrix.shape[1]) if self.ids else None

    def top(
        self, query: Vector, limit: int, sources: Sequence[str] | None = None
    ) -> list[tuple[str, float]]:
        """The ``limit`` ids most cosine-similar to ``query``, best first."""
        if not self.ids or self.dims != len(query) or limit <= 0:
            return []
        import numpy as np

        norm = float(np.linalg.norm(query))
        q = np.asarray(query, dtype=np.float32) / (norm if norm > 1e-10 else 1.0)
        scores = self._scores(q)
        if sources:
            scores = np.where(np.isin(self.sources, list(sources)), scores, -np.inf)
        k = min(limit, len(scores))
        picked = np.argpartition(-scores, k - 1)[:k]
        picked = picked[np.argsort(-scores[picked], kind="stable")]
        return [(self.ids[i], float(scores[i])) for i in picked if np.isfinite(scores[i])]

    def _scores(self, q: Vector) -> npt.NDArray[np.float32]:
        rows = len(self.ids)
        if rows < SPLIT:
            result: npt.NDArray[np.float32] = self.matrix @ q
            return result
        # The product is memory-bound: two halves on two threads read twice as fast.
        import numpy as np

        half = rows // 2
        parts = list(_pool().map(lambda m: m @ q, (self.matrix[:half], self.matrix[half:])))
        return np.concatenate(parts)
