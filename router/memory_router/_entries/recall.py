"""Recall answered by the primary backend's own entries table, when it keeps one.

The journal is the canonical copy of the entries, and :class:`EntryBook` reads it for
every backend. A backend that stores entries with their vectors and native columns (the
LanceDB backend: ``importance``, ``category``, ``created_at``) answers
:meth:`Router.recall` itself through :meth:`Backend.recall_entries`: nearest entries by
cosine under a ``category`` prefilter; the router weighs them with
:func:`entry_weight` from those columns. It is asked only with an embedder, once the
router's reconcile says its index holds every change (a store or forget since the last
sync is synced first, as before a search); when it cannot answer (``Unsupported``, a
failure, a pending sync) the journal answers.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING

from .._exceptions import MemoryRouterError, Unsupported
from .._search.ranking import entry_weight
from .._types import Category, EntryMatch, EntryRequest
from .book import RecallResult, _now

if TYPE_CHECKING:
    from .._backend import Backend
    from .._config.config import Config
    from .._embedding.embedder import Embedder

MIN_CANDIDATES = 50


def native_recall(
    primary: Callable[[], Backend],
    fresh: Callable[[str], bool],
    embedder: Embedder | None,
    config: Config,
    query: str,
    *,
    category: Category | None,
    limit: int,
) -> RecallResult | None:
    """The backend's answer, weighted and cut to ``limit``; ``None``: ask the journal.

    ``fresh(name)`` brings backend ``name`` up to date as before a search, and says
    whether its index now holds every change (else the journal answers).
    """
    if embedder is None or not query.strip():
        return None
    try:
        backend = primary()
        if not fresh(backend.name):
            return None  # the index may lag the journal: the journal answers
        request = EntryRequest(
            query=query,
            vector=tuple(float(x) for x in embedder.embed_query(query)),
            category=category,
            candidates=max(MIN_CANDIDATES, limit * config.query.hybrid.candidate_multiplier),
            min_similarity=config.entries.recall_min_score,
        )
        found = backend.recall_entries(request)
    except (Unsupported, MemoryRouterError):
        return None
    return RecallResult(
        query=query,
        results=weighted(tuple(found), config, limit=limit),
        category=category,
        method="vector",
        backend=backend.name,
    )


def weighted(
    found: tuple[EntryMatch, ...], config: Config, *, limit: int
) -> tuple[EntryMatch, ...]:
    """``found`` scored by similarity × :func:`entry_weight`, best first."""
    now = _now()
    ranking = config.entries.ranking
    floor = config.entries.recall_min_score
    scored = [
        dataclasses.replace(m, score=m.similarity * entry_weight(m.entry, ranking, now=now))
        for m in found
        if m.similarity >= floor and m.similarity > 0
    ]
    scored.sort(key=lambda m: (-m.score, -m.similarity))
    return tuple(scored[:limit])
