"""Benchmark the SQLite backend: sync time, unchanged re-sync, search latency p50/p95.

    .venv/bin/python bench/bench_sqlite.py [--sizes 1000,10000,100000] [--queries 200]

For each size a synthetic workspace is written to a temporary folder (Zipf-distributed
words, ~400-character chunks; up to 10k files, so 100k chunks means 10 chunks a file) and
indexed four times: keyword-only; hybrid (the 384-d hashing embedder) with the default
``vector_search = "auto"`` (exact cosine over vectors held in memory while they fit the
budget); hybrid forced to sqlite-vec KNN; and hybrid with ``vector = false`` (no sqlite-vec
at all, the numpy path). Search
latency is measured on the backend (``Backend.search``) and through ``Router.search``.
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import statistics
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from memory_router import Router, testing
from memory_router.kit import SearchRequest

MAX_FILES = 10_000


FUNCTION_WORDS = [
    "the",
    "of",
    "and",
    "to",
    "a",
    "in",
    "is",
    "it",
    "you",
    "that",
    "he",
    "was",
    "for",
    "on",
    "are",
    "with",
    "as",
    "i",
    "his",
    "they",
    "be",
    "at",
    "one",
    "have",
    "this",
    "from",
    "or",
    "had",
    "by",
    "but",
    "some",
    "what",
    "there",
    "we",
    "can",
    "out",
    "other",
    "were",
    "all",
    "your",
    "when",
    "up",
    "use",
    "how",
    "said",
    "an",
    "each",
    "she",
    "which",
    "do",
    "their",
    "if",
    "will",
    "way",
    "about",
    "many",
    "then",
    "them",
    "would",
    "like",
    "so",
    "these",
    "her",
    "see",
    "him",
    "has",
    "more",
    "could",
    "go",
    "come",
    "did",
    "my",
    "no",
    "get",
    "made",
    "over",
    "did",
    "down",
    "only",
]


def vocabulary(size: int = 20_000, seed: int = 7) -> list[str]:
    """English function words first (the head of the Zipf curve), then invented words.

    As in real text, the most frequent words are stop words, which keyword extraction
    drops; without them every OR query would match nearly every chunk.
    """
    rng = random.Random(seed)
    letters = "abcdefghijklmnopqrstuvwxyz"
    invented = [
        "".join(rng.choice(letters) for _ in range(rng.randint(4, 10)))
        for _ in range(size - len(FUNCTION_WORDS))
    ]
    return [*dict.fromkeys(FUNCTION_WORDS), *invented]


def paragraph(words: Iterator[str]) -> str:
    """Two lines of about 170 characters: one ~350-character chunk at 100 tokens."""
    lines = []
    for _ in range(2):
        line: list[str] = []
        while sum(len(w) + 1 for w in line) < 170:
            line.append(next(words))
        lines.append(" ".join(line))
    return "\n".join(lines)


def write_corpus(root: Path, chunks: int, seed: int = 11) -> int:
    """Write ``chunks`` chunk-sized paragraphs into at most 10k files; returns files written."""
    vocab = vocabulary()
    rng = np.random.default_rng(seed)
    ranks = np.minimum(rng.zipf(1.2, size=chunks * 80), len(vocab)) - 1
    words = (vocab[r] for r in ranks)
    files = min(chunks, MAX_FILES)
    per_file = chunks // files
    folder = root / "memory"
    folder.mkdir(parents=True, exist_ok=True)
    for index in range(files):
        text = "\n\n".join(paragraph(words) for _ in range(per_file))
        (folder / f"note-{index:05d}.md").write_text(text + "\n")
    return files


def queries(root: Path, count: int, seed: int = 3) -> list[str]:
    """Three content words (no function words) drawn from one random file each."""
    rng = random.Random(seed)
    paths = sorted((root / "memory").iterdir())
    stop = set(FUNCTION_WORDS)
    found = []
    for path in rng.sample(paths, min(count, len(paths))):
        words = sorted({w for w in path.read_text().split() if w not in stop})
        found.append(" ".join(rng.sample(words, min(3, len(words)))))
    return found


def percentiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))]
    return statistics.median(ordered), p95


CASES: dict[str, tuple[str, dict[str, Any], str]] = {
    "keyword": ("none", {}, "keyword-only"),
    "auto": ("hash", {}, "hybrid (hash-384), default auto"),
    "vec": ("hash", {"vector_search": "sqlite-vec"}, "hybrid (hash-384), sqlite-vec forced"),
    "numpy": ("hash", {"vector": False}, "hybrid (hash-384), vector = false"),
}


def run_case(
    base: Path, workspace: Path, embedding: str, settings: dict[str, Any], qs: list[str]
) -> dict[str, Any]:
    config = testing.router_config(
        base,
        workspace,
        backend="sqlite",
        embedding=embedding,
        settings=settings,
        chunking={"tokens": 100, "overlap": 0},
        sync={"on_search": False},
    )
    with Router.from_config(config, plugins=[testing]) as router:
        started = time.perf_counter()
        report = router.sync()[0]
        sync_s = time.perf_counter() - started
        assert not report.errors, report.errors
        started = time.perf_counter()
        again = router.sync()[0]
        resync_s = time.perf_counter() - started
        assert again.added == again.updated == 0
        backend = router.backend("sqlite")
        raw, routed = [], []
        for q in qs:
            started = time.perf_counter()
            backend.search(SearchRequest(query=q, max_results=6, min_score=0.0, candidates=24))
            raw.append((time.perf_counter() - started) * 1000)
            started = time.perf_counter()
            router.search(q)
            routed.append((time.perf_counter() - started) * 1000)
        path = router.status(deep=True).backends[0].details.get("vector")
    return {
        "chunks": report.chunks,
        "sync_s": sync_s,
        "resync_s": resync_s,
        "backend_ms": percentiles(raw),
        "router_ms": percentiles(routed),
        "vector": path,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument(
        "--modes", default="keyword,auto,vec,numpy", help="any of " + ", ".join(CASES)
    )
    args = parser.parse_args()
    print(f"# {platform.platform()}, {os.cpu_count()} CPUs, Python {platform.python_version()}")
    header = "| chunks | files | mode | vector path | sync s | unchanged re-sync s"
    print(header + " | backend p50/p95 ms | Router.search p50/p95 ms |")
    print("|---|---|---|---|---|---|---|---|")
    for size in (int(s) for s in args.sizes.split(",")):
        with tempfile.TemporaryDirectory(prefix="bench-sqlite-") as tmp:
            workspace = Path(tmp) / "ws"
            files = write_corpus(workspace, size)
            qs = queries(workspace, args.queries)
            for name in args.modes.split(","):
                embedding, settings, label = CASES[name]
                folder = Path(tmp) / name
                result = run_case(folder, workspace, embedding, settings, qs)
                mode = label
                b50, b95 = result["backend_ms"]
                r50, r95 = result["router_ms"]
                print(
                    f"| {result['chunks']} | {files} | {mode} | {result['vector']}"
                    f" | {result['sync_s']:.1f} | {result['resync_s']:.2f}"
                    f" | {b50:.1f} / {b95:.1f} | {r50:.1f} / {r95:.1f} |",
                    flush=True,
                )


if __name__ == "__main__":
    main()
