"""Benchmark what checking the SQLite index for damage costs each process that opens it.

    .venv/bin/python bench/bench_open.py [--sizes 1000,10000,50000] [--repeat 15]

For each size a synthetic workspace (one chunk per file, 384-d hashing-embedder vectors)
is indexed once; then, in this process, the damage check run on every open
(``diagnose``: header, size, ``PRAGMA quick_check`` up to 64 MiB, tables and row counts)
is timed against one search through an already open router, the work it adds to a
one-shot CLI call.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from memory_router import Router, testing
from memory_router_sqlite import choose_driver
from memory_router_sqlite._damage import diagnose


def _median_ms(action: Callable[[], object], repeat: int) -> float:
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        action()
        samples.append((time.perf_counter() - started) * 1000)
    return statistics.median(samples)


def run(size: int, repeat: int) -> str:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        files = {
            f"memory/n-{i:06d}.md": f"# note {i}\n\nfact {i} about topic{i % 97} and more\n"
            for i in range(size)
        }
        workspace = testing.write_workspace(root / "ws", files)
        config = testing.router_config(root, workspace, backend="sqlite", embedding="hash")
        with Router.from_config(config, plugins=[testing]) as router:
            router.sync()
            path = router.config.agent_state_path / "memory.sqlite"
            driver = choose_driver(vector=True, extension_path="")
            check = _median_ms(lambda: diagnose(path, driver, busy_timeout_ms=5000), repeat)
            search = _median_ms(lambda: router.search("topic7 fact"), repeat)
            mib = path.stat().st_size / 2**20
    return (
        f"{size:>7} chunks  {mib:7.1f} MiB  damage check {check:8.1f} ms"
        f"  one search {search:8.1f} ms  ratio {check / search:5.2f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="1000,10000,50000")
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    for size in (int(s) for s in args.sizes.split(",")):
        print(run(size, args.repeat), flush=True)


if __name__ == "__main__":
    main()
