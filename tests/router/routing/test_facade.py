"""The Router is a facade over its parts; the typed values it hands out keep their JSON shape."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from memory_router import (
    EmbeddingStatus,
    Fallback,
    IndexFingerprint,
    InvalidInput,
    Router,
    migrate,
    testing,
)
from memory_router.testing import router_config, write_workspace

FILES = {"MEMORY.md": "# Memory\n\nThe kiln reached 1240 degrees on the third firing.\n"}


def make_router(tmp_path: Path, embedding: str = "none") -> Router:
    workspace = write_workspace(tmp_path / "ws", FILES)
    config = router_config(tmp_path, workspace, backend="sqlite", embedding=embedding)
    return Router.from_config(config, plugins=[testing])


def test_the_router_composes_a_few_parts(tmp_path: Path) -> None:
    with make_router(tmp_path) as router:
        assert len(vars(router)) <= 8, sorted(vars(router))


def test_a_closed_router_refuses_every_operation_that_reaches_a_backend(tmp_path: Path) -> None:
    router = make_router(tmp_path)
    router.sync()
    router.close()
    router.close()  # idempotent
    assert router.is_closed
    for call in (
        lambda: migrate(router, target_path=tmp_path / "copy.sqlite", source="sqlite"),
        lambda: router.backend("sqlite"),
        lambda: router.remember("the kiln"),
        lambda: router.recall("kiln"),
        lambda: router.forget_entry(query="kiln"),
    ):
        with pytest.raises(InvalidInput, match="router is closed"):
            call()
    assert not (tmp_path / "copy.sqlite").exists()


def test_the_fingerprint_is_what_the_index_stores(tmp_path: Path) -> None:
    with make_router(tmp_path, embedding="hash") as router:
        router.sync()
        fingerprint = router.fingerprint()
        stored = router.backend("sqlite").index_fingerprint()
    assert isinstance(fingerprint, IndexFingerprint)
    assert stored is not None
    assert {k: stored[k] for k in fingerprint.to_dict()} == fingerprint.to_dict()
    assert (fingerprint.provider, fingerprint.vector_dims) == (stored["provider"], 384)
    assert "redaction" not in fingerprint.to_dict()  # only when transcripts are indexed


def test_embedding_status_keeps_its_json_shape(tmp_path: Path) -> None:
    with make_router(tmp_path, embedding="hash") as router:
        deep = router.status(deep=True)
        shallow = router.status()
    assert isinstance(deep.embedding, EmbeddingStatus)
    assert (deep.embedding.probe, deep.embedding.dims) == ("ok", 384)
    base = {
        "requested",
        "provider",
        "model",
        "mode",
        "unavailable_reason",
        "fallback",
        "cache_entries",
    }
    assert set(shallow.to_dict()["embedding"]) == base
    assert set(deep.to_dict()["embedding"]) == base | {"probe", "dims", "latency_ms"}


def test_embedding_status_shapes_of_a_failure() -> None:
    failed = EmbeddingStatus(requested="voyage", available=False, error="VOYAGE_API_KEY unset")
    assert failed.to_dict() == {
        "available": False,
        "requested": "voyage",
        "error": "VOYAGE_API_KEY unset",
    }
    probe = EmbeddingStatus(
        requested="openai", provider="openai", mode="hybrid", probe="failed", error="HTTP 500"
    )
    assert probe.to_dict()["probe"] == "failed"
    assert probe.to_dict()["error"] == "HTTP 500"
    assert "dims" not in probe.to_dict()
    switched = Fallback(from_="openai", reason="no key", at=datetime(2026, 11, 27, tzinfo=UTC))
    assert EmbeddingStatus(requested="openai", fallback=switched).to_dict()["fallback"] == (
        switched.to_dict()
    )
