"""Lazy exports, so importing a package — ours or a plugin's — stays cheap.

The CLI loads every plugin of the ``memory_router`` entry-point group at start, so a
plugin's top-level module must not import heavy dependencies (numpy, httpx, lancedb, mcp,
a backend's implementation): it registers specs whose factories import them when called,
and re-exports its classes through :func:`lazy_exports` (see docs/plugins.md).

Our own public modules (``memory_router``, ``memory_router.kit``, ``memory_router.agent``)
go one step further with :func:`public_api`: their export list is written once, as the
``if TYPE_CHECKING:`` imports that type checkers read, and the same lines are the table
the lazy ``__getattr__`` imports from (SPEC 1's ``lazy_loader.attach_stub`` reads a stub
file the same way).
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import sys
import types
import warnings
from collections.abc import Callable, Iterable, Mapping
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


PublicApi = tuple[list[str], Callable[[str], Any], Callable[[], list[str]]]

# Every public module's publisher: a lookup in any of them publishes the loaded names of
# all, so `from memory_router.kit import parse_settings` alone makes a ConfigError it
# raises show as `memory_router.ConfigError`, not `memory_router._exceptions.ConfigError`.
_PUBLISHERS: list[Callable[[], None]] = []


def _publish_all() -> None:
    for publisher in tuple(_PUBLISHERS):
        publisher()


def public_api(
    package: str, *, extra: Iterable[str] = (), moved_to: Iterable[str] = ()
) -> PublicApi:
    """``(__all__, __getattr__, __dir__)`` for a public module whose exports are the
    ``from .module import Name as Name`` lines of its ``if TYPE_CHECKING:`` block::

        if TYPE_CHECKING:
            from ._router import Router as Router
        else:
            __all__, __getattr__, __dir__ = public_api(__name__)

    ``__all__`` is those names plus ``extra`` (attributes the module defines itself),
    sorted as ruff's RUF022 sorts. A name is imported on first access and kept in the
    namespace. Every exported class or function defined in a private module gets the
    public module as ``__module__`` (tracebacks, reprs and pickles name the public home)
    once its module is loaded and a name of any public module has been looked up; see
    :func:`publish`. A name found in the ``__all__`` of a module of ``moved_to`` still
    resolves here, with a :class:`DeprecationWarning` naming its new home.
    """
    table = _type_checking_imports(package)
    names = sorted({*table, *extra}, key=_ruff_order)
    namespace = vars(sys.modules[package])
    anchor = namespace["__package__"]  # `memory_router` for `memory_router.kit` too
    pending = {name: importlib.util.resolve_name(module, anchor) for name, module in table.items()}
    homes = tuple(moved_to)

    def publish_loaded() -> None:
        """Publish and keep every pending name whose module is loaded (by anyone)."""
        for name, module_name in list(pending.items()):
            module = sys.modules.get(module_name)
            if module is None or _initializing(module):
                continue
            value = getattr(module, name)
            publish(value, package)
            namespace[name] = value
            pending.pop(name, None)  # another thread may have published it meanwhile

    def __getattr__(name: str) -> Any:
        module = table.get(name)
        if module is None:
            return _moved(package, name, homes)
        value = getattr(importlib.import_module(module, anchor), name)
        _publish_all()
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(names))

    _PUBLISHERS.append(publish_loaded)
    return names, __getattr__, __dir__


def publish(value: Any, public: str) -> None:
    """Set ``value.__module__`` to ``public`` for a class or function of a private module.

    A class's own string annotations (``from __future__ import annotations``) are
    evaluated first, in the module that defined them: ``typing.get_type_hints`` looks
    names up in the module ``__module__`` names, and the public module does not hold
    them. An annotation naming what the defining module imports only for type checkers
    stays a string, as unresolvable as before.
    """
    if not isinstance(value, type | types.FunctionType) or not _private(value.__module__):
        return
    if isinstance(value, type):
        _evaluate_annotations(value)
    value.__module__ = public


_COMPILED: dict[str, types.CodeType] = {}


def _evaluate_annotations(cls: type) -> None:
    """Replace ``cls``'s own string annotations by their values, as ``get_type_hints``
    would evaluate them (in the defining module's namespace); compiled once per string,
    since the same few (``str``, ``int | None``…) recur across every value class."""
    import inspect  # loaded by then (dataclasses imports it); `import memory_router` is not

    own = inspect.get_annotations(cls)
    namespace = vars(sys.modules[cls.__module__])
    changed = False
    for name, hint in own.items():
        if isinstance(hint, str):
            code = _COMPILED.get(hint)
            if code is None:
                code = _COMPILED[hint] = compile(hint, "<annotation>", "eval")
            try:
                own[name] = eval(code, namespace)
            except (NameError, AttributeError, TypeError):
                continue
            changed = True
    if changed:
        cls.__annotations__ = own


def _initializing(module: types.ModuleType) -> bool:
    """True while the module's code runs (importlib's own flag): its later names, and the
    names its annotations refer to, do not exist yet."""
    return bool(getattr(getattr(module, "__spec__", None), "_initializing", False))


def _private(module: str) -> bool:
    """``memory_router._types`` and ``memory_router._config.config`` are private."""
    return any(part.startswith("_") for part in module.split(".")[1:])


def _ruff_order(name: str) -> tuple[int, str]:
    """RUF022's order for ``__all__``: CONSTANTS, then Classes, then functions."""
    return (0 if name.isupper() else 1 if name[0].isupper() else 2, name)


def _moved(package: str, name: str, homes: tuple[str, ...]) -> Any:
    for home in homes:
        module = importlib.import_module(home)
        if name in getattr(module, "__all__", ()):
            warnings.warn(
                f"{package}.{name} moved to {home}.{name}; import it from {home} (the old"
                " name will be removed in the next minor release)",
                DeprecationWarning,
                stacklevel=3,  # the `from … import` or attribute access
            )
            return getattr(module, name)
    raise AttributeError(f"module {package!r} has no attribute {name!r}")


def _type_checking_imports(package: str) -> dict[str, str]:
    """Name → relative module, from the ``if TYPE_CHECKING:`` block of ``package``'s source.

    Only ``from .module import Name as Name`` lines may stand there (the ``as`` form is
    what marks a re-export for mypy and pyright), so the table cannot drift from what type
    checkers see. Raises :class:`ImportError` otherwise, or without the source.
    """
    module = sys.modules[package]
    get_source = getattr(getattr(module.__spec__, "loader", None), "get_source", None)
    source = get_source(package) if get_source is not None else None
    if source is None:
        raise ImportError(f"{package} reads its exports from its source file, which is missing")
    block = next(
        (
            node
            for node in ast.parse(source).body
            if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING"
        ),
        None,
    )
    table: dict[str, str] = {}
    for node in block.body if block is not None else ():
        if not (isinstance(node, ast.ImportFrom) and node.level and node.module):
            raise ImportError(f"{package}, line {node.lineno}: expected `from .module import`")
        for alias in node.names:
            if alias.asname != alias.name or alias.name in table:
                raise ImportError(
                    f"{package}, line {node.lineno}: write `{alias.name} as {alias.name}`,"
                    " once per name"
                )
            table[alias.name] = "." * node.level + node.module
    return table
