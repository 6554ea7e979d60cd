"""Shared result shaping, applied to every backend's candidates (ref §1.7–1.12).

Order: temporal decay and entry weight → sort → MMR → min score (on the score before
decay and weight, with keyword relaxation) → lines a better hit showed trimmed
(:mod:`memory_router._search.overlaps`) → snippet window → touching hits of a file merged (never
moving text into the first ``merge_reading_chars``) → max results → citations →
injection budget. Decay and weight reorder; they never empty an answer.
"""

from __future__ import annotations

import dataclasses
import re
import time
from collections.abc import Sequence

from .._config.config import Config, EntryRankingConfig
from .._types import BackendResult, Entry, Explain, Hit, SearchRequest
from .._workspace.discovery import dated_file
from .keywords import CJK
from .overlaps import Passage, Shown, gather, note_shown, trim_hit
from .snippets import matched_keywords, window

_ASCII_TOKEN = re.compile(r"[a-z0-9_]+")
DAY = 86400.0


def is_evergreen(path: str, source: str) -> bool:
    """``MEMORY.md``, ``memory.md`` and undated files under ``memory/`` never decay."""
    if source != "memory":
        return False
    return path in ("MEMORY.md", "memory.md") or (
        path.startswith("memory/") and dated_file(path) is None
    )


def age_days(hit: Hit, config: Config, now: float) -> float | None:
    """How old the hit's file is for decay purposes, ``None`` when it does not decay."""
    date = dated_file(hit.path)
    if date is not None:
        return max(0.0, (now - date.timestamp()) / DAY)
    if is_evergreen(hit.path, hit.source):
        return None
    try:
        mtime = (config.workspace_path / hit.path).stat().st_mtime
    except OSError:
        return None
    return max(0.0, (now - mtime) / DAY)


def decay_factor(age: float | None, config: Config) -> float:
    """``floor + (1 − floor) × 0.5 ** (age / half_life)``; 1 for what does not decay."""
    if age is None:
        return 1.0
    decay = config.query.temporal_decay
    return float(decay.floor + (1.0 - decay.floor) * 0.5 ** (age / decay.half_life_days))


def decay_factors(hits: Sequence[Hit], config: Config, *, now: float) -> list[float]:
    """The temporal decay factor of each hit (ref §1.9, with a floor)."""
    ages: dict[tuple[str, str], float | None] = {}
    out = []
    for hit in hits:
        key = (hit.source, hit.path)
        if key not in ages:
            ages[key] = age_days(hit, config, now)
        out.append(decay_factor(ages[key], config))
    return out


def apply_decay(hits: Sequence[Hit], config: Config, *, now: float | None = None) -> list[Hit]:
    """Hits with scores multiplied by their decay factor."""
    now = time.time() if now is None else now
    factors = decay_factors(hits, config, now=now)
    return [dataclasses.replace(h, score=h.score * f) for h, f in zip(hits, factors, strict=True)]


def mmr_tokens(text: str) -> frozenset[str]:
    """Lower-case ASCII word tokens plus CJK unigrams and adjacent-CJK bigrams."""
    lowered = text.lower()
    tokens = set(_ASCII_TOKEN.findall(lowered))
    previous = ""
    for char in lowered:
        if CJK.match(char):
            tokens.add(char)
            if previous:
                tokens.add(previous + char)
            previous = char
        else:
            previous = ""
    return frozenset(tokens)


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    if not a and not b:
        return 1.0
    if not a or not b:
        return 0.0
    return len(a & b) / len(a | b)


def mmr_order(hits: Sequence[Hit], lambda_: float) -> list[tuple[int, float]]:
    """Greedy MMR on token Jaccard of snippets: ``(index, penalty)`` in the chosen order.

    The penalty is ``(1 − λ) × max similarity`` to the hits chosen before (ref §1.10).
    Each hit's max similarity is updated once per pick, so the cost is O(n²) Jaccards for
    n candidates (the candidate pool is 80 by default), not O(n³).
    """
    if lambda_ >= 1.0 or len(hits) < 2:
        return [(i, 0.0) for i in sorted(range(len(hits)), key=lambda i: -hits[i].score)]
    scores = [h.score for h in hits]
    low, high = min(scores), max(scores)
    rel = [1.0 if high == low else (s - low) / (high - low) for s in scores]
    tokens = [mmr_tokens(h.snippet) for h in hits]
    remaining = list(range(len(hits)))
    similarity = [0.0] * len(hits)  # max Jaccard to the hits chosen so far
    chosen: list[tuple[int, float]] = []
    while remaining:
        best = max(
            remaining,
            key=lambda i: (lambda_ * rel[i] - (1 - lambda_) * similarity[i], hits[i].score),
        )
        chosen.append((best, (1 - lambda_) * similarity[best]))
        remaining.remove(best)
        for i in remaining:
            similarity[i] = max(similarity[i], jaccard(tokens[i], tokens[best]))
    return chosen


def mmr(hits: Sequence[Hit], lambda_: float) -> list[Hit]:
    """Greedy MMR re-ordering on token Jaccard of snippets; scores are unchanged (ref §1.10)."""
    return [hits[i] for i, _ in mmr_order(hits, lambda_)]


def citations_on(mode: str, session_key: str | None) -> bool:
    """``on``/``off`` as given; ``auto`` decorates only direct chats (not channel or group keys)."""
    if mode != "auto":
        return mode == "on"
    if not session_key:
        return True
    rest = (
        session_key.split(":", 2)[2]
        if session_key.startswith("agent:") and session_key.count(":") >= 2
        else session_key
    )
    tokens = set(re.split(r"[:/]", rest.lower()))
    return not ({"channel", "group"} & tokens)


SOURCE = "\n\nSource: "
"""What comes between a hit's snippet and its citation when citations are on."""


def citation(hit: Hit) -> str:
    if hit.start_line == hit.end_line:
        return f"{hit.path}#L{hit.start_line}"
    return f"{hit.path}#L{hit.start_line}-L{hit.end_line}"


def clamp_budget(hits: Sequence[Hit], budget: int) -> list[Hit]:
    """Keep whole snippets while they fit, cut the first that does not, then stop (ref §1.12)."""
    if budget <= 0:
        return list(hits)
    out = []
    left = budget
    for hit in hits:
        if len(hit.snippet) <= left:
            out.append(hit)
            left -= len(hit.snippet)
            continue
        if left > 0:
            out.append(dataclasses.replace(hit, snippet=hit.snippet[:left]))
        break
    return out


def _explained(hit: Hit, *, decay: float, importance: float, score: float) -> Explain:
    """The explanation a backend pre-filled (or a new one) completed with the hit's side
    scores and the factors :func:`weigh` applied; ``relevance`` is the score before them."""
    base = hit.explain or Explain(relevance=hit.score, score=score)
    return dataclasses.replace(
        base,
        relevance=hit.score,
        score=score,
        vector_score=hit.vector_score,
        text_score=hit.text_score,
        decay=decay,
        importance=importance,
    )


def _relaxed(hit: Hit, why: str) -> Hit:
    if hit.explain is None:
        return hit
    return dataclasses.replace(hit, explain=dataclasses.replace(hit.explain, relaxed=why))


def with_keywords(hits: Sequence[Hit], query: str) -> list[Hit]:
    """Hits whose explanations name the query keywords their text (citation left out)
    holds."""
    out = []
    for hit in hits:
        if hit.explain is not None:
            found = matched_keywords(query, hit.snippet.split(SOURCE, 1)[0])
            hit = dataclasses.replace(hit, explain=dataclasses.replace(hit.explain, keywords=found))
        out.append(hit)
    return out


def _drop(hit: Hit, reason: str) -> Hit:
    assert hit.explain is not None
    return dataclasses.replace(hit, explain=dataclasses.replace(hit.explain, dropped=reason))


def weigh(result: BackendResult, config: Config, *, now: float, explain: bool = True) -> list[Hit]:
    """Candidates rescored by decay and entry weight, best first.

    With ``explain`` each carries an :class:`Explain`. Without it a hit whose score is
    unchanged is the backend's own (most are: decay and entry weight are often off or
    1), and one rescored carries a bare :class:`Explain` holding its ``relevance`` for
    :func:`select`: copying 80 candidates was a third of a warm search's shaping.
    """
    hits = result.hits
    q = config.query
    decays = decay_factors(hits, config, now=now) if q.temporal_decay.enabled else None
    weighed = []
    for index, hit in enumerate(hits):
        decay = decays[index] if decays else 1.0
        weight = entry_weight(hit.entry, config.entries.ranking, now=now) if hit.entry else 1.0
        score = min(1.0, max(0.0, hit.score * decay * weight))
        if explain:
            why = _explained(hit, decay=decay, importance=weight, score=score)
            weighed.append(dataclasses.replace(hit, score=score, explain=why))
        elif score != hit.score or (hit.explain and hit.explain.relevance != hit.score):
            why = Explain(relevance=hit.score, score=score)
            weighed.append(dataclasses.replace(hit, score=score, explain=why))
        else:
            weighed.append(hit)
    weighed.sort(key=lambda h: -h.score)
    if not q.mmr.enabled:
        return weighed
    order = mmr_order(weighed, q.mmr.lambda_)
    if not explain:
        return [weighed[index] for index, _ in order]
    ordered = []
    for index, penalty in order:
        chosen = weighed[index]
        assert chosen.explain is not None
        charged = dataclasses.replace(chosen.explain, mmr_penalty=penalty)
        ordered.append(dataclasses.replace(chosen, explain=charged))
    return ordered


TOLERANCE = 1e-9
"""How far under a threshold a score may be and still reach it: ``0.6 × 1/3`` is
``0.19999999999999998`` in floating point, and must pass ``min_score = 0.2``."""


def reaches(score: float, threshold: float) -> bool:
    """``score >= threshold``, forgiving floating-point error (:data:`TOLERANCE`)."""
    return score >= threshold - TOLERANCE


def select(
    hits: Sequence[Hit], result: BackendResult, request: SearchRequest, *, explain: bool = True
) -> tuple[list[Hit], list[Hit]]:
    """Min score (on relevance, before decay) with keyword relaxation.

    Returns ``(passing, dropped)`` (best first; :func:`shape_all` takes ``max_results`` of
    the passing ones); each dropped hit's explanation says why. Without ``explain``
    ``dropped`` is empty (nobody reads it, and a search has up to 200 candidates).
    """

    def relevance(hit: Hit) -> float:
        return hit.explain.relevance if hit.explain else hit.score

    passing = [h for h in hits if reaches(relevance(h), request.min_score)]
    if not passing and result.relaxed_min_score is not None:
        floor = min(request.min_score, result.relaxed_min_score)
        kept = [h for h in hits if h.text_score is not None and reaches(relevance(h), floor)]
        why = (
            f"under min_score = {request.min_score:g}, kept: nothing reached it, and the"
            f" backend's relaxation keeps keyword hits at {floor:g} or more"
        )
        passing = [_relaxed(h, why) for h in kept]
    if not explain:
        return passing, []
    chosen = {id(h) for h in passing}
    dropped = [
        _drop(h, f"relevance {relevance(h):.3f} under min_score = {request.min_score:g}")
        for h in hits
        if id(h) not in chosen
    ]
    return passing, dropped


def shape(
    result: BackendResult,
    request: SearchRequest,
    config: Config,
    *,
    session_key: str | None = None,
    explain: bool = False,
    now: float | None = None,
) -> list[Hit]:
    """Turn a backend's candidates into the hits a caller sees."""
    return shape_all(result, request, config, session_key=session_key, explain=explain, now=now)[0]


def shape_all(
    result: BackendResult,
    request: SearchRequest,
    config: Config,
    *,
    session_key: str | None = None,
    explain: bool = False,
    now: float | None = None,
) -> tuple[list[Hit], list[Hit]]:
    """``(hits, dropped)``: the answer, and (with ``explain``) the candidates left out.

    Without ``explain`` no hit carries an :class:`Explain` and ``dropped`` is empty.
    """
    q = config.query
    hits = weigh(result, config, now=time.time() if now is None else now, explain=explain)
    passing, dropped = select(hits, result, request, explain=explain)
    decorate = citations_on(config.citations, session_key)
    passages: list[Passage] = []
    shown: Shown = {}
    used = taken = 0
    for found in passing:
        if len(passages) >= request.max_results:
            break
        hit = trim_hit(found, shown)
        first, snippet = window(hit.snippet, request.query, q.max_snippet_chars)
        note_shown(hit, first, snippet, shown)
        before = len(passages)
        gather(passages, hit, first, snippet, offset=used, reading=q.merge_reading_chars)
        used += len(snippet)
        if decorate and len(passages) > before:  # a hit of its own: its Source line is read
            used += len(SOURCE) + len(citation(hit))
        taken += 1
    if explain:
        beyond = f"beyond max_results = {request.max_results}"
        dropped = [_drop(h, beyond) for h in passing[taken:]] + dropped
    shaped = []
    for passage in passages:
        hit = passage.hit()
        cite = citation(hit) if decorate else None
        snippet = f"{hit.snippet.strip()}{SOURCE}{cite}" if cite else hit.snippet
        why = hit.explain if explain else None  # dropped in the same copy: one a hit
        shaped.append(dataclasses.replace(hit, snippet=snippet, citation=cite, explain=why))
    final = clamp_budget(shaped, q.max_injected_chars)
    if not explain:
        return final, []
    over = [
        _drop(h, f"over max_injected_chars = {q.max_injected_chars}") for h in shaped[len(final) :]
    ]
    return with_keywords(final, request.query), with_keywords(over + dropped, request.query)


def entry_weight(entry: Entry, ranking: EntryRankingConfig, *, now: float) -> float:
    """The ranking multiplier of an entry, in (0, 1]; 1 when ranking is off.

    ``(1 − w + w × importance) × (f + (1 − f) × 0.5 ** (age_days / half_life_days))``
    with ``w = importance_weight`` and ``f = recency_floor``: an entry of importance 1
    stored now keeps its score; age alone never takes away more than ``1 − f``.
    """
    if not ranking.enabled:
        return 1.0
    w, floor = ranking.importance_weight, ranking.recency_floor
    importance = 1.0 - w + w * entry.importance
    age = max(0.0, (now - entry.created_at.timestamp()) / DAY)
    recency = floor + (1.0 - floor) * 0.5 ** (age / ranking.half_life_days)
    return float(importance * recency)
