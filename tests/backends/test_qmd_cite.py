"""Citing a QMD hit's best lines from the document itself (no QMD process needed)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from memory_router import load_config
from memory_router_qmd._cite import recite
from memory_router_qmd._collections import Collection
from memory_router_qmd._results import DEFAULT_MIN_SCORE, RawHit, calibrated, hit_score, to_hits

DOC = "# Trip\n\nWe talked about the weather.\nDinner was fish.\n" + "filler line\n" * 40
DOC += "Booked flights to Lisbon.\nThe hotel is in Alfama.\n\n"


def qmd_hit(snippet: str = "We talked about the weather.") -> RawHit:
    """What QMD answers: the snippet around its first keyword's match (lines 3-3)."""
    return RawHit(
        collection="c", relpath="trip.md", start_line=3, end_line=3, snippet=snippet, score=1.0
    )


def test_the_lines_with_the_most_query_terms_are_cited(tmp_path: Path) -> None:
    (tmp_path / "trip.md").write_text(DOC, encoding="utf-8")
    hit, *more = recite(qmd_hit(), tmp_path, "weather flights hotel", max_chars=200, runs=3)
    assert (hit.start_line, hit.end_line) == (45, 46)  # trailing blank lines trimmed
    assert hit.snippet == "Booked flights to Lisbon.\nThe hotel is in Alfama."
    assert hit.coverage == 2 / 3
    # The next run is the head, with "weather"; no third run holds a keyword.
    assert [(h.start_line, h.coverage) for h in more] == [(1, 1 / 3)]


def test_rare_keywords_weigh_more(tmp_path: Path) -> None:
    (tmp_path / "trip.md").write_text(DOC, encoding="utf-8")
    weights = {"weather": 4.0, "flights": 1.0, "hotel": 1.0}
    [hit] = recite(qmd_hit(), tmp_path, "weather flights hotel", max_chars=200, weights=weights)
    assert hit.start_line == 1  # the head window holds "weather"
    assert hit.coverage == 4 / 6


def test_a_file_gone_or_unreadable_keeps_qmds_lines(tmp_path: Path) -> None:
    [gone] = recite(qmd_hit(), tmp_path, "weather flights", max_chars=200)
    (tmp_path / "trip.md").write_bytes(b"\xff\xfe weather \x00")
    [binary] = recite(qmd_hit(), tmp_path, "weather flights", max_chars=200)
    [kept] = recite(qmd_hit(), None, "weather flights", max_chars=200)
    for hit in (gone, binary, kept):
        assert (hit.start_line, hit.end_line, hit.snippet) == (3, 3, qmd_hit().snippet)
        assert hit.coverage == 0.5  # measured on QMD's own snippet


def test_a_latin_1_file_is_cited_in_its_own_letters(tmp_path: Path) -> None:
    # Citing read the file as strict UTF-8, failed, and kept QMD's lines: QMD decodes the
    # bytes itself, so its snippet holds U+FFFD where the note says "é".
    text = "# Séjour\n\nWe talked about the weather.\nRenée booked the hôtel in Alfama.\n"
    (tmp_path / "trip.md").write_bytes(text.encode("latin-1"))
    mangled = "Ren\ufffde booked the h\ufffdtel in Alfama."
    [hit] = recite(qmd_hit(mangled), tmp_path, "Renée hôtel Alfama", max_chars=200)
    assert (
        hit.snippet == "# Séjour\n\nWe talked about the weather.\nRenée booked the hôtel in Alfama."
    )
    assert (hit.start_line, hit.end_line) == (1, 4)
    assert hit.coverage == 1.0


def test_a_file_edited_since_indexing_is_cited_as_it_is_now(tmp_path: Path) -> None:
    (tmp_path / "trip.md").write_text("# Trip\n\nNew notes.\nThe hotel burned down.\n")
    [now] = recite(qmd_hit(), tmp_path, "hotel", max_chars=200)
    assert (now.start_line, now.end_line) == (1, 4)
    (tmp_path / "trip.md").write_text("# Trip\n\nnothing left\n", encoding="utf-8")
    [stale] = recite(qmd_hit("The hotel is in Alfama."), tmp_path, "hotel", max_chars=200)
    assert (stale.start_line, stale.snippet) == (3, "The hotel is in Alfama.")


def test_search_scores_are_coverage_times_a_rank_factor_on_the_routers_scale(
    tmp_path: Path,
) -> None:
    hit = qmd_hit()
    assert hit_score(replace(hit, coverage=1.0), 1, "coverage") == 1.0
    assert (
        0.35 < calibrated(0.5 + 0.5 / 3.9) == hit_score(replace(hit, coverage=1.0), 30, "coverage")
    )
    # A raw 0.35 (a third of the query shown, at the top rank) is the default min_score.
    assert hit_score(replace(hit, coverage=0.35), 1, "coverage") == pytest.approx(0.2)
    defaults = load_config(None, environ={}, overrides={"workspace": str(tmp_path)})
    assert defaults.query.min_score == DEFAULT_MIN_SCORE  # else re-calibrate CROSSING
    assert calibrated(0.0) == 0.0
    assert calibrated(0.1) < calibrated(0.3) < calibrated(0.35) < calibrated(0.6) < 1.0
    assert hit_score(hit, 2, "rank") == 1 / 1.1
    assert hit_score(replace(hit, score=3.0), 5, "qmd") == 1.0


def test_a_documents_runs_share_its_rank_and_hits_come_best_first(tmp_path: Path) -> None:
    folder = Collection(name="c", path=tmp_path / "memory", pattern="**/*.md")
    first = replace(qmd_hit(), coverage=0.5)
    runs = [first, replace(first, start_line=9, coverage=0.25)]
    other = replace(first, relpath="other.md", coverage=1.0)
    hits = to_hits(
        [*runs, other],
        collections={"c": folder},
        workspace=tmp_path,
        backend="qmd",
        scoring="coverage",
    )
    assert [(h.path, h.start_line) for h in hits] == [
        ("memory/other.md", 3),
        ("memory/trip.md", 3),
        ("memory/trip.md", 9),
    ]
    assert [h.score for h in hits] == [
        calibrated(0.5 + 0.5 / 1.1),
        calibrated(0.5),
        calibrated(0.25),
    ]


def test_a_path_outside_the_collection_is_never_read(tmp_path: Path) -> None:
    # QMD's index names the file; a tampered or confused index must not make the router
    # read (and quote in a snippet) anything outside the collection's folder.
    folder = tmp_path / "memory"
    folder.mkdir()
    (tmp_path / "secret.md").write_text("weather: the vault code is 4711\n", encoding="utf-8")
    (folder / "link.md").symlink_to(tmp_path / "secret.md")
    for relpath in ("../secret.md", "link.md", str(tmp_path / "secret.md")):
        [hit] = recite(replace(qmd_hit(), relpath=relpath), folder, "weather", max_chars=200)
        assert "4711" not in hit.snippet
        assert (hit.start_line, hit.snippet) == (3, qmd_hit().snippet)
