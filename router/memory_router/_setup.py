"""The embedding setup of one router, built explicitly: provider choice, cache, embedder.

Building it is the only step that picks a provider (which may load a model or check a
remote key); reading it afterwards does no hidden work, except that the first
:meth:`EmbeddingSetup.fingerprint` of a provider that learns its size from an answer
embeds one probe text.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from ._config import Config, ensure_dir
from ._embedding import Embedder, EmbeddingCache, provider_key
from ._providers import (
    ProviderChoice,
    ProviderContext,
    ProviderSpec,
    choose_provider,
    fallback_factory,
)
from ._status import embedding_status
from ._workspace import FTS_ONLY, fingerprint_for


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
            ensure_dir(path.parent, key="cache.path")
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

    def fingerprint(self, config: Config) -> dict[str, Any]:
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

    def status(self, *, deep: bool) -> dict[str, Any]:
        return embedding_status(self.choice, self.embedder, self.cache, deep=deep)

    def close(self) -> None:
        if self.embedder is not None:
            self.embedder.close()
        if self.cache is not None:
            self.cache.close()
