"""``serve`` and ``mcp`` as processes: clean shutdown, children included, and readiness.

The QMD backend is the fake ``qmd`` program from ``tests/qmd_fakes`` (a real child process
speaking MCP on stdio), so "children included" is checked on a real child.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from serving import child_env, make_config, running_server, server_file, stop

from qmd_fakes.helpers import install_fake
from qmd_fakes.processes import wait_until

pytestmark = pytest.mark.slow


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_sigterm_stops_serve_and_its_sidecar_children(tmp_path: Path) -> None:
    fake = install_fake(tmp_path / "fake")
    config = make_config(
        tmp_path,
        {
            "router": {"chain": ["qmd", "sqlite"]},
            "backends": {"qmd": {"command": str(fake), "update_on_boot": False}},
        },
    )
    with running_server(config) as server:
        assert "memory-router: ready http://127.0.0.1:" in server.stderr()
        answer = httpx.post(server.url + "/search", json={"query": "green tea"}, timeout=60)
        assert answer.json()["backend"] == "qmd"
        child = int((fake.parent / "calls").read_text().split()[0])
        assert child != server.process.pid
        assert alive(child)
        assert stop(server.process) == 0
        assert "stopped" in server.stderr()
    deadline = time.monotonic() + 10
    while alive(child) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not alive(child)
    assert not server_file(config).exists()


def test_serve_listens_while_a_hung_sidecar_runs_its_first_sync(tmp_path: Path) -> None:
    # The start-up sync ran `qmd update` (here allowed 300 s) before the server listened:
    # an operator's `serve` with a hung QMD was unreachable, /health included, for 121 s.
    fake = install_fake(tmp_path / "fake", behaviour="update=hang")
    config = make_config(
        tmp_path,
        {
            "router": {"chain": ["qmd", "sqlite"]},
            "backends": {
                "qmd": {
                    "command": str(fake),
                    "update_on_boot": False,
                    "update_timeout_s": 300.0,
                    "kill_grace_s": 0.2,
                }
            },
        },
    )
    started = time.monotonic()
    with running_server(config) as server:
        assert time.monotonic() - started < 100.0  # not the 300 s update budget
        health = httpx.get(server.url + "/health", timeout=30).json()
        assert health["status"] == "degraded"
        assert health["backends"]["qmd"]["ready"] is False
        assert "first sync" in health["backends"]["qmd"]["error"]
        assert health["backends"]["sqlite"]["ready"] is True
        pid_file = fake.parent / "update.pid"
        assert wait_until(pid_file.exists, 60.0)  # the sync did start, in the background
        hung = int(pid_file.read_text())
        assert alive(hung)
        assert stop(server.process) == 0
    deadline = time.monotonic() + 10
    while alive(hung) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not alive(hung)


def test_health_reports_a_sidecar_whose_first_sync_failed(tmp_path: Path) -> None:
    # /health said QMD was ready once its first sync had ended, failed or not, until a
    # search tripped its breaker: a container orchestrator saw a healthy server.
    fake = install_fake(tmp_path / "fake", behaviour="update=crash")
    config = make_config(
        tmp_path,
        {
            "router": {"chain": ["qmd", "sqlite"]},
            "backends": {"qmd": {"command": str(fake), "update_on_boot": False}},
        },
    )
    with running_server(config) as server:
        assert wait_until(lambda: "first sync finished" in server.stderr(), 60.0)
        health = httpx.get(server.url + "/health", timeout=30).json()
    assert health["status"] == "degraded"
    assert health["ok"] is True
    assert health["backends"]["qmd"]["ready"] is False
    assert health["backends"]["qmd"]["breaker"] == "closed"  # no search has failed yet
    assert health["backends"]["qmd"]["error"].startswith("qmd update failed: qmd update crashed")
    assert health["backends"]["sqlite"]["ready"] is True


def test_stale_server_file_is_ignored(tmp_path: Path) -> None:
    config = make_config(tmp_path)
    with running_server(config) as server:
        url, pid = server.url, server.process.pid
    # The pid is gone now; a file left behind (a crash) must not send the CLI there.
    info = {"url": url, "pid": pid, "agent_id": "main", "started_at": "x"}
    info["workspace"] = str(tmp_path / "workspace")
    server_file(config).write_text(json.dumps(info), encoding="utf-8")
    result = subprocess.run(
        [sys.executable, "-m", "memory_router", "--config", str(config), "search", "tea"],
        capture_output=True,
        text=True,
        env=child_env(),
        timeout=120,
    )
    assert result.returncode == 0
    assert "MEMORY.md" in result.stdout
    assert "Note:" not in result.stderr


def test_mcp_stdio_stops_on_sigterm(tmp_path: Path) -> None:
    config = make_config(tmp_path)
    hello = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "test", "version": "0"},
        },
    }
    with subprocess.Popen(
        [sys.executable, "-m", "memory_router", "--config", str(config), "mcp", "--no-watch"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=child_env(),
    ) as process:
        try:
            assert process.stdin is not None
            assert process.stdout is not None
            process.stdin.write((json.dumps(hello) + "\n").encode())
            process.stdin.flush()
            reply = json.loads(process.stdout.readline())  # waits until the server is up
            process.send_signal(signal.SIGTERM)
            _, err = process.communicate(timeout=30)
        except BaseException:
            process.kill()
            raise
    assert reply["result"]["serverInfo"]["name"] == "memory-router"
    assert process.returncode == 0
    assert "Traceback" not in err.decode()


def test_port_in_use_is_a_one_line_error(tmp_path: Path) -> None:
    config = make_config(tmp_path)
    with running_server(config) as server:
        busy = server.url.rsplit(":", 1)[1]
        other = make_config(tmp_path / "other")
        command = [sys.executable, "-m", "memory_router", "--config", str(other), "serve"]
        result = subprocess.run(
            [*command, "--port", busy, "--no-watch"],
            capture_output=True,
            text=True,
            env=child_env(),
            timeout=120,
        )
    assert result.returncode == 1
    assert result.stderr.startswith(f"Error: cannot listen on 127.0.0.1:{busy}")
    assert "Hint:" in result.stderr
