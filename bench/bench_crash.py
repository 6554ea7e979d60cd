"""Crash safety: SIGKILL ``memory-router index`` and ``store`` at random moments.

    .venv/bin/python bench/bench_crash.py [--kills 50] [--files 400] [--seed 1] [--quick]

A workspace of ``--files`` Markdown notes is indexed by the SQLite backend with the
deterministic ``hash`` embedder (``memory_router.testing``), so that one ``index --force``
takes seconds. Each round runs one command as a real process and SIGKILLs it at a random
moment within its usual duration: ``index --force`` (a rebuild beside the live index),
``index`` after the bench appended a line to 20 notes (an incremental sync), or
``store "<text>"``. After each kill it checks that

1. no byte of Markdown changed, except the journal gaining the entry being stored;
2. the index opens (``status`` of the backend, one search) without an error;
3. after one ``memory-router index`` the index agrees with a from-scratch build of the
   same workspace: the same chunk ids, and the same top-5 hits for 20 queries.

It prints how many rounds passed all three (target: all of them).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _notes import WORDS, write_notes

from memory_router import Router, load_config, testing
from memory_router.kit import SearchRequest

QUERIES = [f"{a} {b}" for a, b in zip(WORDS, WORDS[3:] + WORDS[:3], strict=True)][:20]


def write_config(base: Path, state: str) -> Path:
    path = base / f"{state}.toml"
    path.write_text(
        f"workspace = {json.dumps(str(base / 'ws'))}\n"
        f"state_dir = {json.dumps(str(base / state))}\n"
        '[embedding]\nprovider = "hash"\n[query]\nmin_score = 0.0\n',
        encoding="utf-8",
    )
    return path


def cli(config: Path, *args: str) -> subprocess.Popen[bytes]:
    env = {**os.environ, "MEMORY_ROUTER_PLUGIN_MODULES": "memory_router.testing"}
    command = [sys.executable, "-m", "memory_router", "--config", str(config), *args]
    return subprocess.Popen(
        command,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
    )


def markdown(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*.md")}


def router(config: Path) -> Router:
    return Router.from_config(load_config(config, environ={}), plugins=[testing])


def chunk_ids(state: Path) -> set[str]:
    db = sqlite3.connect(f"file:{state / 'agents/main/memory.sqlite'}?mode=ro", uri=True)
    try:
        return {row[0] for row in db.execute("SELECT id FROM chunks")}
    finally:
        db.close()


def top_hits(config: Path) -> list[list[tuple[str, int, int]]]:
    """The top 5 of each query, straight from the backend (no sync: the index as it is)."""
    with router(config) as r:
        backend = r.backend("sqlite")
        return [
            [(h.path, h.start_line, h.end_line) for h in backend.search(request(q)).hits[:5]]
            for q in QUERIES
        ]


def request(query: str) -> SearchRequest:
    return SearchRequest(query=query, max_results=5, min_score=0.0, candidates=20)


def opens(config: Path) -> str | None:
    """``None`` when the index opens and answers; else what went wrong."""
    try:
        with router(config) as r:
            status = r.backend("sqlite").status()
            if not status.available:
                return f"status: {status.error}"
            r.backend("sqlite").search(request("tea"))
    except Exception as error:
        return f"{type(error).__name__}: {error}"
    return None


class Reference:
    """From-scratch builds of the workspace, cached by its Markdown."""

    def __init__(self, base: Path) -> None:
        self.config = write_config(base, "reference")
        self.state = base / "reference"
        self._key: str | None = None
        self.ids: set[str] = set()
        self.hits: list[Any] = []

    def update(self, files: dict[str, bytes]) -> None:
        key = hashlib.sha256(json.dumps(sorted((k, v.hex()) for k, v in files.items())).encode())
        if key.hexdigest() == self._key:
            return
        shutil.rmtree(self.state, ignore_errors=True)
        with router(self.config) as r:
            r.sync(force=True)
        self._key, self.ids, self.hits = (
            key.hexdigest(),
            chunk_ids(self.state),
            top_hits(self.config),
        )


def timed(config: Path, *args: str) -> float:
    started = time.monotonic()
    process = cli(config, *args)
    _, err = process.communicate(timeout=600)
    if process.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed: {err.decode()[-500:]}")
    return time.monotonic() - started


def one_round(
    n: int, base: Path, config: Path, ref: Reference, rng: random.Random, spans: dict[str, float]
) -> str | None:
    ws = base / "ws"
    kind = ("index --force", "index", "store")[n % 3]
    if kind == "index":
        for path in rng.sample(sorted((ws / "memory").glob("note-*.md")), 20):
            with path.open("a") as handle:
                handle.write(f"added in round {n}: {' '.join(rng.choices(WORDS, k=6))}\n")
    before = markdown(ws)
    text = f"round {n} stored fact: {' '.join(rng.choices(WORDS, k=8))}"
    args = ["store", text] if kind == "store" else kind.split()
    process = cli(config, *args)
    time.sleep(rng.uniform(0.0, spans[kind]))
    process.send_signal(signal.SIGKILL)
    process.communicate(timeout=60)
    after = markdown(ws)
    journal = "memory/entries.md"
    changed = {k for k in before.keys() | after.keys() if before.get(k) != after.get(k)}
    if changed - {journal}:
        return f"{kind}: Markdown changed: {sorted(changed - {journal})[:3]}"
    if journal in changed and text not in after[journal].decode("utf-8", "replace"):
        return f"{kind}: the journal changed without the stored entry"
    if journal in changed and not after[journal].startswith(before.get(journal, b"")[:-1]):
        return f"{kind}: the journal's earlier bytes changed"
    problem = opens(config)
    if problem:
        return f"{kind}: the index does not open: {problem}"
    timed(config, "index")
    ref.update(after)
    if chunk_ids(base / "state") != ref.ids:
        return f"{kind}: chunk ids differ from a from-scratch build"
    if top_hits(config) != ref.hits:
        return f"{kind}: top hits differ from a from-scratch build"
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kills", type=int, default=50)
    parser.add_argument("--files", type=int, default=400)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--quick", action="store_true", help="9 kills, 150 files")
    args = parser.parse_args()
    if args.quick:
        args.kills, args.files = 9, 150
    rng = random.Random(args.seed)
    base = Path(tempfile.mkdtemp(prefix="bench-crash-"))
    try:
        write_notes(base / "ws", args.files, rng, lines=40)
        config = write_config(base, "state")
        ref = Reference(base)
        spans = {"index --force": timed(config, "index", "--force")}
        spans["index"] = spans["index --force"] / 2
        spans["store"] = timed(config, "store", "a first entry, so the journal exists")
        timed(config, "index")
        print(
            f"crash safety: {args.files} notes, one `index --force` takes"
            f" {spans['index --force']:.1f} s, one `store` {spans['store']:.1f} s"
        )
        passed, failures = 0, []
        for n in range(args.kills):
            problem = one_round(n, base, config, ref, rng, spans)
            passed += problem is None
            if problem:
                failures.append(f"round {n}: {problem}")
                print(f"  FAILED round {n}: {problem}", flush=True)
        print(
            f"  {passed}/{args.kills} kills recovered (Markdown intact, index opens, one index"
            " agrees with a from-scratch build)"
        )
    finally:
        shutil.rmtree(base, ignore_errors=True)
    if failures:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
