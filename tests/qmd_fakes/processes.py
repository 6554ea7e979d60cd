"""Helpers for tests that check child processes: a hanging ``qmd`` and liveness checks."""

from __future__ import annotations

import ctypes
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

# A QMD that hangs on every call, as a user would write one: a shell whose ``sleep`` is a
# grandchild of the router (it survives unless the whole group is killed).
HANGING_QMD = """#!/bin/sh
sleep 600 &
echo $! >> "$(dirname "$0")/pids"
echo $$ >> "$(dirname "$0")/pids"
wait
"""


def install_hanging_qmd(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / "qmd"
    target.write_text(HANGING_QMD, encoding="utf-8")
    target.chmod(0o755)
    return target


def started_pids(fake: Path) -> list[int]:
    """Every pid the fake recorded (``pids`` of the hanging shell, ``*.pid`` of fake_qmd)."""
    pids = []
    for file in [fake.parent / "pids", *fake.parent.glob("*.pid")]:
        if file.is_file():
            pids += [int(line) for line in file.read_text().split() if line.strip()]
    return pids


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie waiting for init to reap it counts as ended)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


def running_from(folder: Path) -> list[int]:
    """Pids of live processes whose command line names a file under ``folder``."""
    found = []
    marker = str(folder).encode()
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes()
        except OSError:
            continue
        if marker in cmdline and alive(int(proc.name)):
            found.append(int(proc.name))
    return found


def signal_another_thread(pid: int, sig: signal.Signals) -> int:
    """Send ``sig`` to one of ``pid``'s threads that is not its main thread (``tgkill``):
    what Linux does with a signal sent to the process when the main thread already has
    one pending. Returns the thread's id."""
    threads = sorted(int(t) for t in os.listdir(f"/proc/{pid}/task") if int(t) != pid)
    assert threads, f"process {pid} has no thread but its main one"
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.tgkill(pid, threads[-1], int(sig)) != 0:
        raise OSError(ctypes.get_errno(), f"tgkill({pid}, {threads[-1]}) failed")
    return threads[-1]


def wait_until(predicate, timeout: float, step: float = 0.05) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(step)
    return bool(predicate())


def fast_fail_config(tmp_path: Path, workspace: Path, fake: Path, **qmd: object) -> Path:
    """``chain = ["qmd", "sqlite"]``, keyword-only, every timeout short (seconds)."""
    settings = {
        "command": str(fake),
        "search_timeout_s": 1.0,
        "update_timeout_s": 1.0,
        "embed_timeout_s": 1.0,
        "command_timeout_s": 1.0,
        "kill_grace_s": 0.2,
        **qmd,
    }
    body = (
        f"workspace = {json.dumps(str(workspace))}\n"
        f"state_dir = {json.dumps(str(tmp_path / 'state'))}\n"
        '[router]\nchain = ["qmd", "sqlite"]\ntimeout_s = 2\n'
        '[embedding]\nprovider = "none"\n'
        "[backends.qmd]\n" + "".join(f"{k} = {json.dumps(v)}\n" for k, v in settings.items())
    )
    path = tmp_path / "memory-router.toml"
    path.write_text(body, encoding="utf-8")
    return path


def cli(config: Path, *args: str) -> subprocess.Popen[str]:
    """``python -m memory_router --config CONFIG *args`` as a real process."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORY_ROUTER_")}
    return subprocess.Popen(
        [sys.executable, "-m", "memory_router", "--config", str(config), *args],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
