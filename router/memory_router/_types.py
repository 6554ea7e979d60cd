"""Frozen values that cross boundaries between the router, backends, plugins and callers."""

from __future__ import annotations

import dataclasses
import enum
import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

# Re-exported here, defined apart so that modules needing only them stay light.
from ._progress_types import Progress as Progress
from ._progress_types import no_progress as no_progress

Source = Literal["memory", "sessions"]
FallbackKind = Literal["circuit_open", "timeout", "unavailable", "error"]
"""Where a memory file came from: workspace Markdown, or agent session transcripts."""

Category = Literal["preference", "fact", "decision", "entity", "other"]
CATEGORIES: tuple[Category, ...] = ("preference", "fact", "decision", "entity", "other")


_SCALARS = frozenset({str, int, float, bool, type(None)})


@functools.cache
def _names(cls: type) -> tuple[tuple[str, str], ...]:
    """``(attribute, key)`` per field of dataclass ``cls``: the key drops a trailing ``_``."""
    return tuple((f.name, f.name.rstrip("_")) for f in dataclasses.fields(cls))


def _plain(value: Any) -> Any:
    if type(value) in _SCALARS:  # most leaves: checked first, a JSON answer has hundreds
        return value
    if isinstance(value, _ToDict):  # a value may shape its own JSON (EmbeddingStatus)
        return value.to_dict()
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, enum.Enum):
        return value.value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {key: _plain(getattr(value, name)) for name, key in _names(type(value))}
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


class _ToDict:
    __slots__ = ()

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (datetimes as ISO 8601; a trailing ``_`` dropped from names)."""
        cls: type = type(self)
        return {key: _plain(getattr(self, name)) for name, key in _names(cls)}


@dataclass(frozen=True, slots=True, kw_only=True)
class Entry(_ToDict):
    """One stored memory entry: a fact, preference or decision an agent chose to keep.

    ``id`` is stable for the life of the entry; ``importance`` is in [0, 1].
    Entries live in the Markdown journal in the workspace; backends index them like any
    other memory file, one chunk per entry.
    """

    id: str
    text: str
    importance: float = 0.7
    category: Category = "other"
    created_at: datetime


@dataclass(frozen=True, slots=True, kw_only=True)
class Document(_ToDict):
    """A memory file as found in the workspace (or a session transcript).

    ``path`` is relative to the workspace with forward slashes (``../x`` for extra paths
    outside it, ``sessions/<name>.jsonl`` for transcripts); ``abs_path`` is where it lives.
    ``hash`` is the sha256 of what gets chunked; ``kind`` says how it is chunked.
    """

    path: str
    abs_path: str
    source: Source
    kind: Literal["markdown", "session", "journal"]
    hash: str
    mtime: float
    size: int


@dataclass(frozen=True, slots=True, kw_only=True)
class Chunk(_ToDict):
    """A slice of a memory file, the unit that is indexed and returned.

    Lines are 1-based and inclusive; for transcripts they are JSONL line numbers.
    ``hash`` is the sha256 of ``text``; ``model`` is the embedding model id or
    ``"fts-only"``. ``embedding`` is filled only when the chunk crosses a boundary with its
    vector (export, import). ``entry`` is set for chunks of the entries journal.
    """

    id: str
    path: str
    source: Source
    start_line: int
    end_line: int
    text: str
    hash: str
    model: str
    embedding: tuple[float, ...] | None = None
    entry: Entry | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class SearchRequest(_ToDict):
    """A query as a backend receives it.

    ``candidates`` is how many hits the backend should return at most (the router shapes
    them down to ``max_results`` afterwards). ``mode`` is a backend-specific override
    (``None`` = the backend's configured mode). ``timeout`` is seconds left for this call.
    ``sources`` (``None`` = all) and ``category`` (only entries of that category; ``None`` =
    no such filter) should be applied before ranking; the router drops what still does not
    match. ``explain``: whether the caller shows each hit's :class:`Explain` (``search
    --explain``); when false a backend may leave its hits' ``explain`` unset (making one
    for each of 80 candidates was a twentieth of a warm search).
    """

    query: str
    max_results: int
    min_score: float
    candidates: int
    mode: str | None = None
    sources: tuple[Source, ...] | None = None
    timeout: float | None = None
    category: Category | None = None
    explain: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class Explain(_ToDict):
    """Why a hit ranked where it did (``search --explain``).

    ``score = relevance × decay × importance`` (clamped to [0, 1]). ``relevance`` is the
    backend's score: for hybrid, ``vector_part + text_part`` from the raw side scores
    ``vector_score`` / ``text_score`` under ``fusion``, both parts already scaled by the
    query's ``support`` (``convex``: how much of the question the memory holds at all, 1
    when some candidate holds all its keywords or is close in meaning). ``decay`` is the
    temporal decay factor and ``importance`` an entry's weight (importance × recency);
    both are 1 when they do not apply. ``mmr_penalty`` is the ``(1 − λ) × similarity``
    MMR charged when it picked the hit (it reorders, it does not rescale); ``dropped``
    says why a candidate is not in the answer; ``merged`` lists the line ranges
    (``start-end``) of lower hits of the same file whose lines touch this one's and that
    were shown as part of it. ``vector_norm`` is the cosine (``vector_score``) as the
    model's calibration maps it (noise 0, a near-duplicate 1; for a keyword hit the
    vector leg did not return, ``convex`` counts the leg's lowest, with no
    ``vector_score``); ``keywords`` the query keywords the hit's text holds; ``relaxed``
    says why a hit under ``min_score`` was kept (the backend's relaxation, when nothing
    reached it).
    """

    relevance: float
    score: float
    vector_score: float | None = None
    text_score: float | None = None
    vector_part: float | None = None
    text_part: float | None = None
    fusion: str | None = None
    support: float = 1.0
    decay: float = 1.0
    importance: float = 1.0
    mmr_penalty: float = 0.0
    dropped: str | None = None
    merged: tuple[str, ...] = ()
    vector_norm: float | None = None
    keywords: tuple[str, ...] = ()
    relaxed: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Hit(_ToDict):
    """One search result. ``score``: higher is better, in [0, 1].

    ``vector_score`` and ``text_score`` are the two sides of a hybrid score, ``None`` when
    that side did not find the chunk. ``citation`` is ``path#L3-L9`` when citations are on.
    ``explain`` is set only when the search asked for it (a backend may pre-fill the
    fusion parts; the router completes it).
    """

    path: str
    start_line: int
    end_line: int
    score: float
    snippet: str
    source: Source
    backend: str
    citation: str | None = None
    vector_score: float | None = None
    text_score: float | None = None
    chunk_id: str | None = None
    entry: Entry | None = None
    explain: Explain | None = None


@dataclass(frozen=True, slots=True)
class ScoredChunk:
    """A backend's candidate chunk with one leg's score in [0, 1] (keyword or vector),
    before the legs are fused; :meth:`hit` makes the search result."""

    id: str
    path: str
    source: str
    start_line: int
    end_line: int
    text: str
    score: float

    def hit(
        self,
        backend: str,
        score: float,
        vector_score: float | None = None,
        text_score: float | None = None,
        *,
        explain: Explain | None = None,
    ) -> Hit:
        """The :class:`Hit` for this chunk: ``score`` clamped to [0, 1], the chunk's text as
        its snippet (the router's shaping narrows it), ``source`` ``sessions`` or ``memory``;
        ``explain`` as a backend pre-fills it (the fused score's parts)."""
        return _new_hit(
            self.path,
            self.start_line,
            self.end_line,
            min(1.0, max(0.0, score)),
            self.text,
            "sessions" if self.source == "sessions" else "memory",
            backend,
            None,
            vector_score,
            text_score,
            self.id,
            None,
            explain,
        )


def _positional_new(cls: type[Any]) -> Callable[..., Any]:
    """A constructor of the frozen, slotted dataclass ``cls`` taking every field in order,
    that sets each slot through its descriptor.

    What ``cls(...)`` makes (no ``__post_init__`` runs: for classes without one), in half
    the time: a frozen dataclass's ``__init__`` calls ``object.__setattr__`` per field,
    2.4 µs for a :class:`Hit` against 1.3, and a search makes one per candidate (80).
    """
    if hasattr(cls, "__post_init__"):
        raise TypeError(f"{cls.__name__} has a __post_init__, which this constructor skips")
    names = [f.name for f in dataclasses.fields(cls)]
    setters = {f"_set_{name}": getattr(cls, name).__set__ for name in names}
    body = "".join(f"    _set_{name}(self, {name})\n" for name in names)
    source = f"def new({', '.join(names)}):\n    self = _alloc(_cls)\n{body}    return self\n"
    scope: dict[str, Any] = {"_alloc": object.__new__, "_cls": cls, **setters}
    exec(source, scope)  # as dataclasses makes __init__: a function per class, no loop
    new: Callable[..., Any] = scope["new"]
    return new


_new_hit: Callable[..., Hit] = _positional_new(Hit)


@dataclass(frozen=True, slots=True, kw_only=True)
class BackendResult(_ToDict):
    """What :meth:`Backend.search` returns: ranked candidates before shared shaping.

    ``mode`` names how the backend searched (``hybrid``, ``keyword``, ``vector``, or its
    own mode names). ``relaxed_min_score``: when no hit reaches the requested minimum, hits
    that matched by keyword (``text_score`` set) and score at least this are kept instead;
    ``None`` disables the relaxation.
    """

    hits: tuple[Hit, ...]
    mode: str
    relaxed_min_score: float | None = None
    notes: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class Fallback(_ToDict):
    """Why a backend (or embedding provider) did not answer and another one did;
    ``hint`` is the failure's own advice on what to do about it, when it has one.
    ``kind`` sorts a backend's failure: ``circuit_open`` (not asked), ``timeout``,
    ``unavailable`` (down, unreachable, misconfigured) or ``error``."""

    from_: str
    reason: str
    at: datetime
    hint: str | None = None
    kind: FallbackKind | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class BelowMinScore(_ToDict):
    """Why an answer is empty: ``count`` hits were found, none reached ``min_score``.

    ``best_score`` is the highest of them; ``show_with`` is a ``min_score`` that shows
    them (``best_score`` rounded down to two decimals): searching again with it
    (``--min-score``, ``minScore``, ``min_score=``) returns them, weak as they are.
    ``kept`` is true when the answer is not empty after all: nothing reached
    ``min_score`` and the backend's relaxation kept its keyword hits (the ``count``
    results), which are as weak as the score says.
    """

    count: int
    best_score: float
    min_score: float
    show_with: float = 0.0
    kept: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class Degraded(_ToDict):
    """Why an answer may be less complete than usual, and what a caller can do about it.

    ``reason`` names what was missing (a backend that failed, embeddings that could not
    be used, an index still being built); ``action`` is one sentence of advice.
    """

    reason: str
    action: str


@dataclass(frozen=True, slots=True, kw_only=True)
class SearchResponse(_ToDict):
    """The answer to :meth:`Router.search`.

    ``backend`` answered; ``fallback`` is the first backend that failed before it (``None``
    when the first choice answered) and ``attempts`` every failure on the way.
    ``timings`` are milliseconds per stage. ``dropped`` holds the candidates left out,
    each with ``explain.dropped`` saying why — only when the search asked to explain.
    ``below_min_score`` says why an empty answer is empty, when candidates were found;
    ``degraded`` why an answer may be less complete than usual.
    """

    query: str
    results: tuple[Hit, ...]
    backend: str
    mode: str
    provider: str | None
    model: str | None
    fallback: Fallback | None = None
    attempts: tuple[Fallback, ...] = ()
    provider_fallback: Fallback | None = None
    citations: str = "auto"
    timings: Mapping[str, float] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    dropped: tuple[Hit, ...] = ()
    below_min_score: BelowMinScore | None = None
    degraded: Degraded | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class FileText(_ToDict):
    """Text read from a memory file by :meth:`Router.get`. Missing files give ``text=""``."""

    path: str
    text: str
    from_line: int = 1
    lines: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class SyncReport(_ToDict):
    """What one backend's sync did. Counts are files unless named otherwise; ``hint``
    says what to do about a failed sync's ``errors``, when known; ``warnings`` name the
    files that are not plain UTF-8 (``<path>: read as …`` or ``<path>: looks binary …;
    not indexed``)."""

    backend: str
    added: int = 0
    updated: int = 0
    removed: int = 0
    unchanged: int = 0
    chunks: int = 0
    embedded: int = 0
    cache_hits: int = 0
    full_rebuild: bool = False
    reason: str | None = None
    duration_ms: float = 0.0
    errors: tuple[str, ...] = ()
    hint: str | None = None
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class BackendStatus(_ToDict):
    """Health and size of one backend. ``available`` is False when it cannot serve now."""

    name: str
    available: bool
    files: int = 0
    chunks: int = 0
    error: str | None = None
    details: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class BreakerState(_ToDict):
    """A backend's circuit breaker as :meth:`Router.status` reports it."""

    state: Literal["closed", "open", "half-open"]
    failures: int
    last_error: str | None
    opened_at: datetime | None


@dataclass(frozen=True, slots=True, kw_only=True)
class EmbeddingStatus(_ToDict):
    """The embedding setup as :meth:`Router.status` reports it.

    ``available`` is False when the configured provider cannot be built (``error`` says
    why; the other fields are then unset). Otherwise ``provider`` and ``model`` are
    ``None`` in keyword-only mode (``mode``), ``unavailable_reason`` says why the requested
    provider is not the one in use, ``fallback`` when the router switched provider, and
    ``cache_entries`` counts the embedding cache (``None`` without one). A deep status
    probes the provider: ``probe`` is ``"ok"`` (with ``dims`` and ``latency_ms``) or
    ``"failed"`` (with ``error``).
    """

    requested: str
    available: bool = True
    provider: str | None = None
    model: str | None = None
    mode: Literal["hybrid", "keyword-only"] = "keyword-only"
    unavailable_reason: str | None = None
    fallback: Fallback | None = None
    cache_entries: int | None = None
    probe: Literal["ok", "failed"] | None = None
    dims: int | None = None
    latency_ms: float | None = None
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The JSON shape of ``status --json``: only the keys that apply."""
        if not self.available:
            return {"available": False, "requested": self.requested, "error": self.error}
        info: dict[str, Any] = {
            "requested": self.requested,
            "provider": self.provider,
            "model": self.model,
            "mode": self.mode,
            "unavailable_reason": self.unavailable_reason,
            "fallback": self.fallback.to_dict() if self.fallback else None,
            "cache_entries": self.cache_entries,
        }
        if self.probe == "ok":
            info.update(probe="ok", dims=self.dims, latency_ms=self.latency_ms)
        elif self.probe == "failed":
            info.update(probe="failed", error=self.error)
        return info


@dataclass(frozen=True, slots=True, kw_only=True)
class IndexFingerprint(_ToDict):
    """What an index was built for; a backend whose stored fingerprint differs rebuilds.

    The embedding space (``provider``, ``model``, ``provider_key``, ``vector_dims``), the
    chunking (``chunk_tokens``, ``chunk_overlap``, ``chunk_structure``, ``chunker``
    version), what is indexed (``sources``, ``scope_hash`` of the paths) and, when
    transcripts are indexed, the ``redaction`` version. Backends store :meth:`to_dict`,
    the camelCase JSON shape (``Snapshot.fingerprint``, ``Backend.index_fingerprint()``).
    """

    provider: str
    model: str
    provider_key: str
    vector_dims: int | None
    chunk_tokens: int
    chunk_overlap: int
    chunk_structure: str
    sources: tuple[str, ...]
    scope_hash: str
    chunker: int
    redaction: int | None = None

    def to_dict(self) -> dict[str, Any]:
        """The stored shape: camelCase keys, ``redaction`` only when transcripts are indexed."""
        stored: dict[str, Any] = {
            "provider": self.provider,
            "model": self.model,
            "providerKey": self.provider_key,
            "vectorDims": self.vector_dims,
            "chunkTokens": self.chunk_tokens,
            "chunkOverlap": self.chunk_overlap,
            "chunkStructure": self.chunk_structure,
            "sources": list(self.sources),
            "scopeHash": self.scope_hash,
            "chunker": self.chunker,
        }
        if self.redaction is not None:
            stored["redaction"] = self.redaction
        return stored


@dataclass(frozen=True, slots=True, kw_only=True)
class RouterStatus(_ToDict):
    """Everything :meth:`Router.status` knows: config summary, backends, breakers, fallbacks.

    ``can_answer`` is False when no backend of the chain is available. ``breakers`` and
    ``last_fallback`` are what the router processes of this agent last recorded in the
    state dir (``breakers_seen_at`` says when), or this process's own when it searched.
    ``workspace_error`` says why the workspace cannot be read (missing, not a folder,
    unreadable), with ``workspace_hint`` on what to do; ``file_warnings`` name the memory
    files that are not plain UTF-8, as :attr:`SyncReport.warnings` does.
    """

    agent_id: str
    workspace: str
    chain: tuple[str, ...]
    fallback_policy: str
    backends: tuple[BackendStatus, ...]
    breakers: Mapping[str, BreakerState]
    last_fallback: Fallback | None
    embedding: EmbeddingStatus
    sources: Mapping[str, int]
    can_answer: bool = True
    breakers_seen_at: datetime | None = None
    workspace_error: str | None = None
    workspace_hint: str | None = None
    file_warnings: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class EntryMatch(_ToDict):
    """An entry found by :meth:`Router.recall` or proposed by :meth:`Router.forget_entry`.

    ``similarity`` (in [0, 1]) is how close its text is to the query; ``score`` is the
    similarity weighted by importance and recency (equal to it when ranking is off);
    higher is better. ``path``, ``start_line`` and ``end_line`` locate the entry in the
    journal (workspace-relative, 1-based inclusive), for ``get`` and citations.
    """

    entry: Entry
    score: float
    similarity: float
    path: str
    start_line: int
    end_line: int


@dataclass(frozen=True, slots=True, kw_only=True)
class EntryRequest(_ToDict):
    """A recall as :meth:`Backend.recall_entries` receives it.

    ``vector`` is the query's embedding (unit length); ``category`` restricts the entries
    (``None`` = all); at most ``candidates`` entries come back, nearest first, each with
    ``similarity`` (cosine, in [0, 1]) of at least ``min_similarity``.
    """

    query: str
    vector: tuple[float, ...]
    category: Category | None
    candidates: int
    min_similarity: float
