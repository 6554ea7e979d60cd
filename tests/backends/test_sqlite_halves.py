"""A large full-text index is ranked in two rowid halves side by side: same answer as one query."""

from __future__ import annotations

import random
import sqlite3
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest

from memory_router import Router, testing
from memory_router.kit import SearchRequest, build_or_query, query_keywords

CHUNKS = 21_000  # over HALVES_ROWS (20k): searches split
WORDS = [f"w{n}" for n in range(3_000)]


@pytest.fixture(scope="module")
def router(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Router]:
    base = tmp_path_factory.mktemp("halves")
    rng = random.Random(5)
    files = {}
    for number in range(CHUNKS // 10):  # ten one-line paragraphs a file, a chunk each
        paragraphs = (" ".join(rng.choices(WORDS, k=12)) for _ in range(10))
        files[f"memory/note-{number:04d}.md"] = "\n\n".join(paragraphs) + "\n"
    workspace = testing.write_workspace(base / "ws", files)
    config = testing.router_config(
        base, workspace, backend="sqlite", embedding="none",
        chunking={"tokens": 20, "overlap": 0}, sync={"on_search": False},
    )  # fmt: skip
    with Router.from_config(config, plugins=[testing]) as built:
        assert built.sync()[0].chunks >= 20_000
        store = built.backend("sqlite").store  # type: ignore[attr-defined]
        with store.reader() as conn:
            assert store.fts_middle(conn) is not None  # the searches below do split
        yield built


def ranked_by_sql(router: Router, query: str, limit: int) -> list[str]:
    """The chunk ids one plain ``ORDER BY bm25 LIMIT`` query returns."""
    path = router.backend("sqlite").path  # type: ignore[attr-defined]
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
        rows = conn.execute(
            "SELECT id FROM chunks_fts WHERE chunks_fts MATCH ?"
            " ORDER BY bm25(chunks_fts), rowid LIMIT ?",
            [build_or_query(query_keywords(query)), limit],
        ).fetchall()
    return [r[0] for r in rows]


@pytest.mark.parametrize("query", ["w1 w2", "w17 w2500 w33", "w999"])
def test_halves_rank_as_one_query(router: Router, query: str) -> None:
    backend = router.backend("sqlite")
    request = SearchRequest(query=query, max_results=10, min_score=0.0, candidates=40)
    found = [h.chunk_id for h in backend.search(request).hits]
    assert found == ranked_by_sql(router, query, 40)
    assert len(found) == 40


def test_concurrent_searches_agree(router: Router) -> None:
    """Searches that overlap do not split (the other core is busy) and answer the same."""
    backend = router.backend("sqlite")
    request = SearchRequest(query="w5 w6", max_results=10, min_score=0.0, candidates=30)
    alone = [h.chunk_id for h in backend.search(request).hits]
    with ThreadPoolExecutor(4) as pool:
        answers = list(pool.map(lambda _: backend.search(request), range(8)))
    assert all([h.chunk_id for h in a.hits] == alone for a in answers)
