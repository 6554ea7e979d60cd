"""Which lines a snippet or a citation shows: the run with the most (weighted) query terms."""

from __future__ import annotations

from collections.abc import Iterator

from memory_router._search.snippets import (
    best_keyword_coverage,
    keyword_shares,
    rarity_weights,
    window,
)
from memory_router.kit import best_lines, best_runs, keyword_coverage

LINES = [
    "# Diary",
    "Went to the market for bread.",
    "The weather was grey all week.",
    "Booked flights to Lisbon for May.",
    "The hotel in Lisbon is near the river.",
    "Dinner at home.",
]


def test_best_lines_is_the_run_with_the_most_query_terms() -> None:
    # Each line alone fits; "flights" and "hotel" are on lines 4 and 5 (0-based 3 and 4).
    assert best_lines(LINES, "which hotel and flights", max_chars=80) == (3, 5)
    assert best_lines(LINES, "which hotel and flights", max_chars=40) == (3, 4)  # earliest


def test_best_lines_without_a_match_is_the_head_and_never_empty() -> None:
    assert best_lines(LINES, "quantum chromodynamics", max_chars=40) == (0, 2)
    assert best_lines(["x" * 500], "anything", max_chars=10) == (0, 1)
    assert best_lines([], "anything", max_chars=10) == (0, 0)


def test_weights_prefer_the_rare_term() -> None:
    query = "weather in lisbon"  # "weather" and "lisbon" never share a 40-char window
    assert best_lines(LINES, query, max_chars=40) == (2, 3)  # a tie: the earliest
    assert best_lines(LINES, query, max_chars=40, weights={"lisbon": 3.0}) == (3, 4)


def test_weighted_coverage_is_a_share_of_the_weight() -> None:
    assert keyword_coverage("green tea matcha", "green tea") == 2 / 3
    weights = {"green": 1.0, "tea": 1.0, "matcha": 2.0}
    assert keyword_coverage("green tea matcha", "green tea", weights) == 0.5
    assert keyword_coverage("green tea", "green tea", {"green": 0.0, "tea": 0.0}) == 1.0


def test_window_still_cuts_text_at_the_best_line() -> None:
    text = "\n".join(LINES)
    start, snippet = window(text, "hotel river", 45)
    assert (start, snippet[:19]) == (4, "The hotel in Lisbon")
    assert window("short", "x", 45) == (0, "short")


def test_best_runs_do_not_overlap_and_each_holds_a_keyword() -> None:
    lines = ["hotel one", "filler", "filler", "hotel two", "filler", "nothing"]
    assert best_runs(lines, "hotel", max_chars=20, count=5) == [(0, 2), (3, 5)]
    assert best_runs(lines, "hotel", max_chars=10, count=5) == [(0, 1), (3, 4)]
    assert best_runs(lines, "quantum", max_chars=10, count=3) == [(0, 1)]  # the head only
    assert best_runs([], "hotel", max_chars=10) == []


def test_a_keyword_is_found_at_the_start_of_a_word_not_inside_one() -> None:
    # "car" is not in "care" or "scar", "serviced" (stem "servi") is in "service"; a short
    # keyword matches itself and its plural only.
    people = "Mira owns the payments service; her mother is in a care home. Old scar."
    car = "Took the car to the garage; it was serviced on Friday."
    assert keyword_coverage("when is the car serviced", people) == 0.5
    assert keyword_coverage("when is the car serviced", car) == 1.0
    assert keyword_coverage("car", "two cars and a bus") == 1.0
    assert keyword_coverage("art class", "we started a party") == 0.0
    assert keyword_coverage("東京 旅行", "東京に旅行しました") == 1.0  # no spaces: anywhere
    lines = [people, car]
    assert best_lines(lines, "when is the car serviced", 60) == (1, 2)


def test_best_keyword_coverage_is_the_largest_share_and_stops_at_a_full_one() -> None:
    texts = ["green tea", "matcha green tea latte", "tea"]
    assert best_keyword_coverage("green tea matcha", texts) == 1.0
    assert best_keyword_coverage("green tea matcha", ["green tea", "tea"]) == 2 / 3
    assert best_keyword_coverage("green tea matcha", []) == 1.0  # nothing to judge
    assert best_keyword_coverage("the of and", ["anything"]) == 1.0  # no keywords

    def counted() -> Iterator[str]:
        yield "matcha green tea"
        raise AssertionError("read past a text holding every keyword")

    assert best_keyword_coverage("green tea matcha", counted()) == 1.0


def test_shares_of_many_texts_are_each_texts_coverages() -> None:
    """A keyword first found inside a word ("scar") still counts at a later word start;
    the weighted share is :func:`keyword_coverage` with the texts' rarity weights."""
    query = "when is the car serviced"
    texts = {
        "a": "an old scar, then the car",
        "b": "Mira owns the payments service; her mother is in a care home. Old scar.",
        "c": "Took the car to the garage; it was serviced on Friday.",
        "d": "nothing here",
    }
    coverage, weighted = keyword_shares(query, texts)
    rarity = rarity_weights(query, list(texts.values()))
    assert coverage == {key: keyword_coverage(query, text) for key, text in texts.items()}
    assert weighted == {key: keyword_coverage(query, t, rarity) for key, t in texts.items()}
    assert coverage == {"a": 0.5, "b": 0.5, "c": 1.0, "d": 0.0}
    assert keyword_shares("the of and", texts) == (dict.fromkeys(texts, 1.0),) * 2
