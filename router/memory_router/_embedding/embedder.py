"""Embedding providers, the shared embedding cache, and the :class:`Embedder` that joins them.

A provider turns texts into vectors. The :class:`Embedder` is what backends use: it looks
texts up in the cache (keyed by provider, model, provider key and text hash, so switching
backend, failing over or migrating never re-embeds unchanged text), batches what is
missing by a byte budget, runs a few batches at once when the provider allows it,
L2-normalises, and switches to the configured fallback provider when the primary fails.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias

from .._exceptions import EmbeddingError
from .._progress_types import Progress, no_progress

if TYPE_CHECKING:  # numpy and sqlite3 are imported where used: start-up stays light
    import sqlite3

    import numpy as np
    import numpy.typing as npt

    from .._types import Fallback

    Vector: TypeAlias = npt.NDArray[np.float32]


def sha256_text(text: str) -> str:
    """The sha256 hex digest of ``text`` encoded as UTF-8."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class EmbeddingProvider(ABC):
    """Turns text into vectors. Subclass it in a plugin and register a factory for it.

    ``id`` is the provider id (``openai``, ``minilm``…), ``model`` the model name.
    ``concurrency`` is how many :meth:`embed_documents` calls may run at once (1 for a
    local model with one context). ``max_input_tokens`` bounds a single text.
    """

    id: str = ""
    model: str = ""
    concurrency: int = 1
    max_input_tokens: int = 8192
    max_batch_tokens: int = 8000

    @property
    def dims(self) -> int | None:
        """The vector size, or ``None`` until the first vector is known."""
        return None

    def cache_key_data(self) -> Mapping[str, Any]:
        """What identifies this provider's vector space (never secrets).

        It feeds the provider key, which keys the embedding cache and the index fingerprint.
        """
        return {"provider": self.id, "model": self.model}

    @abstractmethod
    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        """Embed texts for indexing; one vector per text, in order.

        Raise :class:`EmbeddingError` (``transient=True`` when a retry may help).
        """

    def embed_query(self, text: str) -> list[float]:
        """Embed a search query. Providers with query/document modes override this."""
        return self.embed_documents([text])[0]

    def close(self) -> None:  # noqa: B027 - optional hook with a no-op default
        """Release models, connections and threads."""


def provider_key(provider: EmbeddingProvider) -> str:
    """sha256 of the provider's :meth:`~EmbeddingProvider.cache_key_data` as canonical JSON."""
    data = json.dumps(dict(provider.cache_key_data()), sort_keys=True, separators=(",", ":"))
    return sha256_text(data)


def normalize(vector: Sequence[float] | Vector) -> Vector:
    """L2-normalise; non-finite values become 0 and a zero vector stays zero."""
    import numpy as np

    array = np.nan_to_num(np.asarray(vector, dtype=np.float32), nan=0.0, posinf=0.0, neginf=0.0)
    norm = float(np.linalg.norm(array))
    return array / norm if norm > 1e-10 else array


QUERY_KEY_PREFIX = "\x00query\x00"
"""Prefixed to a query's text before hashing, so query vectors never stand in for documents."""
RECENT_QUERIES = 256
"""Query vectors an :class:`Embedder` keeps in memory, least recently asked dropped first:
an agent often asks again, and a kept vector is a dictionary lookup where a read of the
cache file took 0.06 ms (an eightieth of a warm search at 100k chunks)."""


class EmbeddingCache:
    """Vectors keyed by (provider, model, provider key, text hash) in one SQLite file.

    Thread-safe. ``max_entries`` prunes the oldest rows after writes (``None`` = unbounded).
    """

    _SCHEMA = """
    CREATE TABLE IF NOT EXISTS embedding_cache (
        provider TEXT NOT NULL, model TEXT NOT NULL, provider_key TEXT NOT NULL,
        hash TEXT NOT NULL, embedding BLOB NOT NULL, dims INTEGER, updated_at INTEGER NOT NULL,
        PRIMARY KEY (provider, model, provider_key, hash));
    CREATE INDEX IF NOT EXISTS idx_embedding_cache_updated_at ON embedding_cache(updated_at);
    """

    def __init__(self, path: str | Path, *, max_entries: int | None = None) -> None:
        self.path = str(path)
        if self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        self.max_entries = max_entries
        self.recovered: str | None = None
        self._lock = threading.Lock()
        import sqlite3  # here, not at import: plugins load this module at start-up

        try:
            self._db = self._open()
        except sqlite3.DatabaseError as error:
            # The cache is derived data: a damaged file is moved aside, never fatal.
            aside = f"{self.path}.corrupt-{int(time.time())}"
            for suffix in ("", "-wal", "-shm"):
                if Path(self.path + suffix).exists():
                    Path(self.path + suffix).replace(aside + suffix)
            self.recovered = f"{error}; moved to {aside}"
            self._db = self._open()

    def _open(self) -> sqlite3.Connection:
        import sqlite3

        db = sqlite3.connect(self.path, check_same_thread=False, timeout=5.0)
        try:
            db.execute("PRAGMA journal_mode=WAL")
            db.executescript(self._SCHEMA)
        except sqlite3.DatabaseError:
            db.close()
            raise
        return db

    def get_many(
        self, provider: str, model: str, key: str, hashes: Sequence[str]
    ) -> dict[str, Vector]:
        """Cached vectors for the hashes that have one."""
        import numpy as np

        found: dict[str, Vector] = {}
        with self._lock:
            for start in range(0, len(hashes), 400):
                group = list(hashes[start : start + 400])
                marks = ",".join("?" * len(group))
                rows = self._db.execute(
                    "SELECT hash, embedding FROM embedding_cache WHERE provider=? AND model=?"
                    f" AND provider_key=? AND hash IN ({marks})",
                    [provider, model, key, *group],
                ).fetchall()
                for text_hash, blob in rows:
                    if blob:
                        found[text_hash] = np.frombuffer(blob, dtype=np.float32).copy()
        return found

    def put_many(self, provider: str, model: str, key: str, items: Mapping[str, Vector]) -> None:
        """Store vectors by text hash, replacing older ones."""
        import numpy as np

        now = int(time.time() * 1000)
        rows = [
            (provider, model, key, h, np.asarray(v, dtype=np.float32).tobytes(), len(v), now)
            for h, v in items.items()
        ]
        with self._lock, self._db:
            self._db.executemany(
                "INSERT OR REPLACE INTO embedding_cache VALUES (?,?,?,?,?,?,?)", rows
            )
            if self.max_entries is not None:
                self._db.execute(
                    "DELETE FROM embedding_cache WHERE rowid IN (SELECT rowid FROM embedding_cache"
                    " ORDER BY updated_at DESC LIMIT -1 OFFSET ?)",
                    (self.max_entries,),
                )

    def count(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT COUNT(*) FROM embedding_cache").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            self._db.close()


ProviderFactory = Callable[[], EmbeddingProvider]


class Embedder:
    """What backends embed with: cache, batching, normalisation and provider fallback.

    ``fallback`` builds the fallback provider when the primary fails; after a switch,
    :attr:`fallback_event` records it and :attr:`provider_key` changes, so indexes built
    with the old provider see a fingerprint mismatch and rebuild.
    """

    def __init__(
        self,
        provider: EmbeddingProvider,
        *,
        cache: EmbeddingCache | None = None,
        fallback: ProviderFactory | None = None,
    ) -> None:
        self.provider = provider
        self.cache = cache
        self._fallback = fallback
        self.fallback_event: Fallback | None = None
        self._lock = threading.Lock()
        self.cache_hits = 0
        self.embedded = 0
        self._recent: OrderedDict[tuple[str, str, str, str], Vector] = OrderedDict()

    @property
    def provider_id(self) -> str:
        return self.provider.id

    @property
    def model(self) -> str:
        return self.provider.model

    @property
    def provider_key(self) -> str:
        return provider_key(self.provider)

    @property
    def dims(self) -> int | None:
        return self.provider.dims

    def _switch(self, error: EmbeddingError) -> bool:
        with self._lock:
            if self._fallback is None or self.fallback_event is not None:
                return False
            failed = self.provider
            try:
                self.provider = self._fallback()
            except EmbeddingError:
                return False
            from .._types import Fallback

            self.fallback_event = Fallback(
                from_=failed.id, reason=error.message, at=datetime.now(UTC), hint=error.hint
            )
            failed.close()
            return True

    def embed_query(self, text: str) -> Vector:
        """The normalised query vector, from the cache when this query was embedded before."""
        try:
            return self._embed_query(text)
        except EmbeddingError as error:
            if self._switch(error):
                return self._embed_query(text)
            raise

    def _embed_query(self, text: str) -> Vector:
        """The query's vector: kept in memory (:data:`RECENT_QUERIES`), else from the cache
        file, else embedded. Read-only: the same array answers the next such query."""
        provider = self.provider
        # Queries are keyed apart from documents: a provider may embed them differently.
        digest = sha256_text(QUERY_KEY_PREFIX + text)
        ids = (provider.id, provider.model, provider_key(provider))
        recent = (*ids, digest)
        with self._lock:
            if (kept := self._recent.get(recent)) is not None:
                self._recent.move_to_end(recent)
                return kept
        cached = self.cache.get_many(*ids, [digest]) if self.cache is not None else {}
        vector = cached.get(digest)
        if vector is None:
            vector = normalize(provider.embed_query(text))
            if self.cache is not None:
                self.cache.put_many(*ids, {digest: vector})
        vector.setflags(write=False)
        with self._lock:
            self._recent[recent] = vector
            while len(self._recent) > RECENT_QUERIES:
                self._recent.popitem(last=False)
        return vector

    def embed_documents(
        self, texts: Sequence[str], *, progress: Progress = no_progress
    ) -> list[Vector]:
        """Normalised vectors for ``texts``, in order, reusing the cache where possible."""
        try:
            return self._embed_documents(texts, progress)
        except EmbeddingError as error:
            if self._switch(error):
                return self._embed_documents(texts, progress)
            raise

    def _embed_documents(self, texts: Sequence[str], progress: Progress) -> list[Vector]:
        provider = self.provider
        hashes = [sha256_text(t) for t in texts]
        key = provider_key(provider)
        cached = self.cache.get_many(provider.id, provider.model, key, hashes) if self.cache else {}
        self.cache_hits += sum(1 for h in hashes if h in cached)
        missing: dict[str, str] = {
            h: t for h, t in zip(hashes, texts, strict=True) if h not in cached
        }
        done = len(texts) - len(missing)
        progress(done=done, total=len(texts), label="embedding")
        # Similar lengths share a batch, so a local model pads little (order is restored below).
        by_length = sorted(missing.items(), key=lambda item: len(item[1]))
        batches = list(_batches(by_length, provider.max_batch_tokens))
        fresh: dict[str, Vector] = {}

        def run(batch: list[tuple[str, str]]) -> dict[str, Vector]:
            vectors = provider.embed_documents([t for _, t in batch])
            if len(vectors) != len(batch):
                raise EmbeddingError(
                    f"{provider.id} returned {len(vectors)} vectors for {len(batch)} texts",
                    provider=provider.id,
                )
            return {h: normalize(v) for (h, _), v in zip(batch, vectors, strict=True)}

        from concurrent.futures import ThreadPoolExecutor

        workers = max(1, min(provider.concurrency, len(batches)))
        results: Iterator[dict[str, Vector]]
        pool = ThreadPoolExecutor(max_workers=workers)
        try:
            results = pool.map(run, batches) if workers > 1 else map(run, batches)
            for batch, vectors in zip(batches, results, strict=True):
                fresh.update(vectors)
                if self.cache is not None:
                    self.cache.put_many(provider.id, provider.model, key, vectors)
                done += len(batch)
                progress(done=done, total=len(texts), label="embedding")
        finally:  # a failed batch or a stopped sync: the batches not started are dropped
            pool.shutdown(cancel_futures=True)
        self.embedded += len(fresh)
        merged = {**cached, **fresh}
        return [merged[h] for h in hashes]

    def close(self) -> None:
        self.provider.close()


def _batches(items: list[tuple[str, str]], max_bytes: int) -> Iterator[list[tuple[str, str]]]:
    """Groups whose summed UTF-8 size stays within ``max_bytes`` (an oversized text goes alone)."""
    batch: list[tuple[str, str]] = []
    size = 0
    for item in items:
        cost = len(item[1].encode("utf-8"))
        if batch and size + cost > max_bytes:
            yield batch
            batch, size = [], 0
        batch.append(item)
        size += cost
    if batch:
        yield batch
