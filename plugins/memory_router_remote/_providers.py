"""The remote providers: OpenAI (and any OpenAI-compatible server), Mistral, Ollama, Gemini, Voyage.

Request shapes follow OpenClaw (reference §4):

- OpenAI-compatible: ``POST {base}/embeddings {model, input:[…]}``, Bearer key, vectors
  from ``data[].embedding`` (ordered by ``index`` when present).
- Ollama: the OpenAI-compatible ``/v1/embeddings`` of Ollama ≥ 0.2 (one request per batch
  instead of the native ``/api/embeddings``' one per text); the key is optional.
- Gemini: queries ``POST {base}/models/{m}:embedContent`` with ``taskType
  RETRIEVAL_QUERY``; documents ``:batchEmbedContents`` with ``RETRIEVAL_DOCUMENT``;
  header ``x-goog-api-key``; ``outputDimensionality`` when configured.
- Voyage: like OpenAI plus ``input_type`` ``query`` or ``document``.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from memory_router.kit import ProviderContext

from ._http import HttpProvider, dig, resolve_key


class OpenAIProvider(HttpProvider):
    """``POST {base}/embeddings`` with a Bearer key; also serves OpenAI-compatible servers."""

    id = "openai"
    default_base: ClassVar[str] = "https://api.openai.com/v1"
    default_model: ClassVar[str] = "text-embedding-3-small"
    env_keys: ClassVar[tuple[str, ...]] = ("OPENAI_API_KEY",)
    key_required: ClassVar[bool] = True
    max_input_tokens = 8192
    known_dims: ClassVar[dict[str, int]] = {
        "text-embedding-3-small": 1536,
        "text-embedding-3-large": 3072,
        "text-embedding-ada-002": 1536,
    }

    @classmethod
    def create(cls, context: ProviderContext, model: str) -> HttpProvider:
        """The factory: resolves key, base URL and model, or raises :class:`EmbeddingError`."""
        remote = context.config.embedding.remote
        key = (
            resolve_key(context, cls.id, cls.env_keys)
            if cls.key_required
            else _optional_key(context, cls.env_keys)
        )
        return cls(
            context,
            model=model or cls.default_model,
            base_url=remote.base_url or cls.default_base,
            headers=cls.auth_headers(key),
            output_dims=remote.output_dimensionality,
        )

    def __init__(
        self,
        context: ProviderContext,
        *,
        model: str,
        base_url: str,
        headers: Mapping[str, str],
        output_dims: int = 0,
    ) -> None:
        super().__init__(context, model=model, base_url=base_url, headers=headers)
        self.output_dims = output_dims

    @staticmethod
    def auth_headers(key: str | None) -> dict[str, str]:
        return {"Authorization": f"Bearer {key}"} if key else {}

    @property
    def dims(self) -> int | None:
        """Seen in an answer, else documented for the provider's own endpoint, else ``None``.

        Knowing it before the first call keeps the index fingerprint stable.
        """
        if self._dims is not None:
            return self._dims
        if self.output_dims:
            return self.output_dims
        return self.known_dims.get(self.model) if self.base_url == self.default_base else None

    def cache_key_data(self) -> Mapping[str, Any]:
        return {
            "provider": self.id,
            "baseUrl": self.base_url,
            "model": self.model,
            "headers": self.public_headers(),
        }

    def request_body(self, texts: Sequence[str], *, query: bool) -> dict[str, Any]:
        return {"model": self.model, "input": list(texts)}

    def _embed(self, texts: Sequence[str], *, query: bool) -> list[list[float]]:
        timeout = self.query_timeout if query else self.batch_timeout
        answer = self.post("/embeddings", self.request_body(texts, query=query), timeout=timeout)
        data = dig(answer, "data")
        if not isinstance(data, list):
            raise self.error(f"{self.id} answer has no 'data' list: {str(answer)[:200]}")
        if all(isinstance(d, dict) and isinstance(d.get("index"), int) for d in data):
            data = sorted(data, key=lambda d: d["index"])
        return self.check([dig(d, "embedding") for d in data], len(texts))

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        return self._embed(texts, query=False) if texts else []

    def embed_query(self, text: str) -> list[float]:
        return self._embed([text], query=True)[0]


class MistralProvider(OpenAIProvider):
    id = "mistral"
    default_base = "https://api.mistral.ai/v1"
    default_model = "mistral-embed"
    env_keys = ("MISTRAL_API_KEY",)
    known_dims: ClassVar[dict[str, int]] = {"mistral-embed": 1024}

    def cache_key_data(self) -> Mapping[str, Any]:
        return {"provider": self.id, "model": self.model}


class OllamaProvider(MistralProvider):
    id = "ollama"
    default_base = "http://127.0.0.1:11434/v1"
    default_model = "nomic-embed-text"
    env_keys = ("OLLAMA_API_KEY",)
    key_required = False
    known_dims: ClassVar[dict[str, int]] = {"nomic-embed-text": 768}


class VoyageProvider(MistralProvider):
    id = "voyage"
    default_base = "https://api.voyageai.com/v1"
    default_model = "voyage-4-large"
    env_keys = ("VOYAGE_API_KEY",)
    max_input_tokens = 32000
    known_dims: ClassVar[dict[str, int]] = {
        "voyage-4-large": 1024,
        "voyage-3": 1024,
        "voyage-3-lite": 512,
    }

    def request_body(self, texts: Sequence[str], *, query: bool) -> dict[str, Any]:
        return {
            **super().request_body(texts, query=query),
            "input_type": "query" if query else "document",
        }


class GeminiProvider(OpenAIProvider):
    """Google's Generative Language API: ``embedContent`` for queries, batches for documents."""

    id = "gemini"
    default_base = "https://generativelanguage.googleapis.com/v1beta"
    default_model = "gemini-embedding-001"
    env_keys = ("GEMINI_API_KEY", "GOOGLE_API_KEY")
    max_input_tokens = 2048
    known_dims: ClassVar[dict[str, int]] = {"gemini-embedding-001": 3072, "text-embedding-004": 768}

    @classmethod
    def create(cls, context: ProviderContext, model: str) -> HttpProvider:
        provider = super().create(context, model)
        # A configured OpenAI-compatibility suffix is cut off, as OpenClaw does.
        provider.base_url = re.sub(r"/openai(/.*)?$", "", provider.base_url)
        return provider

    @staticmethod
    def auth_headers(key: str | None) -> dict[str, str]:
        """``x-goog-api-key``; an OAuth key given as JSON ``{"token": …}`` goes as Bearer."""
        if not key:
            return {}
        if key.lstrip().startswith("{"):
            try:
                token = json.loads(key).get("token")
            except (json.JSONDecodeError, AttributeError):
                token = None
            if isinstance(token, str) and token:
                return {"Authorization": f"Bearer {token}"}
        return {"x-goog-api-key": key}

    def cache_key_data(self) -> Mapping[str, Any]:
        return {**super().cache_key_data(), "outputDimensionality": self.output_dims or None}

    def _request(self, text: str, task: str) -> dict[str, Any]:
        body: dict[str, Any] = {"content": {"parts": [{"text": text}]}, "taskType": task}
        if self.output_dims:
            body["outputDimensionality"] = self.output_dims
        return body

    def embed_query(self, text: str) -> list[float]:
        path = f"/models/{self.model}:embedContent"
        answer = self.post(path, self._request(text, "RETRIEVAL_QUERY"), timeout=self.query_timeout)
        return self.check([dig(answer, "embedding", "values")], 1)[0]

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        requests = [
            {"model": f"models/{self.model}", **self._request(t, "RETRIEVAL_DOCUMENT")}
            for t in texts
        ]
        path = f"/models/{self.model}:batchEmbedContents"
        answer = self.post(path, {"requests": requests}, timeout=self.batch_timeout)
        embeddings = dig(answer, "embeddings")
        if not isinstance(embeddings, list):
            raise self.error(f"gemini answer has no 'embeddings' list: {str(answer)[:200]}")
        return self.check([dig(e, "values") for e in embeddings], len(texts))


def _optional_key(context: ProviderContext, env_keys: tuple[str, ...]) -> str | None:
    secret = context.config.embedding.remote.api_key
    if secret is not None:
        return (secret.resolve() or "").strip() or None
    return next((os.environ[n].strip() for n in env_keys if os.environ.get(n, "").strip()), None)


PROVIDERS: tuple[tuple[type[OpenAIProvider], int | None], ...] = (
    (OpenAIProvider, 20),
    (GeminiProvider, 30),
    (VoyageProvider, 40),
    (MistralProvider, 50),
    (OllamaProvider, None),
)
"""Each provider class with its ``auto`` priority (``None``: explicit only, as OpenClaw)."""
