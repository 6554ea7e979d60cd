"""Lazy re-exports for plugin packages, so loading a plugin's entry point stays cheap.

The CLI loads every plugin of the ``memory_router`` entry-point group at start, so a
plugin's top-level module must not import heavy dependencies (numpy, httpx, lancedb, mcp,
a backend's implementation): it registers specs whose factories import them when called,
and re-exports its classes through :func:`lazy_exports` (see docs/plugins.md).
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(package: str, names: Mapping[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` that imports each name's module on first access.

    ``names`` maps an attribute to the module that defines it, relative to ``package``::

        __getattr__ = lazy_exports(__name__, {"QmdBackend": "._backend"})

    Pair it with the same imports under ``if TYPE_CHECKING:`` for type checkers. A name,
    once imported, is kept in the package's namespace, so later accesses are plain lookups.
    """

    def __getattr__(name: str) -> Any:
        module = names.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module, package), name)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__
