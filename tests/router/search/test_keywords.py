"""Keyword extraction and FTS5 query building (ref §1.8), checked against real FTS5."""

from __future__ import annotations

import math
import sqlite3
from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memory_router._search.keywords import STOP_WORDS, strip_korean_particle
from memory_router.kit import (
    bm25_to_score,
    build_match_query,
    build_or_query,
    extract_keywords,
    query_keywords,
)


@pytest.fixture(scope="module")
def fts() -> Iterator[sqlite3.Connection]:
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE t USING fts5(text)")
    conn.executemany(
        "INSERT INTO t VALUES (?)",
        [("the quick brown fox",), ("lazy dog sleeps",), ("数据库 迁移 方案",)],
    )
    yield conn
    conn.close()


def test_english_stop_words_and_short_tokens_are_dropped() -> None:
    query = "What did Caroline say about the LGBTQ support group yesterday? ok 2023"
    assert extract_keywords(query) == ["caroline", "say", "lgbtq", "support", "group"]


def test_query_keywords_drop_question_filler_and_keep_numbers() -> None:
    query = "What kind of pottery have Melanie and her kids made in 2023? Would she likely say 650?"
    assert extract_keywords(query)[:4] == ["kind", "pottery", "melanie", "her"]  # reference
    assert query_keywords(query) == ["pottery", "melanie", "kids", "made", "2023", "650"]


def test_query_keywords_keep_filler_when_nothing_else_is_left() -> None:
    assert query_keywords("what kind of types?") == ["kind", "types"]
    assert query_keywords("how is her store doing") == ["store", "doing"]


def test_duplicates_keep_first_occurrence_order() -> None:
    assert extract_keywords("Tea, coffee, TEA and coffee!") == ["tea", "coffee"]


def test_chinese_emits_characters_and_bigrams_or_whole_runs_for_trigram() -> None:
    assert extract_keywords("数据库") == ["数", "据", "库", "数据", "据库"]
    assert extract_keywords("数据库", trigram=True) == ["数据库"]
    assert "之前" not in extract_keywords("之前的数据库")  # a stop word bigram


def test_japanese_splits_scripts_and_bigrams_kanji() -> None:
    words = extract_keywords("データベース設計について")
    assert words[:3] == ["データベース", "設計", "について"] or "データベース" in words
    assert "設計" in words
    assert all(len(w) > 1 for w in words)  # no single-kanji tokens
    assert "昨日" not in extract_keywords("昨日話した設計")


def test_korean_particles_are_stripped() -> None:
    assert strip_korean_particle("서버에서") == "서버"
    assert extract_keywords("API를 사용하는 방법")[:2] == ["api를", "api"]
    assert "오늘" not in extract_keywords("오늘 회의")


def test_other_languages_stop_words() -> None:
    assert extract_keywords("¿Dónde está la base de datos?") == ["base", "datos"]
    assert extract_keywords("Onde está o banco de dados") == ["banco", "dados"]
    assert extract_keywords("ما هو الخادم") == ["الخادم"]


def test_match_query_quotes_every_token() -> None:
    assert (
        build_match_query('foo "bar" NEAR(baz* -x')
        == '"foo" AND "bar" AND "NEAR" AND "baz" AND "x"'
    )
    assert build_match_query("  ?!  ") is None
    assert build_match_query("snake_case") == '"snake_case"'


def test_or_query_strips_quotes_and_skips_empty_terms() -> None:
    assert build_or_query(['a"b', "", '"', "c"]) == '"ab" OR "c"'
    assert build_or_query([]) is None


@pytest.mark.parametrize(
    ("rank", "score"),
    [(-3.0, 0.75), (-1.0, 0.5), (0.0, 1.0), (1.0, 0.5), (math.nan, 0.001), (-math.inf, 0.001)],
)
def test_bm25_to_score(rank: float, score: float) -> None:
    assert bm25_to_score(rank) == pytest.approx(score)


def test_match_query_finds_rows(fts: sqlite3.Connection) -> None:
    match = build_match_query("Quick, FOX!")
    assert match is not None
    assert fts.execute("SELECT text FROM t WHERE t MATCH ?", (match,)).fetchall() == [
        ("the quick brown fox",)
    ]


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_any_text_is_safe_inside_match(fts: sqlite3.Connection, text: str) -> None:
    for query in (build_match_query(text), build_or_query(extract_keywords(text))):
        if query is not None:
            fts.execute("SELECT count(*) FROM t WHERE t MATCH ?", (query,)).fetchone()


@settings(max_examples=300, deadline=None)
@given(st.text(), st.booleans())
def test_keywords_are_unique_lower_case_and_never_stop_words(text: str, trigram: bool) -> None:
    words = extract_keywords(text, trigram=trigram)
    assert len(words) == len(set(words))
    for word in words:
        assert word == word.lower()
        assert word not in STOP_WORDS
        assert not word.isdigit()
        assert word.strip() == word
        assert word
