"""A search's object-store deadline is the store's alone: a query embedder slower than
``connect_timeout_s + request_timeout_s`` (a remote embedding API under load) neither
fails a search of a store that answers nor marks that store unreachable."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

from memory_router import Router, hookimpl, testing
from memory_router.kit import ProviderSpec, SearchRequest
from memory_router.testing import HashingEmbedder
from s3_helpers.moto_server import BUCKET, S3Server

pytestmark = pytest.mark.slow

EMBED_S = 4.0  # longer than the store's deadline below (1 + 2 s)


class SlowQueries(HashingEmbedder):
    id = "slow-queries"

    def embed_query(self, text: str) -> list[float]:
        time.sleep(EMBED_S)
        return super().embed_query(text)


class Plugin:
    @hookimpl
    def register_embedding_providers(self, register: Callable[[ProviderSpec], None]) -> None:
        register(ProviderSpec(name="slow-queries", factory=lambda context, model: SlowQueries()))


def test_a_slow_query_embedder_does_not_use_up_the_stores_deadline(
    tmp_path: Path, s3_server: S3Server
) -> None:
    notes = {"MEMORY.md": "# Memory\n\nThe garden gate code is 4417; the shed key hangs inside.\n"}
    workspace = testing.write_workspace(tmp_path / "workspace", notes)
    config = testing.router_config(
        tmp_path,
        workspace,
        backend="lancedb",
        embedding="slow-queries",
        settings={
            "uri": f"s3://{BUCKET}/slow-embedder/{uuid.uuid4().hex}",
            "storage_options": s3_server.options(),
            "connect_timeout_s": 1.0,
            "request_timeout_s": 2.0,
        },
        sync={"on_search": False},
    )
    with Router.from_config(config, plugins=[Plugin(), testing]) as router:
        reports = router.sync()
        assert not any(r.errors for r in reports), [r.errors for r in reports]
        backend = router.backend("lancedb")
        for query in ("garden gate code", "where does the shed key hang"):
            request = SearchRequest(query=query, max_results=3, min_score=0.0, candidates=12)
            result = backend.search(request)  # raised "cannot be reached" when embedding counted
            assert result.mode == "hybrid"
            assert result.hits[0].path == "MEMORY.md"
