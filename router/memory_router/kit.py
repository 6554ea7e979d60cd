"""The toolkit for backend and plugin authors.

What a backend, an embedding provider or a plugin command builds on: the backend contract
(:class:`Backend`, :class:`Staging`, :class:`BackendSpec` and the values it exchanges),
the embedding-provider contract (:class:`EmbeddingProvider`, :class:`ProviderSpec`),
settings parsing, the workspace :class:`Snapshot`, the search helpers the built-in
backends share (keywords, fusion, snippets), and the process and wait utilities that keep
child processes and waits bounded. Decorate hooks with :data:`memory_router.hookimpl`;
raise the errors of :mod:`memory_router`. See docs/plugins.md.

The export list is the ``if TYPE_CHECKING:`` block below, written once (see
:mod:`memory_router`); names are imported on first access.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._util.lazy import public_api

if TYPE_CHECKING:
    from ._backend import Backend as Backend
    from ._backend import BackendContext as BackendContext
    from ._backend import BackendSpec as BackendSpec
    from ._backend import Staging as Staging
    from ._backend import SyncTally as SyncTally
    from ._backend import rebuild_reason as rebuild_reason
    from ._config.settings import Secret as Secret
    from ._config.settings import parse_settings as parse_settings
    from ._embedding.embedder import Embedder as Embedder
    from ._embedding.embedder import EmbeddingCache as EmbeddingCache
    from ._embedding.embedder import EmbeddingProvider as EmbeddingProvider
    from ._embedding.embedder import normalize as normalize
    from ._embedding.embedder import provider_key as provider_key
    from ._embedding.embedder import sha256_text as sha256_text
    from ._embedding.providers import ProviderContext as ProviderContext
    from ._embedding.providers import ProviderSpec as ProviderSpec
    from ._plugins import get_plugin_manager as get_plugin_manager
    from ._search.calibration import vector_scale as vector_scale
    from ._search.fusion import FUSION_METHODS as FUSION_METHODS
    from ._search.fusion import Fused as Fused
    from ._search.fusion import FusionMethod as FusionMethod
    from ._search.fusion import VectorScale as VectorScale
    from ._search.fusion import convex_fusion as convex_fusion
    from ._search.fusion import fuse as fuse
    from ._search.fusion import minmax_fusion as minmax_fusion
    from ._search.fusion import rrf_fusion as rrf_fusion
    from ._search.fusion import weighted_fusion as weighted_fusion
    from ._search.fusion import zscore_fusion as zscore_fusion
    from ._search.hybrid import fuse_chunks as fuse_chunks
    from ._search.hybrid import fuse_nearest as fuse_nearest
    from ._search.hybrid import keyword_chunks as keyword_chunks
    from ._search.keywords import bm25_to_score as bm25_to_score
    from ._search.keywords import build_match_query as build_match_query
    from ._search.keywords import build_or_query as build_or_query
    from ._search.keywords import extract_keywords as extract_keywords
    from ._search.keywords import query_keywords as query_keywords
    from ._search.nearest import NearestVectors as NearestVectors
    from ._search.nearest import vectors_footprint as vectors_footprint
    from ._search.ranking import entry_weight as entry_weight
    from ._search.snippets import best_lines as best_lines
    from ._search.snippets import best_runs as best_runs
    from ._search.snippets import keyword_coverage as keyword_coverage
    from ._types import BackendResult as BackendResult
    from ._types import Chunk as Chunk
    from ._types import Document as Document
    from ._types import EntryRequest as EntryRequest
    from ._types import ScoredChunk as ScoredChunk
    from ._types import SearchRequest as SearchRequest
    from ._util.children import signal_child as signal_child
    from ._util.children import spawn_child as spawn_child
    from ._util.lazy import lazy_exports as lazy_exports
    from ._util.pipeline import prefetch as prefetch
    from ._util.waits import acquire_lock as acquire_lock
    from ._util.waits import communicate as communicate
    from ._util.waits import join_thread as join_thread
    from ._util.waits import wait_event as wait_event
    from ._util.waits import wait_future as wait_future
    from ._workspace.decoding import Decoded as Decoded
    from ._workspace.decoding import decode as decode
    from ._workspace.snapshot import Snapshot as Snapshot
else:
    __all__, __getattr__, __dir__ = public_api(__name__)
