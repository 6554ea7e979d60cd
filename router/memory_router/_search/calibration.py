"""Score calibration per embedding model: what a cosine means, and the default ``min_score``.

A cosine of 0.3 is noise for one model and a paraphrase for another, so a single threshold
cannot serve all. :func:`vector_scale` maps a model's cosine into [0, 1] (its noise level
to 0, a near-duplicate to 1) for :func:`~memory_router.kit.convex_fusion`,
so that the one default ``min_score`` (0.2) keeps a true paraphrase and drops noise
with every calibrated model. The numbers were measured with ``memory-router bench`` (see
docs/performance.md, "Scores that mean something"); a model that is not listed keeps raw
cosine and the configured ``query.min_score``.
"""

from __future__ import annotations

from .fusion import VectorScale

# model id (without provider prefix) → its cosine calibration. ``bench/calibrate.py`` on
# LoCoMo (302 questions): the best evidence chunk of a question scores cosine 0.265 / 0.491
# / 0.647 (5th / 50th / 95th percentile), the best chunk of another conversation 0.176 /
# 0.286 / 0.405; they cross at 0.356 (84 % of matches above, 84 % of noise below). The
# floor is where noise starts (≈ its 5th percentile); the ceiling puts that crossing at
# exactly the default ``min_score`` for a vector-only hit: 0.4 × scale(0.356) = 0.2 (the
# default vector weight 0.4; it was 0.7 × 0.5 = 0.35 with OpenClaw's weights — the same
# cosine, so the threshold keeps its meaning when the weights move together with it).
_SCALES: dict[str, VectorScale] = {
    "all-MiniLM-L6-v2": VectorScale(floor=0.15, ceiling=0.56),
}


def _bare(model: str) -> str:
    return model.rsplit("/", 1)[-1].removesuffix(".gguf")


def vector_scale(model: str | None) -> VectorScale:
    """The cosine calibration of ``model``; identity (raw cosine) when it is not known."""
    if not model:
        return VectorScale()
    return _SCALES.get(_bare(model), VectorScale())
