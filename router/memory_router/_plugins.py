"""The plugin manager factory and typed wrappers: the only module that calls ``pm.hook``.

Plugins come from the entry-point group ``memory_router``. ``MEMORY_ROUTER_PLUGINS``
limits which entry points load (comma-separated names; empty = none), and
``MEMORY_ROUTER_PLUGIN_MODULES`` loads extra plugin modules by import name (as pytest's
``-p``), e.g. ``memory_router.testing`` for the test embedder.
"""

from __future__ import annotations

import importlib
import os
import re
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

import pluggy

from . import hookspecs
from ._backend import BackendSpec
from ._embedding.providers import ProviderSpec
from ._exceptions import PluginError
from ._util.entrypoints import distribution, entry_points

if TYPE_CHECKING:
    import click

GROUP = "memory_router"
_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]*$")


def get_plugin_manager(
    *,
    load_entrypoints: bool = True,
    plugins: Iterable[object] = (),
    environ: Mapping[str, str] | None = None,
) -> pluggy.PluginManager:
    """A fresh plugin manager with the hookspecs, entry points and ``plugins`` registered."""
    environ = os.environ if environ is None else environ
    pm = pluggy.PluginManager(GROUP)
    pm.add_hookspecs(hookspecs)
    if load_entrypoints:
        allowed = environ.get("MEMORY_ROUTER_PLUGINS")
        names = None if allowed is None else {n.strip() for n in allowed.split(",") if n.strip()}
        _load_entrypoints(pm, names)
    for module_name in filter(
        None, (m.strip() for m in environ.get("MEMORY_ROUTER_PLUGIN_MODULES", "").split(","))
    ):
        try:
            module = importlib.import_module(module_name)
        except ImportError as error:
            raise PluginError(f"cannot import plugin module {module_name!r}: {error}") from None
        if not pm.is_registered(module):
            pm.register(module, name=module_name)
    for plugin in plugins:
        if not pm.is_registered(plugin):
            pm.register(plugin)
    try:
        pm.check_pending()
    except pluggy.PluginValidationError as error:
        raise PluginError(str(error)) from None
    return pm


def _load_entrypoints(pm: pluggy.PluginManager, names: set[str] | None) -> None:
    """Load the group's entry points (only ``names`` when given), as pluggy would."""
    for entry in entry_points(GROUP):
        if names is not None and entry.name not in names:
            continue
        if pm.get_plugin(entry.name) is not None or pm.is_blocked(entry.name):
            continue
        try:
            plugin = entry.load()
        except ImportError as error:
            raise PluginError(f"a memory_router plugin failed to load: {error}") from None
        pm.register(plugin, name=entry.name)


def _collect(kind: str, calls: Any, name_of: Any) -> dict[str, Any]:
    found: dict[str, Any] = {}

    def register(item: Any) -> None:
        name = name_of(item)
        if not isinstance(name, str) or not _NAME.match(name):
            raise PluginError(
                f"invalid {kind} name {name!r}: use lower-case letters, digits, '-' and '_'"
            )
        if name in found:
            raise PluginError(f"two plugins register a {kind} named {name!r}")
        found[name] = item

    calls(register=register)
    return found


def backend_specs(pm: pluggy.PluginManager) -> dict[str, BackendSpec]:
    """Every registered backend, by name."""
    return _collect("backend", pm.hook.register_backends, lambda s: s.name)


def provider_specs(pm: pluggy.PluginManager) -> dict[str, ProviderSpec]:
    """Every registered embedding provider, by name."""
    return _collect("embedding provider", pm.hook.register_embedding_providers, lambda s: s.name)


def register_commands(pm: pluggy.PluginManager, cli: click.Group) -> None:
    """Let plugins add CLI commands."""
    pm.hook.register_commands(cli=cli)


def plugin_list(pm: pluggy.PluginManager) -> list[dict[str, Any]]:
    """Loaded plugins with their hooks, for ``memory-router plugins``."""
    rows = []
    entries = {entry.name: entry for entry in entry_points(GROUP)}
    for registered, plugin in sorted(pm.list_name_plugin(), key=lambda item: str(item[0])):
        # Plugins registered as objects get their id() as name; show what they are instead.
        name = registered
        if registered.isdigit():
            name = getattr(plugin, "__name__", None) or type(plugin).__qualname__
        hooks = sorted(h.name for h in pm.get_hookcallers(plugin) or [])
        entry = entries.get(registered)
        dist = distribution(entry) if entry is not None else None
        rows.append(
            {
                "name": name,
                "hooks": hooks,
                "distribution": dist[0] if dist else None,
                "version": dist[1] if dist else None,
            }
        )
    return rows
