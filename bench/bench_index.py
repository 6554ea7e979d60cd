"""First index of a synthetic workspace through ``Router.sync``, per embedding route.

Each file holds one ~1,300-character chunk of Python standard-library prose (~300 word
pieces, truncated at 256 by MiniLM), numbered so no two texts are alike. Routes:
``hash`` (the plumbing embedder: what the pipeline costs without a model), ``minilm`` as
it ran before issue #12 (numpy, multi-threaded BLAS, one batch at a time), ``minilm``
now (the verified onnxruntime route) and ``minilm-int8``. Every route indexes the same
files into a fresh state folder with a fresh embedding cache; routes take turns when
``--rounds`` > 1.

    .venv/bin/python bench/bench_index.py --chunks 10000 --routes hash
    .venv/bin/python bench/bench_index.py --chunks 200 --routes numpy-before,minilm,minilm-int8
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from bench_embeddings import corpus

from memory_router import ProviderContext, ProviderSpec, Router, hookimpl, testing


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

        register(ProviderSpec(name="numpy-before", factory=factory))


def files(count: int) -> dict[str, str]:
    base = corpus(min(count, 150))
    return {
        f"memory/n{i:05d}.md": f"# note {i}\n\nNote {i}: {base[i % len(base)]}\n"
        for i in range(count)
    }


def index_once(route: str, workspace: Path, folder: Path) -> tuple[float, int]:
    config = testing.router_config(folder, workspace, backend="sqlite", embedding=route)
    with Router.from_config(config, plugins=[testing, NumpyBefore]) as router:
        started = time.perf_counter()
        report = router.sync()[0]
        return time.perf_counter() - started, report.chunks


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=200)
    parser.add_argument("--routes", default="numpy-before,minilm,minilm-int8")
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args()
    routes = [r.strip() for r in args.routes.split(",") if r.strip()]
    with tempfile.TemporaryDirectory(prefix="bench-index-") as tmp:
        workspace = testing.write_workspace(Path(tmp) / "ws", files(args.chunks))
        print(f"{args.chunks} files, load before {os.getloadavg()[0]:.1f}")
        times: dict[str, list[float]] = {r: [] for r in routes}
        chunks = 0
        for round_ in range(args.rounds):
            for route in routes:
                seconds, chunks = index_once(route, workspace, Path(tmp) / f"{route}-{round_}")
                times[route].append(seconds)
        print(f"load after {os.getloadavg()[0]:.1f}")
    first = routes[0]
    print(f"| route | first index s | chunks/s | × {first} |")
    print("|---|---|---|---|")
    for route, runs in times.items():
        ratio = statistics.median(b / r for r, b in zip(runs, times[first], strict=True))
        seconds = statistics.median(runs)
        print(f"| {route} | {seconds:.1f} | {chunks / seconds:.1f} | {ratio:.2f} |")


if __name__ == "__main__":
    main()
