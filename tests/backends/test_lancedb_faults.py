"""LanceDB faults through real seams: a dead endpoint, a missing bucket, refused
credentials, a half-written table, and a rebuild whose embedder fails.

Each is a :class:`BackendUnavailable` with a one-line cause within the router's deadline,
and a chain ``["lancedb", "sqlite"]`` answers from SQLite instead.
"""

from __future__ import annotations

import json
import math
import shutil
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from memory_router import BackendUnavailable, EmbeddingError, Router, hookimpl, migrate, testing
from memory_router.cli import build_cli
from memory_router.kit import EmbeddingProvider, ProviderContext, ProviderSpec, get_plugin_manager
from s3_helpers.counting_proxy import CountingProxy, no_delay
from s3_helpers.moto_server import BUCKET, S3Server, free_port

pytestmark = pytest.mark.slow

FILES = {"MEMORY.md": "# Memory\n\nThe garden gate code is 4417; the shed key hangs inside.\n"}
DEADLINE_S = 20.0


def router_for(
    tmp_path: Path,
    settings: dict[str, Any],
    *,
    chain: Sequence[str] = ("lancedb",),
    embedding: str = "hash",
    plugins: Sequence[object] = (),
    **tables: Any,
) -> Router:
    workspace = testing.write_workspace(tmp_path / "workspace", FILES)
    config = testing.router_config(
        tmp_path,
        workspace,
        backend="lancedb",
        embedding=embedding,
        settings=settings,
        query={"min_score": 0.0},
        **tables,
    )
    config = config.replace(
        router=config.router.__class__(chain=tuple(chain), fallback="next", timeout_s=DEADLINE_S)
    )
    return Router.from_config(config, plugins=[testing, *plugins])


def s3_settings(server: S3Server, *, uri: str | None = None, **options: str) -> dict[str, Any]:
    return {
        "uri": uri or f"s3://{BUCKET}/faults/{uuid.uuid4().hex}",
        "storage_options": server.options(**options),
        "connect_timeout_s": 1.0,
        "request_timeout_s": 3.0,
        "max_retries": 0,
    }


def assert_unavailable_then_fallback(tmp_path: Path, settings: dict[str, Any], cause: str) -> None:
    with router_for(tmp_path / "alone", settings) as router:
        with pytest.raises(BackendUnavailable) as info:
            router.backend("lancedb").search(request("gate code"))
        assert cause in info.value.message
        assert "\n" not in info.value.message
    chain = ("lancedb", "sqlite")
    with router_for(tmp_path / "chain", settings, chain=chain, sync={"on_search": False}) as router:
        router.sync(backends=["sqlite"])
        started = time.monotonic()
        response = router.search("garden gate code")
        assert time.monotonic() - started < 2 * DEADLINE_S  # the router bounds the call
        assert response.backend == "sqlite"
        assert response.fallback is not None
        assert response.fallback.from_ == "lancedb"
        assert cause in response.fallback.reason
        assert response.fallback.kind == "unavailable"  # /metrics' reason label
        assert response.results[0].path == "MEMORY.md"


def request(query: str) -> Any:
    from memory_router.kit import SearchRequest

    return SearchRequest(query=query, max_results=5, min_score=0.0, candidates=20)


def test_unreachable_endpoint(tmp_path: Path, s3_server: S3Server) -> None:
    dead = f"http://127.0.0.1:{free_port()}"
    settings = s3_settings(s3_server, endpoint=dead)
    assert_unavailable_then_fallback(tmp_path, settings, "cannot be reached")


def test_missing_bucket(tmp_path: Path, s3_server: S3Server) -> None:
    settings = s3_settings(s3_server, uri="s3://no-such-bucket/x")
    assert_unavailable_then_fallback(tmp_path, settings, "bucket does not exist")


def test_wrong_credentials(tmp_path: Path, s3_server: S3Server) -> None:
    settings = s3_settings(
        s3_server, access_key_id="AKIAWRONGWRONGWRONG", secret_access_key="not-the-secret"
    )
    assert_unavailable_then_fallback(tmp_path, settings, "refused the credentials")


def test_unset_credential_variable_is_named(
    tmp_path: Path, s3_server: S3Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``{ env = … }`` naming an unset variable is a config error, never "no key" (which
    sent the store to the AWS default credential chain and a raw token-error dump)."""
    variable = f"MR_TEST_UNSET_{uuid.uuid4().hex[:8].upper()}"
    monkeypatch.delenv(variable, raising=False)
    settings = s3_settings(s3_server)
    settings["storage_options"]["access_key_id"] = {"env": variable}
    expected = f"{variable} is not set (storage_options.access_key_id of [backends.lancedb])"
    with router_for(tmp_path / "doctor", settings, chain=("lancedb", "sqlite")) as router:
        from memory_router._ops.doctor import checks

        config = next(c for c in checks(router) if c.name == "config")
        assert not config.ok
        assert expected in config.detail
        assert variable in (config.fix or "")
        with pytest.raises(BackendUnavailable) as info:
            router.backend("lancedb")
        assert variable in (info.value.hint or "")
    assert_unavailable_then_fallback(tmp_path, settings, expected)
    monkeypatch.setenv(variable, s3_server.options()["access_key_id"])
    with router_for(tmp_path / "set", settings) as router:
        assert router.unset_secret("lancedb") is None
        assert not router.sync()[0].errors


def test_missing_credentials_get_a_cause_and_hint_not_a_dump() -> None:
    """The store's own "no credentials" error (an operator's, verbatim up to the dump's
    cut) is one line with a credentials hint, never "another writer was busy"."""
    from memory_router_lancedb._lance import translate

    dump = (
        'Invalid input, Failed to connect to namespace: IO { source: Generic { store: "N/A",'
        ' source: IO { source: "Failed to get AWS credentials: ProviderError(ProviderError {'
        " source: TokenError { kind: Forbidden }, raw: Response { status: 403, retryable:"
        " false }\n  headers: ... }) }"
    )
    error = translate(RuntimeError(dump), backend="lancedb", doing="sync", uri="s3://m/a")
    assert isinstance(error, BackendUnavailable)
    assert "no credentials for the object store" in error.message
    assert "\n" not in error.message
    assert "raw:" not in error.message
    assert "access_key_id" in (error.hint or "")
    assert "another writer" not in error.hint


def test_half_written_table(tmp_path: Path) -> None:
    store = tmp_path / "lance"
    with router_for(tmp_path / "build", {"uri": str(store)}) as router:
        assert not router.sync()[0].errors
        assert router.search("gate code").results
    chunks = next(store.glob("chunks_g*.lance"))
    shutil.rmtree(chunks / "data")  # the manifest survives, the fragments it names do not
    assert_unavailable_then_fallback(tmp_path, {"uri": str(store)}, "lancedb search failed")


class BrokenDocuments(EmbeddingProvider):
    """A different model (so the fingerprint changes) whose document embedding fails."""

    id = "broken"
    model = "broken-384"

    def __init__(self) -> None:
        self.inner = testing.HashingEmbedder()

    @property
    def dims(self) -> int:
        return 384

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        raise EmbeddingError("the embedding server went away", provider=self.id)

    def embed_query(self, text: str) -> list[float]:
        return self.inner.vector(text)


class BrokenPlugin:
    @hookimpl
    def register_embedding_providers(self, register: Callable[[ProviderSpec], None]) -> None:
        def factory(context: ProviderContext, model: str) -> EmbeddingProvider:
            return BrokenDocuments()

        register(ProviderSpec(name="broken", factory=factory, auto_priority=None))


def test_failed_rebuild_keeps_the_old_tables_answering(tmp_path: Path) -> None:
    settings = {"uri": str(tmp_path / "lance")}
    with router_for(tmp_path, settings) as router:
        assert not router.sync()[0].errors
        before = router.status(deep=True).backends[0].details["generation"]
    with router_for(tmp_path, settings, embedding="broken", plugins=[BrokenPlugin()]) as router:
        report = router.sync()[0]
        assert report.errors
        assert "embedding server went away" in report.errors[0]
        status = router.status(deep=True).backends[0]
        assert status.details["generation"] == before
        assert status.details["fingerprint"]["model"] == "hash-384"
        response = router.search("garden gate code")
        assert response.backend == "lancedb"
        assert response.results[0].path == "MEMORY.md"
        lance = router.backend("lancedb")
        assert lance.store.generations() == [before]  # type: ignore[attr-defined]


def test_a_folder_that_cannot_be_written_is_named_with_a_hint(tmp_path: Path) -> None:
    # sysfs refuses new files and folders even to root: a read-only folder anywhere.
    with router_for(tmp_path, {"uri": "/sys/kernel"}, chain=("sqlite",)) as router:
        router.sync()
        with pytest.raises(BackendUnavailable) as caught:
            migrate(router, "lancedb", source="sqlite")
        assert caught.value.message == (
            "lancedb migrate failed at /sys/kernel: its folder cannot be written"
            " (a read-only file system, or no permission)"
        )
        assert "set [backends.lancedb] uri to a folder this user can write" in (
            caught.value.hint or ""
        )
        assert router.search("garden gate").results  # the source answers as before
    missing = {"uri": "/sys/memory-router-lance"}
    with router_for(tmp_path / "b", missing, chain=("sqlite",)) as router:
        with pytest.raises(BackendUnavailable) as caught:
            router.backend("lancedb")
        assert caught.value.message.startswith(
            "lancedb cannot create its folder /sys/memory-router-lance: "
        )
        assert caught.value.hint is not None


def test_a_store_that_stops_answering_mid_copy_keeps_the_copy_for_resume(
    tmp_path: Path, s3_server: S3Server
) -> None:
    files = {
        f"memory/n-{i:02d}.md": f"# Note {i}\n\nThe heron {i} waded by the weir.\n"
        for i in range(8)
    }
    workspace = testing.write_workspace(tmp_path / "workspace", files)
    checkpoint = tmp_path / "state/agents/main/migrations/lancedb.json"

    def after_first_batch(method: str, path: str) -> float:
        copied = checkpoint.exists() and json.loads(checkpoint.read_text()).get("done")
        return math.inf if copied else 0.0

    with CountingProxy(s3_server.endpoint) as proxy:
        settings = s3_settings(s3_server, endpoint=proxy.endpoint)
        config = testing.router_config(
            tmp_path, workspace, backend="sqlite", embedding="hash", backends={"lancedb": settings}
        )
        cli = build_cli(get_plugin_manager(plugins=[testing]))
        args = ["--config", str(config.file), "migrate", "--from", "sqlite", "--to", "lancedb"]
        assert CliRunner().invoke(cli, ["--config", str(config.file), "index"]).exit_code == 0
        proxy.delay = after_first_batch
        failed = CliRunner().invoke(cli, [*args, "--batch-size", "3"])
        assert failed.exit_code == 1
        assert "the object store cannot be reached" in failed.output
        assert failed.output.rstrip().endswith(
            "then run the same command with --resume to continue where it stopped"
            " (3 of 8 chunks are written)"
        )
        again = CliRunner().invoke(cli, [*args, "--batch-size", "3"])  # not resuming
        assert again.exit_code == 1
        assert "the object store cannot be reached" in again.output
        assert "--resume" not in again.output  # it failed before its own copy began
        proxy.delay = no_delay
        time.sleep(3.0)  # request_timeout_s: an unreachable store is not tried again meanwhile
        resumed = CliRunner().invoke(cli, [*args, "--batch-size", "3", "--resume"])
        assert resumed.exit_code == 0, resumed.output
        assert "5 written · 3 already written before the interruption" in resumed.output
