"""A hybrid search reads the rows of only the vector candidates it keeps: same answer."""

from __future__ import annotations

import random
import sqlite3
from collections.abc import Iterator

import pytest

from memory_router import Router, testing
from memory_router.kit import SearchRequest, fuse_chunks
from memory_router_sqlite import _search
from memory_router_sqlite._search import vector_details
from memory_router_sqlite._vectors import Nearest

WORDS = [f"w{n}" for n in range(300)]


@pytest.fixture(scope="module")
def router(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Router]:
    base = tmp_path_factory.mktemp("legs")
    rng = random.Random(9)
    files = {}
    for number in range(60):  # ten one-line paragraphs a file, a chunk each
        paragraphs = (" ".join(rng.choices(WORDS, k=12)) for _ in range(10))
        files[f"memory/note-{number:04d}.md"] = "\n\n".join(paragraphs) + "\n"
    workspace = testing.write_workspace(base / "ws", files)
    config = testing.router_config(
        base, workspace, backend="sqlite", embedding="hash",
        settings={"vector_search": "memory"},
        chunking={"tokens": 20, "overlap": 0}, sync={"on_search": False},
    )  # fmt: skip
    with Router.from_config(config, plugins=[testing]) as built:
        assert built.sync()[0].chunks >= 600
        yield built


@pytest.mark.parametrize("query", ["w1 w2", "w17 w250 w33", "w99", "w5 nothing", "nothing"])
def test_hybrid_answers_as_with_every_vector_row_read(router: Router, query: str) -> None:
    backend = router.backend("sqlite")
    request = SearchRequest(query=query, max_results=10, min_score=0.0, candidates=40)
    found = backend.search(request)
    store, hybrid = backend.store, router.config.query.hybrid  # type: ignore[attr-defined]
    with store.reader() as conn:
        scope = backend._scope(conn, request, None, None)  # type: ignore[attr-defined]
        keyword = _search.keyword_or(conn, scope, query)
        vector_ = backend.context.embedder.embed_query(query)  # type: ignore[union-attr]
        nearest = store.matrix(conn, backend.model).top(vector_, 40)  # type: ignore[attr-defined]
        vector = vector_details(conn, nearest, {})  # every row read
    expected = fuse_chunks(
        hybrid, vector, keyword, query=query, model="hash-384", backend="sqlite", limit=40,
        explain=False,
    )  # fmt: skip
    assert found.mode == "hybrid"
    assert list(found.hits) == expected
    assert len(vector) == 40  # the vector leg took part


def test_a_moved_row_is_read_by_its_id(router: Router) -> None:
    """The vector scan knows each chunk's rowid as loaded; a row another process moved
    since (or whose rowid another chunk took) is found by its id, never mistaken."""
    path = router.backend("sqlite").path  # type: ignore[attr-defined]
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
        (a_rowid, a_id, a_text), (b_rowid, b_id, _) = conn.execute(
            "SELECT rowid, id, text FROM chunks ORDER BY rowid LIMIT 2"
        ).fetchall()
        right = vector_details(conn, [Nearest(a_id, a_rowid, 0.5)], {})
        swapped = vector_details(
            conn, [Nearest(a_id, b_rowid, 0.5), Nearest(b_id, a_rowid, 0.25)], {}
        )
        gone = vector_details(conn, [Nearest("no such chunk", a_rowid, 0.5)], {})
    assert [(r.id, r.text, r.score) for r in right.values()] == [(a_id, a_text, 0.5)]
    assert list(swapped) == [a_id, b_id]
    assert (swapped[a_id].text, swapped[a_id].score) == (a_text, 0.5)
    assert swapped[b_id].score == 0.25
    assert gone == {}
