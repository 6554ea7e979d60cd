"""Which part of a long chunk a snippet shows: the lines that match the most query terms.

A chunk longer than ``max_snippet_chars`` used to be cut at its head, so an answer in its
second half was never shown to the agent. :func:`best_window` picks the run of whole lines
that fits the budget and holds the most distinct query keywords (ties: the earliest).
"""

from __future__ import annotations

import math

from ._keywords import query_keywords


def _stem(word: str) -> str:
    """A crude stem, enough to match "flights" with "flight" or "allergic" with "allergy"."""
    return word[: max(4, len(word) - 3)] if len(word) > 4 else word


def line_terms(lines: list[str], query: str) -> list[frozenset[str]]:
    """For each line, the query's keyword stems it contains."""
    stems = {_stem(k) for k in query_keywords(query)}
    return [frozenset(s for s in stems if s in line.lower()) for line in lines]


def keyword_coverage(query: str, text: str) -> float:
    """The share of ``query``'s keywords (crudely stemmed) that occur in ``text``; 1 when
    the query has no keywords."""
    stems = {_stem(k) for k in query_keywords(query)}
    if not stems:
        return 1.0
    lowered = text.lower()
    return sum(1 for s in stems if s in lowered) / len(stems)


def term_weights(terms: list[frozenset[str]]) -> dict[str, float]:
    """Each term's weight inside one chunk: ``log(1 + lines / lines holding it)``.

    A term on every line (a speaker's name in a transcript) weighs ``log 2``; a term on one
    line of ten weighs ``log 11`` — so the window goes to the lines with the telling terms.
    """
    counts: dict[str, int] = {}
    for found in terms:
        for term in found:
            counts[term] = counts.get(term, 0) + 1
    return {t: math.log(1 + len(terms) / n) for t, n in counts.items()}


def best_window(text: str, query: str, max_chars: int) -> str:
    """``text`` if it fits; else the window of whole lines with the most telling query terms
    (see :func:`window`)."""
    return window(text, query, max_chars)[1]


def window(text: str, query: str, max_chars: int) -> tuple[int, str]:
    """``(index of the first line shown, snippet)``: ``text`` if it fits; else the window of
    whole lines with the most telling query terms.

    The window starts at a line with a query term and grows over the following lines
    while it fits; windows are compared by the summed :func:`term_weights` of the distinct
    terms they hold (ties: the earliest). When no line matches, or one line alone is too
    long, the head of the best line onward is cut at ``max_chars``.
    """
    if len(text) <= max_chars:
        return 0, text
    lines = text.split("\n")
    terms = line_terms(lines, query)
    weights = term_weights(terms)
    best_start, best_value = 0, -1.0
    for start in range(len(lines)):
        if not terms[start] and start:
            continue
        seen: set[str] = set()
        size = -1
        for index in range(start, len(lines)):
            size += len(lines[index]) + 1
            if size > max_chars and index > start:
                break
            seen |= terms[index]
        value = sum(weights[t] for t in seen)
        if value > best_value + 1e-9:
            best_start, best_value = start, value
    return best_start, "\n".join(lines[best_start:])[:max_chars]
