"""The LanceDB ANN vector index: built by maintenance past ``ann_min_rows``, kept (not
rebuilt) by the next ``optimize()``, exact scores through ``refine_factor``, and rows
written after it still found before the next fold."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from memory_router import Router, testing
from memory_router.kit import SearchRequest

WORDS = [f"w{i}" for i in range(400)]


def workspace(tmp_path: Path) -> Path:
    """Ten files of 60 paragraphs each: ~600 chunks of 32 tokens."""
    rng = random.Random(7)
    files = {
        f"memory/f{n}.md": "\n\n".join(" ".join(rng.choices(WORDS, k=24)) for _ in range(60)) + "\n"
        for n in range(10)
    }
    return testing.write_workspace(tmp_path / "workspace", files)


def router(tmp_path: Path, **settings: Any) -> Router:
    config = testing.router_config(
        tmp_path,
        tmp_path / "workspace",
        backend="lancedb",
        embedding="hash",
        settings={
            "uri": str(tmp_path / "lance"),
            "ann_min_rows": 300,
            "ann_partition_rows": 100,
            "optimize_every_writes": 1000,
            "optimize_interval_minutes": 10_000,
            "vector_search": "lance",  # "auto" answers from memory while the vectors fit
            **settings,
        },
        chunking={"tokens": 32, "overlap": 0},
        sync={"on_search": False},
        query={"hybrid": {"enabled": False}},
    )
    return Router.from_config(config, plugins=[testing])


def vector_index(r: Router) -> Any:
    backend: Any = r.backend("lancedb")
    chunks = backend.store.tables(backend.store.pointer().generation).chunks
    return {i.name: i for i in chunks.list_indices()}.get("vector_idx")


def top(r: Router, query: str, candidates: int = 10) -> tuple[str, float]:
    request = SearchRequest(query=query, max_results=5, min_score=0.0, candidates=candidates)
    hit = r.backend("lancedb").search(request).hits[0]
    return hit.path, round(hit.score, 5)


def test_ann_index_is_built_once_and_kept_by_the_next_optimize(tmp_path: Path) -> None:
    workspace(tmp_path)
    with router(tmp_path) as r:
        r.sync()
        assert vector_index(r) is None  # a sync below the write threshold builds nothing
        first = r.backend("lancedb").optimize()  # type: ignore[attr-defined]
        built = vector_index(r)
        again = r.backend("lancedb").optimize()  # type: ignore[attr-defined]
        kept = vector_index(r)
        status = r.status(deep=True).backends[0].details
    assert first["ann_built"] is True
    assert built is not None
    assert built.num_indexed_rows >= 300
    assert built.index_details["target_partition_size"] == 100  # ann_partition_rows
    assert built.index_details["hnsw"]["construction_ef"] == 150  # ef_construction
    assert again["ann_built"] is False
    # Partitions sized by ann_partition_rows: the next optimize neither joins nor rebuilds.
    assert kept.index_uuid == built.index_uuid
    assert status["indexes"]["vector_idx"]["unindexed_rows"] == 0
    assert "ivf_hnsw_sq, nprobes 20, ef 600 + refine_factor 10" in status["search_path"]


def test_ann_scores_are_exact_and_new_rows_are_found_before_the_fold(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    query = " ".join(WORDS[5:13])
    with router(tmp_path, ef=10) as ann, router(tmp_path, vector_search="memory") as exact:
        ann.sync()
        ann.backend("lancedb").optimize()  # type: ignore[attr-defined]
        assert vector_index(ann) is not None
        # ef 10 < candidates 40 × refine_factor 10: widened, not refused by LanceDB.
        assert top(ann, query, candidates=40) == top(exact, query, candidates=40)
        (ws / "memory" / "new.md").write_text("kiln celadon glaze firing\n", encoding="utf-8")
        ann.sync()
        stats = ann.status(deep=True).backends[0].details["indexes"]["vector_idx"]
        assert stats["unindexed_rows"] == 1
        assert top(ann, "kiln celadon glaze firing") == ("memory/new.md", 1.0)


@pytest.mark.slow
def test_auto_builds_no_ann_index_while_the_vectors_fit_memory(tmp_path: Path) -> None:
    # ~600 chunks of 384 dims: ~1.3 MB in memory, inside 512 MB and outside 1 MB.
    workspace(tmp_path)
    with router(tmp_path, vector_search="auto") as fits:
        fits.sync()
        assert fits.status().backends[0].chunks > 2**20 // (384 * 4 + 600)
        assert fits.backend("lancedb").optimize()["ann_built"] is False  # type: ignore[attr-defined]
        assert vector_index(fits) is None
        assert "in memory" in fits.status(deep=True).backends[0].details["search_path"]
    with router(tmp_path, vector_search="auto", memory_budget_mb=1) as beyond:
        assert beyond.backend("lancedb").optimize()["ann_built"] is True  # type: ignore[attr-defined]
        assert vector_index(beyond) is not None
