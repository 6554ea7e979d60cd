"""Provider selection and fallback through the real :class:`Router` (SQLite backend, real HTTP)."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from loopback import LoopbackServer, Reply, Request

from memory_router import Router, load_config

Start = Callable[[Callable[[Request], Reply]], LoopbackServer]
NOTES = {
    "memory/preferences.md": "# Client\n\nThe client prefers blue over green.\n",
    "memory/deploys.md": "# Ops\n\nThe deploy pipeline runs every Tuesday at noon.\n",
    "memory/travel.md": "# Travel\n\nBooked flights to Lisbon for the conference in March.\n",
    "memory/tests.md": "# CI\n\nThe flaky job failed because tests used the local timezone.\n",
    "memory/people.md": "# People\n\nPriya Raman leads the billing team.\n",
}


@pytest.fixture(autouse=True)
def _builtin_plugins_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMORY_ROUTER_PLUGINS", "sqlite,minilm,remote,local")


def router_for(write_config: Callable[..., Path], body: str) -> Router:
    return Router.from_config(load_config(write_config(body), environ={}))


def hashed_vector(text: str, dims: int = 384) -> list[float]:
    """A deterministic pseudo-embedding the fake OpenAI server returns."""
    seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
    return np.random.default_rng(seed).standard_normal(dims).round(6).tolist()


def openai_server(request: Request) -> Reply:
    texts = request.body["input"]
    return Reply(
        body={"data": [{"index": i, "embedding": hashed_vector(t)} for i, t in enumerate(texts)]}
    )


def test_auto_picks_minilm_when_installed(
    write_config: Callable[..., Path],
    write_workspace: Callable[..., Path],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-unused")  # openai (20) comes after minilm (15)
    write_workspace(NOTES)
    with router_for(write_config, "") as router:
        status = router.status(deep=True).embedding
    assert (status.provider, status.mode, status.probe, status.dims) == (
        "minilm",
        "hybrid",
        "ok",
        384,
    )


@pytest.mark.llama
def test_auto_prefers_an_existing_local_gguf(
    write_config: Callable[..., Path], write_workspace: Callable[..., Path], minilm_gguf: Path
) -> None:
    write_workspace(NOTES)
    body = f'[embedding.local]\nmodel_path = "{minilm_gguf}"\ncontext_size = 256\n'
    with router_for(write_config, body + "[query]\nmin_score = 0.0\n") as router:
        before = router.fingerprint()
        response = router.search("what colour does the customer like")
        assert router.fingerprint() == before  # dims known up front: no rebuild later
        assert before.vector_dims == 384
        status = router.status(deep=True).embedding
    assert (response.provider, status.dims) == ("local", 384)
    assert response.results[0].path == "memory/preferences.md"


@pytest.mark.slow
def test_semantic_search_with_the_offline_model(
    write_config: Callable[..., Path], write_workspace: Callable[..., Path]
) -> None:
    write_workspace(NOTES)
    with router_for(
        write_config, '[embedding]\nprovider = "minilm"\n[query]\nmin_score = 0.0\n'
    ) as router:
        response = router.search("what colour does the customer like")
    assert response.provider == "minilm"
    assert response.mode == "hybrid"
    assert response.results[0].path == "memory/preferences.md"
    assert response.results[0].vector_score is not None


def test_explicit_provider_failing_falls_back_and_is_recorded(
    write_config: Callable[..., Path], write_workspace: Callable[..., Path]
) -> None:
    write_workspace(NOTES)
    body = '[embedding]\nprovider = "openai"\nfallback = "minilm"\n[query]\nmin_score = 0.0\n'
    with router_for(write_config, body) as router:
        response = router.search("what colour does the customer like")
        status = router.status().embedding
    assert response.provider == "minilm"
    assert response.provider_fallback is not None
    assert response.provider_fallback.from_ == "openai"
    assert "OPENAI_API_KEY" in response.provider_fallback.reason
    assert status.fallback is not None
    assert status.fallback.from_ == "openai"
    assert "OPENAI_API_KEY" in status.fallback.reason
    assert response.results[0].path == "memory/preferences.md"


def test_explicit_provider_without_fallback_fails_with_the_reason(
    write_config: Callable[..., Path], write_workspace: Callable[..., Path]
) -> None:
    write_workspace(NOTES)
    with router_for(write_config, '[embedding]\nprovider = "voyage"\n') as router:
        status = router.status().embedding
    assert status.available is False
    assert status.error is not None
    assert "VOYAGE_API_KEY" in status.error


@pytest.mark.slow
def test_run_time_failure_switches_to_the_fallback(
    write_config: Callable[..., Path],
    write_workspace: Callable[..., Path],
    http_server: Start,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    failing = {"on": False}

    def handler(request: Request) -> Reply:
        if failing["on"]:
            return Reply(status=500, body={"error": "model server crashed"})
        return openai_server(request)

    server = http_server(handler)
    write_workspace(NOTES)
    body = (
        '[embedding]\nprovider = "openai"\nfallback = "minilm"\n'
        f'[embedding.remote]\nbase_url = "{server.url}/v1"\nmax_retries = 0\n'
        "[query]\nmin_score = 0.0\n"
    )
    with router_for(write_config, body) as router:
        first = router.search("blue")
        assert first.provider == "openai"
        assert first.provider_fallback is None
        indexed = server.count("/v1/embeddings")
        assert indexed >= 2  # the documents, then the query
        failing["on"] = True
        second = router.search("what colour does the customer like")
        status = router.status().embedding
    assert second.provider == "minilm"
    assert second.provider_fallback is not None
    assert second.provider_fallback.from_ == "openai"
    assert "500" in second.provider_fallback.reason
    assert status.provider == "minilm"
    assert status.fallback is not None
    assert status.fallback.from_ == "openai"
    assert server.count("/v1/embeddings") == indexed + 1  # one failed query: no retries
