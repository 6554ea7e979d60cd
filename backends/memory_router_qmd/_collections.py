"""The collections QMD indexes for one agent, and the index YAML that declares them.

Managed collections: ``memory-root`` (the workspace, pattern ``MEMORY.md``),
``memory-dir`` (``<workspace>/memory``, ``**/*.md``), ``extra-<n>`` for each configured
extra path (a folder with ``**/*.md``, or a single file), and ``sessions`` (the
transcript export, ref §3.5). Paths are absolute. The backend writes the whole
``<index>.yml`` (collections and the ``models:`` block) itself, only when its content
changes: creating a collection is then idempotent and never needs ``collection remove``.
Nothing here is ever called on the search path except :func:`ensure_config`'s read.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from memory_router import Config

DEFAULT_MODELS = {
    "embed": "hf:ggml-org/embeddinggemma-300M-GGUF/embeddinggemma-300M-Q8_0.gguf",
    "generate": "hf:tobil/qmd-query-expansion-1.7B-gguf/qmd-query-expansion-1.7B-q4_k_m.gguf",
    "rerank": "hf:ggml-org/Qwen3-Reranker-0.6B-Q8_0-GGUF/qwen3-reranker-0.6b-q8_0.gguf",
}


@dataclass(frozen=True, slots=True, kw_only=True)
class Collection:
    """A QMD collection: ``name``, absolute ``path``, glob ``pattern``, result ``source``."""

    name: str
    path: Path
    pattern: str
    source: str = "memory"


def managed_collections(config: Config, export_dir: Path) -> list[Collection]:
    """Every collection this agent's memory needs; folders that do not exist are left out.

    Duplicates by (path, pattern) are skipped, first wins (QMD refuses them).
    """
    workspace = config.workspace_path
    wanted = [
        Collection(name="memory-root", path=workspace, pattern="MEMORY.md"),
        Collection(name="memory-dir", path=workspace / "memory", pattern="**/*.md"),
    ]
    if _distinct_lowercase_memory(workspace):
        wanted.insert(1, Collection(name="memory-alt", path=workspace, pattern="memory.md"))
    for n, raw in enumerate(config.extra_paths, start=1):
        target = config.expand(raw)
        if target.is_file():
            wanted.append(Collection(name=f"extra-{n}", path=target.parent, pattern=target.name))
        else:
            wanted.append(Collection(name=f"extra-{n}", path=target, pattern="**/*.md"))
    if config.sessions_enabled:
        wanted.append(
            Collection(name="sessions", path=export_dir, pattern="**/*.md", source="sessions")
        )
    seen: set[tuple[Path, str]] = set()
    found = []
    for collection in wanted:
        key = (collection.path, collection.pattern)
        if key in seen or not collection.path.is_dir():
            continue
        seen.add(key)
        found.append(collection)
    return found


def _distinct_lowercase_memory(workspace: Path) -> bool:
    """Whether ``memory.md`` exists and is not ``MEMORY.md`` itself.

    On a case-insensitive file system both names are one file; two collections over it
    were OpenClaw's "memory-alt" conflict (#64007, #65890).
    """
    lower, upper = workspace / "memory.md", workspace / "MEMORY.md"
    if not lower.is_file():
        return False
    return not (upper.exists() and os.path.samefile(lower, upper))


def render_config(collections: Sequence[Collection], models: Mapping[str, str]) -> str:
    """The index YAML. Strings are JSON-quoted, which YAML reads as the same strings."""
    lines = ["collections:"] if collections else ["collections: {}"]
    for collection in collections:
        lines += [
            f"  {json.dumps(collection.name)}:",
            f"    path: {json.dumps(str(collection.path))}",
            f"    pattern: {json.dumps(collection.pattern)}",
        ]
    lines.append("models:")
    for role in ("embed", "generate", "rerank"):
        lines.append(f"  {role}: {json.dumps(models.get(role) or DEFAULT_MODELS[role])}")
    return "\n".join(lines) + "\n"


def ensure_config(path: Path, collections: Sequence[Collection], models: Mapping[str, str]) -> bool:
    """Write the index YAML when it differs; returns whether it was written (atomically)."""
    text = render_config(collections, models)
    try:
        if path.read_text(encoding="utf-8") == text:
            return False
    except OSError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_suffix(".yml.tmp")
    temporary.write_text(text, encoding="utf-8")
    os.replace(temporary, path)
    return True


_DECLARED = re.compile(r'^  ("(?:[^"\\]|\\.)*"|[^\s:#]+):\s*$')


def declared_names(path: Path) -> set[str]:
    """Collection names in an index YAML (the ``collections:`` block, two-space keys)."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError:
        return set()
    names: set[str] = set()
    inside = False
    for line in lines:
        if line and not line.startswith(" "):
            inside = line.startswith("collections:")
            continue
        match = _DECLARED.match(line) if inside else None
        if match:
            key = match[1]
            names.add(json.loads(key) if key.startswith('"') else key)
    return names


def export_source(relpath: str) -> str:
    """The transcript name an export file stands for (``chat.jsonl.md`` → ``chat.jsonl``)."""
    return relpath[:-3] if relpath.endswith(".md") else relpath


def workspace_path(collection: Collection, relpath: str, workspace: Path) -> str:
    """The hit's path as the router reports it: workspace-relative, ``/``-separated.

    Session exports map back to their transcript, ``sessions/<name>.jsonl``.
    """
    if collection.source == "sessions":
        return "sessions/" + export_source(relpath)
    absolute = collection.path / relpath
    return Path(os.path.relpath(absolute, workspace)).as_posix()
