"""The public surface is deliberate: a change to it is a change to this test."""

from __future__ import annotations

import memory_router

EXPECTED = [
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


def test_all_is_sorted_and_pinned() -> None:
    def isort_style(name: str) -> tuple[int, str]:  # ruff RUF022: CONSTANTS, Classes, functions
        return (0 if name.isupper() else 1 if name[0].isupper() else 2, name)

    assert memory_router.__all__ == sorted(memory_router.__all__, key=isort_style)
    assert memory_router.__all__ == EXPECTED
    for name in EXPECTED:
        assert hasattr(memory_router, name), name


def test_exception_tree() -> None:
    m = memory_router
    for cls in (
        m.ConfigError,
        m.PluginError,
        m.NotFound,
        m.InvalidInput,
        m.EmbeddingError,
        m.BackendError,
    ):
        assert issubclass(cls, m.MemoryRouterError)
    for cls in (m.BackendUnavailable, m.BackendTimeout, m.Unsupported):
        assert issubclass(cls, m.BackendError)
