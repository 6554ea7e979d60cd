"""``memory-router serve``: the HTTP JSON API with real requests on loopback.

The server is a real subprocess (keyword-only SQLite over a workspace in a temporary
folder). One server is shared by the module's read-mostly tests; the token, a backend that
is down and shutdown each start their own.
"""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from serving import Server, child_env, make_config, running_server

DOWN_PLUGIN = """
from memory_router import Backend, BackendSpec, BackendStatus, BackendUnavailable, hookimpl

class Down(Backend):
    def search(self, request):
        raise BackendUnavailable("sidecar crashed", backend=self.name)
    def sync(self, snapshot, *, force=False, progress=None):
        raise BackendUnavailable("sidecar crashed", backend=self.name)
    def status(self, *, deep=False):
        return BackendStatus(name=self.name, available=False, error="sidecar crashed")

@hookimpl
def register_backends(register):
    register(BackendSpec(name="down", factory=Down))
"""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    config = make_config(tmp_path_factory.mktemp("serve"), {"serve": {"max_body_bytes": 4096}})
    with running_server(config) as running:
        yield running


def post(server: Server, path: str, body: object, **kwargs: object) -> httpx.Response:
    return httpx.post(server.url + path, json=body, timeout=30, **kwargs)  # type: ignore[arg-type]


@pytest.mark.slow
def test_search_store_search_forget(server: Server) -> None:
    first = post(server, "/search", {"query": "Lisbon conference", "maxResults": 3})
    assert first.status_code == 200, first.text
    answer = first.json()
    assert answer["backend"] == "sqlite"
    assert answer["mode"] == "keyword"
    assert answer["results"][0]["path"] == "memory/2026-11-01.md"
    stored = post(server, "/store", {"text": "The office plant is a fern", "category": "fact"})
    assert stored.status_code == 201, stored.text
    entry = stored.json()
    assert entry["category"] == "fact"
    found = post(server, "/search", {"query": "office plant fern"}).json()["results"]
    assert found
    assert found[0]["entry"]["id"] == entry["id"]
    listed = httpx.get(server.url + "/entries", timeout=30).json()
    assert entry["id"] in [e["id"] for e in listed]
    twice = post(server, "/store", {"text": "the office plant is a FERN"})
    assert twice.status_code == 200
    assert (twice.json()["action"], twice.json()["id"]) == ("duplicate", entry["id"])
    recalled = post(server, "/recall", {"query": "fern plant", "category": "fact"}).json()
    assert [m["entry"]["id"] for m in recalled["results"]] == [entry["id"]]
    unsure = post(server, "/forget", {"query": "plant"}).json()
    assert unsure["action"] == "candidates"
    assert unsure["deleted"] is None
    deleted = httpx.delete(f"{server.url}/entries/{entry['id']}", timeout=30)
    assert deleted.status_code == 200
    assert deleted.json()["id"] == entry["id"]
    again = httpx.delete(f"{server.url}/entries/{entry['id']}", timeout=30)
    assert again.status_code == 404
    gone = post(server, "/store", {"text": "Parking is on level 3"}).json()
    by_query = post(server, "/forget", {"query": "parking is on level 3"}).json()
    assert by_query["action"] == "deleted"
    assert by_query["deleted"]["id"] == gone["id"]
    assert post(server, "/forget", {}).status_code == 400
    assert "error" in again.json()


def test_an_empty_answer_says_there_were_weaker_hits(server: Server) -> None:
    weak = post(server, "/search", {"query": "green tea coffee piano", "minScore": 0.9}).json()
    assert weak["results"] == []
    below = weak["below_min_score"]
    assert below["count"] >= 1
    assert below["min_score"] == 0.9
    assert below["show_with"] <= below["best_score"] < 0.9
    assert weak["degraded"] is None  # keyword-only by configuration: nothing is missing
    shown = post(
        server, "/search", {"query": "green tea coffee piano", "minScore": below["show_with"]}
    )
    assert shown.json()["results"][0]["path"] == "MEMORY.md"


def test_get_reads_lines_and_refuses_escapes(server: Server) -> None:
    got = httpx.get(server.url + "/get", params={"path": "MEMORY.md", "from": 3, "lines": 1})
    assert got.status_code == 200
    assert got.json()["text"] == "- Prefers green tea over coffee in the morning."
    escape = httpx.get(server.url + "/get", params={"path": "../memory-router.toml"})
    assert escape.status_code == 400
    assert escape.json()["error"]
    assert (
        httpx.get(server.url + "/get", params={"path": "MEMORY.md", "from": "x"}).status_code == 400
    )


@pytest.mark.parametrize(
    ("body", "status", "message"),
    [
        (b"{not json", 400, "bad JSON"),
        (b"\xff\xfe{}", 400, "bad JSON"),
        (b"[1, 2]", 400, "JSON object"),
        (b'{"maxResults": 3}', 400, "query is required"),
        (b'{"query": "x", "top_k": 3}', 400, "unknown field 'top_k'"),
        (b'{"query": "x", "maxResults": "many"}', 400, "maxResults must be a whole number"),
        (b'{"query": "' + b"x" * 5000 + b'"}', 413, "over 4096 bytes"),
    ],
)
def test_bad_requests_get_a_status_and_a_message(
    server: Server, body: bytes, status: int, message: str
) -> None:
    response = httpx.post(
        server.url + "/search", content=body, headers={"content-type": "application/json"}
    )
    assert response.status_code == status
    assert message in response.json()["error"]


def test_unknown_routes_and_wrong_methods_answer_json_errors(server: Server) -> None:
    missing = httpx.get(server.url + "/nope", timeout=30)
    assert missing.status_code == 404
    assert missing.headers["content-type"] == "application/json"
    assert missing.json()["error"] == "no route GET /nope"
    assert "POST /search" in missing.json()["hint"]
    wrong = httpx.get(server.url + "/search", timeout=30)
    assert wrong.status_code == 405
    assert wrong.headers["allow"] == "POST"
    assert wrong.json() == {"error": "GET /search is not allowed", "hint": "use POST"}
    head = httpx.head(server.url + "/health", timeout=30)  # the app's HEAD, beside the Guard's GET
    assert head.status_code == 200
    assert head.content == b""


def test_hostile_query_gives_valid_utf8_json(server: Server) -> None:
    raw = b'{"query": "tea \\ud800 \\udfff \\u0000 MATCH \\"(*"}'
    response = httpx.post(
        server.url + "/search", content=raw, headers={"content-type": "application/json"}
    )
    assert response.status_code == 200
    text = response.content.decode("utf-8")  # strict: raises on anything invalid
    assert json.loads(text)["query"].startswith("tea ? ?")


def test_host_and_origin_are_validated(server: Server) -> None:
    bad_host = httpx.get(server.url + "/status", headers={"Host": "evil.example"})
    assert bad_host.status_code == 421
    bad_origin = httpx.get(server.url + "/status", headers={"Origin": "http://evil.example"})
    assert bad_origin.status_code == 403
    port = server.url.rsplit(":", 1)[1]
    local = httpx.get(server.url + "/status", headers={"Origin": f"http://localhost:{port}"})
    assert local.status_code == 200
    assert local.json()["chain"] == ["sqlite"]


def test_health_and_metrics(server: Server) -> None:
    health = httpx.get(server.url + "/health")
    assert health.status_code == 200
    assert health.json()["backends"]["sqlite"]["ready"] is True
    post(server, "/search", {"query": "green tea"})
    metrics = httpx.get(server.url + "/metrics")
    assert metrics.headers["content-type"].startswith("text/plain")
    text = metrics.text
    count = re.search(
        r'^memory_router_queries_total\{backend="sqlite",outcome="ok"\} (\d+)$', text, re.M
    )
    assert count
    assert int(count[1]) >= 1
    assert re.search(r'^memory_router_query_seconds_bucket\{le="\+Inf"\} \d+$', text, re.M)
    assert 'memory_router_breaker_state{backend="sqlite"} 0' in text
    assert re.search(
        r'^memory_router_sync_seconds_count\{backend="sqlite",outcome="ok"\} 1$', text, re.M
    )


@pytest.mark.slow
def test_cli_search_uses_the_running_server(server: Server) -> None:
    def metric() -> int:
        text = httpx.get(server.url + "/metrics").text
        found = re.search(r'queries_total\{backend="sqlite",outcome="ok"\} (\d+)', text)
        return int(found[1]) if found else 0

    before = metric()
    command = [sys.executable, "-m", "memory_router", "--config", str(server.config), "search"]
    result = subprocess.run(
        [*command, "green tea", "--json"],
        capture_output=True,
        text=True,
        env=child_env(),
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["results"][0]["path"] == "MEMORY.md"
    assert metric() == before + 1  # answered by the server
    local = subprocess.run(
        [*command, "green tea", "--local"],
        capture_output=True,
        text=True,
        env=child_env(),
        timeout=120,
    )
    assert local.returncode == 0
    assert "MEMORY.md:3-3" in local.stdout  # the bullet, cited by its own line
    assert metric() == before + 1  # --local did not ask it


# Runs the CLI, then says whether the process loaded lancedb or pylance.
IMPORTS = (
    "import atexit, runpy, sys\n"
    "atexit.register(lambda: print('IMPORTED', 'lancedb' in sys.modules, 'lance' in sys.modules,"
    " file=sys.stderr))\n"
    "sys.argv = ['memory-router', *sys.argv[1:]]\n"
    "runpy.run_module('memory_router', run_name='__main__')\n"
)


@pytest.mark.slow
def test_cli_search_on_a_lancedb_chain_uses_the_running_server(tmp_path: Path) -> None:
    pytest.importorskip("lancedb", reason="the lancedb extra is not installed")
    config = make_config(tmp_path, {"router": {"chain": ["lancedb"]}})
    with running_server(config) as server:

        def metric() -> int:
            text = httpx.get(server.url + "/metrics").text
            found = re.search(r'queries_total\{backend="lancedb",outcome="ok"\} (\d+)', text)
            return int(found[1]) if found else 0

        before = metric()
        result = subprocess.run(
            [
                sys.executable,
                "-c",
                IMPORTS,
                "--config",
                str(config),
                "search",
                "green tea",
                "--json",
            ],
            capture_output=True,
            text=True,
            env=child_env(),
            timeout=120,
        )
        assert result.returncode == 0, result.stderr
        assert json.loads(result.stdout)["results"][0]["path"] == "MEMORY.md"
        assert json.loads(result.stdout)["backend"] == "lancedb"
        assert metric() == before + 1  # answered by the server
        assert "IMPORTED False False" in result.stderr  # this process opened no table


@pytest.mark.slow
def test_token_required_off_loopback(tmp_path: Path) -> None:
    config = make_config(tmp_path, {"serve": {"token": {"env": "MR_TEST_TOKEN"}}})
    refused = subprocess.run(
        [
            sys.executable,
            "-m",
            "memory_router",
            "--config",
            str(config),
            "serve",
            "--host",
            "0.0.0.0",
        ],
        capture_output=True,
        text=True,
        env=child_env(),
        timeout=120,
    )
    assert refused.returncode == 1
    assert "token" in refused.stderr
    assert "Traceback" not in refused.stderr
    with running_server(config, "--host", "0.0.0.0", env={"MR_TEST_TOKEN": "s3cret"}) as server:
        assert httpx.get(server.url + "/health").status_code == 200  # health needs no token
        missing = httpx.get(server.url + "/status")
        assert missing.status_code == 401
        assert missing.headers["www-authenticate"] == "Bearer"
        wrong = httpx.get(server.url + "/status", headers={"Authorization": "Bearer nope"})
        assert wrong.status_code == 401
        mcp = httpx.post(server.url + "/mcp", json={}, headers={"Authorization": "Bearer nope"})
        assert mcp.status_code == 401
        good = httpx.get(server.url + "/status", headers={"Authorization": "Bearer s3cret"})
        assert good.status_code == 200
        # The CLI reads the same token from the config and answers through the server.
        result = subprocess.run(
            [
                sys.executable,
                "-m",
                "memory_router",
                "--config",
                str(config),
                "search",
                "tea",
                "--json",
            ],
            capture_output=True,
            text=True,
            env=child_env({"MR_TEST_TOKEN": "s3cret"}),
            timeout=120,
        )
        assert result.returncode == 0, result.stderr
        assert "Note:" not in result.stderr


def health_command(config: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """``memory-router health``, the compose health check."""
    return subprocess.run(
        [sys.executable, "-m", "memory_router", "--config", str(config), "health"],
        capture_output=True,
        text=True,
        env=child_env(env),
        timeout=120,
    )


@pytest.mark.slow
def test_health_reports_a_backend_that_is_down(tmp_path: Path) -> None:
    (tmp_path / "plugins").mkdir()
    (tmp_path / "plugins" / "down_backend.py").write_text(DOWN_PLUGIN, encoding="utf-8")
    env = {"PYTHONPATH": str(tmp_path / "plugins"), "MEMORY_ROUTER_PLUGIN_MODULES": "down_backend"}
    degraded = make_config(tmp_path / "a", {"router": {"chain": ["down", "sqlite"]}})
    with running_server(degraded, env=env) as server:
        health = httpx.get(server.url + "/health")
        assert health.status_code == 200
        assert health.json()["status"] == "degraded"
        assert health.json()["backends"]["down"] == {
            "ready": False,
            "breaker": "closed",
            "error": "sidecar crashed",
        }
        assert health_command(degraded, env).returncode == 0
        answer = post(server, "/search", {"query": "green tea"}).json()
        assert answer["backend"] == "sqlite"
        assert answer["fallback"]["from"] == "down"
        assert "answered by sqlite because down (" in answer["degraded"]["reason"]
        assert "sidecar crashed" in answer["degraded"]["reason"]
        assert "memory_status" in answer["degraded"]["action"]
        assert 'memory_router_fallbacks_total{backend="down",reason="unavailable"} 1' in (
            httpx.get(server.url + "/metrics").text
        )
        for _ in range(3):  # the circuit is open now: skipped, and logged only once
            assert post(server, "/search", {"query": "green tea"}).json()["backend"] == "sqlite"
        warnings = [line for line in server.stderr().splitlines() if " WARNING " in line]
        opened = [line for line in warnings if "backend down: circuit opened" in line]
        assert len(opened) == 1, warnings
        assert "sidecar crashed" in opened[0]
        fell = [line for line in warnings if "search fell back from backend down" in line]
        assert len(fell) == 2, warnings  # the crash, then the first skip by the open circuit
        assert "sidecar crashed" in fell[0]
        assert "circuit open" in fell[1]
    down = make_config(tmp_path / "b", {"router": {"chain": ["down"]}})
    with running_server(down, env=env) as server:
        health = httpx.get(server.url + "/health")
        assert health.status_code == 503
        assert health.json()["status"] == "unavailable"
        checked = health_command(down, env)
        assert checked.returncode == 1
        assert checked.stdout.startswith("unavailable: down down")
        failed = post(server, "/search", {"query": "green tea"})
        assert failed.status_code == 503
        assert "no backend could answer" in failed.json()["error"]


@pytest.mark.slow
def test_context_and_capture_routes(server: Server) -> None:
    block = post(server, "/context", {"prompt": "green tea in the morning"}).json()
    assert block["count"] >= 1
    assert block["block"].startswith("<relevant-memories>\n")
    assert post(server, "/context", {"prompt": 42}).status_code == 400
    captured = post(
        server,
        "/capture",
        {"messages": ["I prefer the aisle seat on trains", "ok"], "conversationId": "http-1"},
    ).json()
    assert [e["text"] for e in captured["stored"]] == ["I prefer the aisle seat on trains"]
    assert captured["stored"][0]["category"] == "preference"
    assert len(captured["skipped"]) == 1
    missing = post(server, "/capture", {"messages": ["I prefer tea"], "conversationId": ""})
    assert missing.status_code == 400
    assert "conversation_id" in missing.json()["error"]


def test_http_searches_queue_for_a_search_thread_within_the_timeout(tmp_path: Path) -> None:
    """``search_async`` runs on the service's search threads; a search that waited for one
    longer than ``router.timeout_s`` is refused as busy (a 503), never run late."""
    from memory_router import BackendTimeout, Router
    from memory_router_serve._service import Service

    config = make_config(tmp_path, {"router": {"timeout_s": 5}})
    with Router.from_config(config) as router:
        router.sync()
        service = Service(router, watch=False)
        try:
            answer = asyncio.run(service.search_async("green tea", max_results=2))
            assert answer.results
            assert answer.backend == "sqlite"
            waited = time.perf_counter() - 6  # queued 6 s ago, past the 5 s timeout
            with pytest.raises(BackendTimeout, match="the server is busy"):
                service._search("green tea", waited, {})
            counted = service.metrics.render({})
            assert 'memory_router_queries_total{backend="none",outcome="error"} 1' in counted
            assert 'memory_router_queries_total{backend="sqlite",outcome="ok"} 1' in counted
        finally:
            service.close()


def test_the_guard_answers_the_fixed_json_routes_itself(tmp_path: Path) -> None:
    """The Guard's table of fixed routes is read from the app's own routes: the same
    handlers, every JSON route without a path parameter; ``/mcp``, ``/entries/{id}``,
    HEAD, 404 and 405 stay with the app (the test above checks those answers)."""
    from memory_router import Router
    from memory_router_serve._server import build_app
    from memory_router_serve._service import Service

    with Router.from_config(make_config(tmp_path)) as router:
        guard = build_app(Service(router, watch=False), "127.0.0.1", None)
    assert set(guard.fixed) == {
        ("POST", "/search"),
        ("GET", "/get"),
        ("POST", "/store"),
        ("POST", "/recall"),
        ("POST", "/forget"),
        ("GET", "/entries"),
        ("POST", "/context"),
        ("POST", "/capture"),
        ("GET", "/status"),
        ("GET", "/health"),
        ("GET", "/metrics"),
    }
    endpoints = {route.path: route.endpoint for route in guard.app.routes}
    assert all(handler is endpoints[path] for (_, path), handler in guard.fixed.items())


def test_the_writes_of_one_loop_turn_leave_as_one() -> None:
    """uvicorn writes an answer's headers, then its body: :class:`JoinedWrites` sends them
    in one write at the end of the loop turn; ``close`` sends what is held first."""
    from memory_router_serve._writes import JoinedWrites

    class Transport:  # the surface of an asyncio transport that uvicorn uses
        def __init__(self) -> None:
            self.writes: list[bytes] = []
            self.closed = False

        def write(self, data: bytes) -> None:
            self.writes.append(data)

        def is_closing(self) -> bool:
            return self.closed

        def close(self) -> None:
            self.closed = True

        def get_extra_info(self, name: str) -> str:
            return f"info {name}"

    async def turns() -> None:
        transport = Transport()
        joined = JoinedWrites(transport, asyncio.get_running_loop())
        joined.write(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n")
        joined.write(b"{}")
        assert transport.writes == []
        await asyncio.sleep(0)
        assert transport.writes == [b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}"]
        joined.write(b"bye")
        joined.close()
        assert transport.writes[-1] == b"bye"
        assert transport.closed
        await asyncio.sleep(0)
        assert len(transport.writes) == 2  # nothing written twice after the close
        assert joined.get_extra_info("peername") == "info peername"

    asyncio.run(turns())
