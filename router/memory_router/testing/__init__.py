"""Test helpers that ship with memory-router, for its own tests and for plugin authors.

* :class:`HashingEmbedder` — a deterministic 384-d embedding provider (feature hashing of
  lower-cased word tokens), identical across processes and machines. This module is a
  plugin that registers it as provider ``hash`` (never chosen by ``auto``): load it with
  ``MEMORY_ROUTER_PLUGIN_MODULES=memory_router.testing`` or
  ``Router.from_config(..., plugins=[memory_router.testing])``.
* :func:`write_workspace` and :func:`write_config` — build a workspace and a config file.
* :func:`publish_chunks` — make given chunks a backend's index, the way ``migrate`` does.
* :class:`BackendContract` — the backend contract suite (needs pytest); subclass it in a
  backend's test module, see :mod:`memory_router.testing._contract`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._helpers import (
    HashingEmbedder,
    publish_chunks,
    register_embedding_providers,
    router_config,
    write_config,
    write_workspace,
)

if TYPE_CHECKING:
    from ._contract import BackendContract

__all__ = [
    "BackendContract",
    "HashingEmbedder",
    "publish_chunks",
    "register_embedding_providers",
    "router_config",
    "write_config",
    "write_workspace",
]


def __getattr__(name: str) -> Any:
    # The contract suite imports pytest; load it only when asked for.
    if name == "BackendContract":
        from ._contract import BackendContract

        return BackendContract
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
