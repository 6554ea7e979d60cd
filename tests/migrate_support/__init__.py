"""Shared by the migration tests: a counting embedding provider plugin, workspaces, indexes."""

from __future__ import annotations

import json
import random
import shutil
import sqlite3
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, ClassVar

from memory_router import Config, Router, hookimpl, testing
from memory_router.kit import ProviderSpec, sha256_text
from memory_router.testing import HashingEmbedder, router_config

WORDS = [
    "lisbon",
    "harbour",
    "tram",
    "alfama",
    "conference",
    "invoice",
    "ledger",
    "billing",
    "refund",
    "passport",
    "consulate",
    "heron",
    "flaky",
    "timezone",
    "fixture",
    "clock",
    "kernel",
    "compiler",
    "vector",
    "index",
    "chunk",
    "garden",
    "tomato",
    "basil",
    "marathon",
    "berlin",
    "training",
    "interval",
    "tempo",
    "vet",
    "miso",
    "kitten",
    "ferry",
    "island",
    "glacier",
    "piano",
    "sonata",
    "chord",
    "violin",
    "budget",
    "salary",
    "mortgage",
    "lender",
    "quartz",
    "granite",
    "basalt",
]


class CountingEmbedder(HashingEmbedder):
    """The hashing embedder under its own id, counting every call made to it."""

    id = "counting"
    model = "count-384"
    calls: ClassVar[list[int]] = []

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        CountingEmbedder.calls.append(len(texts))
        return super().embed_documents(texts)


class CountingPlugin:
    """Registers provider ``counting`` (explicit only)."""

    @hookimpl
    def register_embedding_providers(self, register: Callable[[ProviderSpec], None]) -> None:
        register(
            ProviderSpec(
                name="counting",
                factory=lambda context, model: CountingEmbedder(),
                auto_priority=None,
                description="hashing embedder that counts its calls (tests)",
            )
        )


def corpus(count: int, *, seed: int = 7) -> dict[str, str]:
    """``count`` daily notes of a few distinct sentences each (one chunk per file)."""
    rng = random.Random(seed)
    files = {}
    for day in range(count):
        lines = [" ".join(rng.sample(WORDS, 8)).capitalize() + "." for _ in range(3)]
        files[f"memory/2026-{day // 28 + 1:02d}-{day % 28 + 1:02d}.md"] = (
            f"# Day {day}\n\n" + "\n".join(lines) + "\n"
        )
    return files


def make_router(config: Config) -> Router:
    return Router.from_config(config, plugins=[testing, CountingPlugin()])


def lance_router(tmp_path: Path, workspace: Path, **lancedb: Any) -> Router:
    """A sqlite-chain router with a LanceDB backend in ``tmp_path/lance`` (counting
    provider); ``lancedb`` are more ``[backends.lancedb]`` settings (``uri`` too)."""
    config = router_config(
        tmp_path / "state-root",
        workspace,
        backend="sqlite",
        embedding="counting",
        sync={"on_search": False},
        backends={"lancedb": {"uri": str(tmp_path / "lance"), **lancedb}},
    )
    return make_router(config)


def config_for(
    tmp_path: Path, workspace: Path, name: str, embedding: str = "counting", **tables: Any
) -> Config:
    """A sqlite-chain config whose state lives in ``tmp_path/name``."""
    folder = tmp_path / name
    folder.mkdir(parents=True, exist_ok=True)
    return router_config(folder, workspace, backend="sqlite", embedding=embedding, **tables)


def build_index(config: Config, copy_to: Path) -> Path:
    """Index the workspace with ``config`` and copy the index file to ``copy_to``."""
    with make_router(config) as router:
        router.sync()
        live = Path(router.backend("sqlite").status(deep=True).details["path"])
    shutil.copyfile(live, copy_to)
    return copy_to


def rows(path: Path) -> dict[str, tuple[str, str, bytes]]:
    """``{chunk id: (path, text, embedding)}`` read straight from an index file."""
    with sqlite3.connect(path) as db:
        return {
            r[0]: (r[1], r[2], r[3])
            for r in db.execute("SELECT id, path, text, embedding FROM chunks")
        }


def live_path(router: Router) -> Path:
    return Path(router.backend("sqlite").status(deep=True).details["path"])


OPENCLAW_SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE files (path TEXT PRIMARY KEY, source TEXT NOT NULL DEFAULT 'memory',
  hash TEXT NOT NULL, mtime INTEGER NOT NULL, size INTEGER NOT NULL);
CREATE TABLE chunks (id TEXT PRIMARY KEY, path TEXT NOT NULL,
  source TEXT NOT NULL DEFAULT 'memory', start_line INTEGER NOT NULL,
  end_line INTEGER NOT NULL, hash TEXT NOT NULL, model TEXT NOT NULL, text TEXT NOT NULL,
  embedding TEXT NOT NULL, updated_at INTEGER NOT NULL);
CREATE INDEX idx_chunks_path ON chunks(path);
CREATE INDEX idx_chunks_source ON chunks(source);
CREATE TABLE embedding_cache (provider TEXT NOT NULL, model TEXT NOT NULL,
  provider_key TEXT NOT NULL, hash TEXT NOT NULL, embedding TEXT NOT NULL, dims INTEGER,
  updated_at INTEGER NOT NULL, PRIMARY KEY (provider, model, provider_key, hash));
"""
"""OpenClaw's builtin index schema (ref §1.5) without its FTS and vector tables."""


def write_openclaw_index(
    path: Path,
    chunks: Sequence[Any],
    *,
    provider: str,
    model: str,
    cached: Sequence[str] = (),
) -> Path:
    """An index as OpenClaw writes it (ref §1.5): meta JSON, JSON-text embeddings, its cache."""
    embedder = HashingEmbedder()
    meta = {
        "model": model, "provider": provider, "providerKey": "openclaw-key",
        "sources": ["memory"], "scopeHash": "openclaw-scope", "chunkTokens": 400,
        "chunkOverlap": 80, "vectorDims": 384, "ftsTokenizer": "unicode61",
    }  # fmt: skip
    with sqlite3.connect(path) as db:
        db.executescript(OPENCLAW_SCHEMA)
        db.execute("INSERT INTO meta VALUES ('memory_index_meta_v1', ?)", (json.dumps(meta),))
        for c in chunks:
            db.execute(
                "INSERT INTO chunks VALUES (?,?,?,?,?,?,?,?,?,0)",
                (c.id, c.path, c.source, c.start_line, c.end_line, c.hash, model, c.text,
                 json.dumps(embedder.vector(c.text))),
            )  # fmt: skip
        for text in cached:
            db.execute(
                "INSERT INTO embedding_cache VALUES (?,?,'openclaw-key',?,?,384,0)",
                (provider, model, sha256_text(text), json.dumps(embedder.vector(text))),
            )
    db.close()
    return path
