"""Pieces of :meth:`Router.status` that need no router state of their own."""

from __future__ import annotations

import time
from typing import Any

from ._config import Config
from ._embedding import Embedder, EmbeddingCache
from ._exceptions import ConfigError, EmbeddingError
from ._explain import check_workspace
from ._providers import ProviderChoice
from ._workspace import FTS_ONLY, take_snapshot


def source_counts(config: Config) -> dict[str, int]:
    """How many memory files (and transcripts) are on disk now, by source."""
    return on_disk(config)[0]


def on_disk(config: Config) -> tuple[dict[str, int], tuple[str, ...]]:
    """:func:`source_counts`, and ``<path>: <warning>`` per file that is not plain UTF-8
    (files that look binary are not counted: they are not indexed)."""
    snapshot = take_snapshot(config, fingerprint={}, model=FTS_ONLY)
    counts: dict[str, int] = {}
    for doc in snapshot.documents:
        counts[doc.source] = counts.get(doc.source, 0) + 1
    return counts, snapshot.warning_lines()


def workspace_problem(config: Config) -> tuple[str | None, str | None]:
    """Why the workspace cannot be read, and what to do, or ``(None, None)`` when it can."""
    try:
        check_workspace(config)
    except ConfigError as error:
        return error.message, error.hint
    return None, None


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
