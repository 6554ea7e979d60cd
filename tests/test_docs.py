"""Meta-tests: the documentation covers every config key, CLI command and option, and hook.

In the manner of datasette's ``test_docs.py``: the code is walked, and each thing found
must be documented where users look for it (and each hook must be tested).
"""

from __future__ import annotations

import dataclasses
import re
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click
import pytest

import memory_router
import memory_router.agent
import memory_router.kit
from memory_router import Config, hookspecs
from memory_router._config.settings import toml_name
from memory_router._plugins import backend_specs
from memory_router.cli import build_cli, load_all
from memory_router.kit import Secret, get_plugin_manager

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
HEADING = re.compile(r"^#{1,6} (.*)$")
TABLE_IN_HEADING = re.compile(r"`\[([a-z0-9_.<>-]+)\]`")
ROW_KEY = re.compile(r"^\| `([a-z0-9_]+)`", re.MULTILINE)


def sections(markdown: str) -> dict[str, str]:
    """Heading text → the text under it, up to the next heading (fenced code is not split)."""
    found: dict[str, str] = {}
    current: str | None = None
    fenced = False
    for line in markdown.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        match = None if fenced else HEADING.match(line)
        if match:
            current = match[1].strip()
            found[current] = ""
        elif current is not None:
            found[current] += line + "\n"
    return found


def documented_tables(markdown: str) -> dict[str, set[str]]:
    """``"query.hybrid"`` → keys in that section's table rows; ``""`` is the top level."""
    tables: dict[str, set[str]] = {}
    for heading, body in sections(markdown).items():
        match = TABLE_IN_HEADING.search(heading)
        name = match[1] if match else ("" if heading == "Top-level keys" else None)
        if name is not None:
            tables[name] = set(ROW_KEY.findall(body))
    return tables


def config_keys(cls: type, table: str = "") -> Iterator[tuple[str, str]]:
    """``(table, key)`` for every TOML key of dataclass ``cls``, nested tables included."""
    hints = typing.get_type_hints(cls)
    for field in dataclasses.fields(cls):
        name = toml_name(field)
        if field.metadata.get("internal"):
            continue  # not settable from TOML (Config.file)
        hint: Any = hints[field.name]
        if dataclasses.is_dataclass(hint) and hint is not Secret:
            yield from config_keys(hint, f"{table}.{name}" if table else name)
        elif name != "backends" or table:
            yield table, name


def all_config_keys() -> list[tuple[str, str]]:
    keys = list(config_keys(Config))
    for name, spec in backend_specs(get_plugin_manager()).items():
        if spec.settings is not None:
            keys.extend(config_keys(spec.settings, f"backends.{name}"))
    return keys


@pytest.mark.parametrize(("table", "key"), all_config_keys())
def test_config_key_documented(table: str, key: str) -> None:
    tables = documented_tables((DOCS / "configuration.md").read_text(encoding="utf-8"))
    label = f"[{table}]" if table else "the top-level table"
    assert table in tables, f"docs/configuration.md has no section for {label}"
    assert key in tables[table], f"key {key!r} of {label} is not in docs/configuration.md"


def test_config_walk_finds_nested_tables() -> None:
    keys = set(all_config_keys())
    assert ("query.hybrid", "vector_weight") in keys
    assert ("query.mmr", "lambda") in keys
    assert ("embedding.remote", "api_key") in keys
    assert ("", "agent_id") in keys
    assert ("", "file") not in keys


def cli_commands() -> Iterator[tuple[str, click.Command]]:
    """``("memory-router search", command)`` for the root and every (nested) command."""
    root = build_cli()
    stack: list[tuple[str, click.Command]] = [("memory-router", root)]
    while stack:
        path, command = stack.pop()
        yield path, command
        if isinstance(command, click.Group):
            for name, sub in load_all(command).items():
                stack.append((f"{path} {name}", sub))


@pytest.mark.parametrize(("path", "command"), list(cli_commands()), ids=lambda v: str(v))
def test_cli_command_documented(path: str, command: click.Command) -> None:
    docs = sections((DOCS / "cli.md").read_text(encoding="utf-8"))
    body = docs.get(f"`{path}`")
    assert body is not None, f"docs/cli.md has no '## `{path}`' section"
    for param in command.params:
        # Hidden: the global options every command also takes after its name, documented
        # once in the `memory-router` section.
        if isinstance(param, click.Option) and not param.hidden:
            for opt in param.opts:
                assert f"`{opt}" in body, f"{opt} of {path!r} is not in docs/cli.md"


def test_cli_walk_finds_every_builtin_command() -> None:
    found = {path for path, _ in cli_commands()}
    for name in ("index", "search", "get", "store", "forget", "entries", "status", "plugins"):
        assert f"memory-router {name}" in found


HOOKS = sorted(
    name for name in dir(hookspecs) if hasattr(getattr(hookspecs, name), "memory_router_spec")
)


def test_hooks_found() -> None:
    assert {"register_backends", "register_embedding_providers", "register_commands"} <= set(HOOKS)


@pytest.mark.parametrize("hook", HOOKS)
def test_hook_documented(hook: str) -> None:
    docs = sections((DOCS / "plugins.md").read_text(encoding="utf-8"))
    assert any(hook in heading for heading in docs), f"docs/plugins.md has no section for {hook}"


@pytest.mark.parametrize("hook", HOOKS)
def test_hook_has_a_test(hook: str) -> None:
    tests = Path(__file__).resolve().parent
    users = [
        path
        for path in tests.rglob("*.py")
        if path.name != Path(__file__).name and hook in path.read_text(encoding="utf-8")
    ]
    assert users, f"no test under tests/ uses the hook {hook}"


PUBLIC = [
    (module.__name__, name)
    for module in (memory_router, memory_router.kit, memory_router.agent)
    for name in module.__all__
]


@pytest.mark.parametrize(("module", "name"), PUBLIC)
def test_public_name_documented(module: str, name: str) -> None:
    """Every exported name appears in docs/api.md, under its module's section."""
    api = sections((DOCS / "api.md").read_text(encoding="utf-8"))
    section = next(body for heading, body in api.items() if heading.startswith(f"`{module}`"))
    assert f"`{name}`" in section, f"document {module}.{name} in docs/api.md"


def test_readme_quick_start_is_two_make_targets() -> None:
    readme = sections((ROOT / "README.md").read_text(encoding="utf-8"))
    block = re.search(r"```\n(.*?)```", readme["Quick start"], re.DOTALL)
    assert block is not None
    assert block[1].split("\n")[:-1] == ["make demo", "make test"]
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    for target in ("demo", "test", "lint", "bench"):
        assert re.search(rf"^{target}:", makefile, re.MULTILINE), target


LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


@pytest.mark.parametrize(
    "page", [ROOT / "README.md", *sorted(DOCS.glob("*.md"))], ids=lambda p: p.name
)
def test_relative_links_resolve(page: Path) -> None:
    for target in LINK.findall(page.read_text(encoding="utf-8")):
        if "://" in target:
            continue
        assert (page.parent / target).exists(), f"{page.name} links to missing {target}"


TEST_PATH = re.compile(r"\b(tests/[\w/.-]+\.py)(?:::(\w+))?")


def test_the_test_files_named_in_the_docs_exist() -> None:
    # Test files move with the code they test (docs/testing.md); a page naming one must follow.
    pages = [ROOT / "README.md", *sorted(DOCS.glob("*.md")), *sorted(ROOT.glob("bench/*.md"))]
    missing = []
    for page in pages:
        for path, name in TEST_PATH.findall(page.read_text(encoding="utf-8")):
            source = ROOT / path
            if not source.is_file():
                missing.append(f"{page.name}: {path}")
            elif name and not re.search(rf"^\s*(def|class) {name}\b", source.read_text(), re.M):
                missing.append(f"{page.name}: {path}::{name}")
    assert not missing, "the docs name test files or tests that do not exist:\n" + "\n".join(
        missing
    )


def headings(markdown: str) -> Iterator[str]:
    """Every heading's text, in order, repeats included (fenced code is skipped)."""
    fenced = False
    for line in markdown.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        match = None if fenced else HEADING.match(line)
        if match:
            yield match[1].strip()


def anchors(markdown: str) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation dropped, spaces to ``-``, and a
    ``-1``, ``-2``… suffix for a repeated heading."""
    found: set[str] = set()
    for heading in headings(markdown):
        slug = re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")
        candidate, n = slug, 0
        while candidate in found:
            n += 1
            candidate = f"{slug}-{n}"
        found.add(candidate)
    return found


ANCHORED = re.compile(r"\]\(([^)#\s]*)#([^)\s]+)\)")
LINKING_PAGES = [ROOT / "README.md", *sorted(DOCS.glob("*.md")), ROOT / "bench" / "NOTES.md"]


@pytest.mark.parametrize("page", LINKING_PAGES, ids=lambda p: p.name)
def test_anchors_resolve(page: Path) -> None:
    """A link to a section names a heading that is there (sections move between pages)."""
    for target, anchor in ANCHORED.findall(page.read_text(encoding="utf-8")):
        if "://" in target:
            continue
        linked = (page.parent / target) if target else page
        assert linked.exists(), f"{page.name} links to missing {target}"
        assert anchor in anchors(linked.read_text(encoding="utf-8")), (
            f"{page.name} links to {target or page.name}#{anchor}, which has no such heading"
        )


def test_anchor_slugs_follow_github() -> None:
    markdown = "# `serve`: concurrent clients\n## Chaos: `x` with 30 % faulty\n## A\n## A\n"
    assert anchors(markdown) == {"serve-concurrent-clients", "chaos-x-with-30--faulty", "a", "a-1"}


# docs/architecture.md names every module of the core, and only modules that exist.
CORE = ROOT / "router" / "memory_router"
ARCHITECTURE = DOCS / "architecture.md"
# Modules the page names ahead of the issue-20 branches that create them: the Router
# facade's parts and the public modules by audience. Delete each entry once its module
# exists (test_architecture_pending_is_still_pending fails to say so).
PENDING: frozenset[Path] = frozenset()  # modules another branch is creating, named early
SOURCE_ROOTS = ("router/", "backends/", "plugins/", "tests/", "bench/")
INLINE_CODE = re.compile(r"`([^`\s]+)`")
PACKAGE = re.compile(r"memory_router_\w+")


def _package_dir(name: str) -> Path:
    for root in ("backends", "plugins"):
        if (ROOT / root / name).is_dir():
            return ROOT / root / name
    return ROOT / "backends" / name  # missing: reported as such


def _row_base(line: str) -> Path:
    """Where a bare ``name.py`` on this line lives: the folder of a core table row, the
    package a backend row names, or the core's top."""
    if line.startswith("| `"):
        first = line.split("|")[1].strip()
        folder = re.match(r"`([\w]+)/`", first)
        if folder:
            return CORE if folder[1] == "memory_router" else CORE / folder[1]
        for token in INLINE_CODE.findall(line):
            if PACKAGE.fullmatch(token):
                return _package_dir(token)
    return CORE


def _resolve(token: str, base: Path) -> Path | None:
    """The file or folder an inline-code token names, or ``None`` when it names none."""
    if token.endswith(".py") or (token.endswith("/") and "." not in token):
        if token.startswith(SOURCE_ROOTS):
            return ROOT / token
        if token.startswith("memory_router/"):
            return CORE.parent / token
        return (CORE if "/" in token else base) / token
    if re.fullmatch(r"memory_router(\.\w+)*", token):
        path = CORE.parent.joinpath(*token.split("."))
        return path if path.is_dir() else path.with_suffix(".py")
    if PACKAGE.fullmatch(token):
        return _package_dir(token)
    return None


def _layering_names(markdown: str) -> list[tuple[str, Path]]:
    block = re.search(r"### Layering\n.*?```\n(.*?)```", markdown, re.DOTALL)
    assert block is not None, "docs/architecture.md has no '### Layering' diagram"
    names = re.findall(r"\w+", block[1])
    return [(n, CORE / n if (CORE / n).is_dir() else CORE / f"{n}.py") for n in names]


def architecture_names() -> list[tuple[str, Path]]:
    """``(as written, path)`` for every module, folder and package docs/architecture.md names."""
    markdown = ARCHITECTURE.read_text(encoding="utf-8")
    named = []
    for line in markdown.splitlines():
        base = _row_base(line)
        for token in INLINE_CODE.findall(line):
            path = _resolve(token, base)
            if path is not None:
                named.append((token, path))
    return named + _layering_names(markdown)


def test_architecture_names_only_what_exists() -> None:
    missing = sorted(
        {
            f"{token} ({path.relative_to(ROOT)})"
            for token, path in architecture_names()
            if not path.exists() and path not in PENDING
        }
    )
    assert not missing, (
        f"docs/architecture.md names modules that do not exist: {', '.join(missing)};"
        " correct the page where a module moved or was renamed"
    )


def test_architecture_names_every_core_module() -> None:
    named = {path for _, path in architecture_names()}
    modules = [
        path
        for path in sorted(CORE.rglob("*.py"))
        if path.parent == CORE or path.name != "__init__.py"
    ]
    unnamed = [str(path.relative_to(CORE)) for path in modules if path not in named]
    assert not unnamed, (
        f"docs/architecture.md does not name {', '.join(unnamed)}: add each to its folder's"
        " row of 'The core, folder by folder' (bare file names in the modules column)"
    )


def test_architecture_pending_is_still_pending() -> None:
    landed = sorted(str(path.relative_to(CORE)) for path in PENDING if path.exists())
    assert not landed, f"{', '.join(landed)} exist now: remove them from PENDING in {__file__}"


def test_architecture_finds_rows_and_paths() -> None:
    named = {path for _, path in architecture_names()}
    assert CORE / "_workspace" / "checks.py" in named  # a row's bare module name
    assert ROOT / "backends" / "memory_router_sqlite" / "_db.py" in named  # a backend row
    assert ROOT / "plugins" / "memory_router_serve" / "_http.py" in named  # a full path
    assert CORE / "_search" / "snippets.py" in named


def test_architecture_chunking_is_the_default() -> None:
    """The page once said 400 / 80 while the code chunked at 200 / 40."""
    markdown = ARCHITECTURE.read_text(encoding="utf-8")
    defaults = Config().chunking
    said = re.findall(r"(\d+) tokens / (\d+) overlap", markdown)
    assert said, "docs/architecture.md no longer gives the chunk size in its data flow"
    assert set(said) == {(str(defaults.tokens), str(defaults.overlap))}
    assert f"tokens = {defaults.tokens}" in markdown
    assert f"overlap = {defaults.overlap}" in markdown
