"""The :class:`Backend` contract and what a backend is built from."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._exceptions import Unsupported
from ._types import (
    BackendResult,
    BackendStatus,
    Chunk,
    Progress,
    SearchRequest,
    SyncReport,
    no_progress,
)

if TYPE_CHECKING:
    from ._config import Config
    from ._embedding import Embedder
    from ._workspace import Snapshot


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
        """Every indexed chunk with its embedding (for migration)."""
        raise Unsupported(f"backend {self.name!r} cannot export chunks", backend=self.name)

    def import_chunks(self, chunks: Iterable[Chunk], *, fingerprint: Mapping[str, Any]) -> int:
        """Add chunks exported elsewhere; returns how many were written."""
        raise Unsupported(f"backend {self.name!r} cannot import chunks", backend=self.name)


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
