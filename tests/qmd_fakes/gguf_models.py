"""Tiny random-weight GGUF stand-ins for QMD's models, made by the tests (ref qmd.md §11).

The weights are random, so relevance means nothing; what matters is that QMD (through
node-llama-cpp) loads them, embeds and searches. The tokenizer metadata is copied from
llama.cpp's vocab-only GGUF files, taken from the llama-cpp-python source package
(``.tools/sdist/llama_cpp_python-*.tar.gz``, cached by the tests' first run, or fetched
with ``.venv/bin/pip download --no-deps --no-binary :all: llama-cpp-python==0.3.36 -d
.tools/sdist``). :func:`vocab_file` returns ``None`` when neither is available.
"""

from __future__ import annotations

import tarfile
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[2]
VOCAB_DIR = REPO / ".tools" / "gguf-vocab"
SDIST_DIR = REPO / ".tools" / "sdist"


def vocab_file(name: str = "ggml-vocab-bert-bge.gguf") -> Path | None:
    """A vocab-only GGUF from llama.cpp, extracted from the cached sdist if needed."""
    target = VOCAB_DIR / name
    if target.is_file():
        return target
    for sdist in sorted(SDIST_DIR.glob("llama_cpp_python-*.tar.gz")):
        with tarfile.open(sdist) as archive:
            member = next(
                (m for m in archive.getmembers() if m.name.endswith(f"llama.cpp/models/{name}")),
                None,
            )
            if member is None:
                continue
            VOCAB_DIR.mkdir(parents=True, exist_ok=True)
            source = archive.extractfile(member)
            assert source is not None
            with source:
                target.write_bytes(source.read())
            return target
    return None


def write_bert_embedder(
    path: Path, vocab: Path, *, dims: int = 64, seed: int = 5, ranker: bool = False
) -> Path:
    """A one-layer BERT embedder (mean pooling, ``dims``-d) with ``vocab``'s tokenizer.

    ``ranker=True`` makes a cross-encoder reranker instead: rank pooling and a ``cls``
    head with one output, which node-llama-cpp accepts as a ranking model.
    """
    import gguf

    reader = gguf.GGUFReader(vocab)
    n_vocab = len(reader.fields["tokenizer.ggml.tokens"].contents())
    writer = gguf.GGUFWriter(str(path), "bert")
    writer.add_name("memory-router test embedder")
    writer.add_context_length(512)
    writer.add_embedding_length(dims)
    writer.add_feed_forward_length(dims * 2)
    writer.add_block_count(1)
    writer.add_head_count(4)
    writer.add_layer_norm_eps(1e-12)
    writer.add_causal_attention(False)
    writer.add_pooling_type(gguf.PoolingType.RANK if ranker else gguf.PoolingType.MEAN)
    writer.add_file_type(gguf.LlamaFileType.ALL_F32)
    _copy_tokenizer(reader, writer)
    tensors = _bert_tensors(n_vocab, dims, seed)
    if ranker:
        rng = np.random.default_rng(seed + 1)
        tensors |= {
            "cls.weight": (rng.standard_normal((dims, dims)) * 0.05).astype(np.float32),
            "cls.bias": np.zeros(dims, np.float32),
            "cls.output.weight": (rng.standard_normal((1, dims)) * 0.05).astype(np.float32),
            "cls.output.bias": np.zeros(1, np.float32),
        }
    for name, array in tensors.items():
        writer.add_tensor(name, array)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def _copy_tokenizer(reader: Any, writer: Any) -> None:
    import gguf

    for key, field in reader.fields.items():
        if not key.startswith("tokenizer."):
            continue
        kind = field.types[0]
        value = field.contents()
        if kind == gguf.GGUFValueType.ARRAY:
            writer.add_array(key, value)
        else:
            writer.add_key_value(key, value, kind)


def _bert_tensors(n_vocab: int, dims: int, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)

    def rand(*shape: int) -> np.ndarray:
        return (rng.standard_normal(shape) * 0.05).astype(np.float32)

    ones, zeros = np.ones(dims, np.float32), np.zeros(dims, np.float32)
    tensors = {
        "token_embd.weight": rand(n_vocab, dims),
        "token_types.weight": rand(2, dims),
        "position_embd.weight": rand(512, dims),
        "token_embd_norm.weight": ones,
        "token_embd_norm.bias": zeros,
    }
    for part in ("attn_q", "attn_k", "attn_v", "attn_output"):
        tensors[f"blk.0.{part}.weight"] = rand(dims, dims)
        tensors[f"blk.0.{part}.bias"] = zeros.copy()
    tensors |= {
        "blk.0.attn_output_norm.weight": ones.copy(),
        "blk.0.attn_output_norm.bias": zeros.copy(),
        "blk.0.ffn_up.weight": rand(dims * 2, dims),
        "blk.0.ffn_up.bias": np.zeros(dims * 2, np.float32),
        "blk.0.ffn_down.weight": rand(dims, dims * 2),
        "blk.0.ffn_down.bias": zeros.copy(),
        "blk.0.layer_output_norm.weight": ones.copy(),
        "blk.0.layer_output_norm.bias": zeros.copy(),
    }
    return tensors
