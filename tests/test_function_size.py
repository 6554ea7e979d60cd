"""No function of the core is longer than 50 lines (STYLE.md: functions short, ceiling ≈ 50).

A function is measured from its ``def`` line to its last line (decorators out, docstring
in), over every module of ``router/memory_router``. A longer one is split into named steps.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import memory_router

CORE = Path(memory_router.__file__).parent
LIMIT = 50


def functions(tree: ast.AST, prefix: str = "") -> Iterator[tuple[str, ast.AST]]:
    """``(qualified name, node)`` of every function, methods and nested ones included."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            name = f"{prefix}{node.name}"
            if not isinstance(node, ast.ClassDef):
                yield name, node
            yield from functions(node, f"{name}.")
        else:
            yield from functions(node, prefix)


def long_functions() -> dict[str, int]:
    """``"path::qualified.name"`` → lines, for every core function over :data:`LIMIT`."""
    found: dict[str, int] = {}
    for path in sorted(CORE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for name, node in functions(tree):
            assert isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
            lines = (node.end_lineno or node.lineno) - node.lineno + 1
            if lines > LIMIT:
                found[f"{path.relative_to(CORE).as_posix()}::{name}"] = lines
    return found


def test_no_core_function_is_longer_than_the_limit() -> None:
    over = long_functions()
    assert not over, f"split these into named steps (≤ {LIMIT} lines each): {over}"


def test_the_walk_finds_methods_and_nested_functions() -> None:
    tree = ast.parse("class A:\n    def m(self):\n        def inner(): ...\ndef f(): ...\n")
    assert [name for name, _ in functions(tree)] == ["A.m", "A.m.inner", "f"]
