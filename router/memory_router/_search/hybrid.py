"""The two legs of a hybrid search fused into hits, one way for every backend.

Backends find candidates (:class:`ScoredChunk`) on their own storage; how a keyword leg and a
vector leg become ranked :class:`Hit` results is the router's contract
(``query.hybrid.fusion``), so the built-in and LanceDB backends call this one function;
and how a keyword leg alone is scored (:func:`keyword_chunks`), so that a keyword-only
score means what a hybrid one does.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from .._config.config import HybridConfig
from .._types import Explain, Hit, ScoredChunk
from .calibration import vector_scale
from .fusion import Ranked, fuse_ranked, keyword_only_ranked
from .snippets import best_keyword_coverage, keyword_shares


def fuse_chunks(
    hybrid: HybridConfig,
    vector: Mapping[str, ScoredChunk],
    keyword: Mapping[str, ScoredChunk],
    *,
    query: str,
    model: str | None,
    backend: str,
    limit: int | None = None,
    explain: bool = True,
) -> list[Hit]:
    """Fuse a vector leg and a keyword leg (chunk id → candidate) into hits, best first.

    ``model`` names the embedding model whose cosine scale calibrates the vector leg
    (``None`` when there is no embedder). Where both legs hold a chunk, the keyword leg's
    text is kept, as OpenClaw does (reference §1.7). With ``explain`` (as
    :attr:`SearchRequest.explain` asks) each hit carries an :class:`Explain` with the
    fused score and each leg's part of it. ``limit``: only the best ``limit`` hits are
    made (``None``: all).
    """
    scores = {k: r.score for k, r in vector.items()}
    fused = _fused(hybrid, scores, keyword, query=query, model=model, limit=limit)
    return _hits(hybrid, fused, {**vector, **keyword}, backend, explain)


def fuse_nearest(
    hybrid: HybridConfig,
    vector: Mapping[str, float],
    keyword: Mapping[str, ScoredChunk],
    *,
    read: Callable[[list[str]], Mapping[str, ScoredChunk]],
    query: str,
    model: str | None,
    backend: str,
    limit: int | None = None,
    explain: bool = True,
) -> list[Hit]:
    """:func:`fuse_chunks` for a vector leg known by its scores (chunk id → cosine):
    ``read(ids)`` gives the chunks of the vector candidates kept that the keyword leg does
    not hold, so a backend reads only those (fusion needs no vector candidate's text).

    A chunk ``read`` does not return (gone since the vectors were loaded) is left out
    and the legs fused again without it.
    """
    scores = dict(vector)
    while True:
        fused = _fused(hybrid, scores, keyword, query=query, model=model, limit=limit)
        wanted = [f.id for f in fused if f.id not in keyword]
        rows = read(wanted) if wanted else {}
        gone = [i for i in wanted if i not in rows]
        if not gone:
            return _hits(hybrid, fused, {**rows, **keyword}, backend, explain)
        for chunk_id in gone:
            del scores[chunk_id]


def _fused(
    hybrid: HybridConfig,
    vector: Mapping[str, float],
    keyword: Mapping[str, ScoredChunk],
    *,
    query: str,
    model: str | None,
    limit: int | None,
) -> list[Ranked]:
    coverage, weighted = keyword_shares(query, {k: r.text for k, r in keyword.items()})
    return fuse_ranked(
        hybrid.fusion,
        vector,
        {k: r.score for k, r in keyword.items()},
        vector_weight=hybrid.vector_weight,
        text_weight=hybrid.text_weight,
        scale=vector_scale(model) if model is not None else None,
        coverage=coverage,
        weighted_coverage=weighted,
        limit=limit,
    )


def _hits(
    hybrid: HybridConfig,
    fused: list[Ranked],
    rows: Mapping[str, ScoredChunk],
    backend: str,
    explain: bool,
) -> list[Hit]:
    """Each fused candidate's hit, from its chunk in ``rows`` (with an :class:`Explain`
    when ``explain``)."""
    if not explain:
        return [rows[f.id].hit(backend, f.score, f.vector, f.text) for f in fused]
    return [
        rows[f.id].hit(
            backend,
            f.score,
            f.vector,
            f.text,
            explain=Explain(
                relevance=f.score,
                score=f.score,
                vector_part=f.vector_part,
                text_part=f.text_part,
                fusion=hybrid.fusion,
                support=f.support,
                vector_norm=f.vector_norm,
            ),
        )
        for f in fused
    ]


KEYWORD_ONLY = "keyword"
""":attr:`Explain.fusion` of a keyword-only hit."""


def keyword_chunks(
    keyword: Mapping[str, ScoredChunk], *, query: str, backend: str, explain: bool = True
) -> list[Hit]:
    """Score a keyword leg alone (keyword-only search) on the scale of the hybrid one
    (:func:`~memory_router._search.fusion.keyword_only_fusion`).

    BM25's order is kept; every score is its BM25 divided by the query's best, times a
    factor for how much of the question the best-covered chunk holds: 1 for every keyword,
    0.44 for two of three, 0.125 for one of two — under the default ``min_score`` (0.2).
    Keyword search cannot tell a paraphrase that shares one word from an unrelated
    question that does, so such a match is no longer a confident hit: an empty answer
    then says so (``below_min_score``). Each hit carries an :class:`Explain` when
    ``explain``.
    """
    fused = {
        f.id: f
        for f in keyword_only_ranked(
            {k: r.score for k, r in keyword.items()},
            best_keyword_coverage(query, (r.text for r in keyword.values())),
        )
    }
    # Best first; ties keep the leg's order (the backend's: BM25, then rowid), not the
    # fusion's tie-break by id, so a keyword-only answer is the one BM25 query's.
    ranked = sorted((fused[k] for k in keyword), key=lambda f: -f.score)
    if not explain:
        return [keyword[f.id].hit(backend, f.score, None, f.text) for f in ranked]
    return [
        keyword[f.id].hit(
            backend,
            f.score,
            None,
            f.text,
            explain=Explain(
                relevance=f.score,
                score=f.score,
                text_part=f.text_part,
                fusion=KEYWORD_ONLY,
                support=f.support,
            ),
        )
        for f in ranked
    ]
