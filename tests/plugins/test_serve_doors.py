"""Every door of the server checks (issue 21): the workspace, redaction, and MCP over stdio.

* ``serve`` refuses to start over a missing workspace; when the workspace goes away while
  it runs, every HTTP route and MCP tool (enumerated from the real app, so a new one must
  be classified here) refuses or answers from the index as it was with a note, ``/health``
  is 503 with the error, and neither the index nor the workspace is touched.
* ``/store``, ``/capture``, ``memory_store`` and ``memory_capture`` × the secrets corpus:
  the answers name what was redacted, and no secret is on disk or found by search.
* MCP over stdio answers a line it cannot read (arguments nested 250 levels, bad JSON)
  with a JSON-RPC error for the request's id, within a timeout.
"""

from __future__ import annotations

import hashlib
import json
import select
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from serving import Server, child_env, make_config, running_server, server_file

from memory_router import ConfigError, Router
from memory_router.testing._secrets import SECRET_CASES, SecretCase

MISSING = "does not exist"
SAMPLES: dict[tuple[str, str], dict[str, Any]] = {
    # (method, route): a valid request's JSON body or query parameters
    ("POST", "/search"): {"query": "green tea"},
    ("GET", "/get"): {"path": "MEMORY.md"},
    ("POST", "/store"): {"text": "I prefer green tea"},
    ("POST", "/recall"): {"query": "tea"},
    ("POST", "/forget"): {"query": "tea"},
    ("GET", "/entries"): {},
    ("DELETE", "/entries/{entry_id}"): {},
    ("POST", "/context"): {"prompt": "what do I drink in the morning"},
    ("POST", "/capture"): {"messages": ["remember: I prefer tea"], "conversationId": "c"},
    ("GET", "/status"): {},
    ("GET", "/health"): {},
    ("GET", "/metrics"): {},
}
ANSWERS_WITH_A_NOTE = {"/search", "/context"}  # the index as it was, and why it is stale
DIAGNOSES = {"/status": 200, "/health": 503, "/metrics": 200}
TOOL_SAMPLES: dict[str, dict[str, Any]] = {
    "memory_search": {"query": "green tea"},
    "memory_get": {"path": "MEMORY.md"},
    "memory_status": {},
    "memory_store": {"text": "I prefer green tea"},
    "memory_recall": {"query": "tea"},
    "memory_forget": {"query": "tea"},
    "memory_context": {"prompt": "what do I drink in the morning"},
    "memory_capture": {"messages": ["remember: I prefer tea"], "conversationId": "c"},
}
TOOLS_WITH_A_NOTE = {"memory_search", "memory_context"}


def index_state(config: Path) -> tuple[str, int]:
    index = config.parent / "state/agents/main/memory.sqlite"
    with sqlite3.connect(index) as db:
        chunks = db.execute("SELECT count(*) FROM chunks").fetchone()[0]
    db.close()
    return hashlib.sha256(index.read_bytes()).hexdigest(), chunks


def app_routes(config: Path) -> set[tuple[str, str]]:
    """Every (method, path) the real app serves, but MCP's ``/mcp`` and HEAD."""
    from memory_router_serve._server import build_app
    from memory_router_serve._service import Service

    with Router.from_config(config) as router:
        app = build_app(Service(router), "127.0.0.1", None)
        routes = app.app.routes
    return {(m, r.path) for r in routes if r.path != "/mcp" for m in r.methods - {"HEAD"}}


def tool_names(config: Path) -> set[str]:
    from memory_router_serve._mcp import build_mcp_server
    from memory_router_serve._service import Service

    with Router.from_config(config) as router:
        tools = anyio.run(build_mcp_server(Service(router)).list_tools)
    return {tool.name for tool in tools}


def request(server: Server, method: str, path: str, sample: dict[str, Any]) -> httpx.Response:
    url = server.url + path.replace("{entry_id}", "e-000000000001")
    if method == "GET":
        return httpx.get(url, params=sample, timeout=30)
    return httpx.request(method, url, json=sample or None, timeout=30)


def test_every_route_and_tool_is_classified(tmp_path: Path) -> None:
    config = make_config(tmp_path)
    assert app_routes(config) == set(SAMPLES), "give a new route a sample request here"
    assert tool_names(config) == set(TOOL_SAMPLES), "give a new tool sample arguments here"


def test_serve_refuses_to_start_over_a_missing_workspace(tmp_path: Path) -> None:
    config = make_config(tmp_path)
    (tmp_path / "workspace").rename(tmp_path / "unmounted")
    result = subprocess.run(
        [sys.executable, "-m", "memory_router", "--config", str(config), "serve", "--port", "0"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
        env=child_env(),
        check=False,
    )
    assert result.returncode == 1
    assert MISSING in result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "workspace").exists()
    assert not server_file(config).exists()


@pytest.fixture
def gone(tmp_path: Path) -> Iterator[Server]:
    """A server whose workspace was indexed, then renamed away while it runs."""
    config = make_config(tmp_path)
    with running_server(config) as server:
        assert httpx.post(server.url + "/search", json={"query": "tea"}).status_code == 200
        (tmp_path / "workspace").rename(tmp_path / "unmounted")
        yield server


def test_every_route_and_tool_checks_the_workspace(gone: Server, tmp_path: Path) -> None:
    before = index_state(gone.config)
    for (method, path), sample in sorted(SAMPLES.items()):
        response = request(gone, method, path, sample)
        where = f"{method} {path}: {response.status_code} {response.text[:300]}"
        body = response.json() if path != "/metrics" else {}
        if path in DIAGNOSES:
            assert response.status_code == DIAGNOSES[path], where
        elif path in ANSWERS_WITH_A_NOTE:
            assert response.status_code == 200, where
            assert any(MISSING in note for note in body["notes"]), where
        else:
            assert response.status_code == 503, where
            assert MISSING in body["error"], where
            assert "create it" in body["hint"], where
    health = httpx.get(gone.url + "/health").json()
    assert health["ok"] is False
    assert MISSING in health["error"]
    assert MISSING in httpx.get(gone.url + "/status").json()["workspace_error"]
    anyio.run(_tools_check_the_workspace, gone.url)
    assert not (tmp_path / "workspace").exists()
    assert index_state(gone.config) == before


async def _tools_check_the_workspace(url: str) -> None:
    async with (
        streamable_http_client(url + "/mcp") as (read, write),
        ClientSession(read, write, read_timeout_seconds=60) as session,
    ):
        await session.initialize()
        for name, arguments in sorted(TOOL_SAMPLES.items()):
            result: Any = await session.call_tool(name, arguments)
            if name == "memory_status":
                assert not result.is_error
            elif name in TOOLS_WITH_A_NOTE:
                assert not result.is_error, name
                assert any(MISSING in n for n in result.structured_content["notes"]), name
            else:
                assert result.is_error, name
                assert MISSING in result.content[0].text, name


def test_the_watcher_never_creates_the_workspace(tmp_path: Path) -> None:
    from memory_router_watch import Watcher

    config = make_config(tmp_path)
    with Router.from_config(config) as router:
        watcher = Watcher(router, poll=True)
        watcher.start()
        watcher.stop()
        before = index_state(config)
        (tmp_path / "workspace").rename(tmp_path / "unmounted")
        watcher.sync_now()  # a change event or the interval after the volume went away
        assert MISSING in str(watcher.stats.last_error)
        with pytest.raises(ConfigError, match=MISSING):
            Watcher(router, poll=True).start()
    assert not (tmp_path / "workspace").exists()
    assert index_state(config) == before


# -- redaction through the server ----------------------------------------------------------


def leaked(text: str, case: SecretCase) -> bool:
    return case.secret in text or case.secret[6:-4] in text


def captured(case: SecretCase) -> list[str]:
    return [f"remember for {case.kind} please: {m}" for m in case.messages]


def http_writes(server: Server) -> None:
    for n, case in enumerate(SECRET_CASES):
        text = "\n".join(case.messages)
        stored = httpx.post(server.url + "/store", json={"text": text, "force": True}).json()
        assert stored["redacted"], stored
        body = {"messages": captured(case), "conversationId": f"h{n}"}
        answer = httpx.post(server.url + "/capture", json=body).json()
        assert len(answer["stored"]) == len(case.messages), answer
        assert answer["redacted"], answer


async def mcp_writes(url: str) -> None:
    async with (
        streamable_http_client(url + "/mcp") as (read, write),
        ClientSession(read, write, read_timeout_seconds=60) as session,
    ):
        await session.initialize()
        for n, case in enumerate(SECRET_CASES):
            text = "\n".join(case.messages)
            stored: Any = await session.call_tool("memory_store", {"text": text, "force": True})
            assert stored.structured_content["redacted"], stored
            answer: Any = await session.call_tool(
                "memory_capture", {"messages": captured(case), "conversationId": f"m{n}"}
            )
            assert answer.structured_content["redacted"], answer
            assert len(answer.structured_content["stored"]) == len(case.messages)


@pytest.mark.slow
@pytest.mark.parametrize("door", ["http", "mcp"])
def test_no_secret_written_through_the_server_is_found(door: str, tmp_path: Path) -> None:
    config = make_config(tmp_path, {"capture": {"max_chars": 10000, "max_per_conversation": 9}})
    with running_server(config) as server:
        if door == "http":
            http_writes(server)
        else:
            anyio.run(mcp_writes, server.url)
        found = {
            case.kind
            for case in SECRET_CASES
            for hit in httpx.post(
                server.url + "/search", json={"query": case.secret, "maxResults": 50}
            ).json()["results"]
            if leaked(hit["snippet"], case)
        }
        stored = httpx.get(server.url + "/entries").json()
    assert len(stored) >= 2 * len(SECRET_CASES)
    assert found == set()
    needles = {c.kind: (c.secret.encode(), c.secret[6:-4].encode()) for c in SECRET_CASES}
    on_disk = {
        kind: [
            str(p)
            for p in tmp_path.rglob("*")
            if p.is_file() and p.suffix != ".log" and any(n in p.read_bytes() for n in pair)
        ]
        for kind, pair in needles.items()
    }
    assert {kind: files for kind, files in on_disk.items() if files} == {}


# -- MCP over stdio always answers ----------------------------------------------------------


class Stdio:
    """A raw JSON-RPC exchange with ``memory-router mcp`` (one JSON message per line)."""

    def __init__(self, config: Path) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "memory_router", "--config", str(config), "mcp", "--no-watch"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=child_env(),
        )

    def send(self, line: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(line.encode() + b"\n")
        self.process.stdin.flush()

    def receive(self, timeout: float = 30.0) -> dict[str, Any]:
        assert self.process.stdout is not None
        ready, _, _ = select.select([self.process.stdout], [], [], timeout)
        assert ready, f"no answer within {timeout} s"
        answer: dict[str, Any] = json.loads(self.process.stdout.readline())
        return answer

    def close(self) -> None:
        assert self.process.stdin is not None
        assert self.process.stdout is not None
        self.process.stdin.close()
        try:
            self.process.wait(30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(10)
        self.process.stdout.close()


def nested_call(request_id: int, depth: int) -> str:
    arguments = '{"a":' * depth + "1" + "}" * depth
    return (
        f'{{"jsonrpc":"2.0","id":{request_id},"method":"tools/call",'
        f'"params":{{"name":"memory_search","arguments":{arguments}}}}}'
    )


def test_mcp_over_stdio_answers_every_line(tmp_path: Path) -> None:
    stdio = Stdio(make_config(tmp_path))
    try:
        hello = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t"}}
        stdio.send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello}))
        assert stdio.receive(120)["id"] == 1
        stdio.send(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        for request_id, line in [
            (7, nested_call(7, 250)),
            (8, nested_call(8, 100_000)),
            (9, '{"jsonrpc":"2.0","id":9,"method":"tools/call","params":' + "[" * 5000),
        ]:
            stdio.send(line)
            answer = stdio.receive()
            assert answer["id"] == request_id
            assert answer["error"]["code"] == -32700
            assert "\n" not in answer["error"]["message"]
        stdio.send("{not json")
        assert stdio.receive()["error"]["code"] == -32700
        stdio.send('{"hello": 1}')
        assert stdio.receive()["error"]["code"] == -32600
        call = {"name": "memory_search", "arguments": {"query": "Lisbon"}}
        stdio.send(json.dumps({"jsonrpc": "2.0", "id": 10, "method": "tools/call", "params": call}))
        answer = stdio.receive()  # the session goes on
        assert answer["id"] == 10
        assert "Lisbon" in json.dumps(answer["result"])
    finally:
        stdio.close()
