"""``config from-openclaw``: an ``openclaw.json`` memory setup as this project's TOML.

Both layouts are read, and a file holding both (a config OpenClaw's doctor has not
rewritten yet) is merged the way OpenClaw 2026.9 does, the current keys winning:

* **2026.9** (ref ``openclaw-memory.md`` §12): ``memory.search.*`` for every agent,
  ``agents.entries.<id>.memory.search.*`` over it key by key (``extraPaths`` from both
  levels concatenated), ``agents.defaults.workspace`` / ``agents.entries.<id>.workspace``,
  ``memory.citations``, the memory plugin slot ``plugins.slots.memory`` and the
  ``plugins.entries.memory-*`` settings;
* **until 2026.7** (ref §1.1, §2.1): top-level ``memorySearch``,
  ``agents.defaults.memorySearch``, ``agents.list[]`` (``memorySearch``, ``workspace``),
  ``memory.backend`` and ``memory.qmd.*``.

Each key is mapped onto this project's configuration or named in ``dropped`` with the
reason, so nothing is dropped silently. The conversion also says which workspace and
which agent OpenClaw would use, and sets ``[chunking]`` to cut as that OpenClaw version
did, so the vectors in its index are reused (see :data:`OPENCLAW_CHUNKING`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._exceptions import InvalidInput
from .json5 import Json5Error, loads

Convert = Callable[[Any], Any]


def _same(value: Any) -> Any:
    return value


def _seconds(value: Any) -> Any:
    return value / 1000 if isinstance(value, int | float) else value


def _provider(value: Any) -> Any:
    # OpenClaw's OpenAI-compatible adapter is our `openai` (any OpenAI-compatible server).
    return "openai" if value == "openai-compatible" else value


def _api_key(value: Any) -> Any:
    """``"${NAME}"`` or ``{source: "env", id: NAME}`` as our ``{ env = NAME }``; else None."""
    if isinstance(value, str) and value.startswith("${") and value.endswith("}"):
        return {"env": value[2:-1]}
    if isinstance(value, Mapping) and value.get("source") == "env" and value.get("id"):
        return {"env": str(value["id"])}
    return None


# OpenClaw key under memory.search / memorySearch -> (our dotted key, conversion)
SEARCH_KEYS: dict[str, tuple[str, Convert]] = {
    "provider": ("embedding.provider", _provider),
    "model": ("embedding.model", _same),
    "fallback": ("embedding.fallback", _provider),
    "outputDimensionality": ("embedding.remote.output_dimensionality", _same),
    "remote.baseUrl": ("embedding.remote.base_url", _same),
    "remote.apiKey": ("embedding.remote.api_key", _api_key),
    "remote.headers": ("embedding.remote.headers", _same),
    "local.modelPath": ("embedding.local.model_path", _same),
    "local.modelCacheDir": ("embedding.local.model_cache_dir", _same),
    "store.fts.tokenizer": ("backends.sqlite.fts_tokenizer", _same),
    "store.vector.enabled": ("backends.sqlite.vector", _same),
    "store.vector.extensionPath": ("backends.sqlite.extension_path", _same),
    "chunking.tokens": ("chunking.tokens", _same),
    "chunking.overlap": ("chunking.overlap", _same),
    "sync.onSessionStart": ("sync.on_session_start", _same),
    "sync.onSearch": ("sync.on_search", _same),
    "sync.watchDebounceMs": ("sync.watch_debounce_ms", _same),
    "sync.intervalMinutes": ("sync.interval_minutes", _same),
    "sync.sessions.deltaBytes": ("sync.sessions.delta_bytes", _same),
    "sync.sessions.deltaMessages": ("sync.sessions.delta_messages", _same),
    "query.maxResults": ("query.max_results", _same),
    "query.minScore": ("query.min_score", _same),
    "query.hybrid.enabled": ("query.hybrid.enabled", _same),
    "query.hybrid.vectorWeight": ("query.hybrid.vector_weight", _same),
    "query.hybrid.textWeight": ("query.hybrid.text_weight", _same),
    "query.hybrid.candidateMultiplier": ("query.hybrid.candidate_multiplier", _same),
    "query.hybrid.mmr.enabled": ("query.mmr.enabled", _same),
    "query.hybrid.mmr.lambda": ("query.mmr.lambda", _same),
    "query.hybrid.temporalDecay.enabled": ("query.temporal_decay.enabled", _same),
    "query.hybrid.temporalDecay.halfLifeDays": ("query.temporal_decay.half_life_days", _same),
    "cache.enabled": ("cache.enabled", _same),
    "cache.maxEntries": ("cache.max_entries", _same),
}

# Legacy ``memory.*`` (QMD backend settings, removed in OpenClaw 2026.8).
MEMORY_KEYS: dict[str, tuple[str, Convert]] = {
    "qmd.searchMode": ("backends.qmd.search_mode", _same),
    "qmd.update.onBoot": ("backends.qmd.update_on_boot", _same),
    "qmd.update.updateTimeoutMs": ("backends.qmd.update_timeout_s", _seconds),
    "qmd.update.embedTimeoutMs": ("backends.qmd.embed_timeout_s", _seconds),
    "qmd.update.commandTimeoutMs": ("backends.qmd.command_timeout_s", _seconds),
    "qmd.limits.maxResults": ("query.max_results", _same),
    "qmd.limits.maxSnippetChars": ("query.max_snippet_chars", _same),
    "qmd.limits.maxInjectedChars": ("query.max_injected_chars", _same),
    "qmd.limits.timeoutMs": ("backends.qmd.search_timeout_s", _seconds),
}

PROVIDERS = frozenset(
    {"auto", "none", "openai", "gemini", "voyage", "mistral", "ollama", "local", "minilm"}
)

# Keys folded into another mapping (sources, extra_paths, chain): not reported as dropped.
FOLDED = frozenset(
    {
        "sources",
        "experimental.sessionMemory",
        "rememberAcrossConversations",
        "extraPaths",
        "qmd.paths",
        "qmd.extraCollections",
        "qmd.sessions.enabled",
        "backend",
        "citations",
    }
)

WHY_NOT = {
    "enabled": "memory cannot be switched off in the config; leave memory-router out instead",
    "remote.apiKey": "secrets stay out of config files: set embedding.remote.api_key ="
    ' { env = "NAME" } (a "${NAME}" or env SecretRef value is carried that way)',
    "store.path": "the old index is imported, not reused in place: memory-router migrate"
    " --from-path <that file> (or import-openclaw)",
    "store.driver": "the index is the sqlite backend",
    "remote.batch": "provider batch APIs are not supported",
    "multimodal": "image and audio memory is not supported",
    "inputType": "no input_type field is sent to OpenAI-compatible servers here",
    "queryInputType": "no input_type field is sent to OpenAI-compatible servers here",
    "documentInputType": "no input_type field is sent to OpenAI-compatible servers here",
    "sync.watch": "run `memory-router watch` to watch",
    "sync.sessions.postCompactionForce": "no compaction hook here",
    "qmd.command": "set backends.qmd.command to QMD's qmd.js or executable",
    "qmd.mcporter": "QMD is driven directly (MCP child), not through mcporter",
    "qmd.sessions": "sessions are indexed by every backend when `sources` has sessions",
    "qmd.scope": "no per-chat scope rules",
    "qmd.update.interval": "set backends.qmd.update_interval_s (seconds)",
    "qmd.update.debounceMs": "updates are debounced by the router's sync",
    "qmd.update.embedInterval": "QMD embeds after every update",
    "qmd.update.waitForBootSync": "the first search waits for the boot sync",
    "qmd.includeDefaultMemory": "the workspace's memory files are always indexed",
    "qmd.searchTool": "no mcporter tool override",
    "qmd.fallback": "set [router] fallback (next or none)",
}

OPENCLAW_CHUNKING = {
    "2026.9": {"tokens": 400, "overlap": 80, "structure": "openclaw"},
    "legacy": {"tokens": 400, "overlap": 80, "structure": "off"},
}
"""The chunks each OpenClaw layout cuts: with them, every vector of its index is reused.

memory-router's own defaults (200 / 40 tokens, ``structure = "auto"``) measure better on
LoCoMo (docs/performance.md); switching to them later costs one re-embedding."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Conversion:
    """The TOML tables made from ``openclaw.json``, every key not carried over (with why),
    notes on what was carried with a change, and the agent and workspace it is for."""

    config: dict[str, Any]
    dropped: tuple[tuple[str, str], ...]
    notes: tuple[str, ...] = ()
    agent: str = "main"
    workspace: str = ""
    layout: str = "2026.9"


def read_openclaw(path: str | Path) -> dict[str, Any]:
    """Parse ``openclaw.json`` (JSON5)."""
    file = Path(path).expanduser()
    try:
        data = loads(file.read_text(encoding="utf-8"))
    except OSError as error:
        raise InvalidInput(f"cannot read {file}: {error.strerror or error}", key="path") from None
    except Json5Error as error:
        raise InvalidInput(f"{file} is not valid JSON5: {error}", key="path") from None
    if not isinstance(data, dict):
        raise InvalidInput(f"{file} does not hold an object", key="path")
    return data


def openclaw_state_dir(given: str | Path | None = None) -> Path:
    """OpenClaw's state folder: ``given``, else ``$OPENCLAW_STATE_DIR``, else ``~/.openclaw``."""
    chosen = given or os.environ.get("OPENCLAW_STATE_DIR") or "~/.openclaw"
    return Path(chosen).expanduser()


def openclaw_config_path(state_dir: Path) -> Path:
    """OpenClaw's config file: ``$OPENCLAW_CONFIG_PATH``, else ``<state>/openclaw.json``."""
    configured = os.environ.get("OPENCLAW_CONFIG_PATH")
    return Path(configured).expanduser() if configured else state_dir / "openclaw.json"


def _tree(data: Mapping[str, Any], *keys: str) -> Mapping[str, Any]:
    """``data[k1][k2]…`` when every step is an object, else ``{}``."""
    node: Any = data
    for key in keys:
        node = node.get(key) if isinstance(node, Mapping) else None
    return node if isinstance(node, Mapping) else {}


def agent_ids(data: Mapping[str, Any]) -> list[str]:
    """The agents the config names (2026.9 ``agents.entries``, then legacy ``agents.list``)."""
    ids = [str(k) for k in _tree(data, "agents", "entries")]
    legacy = _tree(data, "agents").get("list")
    for item in legacy if isinstance(legacy, list) else []:
        if isinstance(item, Mapping) and item.get("id") and str(item["id"]) not in ids:
            ids.append(str(item["id"]))
    return ids


def default_agent(data: Mapping[str, Any]) -> str:
    """The agent OpenClaw uses by default: the one marked ``default``, else ``main`` when
    configured or nothing is, else the first configured."""
    for agent in agent_ids(data):
        if _agent_entry(data, agent).get("default") is True:
            return agent
    ids = agent_ids(data)
    return "main" if not ids or "main" in ids else ids[0]


def _agent_entry(data: Mapping[str, Any], agent: str) -> dict[str, Any]:
    """The agent's settings: its legacy ``agents.list`` item under its ``agents.entries`` one."""
    merged: dict[str, Any] = {}
    legacy = _tree(data, "agents").get("list")
    for item in legacy if isinstance(legacy, list) else []:
        if isinstance(item, Mapping) and str(item.get("id")) == agent:
            merged.update(item)
    merged.update(_tree(data, "agents", "entries", agent))
    return merged


def resolve_workspace(data: Mapping[str, Any], agent: str, state_dir: Path) -> Path:
    """The workspace OpenClaw gives ``agent``: its own ``workspace``; for the default agent
    ``agents.defaults.workspace`` or ``<state>/workspace``; for another one
    ``<agents.defaults.workspace>/<id>`` or ``<state>/workspace-<id>``."""
    own = _agent_entry(data, agent).get("workspace")
    if isinstance(own, str) and own.strip():
        return Path(own.strip()).expanduser()
    fallback = _tree(data, "agents", "defaults").get("workspace")
    base = (
        Path(fallback.strip()).expanduser()
        if isinstance(fallback, str) and fallback.strip()
        else None
    )
    if agent == default_agent(data):
        return base or state_dir / "workspace"
    return base / agent if base else state_dir / f"workspace-{agent}"


def _search_levels(data: Mapping[str, Any], agent: str) -> list[tuple[str, Mapping[str, Any]]]:
    """The memory-search tables in the order OpenClaw applies them (later wins)."""
    entry = _agent_entry(data, agent)
    levels = [
        ("memorySearch.", _tree(data, "memorySearch")),
        ("agents.defaults.memorySearch.", _tree(data, "agents", "defaults", "memorySearch")),
        ("memory.search.", _tree(data, "memory", "search")),
        (f"agents[{agent}].memorySearch.", _tree(entry, "memorySearch")),
        (f"agents.entries.{agent}.memory.search.", _tree(entry, "memory", "search")),
    ]
    return [(prefix, table) for prefix, table in levels if table]


def detect_layout(data: Mapping[str, Any]) -> str:
    """``legacy`` when only keys retired in OpenClaw 2026.8 hold memory settings, else
    ``2026.9``."""
    current = bool(_tree(data, "memory", "search") or _tree(data, "agents", "entries"))
    legacy = bool(
        _tree(data, "memorySearch")
        or _tree(data, "agents", "defaults", "memorySearch")
        or _tree(data, "agents").get("list")
        or "backend" in _tree(data, "memory")
        or _tree(data, "memory", "qmd")
    )
    return "legacy" if legacy and not current else "2026.9"


def convert(
    data: Mapping[str, Any],
    *,
    agent: str | None = None,
    state_dir: str | Path | None = None,
) -> Conversion:
    """Map an ``openclaw.json`` object onto this project's configuration (see module doc)."""
    chosen = _chosen_agent(data, agent)
    state = openclaw_state_dir(state_dir)
    workspace = resolve_workspace(data, chosen, state)
    config: dict[str, Any] = {"agent_id": chosen, "workspace": str(workspace)}
    dropped: list[tuple[str, str]] = []
    notes: list[str] = []
    search: dict[str, Any] = {}
    for prefix, table in _search_levels(data, chosen):
        flat = _flatten(table)
        search.update(flat)
        _apply(flat, SEARCH_KEYS, config, dropped, prefix)
    memory = {k: v for k, v in _tree(data, "memory").items() if k != "search"}
    _apply(_flatten(memory), MEMORY_KEYS, config, dropped, "memory.")
    if memory.get("citations") is not None:
        config["citations"] = memory["citations"]
    layout = detect_layout(data)
    _embedding(config, dropped, notes, search, layout)
    _paths(config, notes, data, workspace, layout)
    config["sources"] = _sources(data, search, chosen)
    _chain(config, dropped, notes, data)
    _plugins(dropped, data)
    _chunking(config, notes, layout)
    return Conversion(
        config=config,
        dropped=tuple(dropped),
        notes=tuple(notes),
        agent=chosen,
        workspace=str(workspace),
        layout=layout,
    )


def _embedding(
    config: dict[str, Any],
    dropped: list[tuple[str, str]],
    notes: list[str],
    search: Mapping[str, Any],
    layout: str,
) -> None:
    embedding = config.get("embedding", {})
    provider = embedding.get("provider")
    if provider is not None and provider not in PROVIDERS:
        del embedding["provider"]
        dropped.append(("memory.search.provider", f"no {provider!r} embedding provider here"))
    elif layout == "2026.9" and provider in (None, "auto"):
        # 2026.9 resolves an unset (or legacy "auto") provider to OpenAI.
        config.setdefault("embedding", {})["provider"] = "openai"
        notes.append("OpenClaw 2026.9 embeds with OpenAI when no provider is set: so does this")


def _paths(
    config: dict[str, Any],
    notes: list[str],
    data: Mapping[str, Any],
    workspace: Path,
    layout: str,
) -> None:
    """``extra_paths``: OpenClaw's (all levels; QMD paths and collections as its doctor does),
    absolute (OpenClaw resolves them against the workspace), plus ``USER.md`` in 2026.9."""
    raw: list[Any] = []
    for _, table in _search_levels(data, str(config["agent_id"])):
        raw.extend(table.get("extraPaths") or [])
        raw.extend(_tree(table, "qmd").get("extraCollections") or [])
    raw.extend(_tree(data, "memory", "qmd").get("paths") or [])
    paths: list[str] = []
    for item in raw:
        path = item.get("path") if isinstance(item, Mapping) else item
        if not isinstance(path, str) or not path.strip():
            continue
        if isinstance(item, Mapping) and item.get("pattern"):
            notes.append(f"extra path {path}: pattern {item['pattern']!r} not applied (every .md)")
        resolved = Path(path).expanduser()
        paths.append(str(resolved if resolved.is_absolute() else workspace / resolved))
    if layout == "2026.9":  # OpenClaw 2026.9 indexes USER.md as memory
        paths.insert(0, str(workspace / "USER.md"))
    if paths:
        config["extra_paths"] = list(dict.fromkeys(paths))


def _sources(data: Mapping[str, Any], search: Mapping[str, Any], agent: str) -> list[str]:
    """Transcripts are indexed as OpenClaw 2026.9 decides (its source policy): with
    ``rememberAcrossConversations`` (explicit, or by default on unless DMs are isolated) or
    with ``sessions`` in ``sources`` and ``experimental.sessionMemory``; legacy QMD session
    indexing counts too."""
    remember = search.get("rememberAcrossConversations")
    if remember is None:
        scope = _tree(data, "session").get("dmScope")
        raw = data.get("bindings")
        bindings: list[Any] = raw if isinstance(raw, list) else []
        isolated = any(
            isinstance(b, Mapping) and "dmScope" in _tree(b, "session") for b in bindings
        )
        remember = scope in (None, "main") and not isolated
    configured = search.get("sources") or ["memory"]
    sessions = (
        remember is True
        or ("sessions" in configured and search.get("experimental.sessionMemory") is True)
        or _tree(data, "memory", "qmd", "sessions").get("enabled") is True
    )
    return ["memory", "sessions"] if sessions else ["memory"]


def _chain(
    config: dict[str, Any],
    dropped: list[tuple[str, str]],
    notes: list[str],
    data: Mapping[str, Any],
) -> None:
    """The backend chain from the plugin slot (2026.9) or ``memory.backend`` (legacy)."""
    slot = _tree(data, "plugins", "slots").get("memory")
    backend = _tree(data, "memory").get("backend")
    if slot == "memory-lancedb":
        config["router"] = {"chain": ["lancedb", "sqlite"]}
        notes.append(
            "memory-lancedb's own table (memory_store/memory_recall entries) is not imported:"
            " store those texts again with `memory-router store`"
        )
    elif slot not in (None, "memory-core"):
        config["router"] = {"chain": ["sqlite"]}
        dropped.append(("plugins.slots.memory", f"no {slot!r} memory plugin here: sqlite used"))
    elif backend is not None:
        config["router"] = {"chain": ["qmd", "sqlite"] if backend == "qmd" else ["sqlite"]}
    elif slot is not None:
        config["router"] = {"chain": ["sqlite"]}


def _plugins(dropped: list[tuple[str, str]], data: Mapping[str, Any]) -> None:
    core = _tree(data, "plugins", "entries", "memory-core", "config")
    for key in _flatten(core):
        reason = (
            "dreaming (REM/deep promotion into MEMORY.md) is OpenClaw's; its output files"
            " stay in the workspace"
            if key.startswith("dreaming")
            else "admission rules for dreaming ingestion: nothing here ingests sessions into"
            " MEMORY.md"
            if key.startswith("memoryPolicy")
            else "unknown key"
        )
        dropped.append((f"plugins.entries.memory-core.config.{key}", reason))
    lance = _tree(data, "plugins", "entries", "memory-lancedb", "config")
    for key in _flatten(lance):
        dropped.append(
            (
                f"plugins.entries.memory-lancedb.config.{key}",
                "set [backends.lancedb] and [embedding]",
            )
        )


def _flatten(tree: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in tree.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping) and value and name not in ("remote.headers", "remote.apiKey"):
            flat.update(_flatten(value, name + "."))
        else:
            flat[name] = value
    return flat


def _apply(
    flat: Mapping[str, Any],
    keys: Mapping[str, tuple[str, Convert]],
    config: dict[str, Any],
    dropped: list[tuple[str, str]],
    prefix: str,
) -> None:
    for key, value in flat.items():
        if key in keys:
            target, conv = keys[key]
            converted = conv(value)
            if converted is not None:
                _put(config, target.split("."), converted)
                continue
        elif key in FOLDED or any(key.startswith(f + ".") for f in FOLDED):
            continue
        reason = next(
            (why for known, why in WHY_NOT.items() if key == known or key.startswith(known + ".")),
            "unknown key",
        )
        dropped.append((prefix + key, reason))


def _put(tree: dict[str, Any], keys: list[str], value: Any) -> None:
    for key in keys[:-1]:
        tree = tree.setdefault(key, {})
    tree[keys[-1]] = value


def to_toml(conversion: Conversion, *, origin: str) -> str:
    """The conversion as a commented TOML document."""
    lines = [f"# Converted from {origin} by memory-router (OpenClaw {conversion.layout} layout)."]
    if conversion.notes:
        lines.append("# Carried with a change:")
        lines.extend(f"#   {note}" for note in conversion.notes)
    if conversion.dropped:
        lines.append("# Not carried over:")
        lines.extend(f"#   {key}: {why}" for key, why in conversion.dropped)
    body = _tables(conversion.config, "")
    return "\n".join([*lines, "", *body]).rstrip() + "\n"


def _tables(data: Mapping[str, Any], prefix: str) -> list[str]:
    inline = ("headers", "api_key")
    scalars = {k: v for k, v in data.items() if not isinstance(v, Mapping) or k in inline}
    lines = [f"[{prefix}]"] if prefix and scalars else []
    lines.extend(f"{k} = {_value(v)}" for k, v in scalars.items())
    if scalars:
        lines.append("")
    for key, value in data.items():
        if isinstance(value, Mapping) and key not in inline:
            lines.extend(_tables(value, f"{prefix}.{key}" if prefix else key))
    return lines


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    if isinstance(value, Mapping):
        return "{ " + ", ".join(f'"{k}" = {_value(v)}' for k, v in value.items()) + " }"
    return '""'


def _chosen_agent(data: Mapping[str, Any], agent: str | None) -> str:
    """``agent``, or OpenClaw's default agent; an agent the file does not know is refused."""
    known = agent_ids(data)
    if agent is not None and agent not in known and agent != "main":
        raise InvalidInput(
            f"openclaw.json has no agent {agent!r}",
            key="agent",
            hint=f"its agents: {', '.join(known or ['main'])}",
        )
    return agent or default_agent(data)


def _chunking(config: dict[str, Any], notes: list[str], layout: str) -> None:
    """Chunk as OpenClaw did (unless the file says otherwise), so its vectors are reused."""
    chunking = config.setdefault("chunking", {})
    if "structure" in chunking:
        return
    for key, value in OPENCLAW_CHUNKING[layout].items():
        chunking.setdefault(key, value)
    notes.append(
        f"[chunking] cuts as OpenClaw {'2026.9' if layout == '2026.9' else 'did until 2026.7'}"
        " does, so the vectors of its index are reused; remove the table for memory-router's"
        " own chunking (better measured recall; the next index embeds again)"
    )
