"""The router's chain: fallback with recorded reasons, fail-closed policy, breakers, deadlines."""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from memory_router import (
    BackendStatus,
    BackendUnavailable,
    ConfigError,
    Hit,
    InvalidInput,
    NotFound,
    Router,
    SyncReport,
    hookimpl,
    load_config,
)
from memory_router.kit import (
    Backend,
    BackendContext,
    BackendResult,
    BackendSpec,
    SearchRequest,
    Snapshot,
)


class ScanBackend(Backend):
    """A tiny real backend: keeps the snapshot's chunks and matches query words."""

    def __init__(self, context: BackendContext) -> None:
        super().__init__(context)
        self.chunks: list[Any] = []
        self.syncs = 0

    def sync(self, snapshot: Snapshot, *, force: bool = False, progress: Any = None) -> SyncReport:
        self.syncs += 1
        self.chunks = [c for doc in snapshot.documents for c in snapshot.chunks(doc)]
        return SyncReport(backend=self.name, added=len(snapshot.documents), chunks=len(self.chunks))

    def search(self, request: SearchRequest) -> BackendResult:
        words = request.query.lower().split()
        hits = [
            Hit(
                path=c.path,
                start_line=c.start_line,
                end_line=c.end_line,
                snippet=c.text,
                source=c.source,
                backend=self.name,
                text_score=1.0,
                score=sum(w in c.text.lower() for w in words) / len(words),
            )
            for c in self.chunks
        ]
        hits = sorted((h for h in hits if h.score > 0), key=lambda h: -h.score)
        return BackendResult(
            hits=tuple(hits[: request.candidates]), mode="scan", relaxed_min_score=0.0
        )

    def status(self, *, deep: bool = False) -> BackendStatus:
        return BackendStatus(name=self.name, available=True, chunks=len(self.chunks))


class Switch:
    """What the flaky backend does next: ``ok``, ``raise``, ``crash`` or ``hang``."""

    def __init__(self) -> None:
        self.mode = "ok"
        self.calls = 0
        self.release = threading.Event()


class FlakyBackend(ScanBackend):
    switch = Switch()

    def search(self, request: SearchRequest) -> BackendResult:
        self.switch.calls += 1
        if self.switch.mode == "raise":
            raise RuntimeError("index exploded")
        if self.switch.mode == "crash":
            raise BackendUnavailable("sidecar died (exit 139)", backend=self.name)
        if self.switch.mode == "hang":
            self.switch.release.wait(10)
        return super().search(request)


class Plugin:
    @hookimpl
    def register_backends(self, register: Any) -> None:
        register(BackendSpec(name="scan", factory=ScanBackend))
        register(BackendSpec(name="flaky", factory=FlakyBackend))
        register(BackendSpec(name="flaky2", factory=FlakyBackend))


@pytest.fixture
def switch(monkeypatch: pytest.MonkeyPatch) -> Switch:
    monkeypatch.setenv("MEMORY_ROUTER_PLUGINS", "")
    FlakyBackend.switch = Switch()
    yield FlakyBackend.switch
    FlakyBackend.switch.release.set()


def make_router(tmp_path: Path, **router: Any) -> Router:
    workspace = tmp_path / "ws"
    (workspace / "memory").mkdir(parents=True, exist_ok=True)
    (workspace / "MEMORY.md").write_text("# Prefs\nThe client prefers blue over green.\n")
    (workspace / "memory" / "2026-11-20.md").write_text("Deployed the billing service on Friday.\n")
    config = load_config(
        None,
        environ={},
        overrides={
            "workspace": str(workspace),
            "state_dir": str(tmp_path / "state"),
            "embedding": {"provider": "none"},
            "router": {"chain": ["flaky", "scan"], **router},
        },
    )
    return Router.from_config(config, plugins=[Plugin()])


def test_first_backend_answers_when_healthy(tmp_path: Path, switch: Switch) -> None:
    with make_router(tmp_path) as router:
        response = router.search("billing service")
    assert response.backend == "flaky"
    assert response.fallback is None
    assert response.results[0].path == "memory/2026-11-20.md"


def test_fallback_records_reason_when_first_backend_raises(tmp_path: Path, switch: Switch) -> None:
    switch.mode = "raise"
    with make_router(tmp_path) as router:
        response = router.search("client prefers blue")
        status = router.status()
    assert response.backend == "scan"
    assert response.results[0].path == "MEMORY.md"
    assert response.fallback is not None
    assert response.fallback.from_ == "flaky"
    assert "index exploded" in response.fallback.reason
    assert response.to_dict()["fallback"]["from"] == "flaky"
    assert status.last_fallback is not None
    assert status.last_fallback.from_ == "flaky"
    assert status.breakers["flaky"].failures == 1


def test_fail_closed_policy_raises_instead_of_falling_back(tmp_path: Path, switch: Switch) -> None:
    switch.mode = "crash"
    with (
        make_router(tmp_path, fallback="none") as router,
        pytest.raises(BackendUnavailable) as info,
    ):
        router.search("blue")
    assert "fallback is off" in info.value.message
    assert "exit 139" in info.value.message


def test_crash_opens_breaker_then_half_open_probe_recovers(tmp_path: Path, switch: Switch) -> None:
    switch.mode = "crash"
    with make_router(tmp_path, breaker={"cooldown_s": 0.3}) as router:
        assert router.search("blue").backend == "scan"
        calls = switch.calls
        skipped = router.search("blue")
        assert skipped.backend == "scan"
        assert switch.calls == calls, "an open circuit must not call the backend"
        assert "circuit open" in skipped.fallback.reason  # type: ignore[union-attr]
        switch.mode = "ok"
        time.sleep(0.35)
        assert router.status().breakers["flaky"].state == "half-open"
        assert router.search("blue").backend == "flaky"
        assert router.status().breakers["flaky"].state == "closed"


def test_fallbacks_and_breaker_changes_are_logged_once_each(
    tmp_path: Path, switch: Switch, caplog: pytest.LogCaptureFixture
) -> None:
    """``serve`` shows these in its log: a WARNING when the circuit opens and per new
    fallback reason (repeats within a minute are counted, not logged), an INFO when it closes."""
    caplog.set_level(logging.INFO, logger="memory_router")
    switch.mode = "crash"
    with make_router(tmp_path, breaker={"cooldown_s": 0.3}) as router:
        for _ in range(4):  # one failure that opens the circuit, then three skips
            assert router.search("blue").backend == "scan"
        warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
        opened = [m for m in warnings if "circuit opened" in m]
        assert len(opened) == 1, warnings
        assert "flaky" in opened[0]
        assert "exit 139" in opened[0]
        fell = [m for m in warnings if "fell back from backend flaky" in m]
        assert len(fell) == 2, fell  # the crash, then the first skip; later skips are quiet
        assert "exit 139" in fell[0]
        assert "circuit open" in fell[1]
        switch.mode = "ok"
        time.sleep(0.35)
        assert router.search("blue").backend == "flaky"
        assert router.search("blue").backend == "flaky"
    recovered = [r.getMessage() for r in caplog.records if "recovered" in r.getMessage()]
    assert len(recovered) == 1, recovered
    assert "flaky" in recovered[0]
    assert [r.levelno for r in caplog.records if "recovered" in r.getMessage()] == [logging.INFO]


def test_hanging_backend_times_out_and_next_answers(tmp_path: Path, switch: Switch) -> None:
    switch.mode = "hang"
    with make_router(tmp_path, timeout_s=0.5) as router:
        started = time.monotonic()
        response = router.search("billing")
        elapsed = time.monotonic() - started
        switch.release.set()
    assert response.backend == "scan"
    assert "0.5 s" in response.fallback.reason  # type: ignore[union-attr]
    assert elapsed < 5


def test_all_backends_failing_is_one_clear_error(tmp_path: Path, switch: Switch) -> None:
    switch.mode = "raise"
    router = make_router(tmp_path, chain=["flaky", "flaky2"])
    with router, pytest.raises(BackendUnavailable, match="no backend could answer") as info:
        router.search("blue")
    assert "flaky: search failed: RuntimeError: index exploded" in info.value.message
    assert "flaky2: search failed: RuntimeError: index exploded" in info.value.message


def test_empty_and_odd_queries(tmp_path: Path, switch: Switch) -> None:
    with make_router(tmp_path) as router:
        assert router.search("   ").results == ()
        assert router.search("\x00\x00").results == ()
        with pytest.raises(InvalidInput):
            router.search(None)  # type: ignore[arg-type]


def test_store_marks_dirty_and_next_search_syncs(tmp_path: Path, switch: Switch) -> None:
    with make_router(tmp_path) as router:
        router.search("blue")
        scan = router.backend("flaky")
        before = scan.syncs  # type: ignore[attr-defined]
        entry = router.store(
            "Prefers tea to coffee in the morning", importance=0.9, category="preference"
        )
        response = router.search("tea coffee morning")
        assert scan.syncs == before + 1  # type: ignore[attr-defined]
        assert response.results[0].path == "memory/entries.md"
        router.forget(entry.id)
        assert router.search("tea coffee morning").results == ()
        with pytest.raises(NotFound):
            router.forget(entry.id)


def test_unknown_backend_in_chain_is_a_config_error(tmp_path: Path, switch: Switch) -> None:
    config = load_config(None, environ={}, overrides={"router": {"chain": ["nope"]}})
    with pytest.raises(ConfigError, match="no backend named 'nope'") as info:
        Router.from_config(config, plugins=[Plugin()])
    assert info.value.table == "router"
    assert info.value.key == "chain"


def test_backend_table_for_a_backend_without_settings_is_rejected(
    tmp_path: Path, switch: Switch
) -> None:
    config = load_config(
        None, environ={}, overrides={"router": {"chain": ["scan"]}, "backends": {"scan": {"x": 1}}}
    )
    with pytest.raises(ConfigError, match="takes no settings"):
        Router.from_config(config, plugins=[Plugin()])


def test_citations_and_budget_are_applied(tmp_path: Path, switch: Switch) -> None:
    with make_router(tmp_path) as router:
        response = router.search("client prefers blue")
    hit = response.results[0]
    # MEMORY.md is chunked by its structure: the block ends at its last non-empty line
    # (OpenClaw's window would span the empty line 3 after the final newline).
    assert hit.citation == "MEMORY.md#L1-L2"
    assert hit.snippet.endswith("\n\nSource: MEMORY.md#L1-L2")


def test_new_session_reconciles_even_when_on_search_is_off(tmp_path: Path, switch: Switch) -> None:
    with make_router(tmp_path) as base:
        config = base.config.replace(sync=base.config.sync.__class__(on_search=False))
    router = Router.from_config(config, plugins=[Plugin()])
    with router:
        backend = router.backend("flaky")
        router.search("blue")
        assert backend.syncs == 0  # type: ignore[attr-defined]
        router.search("blue", session_key="agent:main:cli:direct:a")
        assert backend.syncs == 1  # type: ignore[attr-defined]
        router.search("blue", session_key="agent:main:cli:direct:a")
        assert backend.syncs == 1, "the same session does not sync again"  # type: ignore[attr-defined]
        router.search("blue", session_key="agent:main:cli:direct:b")
        assert backend.syncs == 2  # type: ignore[attr-defined]
