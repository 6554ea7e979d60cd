"""Benchmark the SQLite backend: sync time, unchanged re-sync, search latency p50/p95.

    .venv/bin/python bench/bench_sqlite.py [--sizes 1000,10000,100000] [--queries 200]

For each size a synthetic workspace is written to a temporary folder (Zipf-distributed
words, ~400-character chunks; up to 10k files, so 100k chunks means 10 chunks a file) and
indexed four times: keyword-only; hybrid (the 384-d hashing embedder) with the default
``vector_search = "auto"`` (exact cosine over vectors held in memory while they fit the
budget); hybrid forced to sqlite-vec KNN; and hybrid with ``vector = false`` (no sqlite-vec
at all, the numpy path). Search
latency is measured on the backend (``Backend.search``, 24 candidates) and through
``Router.search`` (the defaults: 80 candidates, shaping), as wall time and as CPU time of
the process (all its threads) per query; for the default in-memory vector path, recall@10
of the vector leg against an exact scan (ties counted as found).

``--check`` prints each headline figure (Router.search p50 per size and mode) beside the
one recorded in docs/performance.md, both divided by a reference operation timed in the
same run (``bench/_guard.py``), and exits 1 when one is more than 1.5× worse or recall@10
is under 0.99; ``--record`` writes the run's figures there.
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

import _guard
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
        router.search(qs[0])  # the first query after a sync loads the vectors
        timed = search_times(router, qs)
        path = router.status(deep=True).backends[0].details.get("vector")
        recall = vector_recall(router, qs) if path == "numpy" else None  # in memory
    return {
        "chunks": report.chunks,
        "sync_s": sync_s,
        "resync_s": resync_s,
        "vector": path,
        "recall": recall,
        **timed,
    }


def search_times(router: Router, qs: list[str]) -> dict[str, tuple[float, float]]:
    """p50/p95 of wall and CPU milliseconds, for the backend and for Router.search."""
    backend = router.backend("sqlite")
    request = {"max_results": 6, "min_score": 0.0, "candidates": 24}
    samples: dict[str, list[float]] = {k: [] for k in ("backend", "router", "router_cpu")}
    for q in qs:
        started = time.perf_counter()
        backend.search(SearchRequest(query=q, **request))  # type: ignore[arg-type]
        samples["backend"].append((time.perf_counter() - started) * 1000)
        started, cpu = time.perf_counter(), time.process_time()
        router.search(q)
        samples["router"].append((time.perf_counter() - started) * 1000)
        samples["router_cpu"].append((time.process_time() - cpu) * 1000)
    return {f"{k}_ms": percentiles(v) for k, v in samples.items()}


def vector_recall(router: Router, qs: list[str], k: int = 10) -> float:
    """Recall@k of the in-memory vector leg against an exact scan of the same vectors."""
    backend: Any = router.backend("sqlite")
    embedder = backend.context.embedder
    with backend.store.reader() as conn:
        matrix = backend.store.matrix(conn, backend.model)
    found = 0.0
    for q in qs:
        vector = np.asarray(embedder.embed_query(q), dtype=np.float32)
        if not vector.any():
            found += 1.0
            continue
        exact = matrix.nearest.exact(vector)
        kth = np.sort(exact)[-k]
        top = matrix.nearest.top(vector, k)
        found += sum(1 for i, _ in top if exact[i] >= kth - 1e-6) / k
    return found / len(qs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument(
        "--modes", default="keyword,auto,vec,numpy", help="any of " + ", ".join(CASES)
    )
    parser.add_argument("--check", action="store_true", help="compare with docs/performance.md")
    parser.add_argument("--record", action="store_true", help="record the figures there")
    args = parser.parse_args()
    print(f"# {platform.platform()}, {os.cpu_count()} CPUs, Python {platform.python_version()}")
    before = _guard.reference()
    figures, recalls = run_all(args)
    after = _guard.reference()
    ref = _guard.Reference(ms=(before.ms + after.ms) / 2, load=max(before.load, after.load))
    print(f"reference {before.ms:.1f} ms (load {before.load:.1f}) before, {after.ms:.1f} ms"
          f" (load {after.load:.1f}) after")  # fmt: skip
    _guard.finish(figures, ref, check_=args.check, record_=args.record)
    low = [f"{name}: {value:.4f}" for name, value in recalls.items() if value < 0.99]
    if args.check and low:
        raise SystemExit(f"recall@10 under 0.99: {', '.join(low)}")


def run_all(args: argparse.Namespace) -> tuple[list[_guard.Figure], dict[str, float]]:
    """Every size and mode: prints the table; returns the headline figures and recalls."""
    header = "| chunks | files | mode | vector path | sync s | unchanged re-sync s"
    print(header + " | backend p50/p95 ms | Router.search p50/p95 ms | CPU ms | recall@10 |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    figures, recalls = [], {}
    command = f"bench_sqlite.py --sizes {args.sizes} --queries {args.queries}"
    for size in (int(s) for s in args.sizes.split(",")):
        with tempfile.TemporaryDirectory(prefix="bench-sqlite-") as tmp:
            workspace = Path(tmp) / "ws"
            files = write_corpus(workspace, size)
            qs = queries(workspace, args.queries)
            for name in args.modes.split(","):
                embedding, settings, label = CASES[name]
                r = run_case(Path(tmp) / name, workspace, embedding, settings, qs)
                recall = "—" if r["recall"] is None else f"{r['recall']:.4f}"
                print(
                    f"| {r['chunks']} | {files} | {label} | {r['vector']}"
                    f" | {r['sync_s']:.1f} | {r['resync_s']:.2f}"
                    " | {:.1f} / {:.1f} | {:.1f} / {:.1f} | {:.1f} | {} |".format(
                        *r["backend_ms"], *r["router_ms"], r["router_cpu_ms"][0], recall
                    ),
                    flush=True,
                )
                key = f"sqlite-{size}-{name}"
                p50 = r["router_ms"][0]
                figures.append(_guard.Figure(f"{key} Router.search p50", p50, "ms", command))
                if r["recall"] is not None:
                    recalls[key] = r["recall"]
    return figures, recalls


if __name__ == "__main__":
    main()
