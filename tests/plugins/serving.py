"""Run ``memory-router serve`` as a real subprocess on a loopback port, for the server tests."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from memory_router.testing import write_config, write_workspace

FILES = {
    "MEMORY.md": "# Memory\n\n- Prefers green tea over coffee in the morning.\n",
    "memory/2026-11-01.md": "# 2026-11-01\n\nBooked flights to Lisbon for the conference.\n",
    "memory/2026-11-02.md": "# 2026-11-02\n\nThe flaky CI job depended on the local timezone.\n",
}
READY_TIMEOUT_S = 120.0


@dataclass
class Server:
    url: str
    process: subprocess.Popen[bytes]
    config: Path
    log: Path

    def stderr(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")


def make_config(root: Path, extra: Mapping[str, object] | None = None) -> Path:
    """A keyword-only SQLite config over a small workspace, all under ``root``."""
    write_workspace(root / "workspace", FILES)
    data: dict[str, object] = {
        "workspace": str(root / "workspace"),
        "state_dir": str(root / "state"),
        "embedding": {"provider": "none"},
        "query": {"min_score": 0.0},
        **(extra or {}),
    }
    return write_config(root / "memory-router.toml", data)


def child_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORY_ROUTER_")}
    env.update({"HF_HUB_OFFLINE": "1", "PYTHONUNBUFFERED": "1", **(extra or {})})
    return env


def server_file(config: Path) -> Path:
    return config.parent / "state" / "agents" / "main" / "serve.json"


@contextmanager
def running_server(
    config: Path, *args: str, env: Mapping[str, str] | None = None
) -> Iterator[Server]:
    """Start ``serve --port 0`` and wait for its server file; SIGTERM it afterwards."""
    log = config.parent / f"serve-{time.monotonic_ns()}.log"
    command = [sys.executable, "-m", "memory_router", "--config", str(config), "serve"]
    with log.open("wb") as err:
        process = subprocess.Popen(
            [*command, "--port", "0", "--no-watch", *args],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=err,
            env=child_env(env),
        )
    try:
        url = _wait_ready(process, server_file(config), log)
        yield Server(url=url, process=process, config=config, log=log)
    finally:
        stop(process)


def _wait_ready(process: subprocess.Popen[bytes], path: Path, log: Path) -> str:
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"serve exited with {process.returncode}:\n{log.read_text()}")
        try:
            info = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            info = None
        if info and info.get("pid") == process.pid:
            return str(info["url"])
        time.sleep(0.1)
    raise AssertionError(f"serve not ready after {READY_TIMEOUT_S} s:\n{log.read_text()}")


def stop(process: subprocess.Popen[bytes], timeout: float = 30.0) -> int:
    """SIGTERM, then wait; SIGKILL only if it does not stop in time."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)
    return process.returncode
