"""memory-router's LanceDB backend: chunks and entries on a folder or S3-compatible storage.

Tables ``chunks``, ``entries`` and ``files`` (one set per index generation) plus ``meta``,
with explicit Arrow schemas and primary keys; native FTS (BM25) and cosine vector search
merged like the built-in backend; several processes may share one store. Registered
through the ``memory_router`` entry point as ``lancedb``; configured by
``[backends.lancedb]`` (:class:`LanceSettings`); needs the ``lancedb`` extra.
"""

from __future__ import annotations

from collections.abc import Callable

from memory_router import BackendSpec, hookimpl

from ._backend import LanceBackend
from ._settings import LanceSettings

__all__ = ["LanceBackend", "LanceSettings", "register_backends"]


@hookimpl
def register_backends(register: Callable[[BackendSpec], None]) -> None:
    """Register the ``lancedb`` backend."""
    register(
        BackendSpec(
            name="lancedb",
            factory=LanceBackend,
            settings=LanceSettings,
            description="LanceDB: native FTS + vectors, local folder or S3-compatible storage",
        )
    )
