"""Answers that explain themselves: hits found under ``min_score``."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from .._config.config import Config
from .._types import BackendResult, BelowMinScore, SearchRequest, SearchResponse
from .ranking import apply_decay, reaches


def with_below_min_score(
    response: SearchResponse, result: BackendResult, request: SearchRequest, config: Config
) -> SearchResponse:
    """``response``, saying how many hits (score > 0) were found under ``min_score`` when
    it is empty."""
    if response.results or not result.hits or request.min_score <= 0:
        return response
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
    below = BelowMinScore(count=len(hits), best_score=best, min_score=request.min_score)
    return dataclasses.replace(response, below_min_score=below)


def below_min_score_line(below: Mapping[str, Any]) -> str:
    """The sentence the CLI prints for an empty answer that had hits under the threshold.

    ``below`` is :class:`BelowMinScore` as a dict (as JSON carries it).
    """
    best = float(below["best_score"])
    floor = int(best * 100) / 100
    return (
        f"{below['count']} hit(s) scored below min_score {float(below['min_score']):g}"
        f" (best {best:.3f}); see them with --min-score {floor:g}"
    )
