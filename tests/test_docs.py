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

from memory_router import Config, Secret, get_plugin_manager, hookspecs
from memory_router._config.settings import toml_name
from memory_router._plugins import backend_specs
from memory_router.cli import build_cli, load_all

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
