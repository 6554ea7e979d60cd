"""The ``local`` provider: a GGUF embedding model run by llama-cpp-python.

One ``Llama(embedding=True)`` context per provider, created on first use; every call holds
a lock (``concurrency = 1``): parallel embeddings on one llama.cpp context deadlocked in
OpenClaw (#7547). Inputs are truncated to the context size keeping the model's trailing
special token (``[SEP]`` for BERT, EOS where the tokenizer adds one), as
sentence-transformers does; llama-cpp-python's own truncation would cut it off.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from memory_router import EmbeddingError
from memory_router.kit import EmbeddingProvider, ProviderContext

from ._download import cached_path, is_remote, resolve_model

EXTRA_HINT = "pip install 'memory-router[local]' (llama-cpp-python compiles for ~5 minutes)"


def _llama_module() -> Any:
    try:
        return importlib.import_module("llama_cpp")
    except ImportError:
        raise EmbeddingError(
            "the local provider needs llama-cpp-python, which is not installed",
            provider="local",
            hint=EXTRA_HINT,
        ) from None


def truncate(ids: list[int], limit: int, suffix: Sequence[int]) -> list[int]:
    """``ids`` cut to ``limit`` tokens, keeping ``suffix`` (e.g. ``[SEP]``) at the end."""
    if len(ids) <= limit:
        return ids
    tail = list(suffix) if suffix and ids[-len(suffix) :] == list(suffix) else []
    return ids[: max(0, limit - len(tail))] + tail


class LlamaProvider(EmbeddingProvider):
    """A GGUF model through llama.cpp; ``model_path`` is resolved and loaded lazily, once."""

    id = "local"
    concurrency = 1
    max_batch_tokens = 8000

    def __init__(
        self,
        model_path: str,
        *,
        cache_dir: Path,
        model: str = "",
        threads: int = 0,
        context_size: int = 0,
        download_timeout: float = 30.0,
    ) -> None:
        self.model_path = model_path
        self.model = model or model_path
        self.cache_dir = cache_dir
        self.threads = threads or os.cpu_count() or 1
        self.context_size = context_size
        self.download_timeout = download_timeout
        self.max_input_tokens = context_size or 2048
        self._lock = threading.Lock()
        self._llm: Any = None
        self._dims: int | None = None

    @property
    def dims(self) -> int | None:
        """The model's vector size; loads a model that is already on disk to learn it.

        Asked before indexing (for the index fingerprint), so knowing it early keeps the
        fingerprint stable. A model still to be downloaded, or one that fails to load,
        gives ``None`` here and raises on the first embedding call instead.
        """
        if self._dims is None and self._on_disk():
            with self._lock:
                try:
                    self._load()
                except EmbeddingError:
                    return None
        return self._dims

    def _on_disk(self) -> bool:
        if not is_remote(self.model_path):
            return True  # a missing file fails in _load, with its message
        return cached_path(self.model_path, self.cache_dir).is_file()

    def cache_key_data(self) -> Mapping[str, Any]:
        return {"provider": self.id, "model": self.model}

    def _load(self) -> Any:
        if self._llm is not None:
            return self._llm
        llama_cpp = _llama_module()
        path = resolve_model(self.model_path, self.cache_dir, timeout=self.download_timeout)
        try:
            llm = _truncating_llama(llama_cpp)(
                str(path),
                embedding=True,
                n_ctx=self.context_size,  # 0: the model's training context
                n_batch=self.context_size or 8192,
                n_ubatch=self.context_size or 8192,
                n_threads=self.threads,
                verbose=False,
            )
        except (ValueError, RuntimeError, OSError) as error:
            raise EmbeddingError(
                f"llama.cpp cannot load {path}: {error}",
                provider=self.id,
                hint="is it a GGUF embedding model?",
            ) from None
        self.max_input_tokens = llm.n_ctx()
        self._dims = llm.n_embd()
        self._llm = llm
        return llm

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        with self._lock:
            llm = self._load()
            try:
                vectors = llm.embed(list(texts), normalize=True, truncate=True)
            except (ValueError, RuntimeError) as error:
                raise EmbeddingError(
                    f"llama.cpp failed to embed: {error}", provider=self.id
                ) from None
        return [[float(x) for x in v] for v in vectors]

    def close(self) -> None:
        with self._lock:
            if self._llm is not None:
                self._llm.close()
                self._llm = None


def _truncating_llama(llama_cpp: Any) -> Any:
    """A ``Llama`` whose ``tokenize`` keeps the trailing special token when truncating.

    ``Llama.embed`` tokenises each text with ``self.tokenize``; overriding it is the one
    public hook to truncate the way sentence-transformers does.
    """

    class TruncatingLlama(llama_cpp.Llama):  # type: ignore[misc]
        _suffix: list[int] | None = None

        def tokenize(self, text: bytes, add_bos: bool = True, special: bool = False) -> list[int]:
            ids: list[int] = super().tokenize(text, add_bos, special)
            if not add_bos:
                return ids
            if self._suffix is None:
                empty = super().tokenize(b"", True, False)
                self._suffix = empty[1:] if len(empty) > 1 else []
            return truncate(ids, self.n_batch, self._suffix)

    return TruncatingLlama


def create(context: ProviderContext, model: str) -> LlamaProvider:
    """The factory. In ``auto`` mode only an existing local file makes it a candidate."""
    local = context.config.embedding.local
    path = (
        local.model_path
        if is_remote(local.model_path)
        else str(context.config.expand(local.model_path))
    )
    if context.config.embedding.provider == "auto" and (
        is_remote(path) or not Path(path).is_file()
    ):
        raise EmbeddingError(
            f"local.model_path {path!r} is not a local file (auto mode does not download)",
            provider="local",
        )
    if importlib.util.find_spec("llama_cpp") is None:
        _llama_module()
    return LlamaProvider(
        path,
        cache_dir=context.config.expand(local.model_cache_dir),
        model=model,
        threads=local.threads,
        context_size=local.context_size,
        download_timeout=local.download_timeout_s,
    )
