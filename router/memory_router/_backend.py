"""The :class:`Backend` contract, what a backend is built from, and the end of a sync
(:func:`rebuild_reason`, :class:`SyncTally`) every index-building backend shares."""

from __future__ import annotations

import json
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._exceptions import Unsupported
from ._progress_types import Progress, no_progress

if TYPE_CHECKING:  # plugins import this module at start-up: keep it light
    from ._config.config import Config
    from ._embedding.embedder import Embedder
    from ._types import (
        BackendResult,
        BackendStatus,
        Chunk,
        EntryMatch,
        EntryRequest,
        SearchRequest,
        SyncReport,
    )
    from ._workspace.snapshot import Snapshot


@dataclass(frozen=True, slots=True, kw_only=True)
class BackendContext:
    """Everything a backend factory receives.

    ``name`` is the backend's configured name; ``settings`` its validated
    ``[backends.<name>]`` table (an instance of :attr:`BackendSpec.settings`, or ``None``);
    ``state_dir`` a folder of its own for this agent (created); ``embedder`` the shared
    embedder, ``None`` in keyword-only mode.
    """

    name: str
    config: Config
    settings: Any
    state_dir: Path
    embedder: Embedder | None


class Backend(ABC):
    """A search index over the workspace. Subclass it in a plugin.

    The core methods are abstract; optional capabilities raise :class:`Unsupported` by
    default, so new ones can be added without breaking existing backends. A backend
    translates its third-party exceptions into :class:`BackendError` subclasses.
    """

    sync_in_background: bool = False
    """True for a backend whose sync drives another program (a sidecar): the router never
    waits for it before a search, which answers from the index the backend has meanwhile."""

    def __init__(self, context: BackendContext) -> None:
        self.context = context
        self.name = context.name

    @abstractmethod
    def search(self, request: SearchRequest) -> BackendResult:
        """Up to ``request.candidates`` hits, best first, scores in [0, 1].

        Shared shaping (decay, MMR, min score, limits, snippets, citations) happens in the
        router afterwards. Never raises for odd query text: any string is a valid query.
        """

    @abstractmethod
    def sync(
        self, snapshot: Snapshot, *, force: bool = False, progress: Progress = no_progress
    ) -> SyncReport:
        """Bring the index in line with ``snapshot``: add, update and remove what changed.

        ``force`` rebuilds everything. When the index fingerprint differs from
        ``snapshot.fingerprint`` the whole index is rebuilt, without losing the old index
        if the rebuild fails.
        """

    @abstractmethod
    def status(self, *, deep: bool = False) -> BackendStatus:
        """Counts and health. ``deep`` may probe (run a query, check files) but never repairs."""

    def close(self) -> None:  # noqa: B027 - optional hook with a no-op default
        """Release files, connections and child processes. Idempotent."""

    def export_chunks(self) -> Iterator[Chunk]:
        """Every indexed chunk with its embedding (for migration), streamed.

        The order must be stable (the same on every call while the index is unchanged):
        a resumed migration skips the chunks it already copied by position. Sorting by
        chunk id is the simple way.
        """
        raise Unsupported(f"backend {self.name!r} cannot export chunks", backend=self.name)

    def recall_entries(self, request: EntryRequest) -> tuple[EntryMatch, ...]:
        """Entries nearest to ``request.vector`` from the backend's own entries table
        (``request.category`` applied before ranking), nearest first; ``score`` may equal
        ``similarity`` (the router weighs them). Optional: the router reads the journal
        when a backend raises :class:`Unsupported`."""
        raise Unsupported(f"backend {self.name!r} cannot recall entries", backend=self.name)

    def reset(self) -> list[str]:
        """Delete this backend's derived state (its index files), never the Markdown.

        Returns the paths removed. The backend is closed by then; the next sync rebuilds
        it. Used by ``memory-router reset``. Optional; the default raises
        :class:`Unsupported`, and the router's per-backend state folder is removed anyway.
        """
        raise Unsupported(f"backend {self.name!r} cannot reset itself", backend=self.name)

    def index_fingerprint(self) -> Mapping[str, Any] | None:
        """The fingerprint stored with the live index (see ``Snapshot.fingerprint``).

        ``None`` when the index is not built or does not record one; a migration from it
        then re-embeds instead of reusing vectors.
        """
        return None

    def stage(self, *, fingerprint: Mapping[str, Any], resume: bool) -> Staging:
        """A copy of this index built beside the live one, for ``migrate``.

        The live index keeps answering until :meth:`Staging.publish`. ``resume = False``
        starts an empty copy (discarding one an earlier migration left); ``resume = True``
        reopens that copy, or raises :class:`NotFound` when there is none. ``fingerprint``
        is what the published index must record. Backends that build their own index from
        the Markdown (QMD) keep the default: the migration then re-indexes with
        :meth:`sync`.
        """
        raise Unsupported(f"backend {self.name!r} cannot stage an import", backend=self.name)


class Staging(ABC):
    """An index being built beside a live one (returned by :meth:`Backend.stage`).

    It survives the process: a migration killed at any moment reopens it with
    ``stage(resume=True)``. Writes must be idempotent by chunk id, because a resumed
    migration may write again the last batch it wrote before the kill.
    """

    batch_size: int = 1000
    """Chunks per :meth:`write` this copy handles best (large appends for a columnar
    store); a migration writes batches of this size unless given one."""

    @abstractmethod
    def write(self, chunks: Sequence[Chunk]) -> None:
        """Add ``chunks`` (with embeddings), replacing any with the same id.

        On return the batch survives a kill of the process; a machine crash may lose the
        copy's last writes (it is no live index), which :meth:`count` then shows."""

    @abstractmethod
    def count(self) -> int:
        """How many chunks the copy holds."""

    @abstractmethod
    def publish(self) -> None:
        """Make the copy the live index in one step; the old index is dropped."""

    @abstractmethod
    def discard(self) -> None:
        """Delete the copy. Idempotent."""

    def close(self) -> None:  # noqa: B027 - optional hook with a no-op default
        """Release the copy's files or connections, keeping it for a resume. Idempotent."""


def rebuild_reason(
    stored: Mapping[str, Any] | None, wanted: Mapping[str, Any], *, force: bool = False
) -> str | None:
    """Why a sync must rebuild the whole index, or ``None`` when an incremental one will do.

    ``stored`` is the fingerprint recorded with the live index (``None``: there is none),
    ``wanted`` the one this sync records: :attr:`Snapshot.fingerprint`, plus any key of
    the backend's own (the SQLite backend adds its FTS tokenizer). Both are compared as
    JSON (a tuple equals a list). Only ``wanted``'s keys count: a key the index recorded
    that the snapshot no longer has changes nothing, and a key whose wanted value is
    ``None`` is not known yet and matches whatever the index recorded (the vector size
    of a keyword-only index, which a backend may record once it learns it).

    The reasons, in this order: ``"forced"``, ``"no index yet"``,
    ``"fingerprint changed: <key>"`` naming the first differing key in sorted order.
    """
    if force:
        return "forced"
    if stored is None:
        return "no index yet"
    recorded, expected = _as_json(stored), _as_json(wanted)
    for key in sorted(expected):
        value = expected[key]
        if value is not None and recorded.get(key) != value:
            return f"fingerprint changed: {key}"
    return None


def _as_json(value: Mapping[str, Any]) -> dict[str, Any]:
    normalised: dict[str, Any] = json.loads(json.dumps(dict(value), sort_keys=True))
    return normalised


class SyncTally:
    """What one backend sync did, counted as it goes; :meth:`report` gives its
    :class:`SyncReport`.

    Make it first thing in :meth:`Backend.sync`: the report's ``duration_ms`` and the
    embedder's work (``embedded``, ``cache_hits``: the change in ``embedder``'s counters)
    are measured from then. The counts are files: ``added``, ``updated`` (replaced),
    ``removed``, ``unchanged`` (skipped, or adopted from a migration without embedding).
    A full rebuild counts every file of the snapshot as added, and as removed each file
    the old index had that the snapshot lacks.
    """

    def __init__(self, backend: str, embedder: Embedder | None) -> None:
        self.backend = backend
        self.added = self.updated = self.removed = self.unchanged = 0
        self._embedder = embedder
        self._started = time.perf_counter()
        self._before = _embedder_work(embedder)

    def report(self, *, chunks: int, reason: str | None, errors: Sequence[str] = ()) -> SyncReport:
        """The sync's report: ``chunks`` the index holds now; ``reason`` why the whole
        index was rebuilt (``full_rebuild`` is true exactly when it is given: see
        :func:`rebuild_reason`); ``errors`` what went wrong without failing the sync."""
        from ._types import SyncReport  # here: `--help` loads this module, not _types

        after = _embedder_work(self._embedder)
        return SyncReport(
            backend=self.backend,
            added=self.added,
            updated=self.updated,
            removed=self.removed,
            unchanged=self.unchanged,
            chunks=chunks,
            embedded=after[0] - self._before[0],
            cache_hits=after[1] - self._before[1],
            full_rebuild=reason is not None,
            reason=reason,
            duration_ms=(time.perf_counter() - self._started) * 1000,
            errors=tuple(errors),
        )


def _embedder_work(embedder: Embedder | None) -> tuple[int, int]:
    return (embedder.embedded, embedder.cache_hits) if embedder is not None else (0, 0)


BackendFactory = Callable[[BackendContext], Backend]


@dataclass(frozen=True, slots=True, kw_only=True)
class BackendSpec:
    """A backend as a plugin registers it.

    ``settings`` is a frozen dataclass type for its ``[backends.<name>]`` table (validated
    with :func:`parse_settings`), or ``None`` when it takes no settings.
    """

    name: str
    factory: BackendFactory
    settings: type | None = None
    description: str = ""
    modes: tuple[str, ...] = ()
    """The values :attr:`SearchRequest.mode` may take for this backend; empty: not declared.

    The router refuses any other ``mode`` for the first backend of the chain with
    :class:`InvalidInput` listing these."""
