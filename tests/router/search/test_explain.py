"""``search --explain``: factors multiply back to the score; decay reorders, never empties."""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from memory_router import Router, testing
from memory_router.cli import build_cli

DIARY = {
    # Six months of a diary: old days are far past several half-lives.
    "memory/2026-01-05.md": "# Jan 5\n\n- Dentist said the crown on the left molar is fine.\n",
    "memory/2026-02-11.md": "# Feb 11\n\n- Bought trail shoes for the spring half marathon.\n",
    "memory/2026-03-20.md": "# Mar 20\n\n- Ana's birthday dinner at the Lebanese place.\n",
    "memory/2026-06-30.md": "# Jun 30\n\n- The new trail shoes gave me a blister on the heel.\n",
    "MEMORY.md": "# Memory\n\n- Runs the river loop three times a week.\n- Trail shoes: size 44.\n",
}


def build(tmp_path: Path, **query: object) -> Router:
    workspace = testing.write_workspace(tmp_path / "ws", DIARY)
    config = testing.router_config(
        tmp_path, workspace, backend="sqlite", embedding="hash", query=query
    )
    router = Router.from_config(config, plugins=[testing])
    router.sync()
    return router


@pytest.fixture
def decayed(tmp_path: Path) -> Iterator[Router]:
    query = {"temporal_decay": {"enabled": True, "half_life_days": 7}, "mmr": {"enabled": True}}
    with build(tmp_path, **query) as router:
        yield router


def test_factors_multiply_back_to_the_score(decayed: Router) -> None:
    router = decayed
    router.store("Trail shoes should be replaced every 800 km.", importance=0.4)
    response = router.search("trail shoes blister", explain=True, min_score=0.0, max_results=3)
    assert response.results
    for hit in (*response.results, *response.dropped):
        e = hit.explain
        assert e is not None
        assert e.relevance * e.decay * e.importance == pytest.approx(e.score)
        assert hit.score == pytest.approx(e.score)
        assert e.fusion == "convex"
        assert (e.vector_part or 0) + (e.text_part or 0) == pytest.approx(e.relevance)
        assert 0 < e.decay <= 1
    decays = {h.path: h.explain.decay for h in response.results if h.explain}
    assert decays.get("MEMORY.md", 1.0) == 1.0  # evergreen
    entries = [h for h in (*response.results, *response.dropped) if h.entry is not None]
    assert entries
    assert all(h.explain and h.explain.importance < 1 for h in entries)
    assert any(h.explain and h.explain.mmr_penalty > 0 for h in response.results[1:])
    reasons = {h.explain.dropped for h in response.dropped if h.explain}
    assert "beyond max_results = 3" in reasons


def test_a_candidate_under_min_score_is_dropped_with_the_reason(tmp_path: Path) -> None:
    with build(tmp_path) as router:
        response = router.search("trail shoes", explain=True, min_score=0.99)
    # Nothing reaches 0.99: the keyword relaxation keeps the hits that matched a word
    # (an answer is never emptied while good candidates exist); the rest are dropped.
    assert response.results
    assert all(h.text_score is not None for h in response.results)
    # Each hit kept under min_score says so, and why (the backend's relaxation), and so
    # does the answer (for an agent, which sees no explanations).
    assert all(h.explain and h.explain.relaxed for h in response.results)
    assert "under min_score = 0.99, kept" in (response.results[0].explain.relaxed or "")
    below = response.below_min_score
    assert below is not None
    assert below.kept
    assert below.count == len(response.results)
    assert below.best_score < 0.99
    under = [h for h in response.dropped if h.text_score is None]
    assert under
    assert all(
        h.explain and h.explain.dropped and "under min_score = 0.99" in h.explain.dropped
        for h in under
    )


def test_no_explain_no_explanations(tmp_path: Path) -> None:
    with build(tmp_path) as router:
        response = router.search("trail shoes")
    assert response.results
    assert all(h.explain is None for h in response.results)
    assert response.dropped == ()


def test_decay_reorders_but_never_empties_an_answer(tmp_path: Path) -> None:
    questions = ["dentist crown molar", "Ana birthday dinner", "trail shoes marathon"]
    with build(tmp_path / "off") as plain:
        answers = {q: plain.search(q).results for q in questions}
    harsh = {"temporal_decay": {"enabled": True, "half_life_days": 1, "floor": 0.0}}
    with build(tmp_path / "on", **harsh) as decayed:
        for question in questions:
            results = decayed.search(question).results
            assert results, question  # pure exponential decay used to push these to nothing
            assert {h.path for h in results} == {h.path for h in answers[question]}
            assert any(h.score < decayed.config.query.min_score for h in results)


def test_decay_factor_has_a_floor(tmp_path: Path) -> None:
    with build(tmp_path, temporal_decay={"enabled": True, "half_life_days": 30}) as router:
        response = router.search("dentist crown", explain=True, min_score=0.0)
    old = next(h for h in response.results if h.path == "memory/2026-01-05.md")
    assert old.explain is not None
    assert old.explain.decay >= 0.9  # floor 0.9: age alone takes at most a tenth
    assert not math.isclose(old.explain.decay, 1.0)


def test_cli_explain_prints_the_factors_and_the_dropped(tmp_path: Path) -> None:
    workspace = testing.write_workspace(tmp_path / "ws", DIARY)
    config = testing.router_config(tmp_path, workspace, backend="sqlite", embedding="none")
    args = ["--config", str(config.file), "search", "--explain", "-n", "1", "trail shoes"]
    result = CliRunner().invoke(build_cli(), args)
    assert result.exit_code == 0, result.output
    assert "relevance" in result.output
    assert "× decay 1.000 × importance 1.000 =" in result.output
    assert "Dropped (" in result.output
    assert "beyond max_results = 1" in result.output


def test_an_answer_of_only_zero_scores_is_no_match_not_hits_below_the_threshold(
    tmp_path: Path,
) -> None:
    # The demo printed "18 hit(s) scored below min_score 0.2 (best 0.000)" for a question
    # about physics: vector candidates under the calibrated floor score 0, match nothing.
    with build(tmp_path) as router:
        everything = router.search("quantum chromodynamics lattice", min_score=0.0)
        assert everything.results
        assert all(h.score == 0 for h in everything.results)
        answer = router.search("quantum chromodynamics lattice", min_score=0.2)
        assert answer.results == ()
        assert answer.below_min_score is None


def test_explain_names_the_keywords_matched_and_both_cosines(tmp_path: Path) -> None:
    with build(tmp_path) as router:
        response = router.search("trail shoes blister", explain=True, min_score=0.0)
    blister = next(h for h in response.results if h.path == "memory/2026-06-30.md")
    assert blister.explain is not None
    assert blister.explain.keywords == ("trail", "shoes", "blister")
    size = next(h for h in response.results if "size 44" in h.snippet)
    assert size.explain is not None
    assert size.explain.keywords == ("trail", "shoes")
    # The hashing embedder has no calibration: its normalised cosine is the raw one, clamped.
    for hit in response.results:
        e = hit.explain
        assert e is not None
        if e.vector_score is not None:
            assert e.vector_norm == pytest.approx(min(1.0, max(0.0, e.vector_score)))


def test_cli_explain_counts_the_candidates_that_scored_zero(tmp_path: Path) -> None:
    workspace = testing.write_workspace(tmp_path / "ws", DIARY)
    config = testing.router_config(tmp_path, workspace, backend="sqlite", embedding="minilm")
    args = ["--config", str(config.file), "search", "--explain", "trail shoes blister"]
    result = CliRunner().invoke(build_cli(), args)
    assert result.exit_code == 0, result.output
    assert "keywords trail, shoes, blister of trail, shoes, blister" in result.output
    assert "(calibrated " in result.output
    assert "candidate(s) that scored 0" in result.output
    assert " 0.000 " not in result.output.split("Dropped (")[1]  # none listed one by one
