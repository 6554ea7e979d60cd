"""``[backends.lancedb]``: where the store lives and how it is kept."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from memory_router.kit import Secret

if TYPE_CHECKING:
    from memory_router import Config

_SECRET_KEY = re.compile(r"key|secret|token|password|session", re.IGNORECASE)
_URI_USER = re.compile(r"(?<=://)[^/@]*@")


@dataclass(frozen=True, slots=True, kw_only=True)
class LanceSettings:
    """``[backends.lancedb]`` (see docs/configuration.md for every key).

    ``uri`` is a folder (``{stateDir}`` and ``{agentId}`` expanded, relative to the config
    file) or an object-store URI (``s3://bucket/prefix``) with ``storage_options``
    (``endpoint``, ``region``, ``access_key_id``, ``secret_access_key``, ``allow_http``…;
    each a string or a secret indirection such as ``{ env = "AWS_SECRET_ACCESS_KEY" }``).
    """

    uri: str = "{stateDir}/agents/{agentId}/lancedb"
    storage_options: dict[str, Secret] = field(default_factory=dict)
    read_consistency_interval_s: float = 0.0
    connect_timeout_s: float = 3.0
    request_timeout_s: float = 20.0
    max_retries: int = 3
    write_retries: int = 6
    optimize_every_writes: int = 20
    optimize_interval_minutes: float = 60.0
    cleanup_older_than_hours: float = 24.0
    ann_min_rows: int = 100_000
    ann_index: Literal["ivf_pq", "ivf_hnsw_sq", "ivf_flat"] = "ivf_hnsw_sq"
    ann_partition_rows: int = 65_536
    ef_construction: int = 150
    refine_factor: int = 10
    nprobes: int = 20
    ef: int = 600
    vector_search: Literal["auto", "memory", "lance"] = "auto"
    memory_budget_mb: int = 512
    keep_generations: int = 2
    reader: Literal["auto", "lancedb"] = "auto"

    def __post_init__(self) -> None:
        if self.read_consistency_interval_s < 0:
            raise ValueError("read_consistency_interval_s must be 0 or more")
        for name in ("connect_timeout_s", "request_timeout_s"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be more than 0")
        if self.cleanup_older_than_hours <= 0:
            raise ValueError(
                "cleanup_older_than_hours must be more than 0 (readers on old versions need it)"
            )
        if self.max_retries < 0:
            raise ValueError("max_retries must be 0 or more")
        names = ("write_retries", "keep_generations", "ann_min_rows", "ann_partition_rows")
        ann = ("ef_construction", "refine_factor", "nprobes", "ef")
        for name in (*names, *ann, "memory_budget_mb"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1")

    def resolved_uri(self, config: Config) -> str:
        """The URI to connect to: object-store URIs as given, folders expanded."""
        if is_remote(self.uri):
            return self.uri.replace("{agentId}", config.agent_id)
        return str(config.expand(self.uri))

    def options(self) -> dict[str, str]:
        """``storage_options`` with secrets resolved and this backend's timeouts added."""
        resolved = {k: v.resolve() for k, v in self.storage_options.items()}
        options = {k: v for k, v in resolved.items() if v is not None}
        options.setdefault("connect_timeout", f"{self.connect_timeout_s}s")
        options.setdefault("timeout", f"{self.request_timeout_s}s")
        options.setdefault("client_max_retries", str(self.max_retries))
        options.setdefault("client_retry_timeout", str(max(1, round(self.request_timeout_s))))
        return options

    def masked_options(self) -> dict[str, str]:
        """``storage_options`` safe to print: secret-looking keys show only their source."""
        return {
            k: (v.describe() if _SECRET_KEY.search(k) or v.env or v.file else v.value or "")
            for k, v in self.storage_options.items()
        }


def is_remote(uri: str) -> bool:
    return "://" in uri and not uri.startswith("file://")


def mask_uri(uri: str) -> str:
    """``uri`` without credentials written into it (``s3://key:secret@bucket`` → ``s3://***@…``)."""
    return _URI_USER.sub("***@", uri)
