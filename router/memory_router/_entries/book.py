"""Entries the way an agent uses them: store without duplicates, recall, forget by query.

These are router operations, available whatever the backend chain: they read the entries
journal (the copy every backend indexes) and compare texts themselves.

*Similarity* of two texts is in [0, 1]: with an embedding provider, the cosine of their
embeddings (entry vectors come through the shared embedding cache, so a synced entry is
never embedded twice); in keyword-only mode, the Jaccard overlap of their lower-cased
word sets. A recalled entry's *score* is its similarity times :func:`entry_weight`
(importance and recency, ``[entries.ranking]``).
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from .._config.config import Config
from .._embedding.embedder import Embedder
from .._exceptions import InvalidInput, MemoryRouterError
from .._search.ranking import entry_weight
from .._types import Category, Entry, EntryMatch, _ToDict
from .._workspace import journal as _journal
from .._workspace.checks import check_workspace
from .._workspace.journal import JournalItem
from .._workspace.snapshot import scrub

if TYPE_CHECKING:  # numpy loads with the first vector: `import memory_router` stays light
    import numpy as np

    from .._embedding.embedder import Vector

DEFAULT_RECALL_LIMIT = 5
CANDIDATES = 5  # entries proposed by a forget-by-query that did not pick exactly one
_WORD = re.compile(r"\w+")
DAY = 86400.0


@dataclass(frozen=True, slots=True, kw_only=True)
class StoreResult(_ToDict):
    """What :meth:`Router.remember` did.

    ``action = "created"``: ``entry`` is new and journaled. ``"duplicate"``: nothing was
    stored; ``entry`` is the existing entry whose similarity to the text (``similarity``)
    reached ``entries.duplicate_threshold``.

    ``redacted`` names the kinds of secret masked in the text before anything else
    (``aws_access_key``, ``private_key``…; see :mod:`memory_router._workspace.redact`):
    the journal never holds them, and the caller learns its text was changed.
    """

    action: Literal["created", "duplicate"]
    entry: Entry
    similarity: float | None = None
    redacted: tuple[str, ...] = ()


def new_entry(text: str, *, importance: float, category: Category) -> tuple[Entry, tuple[str, ...]]:
    """A new entry for ``text`` as every write path makes it: lone surrogates replaced,
    secrets masked by the one redaction stage, then checked (:func:`journal.new_entry`);
    and the kinds of secret masked."""
    kinds: tuple[str, ...] = ()
    if isinstance(text, str):
        from .._workspace.redact import redact_report  # its patterns compile at import

        redaction = redact_report(scrub(text))
        text, kinds = redaction.text, redaction.kinds
    entry = _journal.new_entry(text, importance=importance, category=category)
    return entry, kinds


@dataclass(frozen=True, slots=True, kw_only=True)
class RecallResult(_ToDict):
    """The answer to :meth:`Router.recall`: entries only, best first.

    ``method`` is how similarity was measured: ``"vector"`` (embeddings) or ``"keyword"``.
    ``backend`` names the backend that answered from its own entries table, or is
    ``None`` when the journal was read (see :mod:`._entry_recall`).
    """

    query: str
    results: tuple[EntryMatch, ...]
    category: Category | None = None
    method: Literal["vector", "keyword"] = "keyword"
    backend: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ForgetResult(_ToDict):
    """What :meth:`Router.forget_entry` did.

    ``action = "deleted"``: ``deleted`` is the removed entry. ``"candidates"``: a query
    matched no entry, or several, at ``entries.forget_threshold``; nothing was deleted and
    ``candidates`` are the closest entries (possibly none) to pick an id from.
    """

    action: Literal["deleted", "candidates"]
    deleted: Entry | None = None
    candidates: tuple[EntryMatch, ...] = ()


def words(text: str) -> frozenset[str]:
    return frozenset(_WORD.findall(text.lower()))


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    union = a | b
    return len(a & b) / len(union) if union else 0.0


@dataclass(frozen=True, slots=True)
class _Loaded:
    key: tuple[int, int, str]
    items: tuple[JournalItem, ...]
    vectors: np.ndarray | None
    words: tuple[frozenset[str], ...]


NativeRecall = Callable[[str, Category | None, int], RecallResult | None]
"""``(query, category, limit)``: a backend's own recall, ``None`` when it cannot answer."""


class EntryBook:
    """The entries journal: writes, and similarity between a text and every entry.

    A write calls ``changed()`` (the backends index the journal on their next sync);
    :meth:`recall` asks ``native`` first (a backend that keeps entries of its own, see
    :mod:`.recall`). The journal's items (and their vectors) are read again only when the
    file changes (size or mtime) or the embedding model does.
    """

    def __init__(
        self,
        config: Config,
        embedder: Callable[[], Embedder | None],
        *,
        changed: Callable[[], None] = lambda: None,
        native: NativeRecall | None = None,
    ) -> None:
        self.config = config
        self._embedder = embedder
        self._changed = changed
        self._native = native
        self._lock = threading.Lock()
        self._remember_lock = threading.Lock()
        self._loaded: _Loaded | None = None

    @property
    def path(self) -> Path:
        return self.config.workspace_path / self.config.entries.path

    @property
    def display_path(self) -> str:
        return Path(self.config.entries.path).as_posix()

    def _load(self, embedder: Embedder | None) -> _Loaded:
        try:
            stat = os.stat(self.path)
            signature = (stat.st_mtime_ns, stat.st_size)
        except OSError:
            signature = (0, -1)
        key = (*signature, embedder.provider_key + embedder.model if embedder else "")
        with self._lock:
            if self._loaded is not None and self._loaded.key == key:
                return self._loaded
            items = tuple(i for i in _journal.read_items(self.path) if i.entry.text.strip())
            texts = [scrub(i.entry.text) for i in items]
            vectors = None
            if embedder is not None and texts:
                import numpy as np

                vectors = np.asarray(embedder.embed_documents(texts), dtype=np.float32)
            loaded = _Loaded(key, items, vectors, tuple(words(t) for t in texts))
            self._loaded = loaded
            return loaded

    def _similar(
        self, text: str, *, as_query: bool, category: Category | None = None
    ) -> tuple[list[tuple[JournalItem, float]], bool]:
        embedder = self._embedder()
        loaded = self._load(embedder)
        if loaded.vectors is not None and embedder is not None:
            import numpy as np

            clean = scrub(text)
            embed = embedder.embed_query if as_query else _embed_one(embedder)
            vector = embed(clean)
            scores = loaded.vectors @ np.asarray(vector, dtype=np.float32)
            sims = [min(1.0, max(0.0, float(s))) for s in scores]
        else:
            query = words(text)
            sims = [jaccard(query, w) for w in loaded.words]
        pairs = [
            (item, sim)
            for item, sim in zip(loaded.items, sims, strict=True)
            if category is None or item.entry.category == category
        ]
        pairs.sort(key=lambda pair: -pair[1])
        return pairs, embedder is not None

    def _match(self, item: JournalItem, similarity: float, *, now: float) -> EntryMatch:
        weight = entry_weight(item.entry, self.config.entries.ranking, now=now)
        return EntryMatch(
            entry=item.entry,
            score=similarity * weight,
            similarity=similarity,
            path=self.display_path,
            start_line=item.start_line,
            end_line=item.end_line,
        )

    def duplicate(self, text: str) -> EntryMatch | None:
        """The most similar entry when it reaches ``entries.duplicate_threshold``."""
        pairs, _ = self._similar(text, as_query=False)
        if not pairs or pairs[0][1] < self.config.entries.duplicate_threshold:
            return None
        return self._match(*pairs[0], now=_now())

    def recall(
        self, query: str, *, category: Category | None, limit: int = DEFAULT_RECALL_LIMIT
    ) -> RecallResult:
        """The ``native`` recall when it answers, else :meth:`journal_recall`."""
        check_workspace(self.config)
        found = self._native(query, category, limit) if self._native is not None else None
        if found is not None:
            return found
        return self.journal_recall(query, category=category, limit=limit)

    def journal_recall(
        self, query: str, *, category: Category | None, limit: int = DEFAULT_RECALL_LIMIT
    ) -> RecallResult:
        """Entries at ``entries.recall_min_score`` or more, ranked by weighted score."""
        if not query.strip():
            return RecallResult(query=query, results=(), category=category)
        pairs, vector = self._similar(query, as_query=True, category=category)
        now = _now()
        floor = self.config.entries.recall_min_score
        found = [self._match(item, sim, now=now) for item, sim in pairs if sim >= floor and sim > 0]
        found.sort(key=lambda m: (-m.score, -m.similarity))
        return RecallResult(
            query=query,
            results=tuple(found[:limit]),
            category=category,
            method="vector" if vector else "keyword",
        )

    def forget_target(self, query: str) -> tuple[EntryMatch | None, tuple[EntryMatch, ...]]:
        """(the one entry at ``entries.forget_threshold``, or ``None``; the closest ones)."""
        if not isinstance(query, str) or not query.strip():
            raise InvalidInput("the query to forget by must not be blank", key="query")
        pairs, _ = self._similar(query, as_query=True)
        now = _now()
        floor = self.config.entries.recall_min_score
        close = tuple(self._match(i, s, now=now) for i, s in pairs[:CANDIDATES] if s >= floor)
        sure = [m for m in close if m.similarity >= self.config.entries.forget_threshold]
        return (sure[0] if len(sure) == 1 else None), close

    # -- writes -------------------------------------------------------------------------

    def entries(self) -> list[Entry]:
        """Every journaled entry, in file order."""
        check_workspace(self.config)
        return _journal.read_journal(self.path)

    def store(self, text: str, *, importance: float, category: Category) -> Entry:
        """Journal a new entry, whatever entries exist (secrets masked first)."""
        return self._append(new_entry(text, importance=importance, category=category)[0])

    def remember(
        self, text: str, *, importance: float, category: Category, force: bool
    ) -> StoreResult:
        """:meth:`store`, unless an entry reaches ``entries.duplicate_threshold`` (and not
        ``force``): then that entry comes back as the duplicate, and nothing is stored."""
        check_workspace(self.config)
        entry, redacted = new_entry(text, importance=importance, category=category)
        with self._remember_lock:
            duplicate = None if force else self.duplicate(entry.text)
            if duplicate is not None:
                return StoreResult(
                    action="duplicate",
                    entry=duplicate.entry,
                    similarity=duplicate.similarity,
                    redacted=redacted,
                )
            return StoreResult(action="created", entry=self._append(entry), redacted=redacted)

    def forget(self, entry_id: str) -> Entry:
        """Remove the entry ``entry_id``; raises :class:`NotFound` if absent."""
        check_workspace(self.config)
        try:
            entry = _journal.remove_entry(self.path, entry_id)
        except OSError as error:
            raise MemoryRouterError(
                f"cannot rewrite the entries journal {self.path}: {error.strerror or error}"
            ) from error
        self._changed()
        return entry

    def forget_entry(self, *, entry_id: str | None, query: str | None) -> ForgetResult:
        """Forget ``entry_id``, or the one entry ``query`` matches (see :meth:`forget_target`)."""
        check_workspace(self.config)
        if entry_id is not None:
            return ForgetResult(action="deleted", deleted=self.forget(entry_id))
        target, candidates = self.forget_target(scrub(query or ""))
        if target is None:
            return ForgetResult(action="candidates", candidates=candidates)
        return ForgetResult(action="deleted", deleted=self.forget(target.entry.id))

    def _append(self, entry: Entry) -> Entry:
        check_workspace(self.config)  # the journal's folder may be made, the workspace never
        try:
            _journal.append_entry(self.path, entry)
        except OSError as error:
            raise MemoryRouterError(
                f"cannot write the entries journal {self.path}: {error.strerror or error}",
                hint="check that the workspace exists and is writable",
            ) from error
        self._changed()
        return entry


def _embed_one(embedder: Embedder) -> Callable[[str], Vector]:
    return lambda text: embedder.embed_documents([text])[0]


def _now() -> float:
    return datetime.now(UTC).timestamp()


def valid_category(value: object) -> Category | None:
    """``None`` or one of the categories; anything else is :class:`InvalidInput`."""
    if value is None:
        return None
    return _journal._valid_category(value)
