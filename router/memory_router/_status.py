"""Pieces of :meth:`Router.status` that need no router state of their own."""

from __future__ import annotations

import time
from typing import Any

from ._config import Config
from ._embedding import Embedder, EmbeddingCache
from ._exceptions import EmbeddingError
from ._providers import ProviderChoice
from ._workspace import FTS_ONLY, take_snapshot


def source_counts(config: Config) -> dict[str, int]:
    """How many memory files (and transcripts) are on disk now, by source."""
    counts: dict[str, int] = {}
    for doc in take_snapshot(config, fingerprint={}, model=FTS_ONLY).documents:
        counts[doc.source] = counts.get(doc.source, 0) + 1
    return counts


def embedding_status(
    choice: ProviderChoice,
    embedder: Embedder | None,
    cache: EmbeddingCache | None,
    *,
    deep: bool,
) -> dict[str, Any]:
    """Provider, model, mode, fallback and cache size; ``deep`` embeds "ping" to probe."""
    switched = (embedder.fallback_event if embedder else None) or choice.fallback
    info: dict[str, Any] = {
        "requested": choice.requested,
        "provider": embedder.provider_id if embedder else None,
        "model": embedder.model if embedder else None,
        "mode": "hybrid" if embedder else "keyword-only",
        "unavailable_reason": choice.unavailable_reason,
        "fallback": switched.to_dict() if switched else None,
        "cache_entries": cache.count() if cache else None,
    }
    if deep and embedder is not None:
        started = time.perf_counter()
        try:
            vector = embedder.embed_query("ping")
            info.update(
                probe="ok", dims=len(vector), latency_ms=(time.perf_counter() - started) * 1000
            )
        except EmbeddingError as error:
            info.update(probe="failed", error=error.message)
    return info
