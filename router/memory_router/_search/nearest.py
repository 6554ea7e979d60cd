"""Nearest vectors by cosine, over vectors held in memory: one home for the backends' scan.

A backend that keeps its vectors in memory (the built-in SQLite backend, LanceDB while they
fit ``memory_budget_mb``) answers the vector leg of a search with :class:`NearestVectors`.

Below :data:`COMPACT_ROWS` rows a query is one exact pass over the float32 rows. Reading
every float32 vector is memory-bound (100k × 384 dims is 154 MB a query, ~13 ms on one
core here), so above it a query reads a compact copy first: int8 codes, one scale per
dimension, stored dimension by dimension, of which only the query's strongest dimensions
are read (its non-zero ones, at most :data:`DIMS_SHARE` of them: the largest ``|q_j|``).
That ranks every row approximately; the best :func:`pool` rows are then scored exactly in
float32 and the best ``limit`` of those returned, with exact scores. ``bench/bench_sqlite.py``
measures recall@10 against the exact scan (it must stay ≥ 0.99; docs/performance.md).

No BLAS call is made: OpenBLAS threads a large matrix-vector product on its own, and on a
busy machine those threads wait for each other (and for the caller's other threads); the
einsum and ufunc loops used here run on the calling thread only.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, TypeAlias

if TYPE_CHECKING:  # numpy loads with the first vector: keyword-only use never needs it
    import numpy as np
    import numpy.typing as npt

    Floats: TypeAlias = npt.NDArray[np.float32]
    Mask: TypeAlias = npt.NDArray[np.bool_]

COMPACT_ROWS = 20_000
"""Rows from which the compact copy is kept and scanned first (below, one exact pass is
already a millisecond or two)."""
DIMS_SHARE = 0.25
"""The share of the dimensions the compact scan reads for a dense query."""
POOL_MIN = 256
"""Rows rescored exactly at least (and 4 × ``limit`` when more)."""
_BLOCK = 4096  # rows of the compact copy decoded at a time, at least
_DECODED = 2**20  # bytes of decoded floats at a time (the core's cache): fewer dims, more rows


def pool(limit: int, rows: int) -> int:
    """How many approximately ranked rows are rescored exactly for ``limit`` results."""
    return min(rows, max(POOL_MIN, 4 * limit))


def vectors_footprint(rows: int, dims: int) -> int:
    """Bytes :class:`NearestVectors` holds for ``rows`` vectors of ``dims``: the float32
    rows, plus one byte a value for the compact copy from :data:`COMPACT_ROWS` rows."""
    return rows * dims * (5 if rows >= COMPACT_ROWS else 4)


class NearestVectors:
    """Unit-normalised float32 rows and, from :data:`COMPACT_ROWS` rows, their compact copy.

    ``matrix`` is any 2-d array of vectors; rows of zero length stay zero (they score 0).
    Immutable after construction, so any number of threads may query it at once.
    """

    def __init__(self, matrix: npt.ArrayLike) -> None:
        import numpy as np

        rows = np.array(matrix, dtype=np.float32, ndmin=2)  # a copy: normalised in place
        norms = np.linalg.norm(rows, axis=1, keepdims=True) if rows.size else None
        if norms is not None:
            norms[norms < 1e-10] = 1.0
            rows /= norms
        self.matrix: Floats = np.ascontiguousarray(rows)
        self._scale: Floats | None = None
        self._codes: npt.NDArray[np.int8] | None = None
        if len(self.matrix) >= COMPACT_ROWS and self.matrix.shape[1]:
            self._scale, self._codes = _compact(self.matrix)

    def __len__(self) -> int:
        return len(self.matrix)

    @property
    def dims(self) -> int:
        return int(self.matrix.shape[1]) if self.matrix.ndim == 2 else 0

    def exact(self, query: Sequence[float] | Floats) -> Floats:
        """The cosine of ``query`` with every row (one exact pass)."""
        import numpy as np

        q = _unit(query)
        scores: Floats = np.einsum("ij,j->i", self.matrix, q)
        return scores

    def top(
        self, query: Sequence[float] | Floats, limit: int, allowed: Mask | None = None
    ) -> list[tuple[int, float]]:
        """``(row, cosine)`` of the ``limit`` rows nearest ``query``, best first (ties: the
        lower row). ``allowed`` (a boolean per row) leaves the other rows out. Empty when
        the query's size differs from the rows' or it is the zero vector."""
        import numpy as np

        if not len(self) or limit <= 0 or len(query) != self.dims:
            return []
        q = _unit(query)
        if not q.any():
            return []
        if self._codes is None:
            return _best(self.exact(q), np.arange(len(self)), limit, allowed)
        approx = self._approximate(q)
        if allowed is not None:
            approx[~allowed] = -np.inf
        wanted = pool(limit, len(self))
        candidates = np.argpartition(-approx, wanted - 1)[:wanted]
        candidates = candidates[np.isfinite(approx[candidates])]
        exact: Floats = np.einsum("ij,j->i", self.matrix[candidates], q)
        return _best(exact, candidates, limit, None)

    def _approximate(self, q: Floats) -> Floats:
        """Every row's approximate cosine, from the compact copy's strongest dimensions."""
        import numpy as np

        assert self._codes is not None
        assert self._scale is not None
        strongest = np.argsort(-np.abs(q), kind="stable")
        take = min(int(np.count_nonzero(q)), max(1, round(self.dims * DIMS_SHARE)))
        dims = np.sort(strongest[:take])
        weights = (q[dims] * self._scale[dims])[:, None]
        rows = len(self)
        out = np.empty(rows, dtype=np.float32)
        step = max(_BLOCK, _DECODED // (4 * len(dims)))  # each row's sum is the same either way
        decoded = np.empty((len(dims), min(step, rows)), dtype=np.float32)
        for start in range(0, rows, step):
            end = min(rows, start + step)
            block = decoded[:, : end - start]
            np.copyto(block, self._codes[dims, start:end], casting="unsafe")
            np.multiply(block, weights, out=block)
            np.sum(block, axis=0, out=out[start:end])
        return out


def _unit(query: Sequence[float] | Floats) -> Floats:
    import numpy as np

    q = np.asarray(query, dtype=np.float32)
    norm = float(np.linalg.norm(q))
    return q / norm if norm > 1e-10 else q


def _compact(matrix: Floats) -> tuple[Floats, npt.NDArray[np.int8]]:
    """``(scale per dimension, int8 codes stored dimension by dimension)``."""
    import numpy as np

    scale = (np.abs(matrix).max(axis=0) / 127.0).astype(np.float32)
    scale[scale <= 0] = 1.0
    codes = np.empty((matrix.shape[1], len(matrix)), dtype=np.int8)
    for start in range(0, len(matrix), 8 * _BLOCK):  # no full-size float temporary
        part = matrix[start : start + 8 * _BLOCK] / scale
        codes[:, start : start + len(part)] = np.rint(part).astype(np.int8).T
    return scale, codes


def _best(
    scores: Floats, rows: npt.NDArray[np.intp], limit: int, allowed: Mask | None
) -> list[tuple[int, float]]:
    """The ``limit`` best of ``scores`` (for ``rows``), best first, ties by row."""
    import numpy as np

    if allowed is not None:
        scores = np.where(allowed, scores, np.float32(-np.inf))
    k = min(limit, len(scores))
    if k <= 0:
        return []
    picked = np.argpartition(-scores, k - 1)[:k]
    picked = picked[np.lexsort((rows[picked], -scores[picked]))]
    picked = picked[np.isfinite(scores[picked])]
    return list(zip(rows[picked].tolist(), scores[picked].tolist(), strict=True))
