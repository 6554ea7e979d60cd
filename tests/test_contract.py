"""The backend contract suite on the built-in SQLite backend, in its three vector modes."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from memory_router._plugins import provider_specs
from memory_router.kit import get_plugin_manager
from memory_router.testing import BackendContract, HashingEmbedder


class TestSqliteKeywordOnly(BackendContract):
    backend = "sqlite"
    embedding = "none"


class TestSqliteHybridVec(BackendContract):
    backend = "sqlite"
    embedding = "hash"

    def backend_settings(self, tmp_path: Path) -> dict[str, Any]:
        return {"vector_search": "sqlite-vec"}

    def test_deep_status_names_the_sqlite_vec_path(self, make_router: Any, workspace: Path) -> None:
        router = make_router(workspace)
        router.sync()
        details = router.status(deep=True).backends[0].details
        assert details["vector"] == "sqlite-vec"
        assert details["vector_dims"] == 384
        # stdlib sqlite3 when it can load extensions, else sqlean (as with pyenv's build).
        can_load = hasattr(sqlite3.Connection, "enable_load_extension")
        assert details["driver"] == ("sqlite3" if can_load else "sqlean")


class TestSqliteHybridNumpy(BackendContract):
    backend = "sqlite"
    embedding = "hash"

    def backend_settings(self, tmp_path: Path) -> dict[str, Any]:
        return {"vector": False}

    def test_deep_status_names_the_numpy_path(self, make_router: Any, workspace: Path) -> None:
        router = make_router(workspace)
        router.sync()
        details = router.status(deep=True).backends[0].details
        assert details["vector"] == "numpy"
        assert "vector = false" in details["vector_reason"]
        assert details["vector_dims"] is None


def test_hash_provider_is_registered_through_the_env_plugin_list() -> None:
    pm = get_plugin_manager(environ={"MEMORY_ROUTER_PLUGIN_MODULES": "memory_router.testing"})
    specs = provider_specs(pm)
    assert specs["hash"].auto_priority is None  # never picked by provider = "auto"
    assert "hash" not in provider_specs(get_plugin_manager(environ={}))


@pytest.mark.slow
def test_hashing_embedder_is_deterministic_across_processes() -> None:
    code = (
        "import json; from memory_router.testing import HashingEmbedder;"
        "print(json.dumps(HashingEmbedder().vector('Green tea, not coffee')))"
    )
    outputs = {
        subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
            env={**os.environ, "PYTHONHASHSEED": seed},
        ).stdout
        for seed in ("1", "2")
    }
    assert len(outputs) == 1
    vector = json.loads(outputs.pop())
    assert vector == HashingEmbedder().vector("green TEA not coffee")
    assert len(vector) == 384
    assert sum(v * v for v in vector) == pytest.approx(1.0)
    assert sum(1 for v in vector if v) == 4  # one bucket per distinct word (no collisions)
