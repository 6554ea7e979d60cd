"""The Embedder: shared cache, byte batching, normalisation, count checks, fallback switch."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memory_router import EmbeddingError, Router, hookimpl, load_config
from memory_router.kit import (
    Embedder,
    EmbeddingCache,
    EmbeddingProvider,
    ProviderSpec,
    get_plugin_manager,
    provider_key,
)


class CountingProvider(EmbeddingProvider):
    id = "count"
    model = "count-3"
    max_batch_tokens = 20

    def __init__(self, *, fail: bool = False, short: bool = False) -> None:
        self.batches: list[list[str]] = []
        self.fail = fail
        self.short = short

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        if self.fail:
            raise EmbeddingError("quota exhausted (429)", provider=self.id, transient=True)
        self.batches.append(list(texts))
        vectors = [[float(len(t)), 1.0, 0.0] for t in texts]
        return vectors[:-1] if self.short else vectors


class OtherProvider(CountingProvider):
    id = "other"
    model = "other-3"


def test_cache_hits_skip_the_provider(tmp_path: Path) -> None:
    cache = EmbeddingCache(tmp_path / "cache.sqlite")
    provider = CountingProvider()
    embedder = Embedder(provider, cache=cache)
    first = embedder.embed_documents(["alpha", "beta"])
    again = Embedder(CountingProvider(), cache=cache)
    second = again.embed_documents(["beta", "alpha", "gamma"])
    assert again.provider.batches == [["gamma"]]  # type: ignore[attr-defined]
    assert np.allclose(second[0], first[1])
    assert np.allclose(second[1], first[0])
    assert cache.count() == 3
    cache.close()


def test_vectors_are_normalised_and_batched_by_bytes_shortest_first() -> None:
    provider = CountingProvider()
    texts = ["a" * 15, "b" * 15, "c" * 3]
    vectors = Embedder(provider).embed_documents(texts)
    # Sorted by length so a batch holds similar lengths; results still in input order.
    assert provider.batches == [["c" * 3, "a" * 15], ["b" * 15]]
    assert all(abs(float(np.linalg.norm(v)) - 1) < 1e-6 for v in vectors)
    assert [round(float(v[0] / v[1])) for v in vectors] == [15, 15, 3]  # [len, 1, 0] scaled


def test_wrong_vector_count_is_an_error() -> None:
    with pytest.raises(EmbeddingError, match="returned 1 vectors for 2 texts"):
        Embedder(CountingProvider(short=True)).embed_documents(["a", "b"])


def test_fallback_switch_is_recorded_and_changes_the_key() -> None:
    primary = CountingProvider(fail=True)
    embedder = Embedder(primary, fallback=OtherProvider)
    key_before = embedder.provider_key
    vector = embedder.embed_query("hello")
    assert embedder.provider_id == "other"
    assert embedder.fallback_event is not None
    assert embedder.fallback_event.from_ == "count"
    assert "429" in embedder.fallback_event.reason
    assert embedder.provider_key != key_before == provider_key(primary)
    assert vector.shape == (3,)


def test_recent_query_vectors_are_kept_in_memory(tmp_path: Path) -> None:
    """A query asked again is answered from memory: neither the provider nor the cache
    file is asked; the vector is read-only (the next asker gets the same array), and only
    the most recently asked :data:`RECENT_QUERIES` are kept."""
    from memory_router._embedding.embedder import RECENT_QUERIES

    cache = EmbeddingCache(tmp_path / "cache.sqlite")
    provider = CountingProvider()
    embedder = Embedder(provider, cache=cache)
    first = embedder.embed_query("hello")
    cache.close()  # a read of the file would fail now
    again = embedder.embed_query("hello")
    assert again is first
    assert provider.batches == [["hello"]]
    with pytest.raises(ValueError, match="read-only"):
        again[0] = 2.0
    for i in range(RECENT_QUERIES):
        embedder.cache = None  # the file is closed: new queries are embedded
        embedder.embed_query(f"q{i}")
    embedder.embed_query("hello")  # dropped as the oldest: embedded again
    assert provider.batches[-1] == ["hello"]
    assert len(provider.batches) == RECENT_QUERIES + 2


def test_without_fallback_the_error_propagates() -> None:
    with pytest.raises(EmbeddingError, match="quota"):
        Embedder(CountingProvider(fail=True)).embed_documents(["x"])


def test_cache_prunes_oldest(tmp_path: Path) -> None:
    cache = EmbeddingCache(tmp_path / "c.sqlite", max_entries=2)
    for i in range(4):
        cache.put_many("p", "m", "k", {f"h{i}": np.ones(3, dtype=np.float32)})
    assert cache.count() == 2
    cache.close()


class LateDimsProvider(CountingProvider):
    """Like a remote API at a custom URL: the size is known only after an answer."""

    id = "late"
    model = "late-3"

    def __init__(self) -> None:
        super().__init__()
        self.known: int | None = None

    @property
    def dims(self) -> int | None:
        return self.known

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        self.known = 3
        return super().embed_documents(texts)


class LatePlugin:
    @hookimpl
    def register_embedding_providers(self, register: Any) -> None:
        register(ProviderSpec(name="late", factory=lambda context, model: LateDimsProvider()))


def test_fingerprint_is_stable_when_dims_are_learnt_late(tmp_path: Path) -> None:
    config = load_config(
        None,
        environ={},
        overrides={
            "workspace": str(tmp_path),
            "state_dir": str(tmp_path / "s"),
            "embedding": {"provider": "late"},
        },
    )
    pm = get_plugin_manager(plugins=[LatePlugin()], environ={"MEMORY_ROUTER_PLUGINS": "sqlite"})
    with Router(config, plugin_manager=pm) as router:
        first = router.fingerprint()
        assert first.vector_dims == 3
        assert router.embedder is not None
        router.embedder.embed_documents(["more text"])
        assert router.fingerprint() == first
