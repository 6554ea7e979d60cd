"""The read path: one deadline, syncs that never hold a search, one failure path.

Backends here are small real ones registered through the plugin hooks; their sync or
search can be told to raise a third-party error or to block until released.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memory_router import BackendStatus, Hit, Router, SyncReport, hookimpl, load_config
from memory_router._config.config import SyncConfig
from memory_router._routing.ledger import SyncLedger
from memory_router.kit import (
    Backend,
    BackendContext,
    BackendResult,
    BackendSpec,
    SearchRequest,
    Snapshot,
)


class Knobs:
    """What the scripted backends do next."""

    def __init__(self) -> None:
        self.sync_error: Exception | None = None
        self.search_error: Exception | None = None
        self.status_error: Exception | None = None
        self.sidecar_down = False
        self.sync_gate = threading.Event()
        self.sync_gate.set()
        self.syncs = 0
        self.sidecar_searches = 0


KNOBS = Knobs()


class Scripted(Backend):
    """Keeps the snapshot's chunks; sync and search follow :data:`KNOBS`."""

    def __init__(self, context: BackendContext) -> None:
        super().__init__(context)
        self.chunks: list[Any] = []

    def sync(self, snapshot: Snapshot, *, force: bool = False, progress: Any = None) -> SyncReport:
        KNOBS.syncs += 1
        KNOBS.sync_gate.wait(30)
        if KNOBS.sync_error is not None:
            raise KNOBS.sync_error
        self.chunks = [c for doc in snapshot.documents for c in snapshot.chunks(doc)]
        return SyncReport(backend=self.name, added=len(snapshot.documents), chunks=len(self.chunks))

    def search(self, request: SearchRequest) -> BackendResult:
        if KNOBS.search_error is not None:
            raise KNOBS.search_error
        words = request.query.lower().split()
        hits = tuple(
            Hit(
                path=c.path,
                start_line=c.start_line,
                end_line=c.end_line,
                snippet=c.text,
                source=c.source,
                backend=self.name,
                text_score=1.0,
                score=1.0,
            )
            for c in self.chunks
            if any(w in c.text.lower() for w in words)
        )
        return BackendResult(hits=hits, mode="scan", relaxed_min_score=0.0)

    def status(self, *, deep: bool = False) -> BackendStatus:
        if KNOBS.status_error is not None:
            raise KNOBS.status_error
        return BackendStatus(name=self.name, available=True, chunks=len(self.chunks))


class Sidecar(Scripted):
    sync_in_background = True

    def search(self, request: SearchRequest) -> BackendResult:
        KNOBS.sidecar_searches += 1
        if KNOBS.sidecar_down:
            raise RuntimeError("sidecar down")
        return super().search(request)


class Plugin:
    @hookimpl
    def register_backends(self, register: Any) -> None:
        register(BackendSpec(name="scripted", factory=Scripted))
        register(BackendSpec(name="sidecar", factory=Sidecar))


@pytest.fixture
def make(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    monkeypatch.setenv("MEMORY_ROUTER_PLUGINS", "sqlite")
    global KNOBS
    KNOBS = Knobs()
    routers: list[Router] = []

    def build(chain: list[str], **router: Any) -> Router:
        workspace = tmp_path / "ws"
        (workspace / "memory").mkdir(parents=True, exist_ok=True)
        (workspace / "MEMORY.md").write_text("# Prefs\nThe client prefers blue over green.\n")
        (workspace / "memory" / "zoo.md").write_text("The code word is zebra-quartz-42.\n")
        config = load_config(
            None,
            environ={},
            overrides={
                "workspace": str(workspace),
                "state_dir": str(tmp_path / "state"),
                "embedding": {"provider": "none"},
                "router": {"chain": chain, "timeout_s": 2, **router},
            },
        )
        built = Router.from_config(config, plugins=[Plugin()])
        routers.append(built)
        return built

    yield build
    KNOBS.sync_gate.set()
    for router in routers:
        router.close()


def test_a_sync_raising_a_third_party_error_falls_back(make: Any) -> None:
    router = make(["scripted", "sqlite"])
    KNOBS.sync_error = ValueError("bad row in the index")
    response = router.search("zebra-quartz-42", min_score=0)
    assert response.backend == "sqlite"
    assert response.fallback is not None
    assert "ValueError: bad row in the index" in response.fallback.reason
    assert router.status().breakers["scripted"].failures == 1


def test_status_and_search_errors_are_contained(make: Any) -> None:
    router = make(["scripted", "sqlite"])
    router.sync(backends=["scripted", "sqlite"])
    KNOBS.status_error = KeyError("boom")
    KNOBS.search_error = OSError("disk gone")
    status = router.status()
    assert not status.backends[0].available
    assert "KeyError" in str(status.backends[0].error)
    response = router.search("zebra-quartz-42", min_score=0)
    assert (response.backend, "OSError: disk gone" in response.fallback.reason) == ("sqlite", True)  # type: ignore[union-attr]


def test_a_sidecar_sync_never_holds_a_search(make: Any) -> None:
    router = make(["sidecar", "sqlite"])
    router.sync()
    KNOBS.sync_gate.clear()  # the next sync blocks until released
    router.store("kumquats are in season")
    started = time.monotonic()
    response = router.search("zebra-quartz-42", min_score=0)
    assert time.monotonic() - started < 1.5
    assert response.backend == "sidecar"
    assert any("stale" in note and "background" in note for note in response.notes)
    KNOBS.sync_gate.set()


def test_a_failed_background_sync_is_a_breaker_failure_and_the_chain_moves_on(
    make: Any,
) -> None:
    router = make(["sidecar", "sqlite"])
    KNOBS.sync_error = RuntimeError("qmd update crashed")
    first = router.search("zebra-quartz-42", min_score=0)  # sync starts in the background
    deadline = time.monotonic() + 5
    while KNOBS.syncs == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.2)
    second = router.search("zebra-quartz-42", min_score=0)
    assert first.backend == "sidecar"
    assert second.backend == "sqlite"
    assert "index sync failed" in second.fallback.reason  # type: ignore[union-attr]
    assert router.status().breakers["sidecar"].failures == 1


def test_a_slow_standby_sync_answers_from_the_index_it_has_within_the_wait(
    make: Any,
) -> None:
    router = make(["sidecar", "scripted"], sync_wait_s=0.3)
    router.sync(backends=["scripted"])
    KNOBS.sync_gate.clear()
    KNOBS.sidecar_down = True
    router.store("kumquats are in season")
    started = time.monotonic()
    response = router.search("zebra-quartz-42", min_score=0)
    assert time.monotonic() - started < 1.5
    assert response.backend == "scripted"
    assert response.results[0].path == "memory/zoo.md"
    assert any("stale" in note for note in response.notes)


def test_a_never_built_standby_answers_keyword_only_from_the_markdown(make: Any) -> None:
    router = make(["sidecar", "scripted"], sync_wait_s=0.2)
    KNOBS.sync_gate.clear()  # the standby's first build takes "forever"
    KNOBS.sidecar_down = True
    started = time.monotonic()
    response = router.search("zebra-quartz-42", min_score=0)
    assert time.monotonic() - started < 5
    assert response.backend == "scripted"
    assert response.mode == "keyword-from-markdown"
    assert response.results[0].path == "memory/zoo.md"
    assert any("degraded" in note and "keyword-only" in note for note in response.notes)
    KNOBS.sync_gate.set()
    deadline = time.monotonic() + 5
    while router.search("zebra", min_score=0).mode != "scan" and time.monotonic() < deadline:
        time.sleep(0.05)
    assert router.search("zebra", min_score=0).mode == "scan"


def test_asking_whether_a_sync_is_due_changes_nothing() -> None:
    clock = [100.0]
    ledger = SyncLedger(SyncConfig(interval_minutes=1), clock=lambda: clock[0])
    assert ledger.due("a")
    assert ledger.due("a")
    ledger.synced("a", ledger.changes)
    assert not ledger.due("a")
    ledger.changed()
    assert ledger.due("a")
    assert ledger.due("a")
    ledger.synced("a", ledger.changes)
    clock[0] += 61
    assert ledger.due("a")
    assert ledger.is_new_session("s")
    assert ledger.is_new_session("s")
    ledger.note_session("s")
    assert not ledger.is_new_session("s")


def test_a_new_router_process_starts_from_the_recorded_open_circuit(make: Any) -> None:
    """A CLI process started after another saw the sidecar fail skips it for the rest of
    the cooldown instead of paying its timeout again; after the cooldown one call probes,
    and the probe's success is recorded for the next process."""
    breaker = {"failure_threshold": 1, "cooldown_s": 0.6}
    KNOBS.sidecar_down = True
    first = make(["sidecar", "scripted"], breaker=breaker)
    assert first.search("zebra").backend == "scripted"
    assert KNOBS.sidecar_searches == 1

    second = make(["sidecar", "scripted"], breaker=breaker)
    assert second.status().breakers["sidecar"].state == "open"
    answer = second.search("zebra")
    assert answer.backend == "scripted"
    assert "circuit open" in answer.attempts[0].reason
    assert "sidecar down" in answer.attempts[0].reason
    assert KNOBS.sidecar_searches == 1  # not asked

    time.sleep(0.7)
    KNOBS.sidecar_down = False
    third = make(["sidecar", "scripted"], breaker=breaker)
    assert third.search("zebra").backend == "sidecar"  # the probe
    assert KNOBS.sidecar_searches == 2
    fourth = make(["sidecar", "scripted"], breaker=breaker)
    assert fourth.status().breakers["sidecar"].state == "closed"
