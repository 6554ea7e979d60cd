"""Local embedding routes on this machine: chunks per second, query latency, agreement.

Routes: the numpy MiniLM as it ran before issue #12 (multi-threaded BLAS, one batch at a
time) and as it runs now (one BLAS thread per batch, batches side by side), the verified
onnxruntime route, the int8 route (``minilm-int8``), and llama.cpp with a GGUF converted
from the same weights (``--llama``). Chunks are ~300-token slices of Python
standard-library docs (every route truncates them at 256 word pieces).

The routes take turns for ``--rounds`` rounds, so load from other processes hits them
alike; each figure is the median over rounds and each ratio the median of the per-round
ratios against the first route. CPU time (user + sys of this process, all threads) per
chunk is the idle-machine equivalent: load from other processes barely changes it.
Agreement is the per-chunk cosine against numpy.

    .venv/bin/python bench/bench_embeddings.py [--chunks 48] [--rounds 3] [--threads N]
"""

from __future__ import annotations

import argparse
import importlib.util
import inspect
import os
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

Encode = Callable[[Sequence[str]], np.ndarray]


def corpus(count: int, chars: int = 1300) -> list[str]:
    """``count`` distinct ~300-token chunks from standard-library docstrings."""
    import collections
    import email.message
    import json
    import pathlib
    import subprocess
    import threading
    import typing

    text = []
    for module in (collections, email.message, json, pathlib, subprocess, threading, typing, os):
        for _, member in inspect.getmembers(module):
            doc = inspect.getdoc(member)
            if doc and len(doc) > 200:
                text.append(doc)
    joined = " ".join(" ".join(text).split())
    chunks = [joined[i : i + chars] for i in range(0, len(joined) - chars, chars)]
    if len(chunks) < count:
        raise SystemExit(f"only {len(chunks)} chunks of text available")
    return chunks[:count]


def routes(threads: int, folder: Path, llama: bool) -> dict[str, Encode]:
    from memory_router_minilm import MiniLMProvider, model_dir
    from memory_router_minilm._bert import encode_batches
    from memory_router_minilm._provider import _blas_threads

    numpy_now = MiniLMProvider(model_dir(), threads=threads, allow_fast=False)
    inputs = numpy_now.route_inputs()

    def numpy_before(texts: Sequence[str]) -> np.ndarray:
        encodings = inputs.tokenizer.encode_batch(list(texts))
        with _blas_threads(threads):
            return encode_batches(encodings, 16, inputs.encoder.encode, dims=384)

    found: dict[str, Encode] = {
        "numpy, before (BLAS threads, batches of 16 in turn)": numpy_before,
        "numpy, now (1 BLAS thread a batch, batches side by side)": numpy_now.encode,
    }
    fast = MiniLMProvider(model_dir(), threads=threads)
    fast.encode(["warm"] * 8)
    if fast.route != "numpy":
        found[f"{fast.route} fp32 (the default when installed)"] = fast.encode
    int8 = int8_route(threads)
    if int8 is not None:
        found["onnxruntime int8 (`minilm-int8`, opt-in)"] = int8
    if llama:
        route = llama_route(threads, folder)
        if route is not None:
            found["llama.cpp GGUF f32"] = route
    return found


def int8_route(threads: int) -> Encode | None:
    try:
        from memory_router_minilm import MiniLMInt8Provider, model_dir
    except ImportError:
        return None
    provider = MiniLMInt8Provider(model_dir(), threads=threads)
    try:
        provider.encode(["warm"] * 8)
    except Exception as error:  # not installed: reported, not fatal
        print(f"int8 route unavailable: {error}")
        return None
    return provider.encode


def llama_route(threads: int, folder: Path) -> Encode | None:
    if importlib.util.find_spec("llama_cpp") is None:
        return None
    from memory_router_llama import LlamaProvider, convert_bert
    from memory_router_minilm import model_dir

    gguf = convert_bert(model_dir(), folder / "minilm-f32.gguf")
    provider = LlamaProvider(str(gguf), cache_dir=folder, threads=threads, context_size=256)

    def encode(texts: Sequence[str]) -> np.ndarray:
        return np.asarray(provider.embed_documents(texts), dtype=np.float32)

    return encode


def query_ms(encode: Encode) -> float:
    latencies = []
    for i in range(10):
        started = time.perf_counter()
        encode([f"what did we decide about the deploy schedule {i}"])
        latencies.append((time.perf_counter() - started) * 1000)
    return statistics.median(latencies)


def cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a = a / np.linalg.norm(a, axis=1, keepdims=True)
    b = b / np.linalg.norm(b, axis=1, keepdims=True)
    return np.asarray((a * b).sum(axis=1))


def median_ratio(runs: Sequence[float], base: Sequence[float]) -> float:
    """The median of the per-round ratios ``runs[i] / base[i]``."""
    return statistics.median(r / b for r, b in zip(runs, base, strict=True))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=48)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--llama", action="store_true", help="also time llama.cpp (slow)")
    args = parser.parse_args()
    chunks = corpus(args.chunks)
    print(f"{len(chunks)} chunks x {args.rounds} rounds, {args.threads} threads, "
          f"cpu_count={os.cpu_count()}, load before {os.getloadavg()[0]:.1f}")  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp:
        found = routes(args.threads, Path(tmp), args.llama)
        speeds: dict[str, list[float]] = {name: [] for name in found}
        cpu: dict[str, list[float]] = {name: [] for name in found}
        vectors: dict[str, np.ndarray] = {}
        for _ in range(args.rounds):
            for name, encode in found.items():
                started, cpu_started = time.perf_counter(), time.process_time()
                vectors[name] = np.asarray(encode(chunks))
                speeds[name].append(len(chunks) / (time.perf_counter() - started))
                cpu[name].append(len(chunks) / (time.process_time() - cpu_started))
        latency = {name: query_ms(encode) for name, encode in found.items()}
    before, now = list(found)[:2]
    reference = vectors[before]
    print(f"load after {os.getloadavg()[0]:.1f}")
    print("| route | chunks/s (median) | × numpy before | × numpy now | chunks per CPU-s "
          "| × numpy now, CPU time | query ms | cos vs numpy mean / min |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|")
    for name, runs in speeds.items():
        ratios = [median_ratio(runs, speeds[base]) for base in (before, now)]
        cos = cosines(vectors[name], reference)
        print(f"| {name} | {statistics.median(runs):.1f} | {ratios[0]:.2f} | {ratios[1]:.2f} "
              f"| {statistics.median(cpu[name]):.1f} | {median_ratio(cpu[name], cpu[now]):.2f} "
              f"| {latency[name]:.1f} | {cos.mean():.6f} / {cos.min():.6f} |")  # fmt: skip


if __name__ == "__main__":
    main()
