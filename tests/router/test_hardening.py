"""Regressions found in review: each test fails on the code before its fix."""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

import memory_router.testing as testing
from memory_router import (
    BackendUnavailable,
    ConfigError,
    EmbeddingError,
    InvalidInput,
    Router,
    hookimpl,
    load_config,
)
from memory_router.kit import BackendSpec, ProviderSpec
from memory_router.testing import HashingEmbedder

NOTES = {
    "MEMORY.md": "# Memory\nI like green tea in the morning.\n",
    "memory/2026-01-01.md": "Moved the staging database to host db-stage-3.\n",
}


class Down:
    """A backend that is always unavailable (or hangs, when ``hang`` is set)."""

    hang = threading.Event()
    release = threading.Event()

    def __init__(self, context: Any) -> None:
        self.name = context.name

    def search(self, request: Any) -> Any:
        if Down.hang.is_set():
            Down.release.wait(10)
        raise BackendUnavailable("sidecar is down", backend=self.name)

    def sync(self, snapshot: Any, **kwargs: Any) -> Any:
        raise BackendUnavailable("sidecar is down", backend=self.name)

    def status(self, **kwargs: Any) -> Any:
        raise BackendUnavailable("sidecar is down", backend=self.name)

    def close(self) -> None:
        pass


class Switchable(HashingEmbedder):
    """The hashing embedder, with an off switch for its document side."""

    id = "switchable"
    failing = False

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        if Switchable.failing:
            raise EmbeddingError("embedding API is down", provider=self.id)
        return super().embed_documents(texts)


class Plugin:
    @hookimpl
    def register_backends(self, register: Callable[[BackendSpec], None]) -> None:
        register(BackendSpec(name="down", factory=Down))  # type: ignore[arg-type]

    @hookimpl
    def register_embedding_providers(self, register: Callable[[ProviderSpec], None]) -> None:
        register(ProviderSpec(name="switchable", factory=lambda context, model: Switchable()))


@pytest.fixture
def make(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., Router]]:
    monkeypatch.setenv("MEMORY_ROUTER_PLUGINS", "sqlite")
    Down.hang.clear()
    Down.release.clear()
    Switchable.failing = False
    routers: list[Router] = []

    def build(
        chain: Sequence[str] = ("sqlite",), embedding: str = "none", **overrides: Any
    ) -> Router:
        workspace = testing.write_workspace(tmp_path / "ws", NOTES)
        router_table = {"chain": list(chain), **overrides.pop("router", {})}
        config = load_config(
            None,
            environ={},
            overrides={
                "workspace": str(workspace),
                "state_dir": str(tmp_path / "state"),
                "embedding": {"provider": embedding},
                "router": router_table,
                **overrides,
            },
        )
        router = Router.from_config(config, plugins=[Plugin(), testing])
        routers.append(router)
        return router

    yield build
    Down.release.set()
    for router in routers:
        router.close()


def test_fail_closed_holds_while_the_circuit_is_open(make: Callable[..., Router]) -> None:
    router = make(chain=("down", "sqlite"), router={"fallback": "none"})
    for _ in range(3):
        with pytest.raises(BackendUnavailable, match="fallback is off"):
            router.search("green tea")


def test_a_lone_surrogate_query_neither_fails_nor_opens_the_circuit(
    make: Callable[..., Router],
) -> None:
    router = make()
    router.search("\ud800 tea")
    assert router.status().breakers["sqlite"].state == "closed"
    assert router.search("green tea").results[0].path == "MEMORY.md"


def test_an_entry_with_a_lone_surrogate_does_not_block_indexing(
    make: Callable[..., Router], tmp_path: Path
) -> None:
    router = make()
    router.store("caf\udce9 latte with oat milk")
    (tmp_path / "ws" / "memory" / "later.md").write_text("zebra42 arrived on Tuesday\n")
    reports = router.sync()
    assert [e for r in reports for e in r.errors] == []
    assert router.search("zebra42").results[0].path == "memory/later.md"
    assert router.search("oat milk latte").results[0].path == "memory/entries.md"


def test_a_hung_backend_cannot_starve_the_fallback(make: Callable[..., Router]) -> None:
    Down.hang.set()
    router = make(
        chain=("down", "sqlite"), router={"timeout_s": 0.5, "breaker": {"failure_threshold": 100}}
    )
    router.sync(backends=["sqlite"])
    answers: list[str] = []
    errors: list[BaseException] = []

    def ask() -> None:
        try:
            answers.append(router.search("green tea").backend)
        except BaseException as error:
            errors.append(error)

    threads = [threading.Thread(target=ask) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(20)
    assert errors == []
    assert answers == ["sqlite"] * 6


def test_searches_during_forced_rebuilds_never_fail(make: Callable[..., Router]) -> None:
    router = make()
    router.sync()
    stop = threading.Event()
    failures: list[str] = []
    empties = 0

    def search_loop() -> None:
        nonlocal empties
        while not stop.is_set():
            try:
                if not router.search("green tea").results:
                    empties += 1
            except Exception as error:
                failures.append(repr(error))

    threads = [threading.Thread(target=search_loop) for _ in range(3)]
    for thread in threads:
        thread.start()
    try:
        for _ in range(15):
            assert not [e for r in router.sync(force=True) for e in r.errors]
    finally:
        stop.set()
        for thread in threads:
            thread.join(10)
    assert failures == []
    assert empties == 0


def test_a_corrupt_embedding_cache_is_moved_aside(
    make: Callable[..., Router], tmp_path: Path
) -> None:
    cache = tmp_path / "state/agents/main/embedding-cache.sqlite"
    cache.parent.mkdir(parents=True)
    cache.write_bytes(b"this is not a database" * 100)
    router = make(embedding="hash")
    assert router.search("green tea", min_score=0).results[0].path == "MEMORY.md"
    assert router.status().embedding.mode == "hybrid"
    assert list(cache.parent.glob("embedding-cache.sqlite.corrupt-*"))


def test_a_failing_pre_search_sync_answers_from_the_index_with_a_note(
    make: Callable[..., Router], tmp_path: Path
) -> None:
    router = make(embedding="switchable")
    router.sync()
    router.store("the new fact about kumquats")
    Switchable.failing = True
    response = router.search("green tea")
    assert response.results[0].path == "MEMORY.md"
    assert any("embedding API is down" in note for note in response.notes)


def test_interval_reconciles_hand_edits_on_search(
    make: Callable[..., Router], tmp_path: Path
) -> None:
    router = make(sync={"interval_minutes": 0.002})
    assert router.search("zebra42").results == ()
    (tmp_path / "ws" / "memory" / "hand.md").write_text("zebra42 written by hand\n")
    time.sleep(0.2)
    assert router.search("zebra42").results[0].path == "memory/hand.md"


def test_plugin_env_variables_are_not_config_overrides() -> None:
    config = load_config(None, environ={"MEMORY_ROUTER_HF_ENDPOINT": "http://127.0.0.1:9"})
    assert config.agent_id == "main"
    with pytest.raises(ConfigError) as info:
        load_config(None, environ={"MEMORY_ROUTER_QUERY__MAX_RESULTZ": "3"})
    assert "__file__" not in info.value.message


def test_overrides_apply_to_a_config_object(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMORY_ROUTER_PLUGINS", "sqlite")
    base = load_config(None, environ={}, overrides={"embedding": {"provider": "none"}})
    with Router.from_config(base, workspace=str(tmp_path), query={"max_results": 2}) as router:
        assert router.config.workspace_path == tmp_path
        assert router.config.query.max_results == 2
        assert router.config.embedding.provider == "none"


def test_bad_arguments_are_invalid_input(make: Callable[..., Router]) -> None:
    router = make()
    with pytest.raises(InvalidInput, match="max_results"):
        router.search("tea", max_results="ten")  # type: ignore[arg-type]
    with pytest.raises(InvalidInput, match="min_score"):
        router.search("tea", min_score=math.nan)
    with pytest.raises(InvalidInput, match="Unicode"):
        router.get("memory/\ud800.md")
    router.close()
    with pytest.raises(InvalidInput, match="closed"):
        router.search("tea")
    with pytest.raises(InvalidInput, match="closed"):
        router.sync()


def test_non_finite_and_out_of_range_config_values(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text("[query.temporal_decay]\nhalf_life_days = inf\n")
    with pytest.raises(ConfigError, match="finite") as info:
        load_config(path, environ={})
    assert info.value.key == "half_life_days"
    path.write_text("[router]\ntimeout_s = 0\n")
    with pytest.raises(ConfigError, match="timeout_s"):
        load_config(path, environ={})
    path.write_text("[query]\nmax_snippet_chars = -5\n")
    with pytest.raises(ConfigError, match="from 0 to") as info:
        load_config(path, environ={})
    assert info.value.key == "max_snippet_chars"


def test_an_unknown_fallback_provider_is_a_config_error(make: Callable[..., Router]) -> None:
    router = make(embedding="hash")
    config = router.config.replace(
        embedding=router.config.embedding.__class__(provider="hash", fallback="minilmm")
    )
    with Router(config, plugin_manager=router.pm) as bad, pytest.raises(ConfigError) as info:
        bad.search("tea")
    assert (info.value.table, info.value.key) == ("embedding", "fallback")
