"""The core's layering, read from the imports: lower folders never import higher ones.

Every ``import`` and ``from … import`` in ``router/memory_router`` is parsed with :mod:`ast` —
module-level, inside functions and under ``TYPE_CHECKING`` alike, relative or absolute — and
resolved to the core module it names. Three rules hold:

1. a module never imports a module of a higher layer (:data:`LAYERS`, low → high);
2. the core's modules import each other without circles;
3. ``backends/``, ``plugins/`` and ``bench/`` import only public names (``memory_router``,
   ``memory_router.<public module>``), never ``memory_router._x``; ruff's banned-api lists
   one line per private module so editors flag it too, and a test here keeps that list whole.

Each failure names the file, the line, both sides' layers and what to do instead.
"""

from __future__ import annotations

import ast
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from fnmatch import fnmatch
from functools import cache
from itertools import pairwise
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
CORE = ROOT / "router" / "memory_router"
PACKAGE = "memory_router"
OUTSIDE = ("backends", "plugins", "bench")

#: The core's top-level modules and folders by layer, low → high. A module may import its
#: own layer and the layers below it, never one above. Read bottom-up it is the data flow:
#: values → config → files → vectors → ranking → the backend contract → the chain → the
#: entry book → the Router → what is built on a Router → the public face.
LAYERS: tuple[tuple[str, frozenset[str]], ...] = (
    ("values", frozenset({"_util", "_progress_types", "_exceptions", "_types"})),
    ("config", frozenset({"_config"})),
    ("workspace", frozenset({"_workspace"})),
    ("embedding", frozenset({"_embedding"})),
    ("search", frozenset({"_search"})),
    ("contract", frozenset({"_backend", "_plugins", "hookspecs"})),
    ("entries", frozenset({"_entries"})),
    ("routing", frozenset({"_routing"})),
    ("router", frozenset({"_router"})),
    ("workflows", frozenset({"_migrate", "_agent"})),
    ("ops", frozenset({"_ops"})),
    (
        "face",
        frozenset({"cli", "testing", "service", "__init__", "kit", "agent", "_cli", "__main__"}),
    ),
)

#: Imports that break a rule today and are being fixed on another branch, as
#: ``(importing module, imported module)``. Each entry says who removes it; delete the entry
#: with the fix (a stale entry fails :func:`test_the_allow_list_has_no_stale_entries`).
ALLOWED: frozenset[tuple[str, str]] = frozenset()


@dataclass(frozen=True, slots=True, kw_only=True)
class Edge:
    """One import statement of ``source`` (a file) naming the module ``target``."""

    source: str
    path: Path
    line: int
    target: str


def module_name(path: Path, root: Path) -> str:
    """``router/memory_router/_config/config.py`` → ``memory_router._config.config``."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


@cache
def core_modules() -> dict[str, Path]:
    """Every module of the core by dotted name (packages by their ``__init__``)."""
    return {module_name(p, CORE.parent): p for p in sorted(CORE.rglob("*.py"))}


def unit(module: str) -> str:
    """The layer unit of a core module: its first component below ``memory_router``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def has_layer(module: str) -> bool:
    return any(unit(module) in units for _label, units in LAYERS)


def layer_of(module: str) -> int:
    """The index in :data:`LAYERS` of the module's unit."""
    name = unit(module)
    for index, (_label, units) in enumerate(LAYERS):
        if name in units:
            return index
    raise LookupError(name)


def imported(node: ast.AST, package: str) -> Iterator[str]:
    """The absolute module names one import node names; ``package`` anchors relative ones.

    ``from X import y`` names ``X.y`` when that is a core module, else ``X`` itself.
    """
    if isinstance(node, ast.Import):
        yield from (alias.name for alias in node.names)
    elif isinstance(node, ast.ImportFrom):
        base = node.module or ""
        if node.level:
            anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
            base = ".".join([*anchor, base] if base else anchor)
        modules = core_modules()
        for alias in node.names:
            child = f"{base}.{alias.name}"
            yield child if child in modules else base


def edges(path: Path, source: str, *, is_package: bool) -> Iterator[Edge]:
    """Every import in ``path`` (any depth) that names a ``memory_router`` module."""
    package = source if is_package else source.rpartition(".")[0]
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            for target in imported(node, package):
                if target == PACKAGE or target.startswith(PACKAGE + "."):
                    yield Edge(source=source, path=path, line=node.lineno, target=target)


@cache
def core_edges() -> tuple[Edge, ...]:
    found: list[Edge] = []
    for name, path in core_modules().items():
        found.extend(edges(path, name, is_package=path.name == "__init__.py"))
    return tuple(found)


def owning_module(target: str) -> str:
    """The longest core module that ``target`` names (``a.b.C`` → ``a.b``)."""
    modules = core_modules()
    while target not in modules and "." in target:
        target = target.rpartition(".")[0]
    return target


def where(edge: Edge) -> str:
    return f"{edge.path.relative_to(ROOT)}:{edge.line}"


def describe(module: str) -> str:
    index = layer_of(module)
    return f"{unit(module)} (layer {index + 1} of {len(LAYERS)}, {LAYERS[index][0]!r})"


def upward_imports() -> list[tuple[Edge, str]]:
    return [
        (edge, target)
        for edge in core_edges()
        if (target := owning_module(edge.target)) in core_modules()
        and has_layer(edge.source)
        and has_layer(target)
        and layer_of(edge.source) < layer_of(target)
    ]


def layer_table() -> str:
    return "\n".join(
        f"  {i + 1:2}. {label:10} {', '.join(sorted(units))}"
        for i, (label, units) in enumerate(LAYERS)
    )


def test_every_core_module_has_a_layer() -> None:
    unknown = sorted({unit(m) for m in core_modules() if not has_layer(m)})
    assert not unknown, (
        f"{unknown} in router/memory_router/ belong to no layer. Add each to LAYERS in "
        f"{Path(__file__).name}, in the lowest layer whose imports it needs:\n{layer_table()}"
    )


def test_lower_layers_never_import_higher_ones() -> None:
    problems = [
        f"{where(edge)}: {edge.source} imports {target}, but {describe(edge.source)} sits below "
        f"{describe(target)}."
        for edge, target in upward_imports()
        if (edge.source, target) not in ALLOWED
    ]
    assert not problems, (
        "Lower layers never import higher ones:\n"
        + "\n".join(problems)
        + "\n\nMove what both need down (a value to _types, a helper to _util, a rule to the "
        "lowest folder that uses it), or let the higher module pass it in (an argument, a "
        "callback, a small Protocol in the lower module). Layers, low → high:\n" + layer_table()
    )


def test_the_allow_list_has_no_stale_entries() -> None:
    found = {(edge.source, owning_module(edge.target)) for edge in core_edges()}
    stale = sorted(ALLOWED - found)
    assert not stale, (
        f"{stale} no longer import: delete them from ALLOWED in {Path(__file__).name}."
    )


def cycle_from(graph: dict[str, set[str]]) -> list[str] | None:
    """One import circle in ``graph`` as ``[a, b, …, a]``, or ``None`` (iterative DFS)."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    for start in sorted(graph):
        if start in state:
            continue
        path = [start]
        stack = [iter(sorted(graph[start]))]
        state[start] = 1
        while stack:
            nxt = next(stack[-1], None)
            if nxt is None:
                state[path.pop()] = 2
                stack.pop()
            elif state.get(nxt) == 1:
                return [*path[path.index(nxt) :], nxt]
            elif nxt not in state:
                state[nxt] = 1
                path.append(nxt)
                stack.append(iter(sorted(graph.get(nxt, ()))))
    return None


def test_no_import_circles_among_core_modules() -> None:
    graph: dict[str, set[str]] = {name: set() for name in core_modules()}
    lines: dict[tuple[str, str], Edge] = {}
    for edge in core_edges():
        target = owning_module(edge.target)
        if target in graph and target != edge.source:
            if (edge.source, target) in ALLOWED:
                continue
            graph[edge.source].add(target)
            lines.setdefault((edge.source, target), edge)
    circle = cycle_from(graph)
    assert circle is None, (
        "An import circle among the core's modules:\n"
        + "\n".join(f"  {where(lines[a, b])}: {a} imports {b}" for a, b in pairwise(circle))
        + "\nBreak it where the arrow points up or sideways: move the shared value or helper "
        "into a module both can import (usually lower, e.g. _types), or pass it in as an "
        "argument or a Protocol, so that one side never names the other."
    )


def is_private(module: str) -> bool:
    """Whether a ``memory_router…`` name has a ``_private`` component (dunders are public)."""
    return any(part.startswith("_") and not part.endswith("__") for part in module.split(".")[1:])


def ruff_config() -> dict[str, Any]:
    lint: dict[str, Any] = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))[
        "tool"
    ]["ruff"]["lint"]
    return lint


def exempt_patterns() -> list[str]:
    """The ``per-file-ignores`` globs of pyproject.toml that lift the private-import ban."""
    return [glob for glob, codes in ruff_config()["per-file-ignores"].items() if "TID251" in codes]


def outside_edges() -> Iterator[Edge]:
    for folder in OUTSIDE:
        for path in sorted((ROOT / folder).rglob("*.py")):
            yield from edges(path, str(path.relative_to(ROOT)), is_package=False)


def test_backends_plugins_and_bench_import_only_public_names() -> None:
    exempt = exempt_patterns()
    problems = sorted(
        {
            f"{where(edge)}: imports {edge.target}"
            for edge in outside_edges()
            if is_private(edge.target) and not any(fnmatch(edge.source, g) for g in exempt)
        }
    )
    assert not problems, (
        f"{', '.join(f'{f}/' for f in OUTSIDE)} use only the public API, as a third-party "
        "plugin would:\n"
        + "\n".join(problems)
        + "\n\nImport the name from `memory_router` (library users), `memory_router.kit` "
        "(backend and plugin authors) or `memory_router.agent` (agent hosts). If it is "
        "not exported, decide whether it should be: export it there (and pin it in "
        "tests/router/test_public_api.py), or keep it inside the core."
    )


def test_every_exempt_file_still_needs_its_exemption() -> None:
    # A per-file-ignores line that names one file goes once the file imports only public
    # names, so the exemption cannot hide the next private import there.
    stale = [
        glob
        for glob in exempt_patterns()
        if not any(ch in glob for ch in "*?[")
        and not any(is_private(edge.target) for edge in edges(ROOT / glob, glob, is_package=False))
    ]
    assert not stale, f"delete {stale} from per-file-ignores in pyproject.toml: no private import"


def private_units() -> set[str]:
    """``memory_router._x`` for each private top-level module or subpackage, and each
    private module of a public subpackage (``memory_router.cli._app``)."""
    found: set[str] = set()
    for name in core_modules():
        parts = name.split(".")
        for depth in range(2, len(parts) + 1):
            if is_private(".".join(parts[:depth])):
                found.add(".".join(parts[:depth]))
                break
    return found


def test_ruff_bans_every_private_module_outside_the_core() -> None:
    banned: dict[str, dict[str, str]] = ruff_config()["flake8-tidy-imports"]["banned-api"]
    listed = {b for b in banned if b == PACKAGE or b.startswith(PACKAGE + ".")}
    wanted = private_units()
    message = next((banned[b]["msg"] for b in sorted(listed)), "import the public name")
    assert listed == wanted, (
        "[tool.ruff.lint.flake8-tidy-imports.banned-api] in pyproject.toml has one line per "
        "private module or subpackage of the core (a line bans its submodules too).\n"
        + "".join(f"add:    {m!r}.msg = {message!r}\n" for m in sorted(wanted - listed))
        + "".join(
            f"remove: {m!r} (not a private top-level module or subpackage)\n"
            for m in sorted(listed - wanted)
        )
    )
