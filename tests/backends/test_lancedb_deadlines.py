"""LanceDB faults at every call, as a user meets them (issue 8): an object store that
stops answering or goes away after start-up, a damaged local table, a missing bucket, and
`reset` of a store that is not under the state folder.

The seams are real: moto on loopback, a loopback TCP proxy in front of it that stops
answering (``FaultyProxy``), files on disk, and the CLI.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from memory_router import BackendUnavailable, Router, testing
from memory_router.cli import build_cli
from s3_helpers.faulty_proxy import FaultyProxy
from s3_helpers.moto_server import BUCKET, S3Server

pytestmark = pytest.mark.slow

FILES = {"MEMORY.md": "# Memory\n\nThe garden gate code is 4417; the shed key hangs inside.\n"}
# One object-store call may take connect + request timeout; LanceDB alone would retry an
# unanswered request about eight times over.
TIMEOUTS = {"connect_timeout_s": 1.0, "request_timeout_s": 5.0, "max_retries": 0}
CALL_S = 6.0
UNREACHABLE = "the object store cannot be reached"


@pytest.fixture
def proxy(s3_server: S3Server) -> Iterator[FaultyProxy]:
    proxy = FaultyProxy(int(s3_server.endpoint.rsplit(":", 1)[1]))
    yield proxy
    proxy.stop()


def chained_router(tmp_path: Path, settings: dict[str, Any]) -> Router:
    workspace = testing.write_workspace(tmp_path / "workspace", FILES)
    config = testing.router_config(
        tmp_path,
        workspace,
        backend="lancedb",
        embedding="hash",
        settings=settings,
        query={"min_score": 0.0},
        sync={"on_search": False},
    )
    router_table = config.router.__class__(chain=("lancedb", "sqlite"), fallback="next")
    return Router.from_config(config.replace(router=router_table), plugins=[testing])


def timed(action: Any) -> tuple[Any, float]:
    started = time.monotonic()
    return action(), time.monotonic() - started


@pytest.mark.parametrize("fault", ["hang", "stop"])
def test_every_call_fails_within_its_deadline_when_the_store_stops_answering(
    tmp_path: Path, s3_server: S3Server, proxy: FaultyProxy, fault: str
) -> None:
    settings = {
        "uri": f"s3://{BUCKET}/deadlines/{uuid.uuid4().hex}",
        "storage_options": s3_server.options(endpoint=proxy.endpoint),
        **TIMEOUTS,
    }
    with chained_router(tmp_path, settings) as router:
        reports = router.sync(backends=["lancedb", "sqlite"])
        assert not any(r.errors for r in reports), [r.errors for r in reports]
        assert router.search("garden gate code").backend == "lancedb"
        getattr(proxy, fault)()

        response, took = timed(lambda: router.search("garden gate code"))
        assert took < 4 * CALL_S
        assert response.backend == "sqlite"
        assert response.results[0].path == "MEMORY.md"
        assert response.fallback is not None
        assert UNREACHABLE in response.fallback.reason

        status, took = timed(lambda: router.status(deep=True).backends[0])
        assert took < 2 * CALL_S
        assert not status.available
        assert UNREACHABLE in (status.error or "")
        assert "endpoint" in status.details["hint"]

        report, took = timed(lambda: router.sync(backends=["lancedb"])[0])
        assert took < 2 * CALL_S
        assert UNREACHABLE in report.errors[0]
        assert report.hint

        entry, took = timed(lambda: router.store("Prefers the blue mug", category="preference"))
        assert took < 2 * CALL_S
        assert entry.text in router.journal_path.read_text(encoding="utf-8")

        lance: Any = router.backend("lancedb")
        started = time.monotonic()
        with pytest.raises(BackendUnavailable, match=UNREACHABLE):
            lance.optimize()
        assert time.monotonic() - started < 2 * CALL_S


def cli(config: Path, *args: str) -> Result:
    return CliRunner().invoke(build_cli(), ["--config", str(config), *args])


def write_config(tmp_path: Path, lancedb: str) -> Path:
    testing.write_workspace(tmp_path / "workspace", FILES)
    path = tmp_path / "memory-router.toml"
    path.write_text(
        'workspace = "workspace"\nstate_dir = "state"\n[embedding]\nprovider = "hash"\n'
        '[router]\nchain = ["lancedb", "sqlite"]\n[sync]\non_search = false\n'
        f"[backends.lancedb]\n{lancedb}",
        encoding="utf-8",
    )
    return path


def toml_options(server: S3Server) -> str:
    options = ", ".join(f'{k} = "{v}"' for k, v in server.options().items())
    return f"storage_options = {{ {options} }}\n"


@pytest.fixture
def hashing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMORY_ROUTER_PLUGIN_MODULES", "memory_router.testing")


def error_and_hint(result: Result) -> tuple[str, str]:
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert "Traceback" not in result.output + result.stderr
    errors = [line for line in lines if line.startswith("Error: ")]
    hints = [line for line in lines if line.startswith("Hint: ")]
    assert errors, result.stderr
    assert hints, result.stderr
    return errors[0], hints[0]


@pytest.mark.usefixtures("hashing")
def test_damaged_local_table_says_what_to_do_and_reset_heals_it(tmp_path: Path) -> None:
    config = write_config(tmp_path, 'uri = "lance"\n')
    assert cli(config, "store", "Prefers the blue mug", "--category", "preference").exit_code == 0
    assert cli(config, "index").exit_code == 0
    status = json.loads(cli(config, "status", "--deep", "--json").output)
    details = status["backends"][0]["details"]
    assert details["uri"] == str(tmp_path / "lance")
    assert details["indexes"]["text_idx"] == {"type": "FTS", "indexed_rows": 2, "unindexed_rows": 0}
    assert details["entries_indexes"]["text_idx"]["indexed_rows"] == 1
    assert details["last_optimize"] == "never"
    versions = tmp_path / "lance" / "meta.lance" / "_versions"
    newest = min(versions.glob("*.manifest"))  # Lance numbers versions downwards
    newest.write_bytes(newest.read_bytes()[:10])  # a half-written manifest

    searched = cli(config, "search", "garden gate code")
    assert searched.exit_code == 0
    assert "Answered by sqlite" in searched.output
    assert "a table is missing or damaged" in searched.output

    indexed = cli(config, "index")
    assert indexed.exit_code == 1
    error, hint = error_and_hint(indexed)
    assert "a table is missing or damaged" in error
    assert "reset --backend lancedb" in hint

    reset = cli(config, "reset", "--backend", "lancedb", "--yes")
    assert reset.exit_code == 0, reset.output
    assert f"Removed {tmp_path / 'lance' / 'meta.lance'}" in reset.output
    assert "full rebuild" in cli(config, "index").output
    assert "Answered by lancedb" in cli(config, "search", "garden gate code").output


@pytest.mark.usefixtures("hashing")
def test_reset_drops_the_store_on_object_storage(tmp_path: Path, s3_server: S3Server) -> None:
    import boto3

    prefix = f"reset/{uuid.uuid4().hex}"
    uri = f"s3://{BUCKET}/{prefix}"
    config = write_config(tmp_path, f'uri = "{uri}"\n{toml_options(s3_server)}')
    assert cli(config, "index").exit_code == 0
    s3 = boto3.client(
        "s3",
        endpoint_url=s3_server.endpoint,
        aws_access_key_id=s3_server.access_key_id,
        aws_secret_access_key=s3_server.secret_access_key,
        region_name="us-east-1",
    )

    def objects() -> int:
        return int(s3.list_objects_v2(Bucket=BUCKET, Prefix=prefix).get("KeyCount", 0))

    assert objects() > 0
    reset = cli(config, "reset", "--backend", "lancedb", "--yes")
    assert reset.exit_code == 0, reset.output
    assert f"Removed s3://{BUCKET}/{prefix}/meta.lance" in reset.output
    assert objects() == 0
    assert "full rebuild (no index yet)" in cli(config, "index").output


@pytest.mark.usefixtures("hashing")
def test_missing_bucket_is_an_error_with_a_hint(tmp_path: Path, s3_server: S3Server) -> None:
    config = write_config(tmp_path, f'uri = "s3://no-such-bucket/x"\n{toml_options(s3_server)}')
    indexed = cli(config, "index")
    assert indexed.exit_code == 1
    error, hint = error_and_hint(indexed)
    assert error.startswith("Error: lancedb: ")
    assert "the bucket does not exist" in error
    assert hint == "Hint: create the bucket, or fix the bucket in [backends.lancedb] uri"
    doctor = cli(config, "doctor")
    assert "fix: create the bucket" in doctor.output
    searched = cli(config, "search", "garden gate code")
    assert searched.exit_code == 0, searched.output
    assert "Answered by sqlite" in searched.output
    assert "Fallback: lancedb failed: " in searched.output
    assert "  Hint: create the bucket, or fix the bucket in [backends.lancedb] uri" in (
        searched.output
    )


def test_an_abandoned_call_never_holds_the_command_at_exit(tmp_path: Path) -> None:
    proxy = FaultyProxy(target_port=9)  # never forwards: it hangs from the start
    proxy.hang()
    settings = f'uri = "s3://{BUCKET}/x"\nconnect_timeout_s = 0.5\nrequest_timeout_s = 1\n'
    endpoint = f'endpoint = "{proxy.endpoint}", allow_http = "true", region = "us-east-1"'
    keys = 'access_key_id = "k", secret_access_key = "s"'
    config = write_config(tmp_path, f"{settings}storage_options = {{ {endpoint}, {keys} }}\n")
    # LanceDB's runtime logs (at warn) when it has to wait at exit for calls in flight.
    env = {**os.environ, "MEMORY_ROUTER_PLUGIN_MODULES": "memory_router.testing"}
    env["LANCEDB_LOG"] = "warn"
    try:
        for command in (["index"], ["search", "garden gate code"]):
            done = subprocess.run(
                [sys.executable, "-m", "memory_router", "--config", str(config), *command],
                capture_output=True,
                text=True,
                timeout=120,
                env=env,
                check=False,
            )
            assert "Traceback" not in done.stderr
            assert "in flight" not in done.stderr
        assert "Answered by sqlite" in done.stdout
        assert UNREACHABLE in done.stdout
    finally:
        proxy.stop()


def test_a_store_that_stops_answering_during_index_fails_it_within_two_deadlines(
    tmp_path: Path, s3_server: S3Server, proxy: FaultyProxy
) -> None:
    settings = {
        "uri": f"s3://{BUCKET}/deadlines/{uuid.uuid4().hex}",
        "storage_options": s3_server.options(endpoint=proxy.endpoint),
        **TIMEOUTS,
    }

    def hang_once_started(*, done: int, total: int, label: str) -> None:
        proxy.hang()  # after the live state was read, before the first write

    with chained_router(tmp_path, settings) as router:
        started = time.monotonic()
        report = router.sync(backends=["lancedb"], progress=hang_once_started)[0]
        assert time.monotonic() - started < 3 * CALL_S
        assert UNREACHABLE in report.errors[0]
        assert report.hint


@pytest.mark.usefixtures("hashing")
def test_doctor_finds_a_missing_data_file_and_says_reset(tmp_path: Path) -> None:
    config = write_config(tmp_path, 'uri = "lance"\n')
    assert cli(config, "index").exit_code == 0
    assert "✓ backend lancedb" in cli(config, "doctor").output
    data = next((tmp_path / "lance").glob("chunks_g*.lance/data/*.lance"))
    data.unlink()  # the manifest still counts its rows

    doctor = cli(config, "doctor")
    assert doctor.exit_code == 1
    assert "✗ backend lancedb: lancedb status failed at" in doctor.output
    assert "a table is missing or damaged" in doctor.output
    # The fix repeats the global options in use, so it runs against this config when pasted.
    fix = "fix: rebuild it from the Markdown:"
    fix += f" memory-router --config {config} reset --backend lancedb"
    assert fix in doctor.output
    assert cli(config, "reset", "--backend", "lancedb", "--yes").exit_code == 0
    assert cli(config, "index").exit_code == 0
    assert "✓ backend lancedb" in cli(config, "doctor").output
