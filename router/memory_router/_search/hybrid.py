"""The two legs of a hybrid search fused into hits, one way for every backend.

Backends find candidates (:class:`ScoredChunk`) on their own storage; how a keyword leg and a
vector leg become ranked :class:`Hit` results is the router's contract
(``query.hybrid.fusion``), so the built-in and LanceDB backends call this one function.
"""

from __future__ import annotations

from collections.abc import Mapping

from .._config.config import HybridConfig
from .._types import Explain, Hit, ScoredChunk
from .calibration import vector_scale
from .fusion import fuse
from .snippets import keyword_coverage


def fuse_chunks(
    hybrid: HybridConfig,
    vector: Mapping[str, ScoredChunk],
    keyword: Mapping[str, ScoredChunk],
    *,
    query: str,
    model: str | None,
    backend: str,
    limit: int | None = None,
) -> list[Hit]:
    """Fuse a vector leg and a keyword leg (chunk id → candidate) into hits, best first.

    ``model`` names the embedding model whose cosine scale calibrates the vector leg
    (``None`` when there is no embedder). Where both legs hold a chunk, the keyword leg's
    text is kept, as OpenClaw does (reference §1.7). Each hit carries an
    :class:`Explain` with the fused score and each leg's part of it. ``limit``: only the
    best ``limit`` hits are made (``None``: all).
    """
    fused = fuse(
        hybrid.fusion,
        {k: r.score for k, r in vector.items()},
        {k: r.score for k, r in keyword.items()},
        vector_weight=hybrid.vector_weight,
        text_weight=hybrid.text_weight,
        scale=vector_scale(model) if model is not None else None,
        coverage={k: keyword_coverage(query, r.text) for k, r in keyword.items()},
    )
    rows = {**vector, **keyword}
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
            ),
        )
        for f in fused[:limit]
    ]
