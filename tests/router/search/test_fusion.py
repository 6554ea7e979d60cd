"""Fusion functions on hand-made score lists: arithmetic, ties, one side empty, all equal."""

from __future__ import annotations

import math

import pytest

from memory_router._search.fusion import MATCH_LEVEL, minor_share
from memory_router._search.keywords import score_to_bm25
from memory_router._search.snippets import rarity_weights
from memory_router.kit import (
    FUSION_METHODS,
    VectorScale,
    bm25_to_score,
    convex_fusion,
    fuse,
    keyword_coverage,
    minmax_fusion,
    rrf_fusion,
    vector_scale,
    weighted_fusion,
    zscore_fusion,
)

VECTOR = {"a": 0.9, "b": 0.6, "c": 0.3}
TEXT = {"b": 0.8, "d": 0.4}


def bm25(relevance: float) -> float:
    """A keyword candidate's score as backends give it (FTS5 ranks are negative)."""
    return bm25_to_score(-relevance)


def scores(fused: list) -> dict[str, float]:  # type: ignore[type-arg]
    return {f.id: round(f.score, 6) for f in fused}


def test_weighted_is_openclaws_raw_arithmetic() -> None:
    fused = weighted_fusion(VECTOR, TEXT, vector_weight=0.7, text_weight=0.3)
    assert scores(fused) == {"a": 0.63, "b": 0.66, "c": 0.21, "d": 0.12}
    assert [f.id for f in fused] == ["b", "a", "c", "d"]
    b = fused[0]
    assert (b.vector, b.text) == (0.6, 0.8)
    assert b.vector_part + b.text_part == pytest.approx(b.score)


def test_minmax_normalises_each_side_over_its_candidates() -> None:
    fused = minmax_fusion(VECTOR, TEXT, vector_weight=0.5, text_weight=0.5)
    # vector: a 1, b 0.5, c 0; text: b 1, d 0.
    assert scores(fused) == {"a": 0.5, "b": 0.75, "c": 0.0, "d": 0.0}
    assert [f.id for f in fused] == ["b", "a", "c", "d"]  # ties broken by id


def test_convex_scales_text_by_its_best_and_calibrates_cosine() -> None:
    scale = VectorScale(floor=0.3, ceiling=0.9)
    fused = convex_fusion(VECTOR, TEXT, vector_weight=0.6, text_weight=0.4, scale=scale)
    # vector: a 1, b 0.5, c 0 (at the floor; d, left out of the vector leg, gets its
    # lowest: 0); text: BM25 4 and 2/3 behind the squashed 0.8 and 0.4, so b 1, d 1/6.
    assert scores(fused) == {"a": 0.6, "b": 0.7, "c": 0.0, "d": round(0.4 / 6, 6)}
    assert scale(0.1) == 0.0
    assert scale(0.95) == 1.0


def test_rrf_scores_ranks_and_top_on_both_sides_is_one() -> None:
    fused = rrf_fusion({"x": 0.9, "y": 0.1}, {"x": 5.0, "z": 1.0}, k=60)
    by_id = scores(fused)
    assert by_id["x"] == 1.0
    assert by_id["y"] == pytest.approx(0.5 * 61 / 62, abs=1e-6)
    assert by_id["z"] == pytest.approx(0.5 * 61 / 62, abs=1e-6)
    assert [f.id for f in fused] == ["x", "y", "z"]


def test_rrf_ties_share_the_best_rank() -> None:
    fused = rrf_fusion({"a": 0.5, "b": 0.5, "c": 0.1}, {}, k=60)
    by_id = scores(fused)
    assert by_id["a"] == by_id["b"] == 0.5
    assert by_id["c"] == pytest.approx(0.5 * 61 / 63, abs=1e-6)


def test_zscore_is_squashed_into_the_unit_interval_and_parts_add_up() -> None:
    fused = zscore_fusion(VECTOR, TEXT)
    assert [f.id for f in fused][:2] == ["b", "a"]
    for f in fused:
        assert 0.0 < f.score < 1.0
        assert f.vector_part + f.text_part == pytest.approx(f.score)


@pytest.mark.parametrize("method", FUSION_METHODS)
def test_one_side_empty_keeps_the_other_sides_order(method: str) -> None:
    only_vector = fuse(method, VECTOR, {})  # type: ignore[arg-type]
    only_text = fuse(method, {}, TEXT)  # type: ignore[arg-type]
    assert [f.id for f in only_vector] == ["a", "b", "c"]
    assert [f.id for f in only_text] == ["b", "d"]
    assert all(f.text is None for f in only_vector)
    assert all(0.0 <= f.score <= 1.0 for f in only_vector + only_text)


@pytest.mark.parametrize("method", FUSION_METHODS)
def test_all_equal_scores_tie_and_order_by_id(method: str) -> None:
    fused = fuse(method, {"c": 0.5, "a": 0.5, "b": 0.5}, {"c": 2.0, "a": 2.0, "b": 2.0})  # type: ignore[arg-type]
    assert [f.id for f in fused] == ["a", "b", "c"]
    assert len({round(f.score, 9) for f in fused}) == 1


@pytest.mark.parametrize("method", FUSION_METHODS)
def test_both_sides_empty_gives_nothing(method: str) -> None:
    assert fuse(method, {}, {}) == []  # type: ignore[arg-type]


def test_unknown_method_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown fusion method"):
        fuse("borda", VECTOR, TEXT)  # type: ignore[arg-type]


def test_vector_scale_knows_minilm_and_leaves_other_models_raw() -> None:
    assert vector_scale("all-MiniLM-L6-v2").floor > 0
    assert vector_scale("Xenova/all-MiniLM-L6-v2") == vector_scale("all-MiniLM-L6-v2")
    assert vector_scale("some-other-model") == VectorScale()
    assert vector_scale(None)(0.42) == 0.42


def test_coverage_scales_the_keyword_side_of_convex() -> None:
    assert keyword_coverage("how do colleagues share progress", "shared fixtures") == 1 / 3
    assert keyword_coverage("the of and", "anything") == 1.0  # no keywords: no penalty
    fused = convex_fusion({}, {"x": bm25(4.0), "y": bm25(2.0)}, coverage={"x": 0.5, "y": 1.0})
    # x holds half the keywords and no vector vouches for it: its share counts twice.
    assert scores(fused) == {"x": 0.075, "y": 0.15}


MINILM = {"vector_weight": 0.4, "text_weight": 0.6, "scale": vector_scale("all-MiniLM-L6-v2")}


def test_a_minor_share_of_the_keywords_counts_again_unless_close_in_meaning() -> None:
    # "when is the car serviced": the car note holds "car" (1/2) and is close in meaning;
    # the refunds note holds "order" of "what coffee do I order" and is not.
    assert minor_share(0.5, 0.0) == 0.25
    assert minor_share(0.5, MATCH_LEVEL) == 0.5
    assert minor_share(1 / 3, 0.0) == pytest.approx(1 / 9)
    assert minor_share(2 / 3, 0.0) == 2 / 3  # most of the keywords: as before
    fused = convex_fusion(
        {"car": 0.40, "refunds": 0.10},
        {"car": bm25(5.0), "refunds": bm25(5.0), "full": bm25(5.0)},
        coverage={"car": 0.5, "refunds": 0.5, "full": 1.0},
        **MINILM,
    )
    got = scores(fused)
    assert got["full"] == 0.6
    assert got["refunds"] == 0.15  # 0.6 × 0.5 × 0.5: under min_score 0.2 (it was 0.3)
    assert got["car"] > 0.2 + 0.3  # its meaning vouches for the missing keyword


def test_support_lowers_a_query_the_memory_holds_one_word_of() -> None:
    # "what coffee do I order": the best keyword candidate holds "order", one keyword of
    # two, and nothing is close in meaning (MiniLM cosines under its match level).
    vector = {"refunds": 0.10, "kestrel": 0.20}
    text = {"refunds": bm25(6.0), "kestrel": bm25(3.0)}
    half = {"refunds": 0.5, "kestrel": 0.5}
    fused = convex_fusion(vector, text, **MINILM, coverage=half)
    assert {f.support for f in fused} == {0.5}
    assert [f.id for f in fused] == ["refunds", "kestrel"]  # one factor: the order stays
    assert scores(fused)["refunds"] == 0.075  # 0.5 × 0.6 × 1 × 0.5 × 0.5
    top = fused[0]
    assert top.vector_part + top.text_part == pytest.approx(top.score)
    # A candidate that holds the whole question, or one close in meaning: no change.
    whole = convex_fusion(vector, text, **MINILM, coverage={"refunds": 1.0, "kestrel": 0.5})
    assert {f.support for f in whole} == {1.0}
    close = convex_fusion({"refunds": 0.10, "kestrel": 0.40}, text, **MINILM, coverage=half)
    assert {f.support for f in close} == {1.0}
    # Without a keyword side there is nothing to measure the question by.
    assert {f.support for f in convex_fusion(vector, {}, **MINILM, coverage={})} == {1.0}


def test_convex_divides_bm25_itself_by_the_best_not_its_squashed_score() -> None:
    # Squashed, BM25 8 and 2 are 0.889 and 0.667: a quotient of 0.75 would let a chunk
    # with a quarter of the best keyword match pass for three quarters of it.
    fused = convex_fusion(
        {}, {"best": bm25(8.0), "weak": bm25(2.0)}, vector_weight=0.0, text_weight=1.0
    )
    assert scores(fused) == {"best": 1.0, "weak": 0.25}
    assert score_to_bm25(bm25(8.0)) == pytest.approx(8.0)


def test_a_keyword_on_every_candidate_counts_little_in_the_share() -> None:
    # "When did Melanie's friend adopt a child?" in a conversation with Melanie on every
    # line: holding "melanie" and "adopt" is more of the question than "melanie",
    # "friend" and "child", which half the candidates hold.
    question = "When did Melanie's friend adopt a child?"
    texts = ["Melanie: my sister adopted a puppy"] + [
        "Melanie: a friend of my child" if i % 2 else "Melanie: the weather" for i in range(19)
    ]
    weights = rarity_weights(question, texts)
    assert weights["melanie"] == pytest.approx(math.log(1 + 20 / 20.5))
    assert weights["adopt"] > weights["friend"] > weights["melanie"]
    adopt = keyword_coverage(question, texts[0], weights)
    friend_child = keyword_coverage(question, texts[2], weights)
    assert keyword_coverage(question, texts[0]) < keyword_coverage(question, texts[2])
    assert adopt > friend_child  # weighted by rarity, the rare keyword decides


@pytest.mark.parametrize("method", FUSION_METHODS)
def test_a_limit_makes_only_the_best(method: str) -> None:
    whole = fuse(method, VECTOR, TEXT, coverage={"b": 0.5, "d": 1.0})  # type: ignore[arg-type]
    for limit in (0, 1, 3, 10):
        kept = fuse(method, VECTOR, TEXT, coverage={"b": 0.5, "d": 1.0}, limit=limit)  # type: ignore[arg-type]
        assert kept == whole[:limit]


def test_fuse_nearest_reads_only_kept_vector_chunks_and_drops_gone_ones() -> None:
    from memory_router._config.config import HybridConfig
    from memory_router.kit import ScoredChunk, fuse_chunks, fuse_nearest

    def chunk(key: str, score: float) -> ScoredChunk:
        return ScoredChunk(key, f"{key}.md", "memory", 1, 2, f"text of {key} green tea", score)

    hybrid = HybridConfig()
    vector = {k: chunk(k, s) for k, s in {"a": 0.9, "b": 0.6, "c": 0.3, "e": 0.2}.items()}
    keyword = {k: chunk(k, s) for k, s in {"b": 0.8, "d": 0.4}.items()}
    asked: list[list[str]] = []

    def read(ids: list[str]) -> dict[str, ScoredChunk]:
        asked.append(ids)
        return {i: vector[i] for i in ids if i != "a"}  # "a" is gone

    args = {"query": "green tea", "model": None, "backend": "x", "limit": 3}
    scores = {k: r.score for k, r in vector.items()}
    found = fuse_nearest(hybrid, scores, keyword, read=read, **args)  # type: ignore[arg-type]
    without_a = {k: r for k, r in vector.items() if k != "a"}
    assert found == fuse_chunks(hybrid, without_a, keyword, **args)  # type: ignore[arg-type]
    assert all("b" not in ids and "d" not in ids for ids in asked)  # the keyword leg's rows
    assert len(found) == 3
    assert "a" in asked[0]  # kept, then found gone: fused again without it
