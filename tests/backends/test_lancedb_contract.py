"""The backend contract suite on LanceDB: a local folder, keyword-only and hybrid."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest

from memory_router.testing import BackendContract
from s3_helpers.moto_server import BUCKET, S3Server


class TestLanceLocalKeywordOnly(BackendContract):
    backend = "lancedb"
    embedding = "none"

    def backend_settings(self, tmp_path: Path) -> dict[str, Any]:
        return {"uri": str(tmp_path / "state" / "lance")}


class TestLanceLocalHybrid(BackendContract):
    backend = "lancedb"
    embedding = "hash"


@pytest.mark.slow
class TestLanceS3Hybrid(BackendContract):
    """The whole contract against a real S3-compatible server on loopback (moto)."""

    backend = "lancedb"
    embedding = "hash"

    @pytest.fixture(autouse=True)
    def _server(self, s3_server: S3Server) -> None:
        self.server = s3_server

    def backend_settings(self, tmp_path: Path) -> dict[str, Any]:
        return {
            "uri": f"s3://{BUCKET}/contract/{uuid.uuid4().hex}",
            "storage_options": self.server.options(),
        }
