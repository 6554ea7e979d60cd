"""The embedding setup of one router, built explicitly: provider choice, cache, embedder.

Building it is the only step that picks a provider (which may load a model or check a
remote key); reading it afterwards does no hidden work, except that the first
:meth:`EmbeddingSetup.fingerprint` of a provider that learns its size from an answer
embeds one probe text.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Mapping

from .._config.config import Config, ensure_dir, writable
from .._exceptions import EmbeddingError, MemoryRouterError
from .._types import EmbeddingStatus, IndexFingerprint
from .._workspace.snapshot import FTS_ONLY, fingerprint_for
from .embedder import Embedder, EmbeddingCache, provider_key
from .providers import (
    ProviderChoice,
    ProviderContext,
    ProviderSpec,
    choose_provider,
    fallback_factory,
)


class EmbeddingSetup:
    """The chosen provider, the shared cache and the embedder (``None`` in keyword-only mode)."""

    def __init__(
        self, choice: ProviderChoice, embedder: Embedder | None, cache: EmbeddingCache | None
    ) -> None:
        self.choice = choice
        self.embedder = embedder
        self.cache = cache
        self._dims: tuple[tuple[str, str, str], int] | None = None
        self._lock = threading.Lock()

    @classmethod
    def build(cls, config: Config, specs: Mapping[str, ProviderSpec]) -> EmbeddingSetup:
        """Choose the provider from ``[embedding]``; raises ConfigError/EmbeddingError."""
        context = ProviderContext(config=config, state_dir=config.agent_state_path)
        choice = choose_provider(specs, context)
        if choice.provider is None:
            return cls(choice, None, None)
        cache = None
        if config.cache.enabled:
            path = config.expand(config.cache.path)
            # In a read-only state folder, searches embed their query without the cache.
            if writable(ensure_dir(path.parent, key="cache.path", must_write=False)):
                cache = EmbeddingCache(path, max_entries=config.cache.max_entries or None)
        embedder = Embedder(
            choice.provider,
            cache=cache,
            fallback=fallback_factory(specs, context, choice.provider.id),
        )
        return cls(choice, embedder, cache)

    @property
    def model(self) -> str:
        """The embedding model id chunks are indexed under (``fts-only`` without one)."""
        return self.embedder.model if self.embedder else FTS_ONLY

    def fingerprint(self, config: Config) -> IndexFingerprint:
        """The index fingerprint for the current provider (see :func:`fingerprint_for`)."""
        embedder = self.embedder
        if embedder is None:
            return fingerprint_for(
                config, provider="none", model=FTS_ONLY, provider_key=FTS_ONLY, dims=None
            )
        return fingerprint_for(
            config,
            provider=embedder.provider_id,
            model=embedder.model,
            provider_key=provider_key(embedder.provider),
            dims=self.dims(embedder),
        )

    def dims(self, embedder: Embedder) -> int:
        """The vector size; probed once when the provider only learns it from an answer.

        Without the probe the fingerprint would change from ``None`` to N after the first
        embedding, and the next sync would rebuild the whole index for nothing.
        """
        key = (embedder.provider_id, embedder.model, provider_key(embedder.provider))
        with self._lock:
            if self._dims is None or self._dims[0] != key:
                size = embedder.dims or len(embedder.embed_query("dimension probe"))
                self._dims = (key, size)
            return self._dims[1]

    def status(self, *, deep: bool) -> EmbeddingStatus:
        return embedding_status(self.choice, self.embedder, self.cache, deep=deep)

    def close(self) -> None:
        if self.embedder is not None:
            self.embedder.close()
        if self.cache is not None:
            self.cache.close()


def embedding_status(
    choice: ProviderChoice,
    embedder: Embedder | None,
    cache: EmbeddingCache | None,
    *,
    deep: bool,
) -> EmbeddingStatus:
    """Provider, model, mode, fallback and cache size; ``deep`` embeds "ping" to probe."""
    status = EmbeddingStatus(
        requested=choice.requested,
        provider=embedder.provider_id if embedder else None,
        model=embedder.model if embedder else None,
        mode="hybrid" if embedder else "keyword-only",
        unavailable_reason=choice.unavailable_reason,
        fallback=(embedder.fallback_event if embedder else None) or choice.fallback,
        cache_entries=cache.count() if cache else None,
    )
    if not deep or embedder is None:
        return status
    started = time.perf_counter()
    try:
        vector = embedder.embed_query("ping")
    except EmbeddingError as error:
        return dataclasses.replace(status, probe="failed", error=error.message)
    latency_ms = (time.perf_counter() - started) * 1000
    return dataclasses.replace(status, probe="ok", dims=len(vector), latency_ms=latency_ms)


def unavailable_status(config: Config, error: MemoryRouterError) -> EmbeddingStatus:
    """The status when the configured provider could not be built (``error`` says why)."""
    return EmbeddingStatus(
        requested=config.embedding.provider, available=False, error=error.message
    )
