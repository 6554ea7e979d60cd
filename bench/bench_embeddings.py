"""Local embedding routes on this machine: chunks per second, query latency, agreement.

Routes: the numpy MiniLM (always), llama.cpp with a GGUF converted from the same MiniLM
weights (when llama-cpp-python is installed), and onnxruntime / sentence-transformers when
importable and verified. Chunks are ~300-token slices of Python standard-library docs
(every route truncates them at 256 word pieces). Agreement is the per-chunk cosine
against the numpy route.

    .venv/bin/python bench/bench_embeddings.py [--chunks 200] [--threads 2]
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


def numpy_route(threads: int) -> tuple[Encode, Callable[[str], object]]:
    from memory_router_minilm import MiniLMProvider, model_dir

    provider = MiniLMProvider(model_dir(), threads=threads, allow_fast=False)
    return provider.encode_numpy, provider.embed_query


def llama_route(threads: int, folder: Path) -> tuple[Encode, Callable[[str], object]] | None:
    if importlib.util.find_spec("llama_cpp") is None:
        return None
    from memory_router_llama import LlamaProvider, convert_bert
    from memory_router_minilm import model_dir

    gguf = convert_bert(model_dir(), folder / "minilm-f32.gguf")
    provider = LlamaProvider(str(gguf), cache_dir=folder, threads=threads, context_size=256)

    def encode(texts: Sequence[str]) -> np.ndarray:
        return np.asarray(provider.embed_documents(texts), dtype=np.float32)

    return encode, provider.embed_query


def fast_route() -> tuple[str, Encode] | None:
    from memory_router_minilm import MiniLMProvider, model_dir
    from memory_router_minilm._fast import pick_fast_route

    reference = MiniLMProvider(model_dir(), allow_fast=False)
    return pick_fast_route(model_dir(), reference.encode_numpy)


def measure(encode: Encode, query: Callable[[str], object], chunks: list[str]) -> dict[str, float]:
    query("warm up")
    started = time.perf_counter()
    vectors = encode(chunks)
    elapsed = time.perf_counter() - started
    latencies = []
    for i in range(20):
        t = time.perf_counter()
        query(f"what did we decide about the deploy schedule {i}")
        latencies.append((time.perf_counter() - t) * 1000)
    return {
        "chunks_per_s": len(chunks) / elapsed,
        "seconds": elapsed,
        "query_ms": statistics.median(latencies),
        "vectors": vectors,  # type: ignore[dict-item]
    }


def cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a = a / np.linalg.norm(a, axis=1, keepdims=True)
    b = b / np.linalg.norm(b, axis=1, keepdims=True)
    return np.asarray((a * b).sum(axis=1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=200)
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args()
    chunks = corpus(args.chunks)
    print(f"{len(chunks)} chunks, {args.threads} threads, cpu_count={os.cpu_count()}")
    results: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        routes: dict[str, tuple[Encode, Callable[[str], object]] | None] = {
            "numpy MiniLM": numpy_route(args.threads),
            "llama.cpp GGUF f32": llama_route(args.threads, Path(tmp)),
        }
        fast = fast_route()
        if fast is not None:
            routes[fast[0]] = (fast[1], lambda q: fast[1]([q]))
        for name, route in routes.items():
            if route is None:
                print(f"{name}: not available")
                continue
            results[name] = measure(*route, chunks)
    reference = results["numpy MiniLM"]["vectors"]
    print(
        f"| route | chunks/s | {len(chunks)} chunks (s) | query latency (ms, median of 20)"
        " | cos vs numpy mean / min |"
    )
    print("|---|---|---|---|---|")
    for name, r in results.items():
        cos = cosines(np.asarray(r["vectors"]), np.asarray(reference))
        print(
            f"| {name} | {r['chunks_per_s']:.1f} | {r['seconds']:.1f} | {r['query_ms']:.1f} "
            f"| {cos.mean():.6f} / {cos.min():.6f} |"
        )


if __name__ == "__main__":
    main()
