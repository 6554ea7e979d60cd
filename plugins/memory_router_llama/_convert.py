"""Write a BERT sentence-transformers folder (safetensors) as a llama.cpp GGUF, without torch.

Used by the tests and the benchmark to make a small local model from all-MiniLM-L6-v2,
and usable by anyone who wants that model in GGUF form. It writes what llama.cpp's
``convert_hf_to_gguf.py`` writes for ``BertModel``: architecture ``bert``, mean pooling,
non-causal attention, the WordPiece vocabulary in "phantom space" form (``▁word``, ``##``
dropped) and the special token ids. Needs ``gguf``, ``safetensors`` and ``numpy``.
"""

from __future__ import annotations

import importlib
import json
from pathlib import Path
from typing import Any

import numpy as np

from memory_router import EmbeddingError

_SPECIAL = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")


def _phantom(token: str) -> str:
    if token in _SPECIAL:
        return token
    return token[2:] if token.startswith("##") else "\u2581" + token


def _vocab(model_dir: Path) -> list[str]:
    lines = (model_dir / "vocab.txt").read_text(encoding="utf-8").splitlines()
    return [line for line in lines if line != ""] if lines[-1] == "" else lines


def _hparams(writer: Any, gguf: Any, config: dict[str, Any], context_length: int) -> None:
    writer.add_name(config.get("_name_or_path", "bert").split("/")[-1])
    writer.add_context_length(context_length)
    writer.add_embedding_length(config["hidden_size"])
    writer.add_feed_forward_length(config["intermediate_size"])
    writer.add_block_count(config["num_hidden_layers"])
    writer.add_head_count(config["num_attention_heads"])
    writer.add_layer_norm_eps(config.get("layer_norm_eps", 1e-12))
    writer.add_causal_attention(False)
    writer.add_pooling_type(gguf.PoolingType.MEAN)
    writer.add_file_type(gguf.LlamaFileType.ALL_F32)


def _tokenizer(writer: Any, gguf: Any, model_dir: Path, config: dict[str, Any]) -> None:
    tokens = _vocab(model_dir)
    types = [gguf.TokenType.CONTROL if t in _SPECIAL else gguf.TokenType.NORMAL for t in tokens]
    writer.add_token_type_count(config.get("type_vocab_size", 2))
    writer.add_tokenizer_model("bert")
    writer.add_tokenizer_pre("default")
    writer.add_token_list([_phantom(t) for t in tokens])
    writer.add_token_types(types)
    ids = {t: i for i, t in enumerate(tokens)}
    writer.add_unk_token_id(ids["[UNK]"])
    writer.add_sep_token_id(ids["[SEP]"])
    writer.add_pad_token_id(ids["[PAD]"])
    writer.add_bos_token_id(ids["[CLS]"])  # llama.cpp reads CLS as BOS for WPM vocabularies
    writer.add_mask_token_id(ids["[MASK]"])


def _tensors(writer: Any, gguf: Any, model_dir: Path, config: dict[str, Any]) -> None:
    from safetensors.numpy import load_file

    names = gguf.TensorNameMap(gguf.MODEL_ARCH.BERT, config["num_hidden_layers"])
    for name, tensor in sorted(load_file(str(model_dir / "model.safetensors")).items()):
        name = name.removeprefix("bert.")
        if name in ("embeddings.position_ids",) or name.startswith(("pooler.", "cls.")):
            continue
        mapped = names.get_name(name, try_suffixes=(".weight", ".bias"))
        if mapped is None:
            raise EmbeddingError(f"cannot map tensor {name!r} to GGUF", provider="local")
        writer.add_tensor(mapped, np.ascontiguousarray(tensor, dtype=np.float32))


def convert_bert(model_dir: Path, out: Path, *, context_length: int | None = None) -> Path:
    """Write ``model_dir`` (a BERT sentence-transformers folder) as an f32 GGUF at ``out``."""
    try:
        gguf: Any = importlib.import_module("gguf")
    except ImportError:
        raise EmbeddingError(
            "converting to GGUF needs the `gguf` package",
            provider="local",
            hint="pip install gguf",
        ) from None
    config = json.loads((model_dir / "config.json").read_text(encoding="utf-8"))
    out.parent.mkdir(parents=True, exist_ok=True)
    writer = gguf.GGUFWriter(str(out), "bert")
    try:
        _hparams(writer, gguf, config, context_length or config["max_position_embeddings"])
        _tokenizer(writer, gguf, model_dir, config)
        _tensors(writer, gguf, model_dir, config)
        writer.write_header_to_file()
        writer.write_kv_data_to_file()
        writer.write_tensors_to_file()
    finally:
        writer.close()
    return out
