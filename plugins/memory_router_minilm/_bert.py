"""A BERT encoder in plain numpy: all-MiniLM-L6-v2 without torch or onnxruntime.

The forward pass follows Hugging Face's ``BertModel`` (absolute positions, post-layer-norm
blocks, exact erf GELU), then sentence-transformers' mean pooling over the attention mask
and L2 normalisation, so its vectors match the reference implementation to cosine ≈ 1.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

Array = npt.NDArray[np.float32]
MAX_TOKENS = 256
"""all-MiniLM-L6-v2 was trained on 256 word pieces; every route truncates there."""


# Numerical Recipes' erfc fit (fractional error < 1.2e-7), highest power first for polyval.
_ERFC_FIT = np.array(
    [0.17087277, -0.82215223, 1.48851587, -1.13520398, 0.27886807, -0.18628806,
     0.09678418, 0.37409196, 1.00002368, -1.26551223],
    dtype=np.float32,
)  # fmt: skip


def gelu(x: Array) -> Array:
    """Exact GELU, ``x · Φ(x)`` with an erf good to ~1e-7 (not the tanh approximation)."""
    return np.asarray(0.5 * x * (1.0 + erf(x / np.float32(math.sqrt(2.0)))), dtype=np.float32)


def erf(x: Array) -> Array:
    """The error function, elementwise, in float32 (in-place Horner: this is a hot loop)."""
    z = np.abs(x, dtype=np.float32)
    t = z * np.float32(0.5)
    t += 1.0
    np.reciprocal(t, out=t)
    poly = np.full_like(t, _ERFC_FIT[0])
    for coefficient in _ERFC_FIT[1:]:
        poly *= t
        poly += coefficient
    z *= z
    poly -= z
    np.exp(poly, out=poly)
    poly *= t
    np.subtract(1.0, poly, out=poly)
    return np.copysign(poly, x, out=poly)


def layer_norm(x: Array, weight: Array, bias: Array, eps: float) -> Array:
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    out: Array = ((x - mean) / np.sqrt(var + eps)) * weight + bias
    return out


@dataclass(frozen=True, slots=True)
class _Layer:
    qkv_w: Array  # (hidden, 3·hidden): query, key and value fused into one matmul
    qkv_b: Array
    out_w: Array
    out_b: Array
    ln1_w: Array
    ln1_b: Array
    up_w: Array
    up_b: Array
    down_w: Array
    down_b: Array
    ln2_w: Array
    ln2_b: Array


class BertEncoder:
    """Token ids in, pooled sentence vectors out. Stateless after construction (thread-safe)."""

    def __init__(self, weights: Mapping[str, Array], config: Mapping[str, Any]) -> None:
        self.hidden = int(config["hidden_size"])
        self.heads = int(config["num_attention_heads"])
        self.eps = float(config.get("layer_norm_eps", 1e-12))
        w = {k.removeprefix("bert."): v.astype(np.float32) for k, v in weights.items()}
        self.word = w["embeddings.word_embeddings.weight"]
        self.position = w["embeddings.position_embeddings.weight"]
        self.token_type = w["embeddings.token_type_embeddings.weight"]
        self.emb_ln = (w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"])
        self.layers = [self._layer(w, i) for i in range(int(config["num_hidden_layers"]))]

    @staticmethod
    def _layer(w: Mapping[str, Array], i: int) -> _Layer:
        p = f"encoder.layer.{i}."
        att = p + "attention.self."
        return _Layer(
            qkv_w=np.concatenate([w[att + n + ".weight"].T for n in ("query", "key", "value")], 1),
            qkv_b=np.concatenate([w[att + n + ".bias"] for n in ("query", "key", "value")]),
            out_w=w[p + "attention.output.dense.weight"].T.copy(),
            out_b=w[p + "attention.output.dense.bias"],
            ln1_w=w[p + "attention.output.LayerNorm.weight"],
            ln1_b=w[p + "attention.output.LayerNorm.bias"],
            up_w=w[p + "intermediate.dense.weight"].T.copy(),
            up_b=w[p + "intermediate.dense.bias"],
            down_w=w[p + "output.dense.weight"].T.copy(),
            down_b=w[p + "output.dense.bias"],
            ln2_w=w[p + "output.LayerNorm.weight"],
            ln2_b=w[p + "output.LayerNorm.bias"],
        )

    @classmethod
    def from_dir(cls, model_dir: Path) -> BertEncoder:
        """Load ``model.safetensors`` and ``config.json`` from a sentence-transformers folder."""
        from safetensors.numpy import load_file

        config = json.loads((model_dir / "config.json").read_text(encoding="utf-8"))
        return cls(load_file(str(model_dir / "model.safetensors")), config)

    def encode(self, ids: npt.NDArray[np.int64], mask: npt.NDArray[np.int64]) -> Array:
        """Mean-pooled, L2-normalised vectors for a padded batch ``(batch, seq)``."""
        x = self._embed(ids)
        bias = np.where(mask[:, None, None, :] > 0, 0.0, -1e9).astype(np.float32)
        for layer in self.layers:
            x = self._block(x, bias, layer)
        weights = mask[:, :, None].astype(np.float32)
        pooled = (x * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return np.asarray(pooled / np.maximum(norms, 1e-12), dtype=np.float32)

    def _embed(self, ids: npt.NDArray[np.int64]) -> Array:
        seq = ids.shape[1]
        x = self.word[ids] + self.position[:seq][None, :, :] + self.token_type[0][None, None, :]
        return layer_norm(x, *self.emb_ln, self.eps)

    def _block(self, x: Array, bias: Array, layer: _Layer) -> Array:
        batch, seq, hidden = x.shape
        size = hidden // self.heads
        flat = x.reshape(batch * seq, hidden)  # 2-D matmuls go straight to BLAS
        qkv = (flat @ layer.qkv_w + layer.qkv_b).reshape(batch, seq, 3, self.heads, size)
        # Contiguous (batch, heads, seq, size) stacks: strided views make matmul skip BLAS.
        q, k, v = (np.ascontiguousarray(qkv[:, :, i].transpose(0, 2, 1, 3)) for i in range(3))
        q *= np.float32(1.0 / math.sqrt(size))
        scores = q @ np.ascontiguousarray(k.transpose(0, 1, 3, 2)) + bias
        scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
        scores /= scores.sum(axis=-1, keepdims=True)
        context = (scores @ v).transpose(0, 2, 1, 3).reshape(batch * seq, hidden)
        flat = layer_norm(
            context @ layer.out_w + layer.out_b + flat, layer.ln1_w, layer.ln1_b, self.eps
        )
        inner = gelu(flat @ layer.up_w + layer.up_b)
        out = layer_norm(
            inner @ layer.down_w + layer.down_b + flat, layer.ln2_w, layer.ln2_b, self.eps
        )
        return out.reshape(batch, seq, hidden)


def length_batches(lengths: Sequence[int], batch_size: int) -> list[list[int]]:
    """Indices grouped by similar length (shortest first), so padding stays small."""
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    return [order[i : i + batch_size] for i in range(0, len(order), batch_size)]


RunBatch = Callable[[npt.NDArray[np.int64], npt.NDArray[np.int64]], Array]


def encode_batches(
    encodings: Sequence[Any], batch_size: int, run: RunBatch, *, dims: int, workers: int = 1
) -> Array:
    """Vectors for tokenised texts, in input order: length-sorted batches, each padded only
    to its longest member, run on ``workers`` threads (each batch single-threaded)."""
    lengths = [sum(e.attention_mask) for e in encodings]
    groups = length_batches(lengths, batch_size)

    def one(group: list[int]) -> Array:
        width = max(lengths[i] for i in group)
        ids = np.array([encodings[i].ids[:width] for i in group], dtype=np.int64)
        mask = np.array([encodings[i].attention_mask[:width] for i in group], dtype=np.int64)
        return run(ids, mask)

    out = np.zeros((len(encodings), dims), dtype=np.float32)
    if workers > 1 and len(groups) > 1:
        with ThreadPoolExecutor(max_workers=min(workers, len(groups))) as pool:
            results = list(pool.map(one, groups))
    else:
        results = [one(group) for group in groups]
    for group, vectors in zip(groups, results, strict=True):
        out[group] = vectors
    return out
