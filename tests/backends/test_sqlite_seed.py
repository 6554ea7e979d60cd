"""An index built to OpenClaw's schema (ref §1.5) by plain SQL opens and is searchable."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path

import numpy as np
import pytest
import sqlean
import sqlite_vec

from memory_router import Router, testing
from memory_router.kit import SearchRequest
from memory_router.testing import HashingEmbedder
from migrate_support import OPENCLAW_SCHEMA

TEXTS = [
    ("memory/2026-02-01.md", "Renewed the passport at the consulate downtown."),
    ("memory/2026-02-02.md", "The staging database lives on host db-stage-3."),
    ("MEMORY.md", "Favourite editor is Helix with a dark theme."),
]

SEED_SCHEMA = (
    OPENCLAW_SCHEMA
    + """
CREATE VIRTUAL TABLE chunks_fts USING fts5(text, id UNINDEXED, path UNINDEXED,
  source UNINDEXED, model UNINDEXED, start_line UNINDEXED, end_line UNINDEXED);
"""
)


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def build_seed(db: Path, *, with_vec: bool) -> None:
    """What OpenClaw would have written: JSON-text embeddings and its meta JSON."""
    db.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlean.connect(str(db)) if with_vec else sqlite3.connect(db)
    embedder = HashingEmbedder()
    with conn:
        conn.executescript(SEED_SCHEMA)
        meta = {
            "model": "hash-384", "provider": "hash", "providerKey": "seed", "sources": ["memory"],
            "scopeHash": "seed", "chunkTokens": 400, "chunkOverlap": 80, "vectorDims": 384,
            "ftsTokenizer": "unicode61",
        }  # fmt: skip
        conn.execute("INSERT INTO meta VALUES ('memory_index_meta_v1', ?)", (json.dumps(meta),))
        if with_vec:
            conn.enable_load_extension(True)
            conn.load_extension(sqlite_vec.loadable_path())
            conn.execute(
                "CREATE VIRTUAL TABLE chunks_vec USING vec0(id TEXT PRIMARY KEY,"
                " embedding FLOAT[384])"
            )
        for path, text in TEXTS:
            cid = sha(f"memory:{path}:1:1:{sha(text)}:hash-384")
            vector = embedder.vector(text)
            conn.execute(
                "INSERT INTO files VALUES (?, 'memory', ?, 0, ?)", (path, sha(text), len(text))
            )
            conn.execute(
                "INSERT INTO chunks VALUES (?, ?, 'memory', 1, 1, ?, 'hash-384', ?, ?, 0)",
                (cid, path, sha(text), text, json.dumps(vector)),
            )
            conn.execute(
                "INSERT INTO chunks_fts VALUES (?, ?, ?, 'memory', 'hash-384', 1, 1)",
                (text, cid, path),
            )
            if with_vec:
                blob = np.asarray(vector, dtype=np.float32).tobytes()
                conn.execute("INSERT INTO chunks_vec VALUES (?, ?)", (cid, blob))
    conn.close()


@pytest.mark.parametrize("with_vec", [False, True], ids=["json-numpy", "seed-vec0-l2"])
def test_seed_index_is_searchable_without_a_sync(tmp_path: Path, with_vec: bool) -> None:
    build_seed(tmp_path / "state/agents/main/memory.sqlite", with_vec=with_vec)
    workspace = testing.write_workspace(tmp_path / "ws", {})
    config = testing.router_config(
        tmp_path, workspace, backend="sqlite", embedding="hash", sync={"on_search": False}
    )
    with Router.from_config(config, plugins=[testing]) as router:
        result = router.backend("sqlite").search(
            SearchRequest(query="staging database host", max_results=3, min_score=0, candidates=5)
        )
        assert result.mode == "hybrid"
        top = result.hits[0]
        assert top.path == "memory/2026-02-02.md"
        expected = float(
            np.dot(
                HashingEmbedder().vector("staging database host"),
                HashingEmbedder().vector(TEXTS[1][1]),
            )
        )
        assert top.vector_score == pytest.approx(expected, abs=1e-5)
        assert top.text_score is not None
        assert top.text_score > 0
        response = router.search("Helix editor")
        assert response.results[0].path == "MEMORY.md"
        status = router.status().backends[0]
        assert (status.files, status.chunks) == (3, 3)


def test_seed_index_is_rebuilt_on_sync_and_stays_searchable(tmp_path: Path) -> None:
    build_seed(tmp_path / "state/agents/main/memory.sqlite", with_vec=False)
    workspace = testing.write_workspace(tmp_path / "ws", {p: t + "\n" for p, t in TEXTS})
    config = testing.router_config(
        tmp_path,
        workspace,
        backend="sqlite",
        embedding="hash",
        settings={"vector_search": "sqlite-vec"},
    )
    with Router.from_config(config, plugins=[testing]) as router:
        report = router.sync()[0]
        assert report.full_rebuild
        assert report.reason
        assert report.reason.startswith("fingerprint")
        assert router.search("passport consulate").results[0].path == "memory/2026-02-01.md"
        assert router.status(deep=True).backends[0].details["vector"] == "sqlite-vec"
