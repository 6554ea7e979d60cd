"""Remote providers against a real loopback HTTP server that speaks each API."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest
from loopback import LoopbackServer, Reply, Request

from memory_router import Config, EmbeddingError
from memory_router.kit import ProviderContext, provider_key
from memory_router_remote import (
    GeminiProvider,
    HttpProvider,
    MistralProvider,
    OllamaProvider,
    OpenAIProvider,
    VoyageProvider,
)

Start = Callable[[Callable[[Request], Reply]], LoopbackServer]
WriteConfig = Callable[[str], Config]


def vec(i: int, dims: int = 3) -> list[float]:
    return [float(i + 1)] + [0.5] * (dims - 1)


def openai_reply(request: Request) -> Reply:
    texts = request.body["input"]
    data = [{"object": "embedding", "index": i, "embedding": vec(i)} for i in range(len(texts))]
    return Reply(body={"object": "list", "data": list(reversed(data)), "model": "m"})


def remote_config(write: WriteConfig, url: str, **keys: Any) -> Config:
    lines = [f'base_url = "{url}"'] + [f"{k} = {v}" for k, v in keys.items()]
    return write("[embedding.remote]\n" + "\n".join(lines) + "\n")


def build(cls: type[OpenAIProvider], config: Config, model: str = "") -> HttpProvider:
    return cls.create(ProviderContext(config=config, state_dir=config.agent_state_path), model)


def test_openai_request_shape_and_order(
    http_server: Start, provider_config: WriteConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    server = http_server(openai_reply)
    config = remote_config(provider_config, server.url + "/v1", headers='{ "X-Team" = "mem" }')
    provider = build(OpenAIProvider, config)
    assert provider.dims is None  # not the default endpoint: unknown until an answer
    try:
        vectors = provider.embed_documents(["a", "b", "c"])
    finally:
        provider.close()
    assert vectors == [vec(0), vec(1), vec(2)]  # re-ordered by "index"
    assert provider.dims == 3
    (request,) = server.requests
    assert request.path == "/v1/embeddings"
    assert request.body == {"model": "text-embedding-3-small", "input": ["a", "b", "c"]}
    assert request.headers["authorization"] == "Bearer sk-test"
    assert request.headers["x-team"] == "mem"


def test_api_key_from_config_secret_and_missing_key_names_variable(
    http_server: Start, provider_config: WriteConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = http_server(openai_reply)
    with pytest.raises(EmbeddingError, match="OPENAI_API_KEY"):
        build(OpenAIProvider, remote_config(provider_config, server.url))
    with pytest.raises(EmbeddingError, match="GEMINI_API_KEY or GOOGLE_API_KEY"):
        build(GeminiProvider, remote_config(provider_config, server.url))
    with pytest.raises(EmbeddingError, match="VOYAGE_API_KEY"):
        build(VoyageProvider, remote_config(provider_config, server.url))
    with pytest.raises(EmbeddingError, match="MISTRAL_API_KEY"):
        build(MistralProvider, remote_config(provider_config, server.url))
    with pytest.raises(EmbeddingError, match="env MY_KEY"):
        build(
            OpenAIProvider, remote_config(provider_config, server.url, api_key='{ env = "MY_KEY" }')
        )
    monkeypatch.setenv("MY_KEY", "from-indirection")
    provider = build(
        OpenAIProvider, remote_config(provider_config, server.url, api_key='{ env = "MY_KEY" }')
    )
    try:
        provider.embed_query("q")
    finally:
        provider.close()
    assert server.requests[0].headers["authorization"] == "Bearer from-indirection"


def test_429_then_success_is_retried(
    http_server: Start, provider_config: WriteConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "k")

    def handler(request: Request) -> Reply:
        if len(server.requests) == 1:
            return Reply(status=429, body={"error": {"message": "Rate limit reached"}})
        return openai_reply(request)

    server = http_server(handler)
    provider = build(OpenAIProvider, remote_config(provider_config, server.url))
    started = time.perf_counter()
    try:
        assert provider.embed_query("hello") == vec(0)
    finally:
        provider.close()
    assert server.count("/embeddings") == 2
    assert 0.45 <= time.perf_counter() - started < 5  # one backoff of 0.5–0.6 s


def test_rate_limit_text_in_a_400_is_retried(
    http_server: Start, provider_config: WriteConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "k")

    def handler(request: Request) -> Reply:
        if len(server.requests) == 1:
            return Reply(status=400, body={"error": "Too Many Requests: tokens per day"})
        return openai_reply(request)

    server = http_server(handler)
    provider = build(OpenAIProvider, remote_config(provider_config, server.url))
    try:
        assert provider.embed_documents(["x"]) == [vec(0)]
    finally:
        provider.close()
    assert server.count() == 2


def test_repeated_500s_fail_after_max_retries(
    http_server: Start, provider_config: WriteConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    server = http_server(lambda r: Reply(status=503, body={"error": "overloaded"}))
    provider = build(OpenAIProvider, remote_config(provider_config, server.url, max_retries=2))
    try:
        with pytest.raises(EmbeddingError, match="openai embeddings failed: 503") as info:
            provider.embed_documents(["a"])
    finally:
        provider.close()
    assert server.count() == 3  # the first try and two retries
    assert info.value.transient


def test_a_plain_400_is_not_retried(
    http_server: Start, provider_config: WriteConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    server = http_server(lambda r: Reply(status=400, body={"error": "bad model"}))
    provider = build(OpenAIProvider, remote_config(provider_config, server.url))
    try:
        with pytest.raises(EmbeddingError, match="400") as info:
            provider.embed_query("a")
    finally:
        provider.close()
    assert server.count() == 1
    assert not info.value.transient


def test_malformed_json_is_a_clear_error(
    http_server: Start, provider_config: WriteConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    server = http_server(lambda r: Reply(raw=b'{"data": [ {"embedding": [1, 2'))
    provider = build(OpenAIProvider, remote_config(provider_config, server.url))
    try:
        with pytest.raises(EmbeddingError, match="malformed JSON"):
            provider.embed_query("a")
        server.handler = lambda r: Reply(body={"data": [{"embedding": ["x", None]}]})
        with pytest.raises(EmbeddingError, match="not a list of numbers"):
            provider.embed_query("a")
        server.handler = lambda r: Reply(body={"unexpected": True})
        with pytest.raises(EmbeddingError, match="no 'data' list"):
            provider.embed_query("a")
    finally:
        provider.close()


def test_wrong_vector_count_is_an_error(
    http_server: Start, provider_config: WriteConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    server = http_server(lambda r: Reply(body={"data": [{"embedding": vec(0)}]}))
    provider = build(OpenAIProvider, remote_config(provider_config, server.url))
    try:
        with pytest.raises(EmbeddingError, match="returned 1 vectors for 3 texts"):
            provider.embed_documents(["a", "b", "c"])
    finally:
        provider.close()


def test_slow_response_times_out_fast_and_is_not_retried(
    http_server: Start, provider_config: WriteConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    server = http_server(lambda r: Reply(body={"data": []}, delay=2.0))
    config = remote_config(provider_config, server.url, query_timeout_s=0.3, batch_timeout_s=0.5)
    provider = build(OpenAIProvider, config)
    try:
        started = time.perf_counter()
        with pytest.raises(EmbeddingError, match=r"within 0\.3 s") as info:
            provider.embed_query("a")
        assert time.perf_counter() - started < 1.9  # the server would answer after 2 s
        with pytest.raises(EmbeddingError, match=r"within 0\.5 s"):
            provider.embed_documents(["a", "b"])
    finally:
        provider.close()
    assert info.value.transient
    assert server.count() == 2


def test_connection_refused_is_a_clear_error(
    provider_config: WriteConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    import socket

    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    provider = build(OpenAIProvider, remote_config(provider_config, f"http://127.0.0.1:{port}"))
    try:
        with pytest.raises(EmbeddingError, match="cannot reach") as info:
            provider.embed_query("a")
        assert info.value.hint is not None
        assert f"http://127.0.0.1:{port} is running" in info.value.hint
        assert "[embedding.remote] base_url" in info.value.hint
    finally:
        provider.close()


def gemini_reply(request: Request) -> Reply:
    if request.path.endswith(":embedContent"):
        return Reply(body={"embedding": {"values": [0.1, 0.2, 0.3, 0.4]}})
    return Reply(
        body={"embeddings": [{"values": vec(i, 4)} for i in range(len(request.body["requests"]))]}
    )


def test_gemini_query_and_document_endpoints(
    http_server: Start, provider_config: WriteConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GOOGLE_API_KEY", "g-key")
    server = http_server(gemini_reply)
    config = remote_config(
        provider_config, server.url + "/v1beta/openai", output_dimensionality=768
    )
    provider = build(GeminiProvider, config)
    try:
        assert provider.embed_query("what colour") == [0.1, 0.2, 0.3, 0.4]
        assert provider.embed_documents(["a", "b"]) == [vec(0, 4), vec(1, 4)]
    finally:
        provider.close()
    query, batch = server.requests
    assert query.path == "/v1beta/models/gemini-embedding-001:embedContent"
    assert query.body == {
        "content": {"parts": [{"text": "what colour"}]},
        "taskType": "RETRIEVAL_QUERY",
        "outputDimensionality": 768,
    }
    assert batch.path == "/v1beta/models/gemini-embedding-001:batchEmbedContents"
    assert [r["taskType"] for r in batch.body["requests"]] == ["RETRIEVAL_DOCUMENT"] * 2
    assert batch.body["requests"][1]["model"] == "models/gemini-embedding-001"
    assert batch.body["requests"][1]["content"] == {"parts": [{"text": "b"}]}
    for request in (query, batch):
        assert request.headers["x-goog-api-key"] == "g-key"
        assert "authorization" not in request.headers


def test_voyage_input_type(
    http_server: Start, provider_config: WriteConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VOYAGE_API_KEY", "v")
    server = http_server(openai_reply)
    provider = build(VoyageProvider, remote_config(provider_config, server.url), "voyage-3")
    try:
        provider.embed_query("q")
        provider.embed_documents(["d1", "d2"])
    finally:
        provider.close()
    assert [r.body for r in server.requests] == [
        {"model": "voyage-3", "input": ["q"], "input_type": "query"},
        {"model": "voyage-3", "input": ["d1", "d2"], "input_type": "document"},
    ]


def test_ollama_needs_no_key_and_uses_v1(http_server: Start, provider_config: WriteConfig) -> None:
    server = http_server(openai_reply)
    provider = build(OllamaProvider, remote_config(provider_config, server.url + "/v1"))
    try:
        assert provider.embed_query("q") == vec(0)
    finally:
        provider.close()
    assert server.requests[0].path == "/v1/embeddings"
    assert server.requests[0].body["model"] == "nomic-embed-text"
    assert "authorization" not in server.requests[0].headers


def test_cache_key_data_never_holds_secrets(
    provider_config: WriteConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret")
    monkeypatch.setenv("GEMINI_API_KEY", "g-secret")
    config = remote_config(
        provider_config,
        "http://127.0.0.1:9/v1",
        headers='{ "Authorization" = "Bearer x", "X-B" = "2", "X-A" = "1" }',
    )
    openai = build(OpenAIProvider, config)
    gemini = build(GeminiProvider, config)
    try:
        assert openai.cache_key_data() == {
            "provider": "openai",
            "baseUrl": "http://127.0.0.1:9/v1",
            "model": "text-embedding-3-small",
            "headers": {"X-A": "1", "X-B": "2"},
        }
        assert (openai.dims, gemini.dims) == (None, None)  # a custom base URL
        assert "secret" not in repr(gemini.cache_key_data())
        assert gemini.cache_key_data()["outputDimensionality"] is None
        assert provider_key(openai) != provider_key(gemini)
    finally:
        openai.close()
        gemini.close()


def test_concurrency_and_batch_budget_come_from_config(
    provider_config: WriteConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    config = remote_config(provider_config, "http://127.0.0.1:9", concurrency=4)
    provider = build(OpenAIProvider, config)
    provider.close()
    assert (provider.concurrency, provider.max_batch_tokens) == (4, 8000)


def test_documented_dims_are_known_before_the_first_call(
    provider_config: WriteConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    monkeypatch.setenv("GEMINI_API_KEY", "k")
    config = provider_config("")
    openai = build(OpenAIProvider, config)
    gemini = build(GeminiProvider, config)
    large = build(OpenAIProvider, config, "text-embedding-3-large")
    for provider in (openai, gemini, large):
        provider.close()
    assert (openai.dims, gemini.dims, large.dims) == (1536, 3072, 3072)
    assert openai.base_url == "https://api.openai.com/v1"


def test_gemini_oauth_token_key_goes_as_bearer(
    http_server: Start, provider_config: WriteConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GEMINI_API_KEY", '{"token": "ya29.oauth"}')
    server = http_server(gemini_reply)
    provider = build(GeminiProvider, remote_config(provider_config, server.url))
    try:
        provider.embed_query("q")
    finally:
        provider.close()
    assert server.requests[0].headers["authorization"] == "Bearer ya29.oauth"
    assert "x-goog-api-key" not in server.requests[0].headers


def test_embedder_keeps_up_to_concurrency_requests_in_flight(
    http_server: Start, provider_config: WriteConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    import threading

    from memory_router.kit import Embedder

    monkeypatch.setenv("OPENAI_API_KEY", "k")
    lock = threading.Lock()
    state = {"now": 0, "peak": 0}

    def handler(request: Request) -> Reply:
        with lock:
            state["now"] += 1
            state["peak"] = max(state["peak"], state["now"])
        time.sleep(0.15)
        with lock:
            state["now"] -= 1
        return openai_reply(request)

    server = http_server(handler)
    config = remote_config(provider_config, server.url, concurrency=3, max_batch_tokens=20)
    embedder = Embedder(build(OpenAIProvider, config))
    try:
        vectors = embedder.embed_documents([f"text number {i}" for i in range(9)])
    finally:
        embedder.close()
    assert len(vectors) == 9
    assert server.count() == 9  # 14-byte texts, a 20-byte budget: one text per request
    assert state["peak"] == 3
