"""Readers across another process's rebuild: searches while other processes swap in new indexes.

    .venv/bin/python bench/bench_swap.py [--seconds 60] [--writers 2] [--readers 8]
        [--openers 0] [--files 20]

A workspace of ``--files`` notes is indexed once by the SQLite backend (the deterministic
``hash`` embedder of ``memory_router.testing``). Then ``--writers`` real processes each
rebuild the index in a loop (``sync(force=True)``: a new file built beside the live one
and swapped into place), while this process runs ``--readers`` threads that search one
long-lived backend as fast as they can, and ``--openers`` more processes open the backend
afresh for every search, as one-shot CLI commands do.

It prints the searches, the swaps, and every failed search with its error (target: 0).
A search counts as failed when it raises, finds nothing (an empty index), or when the
backend is unavailable afterwards (marked damaged).
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from _notes import WORDS, write_notes

from memory_router import Router, load_config, testing
from memory_router.kit import SearchRequest

QUERIES = [f"{a} {b}" for a, b in zip(WORDS, WORDS[5:] + WORDS[:5], strict=True)]


def write_config(base: Path) -> Path:
    path = base / "bench.toml"
    path.write_text(
        f"workspace = {json.dumps(str(base / 'ws'))}\n"
        f"state_dir = {json.dumps(str(base / 'state'))}\n"
        '[router]\nchain = ["sqlite"]\n[embedding]\nprovider = "hash"\n'
        "[query]\nmin_score = 0.0\n[sync]\non_search = false\n",
        encoding="utf-8",
    )
    return path


def router(config: Path) -> Router:
    return Router.from_config(load_config(config, environ={}), plugins=[testing])


def opener(config: Path, seconds: float) -> None:
    """Open the backend afresh and search once, until ``seconds`` pass; print the tally."""
    tally = Tally()
    deadline = time.monotonic() + seconds
    with router(config) as r:
        shared: Any = r.backend("sqlite")
        rng = random.Random(os.getpid())
        while time.monotonic() < deadline:
            try:
                backend = type(shared)(shared.context)  # the backend's own open path
                try:
                    tally.add(search_once(backend, rng))
                finally:
                    backend.close()
            except Exception as error:
                tally.add(f"{type(error).__name__}: {error}")
    print(json.dumps({"searches": tally.searches, "errors": dict(tally.errors)}), flush=True)


def writer(config: Path, seconds: float) -> None:
    """Rebuild in a loop until ``seconds`` pass; print how many swaps were made."""
    swaps = 0
    deadline = time.monotonic() + seconds
    with router(config) as r:
        while time.monotonic() < deadline:
            report = r.sync(force=True)[0]
            swaps += report.full_rebuild
    print(json.dumps({"swaps": swaps}), flush=True)


class Tally:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.searches = 0
        self.errors: collections.Counter[str] = collections.Counter()

    def add(self, error: str | None) -> None:
        with self.lock:
            self.searches += 1
            if error is not None:
                self.errors[error[:160]] += 1


def search_once(backend: Any, rng: random.Random) -> str | None:
    """One search; ``None`` when it found something, else what went wrong."""
    query = rng.choice(QUERIES)
    request = SearchRequest(query=query, max_results=5, min_score=0.0, candidates=20)
    try:
        hits = backend.search(request).hits
    except Exception as error:
        return f"{type(error).__name__}: {error}"
    return None if hits else f"no hits for {query!r}"


def read(r: Router, seed: int, stop: threading.Event, tally: Tally) -> None:
    rng = random.Random(seed)
    backend = r.backend("sqlite")
    while not stop.is_set():
        tally.add(search_once(backend, rng))


def spawn(role: str, config: Path, seconds: float) -> subprocess.Popen[str]:
    command = [sys.executable, __file__, f"--{role}", str(config), "--seconds", str(seconds)]
    return subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True
    )


def run(args: argparse.Namespace) -> int:
    base = Path(tempfile.mkdtemp(prefix="bench-swap-"))
    try:
        write_notes(base / "ws", args.files, random.Random(args.seed), lines=20)
        config = write_config(base)
        with router(config) as r:
            r.sync(force=True)
        tally = Tally()
        stop = threading.Event()
        started = time.monotonic()
        writers = [spawn("writer", config, args.seconds) for _ in range(args.writers)]
        writers += [spawn("opener", config, args.seconds) for _ in range(args.openers)]
        with router(config) as r:
            threads = [
                threading.Thread(target=read, args=(r, n, stop, tally), daemon=True)
                for n in range(args.readers)
            ]
            for thread in threads:
                thread.start()
            swaps = opened = 0
            try:
                for process in writers:
                    out, err = process.communicate(timeout=args.seconds + 120)
                    if process.returncode != 0:
                        print(f"a process failed ({process.returncode}): {err[-800:]}")
                        return 2
                    result = json.loads(out.strip().splitlines()[-1])
                    swaps += result.get("swaps", 0)
                    opened += result.get("searches", 0)
                    for error, count in result.get("errors", {}).items():
                        tally.errors[f"(fresh open) {error}"] += count
            finally:
                for process in writers:
                    if process.poll() is None:
                        process.kill()
                        process.wait(timeout=10)
                stop.set()
                for thread in threads:
                    thread.join(timeout=30)
            damaged = r.backend("sqlite").status().error
        elapsed = time.monotonic() - started
        failed = sum(tally.errors.values())
        openers = f", {args.openers} opener processes" if args.openers else ""
        fresh = f" + {opened} from fresh opens" if args.openers else ""
        print(
            f"swap bench: {args.writers} writer processes, {args.readers} reader threads"
            f"{openers}, {elapsed:.0f} s: {tally.searches}{fresh} searches, {swaps} swaps,"
            f" {failed} failed searches"
        )
        for error, count in tally.errors.most_common():
            print(f"  {count:6d}  {error}")
        if damaged:
            print(f"  the index is marked unavailable afterwards: {damaged}")
        return 1 if failed or damaged else 0
    finally:
        shutil.rmtree(base, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--writers", type=int, default=2)
    parser.add_argument("--readers", type=int, default=8)
    parser.add_argument("--openers", type=int, default=0)
    parser.add_argument("--files", type=int, default=20)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--writer", metavar="CONFIG", help=argparse.SUPPRESS)
    parser.add_argument("--opener", metavar="CONFIG", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.writer or args.opener:
        (writer if args.writer else opener)(Path(args.writer or args.opener), args.seconds)
        return
    os.environ.pop("MEMORY_ROUTER_CONFIG", None)
    sys.exit(run(args))


if __name__ == "__main__":
    main()
