"""Fixtures for the provider tests: loopback HTTP servers and provider configs on disk."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest
from loopback import Handler, LoopbackServer, serving

from memory_router import Config, load_config


@pytest.fixture(scope="session")
def minilm_gguf(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """all-MiniLM-L6-v2 converted to an f32 GGUF by our own converter (no torch)."""
    from memory_router_llama import convert_bert
    from memory_router_minilm import model_dir

    return convert_bert(model_dir(), tmp_path_factory.mktemp("gguf") / "minilm-f32.gguf")


@pytest.fixture
def http_server() -> Iterator[Callable[[Handler], LoopbackServer]]:
    """Start loopback servers with a handler; all are shut down after the test."""
    with ExitStack() as stack:
        yield lambda handler: stack.enter_context(serving(handler))


@pytest.fixture
def provider_config(tmp_path: Path) -> Callable[[str], Config]:
    """Write a TOML config in ``tmp_path`` (workspace and state inside it) and load it."""

    def write(extra: str) -> Config:
        (tmp_path / "workspace").mkdir(exist_ok=True)
        path = tmp_path / "provider.toml"
        path.write_text(
            f'workspace = "{tmp_path / "workspace"}"\nstate_dir = "{tmp_path / "state"}"\n' + extra,
            encoding="utf-8",
        )
        return load_config(path, environ={})

    return write


@pytest.fixture(autouse=True)
def _no_provider_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests start with no provider keys from the developer's environment."""
    for name in (
        "OPENAI_API_KEY",
        "GEMINI_API_KEY",
        "GOOGLE_API_KEY",
        "VOYAGE_API_KEY",
        "MISTRAL_API_KEY",
        "OLLAMA_API_KEY",
        "MEMORY_ROUTER_HF_ENDPOINT",
        "HF_ENDPOINT",
    ):
        monkeypatch.delenv(name, raising=False)
