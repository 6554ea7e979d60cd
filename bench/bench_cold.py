"""Cold standby: how fast a never-built fallback answers its first query.

    .venv/bin/python bench/bench_cold.py [--files 500] [--embedding minilm] [--queries 20]

``chain = ["qmd", "sqlite"]``, ``standby = "cold"``, defaults otherwise; QMD is the fake
(``tests/qmd_fakes/fake_qmd.py``) crashing on every call, and SQLite has never been built.
The workspace holds about two chunks per file (``--files 500`` ≈ 1,000 chunks). It
measures, in one process from a standing start (router built, provider loaded):

- the first answer: seconds, mode (``keyword-from-markdown`` while SQLite is built in the
  background) and its note;
- how long the background build took until answers are ``hybrid`` again;
- the median latency of ``--queries`` answers after that.
"""

from __future__ import annotations

import argparse
import random
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from _notes import WORDS, write_notes

from memory_router import Router, load_config

FAKE = Path(__file__).resolve().parents[1] / "tests" / "qmd_fakes" / "fake_qmd.py"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=500)
    parser.add_argument("--embedding", default="minilm")
    parser.add_argument("--queries", type=int, default=20)
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="bench-cold-"))
    try:
        write_notes(base / "ws", args.files, random.Random(3), lines=30)
        (base / "fake").mkdir()
        shutil.copy(FAKE, base / "fake" / "qmd")
        (base / "fake" / "qmd").chmod(0o755)
        (base / "fake" / "behaviour").write_text("*=crash")
        config = load_config(
            None,
            environ={},
            overrides={
                "workspace": str(base / "ws"),
                "state_dir": str(base / "state"),
                "embedding": {"provider": args.embedding},
                "router": {"chain": ["qmd", "sqlite"], "standby": "cold"},
                "backends": {"qmd": {"command": str(base / "fake" / "qmd")}},
            },
        )
        started = time.perf_counter()
        router = Router.from_config(config)
        snapshot = router.snapshot()
        chunks = sum(len(snapshot.chunks(d)) for d in snapshot.documents)
        ready = time.perf_counter()
        first = router.search("zebra harbor lantern")
        first_s = time.perf_counter() - ready
        print(f"cold standby: {args.files} files, {chunks} chunks, embedding {args.embedding}")
        print(f"  router + provider + snapshot ready   {ready - started:.2f} s")
        print(f"  first answer                         {first_s:.2f} s (mode {first.mode})")
        print(f"    note: {first.notes[0] if first.notes else '-'}", flush=True)
        built_at = None
        while built_at is None:
            time.sleep(0.5)
            response = router.search("cobalt river")
            if response.mode != "keyword-from-markdown":
                built_at = time.perf_counter() - ready
        latencies = []
        for n in range(args.queries):
            t = time.perf_counter()
            later = router.search(f"{WORDS[n % len(WORDS)]} {WORDS[(n * 7) % len(WORDS)]}")
            latencies.append(time.perf_counter() - t)
        router.close()
    finally:
        shutil.rmtree(base, ignore_errors=True)
    print(f"  background build done after         {built_at:.1f} s")
    print(
        f"  later answers: median {statistics.median(latencies) * 1000:.0f} ms"
        f" (mode {later.mode}, backend {later.backend})"
    )


if __name__ == "__main__":
    main()
