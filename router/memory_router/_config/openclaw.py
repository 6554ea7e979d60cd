"""``config from-openclaw``: an ``openclaw.json`` memory setup as this project's TOML.

Reads ``agents.defaults.memorySearch`` (with ``agents.list[<id>].memorySearch`` over it
when an agent is named, key by key, ``extraPaths`` concatenated) and ``memory``, and
maps each key it knows (ref ``openclaw-memory.md`` §1.1, §2.1). Every key it cannot
carry over is named, with the reason, so nothing is dropped silently.
"""

from __future__ import annotations

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


# OpenClaw key under memorySearch -> (our dotted key, conversion)
SEARCH_KEYS: dict[str, tuple[str, Convert]] = {
    "extraPaths": ("extra_paths", _same),
    "provider": ("embedding.provider", _same),
    "model": ("embedding.model", _same),
    "fallback": ("embedding.fallback", _same),
    "outputDimensionality": ("embedding.remote.output_dimensionality", _same),
    "remote.baseUrl": ("embedding.remote.base_url", _same),
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

MEMORY_KEYS: dict[str, tuple[str, Convert]] = {
    "citations": ("citations", _same),
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

PROVIDERS = frozenset({"auto", "openai", "gemini", "voyage", "mistral", "ollama", "local"})

WHY_NOT = {
    "enabled": "memory cannot be switched off in the config; leave memory-router out instead",
    "experimental.sessionMemory": "folded into `sources`",
    "sources": "folded into `sources`",
    "remote.apiKey": "secrets stay out of config files: set embedding.remote.api_key ="
    ' { env = "NAME" }',
    "store.path": "the old index is imported, not reused in place: memory-router migrate"
    " --from-path <that file>",
    "store.driver": "the index is the sqlite backend",
    "remote.batch": "provider batch APIs are not supported",
    "multimodal": "image and audio memory is not supported",
    "sync.watch": "run `memory-router watch` to watch",
    "sync.sessions.postCompactionForce": "no compaction hook here",
    "qmd.extraCollections": "add the folders to extra_paths",
    "qmd.paths": "add the folders to extra_paths",
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
}


@dataclass(frozen=True, slots=True, kw_only=True)
class Conversion:
    """The TOML tables made from ``openclaw.json``, and every key not carried over."""

    config: dict[str, Any]
    dropped: tuple[tuple[str, str], ...]


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


def convert(data: Mapping[str, Any], *, agent: str | None = None) -> Conversion:
    """Map an ``openclaw.json`` object onto this project's configuration (see module doc)."""
    search, prefix = _search_settings(data, agent)
    config: dict[str, Any] = {}
    dropped: list[tuple[str, str]] = []
    _apply(_flatten(search), SEARCH_KEYS, config, dropped, prefix)
    memory = data.get("memory") if isinstance(data.get("memory"), Mapping) else {}
    assert isinstance(memory, Mapping)
    backend = memory.get("backend")
    if backend is not None:
        config["router"] = {"chain": ["qmd", "sqlite"] if backend == "qmd" else ["sqlite"]}
    rest = {k: v for k, v in _flatten(memory).items() if k != "backend"}
    _apply(rest, MEMORY_KEYS, config, dropped, "memory.")
    provider = config.get("embedding", {}).get("provider")
    if provider is not None and provider not in PROVIDERS:
        del config["embedding"]["provider"]
        dropped.append((prefix + "provider", f"no {provider!r} embedding provider here"))
    sources = _sources(search)
    if sources is not None:
        config["sources"] = sources
    return Conversion(config=config, dropped=tuple(dropped))


def _search_settings(data: Mapping[str, Any], agent: str | None) -> tuple[dict[str, Any], str]:
    agents = data.get("agents") if isinstance(data.get("agents"), Mapping) else {}
    assert isinstance(agents, Mapping)
    defaults = agents.get("defaults") if isinstance(agents.get("defaults"), Mapping) else {}
    assert isinstance(defaults, Mapping)
    search = dict(defaults.get("memorySearch") or {})
    prefix = "agents.defaults.memorySearch."
    if agent is None:
        return search, prefix
    for item in agents.get("list") or []:
        if isinstance(item, Mapping) and item.get("id") == agent:
            own = dict(item.get("memorySearch") or {})
            paths = [*search.get("extraPaths", []), *own.get("extraPaths", [])]
            merged = _merge(search, own)
            if paths:
                merged["extraPaths"] = list(dict.fromkeys(paths))
            return merged, f"agents.list[{agent}].memorySearch."
    raise InvalidInput(f"openclaw.json has no agent {agent!r} in agents.list", key="agent")


def _merge(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    result = dict(base)
    for key, value in over.items():
        if isinstance(value, Mapping) and isinstance(result.get(key), Mapping):
            result[key] = _merge(result[key], value)
        else:
            result[key] = value
    return result


def _sources(search: Mapping[str, Any]) -> list[str] | None:
    """OpenClaw honours ``sessions`` only with ``experimental.sessionMemory`` on (§1.1)."""
    raw = search.get("sources")
    if raw is None:
        return None
    experimental = search.get("experimental")
    sessions = isinstance(experimental, Mapping) and experimental.get("sessionMemory") is True
    chosen = [s for s in raw if s == "memory" or (s == "sessions" and sessions)]
    return chosen or ["memory"]


def _flatten(tree: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in tree.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping) and value and name not in ("remote.headers",):
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
            _put(config, target.split("."), conv(value))
            continue
        reason = next(
            (why for known, why in WHY_NOT.items() if key == known or key.startswith(known + ".")),
            "unknown key",
        )
        if reason != "folded into `sources`":
            dropped.append((prefix + key, reason))


def _put(tree: dict[str, Any], keys: list[str], value: Any) -> None:
    for key in keys[:-1]:
        tree = tree.setdefault(key, {})
    tree[keys[-1]] = value


def to_toml(conversion: Conversion, *, origin: str) -> str:
    """The conversion as a commented TOML document."""
    lines = [f"# Converted from {origin} by memory-router config from-openclaw."]
    if conversion.dropped:
        lines.append("# Not carried over:")
        lines.extend(f"#   {key}: {why}" for key, why in conversion.dropped)
    body = _tables(conversion.config, "")
    return "\n".join([*lines, "", *body]).rstrip() + "\n"


def _tables(data: Mapping[str, Any], prefix: str) -> list[str]:
    scalars = {k: v for k, v in data.items() if not isinstance(v, Mapping) or k == "headers"}
    lines = [f"[{prefix}]"] if prefix and scalars else []
    lines.extend(f"{k} = {_value(v)}" for k, v in scalars.items())
    if scalars:
        lines.append("")
    for key, value in data.items():
        if isinstance(value, Mapping) and key != "headers":
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
