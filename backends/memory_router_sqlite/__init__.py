"""memory-router's built-in SQLite backend: FTS5 BM25 + sqlite-vec vectors, hybrid merge.

One SQLite file per agent with OpenClaw's schema (``meta``, ``files``, ``chunks``,
``embedding_cache``, ``chunks_fts``, ``chunks_vec``) plus an ``entries`` table for
journal entry metadata. Registered through the ``memory_router`` entry point as
``sqlite``; configured by ``[backends.sqlite]`` (:class:`SqliteSettings`). The backend's
modules load when it is first built, not when the plugin is discovered.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from memory_router import hookimpl
from memory_router.kit import Backend, BackendContext, BackendSpec, lazy_exports

from ._settings import SqliteSettings

if TYPE_CHECKING:
    from ._backend import SqliteBackend
    from ._db import Driver, choose_driver, connect

__all__ = [
    "Driver",
    "SqliteBackend",
    "SqliteSettings",
    "choose_driver",
    "connect",
    "register_backends",
]
__getattr__ = lazy_exports(
    __name__,
    {"SqliteBackend": "._backend", "Driver": "._db", "choose_driver": "._db", "connect": "._db"},
)


def create(context: BackendContext) -> Backend:
    """The backend factory: imports the backend (and numpy) on first use."""
    from ._backend import SqliteBackend

    return SqliteBackend(context)


@hookimpl
def register_backends(register: Callable[[BackendSpec], None]) -> None:
    """Register the ``sqlite`` backend."""
    register(
        BackendSpec(
            name="sqlite",
            factory=create,
            settings=SqliteSettings,
            description="SQLite: FTS5 BM25 + sqlite-vec vectors, weighted hybrid merge",
            modes=("hybrid", "keyword", "vector"),
        )
    )
