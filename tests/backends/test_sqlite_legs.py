"""A large hybrid index runs its vector scan beside its keyword leg: same answer as in turn."""

from __future__ import annotations

import random
import sqlite3
from collections.abc import Iterator

import pytest

from memory_router import Router, testing
from memory_router.kit import SearchRequest
from memory_router_sqlite._parallel import searching
from memory_router_sqlite._search import vector_details
from memory_router_sqlite._vectors import Nearest

CHUNKS = 21_000  # over HALVES_ROWS (20k): a lone search runs its legs side by side
WORDS = [f"w{n}" for n in range(3_000)]


@pytest.fixture(scope="module")
def router(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Router]:
    base = tmp_path_factory.mktemp("legs")
    rng = random.Random(9)
    files = {}
    for number in range(CHUNKS // 10):  # ten one-line paragraphs a file, a chunk each
        paragraphs = (" ".join(rng.choices(WORDS, k=12)) for _ in range(10))
        files[f"memory/note-{number:04d}.md"] = "\n\n".join(paragraphs) + "\n"
    workspace = testing.write_workspace(base / "ws", files)
    config = testing.router_config(
        base, workspace, backend="sqlite", embedding="hash",
        chunking={"tokens": 20, "overlap": 0}, sync={"on_search": False},
    )  # fmt: skip
    with Router.from_config(config, plugins=[testing]) as built:
        assert built.sync()[0].chunks >= 20_000
        store = built.backend("sqlite").store  # type: ignore[attr-defined]
        with store.reader() as conn:
            assert store.fts_middle(conn) is not None  # a lone search splits
        yield built


@pytest.mark.parametrize("query", ["w1 w2", "w17 w2500 w33", "w999"])
def test_legs_side_by_side_answer_as_in_turn(router: Router, query: str) -> None:
    backend = router.backend("sqlite")
    request = SearchRequest(query=query, max_results=10, min_score=0.0, candidates=40)
    backend.search(request)  # a backend's first search never asks for postings
    for _ in range(2):  # FTS5 ranks the keywords, then their postings do
        side_by_side = backend.search(request)
        with searching():  # another search in flight: the legs run in turn
            in_turn = backend.search(request)
        assert side_by_side.mode == in_turn.mode == "hybrid"
        assert side_by_side.hits == in_turn.hits
        assert len(side_by_side.hits) == 40
        assert any(h.vector_score is not None for h in in_turn.hits)  # both legs answered


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
