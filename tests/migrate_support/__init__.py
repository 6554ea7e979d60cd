"""Shared by the migration tests: a counting embedding provider plugin, workspaces, indexes."""

from __future__ import annotations

import random
import shutil
import sqlite3
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, ClassVar

from memory_router import Config, ProviderSpec, Router, hookimpl, testing
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
