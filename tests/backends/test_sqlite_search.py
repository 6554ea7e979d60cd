"""SQLite backend search: hybrid arithmetic, keyword modes, trigram CJK, vec vs numpy."""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memory_router import EmbeddingError, Router, hookimpl, testing
from memory_router._search.snippets import rarity_weights
from memory_router.kit import (
    BackendResult,
    ProviderContext,
    ProviderSpec,
    SearchRequest,
    keyword_coverage,
)
from memory_router.testing import HashingEmbedder, publish_chunks

CORPUS = {
    "memory/2026-03-01.md": "# Db\n\nThe staging database runs PostgreSQL 16 on host db-stage-3.\n",
    "memory/2026-03-02.md": "# Cats\n\nThe cat sleeps on the warm database server each noon.\n",
    "memory/2026-03-03.md": "# Trip\n\nPacked hiking boots for the Dolomites trip in July.\n",
    "MEMORY.md": "# Prefs\n\nLikes strong coffee and quiet mornings.\n",
}


def request(query: str, candidates: int = 10, *, explain: bool = False) -> SearchRequest:
    return SearchRequest(
        query=query, max_results=6, min_score=0.0, candidates=candidates, explain=explain
    )


class QueryFailsEmbedder(HashingEmbedder):
    id = "qfail"

    def embed_query(self, text: str) -> list[float]:
        raise EmbeddingError("query embedding service down", provider=self.id)


class QueryFailsPlugin:
    @staticmethod
    @hookimpl
    def register_embedding_providers(register: Callable[[ProviderSpec], None]) -> None:
        def factory(context: ProviderContext, model: str) -> QueryFailsEmbedder:
            return QueryFailsEmbedder()

        register(ProviderSpec(name="qfail", factory=factory))


@pytest.fixture
def build(tmp_path: Path) -> Any:
    routers: list[Router] = []

    def make(files: dict[str, str] = CORPUS, sub: str = "a", **kwargs: Any) -> Router:
        base = tmp_path / sub
        workspace = testing.write_workspace(base / "ws", files)
        config = testing.router_config(base, workspace, backend="sqlite", **kwargs)
        router = Router.from_config(config, plugins=[testing, QueryFailsPlugin])
        routers.append(router)
        router.sync()
        return router

    yield make
    for router in routers:
        router.close()


def raw(
    router: Router, query: str, candidates: int = 10, *, explain: bool = False
) -> BackendResult:
    return router.backend("sqlite").search(request(query, candidates, explain=explain))


def cosine(a: str, b: str) -> float:
    e = HashingEmbedder()
    return float(np.dot(e.vector(a), e.vector(b)))


def test_hybrid_merge_arithmetic(build: Any) -> None:
    # OpenClaw's reference arithmetic, with its AND keyword side.
    hybrid = {
        "vector_weight": 0.6,
        "text_weight": 0.2,
        "keyword_query": "and",
        "fusion": "weighted",
    }
    router = build(embedding="hash", query={"hybrid": hybrid})
    result = raw(router, "staging database")
    assert (result.mode, result.relaxed_min_score) == ("hybrid", 0.25)
    by_path = {h.path: h for h in result.hits}
    top = by_path["memory/2026-03-01.md"]
    assert top is result.hits[0]
    assert top.vector_score == pytest.approx(cosine("staging database", CORPUS[top.path]), abs=1e-5)
    assert top.text_score is not None
    assert top.score == pytest.approx(0.75 * top.vector_score + 0.25 * top.text_score)
    cat = by_path["memory/2026-03-02.md"]  # has "database" but not "staging": vector side only
    assert cat.text_score is None
    assert cat.vector_score is not None
    assert cat.score == pytest.approx(0.75 * cat.vector_score)
    assert [h.score for h in result.hits] == sorted((h.score for h in result.hits), reverse=True)


def test_keyword_only_or_mode_matches_any_keyword(build: Any) -> None:
    router = build()
    result = raw(router, "Where does the cat sleep, on the database?")
    # No relaxation: a keyword-only score means what a hybrid one does (issue 22).
    assert (result.mode, result.relaxed_min_score) == ("keyword", None)
    assert {h.path for h in result.hits} == {"memory/2026-03-01.md", "memory/2026-03-02.md"}
    both, one = result.hits  # "cat", "sleep" and "database"; "database" alone
    assert both.path == "memory/2026-03-02.md"
    assert all(h.vector_score is None and h.text_score is not None for h in result.hits)
    # BM25's order, each score divided by the best, times the query's support: 1 here, as
    # a chunk holds every keyword.
    assert both.score == pytest.approx(1.0)
    assert one.text_score is not None
    assert both.text_score is not None
    assert one.score == pytest.approx(one.text_score / both.text_score)


def test_keyword_only_one_word_of_two_is_no_confident_hit(build: Any) -> None:
    # No chunk holds more than one of "cat" and "piano": the support is 1/2 counted as a
    # minor share with nothing to vouch for it (1/4), times 1/2 again.
    hits = raw(router := build(), "Where is the cat piano?").hits
    assert [h.path for h in hits] == ["memory/2026-03-02.md"]
    assert hits[0].score == pytest.approx(0.5 * 0.5 * 0.5)
    assert router.search("Where is the cat piano?").results == ()  # under min_score 0.2


@pytest.mark.parametrize("query", ["AND", "what is it", "OR NOT", "the and or"])
def test_function_words_and_bare_operators_match_nothing(build: Any, query: str) -> None:
    router = build()
    assert raw(router, query).hits == ()
    assert router.search(query).below_min_score is None


def test_two_capitals_are_a_keyword(build: Any) -> None:
    router = build({"MEMORY.md": "# Health\n\n- GP: Dr. Hale at Elm Street surgery.\n"})
    assert [h.path for h in raw(router, "who is our GP").hits] == ["MEMORY.md"]


def test_keyword_only_reference_mode(build: Any) -> None:
    router = build(query={"keyword_mode": "reference"})
    # The whole query ANDed matches one chunk, boosted above its raw BM25 score.
    full = raw(router, "hiking boots")
    assert [h.path for h in full.hits] == ["memory/2026-03-03.md"]
    assert full.hits[0].score > 0.45 + 0.18 * 0  # coverage boost applied
    # No chunk has every word: one query per keyword, best score per chunk.
    fallback = raw(router, "Which boots and coffee?")
    assert {h.path for h in fallback.hits} == {"memory/2026-03-03.md", "MEMORY.md"}
    assert all(0 < h.score < 1 for h in fallback.hits)


def test_query_embedding_failure_answers_by_keyword_with_a_note(build: Any) -> None:
    router = build(embedding="qfail")
    response = router.search("hiking boots")
    assert response.results[0].path == "memory/2026-03-03.md"
    assert response.mode == "keyword"
    assert any("query embedding service down" in note for note in response.notes)


def test_vector_only_when_hybrid_is_disabled(build: Any) -> None:
    router = build(embedding="hash", query={"hybrid": {"enabled": False}})
    result = raw(router, "coffee mornings")
    assert result.mode == "vector"
    assert result.hits[0].path == "MEMORY.md"
    assert all(h.text_score is None for h in result.hits)


def test_numpy_fallback_equals_sqlite_vec(build: Any) -> None:
    with_vec = build(
        embedding="hash", sub="vec", backends={"sqlite": {"vector_search": "sqlite-vec"}}
    )
    without = build(embedding="hash", sub="novec", backends={"sqlite": {"vector": False}})
    assert with_vec.status(deep=True).backends[0].details["vector"] == "sqlite-vec"
    assert without.status(deep=True).backends[0].details["vector"] == "numpy"
    for query in ("database", "warm cat", "trip to the mountains", "coffee"):
        a, b = raw(with_vec, query), raw(without, query)
        # Same chunks with the same scores (ties may come in either order).
        scores_a = {h.chunk_id: h.score for h in a.hits}
        assert scores_a == pytest.approx({h.chunk_id: h.score for h in b.hits}, abs=1e-5)
        assert a.hits[0].score == pytest.approx(b.hits[0].score, abs=1e-5)


CJK = {
    "memory/2026-04-01.md": "# 会议\n\n我们决定使用数据库迁移方案。\n",
    "memory/2026-04-02.md": "# 旅行\n\n下个月去东京旅行。\n",
}


@pytest.mark.parametrize("mode", ["or", "reference"])
def test_trigram_tokenizer_finds_cjk_terms_long_and_short(build: Any, mode: str) -> None:
    router = build(
        CJK, backends={"sqlite": {"fts_tokenizer": "trigram"}}, query={"keyword_mode": mode}
    )
    assert [h.path for h in raw(router, "数据库").hits] == ["memory/2026-04-01.md"]
    assert [h.path for h in raw(router, "东京").hits] == ["memory/2026-04-02.md"]  # LIKE path
    assert router.status(deep=True).backends[0].details["fts"] == "fts5 (trigram)"


def test_unicode61_finds_cjk_with_bigrams_in_or_mode(build: Any) -> None:
    router = build(CJK)
    assert raw(router, "东京旅行").hits[0].path == "memory/2026-04-02.md"


def test_candidates_limit_and_sources(build: Any) -> None:
    router = build(embedding="hash")
    assert len(raw(router, "the", candidates=2).hits) == 2
    only_sessions = router.backend("sqlite").search(
        SearchRequest(
            query="database", max_results=6, min_score=0, candidates=5, sources=("sessions",)
        )
    )
    assert only_sessions.hits == ()


def test_export_and_publish_round_trip(build: Any, tmp_path: Path) -> None:
    source = build(embedding="hash", sub="src")
    chunks = list(source.backend("sqlite").export_chunks())
    assert len(chunks) == 4
    assert all(c.embedding is not None and len(c.embedding) == 384 for c in chunks)
    target = build({}, embedding="hash", sub="dst")
    written = publish_chunks(
        target.backend("sqlite"), chunks, fingerprint=source.fingerprint().to_dict()
    )
    assert written == 4
    a, b = raw(source, "staging database"), raw(target, "staging database")
    assert [h.chunk_id for h in a.hits] == [h.chunk_id for h in b.hits]
    assert [h.score for h in a.hits] == pytest.approx([h.score for h in b.hits])
    again = list(target.backend("sqlite").export_chunks())
    assert sorted(c.id for c in again) == sorted(c.id for c in chunks)


def test_chunks_of_another_model_are_never_returned(build: Any) -> None:
    router = build(embedding="hash")
    backend = router.backend("sqlite")
    foreign = [
        dataclasses.replace(c, id=f"other-{c.id}", model="other-model")
        for c in backend.export_chunks()
    ]
    both = [*backend.export_chunks(), *foreign]
    assert publish_chunks(backend, both, fingerprint=router.fingerprint().to_dict()) == 8
    assert len(list(backend.export_chunks())) == 8
    for query in ("staging database", "coffee"):
        hits = raw(router, query).hits
        assert hits
        assert not any((h.chunk_id or "").startswith("other-") for h in hits)


@pytest.mark.slow
def test_searches_run_while_a_sync_writes(build: Any) -> None:
    many = {
        f"memory/n-{i:04d}.md": f"# n{i}\n\nnote {i} about staging servers\n" for i in range(800)
    }
    router = build({**CORPUS, **many}, embedding="hash")
    for i in range(0, 800, 2):
        (router.config.workspace_path / f"memory/n-{i:04d}.md").write_text(f"changed {i}\n")
    errors: list[str] = []

    def sync() -> None:
        errors.extend(e for report in router.sync() for e in report.errors)

    worker = threading.Thread(target=sync)
    worker.start()
    seen = 0
    while worker.is_alive() or seen == 0:
        seen += len(raw(router, "staging database").hits) > 0
    worker.join(timeout=60)
    assert not errors
    assert seen > 0
    assert raw(router, "changed 400").hits[0].path == "memory/n-0400.md"


def test_auto_searches_in_memory_within_the_budget_and_knn_beyond(build: Any) -> None:
    auto = build(embedding="hash", sub="auto")
    knn = build(embedding="hash", sub="tight", backends={"sqlite": {"memory_budget_mb": 0}})
    details = auto.status(deep=True).backends[0].details
    assert details["vector"] == "numpy"
    assert "memory_budget_mb = 512" in details["vector_reason"]
    assert details["vector_dims"] == 384, "chunks_vec is kept in sync on the memory path too"
    assert knn.status(deep=True).backends[0].details["vector"] == "sqlite-vec"
    for query in ("database", "warm cat", "trip to the mountains"):
        a, b = raw(auto, query), raw(knn, query)
        scores_a = {h.chunk_id: h.score for h in a.hits}
        assert scores_a == pytest.approx({h.chunk_id: h.score for h in b.hits}, abs=1e-5)


def test_hybrid_keyword_side_and_versus_or(build: Any) -> None:
    """``and`` scores only chunks holding every query word; ``or`` any chunk with a keyword."""
    query = "which database does the cat like"
    strict = raw(
        build(embedding="hash", sub="and", query={"hybrid": {"keyword_query": "and"}}), query
    )
    loose = raw(build(embedding="hash", sub="or"), query, explain=True)  # the default
    assert all(h.text_score is None for h in strict.hits), "no chunk holds every word"
    keyword_hits = {h.path for h in loose.hits if h.text_score is not None}
    # The porter tokenizer stems: "like" also matches MEMORY.md's "Likes".
    assert keyword_hits == {"memory/2026-03-01.md", "memory/2026-03-02.md", "MEMORY.md"}
    top = loose.hits[0]
    assert top.path == "memory/2026-03-02.md", "the chunk with both keywords ranks first"
    # Default convex fusion: the best keyword score scales to 1, times the share of the
    # query's keywords the chunk holds ("database", "cat"; not "like"), each weighted by
    # its rarity among the three keyword candidates; the hashing embedder's cosine is not
    # calibrated (identity scale). Default weights 0.4 / 0.6. Both are scaled by the
    # query's support: no chunk holds "like" too, so it is the best plain share (2/3)
    # unless some cosine reaches the match level (0.5).
    assert top.text_score == max(h.text_score or 0 for h in loose.hits)
    assert keyword_coverage(query, top.snippet) == pytest.approx(2 / 3)
    rarity = rarity_weights(query, [h.snippet for h in loose.hits if h.text_score is not None])
    share = keyword_coverage(query, top.snippet, rarity)
    assert 0.5 < share < 1.0
    closest = max(h.vector_score or 0 for h in loose.hits)
    support = min(1.0, max(2 / 3, closest / 0.5))
    assert top.explain is not None
    assert top.explain.support == pytest.approx(support)
    expected = support * (0.4 * max(0.0, top.vector_score or 0) + 0.6 * share)
    assert top.score == pytest.approx(expected)


@pytest.mark.parametrize("embedding", ["hash", "none"])
def test_hits_carry_an_explain_only_when_asked(build: Any, embedding: str) -> None:
    """An explanation for each of 80 candidates is work nobody reads unless the search
    explains: hybrid and keyword-only hits carry one only when the request asks, and
    the hits are otherwise the same."""
    router = build(embedding=embedding, sub=embedding)
    query = "which database does the cat like"
    plain, explained = raw(router, query), raw(router, query, explain=True)
    assert plain.hits
    assert all(h.explain is None for h in plain.hits)
    assert all(h.explain is not None for h in explained.hits)
    assert [dataclasses.replace(h, explain=None) for h in explained.hits] == list(plain.hits)
    assert [h.explain.relevance for h in explained.hits if h.explain] == [
        h.score for h in plain.hits
    ]


@pytest.mark.parametrize(
    ("declared", "content"),
    [
        (
            "text, id UNINDEXED, path UNINDEXED, source UNINDEXED, model UNINDEXED,"
            " start_line UNINDEXED, end_line UNINDEXED",
            "chunks_fts_content",
        ),
        (
            "id UNINDEXED, end_line UNINDEXED, text, start_line UNINDEXED, source UNINDEXED,"
            " path UNINDEXED, model UNINDEXED",
            "chunks_fts_content",
        ),
        (
            "text, id UNINDEXED, path UNINDEXED, source UNINDEXED, model UNINDEXED,"
            " start_line UNINDEXED, end_line UNINDEXED, content=''",
            None,
        ),
    ],
    ids=["reference", "columns-reordered", "contentless"],
)
def test_candidate_rows_are_read_by_column_name(declared: str, content: str | None) -> None:
    """Candidates' columns are read from FTS5's content table, mapped by the declared
    column names (a seed index may declare them in another order); a table that keeps no
    content of its own is read through FTS5."""
    import sqlite3

    from memory_router_sqlite._db import fts_rows_sql
    from memory_router_sqlite._search import _by_rowid

    conn = sqlite3.connect(":memory:")
    conn.execute(f"CREATE VIRTUAL TABLE chunks_fts USING fts5({declared})")
    names = ["text", "id", "path", "source", "model", "start_line", "end_line"]
    row = ["the cat sleeps", "c1", "memory/a.md", "memory", "m", 3, 7]
    conn.execute(
        f"INSERT INTO chunks_fts(rowid, {', '.join(names)}) VALUES (42, ?, ?, ?, ?, ?, ?, ?)", row
    )
    sql = fts_rows_sql(conn)
    assert (content or "FROM chunks_fts WHERE") in sql
    if content is None:
        return  # contentless: FTS5 keeps no column to read back (it returns NULLs)
    found = _by_rowid(conn, sql, [(42, -1.5), (43, -1.0)])  # 43: gone since it ranked
    assert list(found) == ["c1"]
    chunk = found["c1"]
    assert (chunk.path, chunk.source, chunk.start_line, chunk.end_line, chunk.text) == (
        "memory/a.md",
        "memory",
        3,
        7,
        "the cat sleeps",
    )
    assert chunk.score == pytest.approx(1.5 / 2.5)


def test_a_rebuild_swapped_in_with_another_column_order_is_read_right(tmp_path: Path) -> None:
    """The candidates' column mapping belongs to the file a connection reads: a search
    still reading the old file when another process swaps in a rebuild whose
    ``chunks_fts`` declares its columns in another order does not leave the old file's
    mapping to the searches on the new one."""
    import os
    import sqlite3
    from contextlib import closing

    files = {"memory/a.md": "# A\n\nThe cat sleeps on the warm server.\n"}
    workspace = testing.write_workspace(tmp_path / "ws", files)
    config = testing.router_config(tmp_path, workspace, backend="sqlite")
    with Router.from_config(config, plugins=[testing]) as router:
        router.sync()
        store = router.backend("sqlite").store  # type: ignore[attr-defined]
        assert [h.path for h in router.search("cat").results] == ["memory/a.md"]
        rebuilt = Path(f"{store.path}.other")  # another process's rebuild
        source, copy = sqlite3.connect(store.path), sqlite3.connect(rebuilt)
        with closing(source), closing(copy):  # closed: no -wal is left behind the rename
            source.backup(copy)
            copy.execute("DROP TABLE chunks_fts")
            copy.execute(
                "CREATE VIRTUAL TABLE chunks_fts USING fts5(path UNINDEXED, start_line"
                " UNINDEXED, end_line UNINDEXED, source UNINDEXED, model UNINDEXED,"
                " id UNINDEXED, text, tokenize='porter unicode61')"
            )
            copy.execute(
                "INSERT INTO chunks_fts (text, id, path, source, model, start_line, end_line)"
                " SELECT text, id, path, source, model, start_line, end_line FROM chunks"
            )
            copy.commit()
        with store.reader() as old:  # a search still on the old file ...
            os.replace(rebuilt, store.path)  # ... while the rebuild is swapped in
            store.follow_swaps()  # another search notices
            assert "c1, c2, c3, c5, c6, c0 FROM" in store.rows_sql(old)  # the old file's
        hits = router.search("cat").results
        assert [(h.path, h.start_line, h.end_line) for h in hits] == [("memory/a.md", 1, 3)]
        assert "The cat sleeps" in hits[0].snippet
