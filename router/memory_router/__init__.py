"""memory-router: persistent, searchable memory for AI agents.

Plain Markdown files in a workspace are the memory; indexes are derived from them. One
:class:`Router` sends search/get/store/forget/sync/status to a backend chosen by
configuration, falling back through a chain when one fails.

Names are imported on first access (PEP 562), so ``import memory_router`` and a plugin's
``from memory_router import hookimpl`` load only the modules they use: the CLI's start-up
and every plugin's entry point stay light. Type checkers see the imports below.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from ._util.lazy import lazy_exports

# A library logs, the application shows: without this, Python's last-resort handler would
# print the router's warnings (fallbacks, circuit breakers) on every CLI's stderr.
logging.getLogger("memory_router").addHandler(logging.NullHandler())

if TYPE_CHECKING:
    from ._agent.capture import CaptureResult, RecallBlock, capture, recall_block
    from ._agent.flush import NO_REPLY, FlushDecision, check_memory_flush, is_silent_reply
    from ._backend import Backend, BackendContext, BackendSpec, Staging
    from ._config.agent import (
        CaptureConfig,
        CompactionConfig,
        MemoryFlushConfig,
        RecallConfig,
        ServeConfig,
    )
    from ._config.config import Config, load_config
    from ._config.settings import Secret, parse_settings
    from ._embedding.embedder import (
        Embedder,
        EmbeddingCache,
        EmbeddingProvider,
        normalize,
        provider_key,
        sha256_text,
    )
    from ._embedding.providers import ProviderContext, ProviderSpec
    from ._entries.book import ForgetResult, RecallResult, StoreResult
    from ._exceptions import (
        BackendError,
        BackendTimeout,
        BackendUnavailable,
        ConfigError,
        EmbeddingError,
        InvalidInput,
        MemoryRouterError,
        NotFound,
        PluginError,
        Unsupported,
    )
    from ._migrate.migration import MigrationReport, migrate
    from ._plugins import get_plugin_manager
    from ._router import Router
    from ._search.calibration import vector_scale
    from ._search.fusion import (
        FUSION_METHODS,
        Fused,
        FusionMethod,
        VectorScale,
        convex_fusion,
        fuse,
        minmax_fusion,
        rrf_fusion,
        weighted_fusion,
        zscore_fusion,
    )
    from ._search.hybrid import fuse_chunks, keyword_chunks
    from ._search.keywords import (
        bm25_to_score,
        build_match_query,
        build_or_query,
        extract_keywords,
        query_keywords,
    )
    from ._search.ranking import entry_weight
    from ._search.snippets import best_lines, best_runs, keyword_coverage
    from ._types import (
        CATEGORIES,
        BackendResult,
        BackendStatus,
        BreakerState,
        Category,
        Chunk,
        Document,
        EmbeddingStatus,
        Entry,
        EntryMatch,
        EntryRequest,
        Explain,
        Fallback,
        FileText,
        Hit,
        IndexFingerprint,
        Progress,
        RouterStatus,
        ScoredChunk,
        SearchRequest,
        SearchResponse,
        Source,
        SyncReport,
        no_progress,
    )
    from ._util.children import signal_child, spawn_child
    from ._util.pipeline import prefetch
    from ._util.waits import acquire_lock, communicate, join_thread, wait_event, wait_future
    from ._workspace.decoding import Decoded, decode
    from ._workspace.snapshot import Snapshot
    from .hookspecs import hookimpl

__version__ = "0.1.0"

_EXPORTS: dict[str, tuple[str, ...]] = {
    "._config.agent": (
        "CaptureConfig",
        "CompactionConfig",
        "MemoryFlushConfig",
        "RecallConfig",
        "ServeConfig",
    ),
    "._backend": ("Backend", "BackendContext", "BackendSpec", "Staging"),
    "._search.calibration": ("vector_scale",),
    "._agent.capture": ("CaptureResult", "RecallBlock", "capture", "recall_block"),
    "._util.children": ("signal_child", "spawn_child"),
    "._config.config": ("Config", "load_config"),
    "._workspace.decoding": ("Decoded", "decode"),
    "._embedding.embedder": (
        "Embedder",
        "EmbeddingCache",
        "EmbeddingProvider",
        "normalize",
        "provider_key",
        "sha256_text",
    ),
    "._entries.book": ("ForgetResult", "RecallResult", "StoreResult"),
    "._search.ranking": ("entry_weight",),
    "._exceptions": (
        "BackendError",
        "BackendTimeout",
        "BackendUnavailable",
        "ConfigError",
        "EmbeddingError",
        "InvalidInput",
        "MemoryRouterError",
        "NotFound",
        "PluginError",
        "Unsupported",
    ),
    "._agent.flush": ("NO_REPLY", "FlushDecision", "check_memory_flush", "is_silent_reply"),
    "._search.fusion": (
        "FUSION_METHODS",
        "Fused",
        "FusionMethod",
        "VectorScale",
        "convex_fusion",
        "fuse",
        "minmax_fusion",
        "rrf_fusion",
        "weighted_fusion",
        "zscore_fusion",
    ),
    "._search.hybrid": ("fuse_chunks", "keyword_chunks"),
    "._search.keywords": (
        "bm25_to_score",
        "build_match_query",
        "build_or_query",
        "extract_keywords",
        "query_keywords",
    ),
    "._util.pipeline": ("prefetch",),
    "._migrate.migration": ("MigrationReport", "migrate"),
    "._plugins": ("get_plugin_manager",),
    "._embedding.providers": ("ProviderContext", "ProviderSpec"),
    "._router": ("Router",),
    "._config.settings": ("Secret", "parse_settings"),
    "._search.snippets": ("best_lines", "best_runs", "keyword_coverage"),
    "._types": (
        "CATEGORIES",
        "BackendResult",
        "BackendStatus",
        "BreakerState",
        "Category",
        "Chunk",
        "Document",
        "EmbeddingStatus",
        "Entry",
        "EntryMatch",
        "EntryRequest",
        "Explain",
        "Fallback",
        "FileText",
        "Hit",
        "IndexFingerprint",
        "Progress",
        "RouterStatus",
        "ScoredChunk",
        "SearchRequest",
        "SearchResponse",
        "Source",
        "SyncReport",
        "no_progress",
    ),
    "._util.waits": ("acquire_lock", "communicate", "join_thread", "wait_event", "wait_future"),
    "._workspace.snapshot": ("Snapshot",),
    ".hookspecs": ("hookimpl",),
}

__all__ = [
    "CATEGORIES",
    "FUSION_METHODS",
    "NO_REPLY",
    "Backend",
    "BackendContext",
    "BackendError",
    "BackendResult",
    "BackendSpec",
    "BackendStatus",
    "BackendTimeout",
    "BackendUnavailable",
    "BreakerState",
    "CaptureConfig",
    "CaptureResult",
    "Category",
    "Chunk",
    "CompactionConfig",
    "Config",
    "ConfigError",
    "Decoded",
    "Document",
    "Embedder",
    "EmbeddingCache",
    "EmbeddingError",
    "EmbeddingProvider",
    "EmbeddingStatus",
    "Entry",
    "EntryMatch",
    "EntryRequest",
    "Explain",
    "Fallback",
    "FileText",
    "FlushDecision",
    "ForgetResult",
    "Fused",
    "FusionMethod",
    "Hit",
    "IndexFingerprint",
    "InvalidInput",
    "MemoryFlushConfig",
    "MemoryRouterError",
    "MigrationReport",
    "NotFound",
    "PluginError",
    "Progress",
    "ProviderContext",
    "ProviderSpec",
    "RecallBlock",
    "RecallConfig",
    "RecallResult",
    "Router",
    "RouterStatus",
    "ScoredChunk",
    "SearchRequest",
    "SearchResponse",
    "Secret",
    "ServeConfig",
    "Snapshot",
    "Source",
    "Staging",
    "StoreResult",
    "SyncReport",
    "Unsupported",
    "VectorScale",
    "__version__",
    "acquire_lock",
    "best_lines",
    "best_runs",
    "bm25_to_score",
    "build_match_query",
    "build_or_query",
    "capture",
    "check_memory_flush",
    "communicate",
    "convex_fusion",
    "decode",
    "entry_weight",
    "extract_keywords",
    "fuse",
    "fuse_chunks",
    "get_plugin_manager",
    "hookimpl",
    "is_silent_reply",
    "join_thread",
    "keyword_chunks",
    "keyword_coverage",
    "lazy_exports",
    "load_config",
    "migrate",
    "minmax_fusion",
    "no_progress",
    "normalize",
    "parse_settings",
    "prefetch",
    "provider_key",
    "query_keywords",
    "recall_block",
    "rrf_fusion",
    "sha256_text",
    "signal_child",
    "spawn_child",
    "vector_scale",
    "wait_event",
    "wait_future",
    "weighted_fusion",
    "zscore_fusion",
]

if not TYPE_CHECKING:
    __getattr__ = lazy_exports(
        __name__, {name: module for module, names in _EXPORTS.items() for name in names}
    )


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
