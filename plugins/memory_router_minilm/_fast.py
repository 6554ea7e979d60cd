"""Optional faster routes for MiniLM, used only when they give the numpy route's vectors.

If ``sentence_transformers`` or ``onnxruntime`` is importable (and, for onnxruntime, an
ONNX export sits in the model folder as ``onnx/model.onnx`` or ``model.onnx``), the route
is built and checked at start: every probe text must reach cosine ≥ 0.9999 against the
numpy route, or the route is dropped and numpy stays. Any failure while building a route
also keeps numpy; speed is never bought with different vectors.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ._bert import MAX_TOKENS, Array

Encode = Callable[[Sequence[str]], Array]
MIN_COSINE = 0.9999
PROBES = (
    "The client prefers blue over green.",
    "Deploys run every Tuesday at 10:00 UTC; rollbacks need two approvals.",
    "résumé, naïve café — unicode and punctuation!",
    " ".join(["a long text that is truncated at two hundred and fifty six word pieces"] * 40),
)


def agrees(reference: Encode, candidate: Encode, texts: Sequence[str] = PROBES) -> float:
    """The minimum cosine between the two routes over ``texts`` (vectors are normalised)."""
    a = np.asarray(reference(texts), dtype=np.float64)
    b = np.asarray(candidate(texts), dtype=np.float64)
    if a.shape != b.shape:
        return -1.0
    a /= np.maximum(np.linalg.norm(a, axis=1, keepdims=True), 1e-12)
    b /= np.maximum(np.linalg.norm(b, axis=1, keepdims=True), 1e-12)
    return float((a * b).sum(axis=1).min())


def verified(name: str, candidate: Encode | None, reference: Encode) -> tuple[str, Encode] | None:
    """``(name, candidate)`` when it agrees with ``reference`` to :data:`MIN_COSINE`, else None."""
    if candidate is None:
        return None
    try:
        score = agrees(reference, candidate)
    except Exception:  # a broken optional runtime must never break embedding
        return None
    return (name, candidate) if score >= MIN_COSINE else None


Builder = Callable[[Path], "Encode | None"]


def pick_fast_route(
    folder: Path, reference: Encode, routes: Sequence[tuple[str, Builder]] | None = None
) -> tuple[str, Encode] | None:
    """The first installed, verified route of ``routes`` (default :data:`ROUTES`), or None."""
    for name, build in ROUTES if routes is None else routes:
        try:
            candidate = build(folder)
        except Exception:  # optional runtimes fail in many ways; numpy is always there
            candidate = None
        found = verified(name, candidate, reference)
        if found is not None:
            return found
    return None


def _onnx_route(folder: Path) -> Encode | None:
    if importlib.util.find_spec("onnxruntime") is None:
        return None
    path = next(
        (p for p in (folder / "onnx" / "model.onnx", folder / "model.onnx") if p.is_file()), None
    )
    if path is None:
        return None
    onnxruntime: Any = importlib.import_module("onnxruntime")

    from ._provider import load_tokenizer

    session: Any = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    tokenizer = load_tokenizer(folder)
    inputs = {i.name for i in session.get_inputs()}

    def encode(texts: Sequence[str]) -> Array:
        enc = tokenizer.encode_batch(list(texts))
        ids = np.array([e.ids for e in enc], dtype=np.int64)
        mask = np.array([e.attention_mask for e in enc], dtype=np.int64)
        feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        hidden = session.run(None, {k: v for k, v in feed.items() if k in inputs})[0]
        weights = mask[:, :, None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        return np.asarray(pooled / np.linalg.norm(pooled, axis=1, keepdims=True), np.float32)

    return encode


def _st_route(folder: Path) -> Encode | None:
    if importlib.util.find_spec("sentence_transformers") is None:
        return None
    st: Any = importlib.import_module("sentence_transformers")
    model: Any = st.SentenceTransformer(str(folder), device="cpu")
    model.max_seq_length = MAX_TOKENS

    def encode(texts: Sequence[str]) -> Array:
        vectors = model.encode(list(texts), batch_size=32, normalize_embeddings=True)
        return np.asarray(vectors, dtype=np.float32)

    return encode


ROUTES: tuple[tuple[str, Builder], ...] = (
    ("onnxruntime", _onnx_route),
    ("sentence-transformers", _st_route),
)
"""The optional routes, fastest first; each builder returns ``None`` when not installed."""
