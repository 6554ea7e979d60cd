"""The tests' own S3 server never outlives the test process: a killed pytest (no fixture
teardown) must not leave a moto server running on a machine others share."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

TESTS = Path(__file__).resolve().parents[1]
STARTER = """
import sys, time
from s3_helpers.moto_server import start_moto
print(start_moto().process.pid, flush=True)
time.sleep(120)
"""


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, IndexError):
        return False
    return state != "Z"


@pytest.mark.skipif(sys.platform != "linux", reason="parent-death signal is Linux's")
def test_moto_server_dies_with_the_process_that_started_it() -> None:
    pytest.importorskip("moto", reason="the dev extra (moto[server]) is not installed")
    env = {**os.environ, "PYTHONPATH": str(TESTS)}
    command = [sys.executable, "-c", STARTER]
    with subprocess.Popen(command, stdout=subprocess.PIPE, env=env, text=True) as starter:
        try:
            assert starter.stdout is not None
            server = int(starter.stdout.readline())
            assert alive(server)
        finally:
            starter.kill()  # SIGKILL: no teardown of any kind runs
            starter.wait(timeout=10)
    deadline = time.monotonic() + 15
    while alive(server) and time.monotonic() < deadline:
        time.sleep(0.1)
    gone = not alive(server)
    if not gone:
        os.kill(server, signal.SIGKILL)
    assert gone
