"""Shared shaping: decay, MMR, min score with keyword relaxation, limits, citations, budget."""

from __future__ import annotations

import itertools
import math
import os
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from memory_router import Hit, Router, load_config, testing
from memory_router._search.ranking import (
    apply_decay,
    citations_on,
    clamp_budget,
    dated_file,
    is_evergreen,
    jaccard,
    mmr,
    mmr_tokens,
    shape,
)
from memory_router.kit import BackendResult, SearchRequest


def hit(
    path: str,
    score: float,
    snippet: str = "x",
    *,
    text: float | None = None,
    source: str = "memory",
) -> Hit:
    return Hit(
        path=path,
        start_line=1,
        end_line=2,
        score=score,
        snippet=snippet,
        source=source,
        backend="t",
        text_score=text,
    )  # type: ignore[arg-type]


def request(**kw: object) -> SearchRequest:
    base: dict[str, object] = {"query": "q", "max_results": 6, "min_score": 0.35, "candidates": 24}
    return SearchRequest(**{**base, **kw})  # type: ignore[arg-type]


def test_dated_file_names() -> None:
    assert dated_file("memory/2026-01-31.md") == datetime(2026, 1, 31, tzinfo=UTC)
    assert dated_file("memory/daily/2026-01-31-1430.md") == datetime(2026, 1, 31, tzinfo=UTC)
    assert dated_file("memory/2026-01-31-standup.md") is not None
    assert dated_file("memory/2026-02-30.md") is None
    assert dated_file("notes/2026-01-31.md") is None
    assert is_evergreen("MEMORY.md", "memory")
    assert is_evergreen("memory/projects/x.md", "memory")
    assert not is_evergreen("memory/2026-01-31.md", "memory")


def test_decay_halves_at_half_life(tmp_path: Path) -> None:
    # floor = 0 is OpenClaw's pure exponential.
    overrides = {"workspace": str(tmp_path), "query": {"temporal_decay": {"floor": 0.0}}}
    config = load_config(None, environ={}, overrides=overrides)
    now = datetime(2026, 3, 2, tzinfo=UTC).timestamp()
    out = apply_decay([hit("memory/2026-01-31.md", 1.0), hit("MEMORY.md", 1.0)], config, now=now)
    assert out[0].score == pytest.approx(0.5)
    assert out[1].score == 1.0


def test_decay_never_takes_more_than_one_minus_the_floor(tmp_path: Path) -> None:
    config = load_config(None, environ={}, overrides={"workspace": str(tmp_path)})
    now = datetime(2026, 3, 2, tzinfo=UTC).timestamp()
    half, ancient = apply_decay(
        [hit("memory/2026-01-31.md", 1.0), hit("memory/2016-01-31.md", 1.0)], config, now=now
    )
    assert half.score == pytest.approx(0.95)  # 0.9 + 0.1 × 0.5
    assert ancient.score == pytest.approx(0.9)


def test_decay_uses_mtime_for_other_files(tmp_path: Path) -> None:
    notes = tmp_path / "notes.md"
    notes.write_text("x")
    ninety_days = time.time() - 90 * 86400
    os.utime(notes, (ninety_days, ninety_days))
    overrides = {"workspace": str(tmp_path), "query": {"temporal_decay": {"floor": 0.0}}}
    config = load_config(None, environ={}, overrides=overrides)
    (out,) = apply_decay([hit("notes.md", 1.0)], config)
    assert out.score == pytest.approx(0.125, rel=1e-3)
    (missing,) = apply_decay([hit("sessions/a.jsonl", 0.8, source="sessions")], config)
    assert missing.score == 0.8


def test_mmr_demotes_near_duplicates() -> None:
    a = hit("a.md", 1.0, "deploy the billing service friday")
    b = hit("b.md", 0.95, "deploy the billing service friday evening")
    c = hit("c.md", 0.9, "the client prefers blue over green")
    assert [h.path for h in mmr([a, b, c], 0.5)] == ["a.md", "c.md", "b.md"]
    assert [h.path for h in mmr([a, b, c], 1.0)] == ["a.md", "b.md", "c.md"]
    assert [h.score for h in mmr([a, b, c], 0.5)] == [1.0, 0.9, 0.95]


def test_mmr_tokens_cjk_and_jaccard() -> None:
    assert {"会", "议", "会议", "abc"} <= mmr_tokens("ABC 会议")
    assert jaccard(frozenset(), frozenset()) == 1.0
    assert jaccard(frozenset({"a"}), frozenset()) == 0.0


def test_min_score_relaxes_to_keyword_hits() -> None:
    config = load_config(None, environ={}, overrides={"citations": "off"})
    result = BackendResult(
        hits=(hit("kw.md", 0.3, text=1.0), hit("vec.md", 0.32)),
        mode="hybrid",
        relaxed_min_score=0.3,
    )
    assert [h.path for h in shape(result, request(), config)] == ["kw.md"]
    strict = BackendResult(hits=result.hits, mode="hybrid", relaxed_min_score=None)
    assert shape(strict, request(), config) == []


def test_a_score_at_the_threshold_passes_despite_floating_point_error() -> None:
    # A third of the keywords matched, weighted 0.6: 0.19999999999999998, not 0.2.
    at = 0.6 * (1 / 3)
    assert at < 0.2
    config = load_config(None, environ={}, overrides={"citations": "off"})
    result = BackendResult(hits=(hit("a.md", at, text=at), hit("b.md", 0.19)), mode="hybrid")
    assert [h.path for h in shape(result, request(min_score=0.2), config)] == ["a.md"]


def test_max_results_and_snippet_cap() -> None:
    config = load_config(
        None, environ={}, overrides={"citations": "off", "query": {"max_snippet_chars": 5}}
    )
    result = BackendResult(
        hits=tuple(hit(f"{i}.md", 0.9 - i / 100, "abcdefghij") for i in range(10)), mode="m"
    )
    shaped = shape(result, request(max_results=3), config)
    assert [h.path for h in shaped] == ["0.md", "1.md", "2.md"]
    assert all(h.snippet == "abcde" for h in shaped)


def test_citations_auto_depends_on_chat_kind() -> None:
    assert citations_on("auto", None)
    assert citations_on("auto", "agent:main:cli:direct:memory-search")
    assert not citations_on("auto", "agent:main:discord:channel:123")
    assert not citations_on("auto", "agent:main:telegram:group:9")
    assert citations_on("on", "agent:main:x:group:1")
    assert not citations_on("off", None)


def test_injection_budget_truncates_first_overflow_then_stops() -> None:
    hits = [hit("a.md", 1, "a" * 30), hit("b.md", 0.9, "b" * 30), hit("c.md", 0.8, "c")]
    out = clamp_budget(hits, 40)
    assert [h.snippet for h in out] == ["a" * 30, "b" * 10]


def test_decay_is_a_factor_not_a_filter(tmp_path: Path) -> None:
    config = load_config(
        None,
        environ={},
        overrides={
            "workspace": str(tmp_path),
            "citations": "off",
            "query": {"temporal_decay": {"enabled": True}, "min_score": 0.0},
        },
    )
    old = hit("memory/2020-01-01.md", 0.9, text=1.0)
    new = hit(f"memory/{datetime.now(UTC):%Y-%m-%d}.md", 0.85, text=1.0)
    shaped = shape(BackendResult(hits=(old, new), mode="m"), request(min_score=0.0), config)
    assert [h.path for h in shaped] == [new.path, old.path]
    age = (time.time() - datetime(2020, 1, 1, tzinfo=UTC).timestamp()) / 86400
    assert shaped[1].score == pytest.approx(
        0.9 * (0.9 + 0.1 * math.exp(-math.log(2) / 30 * age)), rel=1e-3
    )


def _lines_hit(path: str, score: float, start: int, lines: list[str]) -> Hit:
    return Hit(
        path=path,
        start_line=start,
        end_line=start + len(lines) - 1,
        score=score,
        snippet="\n".join(lines),
        source="memory",
        backend="t",
    )  # type: ignore[arg-type]


TURNS = [f"[D1:{n}] Speaker: turn number {n} of the talk" for n in range(1, 10)]


def test_a_neighbouring_chunk_does_not_repeat_the_lines_a_better_hit_showed(
    tmp_path: Path,
) -> None:
    overrides = {
        "workspace": str(tmp_path),
        "citations": "off",
        "query": {"merge_reading_chars": 0},  # never merged: each hit keeps its place
    }
    config = load_config(None, environ={}, overrides=overrides)
    better = _lines_hit("memory/a.md", 0.9, 1, TURNS[0:5])  # lines 1-5
    neighbour = _lines_hit("memory/a.md", 0.8, 4, TURNS[3:8])  # lines 4-8
    other = _lines_hit("memory/b.md", 0.7, 4, TURNS[3:8])  # another file: untouched
    result = BackendResult(hits=(better, neighbour, other), mode="keyword")
    out = shape(result, request(min_score=0.0), config)
    assert [(h.path, h.start_line, h.end_line) for h in out] == [
        ("memory/a.md", 1, 5),
        ("memory/a.md", 6, 8),  # lines 4-5 were shown by the better hit
        ("memory/b.md", 4, 8),
    ]
    assert out[1].snippet.split("\n")[0].startswith("[D1:6]")
    assert "[D1:4]" not in out[1].snippet
    assert "[D1:4]" in out[2].snippet


def test_touching_hits_of_a_file_are_one_passage_and_free_a_place(tmp_path: Path) -> None:
    config = load_config(
        None, environ={}, overrides={"workspace": str(tmp_path), "citations": "on"}
    )
    better = _lines_hit("memory/a.md", 0.9, 1, TURNS[0:5])  # lines 1-5
    other = _lines_hit("memory/b.md", 0.85, 1, TURNS[0:3])
    below = _lines_hit("memory/a.md", 0.8, 6, TURNS[5:8])  # lines 6-8: adjoins the first
    third = _lines_hit("memory/c.md", 0.7, 1, TURNS[0:2])  # gets the place freed
    result = BackendResult(hits=(better, other, below, third), mode="keyword")
    out = shape(result, request(min_score=0.0, max_results=3), config)
    assert [(h.path, h.start_line, h.end_line) for h in out] == [
        ("memory/a.md", 1, 8),
        ("memory/b.md", 1, 3),
        ("memory/c.md", 1, 2),
    ]
    assert out[0].score == 0.9
    assert out[0].citation == "memory/a.md#L1-L8"
    body = out[0].snippet.split("\n\nSource:")[0]
    assert body.split("\n") == TURNS[0:8]  # each line once, in line order
    explained = shape(result, request(min_score=0.0, max_results=3), config, explain=True)
    assert explained[0].explain is not None
    assert explained[0].explain.merged == ("6-8",)
    assert explained[1].explain is not None
    assert explained[1].explain.merged == ()


def test_a_neighbour_past_merge_reading_chars_stays_a_hit_of_its_own(tmp_path: Path) -> None:
    overrides = {"workspace": str(tmp_path), "citations": "off"}
    overrides["query"] = {"merge_reading_chars": len("\n".join(TURNS[0:5])) + 10}
    config = load_config(None, environ={}, overrides=overrides)
    better = _lines_hit("memory/a.md", 0.9, 1, TURNS[0:5])
    below = _lines_hit("memory/a.md", 0.8, 6, TURNS[5:8])  # its snippet would pass the limit
    out = shape(BackendResult(hits=(better, below), mode="keyword"), request(min_score=0.0), config)
    assert [(h.start_line, h.end_line) for h in out] == [(1, 5), (6, 8)]


def test_touching_hits_past_the_reading_budget_are_merged(tmp_path: Path) -> None:
    first = _lines_hit("memory/x.md", 0.95, 1, TURNS[0:9])  # fills the reading budget
    overrides = {"workspace": str(tmp_path), "citations": "off"}
    overrides["query"] = {"merge_reading_chars": len(first.snippet)}
    config = load_config(None, environ={}, overrides=overrides)
    upper = _lines_hit("memory/a.md", 0.9, 1, TURNS[0:4])  # past it: merged with each other
    lower = _lines_hit("memory/a.md", 0.8, 5, TURNS[4:8])
    result = BackendResult(hits=(first, upper, lower), mode="keyword")
    out = shape(result, request(min_score=0.0), config)
    assert [(h.path, h.start_line, h.end_line) for h in out] == [
        ("memory/x.md", 1, 9),
        ("memory/a.md", 1, 8),
    ]
    assert out[1].snippet.split("\n") == TURNS[0:8]


def test_a_passage_past_the_reading_budget_holds_at_most_the_budget(tmp_path: Path) -> None:
    # A file of many small matching passages: past the budget they used to become one hit
    # of every candidate left (63 parts, 15,521 characters on a 200-line log).
    first = _lines_hit("memory/x.md", 0.95, 1, TURNS[0:4])  # fills the reading budget
    reading = len(first.snippet)
    overrides = {"workspace": str(tmp_path), "citations": "off"}
    overrides["query"] = {"merge_reading_chars": reading, "max_injected_chars": 0}
    config = load_config(None, environ={}, overrides=overrides)
    lines = [_lines_hit("memory/a.md", 0.9 - n / 100, n + 1, [TURNS[n]]) for n in range(8)]
    out = shape(BackendResult(hits=(first, *lines), mode="keyword"), request(min_score=0.0), config)
    assert [(h.path, h.start_line, h.end_line) for h in out] == [
        ("memory/x.md", 1, 4),
        ("memory/a.md", 1, 4),
        ("memory/a.md", 5, 8),
    ]
    assert all(len(h.snippet) <= reading for h in out)
    assert [h.snippet for h in out[1:]] == ["\n".join(TURNS[0:4]), "\n".join(TURNS[4:8])]


def test_a_long_log_of_small_matches_is_not_one_hit_of_every_candidate(tmp_path: Path) -> None:
    # A real SQLite index of a 200-line kiln log in one-line chunks, every line a match,
    # and no injection budget: past the reading budget (4,000 characters) the touching
    # hits used to become one hit of 63 parts and 15,521 characters.
    log = "\n".join(
        f"Kiln firing {n} reached cone {n % 10}; glaze batch {n} looked fine after the"
        f" kiln cooled for {n} hours and the shelf was cleaned."
        for n in range(200)
    )
    workspace = testing.write_workspace(tmp_path / "ws", {"memory/kiln.md": log + "\n"})
    config = testing.router_config(
        tmp_path,
        workspace,
        backend="sqlite",
        citations="off",
        query={"max_injected_chars": 0},
        chunking={"tokens": 40, "overlap": 0, "structure": "off"},
    )
    with Router.from_config(config) as router:
        router.sync()
        hits = router.search("kiln firing glaze", max_results=6).results
    reading = config.query.merge_reading_chars
    assert all(len(h.snippet) <= reading for h in hits)
    assert len(hits) >= 4  # the 80 candidate lines fill more hits instead of one
    spans = sorted((h.start_line, h.end_line) for h in hits)
    assert all(a[1] < b[0] for a, b in itertools.pairwise(spans)), "no line twice"


def test_a_merged_passage_marks_the_lines_it_does_not_show(tmp_path: Path) -> None:
    # Each snippet is cut at 120 characters: the lines between the parts are left out.
    overrides = {"workspace": str(tmp_path), "citations": "off"}
    overrides["query"] = {"max_snippet_chars": 120}
    config = load_config(None, environ={}, overrides=overrides)
    upper = _lines_hit("memory/a.md", 0.9, 1, TURNS[0:5])
    lower = _lines_hit("memory/a.md", 0.8, 6, TURNS[5:9])
    out = shape(BackendResult(hits=(upper, lower), mode="keyword"), request(min_score=0.0), config)
    assert [(h.start_line, h.end_line) for h in out] == [(1, 9)]
    lines = out[0].snippet.split("\n")
    assert lines[:2] == TURNS[0:2]
    assert TURNS[2].startswith(lines[2])  # line 3, cut at 120 characters
    assert lines[3] == "…"  # lines 3-5 are not all shown
    assert lines[4] == TURNS[5]


def test_a_hit_whose_lines_a_better_one_showed_is_not_merged_into_it(tmp_path: Path) -> None:
    # Merging these would repeat lines 3-4 after line 6, as if they came next in the file.
    config = load_config(None, environ={}, overrides={"workspace": str(tmp_path)})
    outer = _lines_hit("memory/a.md", 0.9, 1, TURNS[0:6])
    inner = _lines_hit("memory/a.md", 0.8, 3, TURNS[2:4])
    out = shape(BackendResult(hits=(outer, inner), mode="keyword"), request(min_score=0.0), config)
    assert [(h.start_line, h.end_line) for h in out] == [(1, 6), (3, 4)]
    assert out[0].snippet.split("\n\nSource:")[0].split("\n") == TURNS[0:6]


def test_two_pieces_of_one_long_line_are_not_merged_out_of_order(tmp_path: Path) -> None:
    # A line longer than a chunk is split: both pieces' range is that one line.
    overrides = {"workspace": str(tmp_path), "citations": "off"}
    config = load_config(None, environ={}, overrides=overrides)
    tail = _lines_hit("memory/a.md", 0.9, 5, ["and the tail of the long line"])
    head = _lines_hit("memory/a.md", 0.8, 5, ["the head of a long line"])
    out = shape(BackendResult(hits=(tail, head), mode="keyword"), request(min_score=0.0), config)
    assert [h.snippet for h in out] == [tail.snippet, head.snippet]


def test_the_next_chunk_joins_a_passage_whose_last_line_the_window_cut(tmp_path: Path) -> None:
    # Line 5 is in both chunks (overlap); the upper snippet shows only its head.
    overrides = {"workspace": str(tmp_path), "citations": "off"}
    overrides["query"] = {"max_snippet_chars": len("\n".join(TURNS[0:4])) + 20}
    config = load_config(None, environ={}, overrides=overrides)
    upper = _lines_hit("memory/a.md", 0.9, 1, TURNS[0:5])
    lower = _lines_hit("memory/a.md", 0.8, 5, TURNS[4:8])
    out = shape(BackendResult(hits=(upper, lower), mode="keyword"), request(min_score=0.0), config)
    assert [(h.start_line, h.end_line) for h in out] == [(1, 8)]
    lines = out[0].snippet.split("\n")
    assert lines[:4] == TURNS[0:4]
    assert TURNS[4].startswith(lines[4])
    assert lines[5:] == ["…", *TURNS[4:8]]


def test_lines_a_better_hit_did_not_show_are_kept(tmp_path: Path) -> None:
    # The better hit's snippet is cut to its first lines, so line 5 was never shown.
    overrides = {
        "workspace": str(tmp_path),
        "citations": "off",
        "query": {"max_snippet_chars": 120, "merge_reading_chars": 0},
    }
    config = load_config(None, environ={}, overrides=overrides)
    better = _lines_hit("memory/a.md", 0.9, 1, TURNS[0:5])
    neighbour = _lines_hit("memory/a.md", 0.8, 4, TURNS[3:8])
    result = BackendResult(hits=(better, neighbour), mode="keyword")
    out = shape(result, request(min_score=0.0), config)
    assert "[D1:3]" in out[0].snippet  # the snippet is cut at 120 characters
    assert "[D1:4]" not in out[0].snippet
    assert (out[1].start_line, out[1].end_line) == (4, 8)
    assert out[1].snippet.startswith("[D1:4]")


def test_a_hit_between_two_passages_makes_them_one(tmp_path: Path) -> None:
    # Chunks 1-3 and 7-9 rank first and third; chunk 4-6, between them, joins both.
    overrides = {"workspace": str(tmp_path), "citations": "off"}
    config = load_config(None, environ={}, overrides=overrides)
    upper = _lines_hit("memory/a.md", 0.9, 1, TURNS[0:3])
    other = _lines_hit("memory/b.md", 0.85, 1, TURNS[0:2])
    lower = _lines_hit("memory/a.md", 0.8, 7, TURNS[6:9])
    middle = _lines_hit("memory/a.md", 0.7, 4, TURNS[3:6])
    last = _lines_hit("memory/c.md", 0.6, 1, TURNS[0:1])  # gets a place freed
    result = BackendResult(hits=(upper, other, lower, middle, last), mode="keyword")
    out = shape(result, request(min_score=0.0, max_results=4), config, explain=True)
    assert [(h.path, h.start_line, h.end_line) for h in out] == [
        ("memory/a.md", 1, 9),
        ("memory/b.md", 1, 2),
        ("memory/c.md", 1, 1),
    ]
    assert out[0].snippet.split("\n") == TURNS[0:9]  # each line once, in line order
    assert out[0].score == 0.9
    assert out[0].explain is not None
    assert set(out[0].explain.merged) == {"4-6", "7-9"}


def test_a_bridge_never_pulls_text_read_later_up(tmp_path: Path) -> None:
    # The reading budget ends inside the lower hit's snippet, and the middle one comes
    # after it: joining it (and so the lower one) to the upper hit would move text read
    # later into what the agent reads first, so the three stay apart.
    upper = _lines_hit("memory/a.md", 0.9, 1, TURNS[0:3])
    lower = _lines_hit("memory/a.md", 0.8, 7, TURNS[6:9])
    middle = _lines_hit("memory/a.md", 0.7, 4, TURNS[3:6])
    overrides = {"workspace": str(tmp_path), "citations": "off"}
    overrides["query"] = {"merge_reading_chars": len(upper.snippet) + 10}
    config = load_config(None, environ={}, overrides=overrides)
    result = BackendResult(hits=(upper, lower, middle), mode="keyword")
    out = shape(result, request(min_score=0.0), config)
    assert [(h.start_line, h.end_line) for h in out] == [(1, 3), (7, 9), (4, 6)]


def test_the_reading_budget_counts_the_source_lines_an_agent_reads(tmp_path: Path) -> None:
    # Without citations both snippets fit the reading budget and are grouped; with them,
    # the first hit's "Source: …" line is read too, the second no longer fits, and it
    # stays a hit of its own (merging would move its text across the budget's end).
    better = _lines_hit("memory/a.md", 0.9, 1, TURNS[0:5])
    below = _lines_hit("memory/a.md", 0.8, 6, TURNS[5:8])
    reading = len(better.snippet) + len(below.snippet) + 5
    result = BackendResult(hits=(better, below), mode="keyword")
    spans = {}
    for mode in ("off", "on"):
        overrides = {"workspace": str(tmp_path), "citations": mode}
        overrides["query"] = {"merge_reading_chars": reading}
        config = load_config(None, environ={}, overrides=overrides)
        out = shape(result, request(min_score=0.0), config)
        spans[mode] = [(h.start_line, h.end_line) for h in out]
    assert spans == {"off": [(1, 8)], "on": [(1, 5), (6, 8)]}
