"""NearestVectors: exact cosine top-k, and the compact scan with exact rescoring from 20k rows."""

from __future__ import annotations

import numpy as np
import pytest

from memory_router.kit import NearestVectors, vectors_footprint

ROWS = 25_000  # over COMPACT_ROWS: the compact copy is built and scanned first
DIMS = 384


@pytest.fixture(scope="module")
def clustered() -> np.ndarray:
    """Vectors around 200 topics, as a sentence model's are (not uniform noise)."""
    rng = np.random.default_rng(7)
    topics = rng.standard_normal((200, DIMS)).astype(np.float32)
    picks = rng.integers(0, len(topics), ROWS)
    noise = rng.standard_normal((ROWS, DIMS)).astype(np.float32)
    return (topics[picks] + 0.8 * noise).astype(np.float32)


def exact_top(matrix: np.ndarray, query: np.ndarray, k: int) -> list[int]:
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    unit = matrix / np.where(norms > 0, norms, 1.0)
    scores = np.where(norms[:, 0] > 0, unit @ (query / np.linalg.norm(query)), -np.inf)
    return [int(i) for i in np.argsort(-scores, kind="stable")[:k]]


def test_small_sets_are_one_exact_pass() -> None:
    rows = np.array([[1.0, 0.0], [0.6, 0.8], [0.0, 2.0], [0.0, 0.0]], dtype=np.float32)
    nearest = NearestVectors(rows)
    found = nearest.top([1.0, 1.0], 4)
    assert [i for i, _ in found] == [1, 0, 2, 3]  # ties (rows 0 and 2) by row
    assert found[0][1] == pytest.approx(0.98995, abs=1e-5)
    assert found[-1][1] == 0.0  # the zero row scores 0, it is not dropped
    allowed = np.array([True, False, True, True])
    assert [i for i, _ in nearest.top([1.0, 1.0], 2, allowed)] == [0, 2]
    assert nearest.top([0.0, 0.0], 3) == []  # the zero query: nothing is near it
    assert nearest.top([1.0, 0.0, 0.0], 3) == []  # another size: no answer, no error


def test_dense_queries_find_the_exact_top_ten(clustered: np.ndarray) -> None:
    nearest = NearestVectors(clustered)
    rng = np.random.default_rng(3)
    found = 0
    for _ in range(20):
        query = clustered[rng.integers(ROWS)] + 0.3 * rng.standard_normal(DIMS).astype(np.float32)
        top = nearest.top(query, 10)
        found += len({i for i, _ in top} & set(exact_top(clustered, query, 10)))
        exact = nearest.exact(query)
        assert [s for _, s in top] == pytest.approx([float(exact[i]) for i, _ in top], abs=1e-5)
        assert [s for _, s in top] == sorted((s for _, s in top), reverse=True)
    assert found / 200 >= 0.99


def test_sparse_queries_are_ranked_on_their_own_dimensions(clustered: np.ndarray) -> None:
    """A query with few non-zero dimensions (a hashing embedder's) reads only those."""
    nearest = NearestVectors(clustered)
    query = np.zeros(DIMS, dtype=np.float32)
    query[[5, 77, 301]] = [1.0, -0.5, 0.25]
    assert [i for i, _ in nearest.top(query, 10)] == exact_top(clustered, query, 10)


def test_allowed_rows_only(clustered: np.ndarray) -> None:
    nearest = NearestVectors(clustered)
    allowed = np.zeros(ROWS, dtype=bool)
    allowed[::3] = True
    query = clustered[10]
    found = nearest.top(query, 10, allowed)
    assert all(i % 3 == 0 for i, _ in found)
    masked = np.where(allowed[:, None], clustered, 0.0)
    assert {i for i, _ in found} == set(exact_top(masked, query, 10))


def test_footprint_counts_the_compact_copy() -> None:
    assert vectors_footprint(1_000, 384) == 1_000 * 384 * 4
    assert vectors_footprint(ROWS, 384) == ROWS * 384 * 5
