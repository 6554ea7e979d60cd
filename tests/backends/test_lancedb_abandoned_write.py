"""A write given up on is not raced by the next one.

When the object store stops answering the probe during a sync, the sync is given up on
and reported failed, but its thread goes on (LanceDB cannot be interrupted) and writes
once the store answers again. The next writer of the process waits for it to end (at
most one deadline, then a clear error with a hint), so two writes never interleave.

The seams: a loopback HTTP proxy in front of the tests' S3 server that stops answering
and starts again (:class:`CountingProxy` ``delay``), and an embedding provider that
holds the sync (on its thread) until the test lets it go on.
"""

from __future__ import annotations

import math
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import pytest

from memory_router import BackendUnavailable, Config, NotFound, Router, hookimpl, migrate, testing
from memory_router.kit import ProviderSpec
from memory_router.testing import HashingEmbedder
from s3_helpers.counting_proxy import CountingProxy, no_delay
from s3_helpers.moto_server import BUCKET, S3Server

pytestmark = pytest.mark.slow

FILES = {"MEMORY.md": "# Memory\n\nThe garden gate code is 4417; the shed key hangs inside.\n"}
NEW = "# Kiln\n\nThe kiln reached 1240 degrees on the third firing.\n"
TIMEOUTS = {"connect_timeout_s": 1.0, "request_timeout_s": 3.0, "max_retries": 0}
REQUEST_S = 3.0
UNREACHABLE = "the object store cannot be reached"
STILL_RUNNING = "an earlier write, given up on when the object store stopped answering"


def never_answer(method: str, path: str) -> float:
    return math.inf


class GatedEmbedder(HashingEmbedder):
    """Embeds documents once ``gate`` is set; while it is not, the first call stops the
    store answering (the proxy) and waits."""

    id = "gated"

    def __init__(self, proxy: CountingProxy) -> None:
        super().__init__()
        self.proxy = proxy
        self.gate = threading.Event()
        self.gate.set()

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        if not self.gate.is_set():
            self.proxy.delay = never_answer
            assert self.gate.wait(120), "never let go on"
        return super().embed_documents(texts)


class Plugin:
    def __init__(self, embedder: GatedEmbedder) -> None:
        self.embedder = embedder

    @hookimpl
    def register_embedding_providers(self, register: Callable[[ProviderSpec], None]) -> None:
        register(ProviderSpec(name="gated", factory=lambda context, model: self.embedder))


@pytest.fixture
def proxy(s3_server: S3Server) -> Iterator[CountingProxy]:
    with CountingProxy(s3_server.endpoint) as proxy:
        yield proxy


def gated_config(
    tmp_path: Path, workspace: Path, s3_server: S3Server, proxy: CountingProxy
) -> Config:
    """``chain = ["lancedb"]`` on the S3 server behind ``proxy``, the gated provider."""
    return testing.router_config(
        tmp_path,
        workspace,
        backend="lancedb",
        embedding="gated",
        settings={
            "uri": f"s3://{BUCKET}/abandoned/{uuid.uuid4().hex}",
            "storage_options": s3_server.options(endpoint=proxy.endpoint),
            **TIMEOUTS,
        },
        query={"min_score": 0.0},
        sync={"on_search": False},
    )


def test_the_next_writer_waits_for_a_write_given_up_on(
    tmp_path: Path, s3_server: S3Server, proxy: CountingProxy
) -> None:
    workspace = testing.write_workspace(tmp_path / "workspace", FILES)
    embedder = GatedEmbedder(proxy)
    config = gated_config(tmp_path, workspace, s3_server, proxy)
    events: list[str] = []

    def record(name: str) -> Callable[..., None]:
        def progress(*, done: int, total: int, label: str) -> None:
            events.append(f"{name} {done}/{total}")

        return progress

    with Router.from_config(config, plugins=[Plugin(embedder), testing]) as router:
        assert not router.sync()[0].errors
        (workspace / "memory").mkdir()
        (workspace / "memory" / "kiln.md").write_text(NEW, encoding="utf-8")

        # The store stops answering while the sync embeds: the sync is given up on,
        # its thread waits at the gate and will write once let go on.
        embedder.gate.clear()
        given_up = router.sync(progress=record("first"))[0]
        assert UNREACHABLE in given_up.errors[0]
        proxy.delay = no_delay
        time.sleep(REQUEST_S)  # an unreachable store is not tried again meanwhile

        refused = router.sync(progress=record("refused"))[0]
        assert STILL_RUNNING in refused.errors[0]
        assert "retry in a moment" in (refused.hint or "")
        assert not [e for e in events if e.startswith("refused")]  # it wrote nothing

        embedder.gate.set()  # the first sync writes its file now, and ends
        wrote = time.monotonic() + 120
        while "first 1/1" not in events and time.monotonic() < wrote:
            time.sleep(0.05)
        report = router.sync(progress=record("next"))[0]
        assert not report.errors
        assert events.index("first 1/1") < events.index("next 0/0")  # nothing left to do
        hit = router.search("kiln degrees firing").results[0]
        assert hit.path == "memory/kiln.md"


def test_a_migration_waits_for_a_write_given_up_on_and_stages_nothing(
    tmp_path: Path, s3_server: S3Server, proxy: CountingProxy
) -> None:
    workspace = testing.write_workspace(tmp_path / "workspace", FILES)
    embedder = GatedEmbedder(proxy)
    config = gated_config(tmp_path, workspace, s3_server, proxy)
    with Router.from_config(config, plugins=[Plugin(embedder), testing]) as router:
        assert not [r for r in router.sync(backends=["sqlite", "lancedb"]) if r.errors]
        lance = router.backend("lancedb")
        live = [c.id for c in lance.export_chunks()]
        (workspace / "memory").mkdir()
        (workspace / "memory" / "kiln.md").write_text(NEW, encoding="utf-8")
        embedder.gate.clear()
        given_up = router.sync(backends=["lancedb"])[0]
        assert UNREACHABLE in given_up.errors[0]
        proxy.delay = no_delay
        time.sleep(REQUEST_S)  # an unreachable store is not tried again meanwhile

        # The sync's thread still waits to write: the migration does not race it.
        with pytest.raises(BackendUnavailable) as refused:
            migrate(router, "lancedb", source="sqlite")
        assert STILL_RUNNING in refused.value.message
        assert "waited 4 s" in refused.value.message  # one call's deadline, no more
        assert "retry in a moment" in (refused.value.hint or "")
        assert [c.id for c in lance.export_chunks()] == live  # the live tables untouched

        embedder.gate.set()
        ended = time.monotonic() + 120
        synced = router.sync(backends=["lancedb"])[0]
        while synced.errors and time.monotonic() < ended:  # until the given-up sync ended
            time.sleep(0.2)
            synced = router.sync(backends=["lancedb"])[0]
        assert not synced.errors
        with pytest.raises(NotFound):  # the refused migration staged nothing
            lance.stage(fingerprint={}, resume=True)
        report = migrate(router, "lancedb", source="sqlite")
        assert (report.mode, report.written) == ("reuse", 1)
        assert [c.id for c in lance.export_chunks()] == live  # sqlite's copy went live
