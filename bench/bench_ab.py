"""Two checkouts' warm ``Router.search`` side by side, in turns: which is faster, by how much.

    .venv/bin/python bench/bench_ab.py OTHER_CHECKOUT [--mode auto|keyword] [--rounds 30]

This machine's speed drifts by a third from minute to minute (a shared 2-vCPU VM), so two
benches run one after the other compare the minutes, not the code. Here each checkout
runs in its own process (its own ``.venv``) on the same index, and they take turns: 20
searches of one, 20 of the other, the first to go alternating. Both see the same
minutes; the ratio of their p50s is the code's. A run of this checkout against itself
shows the noise (±5 % here).

The index: ``bench_sqlite.py``'s synthetic 100k-chunk workspace (written once, kept in
``--cache``; ``--mode keyword`` has no embeddings, ``auto`` the hashing embedder). A turn
asks each query as the headline figure does: the backend first (24 candidates: its
keywords' postings are fetched), then, timed, ``Router.search``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
TURN = 20


def serve(checkout: Path, mode: str, cache: Path) -> None:
    """The worker: build or open the index, then answer ``N`` lines with N timed searches."""
    sys.path.insert(0, str(checkout / "bench"))
    import bench_sqlite as b

    from memory_router import Router, testing
    from memory_router.kit import SearchRequest

    workspace = cache / "ws"
    if not (workspace / "memory").exists():
        b.write_corpus(workspace, 100_000)
    queries = b.queries(workspace, 1000)
    embedding = "none" if mode == "keyword" else "hash"
    config = testing.router_config(
        cache / mode, workspace, backend="sqlite", embedding=embedding, settings={},
        chunking={"tokens": 100, "overlap": 0}, sync={"on_search": False},
    )  # fmt: skip
    with Router.from_config(config, plugins=[testing]) as router:
        router.sync()
        router.search(queries[0])
        backend = router.backend("sqlite")
        postings = backend.store.postings  # type: ignore[attr-defined]
        print("ready", flush=True)
        asked = 0
        for line in sys.stdin:
            times = []
            for _ in range(int(line)):
                query = queries[asked % len(queries)]
                asked += 1
                request = SearchRequest(query=query, max_results=6, min_score=0.0, candidates=24)
                backend.search(request)
                b.settle(postings)
                started = time.perf_counter()
                router.search(query)
                times.append((time.perf_counter() - started) * 1000)
            print(json.dumps(times), flush=True)


def compare(checkouts: list[Path], mode: str, rounds: int, cache: Path) -> None:
    # One worker builds the index first: two building it at once would race.
    workers = []
    for checkout in checkouts:
        python = checkout / ".venv" / "bin" / "python"
        if not python.exists():
            raise SystemExit(f"{checkout} has no .venv/bin/python: run `make test` there first")
        command = [str(python), __file__, "--worker", str(checkout), "--mode", mode]
        command += ["--cache", str(cache)]
        worker = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert worker.stdout is not None
        assert worker.stdout.readline().strip() == "ready", f"{checkout} did not start"
        workers.append(worker)
    samples: list[list[float]] = [[], []]
    try:
        for turn in range(rounds):
            for index in (0, 1) if turn % 2 == 0 else (1, 0):
                stdin, stdout = workers[index].stdin, workers[index].stdout
                assert stdin is not None
                assert stdout is not None
                stdin.write(f"{TURN}\n")
                stdin.flush()
                samples[index].extend(json.loads(stdout.readline()))
    finally:
        for worker in workers:
            if worker.stdin is not None:
                worker.stdin.close()
            worker.wait(timeout=60)
    print(f"# {mode}, {rounds} turns of {TURN} searches each, load {os.getloadavg()[0]:.1f}")
    for checkout, times in zip(checkouts, samples, strict=True):
        ordered = sorted(times)
        p95 = ordered[int(len(ordered) * 0.95)]
        p50 = statistics.median(ordered)
        print(f"{checkout}: Router.search p50 {p50:.2f} ms, p95 {p95:.2f} ms")
    ratio = statistics.median(samples[1]) / statistics.median(samples[0])
    print(f"{checkouts[1]} ÷ {checkouts[0]}: p50 {ratio:.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("other", nargs="?", help="the checkout to compare this one with")
    parser.add_argument("--mode", choices=("auto", "keyword"), default="auto")
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--cache", type=Path, default=Path("/tmp/memory-router-bench-ab"))
    parser.add_argument("--worker", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker is not None:
        serve(args.worker, args.mode, args.cache)
        return
    if args.other is None:
        parser.error("name the checkout to compare with (this one against itself shows noise)")
    compare([Path(args.other).resolve(), HERE.parent], args.mode, args.rounds, args.cache)


if __name__ == "__main__":
    main()
