"""Fixtures for backend tests: the loopback S3 server (started once per session)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from s3_helpers.moto_server import S3Server, start_moto


@pytest.fixture(scope="session")
def s3_server() -> Iterator[S3Server]:
    pytest.importorskip("moto", reason="the dev extra (moto[server]) is not installed")
    server = start_moto()
    yield server
    server.stop()
