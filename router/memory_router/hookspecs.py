"""The plugin contract of memory-router. Each docstring is the specification of its hook.

Plugins implement hooks with :data:`memory_router.hookimpl` and are found through the
entry-point group ``memory_router`` (the built-in backends and providers arrive the same
way). Registration hooks receive a ``register`` callable; the core validates names and
refuses duplicates.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import pluggy

if TYPE_CHECKING:
    import click

    from ._backend import BackendSpec
    from ._embedding.providers import ProviderSpec

hookspec = pluggy.HookspecMarker("memory_router")
hookimpl = pluggy.HookimplMarker("memory_router")


@hookspec
def register_backends(register: Callable[[BackendSpec], None]) -> None:
    """Register search backends.

    Called once per plugin manager, when a :class:`Router` is built or the CLI lists
    plugins. Call ``register(BackendSpec(name=..., factory=..., settings=...))`` once per
    backend. Names are lower-case ``[a-z0-9_-]+`` and unique across plugins; a duplicate
    is a :class:`PluginError`. Return value is ignored.
    """


@hookspec
def register_embedding_providers(register: Callable[[ProviderSpec], None]) -> None:
    """Register embedding providers.

    Called once per plugin manager, when the router resolves ``[embedding]``. Call
    ``register(ProviderSpec(name=..., factory=..., auto_priority=...))`` once per
    provider; ``auto_priority`` (lower first) makes it a candidate for
    ``provider = "auto"``, ``None`` keeps it explicit-only. Names are unique across
    plugins; a duplicate is a :class:`PluginError`. Return value is ignored.
    """


@hookspec
def register_commands(cli: click.Group) -> None:
    """Add commands to the ``memory-router`` command line.

    Called once when the CLI starts, with the root :class:`click.Group`; add commands
    with ``@cli.command()``. Commands should print one-line errors by raising
    :class:`MemoryRouterError`. Return value is ignored.
    """
