"""The configuration: one TOML file into typed, validated, frozen objects.

Discovery: ``--config``, then ``$MEMORY_ROUTER_CONFIG``, then
``$XDG_CONFIG_HOME/memory-router/config.toml`` (``~/.config/…``); none found means defaults.
Environment variables ``MEMORY_ROUTER_<TABLE>__<KEY>=<TOML value>`` override single keys
(``MEMORY_ROUTER_QUERY__MAX_RESULTS=10``). Defaults equal OpenClaw's documented defaults.
Paths may hold ``{agentId}``, ``{stateDir}`` and ``~``; relative paths are relative to the
config file's folder (or the working directory when there is no file).
"""

from __future__ import annotations

import dataclasses
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from .._exceptions import ConfigError
from .agent import CaptureConfig, CompactionConfig, RecallConfig, ServeConfig
from .settings import Secret, parse_settings, settings_to_dict, toml_name

DEFAULT_LOCAL_MODEL = (
    "hf:ggml-org/embeddinggemma-300m-qat-q8_0-GGUF/embeddinggemma-300m-qat-Q8_0.gguf"
)
ENV_PREFIX = "MEMORY_ROUTER_"
# Environment variables with the prefix that are not key overrides.
RESERVED_ENV = frozenset({"CONFIG", "PLUGINS", "PLUGIN_MODULES"})


@dataclass(frozen=True, slots=True, kw_only=True)
class ChunkingConfig:
    """``[chunking]``: chunk size and overlap in estimated tokens (4 chars each).

    The defaults (200 / 40) are half OpenClaw's 400 / 80: a 400-token chunk is longer than
    MiniLM's 256-word-piece window (its tail is never embedded) and than the 700-character
    snippet an agent reads (docs/performance.md has the measurements).

    ``structure`` chunks Markdown by its structure — one chunk per list item or paragraph,
    a heading joined to the block after it — in ``"curated"`` files (``MEMORY.md``,
    ``memory.md`` and undated files under ``memory/``); with ``"auto"`` also in any file
    whose non-blank lines are at least half headings and list items (a daily note of
    bullets); in ``"all"`` Markdown files; or nowhere (``"off"``: fixed windows, as
    OpenClaw did until 2026.7). ``"openclaw"`` cuts as OpenClaw 2026.9 does (one chunk per
    entry of ``MEMORY.md`` and ``USER.md``, fixed windows elsewhere), so vectors it made
    are reused when its index is migrated.
    """

    tokens: int = 200
    overlap: int = 40
    structure: Literal["auto", "curated", "all", "off", "openclaw"] = "auto"

    def __post_init__(self) -> None:
        object.__setattr__(self, "tokens", max(1, self.tokens))
        object.__setattr__(self, "overlap", min(max(0, self.overlap), self.tokens - 1))


MIN_CANDIDATE_BASE = 20
MAX_CANDIDATES = 200


@dataclass(frozen=True, slots=True, kw_only=True)
class HybridConfig:
    """``[query.hybrid]``: weighted merge of vector and keyword scores.

    ``keyword_query`` is how the keyword side matches: ``"or"`` (BM25 over the OR of the
    extracted keywords, as the default keyword-only mode does; the default because it
    measures far better on LoCoMo) or ``"and"`` (OpenClaw's: every query token must be in
    the chunk).

    ``fusion`` is how the two lists become one (see :mod:`memory_router._search.fusion` and
    docs/performance.md for the measurements): ``"convex"`` (default: calibrated cosine and
    best-scaled BM25 in a convex combination), ``"rrf"``, ``"minmax"``, ``"zscore"``, or
    ``"weighted"`` (OpenClaw's raw-score merge).
    """

    enabled: bool = True
    vector_weight: float = 0.4
    text_weight: float = 0.6
    candidate_multiplier: int = 4
    keyword_query: Literal["or", "and"] = "or"
    fusion: Literal["convex", "rrf", "minmax", "zscore", "weighted"] = "convex"

    def __post_init__(self) -> None:
        vector = min(max(self.vector_weight, 0.0), 1.0)
        text = min(max(self.text_weight, 0.0), 1.0)
        total = vector + text
        vector, text = (0.4, 0.6) if total <= 0 else (vector / total, text / total)
        object.__setattr__(self, "vector_weight", vector)
        object.__setattr__(self, "text_weight", text)
        object.__setattr__(self, "candidate_multiplier", min(max(self.candidate_multiplier, 1), 20))

    def candidates(self, max_results: int) -> int:
        """How many candidates each side fetches: ``candidate_multiplier`` × the result
        count, counted as at least :data:`MIN_CANDIDATE_BASE` results, at most 200.

        The floor keeps the pool as deep for the default 6 results as for 20: the first
        places of the answer depend on it (docs/performance.md, candidate depth).
        """
        base = max(max_results, MIN_CANDIDATE_BASE)
        return min(MAX_CANDIDATES, base * self.candidate_multiplier)


@dataclass(frozen=True, slots=True, kw_only=True)
class MmrConfig:
    """``[query.mmr]``: maximal marginal relevance re-ordering (token Jaccard)."""

    enabled: bool = False
    lambda_: float = 0.7

    def __post_init__(self) -> None:
        object.__setattr__(self, "lambda_", min(max(self.lambda_, 0.0), 1.0))


@dataclass(frozen=True, slots=True, kw_only=True)
class DecayConfig:
    """``[query.temporal_decay]``: exponential decay of dated memories.

    The factor is ``floor + (1 − floor) × 0.5 ** (age_days / half_life_days)``: age alone
    never takes more than ``1 − floor`` of a score (``floor = 0`` is OpenClaw's pure
    exponential). Decay reorders; it never filters: ``min_score`` is applied to the
    score before decay, so an old but relevant memory is still returned. The default
    floor, 0.9, makes recency break near-ties without burying older answers: on LoCoMo
    redated to end today it costs turn recall@10 0.005 / 0.001 (keyword-only / hybrid)
    where 0.5 cost 0.192 (docs/performance.md, "Decay that ranks, not filters").
    """

    enabled: bool = False
    half_life_days: float = 30.0
    floor: float = 0.9

    def __post_init__(self) -> None:
        object.__setattr__(self, "half_life_days", max(1.0, float(int(self.half_life_days))))
        object.__setattr__(self, "floor", min(max(self.floor, 0.0), 1.0))


@dataclass(frozen=True, slots=True, kw_only=True)
class QueryConfig:
    """``[query]``: result limits and ranking.

    ``keyword_mode`` picks keyword-only ranking: ``"or"`` (one BM25 query over the OR of the
    extracted keywords; the default because it measures better on LoCoMo) or
    ``"reference"`` (OpenClaw's AND query, then one query per keyword, plus its boost).
    """

    max_results: int = 6
    min_score: float = 0.2
    max_snippet_chars: int = 700
    max_injected_chars: int = 4000
    merge_reading_chars: int = 4000
    keyword_mode: Literal["or", "reference"] = "or"
    hybrid: HybridConfig = field(default_factory=HybridConfig)
    mmr: MmrConfig = field(default_factory=MmrConfig)
    temporal_decay: DecayConfig = field(default_factory=DecayConfig)

    def __post_init__(self) -> None:
        object.__setattr__(self, "max_results", max(1, self.max_results))
        object.__setattr__(self, "min_score", min(max(self.min_score, 0.0), 1.0))
        object.__setattr__(self, "max_snippet_chars", max(1, self.max_snippet_chars))
        object.__setattr__(self, "max_injected_chars", max(0, self.max_injected_chars))
        object.__setattr__(self, "merge_reading_chars", max(0, self.merge_reading_chars))


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionSyncConfig:
    """``[sync.sessions]``: how much a transcript must grow before it is re-indexed."""

    delta_bytes: int = 100_000
    delta_messages: int = 50


DEFAULT_MAX_FILE_BYTES = 5 * 2**20


@dataclass(frozen=True, slots=True, kw_only=True)
class SyncConfig:
    """``[sync]``: when the index is brought up to date with the workspace, and what it takes.

    ``max_file_bytes`` is the largest Markdown note indexed (``0``: no limit); a larger one
    is left out with a warning in ``index``, ``status`` and ``doctor``. The entries journal
    and session transcripts have no limit.
    """

    on_search: bool = True
    on_session_start: bool = True
    watch_debounce_ms: int = 1500
    interval_minutes: float = 0
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES
    sessions: SessionSyncConfig = field(default_factory=SessionSyncConfig)

    def __post_init__(self) -> None:
        if self.max_file_bytes < 0:
            raise ValueError("max_file_bytes must be 0 (no limit) or more")


@dataclass(frozen=True, slots=True, kw_only=True)
class CacheConfig:
    """``[cache]``: the shared embedding cache. ``max_entries = 0`` means unbounded."""

    enabled: bool = True
    max_entries: int = 0
    path: str = "{stateDir}/agents/{agentId}/embedding-cache.sqlite"


@dataclass(frozen=True, slots=True, kw_only=True)
class RemoteEmbeddingConfig:
    """``[embedding.remote]``: settings shared by the HTTP providers."""

    base_url: str = ""
    api_key: Secret | None = None
    headers: dict[str, str] = field(default_factory=dict)
    concurrency: int = 2
    max_batch_tokens: int = 8000
    query_timeout_s: float = 60.0
    batch_timeout_s: float = 120.0
    max_retries: int = 3
    output_dimensionality: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class LocalEmbeddingConfig:
    """``[embedding.local]``: the local models (GGUF through llama.cpp, and MiniLM)."""

    model_path: str = DEFAULT_LOCAL_MODEL
    model_cache_dir: str = "{stateDir}/models"
    threads: int = 0
    context_size: int = 0
    download_timeout_s: float = 30.0


@dataclass(frozen=True, slots=True, kw_only=True)
class EmbeddingConfig:
    """``[embedding]``: which provider embeds, and which takes over when it fails."""

    provider: str = "auto"
    model: str = ""
    fallback: str = "none"
    remote: RemoteEmbeddingConfig = field(default_factory=RemoteEmbeddingConfig)
    local: LocalEmbeddingConfig = field(default_factory=LocalEmbeddingConfig)


@dataclass(frozen=True, slots=True, kw_only=True)
class BreakerConfig:
    """``[router.breaker]``: a backend's circuit opens after ``failure_threshold`` failures."""

    failure_threshold: int = 3
    cooldown_s: float = 30.0


@dataclass(frozen=True, slots=True, kw_only=True)
class RouterConfig:
    """``[router]``: the backend chain and what happens when one fails."""

    chain: tuple[str, ...] = ("sqlite",)
    fallback: Literal["next", "none"] = "next"
    timeout_s: float = 30.0
    standby: Literal["hot", "cold"] = "cold"
    sync_wait_s: float = 3.0
    breaker: BreakerConfig = field(default_factory=BreakerConfig)

    def __post_init__(self) -> None:
        if self.timeout_s <= 0:
            raise ValueError("timeout_s must be more than 0")
        if self.sync_wait_s < 0:
            raise ValueError("sync_wait_s must not be negative")


@dataclass(frozen=True, slots=True, kw_only=True)
class EntryRankingConfig:
    """``[entries.ranking]``: importance and recency in the ranking of entries.

    An entry's score is multiplied by
    ``(1 − importance_weight + importance_weight × importance)
    × (recency_floor + (1 − recency_floor) × 0.5 ** (age_days / half_life_days))``.
    """

    enabled: bool = True
    importance_weight: float = 0.3
    half_life_days: float = 60.0
    recency_floor: float = 0.95

    def __post_init__(self) -> None:
        object.__setattr__(self, "importance_weight", min(max(self.importance_weight, 0.0), 1.0))
        object.__setattr__(self, "half_life_days", max(0.01, float(self.half_life_days)))
        object.__setattr__(self, "recency_floor", min(max(self.recency_floor, 0.0), 1.0))


@dataclass(frozen=True, slots=True, kw_only=True)
class EntriesConfig:
    """``[entries]``: where stored entries are journaled, and how they are matched."""

    path: str = "memory/entries.md"
    duplicate_threshold: float = 0.95
    forget_threshold: float = 0.9
    recall_min_score: float = 0.1
    ranking: EntryRankingConfig = field(default_factory=EntryRankingConfig)

    def __post_init__(self) -> None:
        for name in ("duplicate_threshold", "forget_threshold", "recall_min_score"):
            object.__setattr__(self, name, min(max(float(getattr(self, name)), 0.0), 1.0))


@dataclass(frozen=True, slots=True, kw_only=True)
class Config:
    """The whole configuration of one agent's memory.

    ``backends`` holds the raw ``[backends.<name>]`` tables; each backend plugin validates
    its own with :func:`parse_settings`. ``file`` is where it was loaded from.
    """

    agent_id: str = "main"
    workspace: str = "."
    state_dir: str = "~/.local/state/memory-router"
    sources: tuple[Literal["memory", "sessions"], ...] = ("memory",)
    extra_paths: tuple[str, ...] = ()
    sessions_dir: str = "{stateDir}/agents/{agentId}/sessions"
    citations: Literal["auto", "on", "off"] = "auto"
    chunking: ChunkingConfig = field(default_factory=ChunkingConfig)
    query: QueryConfig = field(default_factory=QueryConfig)
    sync: SyncConfig = field(default_factory=SyncConfig)
    cache: CacheConfig = field(default_factory=CacheConfig)
    embedding: EmbeddingConfig = field(default_factory=EmbeddingConfig)
    router: RouterConfig = field(default_factory=RouterConfig)
    entries: EntriesConfig = field(default_factory=EntriesConfig)
    serve: ServeConfig = field(default_factory=ServeConfig)
    compaction: CompactionConfig = field(default_factory=CompactionConfig)
    recall: RecallConfig = field(default_factory=RecallConfig)
    capture: CaptureConfig = field(default_factory=CaptureConfig)
    backends: dict[str, dict[str, Any]] = field(default_factory=dict)
    file: str | None = field(default=None, metadata={"internal": True})
    #: ``(dotted key, where it was set)`` for keys set after the file: ``"<env NAME>"`` or
    #: ``"<overrides>"`` (``--workspace``, ``Router.from_config(workspace=...)``).
    origins: tuple[tuple[str, str], ...] = field(default=(), metadata={"internal": True})

    def __post_init__(self) -> None:
        # It names a folder under the state dir: nothing may lead out of it.
        agent = self.agent_id
        if (
            not isinstance(agent, str)
            or not agent
            or not all(c.isascii() and (c.isalnum() or c in "-_") for c in agent)
        ):
            raise ValueError(f"agent_id must be letters, digits, '-' and '_', got {agent!r}")

    def expand(self, value: str) -> Path:
        """Resolve a configured path: tokens, ``~``, and relative to the config's folder."""
        state = _expand_tokens(self.state_dir, self, state=None)
        path = Path(_expand_tokens(value, self, state=state)).expanduser()
        if not path.is_absolute():
            base = Path(self.file).parent if self.file else Path.cwd()
            path = base / path
        return Path(os.path.normpath(path))

    def origin(self, key: str) -> str | None:
        """Where the dotted ``key`` was set when not by the file (see ``origins``)."""
        return dict(self.origins).get(key)

    @property
    def workspace_path(self) -> Path:
        return self.expand(self.workspace)

    @property
    def state_path(self) -> Path:
        return self.expand(self.state_dir)

    @property
    def agent_state_path(self) -> Path:
        """``<state_dir>/agents/<agent_id>``: where this agent's indexes live."""
        return self.state_path / "agents" / self.agent_id

    @property
    def sessions_enabled(self) -> bool:
        return "sessions" in self.sources

    def replace(self, **changes: Any) -> Config:
        return dataclasses.replace(self, **changes)


def _expand_tokens(value: str, config: Config, *, state: str | None) -> str:
    value = value.replace("{agentId}", config.agent_id)
    if state is not None:
        value = value.replace("{stateDir}", state)
    return value


def ensure_dir(path: Path, *, key: str, must_write: bool = True) -> Path:
    """Create the state folder ``path`` if needed; one that cannot be created (or, with
    ``must_write``, written) is a :class:`ConfigError` naming the setting ``key`` and the
    folder. Without ``must_write`` an existing read-only folder is returned as it is: a
    backend may still answer from the index in it (see :func:`writable`)."""
    hint = f"set {key} to a folder this user can write, or fix the folder's permissions"
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        if not must_write and path.is_dir():
            return path  # it exists: mkdir failed on a read-only file system
        why = error.strerror or type(error).__name__
        raise ConfigError(f"cannot create folder {path}: {why}", key=key, hint=hint) from None
    if must_write and not writable(path):
        raise ConfigError(f"folder {path} is not writable", key=key, hint=hint)
    return path


def writable(folder: Path) -> bool:
    """Whether this process may create files in ``folder`` (false on a read-only mount)."""
    return os.access(folder, os.W_OK | os.X_OK)


def default_config_path() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "memory-router" / "config.toml"


def find_config_file(
    explicit: str | os.PathLike[str] | None = None, environ: Mapping[str, str] | None = None
) -> Path | None:
    """The config file to use: ``explicit``, ``$MEMORY_ROUTER_CONFIG``, or the user's, if any."""
    environ = os.environ if environ is None else environ
    if explicit:
        path = Path(explicit).expanduser()
        if not path.is_file():
            raise ConfigError(
                "config file not found",
                path=str(path),
                hint="check the path; a config file is optional (every key has a default, see"
                " docs/configuration.md), so --config can also be left out",
            )
        return path
    env = environ.get(ENV_PREFIX + "CONFIG")
    if env:
        path = Path(env).expanduser()
        if not path.is_file():
            raise ConfigError(
                f"config file named by ${ENV_PREFIX}CONFIG not found",
                path=str(path),
                hint=f"point ${ENV_PREFIX}CONFIG at an existing file, or unset it",
            )
        return path
    path = default_config_path()
    return path if path.is_file() else None


def read_toml(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as handle:
            return tomllib.load(handle)
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"not valid TOML: {error}", path=str(path)) from None
    except UnicodeDecodeError as error:
        raise ConfigError(
            f"not valid UTF-8 (byte {error.start}); TOML files are UTF-8", path=str(path)
        ) from None
    except OSError as error:
        raise ConfigError(f"cannot read: {error.strerror}", path=str(path)) from None


def env_overrides(environ: Mapping[str, str]) -> list[tuple[str, list[str], Any]]:
    """``(variable, key path, value)`` for every ``MEMORY_ROUTER_A__B=value`` override.

    Only variables whose first segment is a top-level key or table of :class:`Config`
    are overrides; other ``MEMORY_ROUTER_*`` names belong to plugins (for example
    ``MEMORY_ROUTER_HF_ENDPOINT``) and are left alone.
    """
    top = {toml_name(f) for f in dataclasses.fields(Config) if not f.metadata.get("internal")}
    found = []
    for name, raw in sorted(environ.items()):
        if not name.startswith(ENV_PREFIX) or name[len(ENV_PREFIX) :] in RESERVED_ENV:
            continue
        keys = [k.lower() for k in name[len(ENV_PREFIX) :].split("__")]
        if not all(keys) or keys[0] not in top:
            continue
        try:
            value = tomllib.loads(f"v = {raw}")["v"]
        except tomllib.TOMLDecodeError:
            value = raw
        found.append((name, keys, value))
    return found


def apply_overrides(config: Config, overrides: Mapping[str, Any]) -> Config:
    """``config`` with nested ``overrides`` applied and validated again."""
    data = settings_to_dict(config)
    for keys, value in _flatten(overrides):
        data = _set_in(data, keys, value)
    source = config.file or "<overrides>"
    origins = dict(config.origins)
    origins.update((".".join(keys), "<overrides>") for keys, _ in _flatten(overrides))
    return dataclasses.replace(
        parse_settings(Config, data, path=source, table=""),
        file=config.file,
        origins=tuple(origins.items()),
    )


def load_config(
    path: str | os.PathLike[str] | None = None,
    *,
    environ: Mapping[str, str] | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> Config:
    """Load, merge and validate the configuration.

    Precedence, lowest first: defaults, the file, environment overrides, ``overrides``
    (a nested dict, as the CLI's ``--workspace`` and friends produce).
    """
    environ = os.environ if environ is None else environ
    file = find_config_file(path, environ)
    data: dict[str, Any] = read_toml(file) if file else {}
    source = str(file) if file else "<defaults>"
    config = parse_settings(Config, data, path=source, table="")
    origins: dict[str, str] = {}
    for name, keys, value in env_overrides(environ):
        data = _set_in(data, keys, value)
        config = parse_settings(Config, data, path=f"<env {name}>", table="")
        origins[".".join(keys)] = f"<env {name}>"
    for keys, value in _flatten(overrides or {}):
        data = _set_in(data, keys, value)
        origins[".".join(keys)] = "<overrides>"
    config = parse_settings(Config, data, path=source, table="")
    return dataclasses.replace(
        config, file=str(file.resolve()) if file else None, origins=tuple(origins.items())
    )


def _set_in(data: dict[str, Any], keys: list[str], value: Any) -> dict[str, Any]:
    result = dict(data)
    node = result
    for key in keys[:-1]:
        child = node.get(key)
        node[key] = dict(child) if isinstance(child, Mapping) else {}
        node = node[key]
    node[keys[-1]] = value
    return result


def _flatten(tree: Mapping[str, Any], prefix: tuple[str, ...] = ()) -> list[tuple[list[str], Any]]:
    items: list[tuple[list[str], Any]] = []
    for key, value in tree.items():
        if isinstance(value, Mapping) and not (prefix == () and key == "backends" and not value):
            items.extend(_flatten(value, (*prefix, key)))
        else:
            items.append(([*prefix, key], value))
    return items
