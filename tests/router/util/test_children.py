"""Children under a guardian: exit codes and signals come through; the group dies together."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

from memory_router.kit import signal_child, spawn_child


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


def test_only_the_guardians_main_thread_can_take_the_signals_it_forwards(
    tmp_path: Path,
) -> None:
    # The guardian's main thread waits for the command in waitpid, and Python runs the
    # forwarding handler there only. Linux gives a signal sent to the process to another
    # thread when the main one already has one pending: a SIGUSR1 ("kill the group") that
    # landed on the pipe-watching thread left the command alive and our terminate()
    # waiting for it forever. That thread now blocks every signal the guardian forwards.
    from qmd_fakes.processes import wait_until

    ready = tmp_path / "ready"
    child = spawn_child(["/bin/sh", "-c", f"echo $$ > {ready}; exec sleep 60"])
    try:
        assert wait_until(lambda: ready.is_file() and ready.read_text().strip(), 20)
        tasks = Path(f"/proc/{child.pid}/task")
        others = [t for t in tasks.iterdir() if int(t.name) != child.pid]
        assert len(others) == 1  # the watch thread

        def blocked(task: Path) -> set[int]:
            line = next(
                x for x in (task / "status").read_text().splitlines() if x.startswith("SigBlk:")
            )
            mask = int(line.split()[1], 16)
            return {n for n in range(1, 65) if mask & (1 << (n - 1))}

        forwarded = {signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGUSR1}
        assert forwarded <= blocked(others[0])
        assert not forwarded & blocked(tasks / str(child.pid))
        signal_child(child, signal.SIGKILL)  # still a group kill, through the main thread
        assert child.wait(timeout=20) == -signal.SIGKILL
    finally:
        child.kill()
        child.wait(10)
