"""An ONNX graph of the numpy BERT, built by hand from the same weights (no torch, no export).

:func:`build_model` writes the forward pass of :class:`~._bert.BertEncoder` node by node
with ``onnx.helper``: embeddings, the encoder blocks (fused QKV projection, softmax
attention with the padding mask, exact erf GELU), mean pooling over the attention mask and
L2 normalisation. Inputs are ``input_ids`` and ``attention_mask`` (int64, ``(batch, seq)``);
the output ``sentence_embedding`` is ``(batch, 384)`` float32. onnxruntime then fuses the
layer norms and GELUs into its own kernels.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ._bert import Array, BertEncoder

OPSET = 17  # LayerNormalization is an ONNX op from 17 on
IR_VERSION = 8  # what onnxruntime 1.14+ reads


class _Graph:
    """Collects nodes and initialisers; every helper returns its output's name."""

    def __init__(self, onnx: Any) -> None:
        self.onnx = onnx
        self.nodes: list[Any] = []
        self.weights: list[Any] = []
        self._count = 0

    def name(self, hint: str) -> str:
        self._count += 1
        return f"{hint}_{self._count}"

    def const(self, hint: str, value: Array | np.ndarray[Any, Any]) -> str:
        name = self.name(hint)
        self.weights.append(self.onnx.numpy_helper.from_array(np.array(value, order="C"), name))
        return name

    def op(self, kind: str, *inputs: str, **attrs: Any) -> str:
        out = self.name(kind.lower())  # also the node's name, for quantisation exclusions
        self.nodes.append(self.onnx.helper.make_node(kind, list(inputs), [out], out, **attrs))
        return out

    def linear(self, x: str, weight: Array, bias: Array, hint: str) -> str:
        return self.op("Add", self.op("MatMul", x, self.const(hint + "_w", weight)),
                       self.const(hint + "_b", bias))  # fmt: skip

    def layer_norm(self, x: str, weight: Array, bias: Array, eps: float) -> str:
        return self.op(
            "LayerNormalization",
            x,
            self.const("ln_w", weight),
            self.const("ln_b", bias),
            axis=-1,
            epsilon=eps,
        )


def _f32(value: float) -> np.ndarray[Any, Any]:
    return np.array(value, dtype=np.float32)


def _i64(*values: int) -> np.ndarray[Any, Any]:
    return np.array(values, dtype=np.int64)


def build_model(encoder: BertEncoder, *, fused: bool = True) -> Any:
    """The ``onnx.ModelProto`` of ``encoder``'s forward pass (needs the ``onnx`` package)."""
    import onnx

    g = _Graph(onnx)
    hidden, heads = encoder.hidden, encoder.heads
    size = hidden // heads
    # Embeddings: word + position (0..seq-1) + token type 0, then layer norm.
    seq = g.op("Gather", g.op("Shape", "input_ids"), g.const("one", _i64(1)), axis=0)
    positions = g.op("Range", g.const("zero", np.array(0, np.int64)),
                     g.op("Squeeze", seq), g.const("step", np.array(1, np.int64)))  # fmt: skip
    x = g.op("Gather", g.const("word", encoder.word), "input_ids")
    x = g.op("Add", x, g.op("Gather", g.const("position", encoder.position), positions))
    x = g.op("Add", x, g.const("token_type", encoder.token_type[0]))
    x = g.layer_norm(x, *encoder.emb_ln, encoder.eps)
    # Attention bias: 0 where the mask is 1, -1e9 on padding; shape (batch, 1, 1, seq).
    mask = g.op("Cast", "attention_mask", to=onnx.TensorProto.FLOAT)
    keep = g.op("Unsqueeze", mask, g.const("axes", _i64(1, 2)))
    bias = g.op("Mul", g.op("Sub", keep, g.const("one_f", _f32(1.0))), g.const("big", _f32(1e9)))
    if fused:
        mask32 = g.op("Cast", "attention_mask", to=onnx.TensorProto.INT32)
        for layer in encoder.layers:
            x = _fused_block(g, x, mask32, layer, heads, encoder.eps)
    else:
        for layer in encoder.layers:
            x = _block(g, x, bias, layer, hidden, heads, size, encoder.eps)
    return _finish(g, onnx, x, mask, hidden, fused)


def _fused_block(g: _Graph, x: str, mask: str, layer: Any, heads: int, eps: float) -> str:
    """One encoder block with onnxruntime's exact fused kernels (``com.microsoft`` ops)."""
    ms = {"domain": "com.microsoft"}
    context = g.op("Attention", x, g.const("qkv_w", layer.qkv_w), g.const("qkv_b", layer.qkv_b),
                   mask, num_heads=heads, **ms)  # fmt: skip
    x = g.op("SkipLayerNormalization", g.op("MatMul", context, g.const("out_w", layer.out_w)),
             x, g.const("ln_w", layer.ln1_w), g.const("ln_b", layer.ln1_b),
             g.const("out_b", layer.out_b), epsilon=eps, **ms)  # fmt: skip
    inner = g.op("BiasGelu", g.op("MatMul", x, g.const("up_w", layer.up_w)),
                 g.const("up_b", layer.up_b), **ms)  # fmt: skip
    return g.op("SkipLayerNormalization", g.op("MatMul", inner, g.const("down_w", layer.down_w)),
                x, g.const("ln_w", layer.ln2_w), g.const("ln_b", layer.ln2_b),
                g.const("down_b", layer.down_b), epsilon=eps, **ms)  # fmt: skip


def _block(
    g: _Graph, x: str, bias: str, layer: Any, hidden: int, heads: int, size: int, eps: float
) -> str:
    qkv = g.linear(x, layer.qkv_w, layer.qkv_b, "qkv")
    # (batch, seq, 3, heads, size) -> (3, batch, heads, seq, size)
    qkv = g.op("Reshape", qkv, g.const("shape", _i64(0, 0, 3, heads, size)))
    qkv = g.op("Transpose", qkv, perm=[2, 0, 3, 1, 4])
    q, k, v = (g.op("Gather", qkv, g.const("index", np.array(i, np.int64)), axis=0)
               for i in range(3))  # fmt: skip
    q = g.op("Mul", q, g.const("scale", _f32(1.0 / math.sqrt(size))))
    scores = g.op("Add", g.op("MatMul", q, g.op("Transpose", k, perm=[0, 1, 3, 2])), bias)
    context = g.op("MatMul", g.op("Softmax", scores, axis=-1), v)
    context = g.op("Transpose", context, perm=[0, 2, 1, 3])
    context = g.op("Reshape", context, g.const("shape", _i64(0, 0, hidden)))
    attended = g.op("Add", g.linear(context, layer.out_w, layer.out_b, "out"), x)
    x = g.layer_norm(attended, layer.ln1_w, layer.ln1_b, eps)
    inner = g.linear(x, layer.up_w, layer.up_b, "up")
    # Exact GELU: 0.5 · x · (1 + erf(x / √2)); onnxruntime fuses this pattern into Gelu.
    erf = g.op("Erf", g.op("Div", inner, g.const("sqrt2", _f32(math.sqrt(2.0)))))
    gelu = g.op("Mul", g.op("Mul", inner, g.op("Add", erf, g.const("one_f", _f32(1.0)))),
                g.const("half", _f32(0.5)))  # fmt: skip
    down = g.op("Add", g.linear(gelu, layer.down_w, layer.down_b, "down"), x)
    return g.layer_norm(down, layer.ln2_w, layer.ln2_b, eps)


def _finish(g: _Graph, onnx: Any, x: str, mask: str, hidden: int, fused: bool) -> Any:
    """Mean pooling over the mask, L2 normalisation, and the model around the graph."""
    weights = g.op("Unsqueeze", mask, g.const("axes", _i64(2)))
    summed = g.op("ReduceSum", g.op("Mul", x, weights), g.const("axes", _i64(1)), keepdims=0)
    count = g.op("ReduceSum", weights, g.const("axes", _i64(1)), keepdims=0)
    pooled = g.op("Div", summed, g.op("Max", count, g.const("tiny", _f32(1e-9))))
    norm = g.op("ReduceL2", pooled, axes=[1], keepdims=1)  # axes an attribute before opset 18
    out = g.op("Div", pooled, g.op("Max", norm, g.const("tiny", _f32(1e-12))))
    g.nodes.append(onnx.helper.make_node("Identity", [out], ["sentence_embedding"]))
    int64, float32 = onnx.TensorProto.INT64, onnx.TensorProto.FLOAT
    graph = onnx.helper.make_graph(
        g.nodes,
        "all-MiniLM-L6-v2",
        [
            onnx.helper.make_tensor_value_info("input_ids", int64, ["batch", "seq"]),
            onnx.helper.make_tensor_value_info("attention_mask", int64, ["batch", "seq"]),
        ],
        [onnx.helper.make_tensor_value_info("sentence_embedding", float32, ["batch", hidden])],
        initializer=g.weights,
    )
    opsets = [onnx.helper.make_opsetid("", OPSET)]
    if fused:
        opsets.append(onnx.helper.make_opsetid("com.microsoft", 1))
    model = onnx.helper.make_model(graph, opset_imports=opsets, producer_name="memory-router")
    model.ir_version = IR_VERSION
    return model
