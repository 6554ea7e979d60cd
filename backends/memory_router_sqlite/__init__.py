"""memory-router's built-in SQLite backend: FTS5 BM25 + sqlite-vec vectors, hybrid merge.

One SQLite file per agent with OpenClaw's schema (``meta``, ``files``, ``chunks``,
``embedding_cache``, ``chunks_fts``, ``chunks_vec``) plus an ``entries`` table for
journal entry metadata. Registered through the ``memory_router`` entry point as
``sqlite``; configured by ``[backends.sqlite]`` (:class:`SqliteSettings`).
"""

from __future__ import annotations

from collections.abc import Callable

from memory_router import BackendSpec, hookimpl

from ._backend import SqliteBackend, SqliteSettings
from ._db import Driver, choose_driver, connect

__all__ = [
    "Driver",
    "SqliteBackend",
    "SqliteSettings",
    "choose_driver",
    "connect",
    "register_backends",
]


@hookimpl
def register_backends(register: Callable[[BackendSpec], None]) -> None:
    """Register the ``sqlite`` backend."""
    register(
        BackendSpec(
            name="sqlite",
            factory=SqliteBackend,
            settings=SqliteSettings,
            description="SQLite: FTS5 BM25 + sqlite-vec vectors, weighted hybrid merge",
            modes=("hybrid", "keyword", "vector"),
        )
    )
