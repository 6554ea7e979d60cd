"""Answers that explain themselves: hits found under ``min_score``, degraded answers.

One home for what a caller — a person at the CLI, an agent over MCP or HTTP — is told
when an answer is empty although the memory held candidates (:func:`with_below_min_score`)
and when it is less complete than usual (:func:`degraded`), with what to do about it.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import Any

from .._config.config import Config
from .._types import BackendResult, BelowMinScore, Degraded, SearchRequest, SearchResponse
from .ranking import apply_decay, reaches

KEYWORD_MODES = ("keyword", "keyword-from-markdown")


def show_with(best: float) -> float:
    """A ``min_score`` that shows a hit scoring ``best``: ``best`` rounded down to two
    decimals (never above it)."""
    return math.floor(best * 100) / 100


def with_below_min_score(
    response: SearchResponse, result: BackendResult, request: SearchRequest, config: Config
) -> SearchResponse:
    """``response``, saying how many hits (score > 0) were found under ``min_score`` when
    it is empty, or that its hits are all under it (kept by the backend's relaxation)."""
    if not result.hits or request.min_score <= 0:
        return response
    if response.results:
        return _kept(response, result, request)
    # A hit that scored 0 matched nothing (a vector candidate under the calibrated
    # floor): it is not "found under the threshold", and would only make noise look close.
    hits = [h for h in result.hits if h.score > 0]
    if not hits:
        return response
    if config.query.temporal_decay.enabled:
        hits = apply_decay(hits, config)
    best = max(h.score for h in hits)
    if reaches(best, request.min_score):
        return response
    below = BelowMinScore(
        count=len(hits), best_score=best, min_score=request.min_score, show_with=show_with(best)
    )
    return dataclasses.replace(response, below_min_score=below)


def _kept(
    response: SearchResponse, result: BackendResult, request: SearchRequest
) -> SearchResponse:
    """``response`` marked as relaxed when no candidate's relevance reached ``min_score``
    (:func:`~memory_router._search.ranking.select` then keeps the keyword hits)."""
    if result.relaxed_min_score is None:
        return response
    best = max(h.score for h in result.hits)
    if reaches(best, request.min_score):
        return response
    below = BelowMinScore(
        count=len(response.results),
        best_score=best,
        min_score=request.min_score,
        show_with=show_with(best),
        kept=True,
    )
    return dataclasses.replace(response, below_min_score=below)


def degraded(response: SearchResponse, request: SearchRequest) -> Degraded | None:
    """Why ``response`` may be less complete than usual: another backend answered, or a
    router with embeddings answered by keywords alone (the query could not be embedded,
    or the index is still being built); ``None`` for a normal answer."""
    reasons = []
    if response.fallback is not None:
        failed = ", ".join(f"{a.from_} ({a.reason})" for a in response.attempts)
        reasons.append(f"answered by {response.backend} because {failed or 'a backend'} failed")
    keyword_only = response.mode in KEYWORD_MODES and request.mode != "keyword"
    if keyword_only and response.model is not None:
        why = "its index is still being built" if response.mode == KEYWORD_MODES[1] else ""
        why = why or "; ".join(n for n in response.notes if "embedding" in n) or "no vectors"
        reasons.append(
            f"keyword search only ({why}): a question that shares no word with a note is not found"
        )
    if response.provider_fallback is not None:
        event = response.provider_fallback
        reasons.append(
            f"embedded by a fallback provider because {event.from_} failed ({event.reason})"
        )
    if not reasons:
        return None
    action = (
        "Use what was found, but do not conclude that the memory lacks something: retry in a"
        " minute, or search again with words a note would use; memory_status shows the cause."
    )
    return Degraded(reason="; ".join(reasons), action=action)


def with_guidance(
    response: SearchResponse, result: BackendResult, request: SearchRequest, config: Config
) -> SearchResponse:
    """``response`` with :func:`with_below_min_score` and :func:`degraded` applied."""
    response = with_below_min_score(response, result, request, config)
    return dataclasses.replace(response, degraded=degraded(response, request))


def below_min_score_line(below: Mapping[str, Any]) -> str:
    """The sentence the CLI prints for an empty answer that had hits under the threshold.

    ``below`` is :class:`BelowMinScore` as a dict (as JSON carries it).
    """
    best = float(below["best_score"])
    floor = below.get("show_with", show_with(best))
    if below.get("kept"):
        return (
            f"All {below['count']} hit(s) scored below min_score {float(below['min_score']):g}"
            f" (best {best:.3f}): nothing reached it, so the closest keyword matches are shown"
        )
    return (
        f"{below['count']} hit(s) scored below min_score {float(below['min_score']):g}"
        f" (best {best:.3f}); see them with --min-score {float(floor):g}"
    )
