"""Per-search latency of QMD's vector modes, ``documents = "files"`` against ``"chunks"``,
on a workspace with both ``MEMORY.md`` and ``memory/`` (issue 23, item 6).

With ``"files"`` that workspace is two QMD collections, so each unreranked vector search
starts one ``qmd query --explain`` process (the model loaded each time); with
``"chunks"`` it is one collection, served by the warm ``qmd mcp`` child. The workspace is
the first ``--sessions`` sessions of a LoCoMo conversation as ``memory/<date>.md`` plus a
``MEMORY.md`` of the conversation's first lines; the queries are its first ``--queries``
questions. Needs the real QMD CLI and the offline MiniLM (``gguf``).

    .venv/bin/python bench/qmd_chunks_latency.py [--sessions 4] [--queries 20]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

from memory_router import Router
from memory_router._ops.bench_data import load_locomo


def workspace(root: Path, data: Path, sessions: int) -> list[str]:
    """Write the workspace; returns the questions."""
    group = load_locomo(data).groups[0]
    files = sorted(group.files.items())[:sessions]
    (root / "memory").mkdir(parents=True)
    for path, text in files:
        (root / path).write_text(text, encoding="utf-8")
    head = "\n".join(files[0][1].split("\n")[:12])
    (root / "MEMORY.md").write_text(f"# Memory\n\n{head}\n", encoding="utf-8")
    return [q.text for q in group.queries]


def measure(folder: Path, ws: Path, documents: str, modes: list[str], queries: list[str]) -> None:
    config = folder / f"{documents}.toml"
    config.write_text(
        f"workspace = {json.dumps(str(ws))}\n"
        f"state_dir = {json.dumps(str(folder / documents))}\n"
        '[embedding]\nprovider = "none"\n[router]\nchain = ["qmd"]\ntimeout_s = 120\n'
        f'[backends.qmd]\ndocuments = "{documents}"\nembed_timeout_s = 1200\n'
        "update_on_boot = false\n",
        encoding="utf-8",
    )
    with Router.from_config(config) as router:
        started = time.perf_counter()
        report = router.sync()[0]
        print(f"{documents}: sync {time.perf_counter() - started:.1f} s, {report.chunks} docs")
        for mode in modes:
            router.search(queries[0], mode=mode)  # the sidecar's start and model load
            took = []
            for query in queries:
                started = time.perf_counter()
                router.search(query, mode=mode, min_score=0.0)
                took.append((time.perf_counter() - started) * 1000)
            status = router.status().backends[0].details["sidecar"]
            print(
                f"{documents} {mode}: p50 {statistics.median(took):.0f} ms,"
                f" max {max(took):.0f} ms, sidecar starts {status.get('starts')}",
                flush=True,
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", default="/work/shared/data/locomo/locomo10.json")
    parser.add_argument("--sessions", type=int, default=4)
    parser.add_argument("--queries", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="qmd-chunks-latency-") as tmp:
        folder = Path(tmp)
        queries = workspace(folder / "ws", Path(args.data), args.sessions)[: args.queries]
        for documents in ("files", "chunks"):
            measure(folder, folder / "ws", documents, ["vsearch", "query"], queries)


if __name__ == "__main__":
    main()
