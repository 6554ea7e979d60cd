"""Benchmark ``migrate``: SQLite -> SQLite (and -> LanceDB when installed), resume, kills.

    .venv/bin/python bench/bench_migrate.py [--chunks 100000] [--kills 0] [--targets sqlite]
                                            [--batch N]  # default: the target's own
    .venv/bin/python bench/bench_migrate.py --quick          # 10k chunks, 3 random kills

A synthetic workspace (the SQLite bench's Zipf corpus, ~350-character chunks) is indexed
once with a counting hashing embedder; that index file is the source. Then, each against
a fresh target:

* a full migration with vector reuse: its time, and the embedding calls (must be 0);
* the first ``index`` after it (files adopted, nothing embedded);
* ``--verify 20``: time and top-10 overlap;
* per target, a migration killed with SIGKILL at 50 % in a child process, then
  ``--resume``: the resume's time against the full migration's, and the chunks it skipped;
* ``--kills K``: K kills at random moments, then a resume, and a check that the target
  holds exactly the source's chunks (ids, texts and vector bytes).

The time to index the workspace from scratch is printed as the baseline.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, ClassVar

from bench_sqlite import write_corpus

from memory_router import Config, Router, hookimpl, load_config, migrate, testing
from memory_router.kit import ProviderSpec
from memory_router.testing import HashingEmbedder, router_config


class CountingHash(HashingEmbedder):
    id = "bench-hash"
    model = "bench-hash-384"
    calls: ClassVar[list[int]] = []

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        CountingHash.calls.append(len(texts))
        return super().embed_documents(texts)


class Plugin:
    @hookimpl
    def register_embedding_providers(self, register: Callable[[ProviderSpec], None]) -> None:
        register(ProviderSpec(name="bench-hash", factory=lambda c, m: CountingHash()))


def make_config(base: Path, workspace: Path, name: str, chain: str = "sqlite") -> Config:
    folder = base / name
    folder.mkdir(parents=True, exist_ok=True)
    return router_config(
        folder,
        workspace,
        backend=chain,
        embedding="bench-hash",
        chunking={"tokens": 100, "overlap": 0},
        sync={"on_search": False},
    )


def router(config: Config) -> Router:
    return Router.from_config(config, plugins=[testing, Plugin()])


def build_source(base: Path, workspace: Path) -> tuple[Path, float]:
    with router(make_config(base, workspace, "source")) as r:
        started = time.perf_counter()
        (report,) = r.sync()
        elapsed = time.perf_counter() - started
        live = Path(r.backend("sqlite").status(deep=True).details["path"])
    source = base / "source.sqlite"
    shutil.copyfile(live, source)
    print(f"source: {report.chunks} chunks, indexed from scratch in {elapsed:.1f} s", flush=True)
    return source, elapsed


def child(config_file: str, source: str, batch: int, target: str) -> None:
    """Migrate in this process, printing progress lines (the parent kills it)."""
    config = load_config(config_file, environ={})
    resume = (config.agent_state_path / "migrations" / f"{target}.json").exists()

    def progress(*, done: int, total: int, label: str) -> None:
        print(label, done, total, flush=True)

    with router(config) as r:
        migrate(
            r,
            target,
            source_path=source,
            resume=resume,
            batch_size=batch or None,
            progress=progress,
        )
    print("done", flush=True)


def spawn(config: Config, source: Path, batch: int, target: str) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORY_ROUTER_")}
    script = [sys.executable, __file__, "--child", str(config.file), str(source), str(batch)]
    script.append(target)
    return subprocess.Popen(script, stdout=subprocess.PIPE, text=True, env=env)


def kill_at(
    config: Config, source: Path, batch: int, share: float, jitter: float, target: str = "sqlite"
) -> int:
    """Run a child migration and SIGKILL it once ``share`` of the chunks are copied."""
    proc = spawn(config, source, batch, target)
    assert proc.stdout is not None
    done = 0
    for line in proc.stdout:
        parts = line.split()
        if parts[0] == "migrating" and int(parts[2]) and int(parts[1]) >= share * int(parts[2]):
            done = int(parts[1])
            break
    time.sleep(jitter)
    proc.kill()
    proc.communicate(timeout=120)
    return done


def rows(path: Path) -> dict[str, tuple[str, bytes]]:
    with sqlite3.connect(path) as db:
        found = {r[0]: (r[1], r[2]) for r in db.execute("SELECT id, text, embedding FROM chunks")}
    db.close()
    return found


def full_run(base: Path, workspace: Path, source: Path, target: str, batch: int) -> float:
    with router(make_config(base, workspace, f"full-{target}", target)) as r:
        CountingHash.calls.clear()
        report = migrate(r, target, source_path=source, batch_size=batch or None)
        calls = len(CountingHash.calls)
        print(
            f"{target}: {report.mode}, {report.chunks} chunks in {report.duration_ms / 1000:.1f} s,"
            f" embedded {report.embedded}, provider calls {calls}",
            flush=True,
        )
        started = time.perf_counter()
        (sync,) = r.sync()
        print(
            f"  first index after: {time.perf_counter() - started:.1f} s,"
            f" {sync.embedded} embedded, {sync.unchanged} files unchanged",
            flush=True,
        )
        checked = migrate(r, target, source_path=source, verify=20, copy=False).verify
        assert checked is not None
        print(
            f"  verify 20 queries: overlap {checked.overlap:.3f}, same top hit"
            f" {checked.top_hit_share:.0%}",
            flush=True,
        )
        return report.duration_ms / 1000


def resume_run(
    base: Path, workspace: Path, source: Path, batch: int, full_s: float, target: str
) -> None:
    config = make_config(base, workspace, f"resume-{target}", target)
    at = kill_at(config, source, batch, 0.5, 0.0, target)
    with router(config) as r:
        report = migrate(r, target, source_path=source, resume=True, batch_size=batch or None)
    resume_s = report.duration_ms / 1000
    print(
        f"{target}: resume after a kill at {at} chunks: {resume_s:.1f} s ({resume_s / full_s:.0%}"
        f" of the full migration), skipped {report.skipped}, wrote {report.written}",
        flush=True,
    )


def kill_run(base: Path, workspace: Path, source: Path, batch: int, kills: int) -> None:
    config = make_config(base, workspace, "kills")
    batch = batch or 1000  # small enough that kills land inside the copy
    rng = random.Random(11)
    points = [
        kill_at(config, source, batch, rng.random(), rng.uniform(0, 0.05)) for _ in range(kills)
    ]
    # On a fast machine the last child may finish before its kill lands: then there is
    # no checkpoint to resume, and the live index is that finished run's.
    pending = (config.agent_state_path / "migrations" / "sqlite.json").exists()
    with router(config) as r:
        if pending:
            migrate(r, "sqlite", source_path=source, resume=True, batch_size=batch or None)
        live = Path(r.backend("sqlite").status(deep=True).details["path"])
    same = rows(live) == rows(source)
    then = "then resume" if pending else "the last run finished before its kill"
    print(f"{kills} random kills (at {points} chunks), {then}: exact chunk set {same}")
    if not same:
        raise SystemExit("the resumed migration does not hold exactly the source's chunks")


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5])
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--batch", type=int, default=0, help="0: the target's own")
    parser.add_argument("--kills", type=int, default=0)
    parser.add_argument("--targets", default="sqlite,lancedb")
    parser.add_argument("--quick", action="store_true", help="10k chunks and 3 random kills")
    args = parser.parse_args()
    if args.quick:
        args.chunks, args.kills = 10_000, 3
    with tempfile.TemporaryDirectory(prefix="bench-migrate-") as folder:
        base = Path(folder)
        workspace = base / "workspace"
        write_corpus(workspace, args.chunks)
        source, _ = build_source(base, workspace)
        installed = _installed()
        print(f"load average before: {os.getloadavg()[0]:.1f}", flush=True)
        full: dict[str, float] = {}
        for target in args.targets.split(","):
            if target not in installed:
                print(f"{target}: not installed, skipped", flush=True)
                continue
            full[target] = full_run(base, workspace, source, target, args.batch)
        for target, seconds in full.items():
            resume_run(base, workspace, source, args.batch, seconds, target)
        print(f"load average after: {os.getloadavg()[0]:.1f}", flush=True)
        if args.kills:
            kill_run(base, workspace, source, args.batch, args.kills)


def _installed() -> set[str]:
    with Router.from_config(Config(), plugins=[testing, Plugin()]) as r:
        found: Any = r.backend_specs
        return set(found)


if __name__ == "__main__":
    main()
