"""``minilm-int8``: all-MiniLM-L6-v2 with int8 weights through onnxruntime (opt-in).

The fp32 graph of :mod:`._graph` is quantised with onnxruntime's dynamic quantisation:
int8 weights per output channel, activations quantised per call, in the attention and
feed-forward projections; the feed-forward down projections, where BERT's activation
outliers live, stay fp32 (:data:`KEEP_FP32`), and so do the embeddings, layer norms,
softmax and pooling. Each text runs alone (activation scales are per input tensor, so
batching would make a vector depend on its batch-mates). The vectors are close to fp32
but not the same (measured in docs/performance.md), so the provider has its own id and
provider key: its vectors never mix with ``minilm``'s in the cache or an index. The
quantised model is built once and kept in ``[embedding.local] model_cache_dir``.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from memory_router import EmbeddingError
from memory_router.kit import ProviderContext

from ._bert import Array, BertEncoder
from ._fast import agrees, ort_available, ort_encoder, ort_session
from ._provider import MODEL, MiniLMProvider, checked_folder

QUANTIZATION = "int8-dynamic-per-channel-v1"
"""Changes whenever the recipe changes, so old cached models and vectors are not reused."""
MIN_COSINE = 0.98
"""The start-up check against the numpy fp32 route: catches a broken build, not drift."""
KEEP_FP32 = ("down_w",)
"""Weights whose MatMuls stay fp32 (by initialiser name prefix)."""


class MiniLMInt8Provider(MiniLMProvider):
    """The int8 route for every call (queries too: its vectors differ from fp32 ones)."""

    id = "minilm-int8"

    def __init__(self, folder: Path, *, threads: int = 0, cache_dir: Path | None = None) -> None:
        super().__init__(folder, threads=threads, allow_fast=False)
        self.cache_dir = cache_dir
        self.route = "onnxruntime-int8"

    def cache_key_data(self) -> Mapping[str, Any]:
        return {"provider": self.id, "model": MODEL, "quantization": QUANTIZATION}

    def encode(self, texts: Sequence[str]) -> Array:
        self._load()
        with self._lock:
            if self._fast is None:
                self._fast = self._build()
        return self._fast(texts)

    def _build(self) -> Any:
        if not ort_available():
            raise EmbeddingError(
                "minilm-int8 needs onnxruntime and onnx",
                provider=self.id,
                hint="pip install 'memory-router[minilm]'",
            )
        inputs = self._inputs()  # loaded by encode(); this thread holds the lock
        session = ort_session(quantized_model(inputs.encoder, self.folder, self.cache_dir))
        # One text per run: dynamic quantisation scales activations over the whole input
        # tensor, so a batch would make a text's vector depend on its batch-mates.
        encode = ort_encoder(session, inputs.tokenizer, self.threads, batch=1)
        score = agrees(self._run_numpy, encode)
        if score < MIN_COSINE:
            raise EmbeddingError(
                f"the int8 model disagrees with fp32 (cosine {score:.4f} < {MIN_COSINE})",
                provider=self.id,
                hint='use provider = "minilm"',
            )
        return encode

    def close(self) -> None:
        super().close()
        self.route = "onnxruntime-int8"


def quantized_model(encoder: BertEncoder, folder: Path, cache_dir: Path | None) -> bytes:
    """The int8 model's bytes, from ``cache_dir`` when an identical build is there."""
    import onnxruntime

    weights = folder / "model.safetensors"
    stat = weights.stat()
    key = hashlib.sha256(
        f"{stat.st_size}:{stat.st_mtime_ns}:{QUANTIZATION}:{onnxruntime.__version__}".encode()
    ).hexdigest()[:16]
    cached = cache_dir / f"{MODEL}-{QUANTIZATION}-{key}.onnx" if cache_dir else None
    if cached is not None and cached.is_file():
        return cached.read_bytes()
    data = _quantize(encoder)
    if cached is not None:
        cached.parent.mkdir(parents=True, exist_ok=True)
        partial = cached.with_suffix(f".tmp-{os.getpid()}")
        partial.write_bytes(data)
        partial.replace(cached)  # atomic: a concurrent start never reads half a model
    return data


def _quantize(encoder: BertEncoder) -> bytes:
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    from ._graph import build_model

    model = build_model(encoder)
    keep = [
        node.name
        for node in model.graph.node
        if node.op_type == "MatMul" and any(i.startswith(KEEP_FP32) for i in node.input)
    ]
    with tempfile.TemporaryDirectory(prefix="minilm-int8-") as tmp:
        source, target = Path(tmp) / "fp32.onnx", Path(tmp) / "int8.onnx"
        onnx.save(model, str(source))
        quantize_dynamic(
            str(source),
            str(target),
            per_channel=True,
            weight_type=QuantType.QInt8,
            op_types_to_quantize=["MatMul", "Attention"],
            nodes_to_exclude=keep,
            extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT},
        )
        return target.read_bytes()


def create_int8(context: ProviderContext, model: str) -> MiniLMInt8Provider:
    """The ``minilm-int8`` factory."""
    folder = checked_folder(model, "minilm-int8")
    local = context.config.embedding.local
    cache_dir = Path(context.config.expand(local.model_cache_dir))
    return MiniLMInt8Provider(folder, threads=local.threads, cache_dir=cache_dir)
