"""Which part of a long chunk a snippet shows: the lines that match the most query terms.

A chunk longer than ``max_snippet_chars`` used to be cut at its head, so an answer in its
second half was never shown to the agent. :func:`window` picks the run of whole lines
that fits the budget and holds the most distinct query keywords (ties: the earliest);
:func:`best_lines` gives such a run as line numbers, for a backend that cites lines of a
whole document, and :func:`best_runs` the next best runs too. Keywords may be weighted
(e.g. by rarity): a keyword's stem then counts its weight instead of 1.
"""

from __future__ import annotations

import bisect
import functools
import math
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence

from .keywords import CJK, query_keywords


def _stem(word: str) -> str:
    """A crude stem, enough to match "flights" with "flight" or "allergic" with "allergy"."""
    return word[: max(4, len(word) - 3)] if len(word) > 4 else word


@functools.lru_cache(maxsize=4096)
def _pattern(stem: str) -> re.Pattern[str] | None:
    """Where ``stem`` counts as found: at the start of a word ("car" is not in "scar"),
    and a stem of at most 3 letters as the whole word or its plural ("car", "cars", not
    "care" or "career"). ``None`` for a stem with CJK characters (no spaces between words:
    found anywhere)."""
    if CJK.search(stem):
        return None
    tail = r"(?:e?s)?(?!\w)" if len(stem) <= 3 else ""
    return re.compile(r"(?<!\w)" + re.escape(stem) + tail)


def _positions(stem: str, text: str) -> Iterator[int]:
    """Where ``stem`` is found in (lower-cased) ``text``, see :func:`_pattern`.

    Each occurrence is found with ``str.find`` and then checked against the pattern
    there (its look-behind sees the text before): ``finditer`` tries a pattern that
    starts with a look-behind at every position of the text, six times slower."""
    pattern = _pattern(stem)
    at = text.find(stem) if stem else -1
    while at >= 0:
        if pattern is None or pattern.match(text, at):
            yield at
        at = text.find(stem, at + 1)


def _contains(text: str, stem: str) -> bool:
    at = text.find(stem)
    if at < 0:  # the usual answer, found without the pattern
        return False
    pattern = _pattern(stem)
    # A match starts at an occurrence of the stem (the look-behind still sees before it).
    return pattern is None or pattern.search(text, at) is not None


def _stem_weights(query: str, weights: Mapping[str, float] | None) -> dict[str, float]:
    """Each keyword stem of ``query`` and its weight (the largest of its keywords'; 1 by
    default, and for a keyword ``weights`` does not name)."""
    if weights is None:
        return dict.fromkeys(_stems(query), 1.0)
    out: dict[str, float] = {}
    for keyword in query_keywords(query):
        weight = max(0.0, weights.get(keyword, 1.0))
        stem = _stem(keyword)
        out[stem] = max(out.get(stem, 0.0), weight)
    return out


@functools.lru_cache(maxsize=256)
def _stems(query: str) -> tuple[str, ...]:
    """The keyword stems of ``query``, each once: a search asks for them once per
    candidate (:func:`keyword_coverage`), so they are worked out once per query."""
    return tuple(dict.fromkeys(_stem(k) for k in query_keywords(query)))


def line_terms(lines: Sequence[str], query: str) -> list[frozenset[str]]:
    """For each line, the query's keyword stems it contains."""
    return _terms(lines, _stem_weights(query, None))


def _terms(lines: Sequence[str], stems: Iterable[str]) -> list[frozenset[str]]:
    """For each line, which of ``stems`` it contains: each stem's occurrences are found
    in the whole text and mapped to lines (a long document is one pass per stem)."""
    lowered = [line.lower() for line in lines]  # lowering may change a line's length
    starts, offset = [], 0
    for line in lowered:
        starts.append(offset)
        offset += len(line) + 1
    text = "\n".join(lowered)
    found: dict[int, set[str]] = {}
    for stem in stems:
        for at in _positions(stem, text):
            found.setdefault(bisect.bisect_right(starts, at) - 1, set()).add(stem)
    out = [frozenset[str]()] * len(lines)
    for index, hits in found.items():
        out[index] = frozenset(hits)
    return out


def matched_keywords(query: str, text: str) -> tuple[str, ...]:
    """The keywords of ``query`` (:func:`query_keywords`) found in ``text``, as
    :func:`keyword_coverage` finds them (crude stems, at word starts), in query order."""
    lowered = text.lower()
    return tuple(k for k in query_keywords(query) if _contains(lowered, _stem(k)))


def keyword_coverage(query: str, text: str, weights: Mapping[str, float] | None = None) -> float:
    """The share of ``query``'s keywords (crudely stemmed) that occur in ``text``; 1 when
    the query has no keywords.

    With ``weights`` (keyword → weight, as :func:`query_keywords` spells it) the share is
    of the total weight, so a rare keyword counts more than a common one.
    """
    stems = _stem_weights(query, weights)
    total = sum(stems.values())
    if not stems or total <= 0:
        return 1.0
    lowered = text.lower()
    return sum(w for s, w in stems.items() if _contains(lowered, s)) / total


def rarity_weights(query: str, texts: Sequence[str]) -> dict[str, float]:
    """Each keyword of ``query`` weighted by how rare it is among ``texts`` (a search's
    keyword candidates): ``log(1 + n / (df + 0.5))``, ``df`` the texts holding it.

    A speaker's name on every candidate weighs ``log 2``; "adopt", in three of 80, ~3.2.
    For :func:`keyword_coverage`, so that holding the name is not half of "Melanie adopt".
    """
    stems = _stems(query)
    return _rarity(query, [_held(text, stems) for text in texts])


def _rarity(query: str, held: Sequence[frozenset[str]]) -> dict[str, float]:
    """:func:`rarity_weights` from the stems each text holds (``held``, one set a text)."""
    weights: dict[str, float] = {}
    for keyword in query_keywords(query):
        stem = _stem(keyword)
        found = sum(1 for h in held if stem in h)
        weights[keyword] = math.log(1.0 + len(held) / (found + 0.5))
    return weights


def keyword_shares(
    query: str, texts: Mapping[str, str]
) -> tuple[dict[str, float], dict[str, float]]:
    """``(coverage, weighted)`` of each of ``texts`` by key: :func:`keyword_coverage` of
    ``query``, unweighted and weighted by :func:`rarity_weights` among ``texts``, the
    same figures with each stem looked for once in each text (a search asks them of
    every keyword candidate)."""
    stems = _stems(query)
    if not stems:
        return dict.fromkeys(texts, 1.0), dict.fromkeys(texts, 1.0)
    held = {key: _held(text, stems) for key, text in texts.items()}
    weights = _stem_weights(query, _rarity(query, list(held.values())))
    total = sum(weights.values())
    coverage = {key: len(h) / len(stems) for key, h in held.items()}
    if total <= 0:
        return coverage, dict.fromkeys(texts, 1.0)
    weighted = {k: sum(w for s, w in weights.items() if s in h) / total for k, h in held.items()}
    return coverage, weighted


def _held(text: str, stems: tuple[str, ...]) -> frozenset[str]:
    """Which of ``stems`` (each once) ``text`` holds, as :func:`keyword_coverage` finds them."""
    lowered = text.lower()
    return frozenset(s for s in stems if _contains(lowered, s))


def best_keyword_coverage(query: str, texts: Iterable[str]) -> float:
    """The largest :func:`keyword_coverage` of ``query`` over ``texts`` (1 when there are
    no texts, or the query has no keywords). Stops at the first text holding every
    keyword: given in rank order, that is usually the first."""
    stems = _stems(query)
    if not stems:
        return 1.0
    best: float | None = None
    for text in texts:
        share = len(_held(text, stems)) / len(stems)
        best = share if best is None else max(best, share)
        if best >= 1.0:
            break
    return 1.0 if best is None else best


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
    run, _ = _best_run(lines, terms, term_weights(terms), max_chars, ())
    start = run[0] if run else 0
    return start, "\n".join(lines[start:])[:max_chars]


def best_lines(
    lines: Sequence[str],
    query: str,
    max_chars: int,
    weights: Mapping[str, float] | None = None,
) -> tuple[int, int]:
    """``(start, end)``, 0-based and end-exclusive: the run of whole lines that fits
    ``max_chars`` (at least one line) with the most distinct query keywords.

    The run starts at a line with a query term and grows over the following lines while
    it fits; ties go to the earliest run, and with no matching line it is the head.
    ``weights`` as in :func:`keyword_coverage`.
    """
    runs = best_runs(lines, query, max_chars, weights)
    return runs[0] if runs else (0, 0)


def best_runs(
    lines: Sequence[str],
    query: str,
    max_chars: int,
    weights: Mapping[str, float] | None = None,
    *,
    count: int = 1,
) -> list[tuple[int, int]]:
    """Up to ``count`` runs that do not overlap, best first: the first is
    :func:`best_lines`'s, each next one the best of the lines left that holds a keyword."""
    stems = _stem_weights(query, weights)
    terms = _terms(lines, stems)
    runs: list[tuple[int, int]] = []
    while len(runs) < count:
        run, value = _best_run(lines, terms, stems, max_chars, runs)
        if run is None or (runs and value <= 0):
            break
        runs.append(run)
    return runs


def _best_run(
    lines: Sequence[str],
    terms: Sequence[frozenset[str]],
    weights: Mapping[str, float],
    max_chars: int,
    taken: Sequence[tuple[int, int]],
) -> tuple[tuple[int, int] | None, float]:
    """The best run of lines outside ``taken`` and its summed term weight."""
    best, best_value = None, -1.0
    for start in range(len(lines)):
        if (start and not terms[start]) or any(a <= start < b for a, b in taken):
            continue
        limit = min([a for a, _ in taken if a > start] + [len(lines)])
        seen: set[str] = set()
        size, end = -1, start
        while end < limit and (end == start or size + len(lines[end]) + 1 <= max_chars):
            size += len(lines[end]) + 1
            seen |= terms[end]
            end += 1
        value = sum(weights[s] for s in seen)
        if value > best_value + 1e-9:
            best, best_value = (start, end), value
    return best, best_value
