"""First index of a synthetic workspace through ``Router.sync``, per embedding route.

Each file holds ~1,300 characters of Python standard-library prose, numbered so no two
texts are alike: one chunk at the chunk size of the first runs, three at the default of 200
(40 overlapping), so ``--chunks N`` (files) makes ~3N chunks; the tables count chunks.
Routes:
``hash`` (the plumbing embedder: what the pipeline costs without a model), ``minilm`` as
it ran before issue #12 (numpy, multi-threaded BLAS, one batch at a time), ``minilm``
now (the verified onnxruntime route) and ``minilm-int8``. Every route indexes the same
files into a fresh state folder with a fresh embedding cache; routes take turns when
``--rounds`` > 1. ``numpy`` is today's numpy route (the one the onnxruntime route must
match), for ratios.

A large workspace through a real model takes long, so ``--sample N`` compares routes on
the first N files instead, in the same run, before the full index of the first route:

    .venv/bin/python bench/bench_index.py --chunks 10000 --routes hash
    .venv/bin/python bench/bench_index.py --chunks 200 --routes numpy-before,minilm,minilm-int8
    .venv/bin/python bench/bench_index.py --chunks 3334 --routes minilm \
        --sample 100 --sample-routes numpy,minilm        # ~10k chunks
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from bench_embeddings import corpus

from memory_router import Router, hookimpl, testing
from memory_router.kit import ProviderContext, ProviderSpec


class NumpyBefore:
    """``minilm-numpy-before``: the numpy route with BLAS threads, batches in turn."""

    @staticmethod
    @hookimpl
    def register_embedding_providers(register: Callable[[ProviderSpec], None]) -> None:
        from memory_router_minilm import MiniLMProvider, model_dir
        from memory_router_minilm._bert import encode_batches
        from memory_router_minilm._provider import _blas_threads

        class Before(MiniLMProvider):
            def encode(self, texts):  # type: ignore[no-untyped-def]
                inputs = self.route_inputs()
                encodings = inputs.tokenizer.encode_batch(list(texts))
                with _blas_threads(self.threads):
                    return encode_batches(encodings, 16, inputs.encoder.encode, dims=384)

        def factory(context: ProviderContext, model: str) -> MiniLMProvider:
            return Before(model_dir(), allow_fast=False)

        def numpy_now(context: ProviderContext, model: str) -> MiniLMProvider:
            return MiniLMProvider(model_dir(), allow_fast=False)

        register(ProviderSpec(name="numpy-before", factory=factory))
        register(ProviderSpec(name="numpy", factory=numpy_now))


def files(count: int) -> dict[str, str]:
    base = corpus(min(count, 150))
    return {
        f"memory/n{i:05d}.md": f"# note {i}\n\nNote {i}: {base[i % len(base)]}\n"
        for i in range(count)
    }


class Reporter:
    """Prints chunks done, the rate and the time left every ``every`` seconds (stderr)."""

    def __init__(self, route: str, every: float = 60.0) -> None:
        self.route, self.every = route, every
        self.started = self.last = time.perf_counter()

    def __call__(self, *, done: int, total: int, label: str) -> None:
        now = time.perf_counter()
        if now - self.last < self.every or not done:
            return
        self.last = now
        rate = done / (now - self.started)
        left = (total - done) / rate if rate else float("inf")
        print(f"  {self.route}: {done}/{total} {label} at {now - self.started:.0f} s, "
              f"{rate:.1f}/s, ~{left / 60:.0f} min left, load {os.getloadavg()[0]:.1f}",
              file=sys.stderr, flush=True)  # fmt: skip


def index_once(route: str, workspace: Path, folder: Path) -> tuple[float, int, float]:
    """``(wall s, chunks, CPU s)``: CPU of every thread of this process, the steadier
    figure on a shared machine (an idle one runs ``threads`` of them side by side)."""
    config = testing.router_config(folder, workspace, backend="sqlite", embedding=route)
    with Router.from_config(config, plugins=[testing, NumpyBefore]) as router:
        started, cpu = time.perf_counter(), time.process_time()
        report = router.sync(progress=Reporter(route))[0]
        if report.errors:
            raise SystemExit(f"{route}: {report.errors}")
        return time.perf_counter() - started, report.chunks, time.process_time() - cpu


def sample(count: int, routes: list[str], tmp: Path) -> None:
    """The first ``count`` files through each route, in turn; ratios against the first."""
    workspace = testing.write_workspace(tmp / "sample-ws", files(count))
    timed = {route: index_once(route, workspace, tmp / f"sample-{route}") for route in routes}
    first, _, first_cpu = timed[routes[0]]
    print(f"sample of {count} files, load {os.getloadavg()[0]:.1f}")
    print(f"| route (sample) | first index s | chunks/s | × {routes[0]} | CPU s "
          f"| chunks per CPU s | × {routes[0]} (CPU) |")  # fmt: skip
    print("|---|---|---|---|---|---|---|")
    for route, (seconds, chunks, cpu) in timed.items():
        print(f"| {route} | {seconds:.1f} | {chunks / seconds:.2f} | {first / seconds:.2f} "
              f"| {cpu:.0f} | {chunks / cpu:.2f} | {first_cpu / cpu:.2f} |")  # fmt: skip
    sys.stdout.flush()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=200)
    parser.add_argument("--routes", default="numpy-before,minilm,minilm-int8")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--sample", type=int, default=0, help="compare routes on N files first")
    parser.add_argument("--sample-routes", default="numpy,minilm")
    args = parser.parse_args()
    routes = [r.strip() for r in args.routes.split(",") if r.strip()]
    with tempfile.TemporaryDirectory(prefix="bench-index-") as tmp:
        if args.sample:
            sample(args.sample, [r for r in args.sample_routes.split(",") if r], Path(tmp))
        workspace = testing.write_workspace(Path(tmp) / "ws", files(args.chunks))
        print(f"{args.chunks} files, load before {os.getloadavg()[0]:.1f}")
        times: dict[str, list[float]] = {r: [] for r in routes}
        cpus: dict[str, list[float]] = {r: [] for r in routes}
        chunks = 0
        for round_ in range(args.rounds):
            for route in routes:
                run = index_once(route, workspace, Path(tmp) / f"{route}-{round_}")
                times[route].append(run[0])
                chunks = run[1]
                cpus[route].append(run[2])
        print(f"load after {os.getloadavg()[0]:.1f}")
    first = routes[0]
    print(f"{chunks} chunks")
    print(f"| route | first index s | chunks/s | × {first} | CPU s | chunks per CPU s |")
    print("|---|---|---|---|---|---|")
    for route, runs in times.items():
        ratio = statistics.median(b / r for r, b in zip(runs, times[first], strict=True))
        seconds, cpu = statistics.median(runs), statistics.median(cpus[route])
        print(f"| {route} | {seconds:.1f} | {chunks / seconds:.1f} | {ratio:.2f} | {cpu:.0f} "
              f"| {chunks / cpu:.2f} |")  # fmt: skip


if __name__ == "__main__":
    main()
