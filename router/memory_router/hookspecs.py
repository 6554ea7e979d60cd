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

    Called each time the core collects the backends: once per :class:`Router` built
    (routers that share a plugin manager, as ``memory-router bench`` does, call it once
    each) and when ``memory-router plugins`` lists them. So register the same specs on
    every call and do nothing else here (no heavy imports, no side effects): factories
    run later, on first use. Call ``register(BackendSpec(name=..., factory=...,
    settings=...))`` once per backend. Names are lower-case ``[a-z0-9_-]+`` and unique
    across plugins; a duplicate is a :class:`PluginError`. Return value is ignored.
    """


@hookspec
def register_embedding_providers(register: Callable[[ProviderSpec], None]) -> None:
    """Register embedding providers.

    Called each time the core collects the providers: once per :class:`Router`, when it
    first resolves ``[embedding]`` (lazily, on first use, not when it is built), and when
    ``memory-router plugins`` lists them. So register the same specs on every call and do
    nothing else here. Call ``register(ProviderSpec(name=..., factory=...,
    auto_priority=...))`` once per provider; ``auto_priority`` (lower first) makes it a
    candidate for ``provider = "auto"``, ``None`` keeps it explicit-only. Names are unique
    across plugins; a duplicate is a :class:`PluginError`. Return value is ignored.
    """


@hookspec
def register_commands(cli: click.Group) -> None:
    """Add commands to the ``memory-router`` command line.

    Called once per root :class:`click.Group` the CLI assembles (once when the command
    line starts), with that group; add commands with ``@cli.command()``. Commands should
    print one-line errors by raising :class:`MemoryRouterError`. Return value is ignored.
    """
