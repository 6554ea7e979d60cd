"""Remote embedding providers: ``openai``, ``gemini``, ``voyage``, ``mistral``, ``ollama``.

``openai`` also serves any OpenAI-compatible server (vLLM, LM Studio, Ollama's ``/v1``)
through ``[embedding.remote] base_url``. Keys come from ``[embedding.remote] api_key``
(``{ env = "NAME" }`` or ``{ file = "…" }``) or the provider's standard environment
variable; a missing key is an :class:`~memory_router.EmbeddingError` naming it.
"""

from __future__ import annotations

from collections.abc import Callable

from memory_router import hookimpl
from memory_router.kit import ProviderSpec

from ._http import HttpProvider, RetryableError
from ._providers import (
    PROVIDERS,
    GeminiProvider,
    MistralProvider,
    OllamaProvider,
    OpenAIProvider,
    VoyageProvider,
)

__all__ = [
    "GeminiProvider",
    "HttpProvider",
    "MistralProvider",
    "OllamaProvider",
    "OpenAIProvider",
    "RetryableError",
    "VoyageProvider",
]


@hookimpl
def register_embedding_providers(register: Callable[[ProviderSpec], None]) -> None:
    for cls, priority in PROVIDERS:
        register(
            ProviderSpec(
                name=cls.id,
                factory=cls.create,
                auto_priority=priority,
                description=f"{cls.default_model} at {cls.default_base}",
            )
        )
