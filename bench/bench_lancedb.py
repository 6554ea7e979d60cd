"""Benchmark the LanceDB backend beside the built-in SQLite backend, in one process.

    .venv/bin/python bench/bench_lancedb.py [--sizes 10000,100000] [--queries 100] [--s3]
        [--s3-interval 1]
    .venv/bin/python bench/bench_lancedb.py --ann 1000000 [--ann-index ivf_pq] \
        [--nprobes 20,50] [--refine 5,10]
    .venv/bin/python bench/bench_lancedb.py --processes 30 [--s3]
    .venv/bin/python bench/bench_lancedb.py --quick

For each size the same synthetic workspace as ``bench_sqlite.py`` (Zipf words, ~350
character chunks, the 384-d hashing embedder) is synced into SQLite, LanceDB on a local
folder and, with ``--s3``, LanceDB on a loopback moto S3 server (``read_consistency_interval_s``
= ``--s3-interval``, 1 s by default as docs/backends.md advises); then ``optimize()`` is
timed, and every query runs on each backend in turn (interleaved, so machine load hits
all alike). ``--ann N`` imports N synthetic chunks, builds the ANN index and measures
vector search p50 and recall@10 against exact search. ``--processes S`` runs 2 writer and
4 reader processes on one store for S seconds and checks nothing was lost.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import numpy as np
from bench_sqlite import percentiles, queries, write_corpus

from memory_router import Chunk, Router, SearchRequest, testing
from memory_router_lancedb import _search

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
from s3_helpers.moto_server import BUCKET, S3Server, start_moto  # noqa: E402


def router(base: Path, workspace: Path, backend: str, settings: dict[str, Any]) -> Router:
    config = testing.router_config(
        base,
        workspace,
        backend=backend,
        embedding="hash",
        settings=settings,
        chunking={"tokens": 100, "overlap": 0},
        sync={"on_search": False},
    )
    return Router.from_config(config, plugins=[testing])


def request(q: str) -> SearchRequest:
    return SearchRequest(query=q, max_results=6, min_score=0.0, candidates=24)


def compare(size: int, count: int, server: S3Server | None, interval: float) -> None:
    with tempfile.TemporaryDirectory(prefix="bench-lance-") as tmp:
        base = Path(tmp)
        workspace = base / "ws"
        write_corpus(workspace, size)
        qs = queries(workspace, count)
        stores: dict[str, tuple[str, dict[str, Any]]] = {
            "sqlite": ("sqlite", {}),
            "lancedb local": ("lancedb", {"uri": str(base / "lance")}),
        }
        if server is not None:
            uri = f"s3://{BUCKET}/bench/{uuid.uuid4().hex}"
            stores["lancedb s3 (moto)"] = (
                "lancedb",
                {
                    "uri": uri,
                    "storage_options": server.options(),
                    "read_consistency_interval_s": interval,
                },
            )
        routers = {
            label: router(base / label.replace(" ", "-"), workspace, name, settings)
            for label, (name, settings) in stores.items()
        }
        rows: dict[str, dict[str, Any]] = {}
        for label, r in routers.items():
            rows[label] = build(r, stores[label][0])
        for label, r in routers.items():
            backend = r.backend(stores[label][0])
            backend.search(request(qs[0]))  # warm: open tables, load indexes
        samples: dict[str, list[float]] = {label: [] for label in routers}
        for q in qs:
            for label, r in routers.items():
                backend = r.backend(stores[label][0])
                started = time.perf_counter()
                backend.search(request(q))
                samples[label].append((time.perf_counter() - started) * 1000)
        base_p50 = percentiles(samples["sqlite"])[0]
        for label, r in routers.items():
            p50, p95 = percentiles(samples[label])
            row = rows[label]
            print(
                f"| {size} | {label} | {row['sync_s']:.1f} | {row['chunks'] / row['sync_s']:.0f}"
                f" | {row['optimize_ms']} | {p50:.1f} / {p95:.1f} | {p50 / base_p50:.2f}× |",
                flush=True,
            )
            r.close()


def build(r: Router, name: str) -> dict[str, Any]:
    started = time.perf_counter()
    report = r.sync()[0]
    sync_s = time.perf_counter() - started
    assert not report.errors, report.errors
    optimize_ms = "–"
    backend: Any = r.backend(name)
    if name == "lancedb":
        started = time.perf_counter()
        backend.optimize()
        optimize_ms = f"{(time.perf_counter() - started) * 1000:.0f}"
    return {"sync_s": sync_s, "chunks": report.chunks, "optimize_ms": optimize_ms}


def ann(rows: int, count: int, index: str, probes: list[int], refines: list[int]) -> None:
    """Import ``rows`` synthetic chunks, build the ANN index, compare with exact search."""
    embedder = testing.HashingEmbedder()
    vocab_rng = np.random.default_rng(5)
    vocab = [f"w{i}" for i in range(50_000)]
    with tempfile.TemporaryDirectory(prefix="bench-lance-ann-") as tmp:
        base = Path(tmp)
        workspace = testing.write_workspace(base / "ws", {"MEMORY.md": "# empty\n"})
        settings = {"uri": str(base / "lance"), "ann_min_rows": 1, "ann_index": index}
        r = router(base / "state", workspace, "lancedb", settings)
        backend: Any = r.backend("lancedb")
        fingerprint = r.fingerprint()
        texts: list[str] = []

        def chunks() -> Any:
            for i in range(rows):
                words = [vocab[k] for k in np.minimum(vocab_rng.zipf(1.3, 40), 50_000) - 1]
                text = " ".join(words)
                if len(texts) < 5000:
                    texts.append(text)
                yield Chunk(
                    id=f"c{i}",
                    path=f"memory/f{i // 100}.md",
                    source="memory",
                    start_line=i % 100 + 1,
                    end_line=i % 100 + 1,
                    text=text,
                    hash=str(i),
                    model=embedder.model,
                    embedding=tuple(embedder.vector(text)),
                )

        started = time.perf_counter()
        backend.import_chunks(chunks(), fingerprint=fingerprint)
        import_s = time.perf_counter() - started
        store = backend.store
        tables = store.tables(store.pointer().generation)
        started = time.perf_counter()
        backend.optimize()  # builds the ANN index (ann_min_rows = 1) and compacts
        build_s = time.perf_counter() - started
        rng = np.random.default_rng(9)
        picks = rng.choice(len(texts), size=count, replace=False)
        vectors = [
            embedder.vector(" ".join(rng.choice(texts[int(k)].split(), size=4, replace=False)))
            for k in picks
        ]
        exact_ms, truths = [], []
        for vector in vectors:
            search = tables.chunks.search(vector, vector_column_name="vector")
            started = time.perf_counter()
            exact = search.distance_type("cosine").bypass_vector_index().limit(10)
            truth = exact.select(["id", "_distance"])
            truths.append(set(truth.to_arrow().column("id").to_pylist()))
            exact_ms.append((time.perf_counter() - started) * 1000)
        e50, e95 = percentiles(exact_ms)
        for nprobes in probes:
            for refine in refines:
                ann_ms, recalls = [], []
                for vector, truth in zip(vectors, truths, strict=True):
                    started = time.perf_counter()
                    found = _search.vector_rows(
                        tables.chunks,
                        vector,
                        where=None,
                        limit=10,
                        refine_factor=refine,
                        nprobes=nprobes,
                    )
                    ann_ms.append((time.perf_counter() - started) * 1000)
                    recalls.append(len(truth & set(found)) / max(1, len(truth)))
                a50, a95 = percentiles(ann_ms)
                print(
                    f"| {rows} | {index} | {nprobes} | {refine} | {import_s:.0f} | {build_s:.0f}"
                    f" | {e50:.1f} / {e95:.1f} | {a50:.1f} / {a95:.1f}"
                    f" | {float(np.mean(recalls)):.3f} | {os.getloadavg()[0]:.1f} |",
                    flush=True,
                )
        r.close()


def processes(seconds: float, server: S3Server | None) -> None:
    """2 writers + 4 readers on one store for ``seconds``; prints what each saw."""
    worker = ROOT / "tests" / "s3_helpers" / "lance_worker.py"
    with tempfile.TemporaryDirectory(prefix="bench-lance-proc-") as tmp:
        base = Path(tmp)
        workspace = testing.write_workspace(base / "ws", {"MEMORY.md": "# Kiln log\n"})
        settings: dict[str, Any] = {"uri": str(base / "lance"), "read_consistency_interval_s": 1.0}
        if server is not None:
            settings = {
                **settings,
                "uri": f"s3://{BUCKET}/procs/{uuid.uuid4().hex}",
                "storage_options": server.options(),
            }
        config = testing.router_config(
            base, workspace, backend="lancedb", embedding="hash", settings=settings
        )
        with Router.from_config(config, plugins=[testing]) as r:
            r.sync()
        outs = [base / f"out-{n}.json" for n in range(6)]
        args = [sys.executable, str(worker)]
        procs = [
            subprocess.Popen(
                [*args, "writer", str(config.file), str(seconds), str(outs[n]), str(n)]
            )
            for n in range(2)
        ] + [
            subprocess.Popen([*args, "reader", str(config.file), str(seconds), str(outs[n])])
            for n in range(2, 6)
        ]
        for p in procs[:2]:
            p.wait(timeout=seconds * 20 + 300)
        with Router.from_config(config, plugins=[testing]) as r:
            report = r.sync()[0]
            total = len(r.entries())
            lance: Any = r.backend("lancedb")
            ids = (
                lance.store.tables(lance.store.pointer().generation)
                .entries.to_arrow()
                .column("id")
                .to_pylist()
            )
        for out in outs[2:]:
            out.with_suffix(".done").write_text(str(total))
        for p in procs[2:]:
            p.wait(timeout=300)
        results = [json.loads(o.read_text()) for o in outs]
    written = sum(len(w["ids"]) for w in results[:2])
    errors = sum(len(w["errors"]) for w in results)
    searches = sum(w["searches"] for w in results[2:])
    converged = max(w["converged_s"] for w in results[2:])
    print(
        f"| {'s3 (moto)' if server else 'local'} | {seconds:.0f} | {written} | {total} | {len(ids)}"
        f" | {len(set(ids))} | {searches} | {errors} | {converged:.2f}"
        f" | {report.errors or 'none'} |",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument(
        "--s3", action="store_true", help="also measure LanceDB on a loopback moto S3 server"
    )
    parser.add_argument(
        "--s3-interval",
        type=float,
        default=1.0,
        help="read_consistency_interval_s of the S3 store (0 = check before every read)",
    )
    parser.add_argument("--ann", type=int, default=0, help="rows for the ANN recall run")
    parser.add_argument("--ann-index", default="ivf_hnsw_sq")
    parser.add_argument("--nprobes", default="20", help="ANN run: comma-separated nprobes")
    parser.add_argument("--refine", default="5", help="ANN run: comma-separated refine factors")
    parser.add_argument(
        "--processes", type=float, default=0, help="seconds of the multi-process run"
    )
    parser.add_argument("--quick", action="store_true", help="2k chunks, 30 queries, S3 on")
    args = parser.parse_args()
    if args.quick:
        args.sizes, args.queries, args.s3 = "2000", 30, True
    print(f"# {platform.platform()}, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}")
    server = start_moto() if args.s3 else None
    try:
        if args.processes:
            print(
                "| store | seconds | entries written | journal | store rows | distinct ids"
                " | reader searches | errors | reader catch-up s | final sync errors |"
            )
            print("|---|---|---|---|---|---|---|---|---|---|")
            processes(args.processes, server)
            return
        if args.ann:
            print(
                "| rows | index | nprobes | refine | import s | index build + optimize s"
                " | exact p50/p95 ms | ANN p50/p95 ms | recall@10 | load |"
            )
            print("|---|---|---|---|---|---|---|---|---|---|")
            probes = [int(n) for n in args.nprobes.split(",")]
            refines = [int(n) for n in args.refine.split(",")]
            ann(args.ann, min(args.queries, 100), args.ann_index, probes, refines)
            return
        print(
            "| chunks | store | sync s | chunks/s | optimize ms | hybrid p50/p95 ms"
            " | p50 vs SQLite |"
        )
        print("|---|---|---|---|---|---|---|")
        for size in (int(s) for s in args.sizes.split(",")):
            compare(size, args.queries, server, args.s3_interval)
    finally:
        if server is not None:
            server.stop()


if __name__ == "__main__":
    main()
