"""An object store that answers slowly, not never: a search's first load of a big table
(the whole FTS index, every vector and row) may outlast one call's deadline, and that is
no reason to fail the search or to mark the store unreachable; a store that stops
answering during that load still fails the search within the deadline.

The seam is a loopback HTTP proxy in front of the tests' S3 server that holds back the
reads of index and data objects (each within LanceDB's request timeout) while listings,
the probe's request, answer at once.
"""

from __future__ import annotations

import math
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from memory_router import BackendUnavailable, Router
from memory_router.kit import SearchRequest
from s3_helpers.corpus import lance_router
from s3_helpers.counting_proxy import CountingProxy
from s3_helpers.moto_server import BUCKET, S3Server

pytestmark = pytest.mark.slow

# One call's deadline is 1 + 3 = 4 s; each index or data read is held 1 s, and a first
# load makes more than a dozen of them one after another.
TIMEOUTS = {"connect_timeout_s": 1.0, "request_timeout_s": 3.0, "max_retries": 0}
CALL_S = 4.0
READ_S = 1.0
UNREACHABLE = "the object store cannot be reached"


def object_read(method: str, path: str) -> bool:
    return method == "GET" and ("/data/" in path or "/_indices/" in path)


def slow_reads(method: str, path: str) -> float:
    return READ_S if object_read(method, path) else 0.0


def request(query: str) -> SearchRequest:
    return SearchRequest(query=query, max_results=5, min_score=0.0, candidates=10)


@pytest.fixture
def proxy(s3_server: S3Server) -> Iterator[CountingProxy]:
    with CountingProxy(s3_server.endpoint) as proxy:
        yield proxy


def synced_router(tmp_path: Path, server: S3Server, proxy: CountingProxy) -> Router:
    settings = {
        "uri": f"s3://{BUCKET}/slow/{uuid.uuid4().hex}",
        "storage_options": server.options(endpoint=proxy.endpoint),
        **TIMEOUTS,
    }
    router = lance_router(tmp_path, settings)
    reports = router.sync()
    assert not any(r.errors for r in reports), [r.errors for r in reports]
    return router


def test_a_first_load_longer_than_the_deadline_answers_both_searches_waiting_for_it(
    tmp_path: Path, s3_server: S3Server, proxy: CountingProxy
) -> None:
    with synced_router(tmp_path, s3_server, proxy) as router:
        backend: Any = router.backend("lancedb")
        proxy.delay = slow_reads
        queries = [request("glaze firing"), request("kiln degrees")]
        with ThreadPoolExecutor(2) as pool:  # the second waits for the first's load
            results = list(pool.map(backend.search, queries))
        assert all(r.mode == "hybrid" and r.hits for r in results)
        assert all(any(h.text_score for h in r.hits) for r in results)
        loads = [path for method, path in proxy.requests if object_read(method, path)]
        assert len(loads) * READ_S > CALL_S  # the premise: the load outlasted a deadline

        # The store was not marked unreachable (every call would fail at once), and the
        # load is held: the next search reads no index or data object.
        start = len(proxy.requests)
        assert backend.search(request("celadon bowls")).hits
        assert not [p for m, p in proxy.since(start) if object_read(m, p)]


def test_a_store_that_stops_answering_during_the_first_load_fails_the_search(
    tmp_path: Path, s3_server: S3Server, proxy: CountingProxy
) -> None:
    with synced_router(tmp_path, s3_server, proxy) as router:
        backend: Any = router.backend("lancedb")
        stopped: list[float] = []

        def stops_at_the_vectors(method: str, path: str) -> float:
            if "/data/" in path and not stopped:  # the load's read of the chunks
                stopped.append(time.monotonic())
            return math.inf if stopped else slow_reads(method, path)

        proxy.delay = stops_at_the_vectors
        with pytest.raises(BackendUnavailable, match=UNREACHABLE) as info:
            backend.search(request("glaze firing"))
        assert stopped  # it failed in the load, not before
        # Within the probe's deadlines; LanceDB alone gives up after ~8 request timeouts.
        assert time.monotonic() - stopped[0] < 3 * CALL_S
        assert "endpoint" in (info.value.hint or "")


def test_a_store_that_stops_answering_when_sync_opens_the_new_live_tables(
    tmp_path: Path, s3_server: S3Server, proxy: CountingProxy
) -> None:
    """Another process switched the live generation during this sync: opening its tables
    is an object-store call like any other, failed within the deadline with a hint."""
    with synced_router(tmp_path / "a", s3_server, proxy) as router:
        backend: Any = router.backend("lancedb")
        other_settings = {
            "uri": backend.settings.uri,
            "storage_options": s3_server.options(),  # not through the proxy
            **TIMEOUTS,
        }
        stopped: list[float] = []

        def switch_then_stop(*, done: int, total: int, label: str) -> None:
            if stopped:
                return
            with lance_router(tmp_path / "b", other_settings) as other:
                assert not other.sync(force=True)[0].errors  # a new generation goes live
            stopped.append(time.monotonic())
            # Only ``meta`` still answers: this sync reads the new pointer, then hangs
            # opening the new generation's tables.
            proxy.delay = lambda method, path: 0.0 if "meta.lance" in path else math.inf

        report = router.sync(progress=switch_then_stop)[0]
        assert stopped
        assert report.errors
        assert UNREACHABLE in report.errors[0]
        assert "endpoint" in (report.hint or "")
        # Within one deadline; LanceDB alone gives up after ~8 request timeouts.
        assert time.monotonic() - stopped[0] < 3 * CALL_S
