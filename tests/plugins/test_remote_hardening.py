"""Keys never leak, odd keys fail clearly, retries share the call's deadline (review fixes)."""

from __future__ import annotations

import socket
import time
from collections.abc import Callable
from typing import Any

import pytest
from loopback import LoopbackServer, Reply, Request

from memory_router import Config, EmbeddingError
from memory_router.kit import ProviderContext
from memory_router_remote import OpenAIProvider

Start = Callable[[Callable[[Request], Reply]], LoopbackServer]
WriteConfig = Callable[[str], Config]


def build(config: Config) -> Any:
    return OpenAIProvider.create(
        ProviderContext(config=config, state_dir=config.agent_state_path), ""
    )


def ok(request: Request) -> Reply:
    return Reply(body={"data": [{"index": 0, "embedding": [1.0, 0.0, 0.0]}]})


def test_a_key_with_a_trailing_newline_is_stripped(
    http_server: Start, provider_config: WriteConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-proj-TOPSECRET\n")
    server = http_server(ok)
    provider = build(provider_config(f'[embedding.remote]\nbase_url = "{server.url}"\n'))
    try:
        provider.embed_query("hello")
    finally:
        provider.close()
    assert server.requests[0].headers["authorization"] == "Bearer sk-proj-TOPSECRET"


def test_a_key_that_cannot_be_sent_is_a_clear_error_that_does_not_echo_it(
    provider_config: WriteConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-TOP\u200bSECRET")
    with pytest.raises(EmbeddingError, match="cannot be sent over HTTP") as info:
        build(provider_config('[embedding.remote]\nbase_url = "http://127.0.0.1:9"\n'))
    assert "SECRET" not in info.value.message


def test_transport_errors_name_neither_key_nor_credentials(
    provider_config: WriteConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    with socket.socket() as sock:  # a port with nothing listening
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    monkeypatch.setenv("OPENAI_API_KEY", "sk-TOPSECRET")
    url = f"http://admin:hunter2@127.0.0.1:{port}/v1"
    provider = build(provider_config(f'[embedding.remote]\nbase_url = "{url}"\nmax_retries = 0\n'))
    try:
        with pytest.raises(EmbeddingError) as info:
            provider.embed_query("hello")
    finally:
        provider.close()
    assert f"127.0.0.1:{port}" in info.value.message
    for secret in ("TOPSECRET", "hunter2", "admin"):
        assert secret not in info.value.message


def test_retries_share_the_query_deadline(
    http_server: Start, provider_config: WriteConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    server = http_server(lambda request: Reply(status=503, body={"error": "busy"}, delay=0.6))
    text = (
        f'[embedding.remote]\nbase_url = "{server.url}"\nquery_timeout_s = 1.0\nmax_retries = 5\n'
    )
    provider = build(provider_config(text))
    started = time.monotonic()
    try:
        with pytest.raises(EmbeddingError):
            provider.embed_query("hello")
    finally:
        provider.close()
    # Six attempts of 0.6 s plus backoff would take over 5 s; the budget is about 1 s.
    assert time.monotonic() - started < 3.5
    assert server.count() < 6
