"""What a warm LanceDB query costs on object storage, counted at a loopback proxy in
front of the tests' S3 server: no index or data object is read. The FTS index is held
whole in LanceDB's cache, the keyword leg maps its row ids to the rows held in memory and
the vector leg is the in-memory matrix; only the consistency checks (listings of
``_versions/``) reach the store."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from memory_router.kit import SearchRequest
from s3_helpers.corpus import QUERIES, lance_router
from s3_helpers.counting_proxy import CountingProxy
from s3_helpers.moto_server import BUCKET, S3Server

pytestmark = pytest.mark.slow


def request(query: str) -> SearchRequest:
    return SearchRequest(query=query, max_results=5, min_score=0.0, candidates=10)


def test_a_warm_hybrid_query_reads_no_object(tmp_path: Path, s3_server: S3Server) -> None:
    with CountingProxy(s3_server.endpoint) as proxy:
        settings = {
            "uri": f"s3://{BUCKET}/reads/{uuid.uuid4().hex}",
            "storage_options": s3_server.options(endpoint=proxy.endpoint),
        }
        with lance_router(tmp_path, settings) as router:
            router.sync()
            backend = router.backend("lancedb")
            backend.search(request("bowls"))  # loads the vectors and the FTS index
            start = len(proxy.requests)
            results = [backend.search(request(q)) for q in QUERIES]
            after = proxy.since(start)
    assert all(r.mode == "hybrid" and r.hits for r in results)
    assert all(any(h.text_score for h in r.hits) for r in results)  # the keyword leg answered
    assert after  # the consistency checks (interval 0) did reach the store
    reads = [path for _, path in after if "/_indices/" in path or "/data/" in path]
    assert reads == []
