"""Hybrid fusion: how a vector list and a keyword list become one ranked list.

Every function takes the two sides as ``{id: score}`` mappings (higher is better; a side
that did not find an id simply lacks it) and returns :class:`Fused` values sorted best
first, ties broken by id so the order is deterministic. Scores are in [0, 1].

* :func:`weighted_fusion` — OpenClaw's merge: ``vw × vector + tw × text``, a missing side
  counts 0. Raw side scores are used as given (cosine; ``bm25_to_score``).
* :func:`convex_fusion` — the default: each side normalised, then ``vw × v + tw × t``.
  The keyword side is BM25 divided by the query's best (its theoretical lower bound, no
  match, is 0), so BM25's spread survives instead of being squashed by ``x / (1 + x)``,
  and times the share of the query's keywords the chunk holds (:func:`keyword_coverage`),
  each keyword weighted by its rarity among the candidates. The vector
  side is mapped through the model's calibration (:class:`VectorScale`): cosine at the
  model's noise level is 0, a near-duplicate is 1. So a vector hit keeps an absolute
  meaning and ``min_score`` can drop noise, while the keyword side ranks by its own spread.
  Both sides are then scaled by the query's *support* (:func:`query_support`): when no
  candidate holds more than part of the question's keywords and none is close in meaning,
  the memory most likely does not hold the answer, and no hit scores as if it did.
* :func:`keyword_only_fusion` — a keyword list alone on ``convex``'s scale (its support).
* :func:`minmax_fusion` — both sides min-max normalised over their candidates.
* :func:`rrf_fusion` — weighted reciprocal rank fusion, ``Σ w / (k + rank)``, divided by its
  maximum (rank 1 on every side) so the best possible score is 1.
* :func:`zscore_fusion` — each side as z-scores, combined, squashed by the logistic.

Backends that offer hybrid search call :func:`fuse` with the configured method, so every
backend's hybrid has the same semantics.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal, NamedTuple

from .keywords import score_to_bm25

FusionMethod = Literal["convex", "minmax", "rrf", "zscore", "weighted"]
FUSION_METHODS: tuple[FusionMethod, ...] = ("convex", "minmax", "rrf", "zscore", "weighted")
RRF_K = 60
"""The usual RRF constant (Cormack et al. 2009); not tuned to any benchmark here."""
MATCH_LEVEL = 0.5
"""A calibrated cosine (:class:`VectorScale`) at which a model's matches and its noise cross:
each calibration maps that cosine here (``memory_router._search.calibration``)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Fused:
    """One fused candidate: its id, fused ``score`` and each side's raw score.

    ``vector`` / ``text`` are the scores the sides gave (``None``: that side did not find
    it); ``vector_part`` / ``text_part`` are the weighted contributions, which add up to
    ``score``; ``support`` is the factor both were scaled by (:func:`query_support`; 1
    for the other methods); ``vector_norm`` the vector score as the method normalised it.
    """

    id: str
    score: float
    vector: float | None
    text: float | None
    vector_part: float = 0.0
    text_part: float = 0.0
    support: float = 1.0
    vector_norm: float | None = None


class Ranked(NamedTuple):
    """:class:`Fused`'s fields as a tuple: what a search's own fusion passes on (a search
    fuses up to 160 candidates, and making each a frozen dataclass took 2.4 µs, a
    twentieth of a warm search); the public functions return :class:`Fused`."""

    id: str
    score: float
    vector: float | None
    text: float | None
    vector_part: float
    text_part: float
    support: float
    vector_norm: float | None

    def fused(self) -> Fused:
        return Fused(**self._asdict())

    @classmethod
    def of(cls, fused: Fused) -> Ranked:
        return cls._make(getattr(fused, name) for name in cls._fields)


@dataclass(frozen=True, slots=True, kw_only=True)
class VectorScale:
    """A model's cosine calibration: ``floor`` maps to 0 (unrelated text), ``ceiling`` to 1."""

    floor: float = 0.0
    ceiling: float = 1.0

    def __call__(self, cosine: float) -> float:
        span = self.ceiling - self.floor
        if span <= 0:
            return 1.0 if cosine >= self.ceiling else 0.0
        return min(1.0, max(0.0, (cosine - self.floor) / span))


def _combine(
    vector: Mapping[str, float],
    text: Mapping[str, float],
    v_norm: Mapping[str, float],
    t_norm: Mapping[str, float],
    vector_weight: float,
    text_weight: float,
    support: float = 1.0,
    limit: int | None = None,
) -> list[Fused]:
    """:func:`_ranked` as :class:`Fused` values."""
    ranked = _ranked(vector, text, v_norm, t_norm, vector_weight, text_weight, support, limit)
    return [r.fused() for r in ranked]


def _ranked(
    vector: Mapping[str, float],
    text: Mapping[str, float],
    v_norm: Mapping[str, float],
    t_norm: Mapping[str, float],
    vector_weight: float,
    text_weight: float,
    support: float = 1.0,
    limit: int | None = None,
) -> list[Ranked]:
    """Every candidate fused, best first (ties by id); only the best ``limit`` are made.

    A search fuses up to 160 candidates: the loop is kept lean (bound methods, no
    ``min``/``max`` calls; the same arithmetic in the same order)."""
    v_weight, t_weight = support * vector_weight, support * text_weight
    v_get, t_get = v_norm.get, t_norm.get
    ranked = []
    for key in {**vector, **text}:
        v_part = v_weight * v_get(key, 0.0)
        t_part = t_weight * t_get(key, 0.0)
        score = v_part + t_part
        score = score if score > 0.0 else 0.0  # clamped to [0, 1] (NaN to 0)
        score = score if score < 1.0 else 1.0
        ranked.append((-score, key, score, v_part, t_part))
    ranked.sort()  # by score, then id (ids are unique: nothing further is compared)
    vector_get, text_get = vector.get, text.get
    return [
        Ranked(key, score, vector_get(key), text_get(key), v_part, t_part, support, v_get(key))
        for _, key, score, v_part, t_part in ranked[:limit]
    ]


def minor_share(share: float, closeness: float) -> float:
    """What a keyword match holding ``share`` of the question's keywords counts for, given
    its calibrated cosine ``closeness``: the share itself, except for a minor part (at most
    half) of the keywords, which counts again unless the chunk is close in meaning
    (``share × (share + (1 − share) × min(1, closeness / MATCH_LEVEL))``).

    So a chunk holding "order" of "what coffee do I order", with a cosine at noise level,
    counts 1/4 instead of 1/2; one at the model's match level counts 1/2 as before.
    """
    if share > 0.5 + 1e-9:
        return share
    return share * (share + (1.0 - share) * min(1.0, closeness / MATCH_LEVEL))


def query_support(v_norm: Mapping[str, float], coverage: Mapping[str, float]) -> float:
    """How much of the question the memory holds at all, from 0 to 1: the largest share of
    its keywords one keyword candidate holds (``coverage``), or the closest calibrated
    cosine over :data:`MATCH_LEVEL`, whichever is larger; 1 when there are no keyword
    candidates.

    "What coffee do I order" against notes that never mention coffee: the best keyword
    candidate holds "order" only (1/2) and no chunk is close in meaning, so the support is
    1/2. It is one factor per query, so it never reorders a query's hits; it only lowers
    what all of them claim.
    """
    if not coverage:
        return 1.0
    closest = max(v_norm.values(), default=0.0) / MATCH_LEVEL
    return min(1.0, max(max(coverage.values()), closest))


def keyword_only_fusion(text: Mapping[str, float], coverage: float) -> list[Fused]:
    """A keyword list alone (keyword-only search), ranked by its scores, on the scale of
    ``convex``: each score divided by the best, times a support factor for the query —
    the largest share of its keywords one candidate holds (``coverage``,
    :func:`~memory_router._search.snippets.best_keyword_coverage`), counted as
    :func:`minor_share` counts it with nothing to vouch for the meaning, times that share
    again (``S × minor_share(S, 0)``: 1 when a candidate holds every keyword, 4/9 for two
    of three, 1/8 for one of two).

    One factor per query, so BM25's order is kept (a per-hit share cost LoCoMo 0.008 of
    its reading-budget recall); it decides what the answer claims: a question the memory
    holds one word of scores under the default ``min_score`` everywhere.
    """
    return [r.fused() for r in keyword_only_ranked(text, coverage)]


def keyword_only_ranked(text: Mapping[str, float], coverage: float) -> list[Ranked]:
    """:func:`keyword_only_fusion` as :class:`Ranked` tuples."""
    support = coverage * minor_share(coverage, 0.0)
    return _ranked({}, text, {}, max_scaled(text), 0.0, 1.0, support)


def censored_bound(v_norm: Mapping[str, float], text: Mapping[str, float]) -> dict[str, float]:
    """The vector side for every candidate: a keyword candidate the vector leg did not
    return gets the leg's lowest (calibrated) score instead of 0.

    The vector leg is the ``candidates`` nearest chunks, so a chunk it left out has a
    cosine *at most* its last one — not an unrelated text's. Counting it as 0 took up to
    the whole vector weight from a chunk BM25 ranks first (LoCoMo's "Which country were
    Jolene and her mother visiting in 2010?": the answer turn, best BM25 of the query,
    fell from rank 1 to 7 behind chunks both legs held). With no vector leg at all nothing
    is filled in. A vector candidate the keyword leg left out keeps 0 on that side (most
    often it holds none of the question's keywords; the symmetric bound was not measured).
    """
    out = dict(v_norm)
    if not out:
        return out
    low = min(out.values())
    for key in text:
        out.setdefault(key, low)
    return out


def minmax(scores: Mapping[str, float]) -> dict[str, float]:
    """Scores rescaled to [0, 1] over the list; all-equal scores all become 1."""
    if not scores:
        return {}
    low, high = min(scores.values()), max(scores.values())
    if high == low:
        return dict.fromkeys(scores, 1.0)
    return {k: (s - low) / (high - low) for k, s in scores.items()}


def max_scaled(scores: Mapping[str, float]) -> dict[str, float]:
    """Scores divided by the best one (0 stays 0: "no match" is the lower bound)."""
    if not scores:
        return {}
    high = max(scores.values())
    if high <= 0:
        return dict.fromkeys(scores, 0.0)
    return {k: max(0.0, s) / high for k, s in scores.items()}


def weighted_fusion(
    vector: Mapping[str, float],
    text: Mapping[str, float],
    *,
    vector_weight: float = 0.7,
    text_weight: float = 0.3,
) -> list[Fused]:
    """OpenClaw's merge (ref §1.7): ``vw × vector + tw × text`` on the raw side scores."""
    return _combine(vector, text, vector, text, vector_weight, text_weight)


def convex_fusion(
    vector: Mapping[str, float],
    text: Mapping[str, float],
    *,
    vector_weight: float = 0.7,
    text_weight: float = 0.3,
    scale: VectorScale | None = None,
    coverage: Mapping[str, float] | None = None,
    weighted_coverage: Mapping[str, float] | None = None,
    limit: int | None = None,
) -> list[Fused]:
    """Calibrated cosine and best-scaled BM25 in a convex combination, best first (only
    the best ``limit`` when given).

    The keyword side is each candidate's BM25 (:func:`~memory_router.kit.bm25_to_score`
    undone) divided by the query's best. ``coverage`` (id → share of the query's keywords
    the chunk holds, see :func:`~memory_router.kit.keyword_coverage`) gives the
    :func:`query_support` both sides are scaled by, so a question the memory holds only
    one word of scores low everywhere; ``weighted_coverage`` (the same share with each
    keyword weighted by its rarity among the candidates; ``coverage`` when not given)
    multiplies the keyword side, so one common word shared with a long question — a
    speaker's name — does not count as a keyword match.
    """
    ranked = _convex(
        vector, text, vector_weight, text_weight, scale, coverage, weighted_coverage, limit
    )
    return [r.fused() for r in ranked]


def _convex(
    vector: Mapping[str, float],
    text: Mapping[str, float],
    vector_weight: float,
    text_weight: float,
    scale: VectorScale | None,
    coverage: Mapping[str, float] | None,
    weighted_coverage: Mapping[str, float] | None,
    limit: int | None,
) -> list[Ranked]:
    """:func:`convex_fusion` as :class:`Ranked` tuples."""
    scale = scale or VectorScale()
    v_norm = censored_bound({k: scale(s) for k, s in vector.items()}, text)
    t_norm = max_scaled({k: score_to_bm25(s) for k, s in text.items()})
    if coverage is None:
        return _ranked(vector, text, v_norm, t_norm, vector_weight, text_weight, limit=limit)
    shares = {k: coverage.get(k, 1.0) for k in t_norm}
    ranked = weighted_coverage if weighted_coverage is not None else shares
    t_norm = {k: s * minor_share(ranked.get(k, 1.0), v_norm.get(k, 0.0)) for k, s in t_norm.items()}
    support = query_support(v_norm, shares)
    return _ranked(vector, text, v_norm, t_norm, vector_weight, text_weight, support, limit)


def minmax_fusion(
    vector: Mapping[str, float],
    text: Mapping[str, float],
    *,
    vector_weight: float = 0.7,
    text_weight: float = 0.3,
) -> list[Fused]:
    """Both sides min-max normalised over their own candidates, then combined."""
    return _combine(vector, text, minmax(vector), minmax(text), vector_weight, text_weight)


def _ranks(scores: Mapping[str, float]) -> dict[str, int]:
    """1-based ranks, best first; equal scores share the best rank of their group."""
    ordered = sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))
    ranks: dict[str, int] = {}
    previous: float | None = None
    rank = 0
    for position, (key, score) in enumerate(ordered, start=1):
        if score != previous:
            rank, previous = position, score
        ranks[key] = rank
    return ranks


def rrf_fusion(
    vector: Mapping[str, float],
    text: Mapping[str, float],
    *,
    vector_weight: float = 0.5,
    text_weight: float = 0.5,
    k: int = RRF_K,
) -> list[Fused]:
    """Weighted reciprocal rank fusion, scaled so rank 1 on both sides scores 1."""
    top = (vector_weight + text_weight) / (k + 1)
    if top <= 0:
        return _combine(vector, text, {}, {}, 0.0, 0.0)
    v_norm = {key: (k + 1) / (k + r) for key, r in _ranks(vector).items()}
    t_norm = {key: (k + 1) / (k + r) for key, r in _ranks(text).items()}
    total = vector_weight + text_weight
    return _combine(vector, text, v_norm, t_norm, vector_weight / total, text_weight / total)


def _z(scores: Mapping[str, float]) -> dict[str, float]:
    if not scores:
        return {}
    import statistics  # here: it pulls in decimal and fractions, which start-up need not

    values = list(scores.values())
    mean = statistics.fmean(values)
    spread = statistics.pstdev(values) if len(values) > 1 else 0.0
    if spread == 0:
        return dict.fromkeys(scores, 0.0)
    return {k: (s - mean) / spread for k, s in scores.items()}


def zscore_fusion(
    vector: Mapping[str, float],
    text: Mapping[str, float],
    *,
    vector_weight: float = 0.7,
    text_weight: float = 0.3,
) -> list[Fused]:
    """Each side's z-scores, weighted and squashed into [0, 1] by the logistic.

    A side that did not find a candidate contributes that side's lowest z minus one.
    """
    zv, zt = _z(vector), _z(text)
    low_v = min(zv.values(), default=0.0) - 1.0
    low_t = min(zt.values(), default=0.0) - 1.0
    fused = []
    for key in {**vector, **text}:
        v_part = vector_weight * zv.get(key, low_v if zv else 0.0)
        t_part = text_weight * zt.get(key, low_t if zt else 0.0)
        score = 1.0 / (1.0 + math.exp(-(v_part + t_part)))
        # Parts are reported as shares of the squashed score, so they still add up to it.
        total = abs(v_part) + abs(t_part)
        v_share = abs(v_part) / total if total else 0.5
        fused.append(
            Fused(
                id=key,
                score=score,
                vector=vector.get(key),
                text=text.get(key),
                vector_part=score * v_share,
                text_part=score * (1 - v_share),
            )
        )
    fused.sort(key=lambda f: (-f.score, f.id))
    return fused


def fuse(
    method: FusionMethod,
    vector: Mapping[str, float],
    text: Mapping[str, float],
    *,
    vector_weight: float = 0.7,
    text_weight: float = 0.3,
    scale: VectorScale | None = None,
    coverage: Mapping[str, float] | None = None,
    weighted_coverage: Mapping[str, float] | None = None,
    limit: int | None = None,
) -> list[Fused]:
    """Fuse two candidate lists with ``method`` (one of :data:`FUSION_METHODS`), best
    first: all of them, or the best ``limit``.

    ``scale`` (the vector side's calibration), ``coverage`` and ``weighted_coverage`` are
    used by ``convex`` only.
    """
    ranked = fuse_ranked(
        method,
        vector,
        text,
        vector_weight=vector_weight,
        text_weight=text_weight,
        scale=scale,
        coverage=coverage,
        weighted_coverage=weighted_coverage,
        limit=limit,
    )
    return [r.fused() for r in ranked]


def fuse_ranked(
    method: FusionMethod,
    vector: Mapping[str, float],
    text: Mapping[str, float],
    *,
    vector_weight: float = 0.7,
    text_weight: float = 0.3,
    scale: VectorScale | None = None,
    coverage: Mapping[str, float] | None = None,
    weighted_coverage: Mapping[str, float] | None = None,
    limit: int | None = None,
) -> list[Ranked]:
    """:func:`fuse` as :class:`Ranked` tuples (``convex`` makes no :class:`Fused`)."""
    if method != "convex":
        fused = _fuse_other(method, vector, text, vector_weight, text_weight)[:limit]
        return [Ranked.of(f) for f in fused]
    return _convex(
        vector, text, vector_weight, text_weight, scale, coverage, weighted_coverage, limit
    )


def _fuse_other(
    method: FusionMethod,
    vector: Mapping[str, float],
    text: Mapping[str, float],
    vw: float,
    tw: float,
) -> list[Fused]:
    if method == "minmax":
        return minmax_fusion(vector, text, vector_weight=vw, text_weight=tw)
    if method == "rrf":
        return rrf_fusion(vector, text, vector_weight=vw, text_weight=tw)
    if method == "zscore":
        return zscore_fusion(vector, text, vector_weight=vw, text_weight=tw)
    if method == "weighted":
        return weighted_fusion(vector, text, vector_weight=vw, text_weight=tw)
    raise ValueError(f"unknown fusion method {method!r}; expected one of {FUSION_METHODS}")
