"""Shared result shaping, applied to every backend's candidates (ref §1.7–1.12).

Order: temporal decay → sort → MMR → min score (with keyword relaxation) → max results →
snippet cap → citations → injection budget.
"""

from __future__ import annotations

import dataclasses
import math
import re
import time
from collections.abc import Sequence
from datetime import UTC, datetime

from ._config import Config
from ._entries import weigh_entry_hits
from ._types import BackendResult, Hit, SearchRequest

_DATED = re.compile(r"(?:^|/)memory/(?:.*/)?(\d{4})-(\d{2})-(\d{2})(?:-[^/]*)?\.md$")
_ASCII_TOKEN = re.compile(r"[a-z0-9_]+")
_CJK = re.compile(
    r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\u1100-\u11ff\u3130-\u318f]"
)
DAY = 86400.0


def dated_file(path: str) -> datetime | None:
    """The date in a dated memory file name (``memory/2026-01-31.md``, nested or suffixed)."""
    match = _DATED.search(path)
    if not match:
        return None
    try:
        return datetime(int(match[1]), int(match[2]), int(match[3]), tzinfo=UTC)
    except ValueError:
        return None


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


def apply_decay(hits: Sequence[Hit], config: Config, *, now: float | None = None) -> list[Hit]:
    """Multiply scores by ``exp(-ln2 / half_life × age)`` (ref §1.9)."""
    now = time.time() if now is None else now
    rate = math.log(2) / config.query.temporal_decay.half_life_days
    ages: dict[tuple[str, str], float | None] = {}
    out = []
    for hit in hits:
        key = (hit.source, hit.path)
        if key not in ages:
            ages[key] = age_days(hit, config, now)
        age = ages[key]
        out.append(
            hit
            if age is None
            else dataclasses.replace(hit, score=hit.score * math.exp(-rate * age))
        )
    return out


def mmr_tokens(text: str) -> frozenset[str]:
    """Lower-case ASCII word tokens plus CJK unigrams and adjacent-CJK bigrams."""
    lowered = text.lower()
    tokens = set(_ASCII_TOKEN.findall(lowered))
    previous = ""
    for char in lowered:
        if _CJK.match(char):
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


def mmr(hits: Sequence[Hit], lambda_: float) -> list[Hit]:
    """Greedy MMR re-ordering on token Jaccard of snippets; scores are unchanged (ref §1.10)."""
    if lambda_ >= 1.0 or len(hits) < 2:
        return sorted(hits, key=lambda h: -h.score)
    scores = [h.score for h in hits]
    low, high = min(scores), max(scores)
    rel = [1.0 if high == low else (s - low) / (high - low) for s in scores]
    tokens = [mmr_tokens(h.snippet) for h in hits]
    remaining = list(range(len(hits)))
    chosen: list[int] = []
    while remaining:

        def value(i: int) -> tuple[float, float]:
            similarity = max((jaccard(tokens[i], tokens[j]) for j in chosen), default=0.0)
            return (lambda_ * rel[i] - (1 - lambda_) * similarity, hits[i].score)

        best = max(remaining, key=value)
        chosen.append(best)
        remaining.remove(best)
    return [hits[i] for i in chosen]


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


def select(result: BackendResult, request: SearchRequest) -> list[Hit]:
    """Min score with keyword relaxation, then max results."""
    passing = [h for h in result.hits if h.score >= request.min_score]
    if not passing and result.relaxed_min_score is not None:
        floor = min(request.min_score, result.relaxed_min_score)
        passing = [h for h in result.hits if h.text_score is not None and h.score >= floor]
    return passing[: request.max_results]


def shape(
    result: BackendResult, request: SearchRequest, config: Config, *, session_key: str | None = None
) -> list[Hit]:
    """Turn a backend's candidates into the hits a caller sees."""
    q = config.query
    hits = list(result.hits)
    if q.temporal_decay.enabled:
        hits = apply_decay(hits, config)
    hits = weigh_entry_hits(hits, config, now=time.time())
    hits.sort(key=lambda h: -h.score)
    if q.mmr.enabled:
        hits = mmr(hits, q.mmr.lambda_)
    hits = select(dataclasses.replace(result, hits=tuple(hits)), request)
    decorate = citations_on(config.citations, session_key)
    shaped = []
    for hit in hits:
        snippet = hit.snippet[: q.max_snippet_chars]
        cite = None
        if decorate:
            cite = citation(hit)
            snippet = f"{snippet.strip()}\n\nSource: {cite}"
        shaped.append(dataclasses.replace(hit, snippet=snippet, citation=cite))
    return clamp_budget(shaped, q.max_injected_chars)
