"""Children under a guardian: exit codes and signals come through; the group dies together."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

from memory_router import signal_child, spawn_child


def test_exit_code_output_and_missing_command() -> None:
    done = spawn_child([sys.executable, "-c", "print('hi'); raise SystemExit(3)"], stdout=-1)
    out, _ = done.communicate(timeout=30)
    assert (done.returncode, out) == (3, b"hi\n")
    missing = spawn_child(["/nowhere/qmd"], stderr=subprocess.PIPE)
    _, err = missing.communicate(timeout=30)
    assert missing.returncode == 127
    assert b"cannot start /nowhere/qmd" in err


def test_sigkill_takes_the_grandchildren_and_leaves_no_zombie(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    script = f"sleep 600 & echo $! > {pids}; trap '' TERM; wait"
    child = spawn_child(["/bin/sh", "-c", script])
    deadline = time.monotonic() + 20
    while not (pids.is_file() and pids.read_text().strip()) and time.monotonic() < deadline:
        time.sleep(0.05)
    grandchild = int(pids.read_text())
    signal_child(child, signal.SIGKILL)
    assert child.wait(timeout=10) == -signal.SIGKILL
    deadline = time.monotonic() + 5
    while Path(f"/proc/{grandchild}").exists() and time.monotonic() < deadline:
        state = Path(f"/proc/{grandchild}/stat").read_text().rsplit(")", 1)[1].split()[0]
        if state == "Z":
            break
        time.sleep(0.05)
    assert (
        not Path(f"/proc/{grandchild}").exists()
        or "Z" in Path(f"/proc/{grandchild}/stat").read_text().rsplit(")", 1)[1].split()[0]
    )
