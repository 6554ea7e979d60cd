"""Faster routes for MiniLM, used only when they give the numpy route's vectors.

The ``onnxruntime`` route runs an ONNX graph built in memory from the same safetensors
weights (:mod:`._graph`; needs ``onnxruntime`` and ``onnx``, both in the ``minilm``
extra). ``sentence-transformers`` is used when importable (it brings torch). A route is
built and checked at start: every probe text must reach cosine ≥ 0.9999 against the numpy
route, or the route is dropped and numpy stays. Any failure while building a route also
keeps numpy; speed is never bought with different vectors.

Threads: onnxruntime runs each batch on one thread and ``threads`` batches at once (no
spinning), so another process taking a core slows it down in proportion instead of
stalling a team of threads at every barrier the way multi-threaded BLAS does.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ._bert import MAX_TOKENS, Array, BertEncoder, encode_batches

Encode = Callable[[Sequence[str]], Array]
MIN_COSINE = 0.9999
ORT_BATCH = 4  # texts per onnxruntime call: small length-sorted batches pad least
PROBES = (
    "The client prefers blue over green.",
    "Deploys run every Tuesday at 10:00 UTC; rollbacks need two approvals.",
    "résumé, naïve café — unicode and punctuation!",
    " ".join(["a long text that is truncated at two hundred and fifty six word pieces"] * 40),
)


@dataclass(frozen=True, slots=True, kw_only=True)
class RouteInputs:
    """What a route builder gets: the model folder, the loaded numpy model, the tokenizer."""

    folder: Path
    encoder: BertEncoder
    tokenizer: Any
    threads: int


Builder = Callable[[RouteInputs], "Encode | None"]


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


def pick_fast_route(
    inputs: RouteInputs, reference: Encode, routes: Sequence[tuple[str, Builder]] | None = None
) -> tuple[str, Encode] | None:
    """The first installed, verified route of ``routes`` (default :data:`ROUTES`), or None."""
    for name, build in ROUTES if routes is None else routes:
        try:
            candidate = build(inputs)
        except Exception:  # optional runtimes fail in many ways; numpy is always there
            candidate = None
        found = verified(name, candidate, reference)
        if found is not None:
            return found
    return None


def ort_session(model: bytes) -> Any:
    """An onnxruntime CPU session for one-thread runs (callers run batches side by side)."""
    onnxruntime: Any = importlib.import_module("onnxruntime")
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.log_severity_level = 3  # warnings about unused initialisers are noise here
    return onnxruntime.InferenceSession(model, options, providers=["CPUExecutionProvider"])


def ort_encoder(session: Any, tokenizer: Any, threads: int, *, batch: int = ORT_BATCH) -> Encode:
    """Texts → vectors through a session whose graph pools and normalises itself."""

    def run(ids: Any, mask: Any) -> Array:
        out = session.run(None, {"input_ids": ids, "attention_mask": mask})[0]
        return np.asarray(out, dtype=np.float32)

    def encode(texts: Sequence[str]) -> Array:
        encodings = tokenizer.encode_batch(list(texts))
        return encode_batches(encodings, batch, run, dims=384, workers=threads)

    return encode


def ort_available() -> bool:
    return all(importlib.util.find_spec(m) is not None for m in ("onnxruntime", "onnx"))


def _onnx_route(inputs: RouteInputs) -> Encode | None:
    if not ort_available():
        return None
    from ._graph import build_model

    session = ort_session(build_model(inputs.encoder).SerializeToString())
    return ort_encoder(session, inputs.tokenizer, inputs.threads)


def _st_route(inputs: RouteInputs) -> Encode | None:
    if importlib.util.find_spec("sentence_transformers") is None:
        return None
    st: Any = importlib.import_module("sentence_transformers")
    model: Any = st.SentenceTransformer(str(inputs.folder), device="cpu")
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
