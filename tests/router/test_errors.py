"""The one error tree: every error class in it, drawn the same in the code and the docs."""

from __future__ import annotations

import importlib
import pkgutil
import re
from pathlib import Path

import pytest

import memory_router
from memory_router import _exceptions

DOCS = Path(__file__).resolve().parents[2] / "docs"
_NODE = re.compile(r"^(?P<lead>[ │├└─]*)(?P<name>[A-Z]\w+)")


def parse_tree(text: str) -> dict[str, str | None]:
    """``{class name: parent name}`` from the tree drawn in ``text`` (rooted at
    ``MemoryRouterError``); a node's parent is the last node drawn further left."""
    start = text.index("MemoryRouterError\n")
    lines = text[start:].split("\n")
    parents: dict[str, str | None] = {}
    stack: list[tuple[int, str]] = []
    for line in lines:
        match = _NODE.match(line)
        if match is None or (stack and not match.group("lead")):
            break
        column = len(match.group("lead"))
        while stack and stack[-1][0] >= column:
            stack.pop()
        parents[match.group("name")] = stack[-1][1] if stack else None
        stack.append((column, match.group("name")))
    return parents


def defined_errors() -> dict[str, str | None]:
    """``{class name: parent name}`` of every error class ``_exceptions`` defines."""
    found: dict[str, str | None] = {}
    for name, value in vars(_exceptions).items():
        if isinstance(value, type) and issubclass(value, _exceptions.MemoryRouterError):
            base = value.__bases__[0]
            found[name] = None if value is _exceptions.MemoryRouterError else base.__name__
    return found


@pytest.mark.parametrize(
    "text",
    [_exceptions.__doc__ or "", (DOCS / "errors.md").read_text(encoding="utf-8")],
    ids=["_exceptions docstring", "docs/errors.md"],
)
def test_the_drawn_tree_is_the_class_tree(text: str) -> None:
    assert parse_tree(text) == defined_errors()


def test_every_error_is_exported_from_memory_router() -> None:
    for name in defined_errors():
        assert name in memory_router.__all__, name
        assert getattr(memory_router, name) is getattr(_exceptions, name)


def test_the_old_homes_still_import_the_same_classes() -> None:
    from memory_router._routing.breaker import CircuitOpen
    from memory_router._routing.indexlock import IndexBusy
    from memory_router.service import ServiceUnreachable

    assert CircuitOpen is _exceptions.CircuitOpen
    assert IndexBusy is _exceptions.IndexBusy
    assert ServiceUnreachable is _exceptions.ServiceUnreachable


def test_no_core_module_defines_an_error_outside_the_tree() -> None:
    """An error class of the core lives in ``_exceptions`` (where the tree is drawn);
    plugins may subclass the tree in their own packages."""
    for info in pkgutil.walk_packages(memory_router.__path__, "memory_router."):
        if info.name != "memory_router.__main__":  # it runs the CLI
            importlib.import_module(info.name)
    strays: list[str] = []
    todo = [_exceptions.MemoryRouterError]
    while todo:
        cls = todo.pop()
        todo.extend(cls.__subclasses__())
        if cls.__module__.startswith("memory_router.") and cls.__module__ != _exceptions.__name__:
            strays.append(f"{cls.__module__}.{cls.__qualname__}")
    assert strays == []


def test_index_busy_carries_the_holders_pid() -> None:
    error = _exceptions.IndexBusy("process 12 is already indexing", pid=12, hint="wait")
    assert (error.pid, error.hint, str(error)) == (12, "wait", "process 12 is already indexing")
    assert not isinstance(error, _exceptions.BackendError)
    assert isinstance(_exceptions.CircuitOpen("open", backend="qmd"), memory_router.BackendError)
