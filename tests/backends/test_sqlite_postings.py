"""BM25 from in-memory postings ranks exactly as FTS5's ``bm25()`` on a real index.

The index is built by the backend from Markdown; every query is asked both ways on the
same connection: FTS5's ``ORDER BY bm25(chunks_fts), rowid LIMIT k`` and
:meth:`Postings.ranked`. Short chunks drawn from a small vocabulary make many rows tie
(same length, same term counts), so the rowid order of ties is checked too.
"""

from __future__ import annotations

import random
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memory_router import Router, testing
from memory_router.kit import SearchRequest, build_or_query
from memory_router_sqlite._impact import Postings

WORDS = [f"w{n}" for n in range(400)]


def notes(seed: int, files: int = 300) -> dict[str, str]:
    rng = random.Random(seed)
    out = {}
    for number in range(files):  # ten short paragraphs a file, a chunk each
        paragraphs = []
        for _ in range(10):
            # Zipf-like: low word numbers are common; some chunks repeat a word.
            words = [WORDS[min(int(rng.paretovariate(0.7)) - 1, 399)] for _ in range(12)]
            paragraphs.append(" ".join(words))
        out[f"memory/note-{number:03d}.md"] = "\n\n".join(paragraphs) + "\n"
    return out


@pytest.fixture(scope="module")
def router(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Router]:
    base = tmp_path_factory.mktemp("postings")
    workspace = testing.write_workspace(base / "ws", notes(3))
    config = testing.router_config(
        base, workspace, backend="sqlite", embedding="none",
        chunking={"tokens": 20, "overlap": 0}, sync={"on_search": False},
    )  # fmt: skip
    with Router.from_config(config, plugins=[testing]) as built:
        assert built.sync()[0].chunks >= 1000
        yield built


def by_fts5(conn: Any, phrases: list[str], where: str, params: list[object], k: int) -> list:
    rows = conn.execute(
        f"SELECT rowid, bm25(chunks_fts) AS r FROM chunks_fts WHERE chunks_fts MATCH ? AND {where}"
        " ORDER BY r, rowid LIMIT ?",
        [" OR ".join(phrases), *params, k],
    ).fetchall()
    return [(int(r[0]), float(r[1])) for r in rows]


def phrases_of(terms: list[str]) -> list[str]:
    return [p for t in terms if (p := build_or_query([t]))]


def queries(seed: int, count: int) -> Iterator[list[str]]:
    rng = random.Random(seed)
    for _ in range(count):
        terms = [rng.choice(WORDS[: rng.choice([5, 40, 400])]) for _ in range(rng.randint(1, 5))]
        yield terms + rng.choice([[], ["absent"], [terms[0]], ["w1-w2"], ["W3"]])


@pytest.mark.parametrize("k", [1, 10, 80, 5000])
def test_the_same_rows_and_ranks_as_fts5(router: Router, k: int) -> None:
    store = router.backend("sqlite").store  # type: ignore[attr-defined]
    postings = Postings()
    with store.reader() as conn:
        for _ in range(2):  # the second round answers from postings kept by the first
            for terms in queries(k, 60):
                phrases = phrases_of(terms)
                want = by_fts5(conn, phrases, "1", [], k)
                assert postings.ranked(conn, phrases, "1", [], k) == want, terms
        ties = by_fts5(conn, phrases_of(["w0"]), "1", [], 5000)
    ranks = [rank for _, rank in ties]
    assert len(ranks) - len(set(ranks)) > 100  # many ties: their rowid order was checked


def test_filters_apply_as_in_sql(router: Router) -> None:
    store = router.backend("sqlite").store  # type: ignore[attr-defined]
    postings = Postings()
    filters: list[tuple[str, list[object]]] = [
        ("path < ?", ["memory/note-100.md"]),  # a third of the rows
        ("model = ? AND source IN (?)", ["fts-only", "memory"]),
        ("model = ?", ["another"]),  # none
    ]
    with store.reader() as conn:
        for where, params in filters:
            for terms in (["w1"], ["w1", "w2", "w7"], ["w3", "w3"]):
                phrases = phrases_of(terms)
                want = by_fts5(conn, phrases, where, params, 30)
                assert postings.ranked(conn, phrases, where, params, 30) == want
        some = by_fts5(conn, phrases_of(["w1"]), *filters[0], 5000)
        every = by_fts5(conn, phrases_of(["w1"]), "1", [], 5000)
    assert 0 < len(some) < len(every)  # the filter kept some rows, not all


def test_a_write_is_followed(tmp_path: Path) -> None:
    """Postings fetched before a sync (here by another router: another process's write
    looks the same) are not used after it."""
    workspace = testing.write_workspace(tmp_path / "ws", notes(5, files=40))
    config = testing.router_config(
        tmp_path, workspace, backend="sqlite", embedding="none",
        chunking={"tokens": 20, "overlap": 0}, sync={"on_search": False},
    )  # fmt: skip
    phrases = phrases_of(["w1", "w2", "fresh"])
    with Router.from_config(config, plugins=[testing]) as router:
        router.sync()
        store = router.backend("sqlite").store  # type: ignore[attr-defined]
        postings = Postings()
        with store.reader() as conn:
            before = postings.ranked(conn, phrases, "1", [], 20)
            assert before == by_fts5(conn, phrases, "1", [], 20)
        (workspace / "memory" / "new.md").write_text("fresh w1 w1 w2\n\nfresh fresh\n")
        (workspace / "memory" / "note-000.md").unlink()
        with Router.from_config(config, plugins=[testing]) as other:
            assert other.sync()[0].added
        with store.reader() as conn:
            after = postings.ranked(conn, phrases, "1", [], 20)
            assert after == by_fts5(conn, phrases, "1", [], 20)
    assert after != before


def test_the_backend_ranks_from_postings_from_its_second_search(tmp_path: Path) -> None:
    """Below the halves threshold the backend keeps FTS5's own ranking; the Postings path
    of a large index is checked against SQL by tests/backends/test_sqlite_halves.py."""
    workspace = testing.write_workspace(tmp_path / "ws", notes(7, files=30))
    config = testing.router_config(
        tmp_path, workspace, backend="sqlite", embedding="none", sync={"on_search": False}
    )
    with Router.from_config(config, plugins=[testing]) as router:
        router.sync()
        backend = router.backend("sqlite")
        request = SearchRequest(query="w1 w2", max_results=5, min_score=0.0, candidates=20)
        first = backend.search(request)
        second = backend.search(request)
        assert [h.chunk_id for h in first.hits] == [h.chunk_id for h in second.hits]
        assert len(backend.store.postings) == 0  # type: ignore[attr-defined]


def test_without_wait_kept_postings_answer_and_missing_ones_are_fetched(router: Router) -> None:
    store = router.backend("sqlite").store  # type: ignore[attr-defined]
    postings = Postings(store.reader)
    phrases = phrases_of(["w2", "w9", "w150"])
    with store.reader() as conn:
        assert postings.ranked(conn, phrases, "1", [], 25, wait=False) is None
        time.sleep(0.2)
        assert len(postings) == 0  # asked for, not fetched until the answer is out
        postings.fetch_asked()
        deadline = time.monotonic() + 30
        while len(postings) < len(phrases) and time.monotonic() < deadline:
            time.sleep(0.01)  # fetched on the background thread
        assert len(postings) == len(phrases)
        want = by_fts5(conn, phrases, "1", [], 25)
        assert postings.ranked(conn, phrases, "1", [], 25, wait=False) == want
