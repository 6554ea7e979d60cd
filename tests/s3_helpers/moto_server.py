"""A real S3-compatible server on loopback for the LanceDB tests: moto's, with IAM auth on.

:func:`start_moto` runs ``python -m moto.server`` on a free port, creates an IAM user with
an access key allowed everything and a bucket, checks that the server enforces
conditional PUTs (Lance needs ``If-None-Match`` for safe concurrent commits), and returns
the endpoint and keys. Requests signed with other keys are refused (wrong credentials).
The server dies with the process that started it (Linux parent-death signal).
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

BUCKET = "memory"


@dataclass(frozen=True, slots=True)
class S3Server:
    endpoint: str
    access_key_id: str
    secret_access_key: str
    process: subprocess.Popen[bytes]
    name: str = "moto"
    workdir: str | None = None  # removed on stop (SeaweedFS keeps its data there)

    def options(self, **changes: str) -> dict[str, str]:
        """``storage_options`` for this server (``changes`` override single keys)."""
        return {
            "endpoint": self.endpoint,
            "region": "us-east-1",
            "allow_http": "true",
            "access_key_id": self.access_key_id,
            "secret_access_key": self.secret_access_key,
            **changes,
        }

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)
        if self.workdir is not None:
            shutil.rmtree(self.workdir, ignore_errors=True)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextlib.contextmanager
def fork_to_exec() -> Iterator[None]:
    """Around a ``Popen`` with ``preexec_fn``, a fork that only execs: pylance warns at every
    fork of a process that imported it ("lance is not fork-safe"), meant for forks that go
    on running Python; with ``filterwarnings = error`` it would fail the test."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="lance is not fork-safe", category=UserWarning)
        yield


def die_with_parent() -> None:  # runs in the child between fork and exec
    """Linux parent-death signal: the server ends with the test process that started it,
    even when that one is killed (no fixture teardown runs then)."""
    ctypes.CDLL(None).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def _wait_for(port: int, process: subprocess.Popen[bytes], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"moto server exited with {process.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError("moto server did not start within 60 s")


def _client(service: str, endpoint: str, key: str, secret: str) -> Any:
    import boto3

    return boto3.client(
        service,
        endpoint_url=endpoint,
        aws_access_key_id=key,
        aws_secret_access_key=secret,
        region_name="us-east-1",
    )


def start_moto() -> S3Server:
    port = free_port()
    # The first four calls (user, key, policy, bucket) are unauthenticated; later ones
    # must be signed with the user's key.
    env = {**os.environ, "INITIAL_NO_AUTH_ACTION_COUNT": "4"}
    with fork_to_exec():
        process = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=env,
            preexec_fn=die_with_parent if sys.platform == "linux" else None,
        )
    endpoint = f"http://127.0.0.1:{port}"
    try:
        _wait_for(port, process)
        iam = _client("iam", endpoint, "bootstrap", "bootstrap")
        iam.create_user(UserName="memory-router")
        key = iam.create_access_key(UserName="memory-router")["AccessKey"]
        policy = {
            "Version": "2012-10-17",
            "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}],
        }
        iam.put_user_policy(
            UserName="memory-router", PolicyName="all", PolicyDocument=json.dumps(policy)
        )
        s3 = _client("s3", endpoint, key["AccessKeyId"], key["SecretAccessKey"])
        s3.create_bucket(Bucket=BUCKET)
        _check_conditional_put(s3)
    except BaseException:
        process.kill()
        process.wait(timeout=10)
        raise
    return S3Server(endpoint, key["AccessKeyId"], key["SecretAccessKey"], process)


def _check_conditional_put(s3: Any) -> None:
    from botocore.exceptions import ClientError

    s3.put_object(Bucket=BUCKET, Key="probe", Body=b"1", IfNoneMatch="*")
    status = 200
    try:
        s3.put_object(Bucket=BUCKET, Key="probe", Body=b"2", IfNoneMatch="*")
    except ClientError as error:
        status = error.response["ResponseMetadata"]["HTTPStatusCode"]
    if status != 412:  # a server that ignores it would silently lose Lance commits
        raise RuntimeError(f"the S3 server answered {status} to If-None-Match on an existing key")
    s3.delete_object(Bucket=BUCKET, Key="probe")
