"""``[backends.sqlite]`` settings: a plain dataclass, light enough to load with the plugin."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True, slots=True, kw_only=True)
class SqliteSettings:
    """``[backends.sqlite]``: where the index lives and how it is built.

    ``path`` may use ``{stateDir}`` and ``{agentId}``; ``fts_tokenizer`` is ``porter``
    (default: ``porter unicode61``, English stemming, so "flights" finds "flight"),
    ``unicode61`` (OpenClaw's, no stemming) or ``trigram`` (case-insensitive, for CJK
    substring search); changing it rebuilds the index; ``vector = false`` or a
    sqlite-vec that cannot load means exact in-process cosine search instead of KNN, over
    the current model's vectors held in memory (4 × dims bytes a chunk, reloaded after
    each write); ``extension_path`` overrides the bundled sqlite-vec library.

    ``vector_search`` picks the query path while sqlite-vec is available: ``"auto"``
    searches in memory while the vectors fit ``memory_budget_mb`` (exact, and about ten
    times faster than sqlite-vec 0.1.9's brute-force KNN at 100k chunks) and uses
    sqlite-vec KNN beyond it; ``"memory"`` and ``"sqlite-vec"`` force one path.
    ``chunks_vec`` is kept up to date either way.
    """

    path: str = "{stateDir}/agents/{agentId}/memory.sqlite"
    fts_tokenizer: Literal["porter", "unicode61", "trigram"] = "porter"
    vector: bool = True
    extension_path: str = ""
    busy_timeout_ms: int = 5000
    vector_search: Literal["auto", "memory", "sqlite-vec"] = "auto"
    memory_budget_mb: int = 512
