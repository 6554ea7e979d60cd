"""memory-router's LanceDB backend: chunks and entries on a folder or S3-compatible storage.

Tables ``chunks``, ``entries`` and ``files`` (one set per index generation) plus ``meta``,
with explicit Arrow schemas and primary keys; native FTS (BM25) and cosine vector search
merged like the built-in backend; several processes may share one store. Registered
through the ``memory_router`` entry point as ``lancedb``; configured by
``[backends.lancedb]`` (:class:`LanceSettings`); needs the ``lancedb`` extra. The
backend's modules (lancedb, pyarrow, numpy) load when it is first built, not when the
plugin is discovered.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from memory_router import hookimpl
from memory_router.kit import Backend, BackendContext, BackendSpec, lazy_exports

from ._settings import LanceSettings

if TYPE_CHECKING:
    from ._backend import LanceBackend

__all__ = ["LanceBackend", "LanceSettings", "register_backends"]
__getattr__ = lazy_exports(__name__, {"LanceBackend": "._backend"})


def create(context: BackendContext) -> Backend:
    """The backend factory: imports lancedb on first use."""
    from ._backend import LanceBackend

    return LanceBackend(context)


@hookimpl
def register_backends(register: Callable[[BackendSpec], None]) -> None:
    """Register the ``lancedb`` backend."""
    register(
        BackendSpec(
            name="lancedb",
            factory=create,
            settings=LanceSettings,
            description="LanceDB: native FTS + vectors, local folder or S3-compatible storage",
        )
    )
